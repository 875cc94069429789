//! Builds an attached table's index over its data files: each file's indexed columns read alone
//! (Parquet's projection, so a wide table costs what its key columns cost), hashed as Sieve
//! hashes its own blocks' values, and made into one sidecar per file, sized by the file's
//! distinct keys as a block's sidecar is.

use std::sync::Arc;

use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{exec_datafusion_err, exec_err};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::ParquetFileReaderFactory;
use datafusion::datasource::physical_plan::parquet::DefaultParquetFileReaderFactory;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::async_reader::{AsyncFileReader, ParquetRecordBatchStreamBuilder};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::TryStreamExt;
use object_store::ObjectStore;
use sieve_iceberg::DataFile;
use sieve_index::{ColumnHashes, ColumnIndex, FilterKind, sidecar};
use sieve_storage::IndexedFile;
use tokio::task::JoinSet;

use crate::progress::WriteProgress;

/// Rows decoded per batch: large, since only the key columns are decoded.
const BATCH_ROWS: usize = 64 * 1024;

/// Bytes of memory a file's build holds per value of an indexed column: its hash, and the copy
/// sorting the hashes makes (`sieve_index`'s `sort_by_hash`).
const BYTES_PER_VALUE: usize = 16;

/// What an index is built over: the columns, as the table's schema types them, and the filter.
#[derive(Debug, Clone)]
pub struct IndexSpec {
    pub schema: SchemaRef,
    pub columns: Vec<String>,
    pub filter: FilterKind,
}

/// The entries of `files`, `parallelism` files at a time, each on a task of its own; the rows
/// read are added to `progress` as they are. What a file's build holds (its values' hashes, all
/// of them at once, as a filter is built from all its keys) is reserved in `pool` as it grows,
/// so a file too large for the budget fails with the pool's error. Dropping the future stops
/// every task.
pub async fn index_files(
    store: Arc<dyn ObjectStore>,
    spec: Arc<IndexSpec>,
    files: &[&DataFile],
    parallelism: usize,
    progress: Arc<WriteProgress>,
    pool: Arc<dyn MemoryPool>,
) -> Result<Vec<IndexedFile>> {
    let mut pending = files
        .iter()
        .map(|f| (f.path.clone(), f.record_count, f.file_size));
    let mut running = JoinSet::new();
    let mut built = Vec::with_capacity(files.len());
    loop {
        while running.len() < parallelism.max(1) {
            let Some((path, record_count, file_size)) = pending.next() else {
                break;
            };
            let (store, spec, progress) = (store.clone(), spec.clone(), progress.clone());
            let held = MemoryConsumer::new(format!("index of {path}")).register(&pool);
            running.spawn(async move {
                let sidecar = index_file(store, &spec, &path, file_size, &progress, held).await?;
                Ok::<_, DataFusionError>(IndexedFile {
                    path: path.to_string(),
                    record_count,
                    file_size,
                    sidecar,
                })
            });
        }
        match running.join_next().await {
            Some(done) => built.push(done.map_err(|e| exec_datafusion_err!("{e}"))??),
            None => return Ok(built),
        }
    }
}

/// One file's sidecar.
async fn index_file(
    store: Arc<dyn ObjectStore>,
    spec: &IndexSpec,
    path: &object_store::path::Path,
    file_size: u64,
    progress: &WriteProgress,
    held: MemoryReservation,
) -> Result<Vec<u8>> {
    let file = PartitionedFile::new(path.to_string(), file_size);
    let reader: Box<dyn AsyncFileReader> = DefaultParquetFileReaderFactory::new(store)
        .create_reader(0, file, None, &ExecutionPlanMetricsSet::new())?;
    let builder = ParquetRecordBatchStreamBuilder::new(reader).await?;
    let file_schema = builder.schema().clone();
    let mut roots = Vec::with_capacity(spec.columns.len());
    for column in &spec.columns {
        match file_schema.index_of(column) {
            Ok(i) => roots.push(i),
            Err(_) => return exec_err!("data file {path} has no column {column}"),
        }
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots.iter().copied());
    let mut rows = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()?;
    let mut hashes = vec![ColumnHashes::default(); spec.columns.len()];
    while let Some(batch) = rows.try_next().await? {
        held.try_grow(batch.num_rows() * spec.columns.len() * BYTES_PER_VALUE)?;
        for (column, hashes) in spec.columns.iter().zip(&mut hashes) {
            let values = batch.column(batch.schema().index_of(column)?);
            // Hashed as the table's type, which lookups cast their keys to.
            let to = spec.schema.field_with_name(column)?.data_type();
            let values = match values.data_type() == to {
                true => values.clone(),
                false => cast(values, to)?,
            };
            (hashes.extend_from_array(values.as_ref()))
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
        }
        progress.add(batch.num_rows() as u64);
    }
    let (columns, filter) = (spec.columns.clone(), spec.filter);
    // Sorting and building a filter over millions of hashes: off the async threads.
    tokio::task::spawn_blocking(move || {
        let _held = held;
        let built: Vec<ColumnIndex> = columns
            .into_iter()
            .zip(hashes)
            .map(|(column, hashes)| ColumnIndex::build(column, filter, hashes))
            .collect();
        sidecar::encode(&built)
    })
    .await
    .map_err(|e| exec_datafusion_err!("{e}"))?
    .map_err(|e| DataFusionError::External(Box::new(e)))
}
