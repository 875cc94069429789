//! The plan node of a Sieve table scan: the Parquet scan of the surviving blocks, plus what block
//! pruning decided, so EXPLAIN ANALYZE shows blocks total / pruned by min-max / pruned by filter /
//! read, sidecar bytes fetched and cache hits.

use std::fmt;
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties,
    ReplaceChildrenOptions,
};

use crate::pruning::PruneOutcome;

#[derive(Debug, Clone)]
pub struct SieveScanExec {
    table: String,
    outcome: Arc<PruneOutcome>,
    rows_in_blocks_read: u64,
    bytes_in_blocks_read: u64,
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl SieveScanExec {
    pub fn new(
        table: String,
        outcome: PruneOutcome,
        rows_in_blocks_read: u64,
        bytes_in_blocks_read: u64,
        input: Arc<dyn ExecutionPlan>,
    ) -> Self {
        let metrics = ExecutionPlanMetricsSet::new();
        let count = |name: &'static str, value: u64| {
            MetricBuilder::new(&metrics)
                .global_counter(name)
                .add(value as usize)
        };
        count("blocks_total", outcome.total as u64);
        count("blocks_pruned_by_minmax", outcome.pruned_by_minmax as u64);
        count("blocks_pruned_by_filter", outcome.pruned_by_filter as u64);
        count("blocks_read", outcome.survivors.len() as u64);
        count("sidecar_bytes_fetched", outcome.sidecar_bytes);
        count("sidecar_cache_hits", outcome.sidecar_cache_hits);
        count("sidecars_unreadable", outcome.sidecars_unreadable);
        count("rows_in_blocks_read", rows_in_blocks_read);
        count("bytes_in_blocks_read", bytes_in_blocks_read);
        let properties = input.properties().clone();
        Self {
            table,
            outcome: Arc::new(outcome),
            rows_in_blocks_read,
            bytes_in_blocks_read,
            input,
            properties,
            metrics,
        }
    }

    pub fn outcome(&self) -> &PruneOutcome {
        &self.outcome
    }

    pub fn rows_in_blocks_read(&self) -> u64 {
        self.rows_in_blocks_read
    }

    pub fn bytes_in_blocks_read(&self) -> u64 {
        self.bytes_in_blocks_read
    }
}

impl DisplayAs for SieveScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let o = &self.outcome;
        write!(
            f,
            "SieveScanExec: table={}, blocks={} total, {} pruned by min-max, {} pruned by filter, {} read",
            self.table,
            o.total,
            o.pruned_by_minmax,
            o.pruned_by_filter,
            o.survivors.len()
        )
    }
}

impl ExecutionPlan for SieveScanExec {
    fn name(&self) -> &'static str {
        "SieveScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
        options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = children.swap_remove(0);
        let properties = match options.children_properties {
            ChildrenPropertiesMode::Keep => self.properties.clone(),
            ChildrenPropertiesMode::Recompute => input.properties().clone(),
        };
        Ok(Arc::new(Self {
            input,
            properties,
            ..Self::clone(&self)
        }))
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.input.execute(partition, context)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}
