//! EXPLAIN ANALYZE of a distributed plan that always ends.
//!
//! datafusion-distributed 4.0.0 answers EXPLAIN ANALYZE with its `DistributedAnalyzeExec`: it
//! drains the plan, then waits for every worker task's metrics with no bound
//! (`DistributedExec::wait_for_metrics`). A worker sends a task's metrics only when the task ran;
//! when a LIMIT is met before every task started (`… where c1 in (…) limit 2`), a task that
//! never ran sends none, and the statement waited forever: once in about 30 runs of the
//! workers' tests. Here the same plan is analyzed with the wait bounded by
//! [`METRICS_WAIT`]; past it, the plan is shown with the metrics that arrived and a line saying
//! some did not.

use std::fmt::Formatter;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use datafusion::arrow::array::StringArray;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::Result;
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, PlanProperties,
};
use datafusion_distributed::{
    DistributedExec, DistributedMetricsFormat, display_plan_ascii, explain_analyze,
};
use futures::StreamExt;

/// How long, after a distributed plan has run, EXPLAIN ANALYZE waits for its workers' metrics:
/// a task that ran sends them within milliseconds of its end.
pub(crate) const METRICS_WAIT: Duration = Duration::from_secs(5);

/// The distributed query planner, with its EXPLAIN ANALYZE node replaced by [`BoundedAnalyzeExec`].
#[derive(Debug)]
pub(crate) struct BoundedAnalyzePlanner {
    pub distributed: Arc<dyn QueryPlanner + Send + Sync>,
}

#[async_trait]
impl QueryPlanner for BoundedAnalyzePlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = (self.distributed)
            .create_physical_plan(logical_plan, session)
            .await?;
        // The crate's node is private: known by its name and its one distributed child.
        let children = plan.children();
        let (LogicalPlan::Analyze(analyze), "DistributedAnalyzeExec", [input]) =
            (logical_plan, plan.name(), children.as_slice())
        else {
            return Ok(plan);
        };
        if !input.is::<DistributedExec>() {
            return Ok(plan);
        }
        Ok(Arc::new(BoundedAnalyzeExec {
            input: Arc::clone(input),
            verbose: analyze.verbose,
            properties: Arc::clone(plan.properties()),
        }))
    }
}

/// What `DistributedAnalyzeExec` does, the wait for metrics bounded by [`METRICS_WAIT`].
#[derive(Debug)]
pub(crate) struct BoundedAnalyzeExec {
    input: Arc<dyn ExecutionPlan>,
    verbose: bool,
    properties: Arc<PlanProperties>,
}

impl DisplayAs for BoundedAnalyzeExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut Formatter) -> std::fmt::Result {
        write!(f, "BoundedAnalyzeExec verbose={}", self.verbose)
    }
}

impl ExecutionPlan for BoundedAnalyzeExec {
    fn name(&self) -> &str {
        "BoundedAnalyzeExec"
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

    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::UnspecifiedDistribution]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children).map_err(|c| {
            datafusion::common::internal_datafusion_err!(
                "BoundedAnalyzeExec has one child, got {}",
                c.len()
            )
        })?;
        Ok(Arc::new(Self {
            input,
            verbose: self.verbose,
            properties: Arc::clone(&self.properties),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return datafusion::common::internal_err!(
                "BoundedAnalyzeExec has one partition, asked for {partition}"
            );
        }
        let mut rows = self.input.execute(0, context)?;
        let input = Arc::clone(&self.input);
        let verbose = self.verbose;
        let schema = self.schema();
        let output = {
            let schema = schema.clone();
            async move {
                let start = std::time::Instant::now();
                let mut total_rows = 0;
                while let Some(batch) = rows.next().await.transpose()? {
                    total_rows += batch.num_rows();
                }
                drop(rows);
                // Waited for once: past the bound, both renderings go without the missing ones
                // (the crate's own rendering would wait for them again).
                let arrived = match input.downcast_ref::<DistributedExec>() {
                    Some(plan) => (tokio::time::timeout(METRICS_WAIT, plan.wait_for_metrics()))
                        .await
                        .is_ok(),
                    None => true,
                };
                let mut kinds = vec!["Plan with Metrics".to_string()];
                let mut plans =
                    vec![analyzed(&input, DistributedMetricsFormat::Aggregated, arrived).await?];
                if verbose {
                    kinds.extend(
                        ["Plan with Full Metrics", "Output Rows", "Duration"].map(String::from),
                    );
                    plans.extend([
                        analyzed(&input, DistributedMetricsFormat::PerTask, arrived).await?,
                        total_rows.to_string(),
                        format!("{:?}", start.elapsed()),
                    ]);
                }
                Ok(RecordBatch::try_new(
                    schema,
                    vec![
                        Arc::new(StringArray::from(kinds)),
                        Arc::new(StringArray::from(plans)),
                    ],
                )?)
            }
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::once(output),
        )))
    }
}

/// `plan` rendered with its workers' metrics if they all `arrived`, else with those that did
/// and a line saying so.
async fn analyzed(
    plan: &Arc<dyn ExecutionPlan>,
    format: DistributedMetricsFormat,
    arrived: bool,
) -> Result<String> {
    if arrived {
        return explain_analyze(Arc::clone(plan), format).await;
    }
    Ok(format!(
        "{}(the metrics of worker tasks that did not run, as when a LIMIT was met before they \
         started, did not arrive within {METRICS_WAIT:?})\n",
        display_plan_ascii(plan.as_ref(), true)
    ))
}
