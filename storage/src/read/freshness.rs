//! One freshness check for many queries. A query must see every commit made before it started,
//! so it cannot use the answer of a check sent before it arrived; but it can share one sent
//! after. Concurrent queries of a table therefore wait for the next check sent after they
//! arrived, and at most one check per table is in flight whatever the load: under N concurrent
//! lookups a table costs one check (two small requests, see [`crate::meta::snapshot::latest`]) per
//! check's round trip, not N. A table's definition is fetched the same way, so a served lookup
//! sends no request of its own for it either, yet sees a DROP or CREATE made before it began.
//!
//! A check runs on a task of its own, so a query that is cancelled while it waits leaves the
//! others' check running. Its error reaches every query that waited for it.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use tokio::sync::watch;

use crate::error::{Result, StorageError};
use crate::read::request_trace::RequestTrace;

/// The answer of check number `.0` (checks of a key are numbered from 1 as they are sent).
type Answer<T> = (u64, Option<std::result::Result<T, Arc<StorageError>>>);

struct KeyChecks<T> {
    /// Checks sent so far: the one in flight, if any, is number `sent`.
    sent: u64,
    in_flight: bool,
    /// The highest check number a waiting query needs.
    wanted: u64,
    answers: watch::Sender<Answer<T>>,
}

/// The checks of one kind of object (the newest snapshot of a table, by table directory; a
/// table's definition, by name), shared by every clone of a storage.
pub struct Freshness<T> {
    keys: Mutex<HashMap<String, KeyChecks<T>>>,
}

impl<T> Default for Freshness<T> {
    fn default() -> Self {
        Self {
            keys: Mutex::default(),
        }
    }
}

impl<T> std::fmt::Debug for Freshness<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Freshness").finish_non_exhaustive()
    }
}

impl<T: Clone + Send + Sync + 'static> Freshness<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, KeyChecks<T>>> {
        // Counters and a channel: a panic cannot leave them half-changed.
        self.keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What `check` answers for `key`, from a check sent after this call began.
    pub async fn latest<F, Fut>(self: &Arc<Self>, key: &str, check: F) -> Result<T>
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: Future<Output = Result<T>> + Send + 'static,
    {
        let (need, mut answers, running) = {
            let mut keys = self.lock();
            let checks = keys.entry(key.to_string()).or_insert_with(|| KeyChecks {
                sent: 0,
                in_flight: false,
                wanted: 0,
                answers: watch::channel((0, None)).0,
            });
            // The check in flight was sent before this query arrived: it needs the one after.
            let need = checks.sent + 1;
            checks.wanted = checks.wanted.max(need);
            let running = (!checks.in_flight).then(|| {
                checks.sent = need;
                checks.in_flight = true;
                Running {
                    checks: self.clone(),
                    key: key.to_string(),
                    number: need,
                    finished: false,
                }
            });
            (need, checks.answers.subscribe(), running)
        };
        // Spawned with the lock released: on a runtime that is shutting down, spawn drops the
        // task at once, and its drop takes the lock (it deadlocked a background compaction
        // that asked for a snapshot as its test's runtime ended).
        if let Some(running) = running {
            tokio::spawn(RequestTrace::carried(running.run(check)));
        }
        let answer = answers
            .wait_for(|(number, _)| *number >= need)
            .await
            .map_err(|_| StorageError::Invalid("a shared check's task ended unanswered".into()))?;
        match &answer.1 {
            Some(Ok(value)) => Ok(value.clone()),
            Some(Err(e)) => Err(StorageError::Shared(e.clone())),
            None => unreachable!("a numbered answer carries its result"),
        }
    }
}

/// The check task's state; if the task is dropped before it finishes (its runtime shut down),
/// every query waiting on it gets an error and the next query sends a check of its own, instead
/// of all waiting on a check nobody runs.
struct Running<T: Clone + Send + Sync + 'static> {
    checks: Arc<Freshness<T>>,
    key: String,
    number: u64,
    finished: bool,
}

impl<T: Clone + Send + Sync + 'static> Running<T> {
    /// Sends check `number`, publishes its answer, and goes on with the next while queries that
    /// arrived meanwhile wait for one.
    async fn run<F, Fut>(mut self, check: F)
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        loop {
            // A panic is this check's error, not a check in flight forever.
            let answer = match AssertUnwindSafe(check()).catch_unwind().await {
                Ok(answer) => answer.map_err(Arc::new),
                Err(_) => Err(Arc::new(StorageError::Invalid(format!(
                    "the check of {} panicked",
                    self.key
                )))),
            };
            let all = self.checks.clone();
            let mut keys = all.lock();
            let checks = keys
                .get_mut(&self.key)
                .expect("a key with a check in flight is listed");
            checks.answers.send_replace((self.number, Some(answer)));
            if checks.wanted <= self.number {
                checks.in_flight = false;
                self.finished = true;
                return;
            }
            self.number += 1;
            checks.sent = self.number;
        }
    }
}

impl<T: Clone + Send + Sync + 'static> Drop for Running<T> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut keys = self.checks.lock();
        if let Some(checks) = keys.get_mut(&self.key) {
            let cancelled =
                StorageError::Invalid(format!("the check of {} was cancelled", self.key));
            checks
                .answers
                .send_replace((checks.wanted, Some(Err(Arc::new(cancelled)))));
            checks.sent = checks.wanted;
            checks.in_flight = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check asked for on a runtime that has shut down (a background merge's last steps, as
    /// a server or a test ends) is an error at once. Its task is dropped inside the spawn; when
    /// that ran under the lock its drop takes, the caller deadlocked.
    #[test]
    fn a_check_asked_for_after_the_runtime_shut_down_fails_instead_of_hanging() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let handle = runtime.handle().clone();
        runtime.shutdown_background();
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _entered = handle.enter();
            let checks: Arc<Freshness<u64>> = Arc::default();
            let answer = futures::executor::block_on(checks.latest("t", || async { Ok(1) }));
            done.send(answer.map_err(|e| e.to_string())).unwrap();
        });
        let answer = finished
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the check neither answered nor failed: deadlocked");
        let error = answer.unwrap_err();
        assert!(error.contains("cancelled"), "{error}");
    }
}
