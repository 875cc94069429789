//! Reading a table: the handle that lists its blocks and fetches sidecars and locator pages, the
//! caches that keep what was read, and the freshness checks concurrent readers share.

pub(crate) mod cache;
pub(crate) mod disk_cache;
pub(crate) mod freshness;
pub(crate) mod locator_pages;
pub(crate) mod request_trace;
pub(crate) mod table;
