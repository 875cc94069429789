//! Maintenance that rewrites what writes left behind: OPTIMIZE (blocks), locator group merges
//! and VACUUM (unreferenced files).

pub(crate) mod group_merge;
pub(crate) mod merge_rate;
pub(crate) mod optimize;
pub(crate) mod vacuum;
