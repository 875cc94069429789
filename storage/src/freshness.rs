//! One freshness check for many queries. A query must see every commit made before it started,
//! so it cannot use the answer of a check sent before it arrived; but it can share one sent
//! after. Concurrent queries of a table therefore wait for the next check sent after they
//! arrived, and at most one check per table is in flight whatever the load: under N concurrent
//! lookups a table costs one check (two small requests, see [`crate::snapshot::latest`]) per
//! check's round trip, not N.
//!
//! A check runs on a task of its own, so a query that is cancelled while it waits leaves the
//! others' check running. Its error reaches every query that waited for it.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use object_store::path::Path;
use tokio::sync::watch;

use crate::error::{Result, StorageError};
use crate::location::Storage;
use crate::snapshot::{self, Snapshot};

/// The answer of check number `.0` (checks of a table are numbered from 1 as they are sent).
type Answer = (
    u64,
    Option<std::result::Result<Snapshot, Arc<StorageError>>>,
);

struct TableChecks {
    /// Checks sent so far: the one in flight, if any, is number `sent`.
    sent: u64,
    in_flight: bool,
    /// The highest check number a waiting query needs.
    wanted: u64,
    answers: watch::Sender<Answer>,
}

/// The checks of every table of one storage, by table directory.
#[derive(Default)]
pub struct Freshness {
    tables: Mutex<HashMap<String, TableChecks>>,
}

impl std::fmt::Debug for Freshness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Freshness").finish_non_exhaustive()
    }
}

impl Freshness {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, TableChecks>> {
        // Counters and a channel: a panic cannot leave them half-changed.
        self.tables
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The newest snapshot of the table in `table_dir`, from a check sent after this call began.
pub async fn latest_shared(storage: &Storage, table_dir: &Path) -> Result<Snapshot> {
    let key = table_dir.to_string();
    let (need, mut answers) = {
        let mut tables = storage.freshness().lock();
        let checks = tables.entry(key.clone()).or_insert_with(|| TableChecks {
            sent: 0,
            in_flight: false,
            wanted: 0,
            answers: watch::channel((0, None)).0,
        });
        // The check in flight was sent before this query arrived: it needs the one after.
        let need = checks.sent + 1;
        checks.wanted = checks.wanted.max(need);
        if !checks.in_flight {
            checks.sent = need;
            checks.in_flight = true;
            tokio::spawn(run_checks(storage.clone(), table_dir.clone(), key, need));
        }
        (need, checks.answers.subscribe())
    };
    let answer = answers
        .wait_for(|(number, _)| *number >= need)
        .await
        .map_err(|_| StorageError::Invalid("a freshness check's task ended unanswered".into()))?;
    match &answer.1 {
        Some(Ok(snapshot)) => Ok(snapshot.clone()),
        Some(Err(e)) => Err(StorageError::Shared(e.clone())),
        None => unreachable!("a numbered answer carries its result"),
    }
}

/// Sends check `number`, publishes its answer, and goes on with the next while queries that
/// arrived meanwhile wait for one.
async fn run_checks(storage: Storage, table_dir: Path, key: String, number: u64) {
    let mut running = Running {
        storage,
        key,
        number,
        finished: false,
    };
    loop {
        // A panic is this check's error, not a check in flight forever.
        let answer = match AssertUnwindSafe(snapshot::latest(&running.storage, &table_dir))
            .catch_unwind()
            .await
        {
            Ok(answer) => answer.map_err(Arc::new),
            Err(_) => Err(Arc::new(StorageError::Invalid(format!(
                "the freshness check of {table_dir} panicked"
            )))),
        };
        let freshness = running.storage.freshness();
        let mut tables = freshness.lock();
        let checks = tables
            .get_mut(&running.key)
            .expect("a table with a check in flight is listed");
        checks.answers.send_replace((running.number, Some(answer)));
        if checks.wanted <= running.number {
            checks.in_flight = false;
            drop(tables);
            running.finished = true;
            return;
        }
        running.number += 1;
        checks.sent = running.number;
    }
}

/// The check task's state; if the task is dropped before it finishes (its runtime shut down),
/// every query waiting on it gets an error and the next query sends a check of its own, instead
/// of all waiting on a check nobody runs.
struct Running {
    storage: Storage,
    key: String,
    number: u64,
    finished: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut tables = self.storage.freshness().lock();
        if let Some(checks) = tables.get_mut(&self.key) {
            let cancelled =
                StorageError::Invalid(format!("the freshness check of {} was cancelled", self.key));
            checks
                .answers
                .send_replace((checks.wanted, Some(Err(Arc::new(cancelled)))));
            checks.sent = checks.wanted;
            checks.in_flight = false;
        }
    }
}
