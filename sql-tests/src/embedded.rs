//! The files run against an engine in the test's own process.

use async_trait::async_trait;
use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::error::DataFusionError;
use sieve_engine::{QueryOutput, Session};
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};

pub struct EmbeddedDb {
    session: Session,
}

impl EmbeddedDb {
    pub fn new(session: Session) -> Self {
        Self { session }
    }
}

fn column_type(data_type: &DataType) -> DefaultColumnType {
    if data_type.is_integer() {
        DefaultColumnType::Integer
    } else if data_type.is_floating()
        || matches!(
            data_type,
            DataType::Decimal128(..) | DataType::Decimal256(..)
        )
    {
        DefaultColumnType::FloatingPoint
    } else {
        DefaultColumnType::Text
    }
}

fn cell(column: &dyn Array, row: usize) -> Result<String, DataFusionError> {
    let text = match column.is_null(row) {
        true => None,
        false => Some(array_value_to_string(column, row)?),
    };
    Ok(crate::spelled(text))
}

fn to_output(output: QueryOutput) -> Result<DBOutput<DefaultColumnType>, DataFusionError> {
    if let Some(rows) = output.affected_rows {
        return Ok(DBOutput::StatementComplete(rows));
    }
    let types = output
        .schema
        .fields()
        .iter()
        .map(|f| column_type(f.data_type()))
        .collect();
    let mut rows = Vec::new();
    for batch in &output.batches {
        for r in 0..batch.num_rows() {
            rows.push(
                batch
                    .columns()
                    .iter()
                    .map(|c| cell(c.as_ref(), r))
                    .collect::<Result<_, _>>()?,
            );
        }
    }
    Ok(DBOutput::Rows { types, rows })
}

#[async_trait]
impl AsyncDB for EmbeddedDb {
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DataFusionError> {
        to_output(self.session.execute(sql).await?)
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "embedded"
    }
}
