//! A panic anywhere in a statement (DataFusion, arrow, Sieve) becomes that statement's error, so
//! a server answers the client with an error packet and keeps its connection and every other one.
//! DataFusion re-raises panics of the tasks it spawns in the task that awaits them, so catching
//! around planning and around each poll of the result stream covers all of a statement's work.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::{FutureExt, StreamExt};

fn to_error(panic: Box<dyn Any + Send>) -> DataFusionError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into());
    DataFusionError::Internal(format!("the statement failed inside the engine: {message}"))
}

/// Runs `work`, turning a panic into an error.
pub(crate) async fn catch<T>(work: impl Future<Output = Result<T>>) -> Result<T> {
    AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| Err(to_error(panic)))
}

/// The same rows; a panic while producing them ends the stream with an error.
pub(crate) fn catch_stream(rows: SendableRecordBatchStream) -> SendableRecordBatchStream {
    let schema = rows.schema();
    let mut failed = false;
    let guarded = AssertUnwindSafe(rows)
        .catch_unwind()
        .map(|item| item.unwrap_or_else(|panic| Err(to_error(panic))))
        .take_while(move |item| {
            let go_on = !failed;
            failed |= item.is_err();
            futures::future::ready(go_on)
        });
    Box::pin(RecordBatchStreamAdapter::new(schema, guarded))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int64Array, RecordBatch};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    #[tokio::test]
    async fn panics_become_errors() {
        let planned: Result<()> = catch(async { panic!("planner bug") }).await;
        let message = planned.unwrap_err().to_string();
        assert!(
            message.contains("failed inside the engine: planner bug"),
            "{message}"
        );

        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![1]))])
            .unwrap();
        let mut produced = 0;
        let rows = futures::stream::iter(0..3).map(move |_| {
            produced += 1;
            assert!(produced < 2, "kernel bug at batch {produced}");
            Ok(batch.clone())
        });
        let rows = catch_stream(Box::pin(RecordBatchStreamAdapter::new(schema, rows)));
        let items: Vec<Result<RecordBatch>> = rows.collect().await;
        assert_eq!(items.len(), 2, "one batch, then the error, then nothing");
        assert!(items[0].is_ok());
        let message = items[1].as_ref().unwrap_err().to_string();
        assert!(message.contains("kernel bug at batch 2"), "{message}");
    }
}
