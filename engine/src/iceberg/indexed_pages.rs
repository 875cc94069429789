//! How an attached table's files are opened: through DataFusion's footer cache (a lookup does
//! not fetch the footer of a file it read before), and, for a file written without a page index,
//! with the one Sieve's index walked from its page headers ([`super::page_walk`]). Parquet's
//! reader, given a row selection and an offset index, fetches the pages the selection touches
//! and not the column chunks: a key's slice costs its pages, not its row group. It also
//! fetches a column's dictionary page whenever the chunk has one; where every page the
//! selection touches was walked and found plain-encoded, the chunk is described to it without
//! its dictionary page, which is then not fetched. Such a footer is built once per file and
//! set of dictionary pages left out, and kept with the table's indexes
//! ([`Loaded::footer_with_pages`]).
//!
//! The bytes read are kept in the process's data cache (`data_cache_mib`, shared with Sieve's
//! own blocks; `SET sieve.data_cache = false` reads past it), by the file's URL and range: data
//! files never change once written, so an entry never goes stale. A hot key's pages, and the
//! dictionary pages many keys share, are then read from memory; EXPLAIN ANALYZE counts
//! `data_cache_hits` and `data_cache_hit_bytes` beside `bytes_scanned`.
//!
//! DataFusion's seam for this is the [`ParquetFileReaderFactory`], as in its
//! `parquet_advanced_index.rs` example.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::ParquetFileReaderFactory;
use datafusion::datasource::physical_plan::parquet::CachedParquetFileReaderFactory;
use datafusion::datasource::physical_plan::parquet::ParquetRowSelection;
use datafusion::error::Result;
use datafusion::execution::cache::cache_manager::FileMetadataCache;
use datafusion::parquet::arrow::arrow_reader::ArrowReaderOptions;
use datafusion::parquet::arrow::arrow_reader::RowSelection;
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::errors::Result as ParquetResult;
use datafusion::parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};
use datafusion::parquet::file::page_index::offset_index::{
    OffsetIndexMetaData, PageLocation as ParquetPageLocation,
};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::FutureExt;
use futures::future::BoxFuture;
use object_store::ObjectStore;
use sieve_storage::PageLocation;

use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::physical_plan::metrics::{Count, MetricBuilder};
use sieve_storage::Storage;

use super::file_indexes::Loaded;
use crate::scan::page_read::KeptDictionaries;

#[derive(Debug)]
pub struct IndexedPagesFactory {
    cached: CachedParquetFileReaderFactory,
    /// The store's URL, which keys its files' bytes in the data cache apart from other stores'.
    store_url: String,
    /// Whose data cache keeps the bytes read; None: none is kept.
    data_cache: Option<Storage>,
    loaded: Arc<Loaded>,
    /// Rows per batch the scan decodes: Parquet's reader may widen a selection to whole
    /// batches, so a page is taken as touched when its batch is.
    batch_rows: u64,
}

impl IndexedPagesFactory {
    pub fn new(
        (store, store_url): (Arc<dyn ObjectStore>, &ObjectStoreUrl),
        footers: Arc<FileMetadataCache>,
        data_cache: Option<Storage>,
        loaded: Arc<Loaded>,
        batch_rows: usize,
    ) -> Self {
        Self {
            cached: CachedParquetFileReaderFactory::new(store, footers),
            store_url: store_url.as_str().to_string(),
            data_cache,
            loaded,
            batch_rows: batch_rows.max(1) as u64,
        }
    }
}

impl IndexedPagesFactory {
    /// The key of the file at `path` in the data cache.
    fn cache_key(&self, path: &str) -> String {
        format!("{}{path}", self.store_url)
    }

    /// Where a direct read keeps `file`'s dictionary pages decompressed: beside its bytes in
    /// the data cache, when the read keeps any.
    pub fn kept_dictionaries(&self, file: &PartitionedFile) -> Option<KeptDictionaries> {
        Some(KeptDictionaries {
            storage: self.data_cache.clone()?,
            file: self.cache_key(file.object_meta.location.as_ref()),
        })
    }
}

impl ParquetFileReaderFactory for IndexedPagesFactory {
    fn create_reader(
        &self,
        partition_index: usize,
        file: PartitionedFile,
        metadata_size_hint: Option<usize>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> Result<Box<dyn AsyncFileReader + Send>> {
        let path = file.object_meta.location.to_string();
        let cache_key = self.cache_key(&path);
        let selected = (file.extensions.get::<ParquetRowSelection>())
            .map(|s| selected_rows(s.selection(), self.batch_rows));
        let inner =
            (self.cached).create_reader(partition_index, file, metadata_size_hint, metrics)?;
        let counter = |name| MetricBuilder::new(metrics).counter(name, partition_index);
        Ok(Box::new(WithPages {
            inner,
            cache_key,
            path,
            data_cache: self.data_cache.clone(),
            hits: (counter("data_cache_hits"), counter("data_cache_hit_bytes")),
            loaded: self.loaded.clone(),
            selected,
        }))
    }
}

struct WithPages {
    inner: Box<dyn AsyncFileReader + Send>,
    path: String,
    /// The file's URL, as its ranges are kept in the data cache.
    cache_key: String,
    data_cache: Option<Storage>,
    /// Ranges and bytes the data cache gave.
    hits: (Count, Count),
    loaded: Arc<Loaded>,
    /// The rows of the file the scan may decode, widened to whole batches; None: all.
    selected: Option<Vec<Range<u64>>>,
}

impl AsyncFileReader for WithPages {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, ParquetResult<Bytes>> {
        async move {
            let mut fetched = self.get_byte_ranges(vec![range]).await?;
            Ok(fetched.pop().unwrap_or_default())
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, ParquetResult<Vec<Bytes>>> {
        async move {
            let storage = self.data_cache.clone();
            let Some(cache) = storage.as_ref().and_then(|s| s.caches().data.as_ref()) else {
                return self.inner.get_byte_ranges(ranges).await;
            };
            let key = |r: &Range<u64>| (self.cache_key.clone(), r.start, r.end);
            let mut found: Vec<Option<Bytes>> = ranges.iter().map(|r| cache.get(&key(r))).collect();
            for hit in found.iter().flatten() {
                self.hits.0.add(1);
                self.hits.1.add(hit.len());
            }
            let missing: Vec<Range<u64>> = (ranges.iter().zip(&found))
                .filter(|(_, hit)| hit.is_none())
                .map(|(r, _)| r.clone())
                .collect();
            if !missing.is_empty() {
                let mut fetched = self.inner.get_byte_ranges(missing).await?.into_iter();
                for (range, slot) in ranges.iter().zip(&mut found) {
                    if slot.is_none() {
                        let bytes = fetched.next().unwrap_or_default();
                        cache.insert(key(range), bytes.clone());
                        *slot = Some(bytes);
                    }
                }
            }
            Ok(found.into_iter().map(Option::unwrap_or_default).collect())
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, ParquetResult<Arc<ParquetMetaData>>> {
        async move {
            // A file whose pages the index walked has no page index to ask the footer cache
            // for; asked (DataFusion 55's default where a cache is kept), the cache copies the
            // footer it holds and stores it again on every read, ~2% of a lookup's CPU.
            let walked = self.loaded.walked(&self.path);
            let footer_only = walked.then(|| {
                (options.cloned().unwrap_or_default()).with_page_index_policy(PageIndexPolicy::Skip)
            });
            let metadata = (self.inner)
                .get_metadata(footer_only.as_ref().or(options))
                .await?;
            if metadata.offset_index().is_some() {
                return Ok(metadata);
            }
            let Some(walked) = self.loaded.walked_pages(&self.path, &metadata) else {
                return Ok(metadata);
            };
            let dropped = dropped_dictionaries(&metadata, &walked, self.selected.as_deref());
            let build = |dropped: &[bool]| {
                pages_inside(&metadata, &walked).then(|| with_pages(&metadata, &walked, dropped))
            };
            let built = self.loaded.footer_with_pages(&self.path, dropped, build);
            Ok(built.unwrap_or(metadata))
        }
        .boxed()
    }
}

/// Per column chunk of `metadata`, in file order, whether a read of the rows `selected` (all
/// when None) leaves its dictionary page out: it has one, and every page of it among those
/// rows was `walked` and found plain-encoded. A row group none of whose rows is read is left
/// as it is (its access is a skip: nothing of it is fetched), so that reads of different row
/// groups' dictionary-encoded pages share one footer: with a footer per row group read, a
/// table of 100 row groups a file built one on most lookups once its kept footers outgrew
/// their budget (14% of a present key's CPU).
fn dropped_dictionaries(
    metadata: &ParquetMetaData,
    walked: &[&[Vec<PageLocation>]],
    selected: Option<&[Range<u64>]>,
) -> Vec<bool> {
    let mut first_row = 0u64;
    let mut dropped = Vec::new();
    for (group, pages) in metadata.row_groups().iter().zip(walked) {
        let rows = group.num_rows() as u64;
        let within: Vec<Range<u64>> = match selected {
            Some(ranges) => (ranges.iter())
                .filter(|r| r.start < first_row + rows && r.end > first_row)
                .map(|r| {
                    r.start.max(first_row) - first_row..r.end.min(first_row + rows) - first_row
                })
                .collect(),
            None => std::iter::once(0..rows).collect(),
        };
        for (column, pages) in group.columns().iter().zip(pages.iter()) {
            if within.is_empty() {
                dropped.push(false);
                continue;
            }
            let mut touched = pages.iter().enumerate().filter(|(i, page)| {
                let end = pages.get(i + 1).map_or(rows, |next| next.first_row);
                within
                    .iter()
                    .any(|r| r.start < end && r.end > page.first_row)
            });
            let plain = touched.all(|(_, page)| page.plain);
            dropped.push(plain && column.dictionary_page_offset().is_some());
        }
        first_row += rows;
    }
    dropped
}

/// Whether each of the `walked` pages of the file whose footer is `metadata` lies inside its
/// column chunk ([`Loaded::walked_pages`]): pages from an index of another file by the same
/// path, or a damaged one, would send Parquet's reader outside the chunk.
fn pages_inside(metadata: &ParquetMetaData, walked: &[&[Vec<PageLocation>]]) -> bool {
    (metadata.row_groups().iter().zip(walked)).all(|(group, pages)| {
        (group.columns().iter().zip(pages.iter())).all(|(column, pages)| {
            let (start, len) = column.byte_range();
            (pages.iter()).all(|p| p.offset >= start && p.offset + u64::from(p.size) <= start + len)
        })
    })
}

/// `metadata` with the offset index of the pages `walked`, and without the dictionary page of
/// each column chunk `dropped` says ([`dropped_dictionaries`]).
fn with_pages(
    metadata: &ParquetMetaData,
    walked: &[&[Vec<PageLocation>]],
    dropped: &[bool],
) -> ParquetMetaData {
    let mut builder = metadata.clone().into_builder();
    let mut dropped = dropped.iter();
    let mut groups = Vec::with_capacity(walked.len());
    let mut index = Vec::with_capacity(walked.len());
    for (group, pages) in builder.take_row_groups().into_iter().zip(walked) {
        let drops: Vec<bool> = (dropped.by_ref().take(group.num_columns()).copied()).collect();
        // Only a row group read has a chunk whose dictionary is left out: the others are kept
        // as the clone above made them.
        let group = match drops.contains(&true) {
            false => group,
            true => {
                let columns = (group.columns().iter().zip(&drops))
                    .map(|(column, &drop)| match column.dictionary_page_offset() {
                        Some(dictionary) if drop => {
                            let data = column.data_page_offset();
                            let size = column.compressed_size() - (data - dictionary);
                            (column.clone().into_builder())
                                .set_dictionary_page_offset(None)
                                .set_total_compressed_size(size)
                                .build()
                                .unwrap_or_else(|_| column.clone())
                        }
                        _ => column.clone(),
                    })
                    .collect();
                (group.clone().into_builder())
                    .set_column_metadata(columns)
                    .build()
                    .unwrap_or(group)
            }
        };
        groups.push(group);
        index.push(
            (pages.iter())
                .map(|pages| OffsetIndexMetaData {
                    page_locations: (pages.iter())
                        .map(|p| ParquetPageLocation {
                            offset: p.offset as i64,
                            compressed_page_size: p.size as i32,
                            first_row_index: p.first_row as i64,
                        })
                        .collect(),
                    unencoded_byte_array_data_bytes: None,
                })
                .collect(),
        );
    }
    builder
        .set_row_groups(groups)
        .set_offset_index(Some(index))
        .build()
}

/// The rows `selection` selects, each run widened to the batches it falls in.
fn selected_rows(selection: &RowSelection, batch_rows: u64) -> Vec<Range<u64>> {
    let mut at = 0u64;
    let mut ranges: Vec<Range<u64>> = Vec::new();
    for selector in selection.iter() {
        let rows = selector.row_count as u64;
        if !selector.skip && rows > 0 {
            let start = at / batch_rows * batch_rows;
            let end = (at + rows).div_ceil(batch_rows) * batch_rows;
            match ranges.last_mut() {
                Some(last) if last.end >= start => last.end = last.end.max(end),
                _ => ranges.push(start..end),
            }
        }
        at += rows;
    }
    ranges
}
