//! `numbers(N)`: the rows 0..N as column `number` (UInt64), streamed in the session's target
//! partitions (one per core unless set) so the expressions over it (Databend's
//! `cast(rand() as string)`) run on every core. With one partition its rows come in order.
//!
//! Partitions take fixed-size chunks round-robin rather than one contiguous range each: their
//! merged output stays nearly in order, so blocks written from it keep tight min/max ranges.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::streaming::StreamingTable;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{ScalarValue, plan_err};
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;

const CHUNK_ROWS: u64 = 65_536;

#[derive(Debug, Default)]
pub struct NumbersFunction;

impl TableFunctionImpl for NumbersFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let count = match args.exprs() {
            [Expr::Literal(value, _)] => match value.cast_to(&DataType::UInt64) {
                Ok(ScalarValue::UInt64(Some(n))) => n,
                _ => return plan_err!("numbers(N) needs a non-negative integer, got {value}"),
            },
            _ => return plan_err!("numbers(N) takes one integer literal"),
        };
        let schema = Arc::new(Schema::new(vec![Field::new(
            "number",
            DataType::UInt64,
            false,
        )]));
        // Merged partitions come nearly in order, and only nearly: under load one can run a
        // chunk or more ahead. A session that sets one partition gets the rows strictly in order.
        let partitions = args.session().config().target_partitions().max(1) as u64;
        let streams: Vec<Arc<dyn PartitionStream>> = (0..partitions)
            .map(|p| {
                Arc::new(NumbersPartition {
                    schema: schema.clone(),
                    count,
                    first_chunk: p,
                    step: partitions,
                }) as Arc<dyn PartitionStream>
            })
            .collect();
        Ok(Arc::new(StreamingTable::try_new(schema, streams)?))
    }
}

#[derive(Debug)]
struct NumbersPartition {
    schema: SchemaRef,
    count: u64,
    first_chunk: u64,
    step: u64,
}

impl PartitionStream for NumbersPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let batch_rows = (ctx.session_config().batch_size() as u64).clamp(1, CHUNK_ROWS);
        let (count, step, schema) = (self.count, self.step, self.schema.clone());
        let starts = (self.first_chunk * CHUNK_ROWS..count).step_by((step * CHUNK_ROWS) as usize);
        let batches = starts.flat_map(move |chunk| {
            let end = (chunk + CHUNK_ROWS).min(count);
            (chunk..end)
                .step_by(batch_rows as usize)
                .map(move |s| (s, (s + batch_rows).min(end)))
        });
        let stream = futures::stream::iter(batches.map(move |(start, end)| {
            let values = UInt64Array::from_iter_values(start..end);
            Ok(RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(values)],
            )?)
        }));
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), stream))
    }
}
