//! Maintenance that rewrites what writes left behind: OPTIMIZE (blocks), compaction of small
//! appends, locator group merges and VACUUM (unreferenced files).

pub(crate) mod compaction;
pub(crate) mod group_merge;
pub(crate) mod merge_rate;
pub(crate) mod optimize;
pub(crate) mod vacuum;
