//! Statements that change a table's files rather than add rows: DELETE, OPTIMIZE, VACUUM, and
//! `sieve_index_stats`, which reports what the indexes they maintain cost.

pub(crate) mod delete;
pub(crate) mod index_stats;
pub(crate) mod merges;
pub(crate) mod optimize;
pub(crate) mod table_statement;
pub(crate) mod vacuum;
