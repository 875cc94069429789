//! What a statement returns. A query's rows stream batch by batch, so a server can send a
//! hundred-million-row result to its client holding one batch at a time; callers that want the
//! whole result (tests, the shell's table rendering) collect it under the query's memory budget.

use std::sync::{Arc, Mutex};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::error::Result;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_distributed::{
    DistributedExec, DistributedMetricsFormat, rewrite_distributed_plan_with_metrics,
};
use futures::StreamExt;
use tokio::runtime::Handle;

use sieve_storage::RequestTrace;

use crate::cluster::attached_scan::AttachedScanExec;
use crate::cluster::bounded_analyze::METRICS_WAIT;
use crate::iceberg::scan_exec::IcebergScanExec;
use crate::metrics::Outcome;
use crate::scan::exec::SieveScanExec;
use crate::session::statement_end::Finished;

/// What reading a statement's tables cost: the figures clients print after a result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanStats {
    pub blocks_total: u64,
    pub blocks_read: u64,
    pub rows_read: u64,
    pub bytes_read: u64,
    /// Locator pages and sidecar entries read from storage to choose the blocks.
    pub index_bytes: u64,
    /// Locator groups whose pages were read (or found cached) to choose the blocks.
    pub locator_groups_probed: u64,
    /// Slices (4096 rows of each column read) the scans asked for.
    pub pages_read: u64,
    /// Blocks whose located pages a short-path lookup decoded on its own task, without
    /// DataFusion's Parquet scan (`sieve.direct_reads`).
    pub blocks_read_directly: u64,
    /// Locator groups a routing filter ruled out without reading their pages.
    pub locator_groups_routed_out: u64,
    /// Object-store requests the statement sent: while it was planned (its tables'
    /// definitions; a point lookup's snapshot; DDL and DML also run then) and by its scans.
    pub requests: u64,
    /// Of those, the longest chain each sent after the one before it was answered: the round
    /// trips the statement waited for. Planning's chain plus each scan's, an upper bound when
    /// scans run side by side.
    pub sequential_requests: u64,
}

impl ScanStats {
    /// Sums what the plan's Sieve scans read; bytes are the Parquet bytes actually fetched when
    /// the scan reports them. Complete once the plan has run.
    pub(crate) fn of(plan: &Arc<dyn ExecutionPlan>) -> Self {
        let mut stats = Self::default();
        // Through the interruptible wrapper a statement's sources run in.
        if let Some(scan) = plan.downcast_ref::<SieveScanExec>() {
            if let Some(opened) = scan.opened() {
                stats.blocks_total += opened.outcome.total as u64;
                stats.blocks_read += opened.outcome.survivors.len() as u64;
                stats.rows_read += opened.rows_in_blocks_read;
                stats.index_bytes += opened.outcome.index_bytes;
                stats.locator_groups_probed += opened.outcome.locator_groups_probed;
                stats.locator_groups_routed_out += opened.outcome.locator_groups_routed_out;
                stats.requests += scan.trace().requests();
                stats.sequential_requests += scan.trace().sequential_requests();
                let metrics = scan.metrics();
                let sum = |name| metrics.as_ref().and_then(|m| m.sum_by_name(name));
                stats.pages_read += sum("pages_read").map_or(0, |v| v.as_usize() as u64);
                stats.blocks_read_directly +=
                    sum("blocks_read_directly").map_or(0, |v| v.as_usize() as u64);
                let scanned = sum("bytes_scanned");
                stats.bytes_read +=
                    scanned.map_or(opened.bytes_in_blocks_read, |v| v.as_usize() as u64);
            }
            return stats;
        }
        // A coordinator's scan of an attached table, left in this process: its own plan.
        if let Some(here) = (plan.downcast_ref::<AttachedScanExec>()).and_then(|s| s.here_plan()) {
            return Self::of(here);
        }
        if let Some(scan) = plan.downcast_ref::<IcebergScanExec>() {
            stats.blocks_total += scan.counts().total as u64;
            stats.blocks_read += scan.counts().read as u64;
            let direct = scan
                .metrics()
                .and_then(|m| m.sum_by_name("blocks_read_directly"));
            stats.blocks_read_directly += direct.map_or(0, |v| v.as_usize() as u64);
            // Its child reads files, not Sieve's blocks: a direct read never built it.
            return stats;
        }
        for child in plan.children() {
            stats.add(&Self::of(child));
        }
        stats
    }

    /// What `distributed`'s scans read in every task, on the workers and here: the counters
    /// each task reported with its metrics, as EXPLAIN ANALYZE shows them summed (a worker's
    /// scan is not in this process's plan, whose copy of it never ran). The workers' metrics
    /// arrive after the last row: waits for them.
    async fn of_tasks(distributed: Arc<dyn ExecutionPlan>) -> Result<Self> {
        let format = DistributedMetricsFormat::Aggregated;
        let reported = rewrite_distributed_plan_with_metrics(distributed, format).await?;
        let mut stats = Self::default();
        reported.apply(|node| {
            if let Some(metrics) = node.metrics() {
                let sum = |name| metrics.sum_by_name(name).map(|v| v.as_usize() as u64);
                let count = |name| sum(name).unwrap_or(0);
                stats.add(&Self {
                    blocks_total: count("blocks_total"),
                    blocks_read: count("blocks_read"),
                    rows_read: count("rows_in_blocks_read"),
                    // As [`Self::of`]: the bytes fetched where the scan reports them.
                    bytes_read: sum("bytes_scanned").unwrap_or(count("bytes_in_blocks_read")),
                    index_bytes: count("index_bytes_fetched"),
                    locator_groups_probed: count("locator_groups_probed"),
                    pages_read: count("pages_read"),
                    blocks_read_directly: count("blocks_read_directly"),
                    locator_groups_routed_out: count("locator_groups_routed_out"),
                    requests: count("requests"),
                    sequential_requests: count("sequential_requests"),
                });
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        Ok(stats)
    }

    pub(crate) fn add(&mut self, other: &Self) {
        self.blocks_total += other.blocks_total;
        self.blocks_read += other.blocks_read;
        self.pages_read += other.pages_read;
        self.blocks_read_directly += other.blocks_read_directly;
        self.rows_read += other.rows_read;
        self.bytes_read += other.bytes_read;
        self.index_bytes += other.index_bytes;
        self.locator_groups_probed += other.locator_groups_probed;
        self.locator_groups_routed_out += other.locator_groups_routed_out;
        self.requests += other.requests;
        self.sequential_requests += other.sequential_requests;
    }
}

/// A statement's result, whole.
#[derive(Debug, Clone)]
pub struct QueryOutput {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
    /// Rows written or removed by DML and DDL; None for a query.
    pub affected_rows: Option<u64>,
    pub stats: ScanStats,
    /// Planned by the short path of point lookups (see `sieve.short_path`).
    pub short_path: bool,
}

impl QueryOutput {
    pub fn row_count(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }
}

/// Where a result column's values come from, for clients that show it (a MySQL column
/// definition's schema and table): the table a column is read from, unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnOrigin {
    pub database: String,
    pub table: String,
}

/// A statement's result as it is produced.
pub struct QueryStream {
    schema: SchemaRef,
    /// Per column, the table it is read from; empty when no column is one of a table's.
    origins: Vec<Option<ColumnOrigin>>,
    rows: Option<SendableRecordBatchStream>,
    affected_rows: Option<u64>,
    plan: Option<Arc<dyn ExecutionPlan>>,
    pool: Arc<dyn MemoryPool>,
    short_path: bool,
    /// The requests planning sent.
    planning: Option<Arc<RequestTrace>>,
    /// What workers that answered a point lookup say reading its rows cost them.
    read_by_workers: Option<Arc<Mutex<ScanStats>>>,
    /// Recorded for /metrics when the result is dropped.
    finished: Option<Finished>,
    /// Rows returned so far, and how the rows ended (None: not yet), with their error.
    rows_returned: u64,
    ended: Option<Outcome>,
    error: Option<String>,
}

impl Drop for QueryStream {
    fn drop(&mut self) {
        let Some(mut finished) = self.finished.take() else {
            return;
        };
        let outcome = match (&self.rows, self.ended) {
            (None, _) => Outcome::Ok,
            (Some(_), Some(outcome)) => outcome,
            (Some(_), None) => Outcome::Cancelled,
        };
        let (rows, error) = (self.rows_returned, self.error.take());
        let distributed = (self.plan.as_ref())
            .filter(|_| outcome == Outcome::Ok)
            .and_then(distributed_root);
        let (Some(distributed), Ok(runtime)) = (distributed, Handle::try_current()) else {
            finished.record(outcome, rows, &self.stats(), error);
            return;
        };
        // Its scans ran on the workers: recorded once their counts are in, with the duration
        // it took to this point.
        finished.stop_clock();
        let planning = self.planning.clone();
        runtime.spawn(async move {
            // As long as EXPLAIN ANALYZE waits: a task that never ran (a LIMIT met first, a
            // worker lost) sends nothing, and its statement is then recorded without them.
            let counted = tokio::time::timeout(METRICS_WAIT, ScanStats::of_tasks(distributed));
            let mut stats = match counted.await {
                Ok(Ok(stats)) => stats,
                _ => ScanStats::default(),
            };
            if let Some(planning) = planning {
                stats.requests += planning.requests();
                stats.sequential_requests += planning.sequential_requests();
            }
            finished.record(outcome, rows, &stats, error);
        });
    }
}

/// The distributed plan `plan` runs (datafusion-distributed's root), if it runs one. Scans
/// hold none, so the walk stops at them: an attached table's scan builds DataFusion's Parquet
/// scan below it only when asked for its children, which a lookup read directly never needs
/// (building it cost ~4% of such a lookup's CPU).
fn distributed_root(plan: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
    let mut found = None;
    let _ = plan.apply(|node| {
        if node.is::<DistributedExec>() {
            found = Some(node.clone());
            return Ok(TreeNodeRecursion::Stop);
        }
        let scan = node.is::<SieveScanExec>()
            || node.is::<IcebergScanExec>()
            || node.is::<AttachedScanExec>();
        Ok(match scan {
            true => TreeNodeRecursion::Jump,
            false => TreeNodeRecursion::Continue,
        })
    });
    found
}

impl QueryStream {
    pub(crate) fn affected(rows: u64, pool: Arc<dyn MemoryPool>) -> Self {
        Self {
            schema: Arc::new(Schema::empty()),
            origins: Vec::new(),
            rows: None,
            affected_rows: Some(rows),
            plan: None,
            pool,
            short_path: false,
            planning: None,
            read_by_workers: None,
            finished: None,
            rows_returned: 0,
            ended: None,
            error: None,
        }
    }

    /// Rows written by DML, with the plan that wrote them for its scan figures.
    pub(crate) fn written(
        rows: u64,
        plan: Arc<dyn ExecutionPlan>,
        pool: Arc<dyn MemoryPool>,
    ) -> Self {
        let mut written = Self::affected(rows, pool);
        written.plan = Some(plan);
        written
    }

    pub(crate) fn rows(
        schema: SchemaRef,
        rows: SendableRecordBatchStream,
        plan: Option<Arc<dyn ExecutionPlan>>,
        pool: Arc<dyn MemoryPool>,
    ) -> Self {
        Self {
            schema,
            origins: Vec::new(),
            rows: Some(rows),
            affected_rows: None,
            plan,
            pool,
            short_path: false,
            planning: None,
            read_by_workers: None,
            finished: None,
            rows_returned: 0,
            ended: None,
            error: None,
        }
    }

    /// Text columns, row by row, for SHOW statements answered from the catalog.
    pub(crate) fn table(
        columns: &[&str],
        rows: Vec<Vec<String>>,
        pool: Arc<dyn MemoryPool>,
    ) -> Result<Self> {
        let fields: Vec<Field> = columns
            .iter()
            .map(|c| Field::new(*c, DataType::Utf8, false))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let arrays = (0..columns.len())
            .map(|i| {
                let values: Vec<&str> = rows.iter().map(|r| r[i].as_str()).collect();
                Arc::new(StringArray::from(values)) as ArrayRef
            })
            .collect();
        let batch = RecordBatch::try_new(schema.clone(), arrays)?;
        let rows = datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
            schema.clone(),
            futures::stream::iter([Ok(batch)]),
        );
        Ok(Self::rows(schema, Box::pin(rows), None, pool))
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    pub(crate) fn with_origins(mut self, origins: Vec<Option<ColumnOrigin>>) -> Self {
        self.origins = origins;
        self
    }

    /// The same result with its rows passed through `f`.
    pub(crate) fn map_rows(
        mut self,
        f: impl FnOnce(SendableRecordBatchStream) -> SendableRecordBatchStream,
    ) -> Self {
        self.rows = self.rows.take().map(f);
        self
    }

    /// The requests planning sent, and the statement to record when the result is done.
    pub(crate) fn planned_with(mut self, planning: Arc<RequestTrace>, finished: Finished) -> Self {
        self.planning = Some(planning);
        self.finished = Some(finished);
        self
    }

    /// The same result, whose rows workers read and say what that cost in `read`.
    pub(crate) fn read_by_workers(mut self, read: Arc<Mutex<ScanStats>>) -> Self {
        self.read_by_workers = Some(read);
        self
    }

    pub(crate) fn by_short_path(mut self) -> Self {
        self.short_path = true;
        self
    }

    /// The table column `i` is read from, if it is a table's column.
    pub fn origin(&self, i: usize) -> Option<&ColumnOrigin> {
        self.origins.get(i)?.as_ref()
    }

    /// Rows written or removed by DML and DDL; None for a query.
    pub fn affected_rows(&self) -> Option<u64> {
        self.affected_rows
    }

    /// The next batch of a query's rows; None at the end (and at once for DML and DDL).
    pub async fn next(&mut self) -> Option<Result<RecordBatch>> {
        let next = self.rows.as_mut()?.next().await;
        match &next {
            Some(Ok(batch)) => self.rows_returned += batch.num_rows() as u64,
            Some(Err(e)) => {
                self.ended = Some(Outcome::Error);
                self.error = Some(e.to_string());
            }
            None => self.ended = self.ended.or(Some(Outcome::Ok)),
        }
        next
    }

    /// What the statement read so far: all of it once the rows are consumed.
    pub fn stats(&self) -> ScanStats {
        let mut stats = self.plan.as_ref().map(ScanStats::of).unwrap_or_default();
        if let Some(read) = &self.read_by_workers {
            stats.add(&read.lock().unwrap_or_else(|e| e.into_inner()));
        }
        if let Some(planning) = &self.planning {
            stats.requests += planning.requests();
            stats.sequential_requests += planning.sequential_requests();
        }
        stats
    }

    /// Reads the whole result, holding it within the query's memory budget.
    pub async fn collect(mut self) -> Result<QueryOutput> {
        let held = MemoryConsumer::new("query result").register(&self.pool);
        let mut batches = Vec::new();
        while let Some(batch) = self.next().await {
            let batch = batch?;
            if let Err(e) = held.try_grow(batch.get_array_memory_size()) {
                self.ended = Some(Outcome::Error);
                self.error = Some(e.to_string());
                return Err(e);
            }
            batches.push(batch);
        }
        Ok(QueryOutput {
            stats: self.stats(),
            schema: self.schema.clone(),
            batches,
            affected_rows: self.affected_rows,
            short_path: self.short_path,
        })
    }
}
