//! Where a statement's work runs: planning and the production of its rows each run on a task of
//! their own, on the engine's executor (a runtime for query work, apart from the one that serves
//! clients) when it has one. The caller only waits on them, so it can answer at a statement's
//! deadline or go on serving other clients even while one poll of a plan computes for minutes (a
//! nested loop join works through its whole build side between two batches). Dropping the
//! caller's future or stream aborts the tasks. This is the split DataFusion's own examples
//! recommend (`thread_pools.rs`): CPU-bound work on one runtime, I/O and timers on another.

use std::panic::resume_unwind;
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::{RecordBatchReceiverStream, RecordBatchStreamAdapter};
use datafusion::physical_plan::{ExecutionPlan, execute_stream};
use futures::{Future, StreamExt};
use tokio::runtime::Handle;
use tokio::task::JoinSet;

use crate::guard::interrupt::{Interrupt, StatementTasks};
use crate::guard::panic;
use crate::options::{allowing_full_scan, statement_allows_full_scan};

/// Runs `work` on `executor` and waits for it, counted in `tasks` until it stops; a panic in it
/// resumes in the caller.
pub(crate) async fn run_on<T: Send + 'static>(
    executor: &Handle,
    tasks: &StatementTasks,
    work: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    let running = tasks.started();
    // The statement's own settings go with its work.
    let allow = statement_allows_full_scan();
    let mut task = JoinSet::new();
    task.spawn_on(
        async move {
            let _running = running;
            allowing_full_scan(allow, work).await
        },
        executor,
    );
    match task.join_next().await {
        Some(Ok(result)) => result,
        Some(Err(e)) if e.is_panic() => resume_unwind(e.into_panic()),
        Some(Err(e)) => Err(DataFusionError::External(Box::new(e))),
        None => Err(DataFusionError::Internal(
            "a statement task vanished".into(),
        )),
    }
}

/// Executes `plan` on a task on `executor` and streams its rows, two batches ahead of the
/// reader. The plan is executed there too, not only polled: executing it spawns the tasks of
/// its partitions (CoalescePartitionsExec, RepartitionExec), which must land on the executor.
/// Dropping the stream raises `interrupt` (which `plan`'s joins were wrapped for) and aborts
/// the task, which `tasks` counts until it stops.
pub(crate) fn rows_on(
    executor: &Handle,
    tasks: &StatementTasks,
    interrupt: &Interrupt,
    plan: Arc<dyn ExecutionPlan>,
    context: Arc<TaskContext>,
) -> SendableRecordBatchStream {
    let schema = plan.schema();
    let mut builder = RecordBatchReceiverStream::builder(schema.clone(), 2);
    let tx = builder.tx();
    let running = tasks.started();
    builder.spawn_on(
        async move {
            let _running = running;
            let mut rows = panic::catch_stream(execute_stream(plan, context)?);
            while let Some(batch) = rows.next().await {
                if tx.send(batch).await.is_err() {
                    break; // the reader is gone
                }
            }
            Ok(())
        },
        executor,
    );
    let raise = interrupt.on_drop();
    // The stream owns the guard: dropped with it, not before.
    let rows = builder.build().inspect(move |_| {
        let _ = &raise;
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, rows))
}
