//! Caches shared by every query on one storage: block lists by table version (immutable once
//! committed) and opened sidecar entries bounded in bytes.

use std::sync::Arc;

use quick_cache::Weighter;
use quick_cache::sync::Cache;
use sieve_index::SidecarColumn;

use crate::segment::BlockList;

const DEFAULT_SIDECAR_CACHE_MIB: u64 = 256;

/// The sidecar cache's budget: `SIEVE_SIDECAR_CACHE_MIB`, else 256 MiB. A point query on a
/// column that min/max cannot prune probes every block's sidecar, so this budget decides whether
/// such queries on a big table stay warm (1B rows of t10b with binary_fuse8 on both columns have
/// about 2.3 GB of sidecars).
pub fn sidecar_cache_bytes() -> u64 {
    let mib = match std::env::var("SIEVE_SIDECAR_CACHE_MIB") {
        Ok(value) => value.trim().parse().unwrap_or_else(|_| {
            log::warn!(
                "SIEVE_SIDECAR_CACHE_MIB={value:?} is not a whole number of MiB; using {DEFAULT_SIDECAR_CACHE_MIB}"
            );
            DEFAULT_SIDECAR_CACHE_MIB
        }),
        Err(_) => DEFAULT_SIDECAR_CACHE_MIB,
    };
    mib << 20
}
const BLOCK_LIST_VERSIONS: usize = 64;

/// Sidecar entries are cached by sidecar path and column.
pub type EntryKey = (String, String);

/// Weighs an opened sidecar entry by its payload's bytes (plus a little for the rest, so that no
/// entry weighs nothing).
#[derive(Clone)]
pub struct EntryBytes;

impl Weighter<EntryKey, Arc<SidecarColumn>> for EntryBytes {
    fn weight(&self, key: &EntryKey, entry: &Arc<SidecarColumn>) -> u64 {
        entry.payload_len + (key.0.len() + key.1.len()) as u64 + 64
    }
}

pub struct Caches {
    pub block_lists: Cache<(String, u64), Arc<BlockList>>,
    pub sidecars: Cache<EntryKey, Arc<SidecarColumn>, EntryBytes>,
}

impl Caches {
    pub fn new(sidecar_bytes: u64) -> Self {
        Self {
            block_lists: Cache::new(BLOCK_LIST_VERSIONS),
            // Sized for entries of about a MiB each.
            sidecars: Cache::with_weighter(
                (sidecar_bytes >> 20).max(1024) as usize,
                sidecar_bytes,
                EntryBytes,
            ),
        }
    }
}

impl std::fmt::Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches")
            .field("block_lists", &self.block_lists.len())
            .field("sidecars", &self.sidecars.len())
            .field("sidecar_bytes", &self.sidecars.weight())
            .finish()
    }
}
