//! Caches shared by every query on one storage: block lists by table version (immutable once
//! committed) and opened sidecars bounded in bytes.

use std::sync::Arc;

use quick_cache::Weighter;
use quick_cache::sync::Cache;
use sieve_index::Sidecar;

use crate::segment::BlockList;

pub const DEFAULT_SIDECAR_CACHE_BYTES: u64 = 256 << 20;
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
            sidecars: Cache::with_weighter(1024, sidecar_bytes, SidecarBytes),
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
