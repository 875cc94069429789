//! A statement's scan of an attached Iceberg table on a coordinator, spread over the workers
//! as Sieve's own scans are ([`crate::cluster::coordinator`]). Each task reads the data files
//! that rendezvous gives its workers by path, as point lookups do
//! ([`crate::session::attached_lookup`]), so a worker's share of the table's index and its data
//! cache hold the files it reads. A worker plans its files from the metadata file of the
//! snapshot the coordinator resolved, so every task reads that snapshot whatever others have
//! committed since, and it needs the warehouse's settings (the catalog's `[[iceberg_catalogs]]`
//! entry), not the catalog's answer.
//!
//! The coordinator keeps its own plan of the whole scan beside the description it sends: the
//! distributed planner leaves a scan in one task (run by the coordinator) where the stage
//! above it cannot be split, and the coordinator then runs that plan.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::internal_err;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricValue, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use futures::{StreamExt, TryStreamExt};
use tokio::sync::OnceCell;

use crate::cluster::placement::Placement;
use crate::iceberg::scan_exec::{FileCounts, IcebergScanExec, count_files};
use crate::options::SieveOptions;
use crate::session::Session;

/// What a worker needs to plan its share of an attached table's scan.
#[derive(Debug, Clone)]
pub struct AttachedScan {
    /// `catalog.namespace`, and the table's name in it.
    pub database: String,
    pub table: String,
    /// The metadata file of the snapshot the coordinator planned, that snapshot's id and the
    /// table's UUID (which the worker checks it finds there).
    pub metadata_location: String,
    pub snapshot: u64,
    pub table_id: String,
    /// The data files this share reads, by path: before the split, all those the
    /// coordinator's index and manifest bounds left.
    pub files: Vec<String>,
    /// The live workers the files are placed over, and the indices of those whose files this
    /// share reads.
    pub placement: Arc<Placement>,
    pub workers: Vec<usize>,
    pub projection: Option<Vec<usize>>,
    /// The scan's filters, which prune files, row groups and pages: DataFusion applies them
    /// again above the scan, so one that cannot travel is left out, never wrong.
    pub filters: Vec<Expr>,
    pub limit: Option<usize>,
    /// The rows' schema, and the partitions the coordinator planned the scan in.
    pub schema: SchemaRef,
    pub partitions: usize,
    /// How the coordinator chose the files, which this share reports (the first task's only:
    /// EXPLAIN ANALYZE sums the tasks'), less the files read and the row groups pruned inside
    /// them: each worker counts those of its share.
    pub counts: Option<FileCounts>,
}

/// Where an [`AttachedScanExec`] runs.
enum Runs {
    /// On the coordinator: its own plan of the whole scan.
    Here(Arc<dyn ExecutionPlan>),
    /// A share made on the coordinator to be sent: it runs only where it is received.
    Sent,
    /// On a worker: planned by its session when first executed.
    There {
        session: Arc<Session>,
        planned: Arc<OnceCell<Arc<dyn ExecutionPlan>>>,
    },
}

pub struct AttachedScanExec {
    scan: AttachedScan,
    runs: Runs,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
    /// Whether the coordinator's own plan ran. Until it has, the node reports nothing: when
    /// the scan is spread over workers, datafusion-distributed shows the coordinator's copy of
    /// it with the tasks' metrics plus those the copy itself reports, which would count the
    /// files chosen a second time.
    ran_here: AtomicBool,
}

impl fmt::Debug for AttachedScanExec {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("AttachedScanExec")
            .field("scan", &self.scan)
            .finish_non_exhaustive()
    }
}

impl AttachedScanExec {
    fn new(scan: AttachedScan, runs: Runs) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(scan.schema.clone()),
            Partitioning::UnknownPartitioning(scan.partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        let metrics = ExecutionPlanMetricsSet::new();
        if let Some(counts) = &scan.counts {
            count_files(&metrics, counts);
        }
        Self {
            scan,
            runs,
            properties: Arc::new(properties),
            metrics,
            ran_here: AtomicBool::new(false),
        }
    }

    /// The scan on a coordinator, which runs `here` (its plan of the whole scan) if it is left
    /// in one task.
    pub fn here(scan: AttachedScan, here: Arc<dyn ExecutionPlan>) -> Self {
        let scan = AttachedScan {
            schema: here.schema(),
            partitions: here.output_partitioning().partition_count(),
            ..scan
        };
        Self::new(scan, Runs::Here(here))
    }

    /// A share received by a worker, which `session` plans.
    pub fn there(scan: AttachedScan, session: Arc<Session>) -> Self {
        let planned = Arc::new(OnceCell::new());
        Self::new(scan, Runs::There { session, planned })
    }

    pub fn scan(&self) -> &AttachedScan {
        &self.scan
    }

    /// The coordinator's own plan of the whole scan, where this is it.
    pub fn here_plan(&self) -> Option<&Arc<dyn ExecutionPlan>> {
        match &self.runs {
            Runs::Here(plan) => Some(plan),
            _ => None,
        }
    }

    /// One variant per task: the workers dealt out in turn, each variant reading their files
    /// (variants beyond the workers read none), the first reporting the coordinator's counts.
    pub fn split(&self, tasks: usize) -> Vec<Arc<dyn ExecutionPlan>> {
        let scan = &self.scan;
        // The `i`th worker goes to task `i % tasks`; each file's owner is found once.
        let task_of: HashMap<usize, usize> = (scan.workers.iter().enumerate())
            .map(|(i, &worker)| (worker, i % tasks))
            .collect();
        let mut files = vec![Vec::new(); tasks];
        for file in &scan.files {
            if let Some(&task) = task_of.get(&scan.placement.owner(file)) {
                files[task].push(file.clone());
            }
        }
        (files.into_iter().enumerate())
            .map(|(task, files)| {
                let share = AttachedScan {
                    database: scan.database.clone(),
                    table: scan.table.clone(),
                    metadata_location: scan.metadata_location.clone(),
                    snapshot: scan.snapshot,
                    table_id: scan.table_id.clone(),
                    files,
                    placement: scan.placement.clone(),
                    workers: (scan.workers.iter().skip(task).step_by(tasks))
                        .copied()
                        .collect(),
                    projection: scan.projection.clone(),
                    filters: scan.filters.clone(),
                    limit: scan.limit,
                    schema: scan.schema.clone(),
                    partitions: scan.partitions,
                    // The files read, and the row groups pruned inside them, are counted by
                    // each worker, of its own share.
                    counts: (scan.counts.clone().filter(|_| task == 0)).map(|counts| FileCounts {
                        read: 0,
                        row_groups_pruned_by_index: 0,
                        ..counts
                    }),
                };
                Arc::new(Self::new(share, Runs::Sent)) as Arc<dyn ExecutionPlan>
            })
            .collect()
    }
}

impl DisplayAs for AttachedScanExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "AttachedScanExec: table={}.{}, snapshot={}, files={}",
            self.scan.database,
            self.scan.table,
            self.scan.snapshot,
            self.scan.files.len()
        )
    }
}

impl ExecutionPlan for AttachedScanExec {
    fn name(&self) -> &str {
        "AttachedScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    /// None: a leaf, which the distributed planner splits over the workers.
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match children.is_empty() {
            true => Ok(self),
            false => internal_err!("AttachedScanExec has no children"),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let (session, planned) = match &self.runs {
            Runs::Here(plan) => {
                self.ran_here.store(true, Ordering::Relaxed);
                return plan.execute(partition, context);
            }
            Runs::Sent => {
                return internal_err!("a share of an attached table's scan ran unsent");
            }
            Runs::There { session, planned } => (session.clone(), planned.clone()),
        };
        let scan = self.scan.clone();
        // The worker's plan has partitions of its own: this partition reads every one that
        // falls to it, in turn.
        let streams = async move {
            let options = SieveOptions::of(&context);
            let plan = planned
                .get_or_try_init(|| session.plan_attached_share(&scan, &options))
                .await?;
            let count = plan.output_partitioning().partition_count();
            let streams = ((partition..count).step_by(scan.partitions.max(1)))
                .map(|i| plan.execute(i, context.clone()))
                .collect::<Result<Vec<_>>>()?;
            Ok::<_, DataFusionError>(futures::stream::iter(streams).flatten())
        };
        let rows = futures::stream::once(streams).try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.scan.schema.clone(),
            rows,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        let mut set = self.metrics.clone_inner();
        match &self.runs {
            Runs::Here(plan) if self.ran_here.load(Ordering::Relaxed) => return plan.metrics(),
            Runs::Here(_) => return Some(MetricsSet::new()),
            Runs::Sent => {}
            Runs::There { planned, .. } => {
                if let Some(plan) = planned.get() {
                    add_share_metrics(plan, &mut set);
                }
            }
        }
        Some(set)
    }
}

/// Counts of the whole table's files that the coordinator reports (on the first task): a
/// worker's plan of its share counts them again over its own files only.
const COORDINATORS_COUNTS: [&str; 3] =
    ["blocks_total", "blocks_fully_deleted", "files_not_indexed"];

/// What a worker's plan of its share read and pruned, added to `set`, so that EXPLAIN
/// ANALYZE and the query log sum the tasks' counts to what one process shows: the files each
/// read and those its share of the index pruned, the row groups that share pruned inside
/// them, and the metrics of the Parquet scan below (bytes fetched, row groups and pages
/// pruned by statistics). The nodes' own rows and times are left out but the plan's output
/// rows, which are this node's.
fn add_share_metrics(plan: &Arc<dyn ExecutionPlan>, set: &mut MetricsSet) {
    for metric in plan.metrics().iter().flat_map(|m| m.iter()) {
        if matches!(metric.value(), MetricValue::OutputRows(_)) {
            set.push(metric.clone());
        }
    }
    let _ = plan.apply(|node| {
        let counts_files = node.downcast_ref::<IcebergScanExec>().is_some();
        for metric in node.metrics().iter().flat_map(|m| m.iter()) {
            let name = metric.value().name();
            let baseline = matches!(
                metric.value(),
                MetricValue::OutputRows(_)
                    | MetricValue::ElapsedCompute(_)
                    | MetricValue::OutputBytes(_)
                    | MetricValue::OutputBatches(_)
                    | MetricValue::StartTimestamp(_)
                    | MetricValue::EndTimestamp(_)
            );
            if !baseline && !(counts_files && COORDINATORS_COUNTS.contains(&name)) {
                set.push(metric.clone());
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
}
