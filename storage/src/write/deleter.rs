//! Commits a DELETE: the rows it chose, per block, become one deletes segment
//! ([`crate::meta::deletes`]) named by the next snapshot.
//!
//! Deleters race each other and appenders for the next version. Appends never conflict with a
//! delete (its rows were chosen among blocks that already existed, and the appended rows come
//! after it in the serial order). Another DELETE may have removed some of the same rows first:
//! on every attempt the rows already deleted in the newest version are taken out of this one, so
//! a row is deleted, and counted, by exactly one statement, and no commit is ever lost.

use object_store::{ObjectStoreExt, PutPayload};

use crate::error::{Result, StorageError};
use crate::meta::block_list::BlockList;
use crate::meta::deletes::{Deletes, encode_deletes};
use crate::meta::snapshot::{self, Delta, Snapshot};
use crate::read::table::Table;
use sieve_index::sidecar::KeyChanges;

/// Attempts before a DELETE gives up under sustained contention.
const MAX_ATTEMPTS: usize = 1000;

/// What a DELETE committed.
#[derive(Debug, Clone)]
pub struct DeleteCommitted {
    /// Rows this statement deleted (none another statement deleted first).
    pub rows: u64,
    /// None when no row was left to delete.
    pub snapshot: Option<Snapshot>,
}

impl Table {
    /// Deletes `rows` (positions per block UUID, chosen on any committed version) in one commit,
    /// with the new sidecars written for them ([`Table::rewrite_sidecar`]).
    pub async fn delete_rows(&self, mut rows: Deletes) -> Result<DeleteCommitted> {
        for _ in 0..MAX_ATTEMPTS {
            let base = self.snapshot().await?;
            let blocks = self.blocks(&base).await?;
            for (block, chosen) in &mut rows {
                let chosen = &mut chosen.rows;
                let i = blocks
                    .position(block)
                    .ok_or_else(|| StorageError::Rewritten(block.clone()))?;
                if let Some(gone) = blocks.deleted(i) {
                    *chosen -= gone;
                }
            }
            // A sidecar written for rows another DELETE took is still right: it forgot only
            // keys no live row holds, and rows only ever leave.
            rows.retain(|_, chosen| !chosen.rows.is_empty());
            let deleted_rows = rows.values().map(|d| d.rows.len()).sum();
            if deleted_rows == 0 {
                return Ok(DeleteCommitted {
                    rows: 0,
                    snapshot: None,
                });
            }
            // A new name per attempt: the rows may differ from the last one's.
            let segment = self.put_segment(encode_deletes(&rows)?).await?;
            let delta = Delta {
                segment,
                deleted_rows,
                ..Default::default()
            };
            if let Some(committed) = snapshot::try_commit(
                self.storage(),
                &self.dir(),
                &self.named_pointer_path(),
                &base,
                std::slice::from_ref(&delta),
            )
            .await?
            {
                return Ok(DeleteCommitted {
                    rows: deleted_rows,
                    snapshot: Some(committed),
                });
            }
        }
        Err(snapshot::too_contended())
    }
}

impl Table {
    /// Writes block `i` of `blocks` a new sidecar for what a DELETE changes in it
    /// ([`sieve_index::sidecar::rewrite`]: cuckoo entries forget keys, other filters are rebuilt
    /// once `stale_fraction` of their keys have no live row) and returns its name for that
    /// commit ([`crate::meta::deletes::BlockDeletes`]); None when no entry changes.
    pub async fn rewrite_sidecar(
        &self,
        blocks: &BlockList,
        i: usize,
        changes: &[KeyChanges],
        stale_fraction: f64,
    ) -> Result<Option<String>> {
        let store = self.storage().store();
        let path = self.sidecar_path(blocks.sidecar_name(i));
        let current = store.get(&path).await?.bytes().await?;
        let configured = self.def().options.filter;
        let next = sieve_index::sidecar::rewrite(current, changes, stale_fraction, configured)
            .map_err(|e| StorageError::Damaged(path.to_string(), e.to_string()))?;
        let Some(next) = next else {
            return Ok(None);
        };
        let name = uuid::Uuid::new_v4().simple().to_string();
        store
            .put(&self.sidecar_path(&name), PutPayload::from(next))
            .await?;
        Ok(Some(name))
    }
}
