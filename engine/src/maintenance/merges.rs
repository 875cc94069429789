//! Tiered merging of locator groups as data arrives (Wei et al.'s dynamic bloom filter arrays; LSM trees' tiered compaction):
//! every commit of an INSERT or a CTAS asks for a merge of its table in the background, so a
//! table keeps fewer than [`sieve_storage::MERGE_FAN_IN`] groups per tier without anyone running
//! OPTIMIZE, and a lookup's cost grows with the logarithm of the table, not with it. Each round
//! first compacts small appends' blocks the same way (sixteen of a size into one,
//! [`sieve_storage::Table::compact_small_appends`]), so many small INSERTs leave few blocks.
//!
//! One merge runs per table per process at a time; a commit landing while one runs asks it for
//! one more round, so the last commit is always looked at. A merge is a commit like any other
//! ([`sieve_storage::Table::merge_locator_groups`]): it lands beside appends and DELETEs, is
//! dropped if an OPTIMIZE rewrote its groups meanwhile, and a crash mid-merge leaves the table as
//! it was (its uploaded file is left for VACUUM). A failed merge is logged and tried again at
//! the table's next commit: the groups it would have merged stay usable as they are.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use datafusion::execution::TaskContext;
use futures::FutureExt;
use sieve_storage::Table;
use tokio::sync::Notify;

use crate::options::SieveOptions;

/// The merges a process runs, by table id: whether another round was asked for meanwhile.
#[derive(Default)]
pub struct BackgroundMerges {
    running: Mutex<HashMap<String, bool>>,
    /// Told whenever the last running merge ends.
    idle: Notify,
}

impl std::fmt::Debug for BackgroundMerges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundMerges").finish_non_exhaustive()
    }
}

impl BackgroundMerges {
    /// After a commit to `table` by a statement running in `context`: merges its locator
    /// groups in the background, unless the session turned it off
    /// (`SET sieve.merge_on_commit = false`).
    pub fn after_commit(context: &TaskContext, table: &Table) {
        if let Some(merges) = context.session_config().get_extension::<BackgroundMerges>()
            && SieveOptions::of(context).merge_on_commit
        {
            merges.start(table);
        }
    }

    /// Merges `table`'s locator groups in the background (one more round if one runs).
    pub fn start(self: &Arc<Self>, table: &Table) {
        let id = table.def().id.clone();
        {
            let mut running = self.lock();
            if let Some(again) = running.get_mut(&id) {
                *again = true;
                return;
            }
            running.insert(id.clone(), false);
        }
        let (this, table) = (self.clone(), table.clone());
        tokio::spawn(async move {
            let name = format!("{}.{}", table.def().database, table.def().name);
            loop {
                let compacted = logged(&name, "small blocks not compacted", async {
                    Ok(table.compact_small_appends().await?.blocks_removed)
                })
                .await;
                if compacted > 0 {
                    log::info!("{name}: compacted {compacted} small blocks");
                }
                let merged = logged(
                    &name,
                    "locator groups not merged",
                    table.merge_locator_groups(),
                )
                .await;
                if merged > 0 {
                    log::info!("{name}: merged {merged} locator groups");
                }
                let mut running = this.lock();
                let again = running.get_mut(&id).expect("a running merge is listed");
                // A round that compacted or merged may have made sixteen of the next class.
                if !std::mem::take(again) && merged == 0 && compacted == 0 {
                    running.remove(&id);
                    if running.is_empty() {
                        this.idle.notify_waiters();
                    }
                    return;
                }
            }
        });
    }

    /// Waits until no merge runs: what `sieve load`, a test or a benchmark waits on before it
    /// counts a table's groups.
    pub async fn settled(&self) {
        loop {
            let idle = self.idle.notified();
            if self.lock().is_empty() {
                return;
            }
            idle.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, bool>> {
        // A map of flags cannot be left half-changed by a panic.
        self.running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What one step of a round did (0 when it failed): a failure or a panic is logged and left to
/// the table's next commit, not a merge listed as running forever.
async fn logged(
    table: &str,
    what: &str,
    step: impl Future<Output = sieve_storage::Result<u64>>,
) -> u64 {
    match AssertUnwindSafe(step).catch_unwind().await {
        Ok(Ok(done)) => done,
        Ok(Err(e)) => {
            log::warn!("{table}: {what} (tried again at the next commit): {e}");
            0
        }
        Err(_) => {
            log::warn!("{table}: {what}: it panicked (tried again at the next commit)");
            0
        }
    }
}
