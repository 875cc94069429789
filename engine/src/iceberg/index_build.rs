//! Builds an attached table's index over its data files: each file's indexed columns read alone
//! (Parquet's projection, so a wide table costs what its key columns cost), hashed as Sieve
//! hashes its own blocks' values, and made into one sidecar per row group, sized by the row
//! group's distinct keys as a block's sidecar is (a lookup then reads the row group that may
//! hold its key, not the whole file). A file's columns are found by field id
//! ([`super::field_ids`]), so a column renamed since a file was written is still indexed from it.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, new_null_array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{FieldRef, Schema};
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

use super::field_ids::column_in_file;
use crate::progress::WriteProgress;

/// Rows decoded per batch: large, since only the key columns are decoded.
const BATCH_ROWS: usize = 64 * 1024;

/// Bytes of memory a file's build holds per value of an indexed column: its hash, and the copy
/// sorting the hashes makes (`sieve_index`'s `sort_by_hash`).
const BYTES_PER_VALUE: usize = 16;

/// What an index is built over: the columns, as the table's schema types them, and the filter.
#[derive(Debug, Clone)]
pub struct IndexSpec {
    pub columns: Vec<IndexedColumn>,
    /// Whether a file without field ids may be read by name ([`field_ids::column_in_file`]).
    pub names_stable: bool,
    pub filter: FilterKind,
}

/// A column an index covers.
#[derive(Debug, Clone)]
pub struct IndexedColumn {
    /// The name the index was made with, which its sidecars keep whatever the column is called
    /// since.
    pub indexed_as: String,
    pub field_id: i32,
    /// The table's column of that field id now: its name, and the type values are hashed as
    /// (lookups cast their keys to it).
    pub field: FieldRef,
}

impl IndexSpec {
    /// The spec of an index made over `columns` (names as made, with their field ids) of a
    /// table whose schema is now `schema`; an error when the table no longer has one of them.
    pub fn new(
        schema: &Schema,
        columns: impl IntoIterator<Item = (String, i32)>,
        names_stable: bool,
        filter: FilterKind,
    ) -> Result<Self> {
        let columns = columns
            .into_iter()
            .map(|(indexed_as, field_id)| {
                match sieve_iceberg::field_with_id(schema, field_id).cloned() {
                    Some(field) => Ok(IndexedColumn {
                        indexed_as,
                        field_id,
                        field,
                    }),
                    None => exec_err!(
                        "column {indexed_as} (field id {field_id}) is no longer in the table: \
                         drop the index"
                    ),
                }
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            columns,
            names_stable,
            filter,
        })
    }
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
                let groups = index_file(store, &spec, &path, file_size, &progress, held).await?;
                let entries = groups
                    .into_iter()
                    .map(|(first_row, rows, sidecar)| IndexedFile {
                        path: path.to_string(),
                        record_count,
                        file_size,
                        first_row,
                        rows,
                        sidecar,
                    });
                Ok::<_, DataFusionError>(entries.collect::<Vec<_>>())
            });
        }
        match running.join_next().await {
            Some(done) => built.extend(done.map_err(|e| exec_datafusion_err!("{e}"))??),
            None => return Ok(built),
        }
    }
}

/// One file's sidecars: a row group's first row, its rows, and its sidecar, for each.
async fn index_file(
    store: Arc<dyn ObjectStore>,
    spec: &IndexSpec,
    path: &object_store::path::Path,
    file_size: u64,
    progress: &WriteProgress,
    held: MemoryReservation,
) -> Result<Vec<(u64, u64, Vec<u8>)>> {
    let file = PartitionedFile::new(path.to_string(), file_size);
    let reader: Box<dyn AsyncFileReader> = DefaultParquetFileReaderFactory::new(store)
        .create_reader(0, file, None, &ExecutionPlanMetricsSet::new())?;
    let builder = ParquetRecordBatchStreamBuilder::new(reader).await?;
    let file_schema = builder.schema().clone();
    // Where the file holds each indexed column; None: written before the column was added.
    let mut in_file = Vec::with_capacity(spec.columns.len());
    for column in &spec.columns {
        let name = column.field.name();
        let at = column_in_file(&file_schema, column.field_id, name, spec.names_stable)
            .map_err(|e| exec_datafusion_err!("data file {path}: {e}"))?;
        in_file.push(at.map(|i| file_schema.field(i).name().clone()));
    }
    let roots = (spec.columns.iter().zip(&in_file))
        .filter_map(|(_, name)| file_schema.index_of(name.as_deref()?).ok());
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let group_rows: Vec<u64> = (builder.metadata().row_groups().iter())
        .map(|g| u64::try_from(g.num_rows()).unwrap_or(0))
        .collect();
    let mut rows = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()?;
    // A row group's hashes per indexed column, made into its sidecar once the row group ends
    // (batches are cut there), so a build holds one row group's hashes at a time.
    let empty = || vec![ColumnHashes::default(); spec.columns.len()];
    let mut sidecars = Vec::with_capacity(group_rows.len().max(1));
    let (mut hashes, mut first_row) = (empty(), 0);
    // The rest of a batch that ran past its row group.
    let mut carried: Option<RecordBatch> = None;
    for &rows_in_group in &group_rows {
        let mut left = rows_in_group;
        while left > 0 {
            let batch = match carried.take() {
                Some(batch) => batch,
                None => match rows.try_next().await? {
                    Some(batch) => {
                        held.try_grow(batch.num_rows() * spec.columns.len() * BYTES_PER_VALUE)?;
                        batch
                    }
                    None => return exec_err!("data file {path}: fewer rows than its row groups"),
                },
            };
            let take = batch
                .num_rows()
                .min(usize::try_from(left).unwrap_or(usize::MAX));
            hash_values(spec, &in_file, &batch.slice(0, take), &mut hashes)?;
            progress.add(take as u64);
            left -= take as u64;
            if take < batch.num_rows() {
                carried = Some(batch.slice(take, batch.num_rows() - take));
            }
        }
        let group = std::mem::replace(&mut hashes, empty());
        sidecars.push((first_row, rows_in_group, build(spec, group).await?));
        held.shrink(
            usize::try_from(rows_in_group).unwrap_or(0) * spec.columns.len() * BYTES_PER_VALUE,
        );
        first_row += rows_in_group;
    }
    if sidecars.is_empty() {
        // A file of no rows still gets its (empty) sidecar: it is then covered, never read.
        sidecars.push((0, 0, build(spec, hashes).await?));
    }
    Ok(sidecars)
}

/// One row group's sidecar from its hashes: sorting and building filters over a million hashes
/// or more runs off the async threads.
async fn build(spec: &IndexSpec, hashes: Vec<ColumnHashes>) -> Result<Vec<u8>> {
    let columns: Vec<String> = spec.columns.iter().map(|c| c.indexed_as.clone()).collect();
    let filter = spec.filter;
    tokio::task::spawn_blocking(move || {
        let built: Vec<ColumnIndex> = (columns.into_iter().zip(hashes))
            .map(|(column, hashes)| ColumnIndex::build(column, filter, hashes))
            .collect();
        sidecar::encode(&built)
    })
    .await
    .map_err(|e| exec_datafusion_err!("{e}"))?
    .map_err(|e| DataFusionError::External(Box::new(e)))
}

/// Hashes `batch`'s indexed columns into `hashes`, one per column of `spec`.
fn hash_values(
    spec: &IndexSpec,
    in_file: &[Option<String>],
    batch: &RecordBatch,
    hashes: &mut [ColumnHashes],
) -> Result<()> {
    for ((column, name), hashes) in spec.columns.iter().zip(in_file).zip(hashes) {
        // Hashed as the table's type, which lookups cast their keys to.
        let to = column.field.data_type();
        let values = match name {
            Some(name) => batch.column(batch.schema().index_of(name)?).clone(),
            None => new_null_array(to, batch.num_rows()),
        };
        let values = match values.data_type() == to {
            true => values,
            false => cast(&values, to)?,
        };
        (hashes.extend_from_array(values.as_ref()))
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
    }
    Ok(())
}
