//! A handle on one table's data: its snapshots, block list and sidecars.
//!
//! `tables/<id>/blocks/<block>.parquet` and `.sidecar`, `tables/<id>/segments/<segment>.arrow`,
//! `tables/<id>/snapshots/…` (see [`crate::snapshot`]).

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStoreExt;
use object_store::path::Path;
use sieve_index::Sidecar;

use crate::error::Result;
use crate::location::Storage;
use crate::segment::BlockList;
use crate::snapshot::{self, Snapshot};
use crate::table_def::TableDef;
use crate::writer::TableWriter;

/// Sidecar GETs in flight at once for one query.
const SIDECAR_FETCH_CONCURRENCY: usize = 32;

#[derive(Debug, Clone)]
pub struct Table {
    storage: Storage,
    def: Arc<TableDef>,
}

/// Sidecars for a list of blocks, and what fetching them cost.
#[derive(Debug, Default)]
pub struct SidecarFetch {
    /// Parallel to the requested blocks; None where the sidecar is missing or unreadable, which
    /// means "cannot prune this block", never an error.
    pub sidecars: Vec<Option<Arc<Sidecar>>>,
    pub bytes_fetched: u64,
    pub cache_hits: u64,
    pub unreadable: u64,
}

impl Table {
    pub fn new(storage: Storage, def: TableDef) -> Self {
        Self {
            storage,
            def: Arc::new(def),
        }
    }

    pub fn def(&self) -> &TableDef {
        &self.def
    }

    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    pub fn dir(&self) -> Path {
        Path::from("tables").join(self.def.id.as_str())
    }

    pub fn block_path(&self, block: &str) -> Path {
        self.dir().join("blocks").join(format!("{block}.parquet"))
    }

    pub fn sidecar_path(&self, block: &str) -> Path {
        self.dir().join("blocks").join(format!("{block}.sidecar"))
    }

    pub fn segment_path(&self, segment: &str) -> Path {
        self.dir().join("segments").join(format!("{segment}.arrow"))
    }

    pub async fn snapshot(&self) -> Result<Snapshot> {
        snapshot::latest(&self.storage, &self.dir()).await
    }

    /// Every block of a snapshot, decoded once per version and cached.
    pub async fn blocks(&self, snapshot: &Snapshot) -> Result<Arc<BlockList>> {
        let key = (self.def.id.clone(), snapshot.version);
        if let Some(found) = self.storage.caches().block_lists.get(&key) {
            return Ok(found);
        }
        // Owned items and owned futures: a borrowed closure argument makes the future not Send.
        let segments: Vec<_> = futures::stream::iter(snapshot.segments.clone())
            .map(|segment| {
                let (store, path) = (self.storage.store().clone(), self.segment_path(&segment));
                async move { store.get(&path).await?.bytes().await }
            })
            .buffered(SIDECAR_FETCH_CONCURRENCY)
            .try_collect()
            .await?;
        let list = Arc::new(BlockList::decode(&self.def, &segments)?);
        self.storage.caches().block_lists.insert(key, list.clone());
        Ok(list)
    }

    /// Fetches (through the shared byte-bounded cache) the sidecars of `blocks`, one GET each,
    /// at most [`SIDECAR_FETCH_CONCURRENCY`] at a time.
    pub async fn sidecars(&self, blocks: &[&str]) -> SidecarFetch {
        let cache = &self.storage.caches().sidecars;
        let paths: Vec<Path> = blocks.iter().map(|b| self.sidecar_path(b)).collect();
        let results: Vec<(Option<Arc<Sidecar>>, u64, bool)> = futures::stream::iter(paths)
            .map(|path| async move {
                let key = path.to_string();
                if let Some(found) = cache.get(&key) {
                    return (Some(found), 0, true);
                }
                let fetched = async {
                    let bytes = self.storage.store().get(&path).await?.bytes().await?;
                    let len = bytes.len() as u64;
                    Ok::<_, crate::error::StorageError>((Sidecar::open(bytes)?, len))
                };
                match fetched.await {
                    Ok((sidecar, len)) => {
                        let sidecar = Arc::new(sidecar);
                        cache.insert(key, sidecar.clone());
                        (Some(sidecar), len, false)
                    }
                    Err(e) => {
                        log::warn!("cannot use sidecar {path}, the block will be read: {e}");
                        (None, 0, false)
                    }
                }
            })
            .buffered(SIDECAR_FETCH_CONCURRENCY)
            .collect()
            .await;
        let mut fetch = SidecarFetch::default();
        for (sidecar, bytes, hit) in results {
            fetch.unreadable += u64::from(sidecar.is_none());
            fetch.bytes_fetched += bytes;
            fetch.cache_hits += u64::from(hit);
            fetch.sidecars.push(sidecar);
        }
        fetch
    }

    pub fn writer(&self) -> TableWriter {
        TableWriter::new(self.clone())
    }
}
