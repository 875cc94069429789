//! `sieve load`: streams the synthetic table into storage, resumably.
//!
//! Block `i` always holds the c1 range `[i·block_rows, (i+1)·block_rows) ∩ [0, rows)`, and the
//! writer commits every `commit_blocks` blocks. A run therefore reads which ranges the table
//! already holds (from the committed block statistics — there is no separate progress file to get
//! out of step) and writes only the missing ones: after Ctrl-C, kill -9 or a storage outage, the
//! same command continues where the last commit ended, and no row is written twice. Blocks of an
//! interrupted, uncommitted batch stay behind as unreferenced files.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::UInt64Type;
use datafusion::common::{exec_datafusion_err, exec_err, plan_err};
use datafusion::error::Result;
use futures::StreamExt;
use sieve_engine::{Engine, to_df};
use sieve_storage::{BlockList, TableDef, TableWriter, blocks_per_group};

use crate::synthetic;

/// Blocks per commit unless asked otherwise, at least: 256 one-million-row blocks are about a
/// minute of a 2-core machine's work, so an interruption costs little and a huge load makes few
/// snapshots. Rounded up to whole locator groups, at least two (a commit ends a write's last
/// group early, so commits of whole groups leave no small group for merges to build again):
/// 256 blocks of 1M rows, 2,560 of 100k.
const MIN_COMMIT_BLOCKS: usize = 256;

/// Blocks per commit for a table whose writes put `per_group` blocks in a locator group.
fn default_commit_blocks(per_group: usize) -> usize {
    per_group * MIN_COMMIT_BLOCKS.div_ceil(per_group).max(2)
}

#[derive(Debug, Clone)]
pub struct LoadRequest {
    /// `name` (in the default database) or `database.name`.
    pub table: String,
    pub rows: u64,
    /// Table options as in `CREATE TABLE … WITH (…)`, for a new table; an existing table keeps its
    /// own, and asking for an option it does not have is an error.
    pub options: Vec<(String, String)>,
    /// Blocks per commit; None for whole locator groups, [`MIN_COMMIT_BLOCKS`] at least.
    pub commit_blocks: Option<usize>,
}

/// Where a running load is, for progress bars.
#[derive(Debug, Default)]
pub struct LoadProgress {
    total: AtomicU64,
    before: AtomicU64,
    committed: AtomicU64,
    written: AtomicU64,
}

impl LoadProgress {
    /// Rows the table will hold when the load is done.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Rows already committed when this run started.
    pub fn before(&self) -> u64 {
        self.before.load(Ordering::Relaxed)
    }

    /// Rows committed, including those committed by earlier runs.
    pub fn committed(&self) -> u64 {
        self.committed.load(Ordering::Relaxed)
    }

    /// Rows handed to the writer by this run, committed or not.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
}

#[derive(Debug, Clone)]
pub struct LoadSummary {
    /// `database.name`.
    pub table: String,
    /// Rows already committed when this run started.
    pub rows_before: u64,
    /// Rows this run wrote and committed.
    pub rows_loaded: u64,
    pub rows_total: u64,
    pub blocks_total: u64,
    pub commits: u64,
    pub elapsed: Duration,
    pub data_bytes: u64,
    pub sidecar_bytes: u64,
    /// Thread time spent building locator groups (they build beside the blocks' encoding).
    pub locator_build: Duration,
}

/// Which blocks `blocks` already holds, checking that every one is a block this loader would
/// write for `rows` (anything else — rows from a CTAS, or a different `--rows` — is an error
/// rather than a silent duplicate).
fn committed_blocks(
    def: &TableDef,
    blocks: &BlockList,
    rows: u64,
    block_rows: u64,
) -> Result<BTreeSet<u64>> {
    let (Some(mins), Some(maxes)) = (blocks.mins("c1"), blocks.maxes("c1")) else {
        return exec_err!("table '{}' has no c1 statistics", def.name);
    };
    let (mins, maxes) = (
        mins.as_primitive::<UInt64Type>(),
        maxes.as_primitive::<UInt64Type>(),
    );
    let mut done = BTreeSet::new();
    for i in 0..blocks.len() {
        let (n, min, max) = (blocks.rows().value(i), mins.value(i), maxes.value(i));
        let index = min / block_rows;
        if mins.is_null(i) || min % block_rows != 0 || max + 1 != min + n {
            return plan_err!(
                "table '{}' holds rows c1 = {min}..={max} that `sieve load` did not write; drop it or load under another name",
                def.name
            );
        }
        let expected = rows.saturating_sub(min).min(block_rows);
        if n != expected {
            return plan_err!(
                "table '{}' already holds c1 = {min}..={max}, which a load of {rows} rows would not write; load with the --rows it was started with, or drop it",
                def.name
            );
        }
        if !done.insert(index) {
            return exec_err!("table '{}' holds c1 = {min}..={max} twice", def.name);
        }
    }
    Ok(done)
}

/// Loads (or finishes loading) the synthetic table; see the module comment.
pub async fn load_synthetic(
    engine: &Engine,
    request: &LoadRequest,
    progress: &LoadProgress,
) -> Result<LoadSummary> {
    let started = Instant::now();
    if request.commit_blocks == Some(0) {
        return plan_err!("commit_blocks must be at least 1");
    }
    let table = engine
        .ensure_table(&request.table, synthetic::schema(), &request.options)
        .await?;
    let def = table.def().clone();
    let block_rows = def.options.block_rows as u64;
    let commit_blocks = request.commit_blocks.unwrap_or_else(|| {
        default_commit_blocks(blocks_per_group(
            def.options.locator_group_rows,
            def.options.block_rows,
        ))
    });
    let snapshot = table.snapshot().await.map_err(to_df)?;
    let blocks = table.blocks(&snapshot).await.map_err(to_df)?;
    let done = committed_blocks(&def, &blocks, request.rows, block_rows)?;
    let rows_before = blocks.rows().values().iter().sum::<u64>();
    progress.total.store(request.rows, Ordering::Relaxed);
    progress.before.store(rows_before, Ordering::Relaxed);
    progress.committed.store(rows_before, Ordering::Relaxed);

    let parallelism = std::thread::available_parallelism().map_or(2, |n| n.get());
    let missing = (0..request.rows.div_ceil(block_rows)).filter(|i| !done.contains(i));
    // Blocks are generated on the blocking pool, one per core ahead of the writer, which
    // encodes one per core: memory stays a few blocks whatever `rows` is.
    let mut batches = futures::stream::iter(missing)
        .map(|i| {
            let first = i * block_rows;
            let rows = block_rows.min(request.rows - first);
            tokio::task::spawn_blocking(move || synthetic::block(i, first, rows))
        })
        .buffered(parallelism);
    let (mut rows_loaded, mut commits, mut locator_build) = (0, 0, Duration::ZERO);
    let mut writer = TableWriter::new(table.clone());
    let mut in_writer = 0;
    while let Some(batch) = batches.next().await {
        let batch: RecordBatch = batch.map_err(|e| exec_datafusion_err!("{e}"))??;
        progress
            .written
            .fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
        writer.write(batch).await.map_err(to_df)?;
        in_writer += 1;
        if in_writer == commit_blocks {
            let committed = std::mem::replace(&mut writer, TableWriter::new(table.clone()))
                .finish()
                .await
                .map_err(to_df)?;
            progress
                .committed
                .fetch_add(committed.rows, Ordering::Relaxed);
            (rows_loaded, commits, in_writer) = (rows_loaded + committed.rows, commits + 1, 0);
            engine.merge_in_background(&table);
            locator_build += committed.locator_build;
        }
    }
    let committed = writer.finish().await.map_err(to_df)?;
    progress
        .committed
        .fetch_add(committed.rows, Ordering::Relaxed);
    rows_loaded += committed.rows;
    commits += u64::from(committed.snapshot.is_some());
    engine.merge_in_background(&table);
    locator_build += committed.locator_build;

    let snapshot = table.snapshot().await.map_err(to_df)?;
    Ok(LoadSummary {
        table: format!("{}.{}", def.database, def.name),
        rows_before,
        rows_loaded,
        rows_total: snapshot.rows,
        blocks_total: snapshot.blocks,
        commits,
        elapsed: started.elapsed(),
        data_bytes: snapshot.data_bytes,
        sidecar_bytes: snapshot.sidecar_bytes,
        locator_build,
    })
}

#[cfg(test)]
mod tests {
    use super::default_commit_blocks;

    #[test]
    fn a_default_commit_is_whole_groups_of_at_least_256_blocks() {
        let commits: Vec<usize> = [128, 1280, 8, 80, 1, 300]
            .into_iter()
            .map(default_commit_blocks)
            .collect();
        assert_eq!(commits, [256, 2560, 256, 320, 256, 600]);
    }
}
