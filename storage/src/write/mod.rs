//! Writing a table: blocks and sidecars from Arrow batches, locator files from blocks, and the
//! deletes a DELETE commits.

pub(crate) mod deleter;
pub(crate) mod group_commit;
pub(crate) mod group_keys;
pub(crate) mod locator_builder;
pub(crate) mod writer;
