//! `max_execution_time`: a query that runs past its deadline ends with MySQL's error, whether it
//! is planning, computing (a cross join), waiting on storage, or streaming rows to a slow client.
//! The deadline wraps the result stream, so it holds however the caller consumes it.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::runtime::SpawnedTask;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream};
use datafusion::physical_plan::stream::RecordBatchReceiverStream;
use futures::{Future, Stream, StreamExt};
use tokio::time::{Instant, Sleep};

/// The error of a statement stopped by its deadline; its text is MySQL's (error 3024).
#[derive(Debug, thiserror::Error)]
#[error(
    "Query execution was interrupted, maximum statement execution time exceeded ({} ms)",
    .0.as_millis()
)]
pub struct QueryTimeout(pub Duration);

impl QueryTimeout {
    pub(crate) fn error(limit: Duration) -> DataFusionError {
        DataFusionError::External(Box::new(Self(limit)))
    }
}

/// Plans on a task of its own, so that the deadline answers even while one poll of the planner
/// computes for long (a long chain of checked arithmetic); the task is aborted at the deadline.
pub(crate) async fn plan_within<T: Send + 'static>(
    planning: impl Future<Output = Result<T>> + Send + 'static,
    limit: Duration,
) -> Result<T> {
    let task = SpawnedTask::spawn(planning);
    tokio::time::timeout(limit, task.join_unwind())
        .await
        .map_err(|_| QueryTimeout::error(limit))?
        .map_err(|e| DataFusionError::External(Box::new(e)))?
}

/// The rows of a statement with a deadline. They are produced on a task of their own, so that
/// the deadline answers even while one poll computes for long (a nested loop join can spend
/// minutes between two batches); at the deadline that task is aborted.
pub(crate) struct DeadlineStream {
    inner: Option<SendableRecordBatchStream>,
    schema: SchemaRef,
    deadline: Pin<Box<Sleep>>,
    limit: Duration,
}

impl DeadlineStream {
    pub(crate) fn wrap(
        rows: SendableRecordBatchStream,
        started: Instant,
        limit: Duration,
    ) -> SendableRecordBatchStream {
        let schema = rows.schema();
        // Two batches in flight: the producer works while the client reads.
        let mut builder = RecordBatchReceiverStream::builder(schema.clone(), 2);
        let tx = builder.tx();
        builder.spawn(async move {
            let mut rows = rows;
            while let Some(batch) = rows.next().await {
                if tx.send(batch).await.is_err() {
                    break;
                }
            }
            Ok(())
        });
        Box::pin(Self {
            inner: Some(builder.build()),
            schema,
            deadline: Box::pin(tokio::time::sleep_until(started + limit)),
            limit,
        })
    }
}

impl Stream for DeadlineStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.inner.is_none() {
            return Poll::Ready(None);
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            // Dropping the receiver aborts the producing task.
            self.inner = None;
            return Poll::Ready(Some(Err(QueryTimeout::error(self.limit))));
        }
        let polled = self.inner.as_mut().map(|rows| rows.as_mut().poll_next(cx));
        polled.unwrap_or(Poll::Ready(None))
    }
}

impl RecordBatchStream for DeadlineStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
