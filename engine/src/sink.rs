//! INSERT INTO a Sieve table: streams DataFusion's output into the table writer, which commits
//! one snapshot at the end (or nothing, if the statement fails or is cancelled).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::exec_err;
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType};
use futures::StreamExt;
use sieve_storage::{Catalog, CopiesChange, StorageError, Table, TableWriter};

use crate::error::{ErrorClass, classify, to_df};
use crate::maintenance::merges::BackgroundMerges;
use crate::progress::WriteProgress;

#[derive(Debug)]
pub struct SieveSink {
    catalog: Catalog,
    table: Table,
    schema: SchemaRef,
    progress: Option<Arc<WriteProgress>>,
    /// A COPY's list of the files it loaded, committed with the rows.
    copies: Option<CopiesChange>,
}

impl SieveSink {
    pub fn new(catalog: Catalog, table: Table, progress: Option<Arc<WriteProgress>>) -> Self {
        let schema = table.def().schema.clone();
        Self {
            catalog,
            table,
            schema,
            progress,
            copies: None,
        }
    }

    /// The same sink, committing `copies` with its rows ([`TableWriter::recording_copies`]).
    pub fn with_copies(self, copies: CopiesChange) -> Self {
        Self {
            copies: Some(copies),
            ..self
        }
    }
}

/// Writes a stream into a table and commits (with `copies`, if a COPY's); returns the rows
/// committed.
pub async fn write_stream(
    table: &Table,
    mut data: SendableRecordBatchStream,
    progress: Option<&WriteProgress>,
    context: &TaskContext,
    copies: Option<CopiesChange>,
) -> Result<u64> {
    let mut writer = TableWriter::new(table.clone()).recording_copies(copies);
    let written = async {
        while let Some(batch) = data.next().await {
            let batch = batch?;
            let rows = batch.num_rows() as u64;
            writer.write(batch).await.map_err(to_df)?;
            if let Some(progress) = progress {
                progress.add(rows);
            }
        }
        Ok::<_, DataFusionError>(())
    }
    .await;
    if let Err(e) = written {
        drop(data); // what feeds the write stops before the wait
        writer.abandon().await;
        return Err(e);
    }
    let rows = writer.finish().await.map_err(to_df)?.rows;
    BackgroundMerges::after_commit(context, table);
    Ok(rows)
}

impl DisplayAs for SieveSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "SieveSink: table={}.{}",
            self.table.def().database,
            self.table.def().name
        )
    }
}

#[async_trait]
impl DataSink for SieveSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let progress = self.progress.as_deref();
        let def = self.table.def();
        let written = write_stream(&self.table, data, progress, context, self.copies.clone()).await;
        let rows = match written {
            // A DROP TABLE committed first: this INSERT's commit cannot follow it.
            Err(e) if classify(&e) == ErrorClass::UnknownTable => {
                return exec_err!(
                    "table {}.{} was dropped while this INSERT ran; nothing was committed",
                    def.database,
                    def.name
                );
            }
            written => written?,
        };
        // A DROP TABLE that raced this INSERT removed the table its rows were committed to.
        match self.catalog.table(&def.database, &def.name).await {
            Ok(now) if now.id == def.id => Ok(rows),
            Ok(_) | Err(StorageError::UnknownTable(..)) => exec_err!(
                "table {}.{} was dropped while this INSERT ran; its {rows} rows are in no table",
                def.database,
                def.name
            ),
            Err(e) => Err(to_df(e)),
        }
    }
}
