//! Stopping a statement inside one poll. A statement that timed out, was killed or lost its
//! client is dropped, which aborts its tasks, but a task stops only where it yields, and a nested
//! loop join yields only between output batches: with a join filter that keeps few rows it works
//! through its whole build side per probe batch (a billion pairs a poll for two 1M-row tables),
//! and went on computing for minutes after its client had its error. The join filter is
//! evaluated once per build row, so the filter is where such a join can be stopped: every
//! statement's nested loop joins get their filter wrapped in [`InterruptibleExpr`], which fails
//! once the statement's [`Interrupt`] is raised, and the join's error ends its task.
//!
//! Joins also run as an [`InterruptibleExec`]: a cross join makes one batch per build row from
//! a probe batch without polling its input, so an operator consuming it in a loop (an aggregate,
//! a TopK) never yields and is never aborted: `select count(*)` over a cross join of two
//! million-row tables kept two cores busy long after its client had the timeout's error. Each
//! join's streams end with an error once the statement is interrupted, and give their thread
//! back every so often (DataFusion's cooperative budget). Sources (`numbers(N)`, a scan, a
//! file) run as one too: an operator pulling from a source that is always ready yields only when
//! that budget is spent, 128 batches, a million rows of whatever it computes per row, so a
//! string-heavy filter over `numbers(100000000)` went on computing on both cores for about a
//! second after its timeout (a debug build); a source whose stream fails once the statement is
//! interrupted stops the operators above it within a batch. The other operators yield between
//! batches of bounded work, so dropping the statement stops them. Joins and sources below a
//! network boundary run on workers and are left as they are (a worker's task is cancelled by its
//! stream being dropped).
//!
//! [`StatementTasks`] counts the statement tasks and the join streams not yet stopped, so a test
//! can wait for a statement's work to end instead of timing it.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, FieldRef, Schema};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::coop::make_cooperative;
use datafusion::physical_plan::joins::NestedLoopJoinExec;
use datafusion::physical_plan::joins::utils::JoinFilter;
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::work_table::WorkTableExec;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, replace_children_if_necessary,
};
use datafusion_distributed::NetworkBoundaryExt;
use futures::StreamExt;
use tokio::sync::watch;

/// Raised when a statement's rows are dropped; its joins' filters then fail.
#[derive(Debug, Clone, Default)]
pub(crate) struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// Raises the interrupt when the returned guard is dropped.
    pub(crate) fn on_drop(&self) -> RaiseOnDrop {
        RaiseOnDrop(self.clone())
    }

    fn raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `plan` with every join and every source this process runs made interruptible
    /// ([`InterruptibleExec`]), the filters of nested loop joins too, their streams counted in
    /// `tasks`.
    pub(crate) fn wrap(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        tasks: &StatementTasks,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let wrapped = plan.transform_down(|node| {
            if node.is_network_boundary() {
                return Ok(Transformed::new(node, false, TreeNodeRecursion::Jump));
            }
            // A recursive CTE's work table is found by its type and filled by the recursion:
            // left as it is (the recursion's own sources are wrapped).
            let source = node.children().is_empty() && !node.is::<WorkTableExec>();
            if !source && !node.name().ends_with("JoinExec") {
                return Ok(Transformed::no(node));
            }
            let node = match source {
                true => node,
                false => self.filtered(node)?,
            };
            Ok(Transformed::yes(Arc::new(InterruptibleExec {
                inner: node,
                interrupt: self.clone(),
                tasks: tasks.clone(),
            }) as Arc<dyn ExecutionPlan>))
        })?;
        Ok(wrapped.data)
    }

    /// `node` with its filter made interruptible if it is a nested loop join with one, which
    /// one poll works through a whole build side with.
    fn filtered(&self, node: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
        {
            let Some(join) = node.downcast_ref::<NestedLoopJoinExec>() else {
                return Ok(node);
            };
            let Some(filter) = join.filter() else {
                return Ok(node);
            };
            let expression: Arc<dyn PhysicalExpr> = Arc::new(InterruptibleExpr {
                inner: filter.expression().clone(),
                interrupt: self.clone(),
            });
            let filter = JoinFilter::new(
                expression,
                filter.column_indices().to_vec(),
                filter.schema().clone(),
            );
            let projection = join.projection().as_ref().map(|p| p.to_vec());
            let join = NestedLoopJoinExec::try_new(
                join.left().clone(),
                join.right().clone(),
                Some(filter),
                join.join_type(),
                projection,
            )?;
            Ok(Arc::new(join))
        }
    }
}

fn interrupted() -> DataFusionError {
    DataFusionError::Execution("the statement was interrupted".into())
}

/// A join or a source run as itself (shown, downcast, measured as it), whose streams fail once the
/// statement is interrupted, yield to the runtime between batches when its budget is spent,
/// and are counted in the statement's tasks until dropped.
#[derive(Debug)]
struct InterruptibleExec {
    inner: Arc<dyn ExecutionPlan>,
    interrupt: Interrupt,
    tasks: StatementTasks,
}

impl DisplayAs for InterruptibleExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.fmt_as(t, f)
    }
}

impl ExecutionPlan for InterruptibleExec {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn downcast_delegate(&self) -> Option<&dyn ExecutionPlan> {
        Some(self.inner.as_ref())
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.inner.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.inner.children()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.inner.apply_expressions(f)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(Self {
            inner: replace_children_if_necessary(self.inner.clone(), children)?,
            interrupt: self.interrupt.clone(),
            tasks: self.tasks.clone(),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let rows = self.inner.execute(partition, context)?;
        let schema = rows.schema();
        let (running, interrupt) = (self.tasks.started(), self.interrupt.clone());
        let checked = rows.map(move |batch| {
            let _running = &running;
            match interrupt.raised() {
                true => Err(interrupted()),
                false => batch,
            }
        });
        Ok(make_cooperative(Box::pin(RecordBatchStreamAdapter::new(
            schema, checked,
        ))))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        self.inner.metrics()
    }
}

/// Raises its interrupt when dropped (with the statement's rows).
#[derive(Debug)]
pub(crate) struct RaiseOnDrop(Interrupt);

impl Drop for RaiseOnDrop {
    fn drop(&mut self) {
        self.0.0.store(true, Ordering::Relaxed);
    }
}

/// A join filter that fails once its statement is interrupted; otherwise it is its inner
/// expression, shown as it.
#[derive(Debug)]
pub(crate) struct InterruptibleExpr {
    inner: Arc<dyn PhysicalExpr>,
    interrupt: Interrupt,
}

impl fmt::Display for InterruptibleExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl PartialEq for InterruptibleExpr {
    fn eq(&self, other: &Self) -> bool {
        self.inner.as_ref() == other.inner.as_ref()
            && Arc::ptr_eq(&self.interrupt.0, &other.interrupt.0)
    }
}

impl Eq for InterruptibleExpr {}

impl Hash for InterruptibleExpr {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.inner.hash(state)
    }
}

impl PhysicalExpr for InterruptibleExpr {
    fn data_type(&self, input_schema: &Schema) -> Result<DataType> {
        self.inner.data_type(input_schema)
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        self.inner.nullable(input_schema)
    }

    fn return_field(&self, input_schema: &Schema) -> Result<FieldRef> {
        self.inner.return_field(input_schema)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        if self.interrupt.raised() {
            return Err(interrupted());
        }
        self.inner.evaluate(batch)
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![&self.inner]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(Arc::new(Self {
            inner: children.swap_remove(0),
            interrupt: self.interrupt.clone(),
        }))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt_sql(f)
    }
}

/// How many statement tasks (planning, producing rows) and join streams have not stopped yet.
#[derive(Debug, Clone)]
pub(crate) struct StatementTasks(Arc<watch::Sender<usize>>);

impl Default for StatementTasks {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(0)))
    }
}

impl StatementTasks {
    /// Counts a task until the returned guard, moved into it, is dropped with it.
    pub(crate) fn started(&self) -> TaskRunning {
        self.0.send_modify(|n| *n += 1);
        TaskRunning(self.0.clone())
    }

    /// Waits until no statement task runs.
    pub(crate) async fn stopped(&self) {
        let mut running = self.0.subscribe();
        // The sender lives in `self`, so the wait cannot fail.
        let _ = running.wait_for(|n| *n == 0).await;
    }
}

pub(crate) struct TaskRunning(Arc<watch::Sender<usize>>);

impl Drop for TaskRunning {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}
