//! Caches shared by every query on one storage: block lists by table version (immutable once
//! committed) and opened sidecars bounded in bytes.

use std::sync::Arc;

use quick_cache::Weighter;
use quick_cache::sync::Cache;
use sieve_index::Sidecar;

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

/// Weighs an opened sidecar by the bytes of its file.
#[derive(Clone)]
pub struct SidecarBytes;

impl Weighter<String, Arc<Sidecar>> for SidecarBytes {
    fn weight(&self, _key: &String, sidecar: &Arc<Sidecar>) -> u64 {
        sidecar.byte_len() as u64
    }
}

pub struct Caches {
    pub block_lists: Cache<(String, u64), Arc<BlockList>>,
    pub sidecars: Cache<String, Arc<Sidecar>, SidecarBytes>,
}

impl Caches {
    pub fn new(sidecar_bytes: u64) -> Self {
        Self {
            block_lists: Cache::new(BLOCK_LIST_VERSIONS),
            // Sized for sidecars of about a MiB each.
            sidecars: Cache::with_weighter(
                (sidecar_bytes >> 20).max(1024) as usize,
                sidecar_bytes,
                SidecarBytes,
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
