//! What reading an attached table decided, shown by EXPLAIN ANALYZE with the counters Sieve's
//! own scans use (a data file is a block): a node above DataFusion's Parquet scan of the files
//! left, whose own metrics (row groups and pages pruned by Parquet's statistics) stay below it.
//! A point lookup's short path may read the files directly instead ([`LocatedFiles`]).

use std::fmt;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};

use super::located_read::LocatedFiles;
use crate::scan::page_read::LocatedRead;

/// How one read of an attached table chose its data files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileCounts {
    /// The snapshot's data files.
    pub total: usize,
    /// Files whose every row a position delete removed.
    pub fully_deleted: usize,
    /// Files an index built from them ruled the lookup's keys out of.
    pub pruned_by_index: usize,
    /// Row groups an index ruled the lookup's keys out of, in the files read.
    pub row_groups_pruned_by_index: usize,
    /// Files the column bounds of their manifest entries ruled the filter out of.
    pub pruned_by_minmax: usize,
    /// Files no index of the table covers yet (a snapshot the indexer has not reached): read.
    pub not_indexed: usize,
    pub read: usize,
}

/// `counts` as the counters EXPLAIN ANALYZE shows, those of Sieve's own scans where they
/// mean the same (a data file is a block).
pub fn count_files(metrics: &ExecutionPlanMetricsSet, counts: &FileCounts) {
    let count = |name: &'static str, value: usize| {
        MetricBuilder::new(metrics).global_counter(name).add(value);
    };
    count("blocks_total", counts.total);
    count("blocks_fully_deleted", counts.fully_deleted);
    count("blocks_pruned_by_filter", counts.pruned_by_index);
    count(
        "row_groups_pruned_by_filter",
        counts.row_groups_pruned_by_index,
    );
    count("blocks_pruned_by_minmax", counts.pruned_by_minmax);
    count("files_not_indexed", counts.not_indexed);
    count("blocks_read", counts.read);
}

#[derive(Debug)]
pub struct IcebergScanExec {
    table: String,
    snapshot_id: Option<i64>,
    counts: FileCounts,
    files: Files,
    /// The files again, for a point lookup that may read them directly.
    located: Option<Arc<LocatedFiles>>,
    metrics: ExecutionPlanMetricsSet,
}

/// The node's child, which reads the files: DataFusion's scan, made when first asked for, so
/// that a point lookup that reads its files directly never makes it. Its equivalence
/// properties and output ordering, worked out from the file groups and schema, were a few
/// percent of such a lookup's CPU, and so was its config (the Parquet source, the table schema
/// and the projection's expressions): 2% of a present key's at 64 connections, 100M rows.
pub enum Files {
    Built(Arc<dyn ExecutionPlan>),
    Scan(ScanConfig, OnceLock<Arc<dyn ExecutionPlan>>),
}

/// Makes the config of DataFusion's scan of the files. It cannot fail: what could (a
/// projection past the table's columns) is checked before.
pub type ScanConfig = Box<dyn Fn() -> FileScanConfig + Send + Sync>;

impl fmt::Debug for Files {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Self::Built(plan) => f.debug_tuple("Built").field(plan).finish(),
            Self::Scan(_, built) => f.debug_tuple("Scan").field(&built.get()).finish(),
        }
    }
}

impl Files {
    /// DataFusion's scan of the config `make` makes, made when first asked for.
    pub fn scan(make: ScanConfig) -> Self {
        Self::Scan(make, OnceLock::new())
    }

    fn plan(&self) -> &Arc<dyn ExecutionPlan> {
        match self {
            Self::Built(plan) => plan,
            Self::Scan(make, built) => {
                built.get_or_init(|| DataSourceExec::from_data_source(make()))
            }
        }
    }
}

impl IcebergScanExec {
    pub fn new(
        table: String,
        snapshot_id: Option<i64>,
        counts: FileCounts,
        (files, located): (Files, Option<LocatedFiles>),
    ) -> Self {
        let metrics = ExecutionPlanMetricsSet::new();
        count_files(&metrics, &counts);
        Self {
            table,
            snapshot_id,
            counts,
            files,
            located: located.map(Arc::new),
            metrics,
        }
    }

    pub fn counts(&self) -> &FileCounts {
        &self.counts
    }
}

impl DisplayAs for IcebergScanExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "IcebergScanExec: table={}", self.table)?;
        match self.snapshot_id {
            Some(id) => write!(f, ", snapshot={id}"),
            None => write!(f, ", no snapshot"),
        }
    }
}

impl ExecutionPlan for IcebergScanExec {
    fn name(&self) -> &str {
        "IcebergScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.files.plan().properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![self.files.plan()]
    }

    fn apply_expressions(
        &self,
        _: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue) // it has none of its own
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(Self {
            table: self.table.clone(),
            snapshot_id: self.snapshot_id,
            counts: self.counts.clone(),
            files: Files::Built(children.swap_remove(0)),
            located: self.located.clone(),
            metrics: self.metrics.clone(),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.files.plan().execute(partition, context)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

#[async_trait]
impl LocatedRead for IcebergScanExec {
    /// No rows where no file is left to read, as Sieve's own scan answers a key no block may
    /// hold: a lookup of an absent key spent a fifth of its CPU planning and running a filter
    /// over an empty scan on the executor.
    async fn read_direct(&self, _: &TaskContext) -> Result<Option<Vec<RecordBatch>>> {
        if self.counts.read == 0 {
            return Ok(Some(Vec::new()));
        }
        let Some(located) = &self.located else {
            return Ok(None);
        };
        let rows = located.read(&self.metrics).await?;
        if rows.is_some() {
            (MetricBuilder::new(&self.metrics).global_counter("blocks_read_directly"))
                .add(located.files.len());
        }
        Ok(rows)
    }
}
