//! Reading a Sieve table: the provider DataFusion plans against, the scan node, and how a scan
//! prunes blocks (min/max, locators, sidecars) and reads only the live rows of what survives.

pub(crate) mod dictionary_pages;
pub(crate) mod exec;
pub(crate) mod live_rows;
pub(crate) mod lossless_cast;
pub(crate) mod page_codec;
pub(crate) mod page_cut;
pub(crate) mod page_read;
pub(crate) mod provider;
pub(crate) mod pruning;
pub(crate) mod routing;
pub(crate) mod verified_reader;
pub(crate) mod zstd_pages;
