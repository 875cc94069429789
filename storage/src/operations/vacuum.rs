//! VACUUM: removes a table's files that no snapshot a query may still read references (what an
//! interrupted load, a failed commit or a DELETE that lost a race left behind).
//!
//! A query reads the version that was newest when it started, so the versions kept are the
//! newest one, every version committed within the retention period, and the one that was newest
//! when that period began. A file is removed only if none of those references it *and* it was
//! written before the period began: a write still uploading blocks for a commit to come has
//! written them since, as long as it runs for less than the retention period. Snapshot files
//! themselves are never removed (versions are numbered without gaps, and they are small).

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use object_store::path::Path;

use crate::error::Result;
use crate::meta::snapshot::{self, snapshots_dir};
use crate::read::table::Table;

/// What a VACUUM did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vacuumed {
    pub files_removed: u64,
    pub bytes_removed: u64,
    /// Versions whose files were kept.
    pub versions_kept: u64,
}

/// Milliseconds since the epoch of `time`.
fn millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Table {
    /// Removes the table's data files that no version within `retain` of now references.
    pub async fn vacuum(&self, retain: Duration) -> Result<Vacuumed> {
        let store = self.storage().store();
        let cutoff = millis(SystemTime::now().checked_sub(retain).unwrap_or(UNIX_EPOCH));
        let newest = self.snapshot().await?;
        // Every version with its commit time; checked against the newest for gaps by `snapshot`.
        let mut versions: Vec<(u64, i64)> = store
            .list(Some(&snapshots_dir(&self.dir())))
            .try_filter_map(|meta| async move {
                let version = meta
                    .location
                    .filename()
                    .and_then(|f| f.strip_suffix(".json"))
                    .and_then(|v| v.parse::<u64>().ok());
                Ok(version.map(|v| (v, meta.last_modified.timestamp_millis())))
            })
            .try_collect()
            .await?;
        versions.sort_unstable();
        let newest_before_cutoff = versions
            .iter()
            .rev()
            .find(|(_, committed)| *committed < cutoff)
            .map(|(v, _)| *v);
        let kept: Vec<u64> = versions
            .iter()
            .filter(|(v, committed)| {
                *committed >= cutoff || Some(*v) == newest_before_cutoff || *v == newest.version
            })
            .map(|(v, _)| *v)
            .collect();
        let mut referenced: HashSet<Path> = HashSet::new();
        for &version in &kept {
            let snapshot = snapshot::read(self.storage(), &self.dir(), version).await?;
            let blocks = self.blocks(&snapshot).await?;
            for segment in &snapshot.segments {
                referenced.insert(self.segment_path(&segment.name));
            }
            for i in 0..blocks.len() {
                referenced.insert(self.block_path(blocks.block_id(i)));
                referenced.insert(self.sidecar_path(blocks.sidecar_name(i)));
            }
            for group in blocks.locator_groups() {
                referenced.insert(self.locator_path(&group.name));
            }
        }
        let mut done = Vacuumed {
            versions_kept: kept.len() as u64,
            ..Default::default()
        };
        for dir in ["blocks", "segments", "locators"] {
            let prefix = self.dir().join(dir);
            let unreferenced: Vec<_> = store
                .list(Some(&prefix))
                .try_filter(|meta| {
                    let old = meta.last_modified.timestamp_millis() < cutoff;
                    futures::future::ready(old && !referenced.contains(&meta.location))
                })
                .try_collect()
                .await?;
            for meta in unreferenced {
                match store.delete(&meta.location).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
                done.files_removed += 1;
                done.bytes_removed += meta.size;
            }
        }
        Ok(done)
    }
}
