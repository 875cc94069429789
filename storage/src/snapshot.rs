//! Versioned snapshots and the atomic commit.
//!
//! `tables/<id>/snapshots/<version, 20 digits>.json` lists the segments of a table version. A
//! commit writes its blocks, sidecars and segment first (unique names, invisible until referenced),
//! then creates the next snapshot with a conditional put. If another writer took that version, it
//! re-reads the newest snapshot and tries the next one: appends never conflict, so both succeed and
//! no row is lost or counted twice. A writer that fails before the snapshot leaves only orphans.

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use crate::error::{Result, StorageError};
use crate::location::Storage;

/// Attempts before a commit gives up under sustained contention.
const MAX_COMMIT_ATTEMPTS: usize = 1000;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// 0 is the empty table, before any commit.
    pub version: u64,
    pub segments: Vec<String>,
    pub rows: u64,
    pub blocks: u64,
    pub data_bytes: u64,
    pub sidecar_bytes: u64,
}

/// What one commit adds.
#[derive(Debug, Clone, Default)]
pub struct Delta {
    pub segment: String,
    pub rows: u64,
    pub blocks: u64,
    pub data_bytes: u64,
    pub sidecar_bytes: u64,
}

pub fn snapshots_dir(table_dir: &Path) -> Path {
    table_dir.clone().join("snapshots")
}

fn snapshot_path(table_dir: &Path, version: u64) -> Path {
    snapshots_dir(table_dir).join(format!("{version:020}.json"))
}

/// The newest committed snapshot (version 0 if none).
pub async fn latest(storage: &Storage, table_dir: &Path) -> Result<Snapshot> {
    let newest = storage
        .store()
        .list(Some(&snapshots_dir(table_dir)))
        .try_fold(None::<u64>, |newest, meta| async move {
            let version = meta
                .location
                .filename()
                .and_then(|f| f.strip_suffix(".json"))
                .and_then(|v| v.parse::<u64>().ok());
            Ok(newest.max(version))
        })
        .await?;
    match newest {
        None => Ok(Snapshot::default()),
        Some(version) => read(storage, table_dir, version).await,
    }
}

pub async fn read(storage: &Storage, table_dir: &Path, version: u64) -> Result<Snapshot> {
    let bytes = storage
        .store()
        .get(&snapshot_path(table_dir, version))
        .await?
        .bytes()
        .await?;
    Ok(serde_json::from_slice(&bytes)?)
}

/// Commits `delta` on top of whatever is newest, retrying on conflict.
pub async fn commit(storage: &Storage, table_dir: &Path, delta: &Delta) -> Result<Snapshot> {
    for _ in 0..MAX_COMMIT_ATTEMPTS {
        let base = latest(storage, table_dir).await?;
        let mut segments = base.segments.clone();
        segments.push(delta.segment.clone());
        let next = Snapshot {
            version: base.version + 1,
            segments,
            rows: base.rows + delta.rows,
            blocks: base.blocks + delta.blocks,
            data_bytes: base.data_bytes + delta.data_bytes,
            sidecar_bytes: base.sidecar_bytes + delta.sidecar_bytes,
        };
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        let body = PutPayload::from(serde_json::to_vec_pretty(&next)?);
        match storage
            .store()
            .put_opts(&snapshot_path(table_dir, next.version), body, opts)
            .await
        {
            Ok(_) => return Ok(next),
            Err(object_store::Error::AlreadyExists { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(StorageError::Invalid(format!(
        "commit lost {MAX_COMMIT_ATTEMPTS} races for the next snapshot; try again"
    )))
}
