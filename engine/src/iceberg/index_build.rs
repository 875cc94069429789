//! Builds an attached table's index over its data files: each file's indexed columns read alone
//! (Parquet's projection, so a wide table costs what its key columns cost), hashed as Sieve
//! hashes its own blocks' values, and made into one sidecar per row group, sized by the row
//! group's distinct keys as a block's sidecar is (a lookup then reads the row group that may
//! hold its key, not the whole file). Each row group is cut into slices at its columns' page
//! boundaries, and a map from key to slice ([`RowGroupMap`]) lets a lookup read a slice's pages
//! alone; for a file without a page index, its pages are walked from their headers
//! ([`super::page_walk`]). The files of one part get a locator over all their row groups
//! ([`PartKeys`]): one probe names a key's row group and slice. A file's columns are found by
//! field id ([`super::field_ids`]), so a column renamed since a file was written is still
//! indexed from it.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{Buf, Bytes};
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
use datafusion::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, RowGroupMetaData};
use datafusion::parquet::file::reader::{ChunkReader, Length};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use sieve_iceberg::{DataFile, FileNames};
use sieve_index::locator::{BlockKeys, block_keys};
use sieve_index::retrieval::Scratch;
use sieve_index::{ColumnHashes, ColumnIndex, FilterKind, SliceMap, sidecar};
use sieve_storage::{IndexedFile, PageLocation, PartKeys, RowGroupMap};
use tokio::task::JoinSet;

use super::field_ids::{column_in_file, initial_value};
use super::page_walk::{column_pages, column_pages_in};
use crate::error::to_df;
use crate::progress::WriteProgress;

/// Rows decoded per batch: large, since only the key columns are decoded.
const BATCH_ROWS: usize = 64 * 1024;

/// Bytes of memory a file's build holds per value of an indexed column: its hash, the copy
/// sorting the hashes makes (`sieve_index`'s `sort_by_hash`), and its hash and slice for the
/// slice map.
const BYTES_PER_VALUE: usize = 32;
/// Bytes a file's build holds per distinct key until the file is done and its keys go to the
/// part's locator: its hash and slice.
const BYTES_PER_KEY: usize = 16;

/// The fewest rows a slice holds: pages smaller than this are read a few at a time, so a row
/// group of tiny pages does not make a slice map of many bits per key. The smallest slice
/// Sieve's own blocks may be written with, not their default 4096: a table others wrote has
/// the pages they chose, and a 32 KB page of a 20-byte string holds ~1,500 rows, so slices of
/// 4096 rows made a lookup decompress three pages of its key column where one holds the key.
/// At 100M rows in such pages, 1024 against 4096 served 1.16x and 1.13x the present keys at 16
/// and 64 connections, for ~2 more bits per key of the slice map (docs/benchmarks.md).
const MIN_SLICE_ROWS: u64 = *sieve_index::locator::SLICE_ROWS_RANGE.start() as u64;

/// Column chunks whose page headers are walked at once.
const WALKS: usize = 8;

/// Files up to this size are read whole, in one request, and indexed from memory. Read by
/// range, a file is 4 requests or more (its footer's length, its footer, its pages' headers,
/// its key column), and at 10,000 files of 1,000 rows their requests (SigV4 signing, tasks,
/// thread switches) were a third of CREATE INDEX's CPU, where a MB more costs one request
/// ~10 ms on the wire. Larger files are read by range, their indexed columns alone.
const WHOLE_FILE_BYTES: u64 = 1 << 20;

/// What an index is built over: the columns, as the table's schema types them, and the filter.
#[derive(Debug, Clone)]
pub struct IndexSpec {
    pub columns: Vec<IndexedColumn>,
    /// How a file without field ids names the columns ([`field_ids::column_in_file`]).
    pub file_names: Arc<FileNames>,
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

/// Why an index over a column dropped from its table cannot index the table's new files: the
/// index follows the field id, which a column added under the same name does not have.
pub(crate) fn column_dropped(column: &str, field_id: i32) -> String {
    format!("column {column} (field id {field_id}) is no longer in the table: drop the index")
}

impl IndexSpec {
    /// The spec of an index made over `columns` (names as made, with their field ids) of a
    /// table whose schema is now `schema`; an error when the table no longer has one of them.
    pub fn new(
        schema: &Schema,
        columns: impl IntoIterator<Item = (String, i32)>,
        file_names: Arc<FileNames>,
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
                    None => exec_err!("{}", column_dropped(&indexed_as, field_id)),
                }
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            columns,
            file_names,
            filter,
        })
    }
}

/// The entries of `files`, `parallelism` files at a time, each on a task of its own; the rows
/// read are added to `progress` as they are. What a file's build holds (its values' hashes, all
/// of them at once, as a filter is built from all its keys) is reserved in `pool` as it grows,
/// so a file too large for the budget fails with the pool's error. Dropping the future (or an
/// error) stops every task, a file's blocking work at its next batch. The entries come with the locator built over them, in their order, as the
/// `ordinal`-th part of its index (from 1; [`PartKeys::build`]).
pub async fn index_files(
    store: Arc<dyn ObjectStore>,
    spec: Arc<IndexSpec>,
    (files, ordinal): (&[&DataFile], u64),
    parallelism: usize,
    progress: Arc<WriteProgress>,
    pool: Arc<dyn MemoryPool>,
) -> Result<IndexedPart> {
    let columns: Vec<String> = spec.columns.iter().map(|c| c.indexed_as.clone()).collect();
    let most_keys = files.iter().map(|f| f.record_count as usize).sum();
    let part = Arc::new(Mutex::new(Built {
        keys: PartKeys::new(&columns, most_keys),
        files: Vec::with_capacity(files.len()),
    }));
    let stop = Stop(Arc::default());
    let mut pending = files.iter();
    let mut running = JoinSet::new();
    loop {
        while running.len() < parallelism.max(1) {
            let Some(file) = pending.next() else {
                break;
            };
            let job = FileJob {
                spec: spec.clone(),
                path: file.path.clone(),
                record_count: file.record_count,
                file_size: file.file_size,
                progress: progress.clone(),
                held: MemoryConsumer::new(format!("index of {}", file.path)).register(&pool),
                part: part.clone(),
                stopped: stop.0.clone(),
            };
            running.spawn(index_file(store.clone(), Arc::new(job)));
        }
        let Some(done) = running.join_next().await else {
            break;
        };
        done.map_err(|e| exec_datafusion_err!("{e}"))??;
    }
    let Built { keys, files } = Arc::into_inner(part)
        .expect("every file's task has ended")
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    let locator = match files.is_empty() {
        true => None,
        false => Some(blocking(move || keys.build(ordinal).map_err(to_df)).await?),
    };
    Ok(IndexedPart { files, locator })
}

/// A part's entries as built, and its locator (none for a part of no entry).
pub struct IndexedPart {
    pub files: Vec<IndexedFile>,
    pub locator: Option<Vec<u8>>,
}

/// A part's entries so far, and its locator's keys, in the same order.
struct Built {
    keys: PartKeys,
    files: Vec<IndexedFile>,
}

/// One data file to index, and where its entries go.
struct FileJob {
    spec: Arc<IndexSpec>,
    path: Path,
    record_count: u64,
    file_size: u64,
    progress: Arc<WriteProgress>,
    /// What its build holds, until its keys are in the part's locator.
    held: MemoryReservation,
    part: Arc<Mutex<Built>>,
    /// Set once the build has ended ([`Stop`]).
    stopped: Arc<AtomicBool>,
}

/// Sets its flag when dropped, as [`index_files`] ends: the blocking work of its files, which
/// dropping their tasks cannot abort, then stops at its next batch instead of decoding on
/// and holding its memory.
struct Stop(Arc<AtomicBool>);

impl Drop for Stop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl FileJob {
    /// The file's row groups into the part: its entries, and their keys into the locator's
    /// (blocking: they may spill).
    fn keep(&self, mut groups: Vec<Group>) -> Result<()> {
        if groups.is_empty() {
            // A file of no rows still gets its (empty) sidecar: it is then covered, never read.
            let (sidecar, _, keys) =
                build(&self.spec, GroupHashes::new(self.spec.columns.len()), 1)?;
            groups.push(Group {
                first_row: 0,
                rows: 0,
                sidecar,
                map: None,
                keys,
                slices: 1,
            });
        }
        let mut part = self.part.lock().unwrap_or_else(|e| e.into_inner());
        for group in groups {
            part.keys
                .add_entry(group.keys, group.slices)
                .map_err(to_df)?;
            part.files.push(IndexedFile {
                path: self.path.to_string(),
                record_count: self.record_count,
                file_size: self.file_size,
                first_row: group.first_row,
                rows: group.rows,
                sidecar: group.sidecar,
                map: group.map,
            });
        }
        Ok(())
    }
}

/// A row group's entry, as built, and its keys for the part's locator.
struct Group {
    first_row: u64,
    rows: u64,
    sidecar: Vec<u8>,
    map: Option<RowGroupMap>,
    /// Per indexed column, its distinct keys, each with the slice it is in.
    keys: Vec<BlockKeys>,
    /// The row group's slices.
    slices: u32,
}

/// A row group's hashes per indexed column as read, and which slice each run of them is in.
struct GroupHashes {
    hashes: Vec<ColumnHashes>,
    /// Per column, `(hashes so far, slice)` at the end of each run of one slice's rows.
    runs: Vec<Vec<(usize, u32)>>,
}

impl GroupHashes {
    fn new(columns: usize) -> Self {
        Self {
            hashes: vec![ColumnHashes::default(); columns],
            runs: vec![Vec::new(); columns],
        }
    }

    /// Each column's slice of each of its hashes.
    fn slices(&self) -> Vec<Vec<u32>> {
        (self.hashes.iter().zip(&self.runs))
            .map(|(hashes, runs)| {
                let mut slices = Vec::with_capacity(hashes.hashes.len());
                for &(to, slice) in runs {
                    slices.resize(to, slice);
                }
                slices
            })
            .collect()
    }
}

/// One file indexed into its job's part: each row group's rows, sidecar, map and keys.
///
/// A file of [`WHOLE_FILE_BYTES`] or less is fetched in one request and indexed on one
/// blocking thread, its pages walked there too: per file, the tasks and thread switches of a
/// request per column chunk cost more than its rows at 1,000 rows a file. A larger file's
/// footer and page headers are read by range, then each row group's indexed column chunks,
/// decoded and hashed off the async threads.
async fn index_file(store: Arc<dyn ObjectStore>, job: Arc<FileJob>) -> Result<()> {
    let (path, file_size) = (&job.path, job.file_size);
    if file_size <= WHOLE_FILE_BYTES {
        job.held.try_grow(file_size as usize)?;
        let file = store.get_range(path, 0..file_size).await?;
        return blocking(move || {
            let groups = index_whole(&job, file)?;
            job.held.shrink(file_size as usize);
            job.keep(groups)
        })
        .await;
    }
    let file = PartitionedFile::new(path.to_string(), file_size);
    let mut reader: Box<dyn AsyncFileReader> = DefaultParquetFileReaderFactory::new(store.clone())
        .create_reader(0, file, None, &ExecutionPlanMetricsSet::new())?;
    let metadata = ArrowReaderMetadata::load_async(&mut reader, reader_options()).await?;
    let columns = Arc::new(InFile::of(&job, &metadata)?);
    let mut groups: Vec<Group> = Vec::with_capacity(metadata.metadata().num_row_groups());
    for group in 0..metadata.metadata().num_row_groups() {
        let pages = row_group_pages(&store, path, metadata.metadata(), group).await?;
        // The row group's indexed column chunks, fetched whole, as Parquet's async reader
        // fetches them.
        let row_group = metadata.metadata().row_group(group);
        let ranges: Vec<Range<u64>> = (row_group.columns().iter().enumerate())
            .filter(|(leaf, _)| columns.mask.leaf_included(*leaf))
            .map(|(_, column)| {
                let (start, len) = column.byte_range();
                start..start + len
            })
            .collect();
        let fetched_bytes = ranges.iter().map(|r| r.end - r.start).sum::<u64>() as usize;
        job.held.try_grow(fetched_bytes)?;
        let fetched = store.get_ranges(path, &ranges).await?;
        let chunks = Chunks {
            len: file_size,
            chunks: ranges.iter().map(|r| r.start).zip(fetched).collect(),
        };
        let (job, columns, metadata) = (job.clone(), columns.clone(), metadata.clone());
        groups.push(
            blocking(move || {
                let read = RowGroupRead {
                    metadata: &metadata,
                    group,
                    pages,
                };
                let built = index_row_group(&job, &columns, chunks, read);
                job.held.shrink(fetched_bytes);
                built
            })
            .await?,
        );
    }
    blocking(move || job.keep(groups)).await
}

/// The row groups of a file held whole in memory (its `file` bytes), its pages walked there.
/// Blocking.
fn index_whole(job: &FileJob, file: Bytes) -> Result<Vec<Group>> {
    let metadata = ArrowReaderMetadata::load(&file, reader_options())?;
    let columns = InFile::of(job, &metadata)?;
    let mut groups = Vec::with_capacity(metadata.metadata().num_row_groups());
    for group in 0..metadata.metadata().num_row_groups() {
        let pages = match own_pages(metadata.metadata(), group) {
            Some(pages) => Some((pages, false)),
            None => {
                let row_group = metadata.metadata().row_group(group);
                let rows = u64::try_from(row_group.num_rows()).unwrap_or(0);
                (row_group.columns().iter())
                    .map(|column| column_pages_in(&file, column, rows))
                    .collect::<Result<Option<Vec<_>>, _>>()
                    .map_err(|e| exec_datafusion_err!("pages of {}: {e}", job.path))?
                    .map(|pages| (pages, true))
            }
        };
        let read = RowGroupRead {
            metadata: &metadata,
            group,
            pages,
        };
        groups.push(index_row_group(job, &columns, file.clone(), read)?);
    }
    Ok(groups)
}

/// How a data file's footer is read: with its own page index, where it has one, which says
/// where its pages are.
fn reader_options() -> ArrowReaderOptions {
    ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional)
}

/// `f` on Tokio's blocking threads: decoding, hashing and building take a file's CPU.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| exec_datafusion_err!("{e}"))?
}

/// Where a data file holds the indexed columns.
struct InFile {
    /// Per indexed column, its name in the file; None: written before the column was added.
    names: Vec<Option<String>>,
    /// The file's columns to decode.
    mask: ProjectionMask,
}

impl InFile {
    fn of(job: &FileJob, metadata: &ArrowReaderMetadata) -> Result<Self> {
        let file_schema = metadata.schema();
        let mut names = Vec::with_capacity(job.spec.columns.len());
        for column in &job.spec.columns {
            let at = column_in_file(file_schema, column.field_id, &job.spec.file_names)
                .map_err(|e| exec_datafusion_err!("data file {}: {e}", job.path))?;
            names.push(at.map(|i| file_schema.field(i).name().clone()));
        }
        let roots = (names.iter().flatten()).filter_map(|name| file_schema.index_of(name).ok());
        let mask = ProjectionMask::roots(metadata.metadata().file_metadata().schema_descr(), roots);
        Ok(Self { names, mask })
    }
}

/// A row group to index: which, and where its pages are (as [`row_group_pages`] tells).
struct RowGroupRead<'a> {
    metadata: &'a ArrowReaderMetadata,
    group: usize,
    pages: Option<(Vec<Vec<PageLocation>>, bool)>,
}

/// One row group's entry, its indexed columns decoded from `file` (holding at least their
/// column chunks) a batch at a time and hashed, cut into slices at its pages. Blocking.
fn index_row_group(
    job: &FileJob,
    columns: &InFile,
    file: impl ChunkReader + 'static,
    read: RowGroupRead,
) -> Result<Group> {
    let spec = &job.spec;
    let metadata = read.metadata.metadata();
    let rows_of = |g: &RowGroupMetaData| u64::try_from(g.num_rows()).unwrap_or(0);
    let rows = rows_of(metadata.row_group(read.group));
    let slice_starts = match &read.pages {
        Some((pages, _)) => slice_starts(pages, rows),
        None => vec![0],
    };
    let batches = ParquetRecordBatchReaderBuilder::new_with_metadata(file, read.metadata.clone())
        .with_projection(columns.mask.clone())
        .with_row_groups(vec![read.group])
        .with_batch_size(BATCH_ROWS)
        .build()?;
    let mut hashes = GroupHashes::new(spec.columns.len());
    let mut at = 0;
    for batch in batches {
        if job.stopped.load(Ordering::Relaxed) {
            return exec_err!("indexing {} stopped: its build has ended", job.path);
        }
        let batch = batch?;
        job.held
            .try_grow(batch.num_rows() * spec.columns.len() * BYTES_PER_VALUE)?;
        let mut offset = 0;
        while offset < batch.num_rows() {
            if at >= rows {
                return exec_err!("data file {}: more rows than its row groups", job.path);
            }
            let slice = slice_starts.partition_point(|&s| s <= at) - 1;
            let slice_end = slice_starts.get(slice + 1).copied().unwrap_or(rows);
            let take = ((batch.num_rows() - offset) as u64).min(slice_end - at) as usize;
            hash_values(
                spec,
                &columns.names,
                &batch.slice(offset, take),
                &mut hashes.hashes,
            )?;
            for (runs, column) in hashes.runs.iter_mut().zip(&hashes.hashes) {
                runs.push((column.hashes.len(), slice as u32));
            }
            job.progress.add(take as u64);
            (at, offset) = (at + take as u64, offset + take);
        }
    }
    if at < rows {
        return exec_err!("data file {}: fewer rows than its row groups", job.path);
    }
    let slices = slice_starts.len() as u32;
    let (sidecar, maps, keys) = build(spec, hashes, slices)?;
    let pages = match read.pages {
        Some((pages, true)) => pages,
        _ => Vec::new(),
    };
    let map = (maps.is_some() || !pages.is_empty()).then(|| RowGroupMap {
        slice_starts,
        keys: maps.unwrap_or_default(),
        pages,
    });
    job.held
        .shrink(usize::try_from(rows).unwrap_or(0) * spec.columns.len() * BYTES_PER_VALUE);
    job.held
        .try_grow(keys.iter().map(Vec::len).sum::<usize>() * BYTES_PER_KEY)?;
    Ok(Group {
        first_row: metadata.row_groups()[..read.group]
            .iter()
            .map(rows_of)
            .sum(),
        rows,
        sidecar,
        map,
        keys,
        slices,
    })
}

/// A file's column chunks of one row group, fetched by range, read as Parquet's reader reads
/// a file: a read outside them is an error.
struct Chunks {
    len: u64,
    /// Each chunk's first byte in the file, and its bytes.
    chunks: Vec<(u64, Bytes)>,
}

impl Chunks {
    /// The bytes from `start`, `length` of them (from a chunk that holds them all) or to the
    /// end of the chunk it is in.
    fn at(&self, start: u64, length: Option<usize>) -> Result<Bytes, ParquetError> {
        let held = (self.chunks.iter()).find(|(from, bytes)| {
            let end = from + bytes.len() as u64;
            *from <= start
                && match length {
                    Some(length) => start + length as u64 <= end,
                    None => start < end,
                }
        });
        let Some((from, bytes)) = held else {
            return Err(ParquetError::General(format!(
                "bytes {start}..+{} were not fetched",
                length.unwrap_or(0)
            )));
        };
        let from = (start - from) as usize;
        let to = length.map_or(bytes.len(), |length| from + length);
        Ok(bytes.slice(from..to))
    }
}

impl Length for Chunks {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for Chunks {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> Result<Self::T, ParquetError> {
        Ok(self.at(start, None)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes, ParquetError> {
        self.at(start, Some(length))
    }
}

/// Where row group `group`'s pages are, per leaf column, as the file's own page index says;
/// None when it has none.
fn own_pages(metadata: &ParquetMetaData, group: usize) -> Option<Vec<Vec<PageLocation>>> {
    let columns = (metadata.offset_index())
        .and_then(|index| index.get(group))
        .filter(|columns| columns.len() == metadata.row_group(group).num_columns())?;
    let pages = (columns.iter())
        .map(|c| {
            (c.page_locations.iter())
                .map(|p| PageLocation {
                    offset: p.offset as u64,
                    size: p.compressed_page_size as u32,
                    first_row: p.first_row_index as u64,
                    plain: false,
                })
                .collect()
        })
        .collect();
    Some(pages)
}

/// Where row group `group`'s pages are, per leaf column, and whether they were walked from the
/// page headers (then the index keeps them) rather than read from the file's page index. None
/// when a column's pages cannot be told (a repeated column without a page index).
async fn row_group_pages(
    store: &Arc<dyn ObjectStore>,
    path: &Path,
    metadata: &ParquetMetaData,
    group: usize,
) -> Result<Option<(Vec<Vec<PageLocation>>, bool)>> {
    if let Some(pages) = own_pages(metadata, group) {
        return Ok(Some((pages, false)));
    }
    let row_group = metadata.row_group(group);
    let rows = u64::try_from(row_group.num_rows()).unwrap_or(0);
    let walks: Vec<_> = (row_group.columns().iter())
        .map(|column| column_pages(store.clone(), path.clone(), column.clone(), rows))
        .collect();
    let walked: Vec<Option<Vec<PageLocation>>> = futures::stream::iter(walks)
        .buffered(WALKS)
        .try_collect()
        .await?;
    let walked: Option<Vec<_>> = walked.into_iter().collect();
    Ok(walked.map(|pages| (pages, true)))
}

/// A row group's slices: cut where any column's page starts, so a slice lies within one page
/// of each column, then joined until each holds [`MIN_SLICE_ROWS`] (the last may hold fewer);
/// a slice of twice that or more is then cut into equal parts of at least that many rows.
///
/// Why pages are cut: a lookup decompresses its slice's pages whole, but decodes and compares
/// with its key only the slice's rows. PyArrow's pages are 20,000 rows, and decoding a page's
/// strings and comparing each was a fifth of a lookup's CPU. Each halving of the slices costs
/// ~1.09 more bits per key of the slice map (8 bits for a million-row row group, against 6
/// for its 50 pages).
fn slice_starts(pages: &[Vec<PageLocation>], rows: u64) -> Vec<u64> {
    let mut cuts: Vec<u64> = pages.iter().flatten().map(|p| p.first_row).collect();
    cuts.sort_unstable();
    let mut joined = vec![0];
    for cut in cuts {
        if cut >= joined[joined.len() - 1] + MIN_SLICE_ROWS && cut < rows {
            joined.push(cut);
        }
    }
    let mut starts = Vec::with_capacity(joined.len());
    for (i, &start) in joined.iter().enumerate() {
        let length = joined.get(i + 1).unwrap_or(&rows) - start;
        let parts = (length / MIN_SLICE_ROWS).max(1);
        starts.extend((0..parts).map(|part| start + length * part / parts));
    }
    starts
}

/// One row group's sidecar from its hashes, and for a row group of more than one slice, each
/// column's map from key to slice. Blocking: it sorts and builds over each of its hashes.
fn build(
    spec: &IndexSpec,
    hashes: GroupHashes,
    slices: u32,
) -> Result<(Vec<u8>, Option<Vec<SliceMap>>, Vec<BlockKeys>)> {
    let of_rows = hashes.slices();
    // Each slice is its own unit here, as a slice of rows is the locator's.
    let keys: Vec<BlockKeys> = (hashes.hashes.iter().zip(&of_rows))
        .map(|(hashes, slices)| block_keys(&hashes.hashes, slices, 1))
        .collect();
    let indexed = || -> Result<_, sieve_index::IndexError> {
        let maps = (slices > 1)
            .then(|| {
                let mut scratch = Scratch::default();
                (keys.iter())
                    .map(|keys| SliceMap::from_distinct(keys, slices, &mut scratch))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        // The filter is built from the locator's keys, distinct and sorted already, as a
        // native block's is: no second sort, and a count that is exact where a sketch's was
        // an estimate (sorting and estimating again were 5% of CREATE INDEX's CPU).
        let built: Vec<ColumnIndex> = (spec.columns.iter().zip(&keys).zip(&hashes.hashes))
            .map(|((column, keys), hashes)| {
                let distinct: Vec<u64> = keys.iter().map(|&(hash, _)| hash).collect();
                let ndv = distinct.len() as u64;
                let name = column.indexed_as.clone();
                ColumnIndex::from_distinct(name, spec.filter, distinct, hashes.has_null, ndv)
            })
            .collect();
        Ok((sidecar::encode(&built)?, maps))
    };
    let (sidecar, maps) = indexed().map_err(|e| DataFusionError::External(Box::new(e)))?;
    Ok((sidecar, maps, keys))
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
            // Written before the column was added: its initial default in every row, or null.
            None => match initial_value(&column.field)? {
                Some(value) => value.to_array_of_size(batch.num_rows())?,
                None => new_null_array(to, batch.num_rows()),
            },
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

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field};
    use datafusion::execution::memory_pool::UnboundedMemoryPool;
    use datafusion::parquet::file::properties::WriterProperties;
    use object_store::PutPayload;
    use object_store::memory::InMemory;

    use crate::test_files::written;

    /// A job indexing `id` and `name` of the file at `path` into a part of its own.
    fn job(path: &str, file_size: u64, rows: u64) -> Arc<FileJob> {
        let column = |name: &str, field_id, data_type| IndexedColumn {
            indexed_as: name.to_string(),
            field_id,
            field: Arc::new(Field::new(name, data_type, false)),
        };
        let names = [("id", 1), ("name", 2), ("other", 3)].map(|(n, id)| (n.to_string(), id));
        let spec = IndexSpec {
            columns: vec![
                column("id", 1, DataType::Int64),
                column("name", 2, DataType::Utf8),
            ],
            file_names: Arc::new(FileNames::Mapped(names.into_iter().collect())),
            filter: FilterKind::BinaryFuse16,
        };
        let pool: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::default());
        let columns = ["id".to_string(), "name".to_string()];
        Arc::new(FileJob {
            spec: Arc::new(spec),
            path: Path::from(path),
            record_count: rows,
            file_size,
            progress: Arc::default(),
            held: MemoryConsumer::new(path).register(&pool),
            part: Arc::new(Mutex::new(Built {
                keys: PartKeys::new(&columns, rows as usize),
                files: Vec::new(),
            })),
            stopped: Arc::default(),
        })
    }

    /// What a job put into its part, and the memory it still holds.
    fn built(job: Arc<FileJob>) -> (Vec<IndexedFile>, Vec<u8>, usize) {
        let job = Arc::into_inner(job).expect("the job has ended");
        let held = job.held.size();
        let part = Arc::into_inner(job.part).expect("the job has ended");
        let Built { keys, files } = part.into_inner().unwrap();
        (files, keys.build(1).unwrap(), held)
    }

    /// A file over [`WHOLE_FILE_BYTES`] is indexed from its footer, its walked page headers
    /// and its indexed column chunks, each fetched by range (a column not indexed is not
    /// fetched, but its pages cut the slices): its entries and locator are those of the same
    /// file indexed whole from memory.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_file_read_by_range_is_indexed_as_it_is_read_whole() {
        let rows = 150_000;
        let batch = RecordBatch::try_from_iter([
            (
                "id",
                Arc::new(Int64Array::from_iter_values(0..rows as i64)) as _,
            ),
            (
                "name",
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|i| format!("name-{:012}", i * 7919 % rows)),
                )) as _,
            ),
            (
                "other",
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|i| format!("o{i}")),
                )) as _,
            ),
        ])
        .unwrap();
        let properties = WriterProperties::builder()
            .set_max_row_group_row_count(Some(40_000))
            .set_data_page_row_count_limit(3_000)
            .set_write_batch_size(500)
            .set_dictionary_enabled(false)
            .set_offset_index_disabled(true)
            .build();
        let (bytes, metadata) = written(&batch, properties);
        let size = bytes.len() as u64;
        assert!(size > WHOLE_FILE_BYTES, "{size} bytes");
        assert!(metadata.offset_index().is_none());
        assert_eq!(metadata.num_row_groups(), 4);
        let store = InMemory::new();
        store
            .put(&Path::from("f.parquet"), PutPayload::from(bytes.clone()))
            .await
            .unwrap();

        let by_range = job("f.parquet", size, rows);
        index_file(Arc::new(store), by_range.clone()).await.unwrap();
        assert_eq!(by_range.progress.rows(), rows);
        let whole = job("f.parquet", size, rows);
        let groups = index_whole(&whole, bytes).unwrap();
        whole.keep(groups).unwrap();

        let (files, locator, held) = built(by_range);
        assert_eq!((files.clone(), locator.clone(), held), built(whole));
        let first_rows: Vec<_> = files.iter().map(|f| (f.first_row, f.rows)).collect();
        assert_eq!(
            first_rows,
            [
                (0, 40_000),
                (40_000, 40_000),
                (80_000, 40_000),
                (120_000, 30_000)
            ]
        );
        for file in &files {
            let map = file.map.as_ref().expect("slices of walked pages");
            assert_eq!(map.pages.len(), 3, "each column's pages, walked");
            assert!(map.slice_starts.len() > 10, "{:?}", map.slice_starts);
            assert_eq!(map.keys.len(), 2, "a slice map per indexed column");
        }
        // Its keys are held until the part's locator is built; nothing else.
        assert_eq!(held, 2 * rows as usize * BYTES_PER_KEY);
    }

    /// Pages of `rows` rows each over a row group of `total`.
    fn pages(rows: u64, total: u64) -> Vec<PageLocation> {
        (0..total.div_ceil(rows))
            .map(|i| PageLocation {
                offset: i * 1000,
                size: 1000,
                first_row: i * rows,
                plain: true,
            })
            .collect()
    }

    #[test]
    fn slices_lie_within_pages_and_hold_between_one_and_two_minimums() {
        let total = 1_000_000;
        // PyArrow's 20,000-row pages in both columns, one page, and (where slices are joined
        // across page starts, so only the sizes hold) one column's pages shifted, tiny pages.
        for (columns, within) in [
            (vec![pages(20_000, total), pages(20_000, total)], true),
            (vec![pages(total, total)], true),
            (vec![pages(20_000, total), pages(7_000, total)], false),
            (vec![pages(100, total)], false),
        ] {
            let starts = slice_starts(&columns, total);
            assert_eq!(starts[0], 0);
            let ends = starts.iter().skip(1).copied().chain([total]);
            for (start, end) in starts.iter().copied().zip(ends) {
                let rows = end - start;
                // The last may hold fewer, where pages smaller than a slice were joined.
                let least = if end == total { 1 } else { MIN_SLICE_ROWS };
                assert!(rows >= least && rows < 2 * MIN_SLICE_ROWS, "{start}..{end}");
                for column in columns.iter().filter(|_| within) {
                    let page = column.partition_point(|p| p.first_row <= start) - 1;
                    let page_end = column.get(page + 1).map_or(total, |p| p.first_row);
                    assert!(
                        end <= page_end,
                        "{start}..{end} crosses a page ending at {page_end}"
                    );
                }
            }
        }
        // A row group smaller than a slice is one slice.
        assert_eq!(slice_starts(&[pages(100, 1000)], 1000), vec![0]);
    }
}
