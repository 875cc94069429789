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
use datafusion::parquet::arrow::arrow_reader::ArrowReaderOptions;
use datafusion::parquet::arrow::async_reader::{AsyncFileReader, ParquetRecordBatchStreamBuilder};
use datafusion::parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::{StreamExt, TryStreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use sieve_iceberg::{DataFile, FileNames};
use sieve_index::locator::{BlockKeys, block_keys};
use sieve_index::retrieval::Scratch;
use sieve_index::{ColumnHashes, ColumnIndex, FilterKind, SliceMap, sidecar};
use sieve_storage::{IndexedFile, PageLocation, PartKeys, RowGroupMap};
use tokio::task::JoinSet;

use super::field_ids::{column_in_file, initial_value};
use super::page_walk::column_pages;
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
                    None => exec_err!(
                        "column {indexed_as} (field id {field_id}) is no longer in the table: \
                         drop the index"
                    ),
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
/// so a file too large for the budget fails with the pool's error. Dropping the future stops
/// every task. The entries come with the locator built over them, in their order, as the
/// `ordinal`-th part of its index (from 1; [`PartKeys::build`]).
pub async fn index_files(
    store: Arc<dyn ObjectStore>,
    spec: Arc<IndexSpec>,
    (files, ordinal): (&[&DataFile], u64),
    parallelism: usize,
    progress: Arc<WriteProgress>,
    pool: Arc<dyn MemoryPool>,
) -> Result<IndexedPart> {
    let mut pending = files
        .iter()
        .map(|f| (f.path.clone(), f.record_count, f.file_size));
    let mut running = JoinSet::new();
    let mut built = Vec::with_capacity(files.len());
    let columns: Vec<String> = spec.columns.iter().map(|c| c.indexed_as.clone()).collect();
    let most_keys = files.iter().map(|f| f.record_count as usize).sum();
    let mut keys = Some(PartKeys::new(&columns, most_keys));
    loop {
        while running.len() < parallelism.max(1) {
            let Some((path, record_count, file_size)) = pending.next() else {
                break;
            };
            let (store, spec, progress) = (store.clone(), spec.clone(), progress.clone());
            let held = MemoryConsumer::new(format!("index of {path}")).register(&pool);
            running.spawn(async move {
                let groups = index_file(store, &spec, &path, &progress, file_size, &held).await?;
                let entries = groups.into_iter().map(|group| {
                    let file = IndexedFile {
                        path: path.to_string(),
                        record_count,
                        file_size,
                        first_row: group.first_row,
                        rows: group.rows,
                        sidecar: group.sidecar,
                        map: group.map,
                    };
                    (file, group.keys, group.slices)
                });
                Ok::<_, DataFusionError>((entries.collect::<Vec<_>>(), held))
            });
        }
        let Some(done) = running.join_next().await else {
            break;
        };
        let (entries, held) = done.map_err(|e| exec_datafusion_err!("{e}"))??;
        // Into the locator's keys in the entries' order, off the runtime (they may spill).
        let mut adding = keys.take().expect("handed back");
        let (adding, files) = tokio::task::spawn_blocking(move || {
            let mut files = Vec::with_capacity(entries.len());
            for (file, group_keys, slices) in entries {
                adding.add_entry(group_keys, slices)?;
                files.push(file);
            }
            Ok::<_, sieve_storage::StorageError>((adding, files))
        })
        .await
        .map_err(|e| exec_datafusion_err!("{e}"))?
        .map_err(to_df)?;
        drop(held);
        keys = Some(adding);
        built.extend(files);
    }
    let keys = keys.expect("handed back");
    let locator = match built.is_empty() {
        true => None,
        false => Some(
            tokio::task::spawn_blocking(move || keys.build(ordinal))
                .await
                .map_err(|e| exec_datafusion_err!("{e}"))?
                .map_err(to_df)?,
        ),
    };
    Ok(IndexedPart {
        files: built,
        locator,
    })
}

/// A part's entries as built, and its locator (none for a part of no entry).
pub struct IndexedPart {
    pub files: Vec<IndexedFile>,
    pub locator: Option<Vec<u8>>,
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

/// One file's row groups: each one's rows, sidecar, map and keys (held in `held` until the
/// caller has them in the part's locator).
async fn index_file(
    store: Arc<dyn ObjectStore>,
    spec: &IndexSpec,
    path: &Path,
    progress: &WriteProgress,
    file_size: u64,
    held: &MemoryReservation,
) -> Result<Vec<Group>> {
    let whole = file_size <= WHOLE_FILE_BYTES;
    let store = match whole {
        true => {
            held.try_grow(file_size as usize)?;
            let bytes = store.get_range(path, 0..file_size).await?;
            let memory = InMemory::new();
            memory.put(path, PutPayload::from(bytes)).await?;
            Arc::new(memory) as Arc<dyn ObjectStore>
        }
        false => store,
    };
    let file = PartitionedFile::new(path.to_string(), file_size);
    let reader: Box<dyn AsyncFileReader> = DefaultParquetFileReaderFactory::new(store.clone())
        .create_reader(0, file, None, &ExecutionPlanMetricsSet::new())?;
    // The file's own page index, where it has one, says where its pages are.
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
    let builder = ParquetRecordBatchStreamBuilder::new_with_options(reader, options).await?;
    let file_schema = builder.schema().clone();
    let metadata = builder.metadata().clone();
    // Where the file holds each indexed column; None: written before the column was added.
    let mut in_file = Vec::with_capacity(spec.columns.len());
    for column in &spec.columns {
        let at = column_in_file(&file_schema, column.field_id, &spec.file_names)
            .map_err(|e| exec_datafusion_err!("data file {path}: {e}"))?;
        in_file.push(at.map(|i| file_schema.field(i).name().clone()));
    }
    let roots = (spec.columns.iter().zip(&in_file))
        .filter_map(|(_, name)| file_schema.index_of(name.as_deref()?).ok());
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let group_rows: Vec<u64> = (metadata.row_groups().iter())
        .map(|g| u64::try_from(g.num_rows()).unwrap_or(0))
        .collect();
    let mut rows = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()?;
    // A row group's hashes per indexed column, made into its sidecar once the row group ends
    // (batches are cut there), so a build holds one row group's hashes at a time.
    let mut groups = Vec::with_capacity(group_rows.len().max(1));
    let mut first_row = 0;
    // The rest of a batch that ran past its row group.
    let mut carried: Option<RecordBatch> = None;
    for (group, &rows_in_group) in group_rows.iter().enumerate() {
        let pages = row_group_pages(&store, path, &metadata, group).await?;
        let slice_starts = match &pages {
            Some((pages, _)) => slice_starts(pages, rows_in_group),
            None => vec![0],
        };
        let mut hashes = GroupHashes::new(spec.columns.len());
        let mut at = 0;
        while at < rows_in_group {
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
            let slice = slice_starts.partition_point(|&s| s <= at) - 1;
            let slice_end = slice_starts
                .get(slice + 1)
                .copied()
                .unwrap_or(rows_in_group);
            let take = (batch.num_rows() as u64).min(slice_end - at) as usize;
            hash_values(spec, &in_file, &batch.slice(0, take), &mut hashes.hashes)?;
            for (runs, column) in hashes.runs.iter_mut().zip(&hashes.hashes) {
                runs.push((column.hashes.len(), slice as u32));
            }
            progress.add(take as u64);
            at += take as u64;
            if take < batch.num_rows() {
                carried = Some(batch.slice(take, batch.num_rows() - take));
            }
        }
        let slices = slice_starts.len() as u32;
        let (sidecar, maps, keys) = build(spec, hashes, slices).await?;
        let pages = match pages {
            Some((pages, true)) => pages,
            _ => Vec::new(),
        };
        let map = (maps.is_some() || !pages.is_empty()).then(|| RowGroupMap {
            slice_starts,
            keys: maps.unwrap_or_default(),
            pages,
        });
        held.shrink(
            usize::try_from(rows_in_group).unwrap_or(0) * spec.columns.len() * BYTES_PER_VALUE,
        );
        held.try_grow(keys.iter().map(Vec::len).sum::<usize>() * BYTES_PER_KEY)?;
        groups.push(Group {
            first_row,
            rows: rows_in_group,
            sidecar,
            map,
            keys,
            slices,
        });
        first_row += rows_in_group;
    }
    if groups.is_empty() {
        // A file of no rows still gets its (empty) sidecar: it is then covered, never read.
        let (sidecar, _, keys) = build(spec, GroupHashes::new(spec.columns.len()), 1).await?;
        groups.push(Group {
            first_row: 0,
            rows: 0,
            sidecar,
            map: None,
            keys,
            slices: 1,
        });
    }
    if whole {
        held.shrink(file_size as usize);
    }
    Ok(groups)
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
    let row_group = metadata.row_group(group);
    let own = (metadata.offset_index())
        .and_then(|index| index.get(group))
        .filter(|columns| columns.len() == row_group.num_columns());
    if let Some(columns) = own {
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
        return Ok(Some((pages, false)));
    }
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
/// column's map from key to slice: sorting and building over a million hashes or more runs
/// off the async threads.
async fn build(
    spec: &IndexSpec,
    hashes: GroupHashes,
    slices: u32,
) -> Result<(Vec<u8>, Option<Vec<SliceMap>>, Vec<BlockKeys>)> {
    let columns: Vec<String> = spec.columns.iter().map(|c| c.indexed_as.clone()).collect();
    let filter = spec.filter;
    tokio::task::spawn_blocking(move || {
        let of_rows = hashes.slices();
        // Each slice is its own unit here, as a slice of rows is the locator's.
        let keys: Vec<BlockKeys> = (hashes.hashes.iter().zip(&of_rows))
            .map(|(hashes, slices)| block_keys(&hashes.hashes, slices, 1))
            .collect();
        let maps = (slices > 1)
            .then(|| {
                let mut scratch = Scratch::default();
                (keys.iter())
                    .map(|keys| SliceMap::from_distinct(keys, slices, &mut scratch))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        let built: Vec<ColumnIndex> = (columns.into_iter().zip(hashes.hashes))
            .map(|(column, hashes)| ColumnIndex::build(column, filter, hashes))
            .collect();
        Ok((sidecar::encode(&built)?, maps, keys))
    })
    .await
    .map_err(|e| exec_datafusion_err!("{e}"))?
    .map_err(|e: sieve_index::IndexError| DataFusionError::External(Box::new(e)))
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
