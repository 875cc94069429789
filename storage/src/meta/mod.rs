//! What a table is on object storage: its definition, snapshots, segments, block list, deletes
//! and checksums, each with its codec. Format versions are collected in [`versions`].

pub(crate) mod block;
pub(crate) mod block_checksums;
pub(crate) mod block_list;
pub(crate) mod checked_json;
pub(crate) mod copied_files;
pub(crate) mod deletes;
pub(crate) mod nan_bounds;
pub mod page_table;
pub(crate) mod segment;
pub(crate) mod snapshot;
pub(crate) mod table_def;
pub mod versions;
