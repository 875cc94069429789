//! `max_execution_time`: a query that runs past its deadline ends with MySQL's error, whether it
//! is computing (a cross join), waiting on storage, or streaming rows to a slow client. The
//! deadline wraps the result stream, so it holds however the caller consumes it.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream};
use futures::{Future, Stream};
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

pub(crate) struct DeadlineStream {
    inner: SendableRecordBatchStream,
    deadline: Pin<Box<Sleep>>,
    limit: Duration,
    expired: bool,
}

impl DeadlineStream {
    pub(crate) fn wrap(
        inner: SendableRecordBatchStream,
        started: Instant,
        limit: Duration,
    ) -> SendableRecordBatchStream {
        Box::pin(Self {
            inner,
            deadline: Box::pin(tokio::time::sleep_until(started + limit)),
            limit,
            expired: false,
        })
    }
}

impl Stream for DeadlineStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.expired {
            return Poll::Ready(None);
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            self.expired = true;
            return Poll::Ready(Some(Err(QueryTimeout::error(self.limit))));
        }
        self.inner.as_mut().poll_next(cx)
    }
}

impl RecordBatchStream for DeadlineStream {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}
