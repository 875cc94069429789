//! Reports on a statement while it runs: rows written so far and their rate, every `every`.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sieve_engine::WriteProgress;

pub async fn watch<F: Future>(
    statement: F,
    progress: Arc<WriteProgress>,
    every: Duration,
    mut report: impl FnMut(u64, Duration),
) -> F::Output {
    let started = Instant::now();
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tokio::pin!(statement);
    loop {
        tokio::select! {
            output = &mut statement => return output,
            _ = ticks.tick() => report(progress.rows(), started.elapsed()),
        }
    }
}

pub fn rate(rows: u64, elapsed: Duration) -> f64 {
    rows as f64 / elapsed.as_secs_f64().max(1e-9)
}
