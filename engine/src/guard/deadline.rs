//! `max_execution_time`: a query that runs past its deadline ends with MySQL's error, whether it
//! is planning, computing (a cross join), waiting on storage, or streaming rows to a slow client.
//! The deadline wraps the result stream, so it holds however the caller consumes it; it is kept
//! on the caller's runtime while the statement runs on the engine's executor
//! ([`crate::session::statement_task`]), so a statement that keeps every query thread busy cannot delay it.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream};
use futures::{Future, Stream};
use tokio::time::{Instant, Sleep};

use crate::error::{Classified, ErrorClass, external};

/// The error of a statement stopped by its deadline; its text is MySQL's (error 3024).
#[derive(Debug, thiserror::Error)]
#[error(
    "Query execution was interrupted, maximum statement execution time exceeded ({} ms)",
    .0.as_millis()
)]
pub struct QueryTimeout(pub Duration);

impl QueryTimeout {
    pub(crate) fn error(limit: Duration) -> DataFusionError {
        external(Self(limit))
    }
}

impl Classified for QueryTimeout {
    fn class(&self) -> ErrorClass {
        ErrorClass::Timeout
    }
}

/// The rows of a statement with a deadline: at the deadline the stream ends with the error and
/// drops its input, which aborts the statement's tasks.
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
        Box::pin(Self {
            schema: rows.schema(),
            inner: Some(rows),
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
