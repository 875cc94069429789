//! Rows written by the statement a session is running, read by front ends while it runs (the
//! shell's progress bar, the server's progress log), and the loop they report it with.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
pub struct WriteProgress {
    rows: AtomicU64,
}

impl WriteProgress {
    pub fn rows(&self) -> u64 {
        self.rows.load(Ordering::Relaxed)
    }

    pub(crate) fn add(&self, rows: u64) {
        self.rows.fetch_add(rows, Ordering::Relaxed);
    }

    pub(crate) fn reset(&self) {
        self.rows.store(0, Ordering::Relaxed);
    }

    /// Runs `statement`, calling `report` with the rows written so far and the time taken every
    /// `every` until it ends.
    pub async fn watch<F: Future>(
        self: Arc<Self>,
        statement: F,
        every: Duration,
        mut report: impl FnMut(u64, Duration),
    ) -> F::Output {
        let started = Instant::now();
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tokio::pin!(statement);
        loop {
            tokio::select! {
                output = &mut statement => return output,
                _ = ticks.tick() => report(self.rows(), started.elapsed()),
            }
        }
    }
}

/// Rows per second.
pub fn rate(rows: u64, elapsed: Duration) -> f64 {
    rows as f64 / elapsed.as_secs_f64().max(1e-9)
}
