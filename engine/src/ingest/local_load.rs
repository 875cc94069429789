//! One LOAD DATA LOCAL INFILE as it runs: the file's bytes, as the client sends them, become
//! records, then the table's rows, then blocks, committed as one snapshot when the file has
//! ended. An error anywhere (a bad row, the client gone, the table dropped) commits nothing.

use std::io;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::datasource::sink::DataSink;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::Stream;
use tokio::runtime::Handle;

use crate::guard::interrupt::StatementTasks;
use crate::ingest::load_data::LoadData;
use crate::ingest::text_file::TextFile;
use crate::ingest::text_rows::TextRows;
use crate::session::statement_task::run_on;
use crate::sink::SieveSink;

/// A LOAD DATA checked against its table, waiting for the client's file.
#[derive(Debug)]
pub struct LocalLoad {
    pub(crate) statement: LoadData,
    pub(crate) rows: TextRows,
    pub(crate) sink: SieveSink,
    pub(crate) context: Arc<TaskContext>,
    pub(crate) executor: Handle,
    pub(crate) tasks: Arc<StatementTasks>,
}

/// What a load did: rows committed, and rows skipped as bad (`IGNORE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loaded {
    pub rows: u64,
    pub skipped: u64,
}

impl LocalLoad {
    /// The file the client is to send, as the statement names it.
    pub fn file(&self) -> &str {
        &self.statement.file
    }

    /// Loads the file `file` streams (its end is the file's end) and commits it. The work runs
    /// on the engine's executor; the caller keeps feeding `file`.
    pub async fn run<S>(self, file: S) -> Result<Loaded>
    where
        S: Stream<Item = io::Result<Bytes>> + Send + Unpin + 'static,
    {
        let Self {
            statement,
            rows,
            sink,
            context,
            executor,
            tasks,
        } = self;
        let schema = sink.schema().clone();
        let reading = TextFile::new(
            file,
            statement.delimiters.clone(),
            statement.skip_lines,
            rows,
        );
        let (skipped_tx, skipped_rx) = tokio::sync::watch::channel(0);
        let batches = futures::stream::try_unfold(reading, move |mut reading| {
            let skipped = skipped_tx.clone();
            async move {
                let batch = reading.next_batch().await?;
                skipped.send_replace(reading.skipped());
                Ok(batch.map(|b| (b, reading)))
            }
        });
        let stream = Box::pin(RecordBatchStreamAdapter::new(schema, batches));
        let rows = run_on(&executor, &tasks, async move {
            sink.write_all(stream, &context).await
        })
        .await?;
        Ok(Loaded {
            rows,
            skipped: *skipped_rx.borrow(),
        })
    }
}
