//! What keeps one statement from hurting the server: deadlines, memory budgets, limits on a
//! statement's shape, and panics turned into errors.

pub(crate) mod deadline;
pub(crate) mod interrupt;
pub(crate) mod memory;
pub(crate) mod panic;
pub(crate) mod spill;
pub(crate) mod statement;
pub(crate) mod whole_value_aggregates;
