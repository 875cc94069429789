//! Parquet reads of Sieve blocks, every byte checked against the block's checksums from the
//! segment ([`BlockChecksums`]): footer, page index, dictionary and data pages alike, so a
//! damaged block is an error naming it, never a different answer.
//!
//! DataFusion's seam for this is the [`ParquetFileReaderFactory`] (its
//! `parquet_advanced_index.rs` example is the model): the scan attaches each block's checksums to
//! its [`PartitionedFile`] and this factory's readers widen each fetch to checksum strides. The
//! footer and its page index are read through the same checked ranges by parquet's own metadata
//! reader, once: they are kept in DataFusion's file metadata cache (shared by the engine's
//! sessions, bounded in bytes by `datafusion.runtime.metadata_cache_limit`), as DataFusion's own
//! cached reader factory does. Blocks are immutable, so a cached footer never goes stale, nor
//! do the verified byte ranges the storage's data cache keeps (`data_cache_mib`): a lookup of a
//! hot key reads its pages from memory, and EXPLAIN ANALYZE counts `data_cache_hits` and
//! `data_cache_hit_bytes` beside `bytes_scanned` (the bytes fetched from storage).

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::common::internal_datafusion_err;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::ParquetFileReaderFactory;
use datafusion::datasource::physical_plan::parquet::{CachedParquetMetaData, ParquetFileMetrics};
use datafusion::error::Result;
use datafusion::execution::cache::cache_manager::{CachedFileMetadataEntry, FileMetadataCache};
use datafusion::parquet::arrow::arrow_reader::ArrowReaderOptions;
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::{
    PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader,
};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::metrics::{Count, MetricBuilder};
use futures::FutureExt;
use futures::future::BoxFuture;
use object_store::ObjectMeta;
use sieve_storage::{BlockChecksums, Storage};

#[derive(Debug)]
pub struct VerifiedReaderFactory {
    storage: Storage,
    footers: Arc<FileMetadataCache>,
    /// Whether reads go through the storage's data cache (`SET sieve.data_cache`).
    cached: bool,
}

impl VerifiedReaderFactory {
    pub fn new(storage: Storage, footers: Arc<FileMetadataCache>, cached: bool) -> Self {
        Self {
            storage,
            footers,
            cached,
        }
    }
}

impl ParquetFileReaderFactory for VerifiedReaderFactory {
    fn create_reader(
        &self,
        partition_index: usize,
        file: PartitionedFile,
        metadata_size_hint: Option<usize>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> Result<Box<dyn AsyncFileReader + Send>> {
        let path = &file.object_meta.location;
        let checksums = file.extension::<BlockChecksums>().cloned().ok_or_else(|| {
            internal_datafusion_err!("block {path} was scanned without its checksums")
        })?;
        Ok(Box::new(VerifiedReader {
            metrics: ParquetFileMetrics::new(partition_index, path.as_ref(), metrics),
            cache_hits: MetricBuilder::new(metrics).counter("data_cache_hits", partition_index),
            cache_hit_bytes: MetricBuilder::new(metrics)
                .counter("data_cache_hit_bytes", partition_index),
            storage: self.storage.clone(),
            cached: self.cached,
            footers: self.footers.clone(),
            meta: file.object_meta,
            checksums,
            metadata_size_hint,
        }))
    }
}

struct VerifiedReader {
    storage: Storage,
    cached: bool,
    footers: Arc<FileMetadataCache>,
    /// The block's location and size, as the footer cache checks entries against.
    meta: ObjectMeta,
    checksums: BlockChecksums,
    metrics: ParquetFileMetrics,
    cache_hits: Count,
    cache_hit_bytes: Count,
    metadata_size_hint: Option<usize>,
}

fn external(e: impl std::error::Error + Send + Sync + 'static) -> ParquetError {
    ParquetError::External(Box::new(e))
}

impl AsyncFileReader for VerifiedReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes, ParquetError>> {
        async move {
            let mut fetched = self.get_byte_ranges(vec![range]).await?;
            Ok(fetched.pop().expect("one range asked, one returned"))
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, Result<Vec<Bytes>, ParquetError>> {
        async move {
            let location = &self.meta.location;
            let widened: Vec<Range<u64>> = ranges.iter().map(|r| self.checksums.widen(r)).collect();
            let cache = self.storage.caches().data.as_ref().filter(|_| self.cached);
            let key = |w: &Range<u64>| (location.to_string(), w.start, w.end);
            let mut found: Vec<Option<Bytes>> = widened
                .iter()
                .map(|w| cache.and_then(|c| c.get(&key(w))))
                .collect();
            let missing: Vec<Range<u64>> = (widened.iter().zip(&found))
                .filter(|(_, hit)| hit.is_none())
                .map(|(w, _)| w.clone())
                .collect();
            for hit in found.iter().flatten() {
                self.cache_hits.add(1);
                self.cache_hit_bytes.add(hit.len());
            }
            if !missing.is_empty() {
                let total: u64 = missing.iter().map(|r| r.end - r.start).sum();
                self.metrics.bytes_scanned.add(total as usize);
                // object_store coalesces ranges that widening made adjacent or overlapping.
                let mut fetched = self
                    .storage
                    .store()
                    .get_ranges(location, &missing)
                    .await
                    .map_err(external)?
                    .into_iter();
                for (w, slot) in widened.iter().zip(&mut found) {
                    if slot.is_some() {
                        continue;
                    }
                    let bytes = fetched.next().expect("one range fetched per range asked");
                    // Checked whole, so only verified bytes are kept.
                    let bytes = self
                        .checksums
                        .check(location.as_ref(), w, bytes)
                        .map_err(external)?;
                    if let Some(cache) = cache {
                        cache.insert(key(w), bytes.clone());
                    }
                    *slot = Some(bytes);
                }
            }
            Ok(ranges
                .iter()
                .zip(widened)
                .zip(found)
                .map(|((range, w), bytes)| {
                    let bytes = bytes.expect("every range found or fetched");
                    bytes.slice((range.start - w.start) as usize..(range.end - w.start) as usize)
                })
                .collect())
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        _options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, Result<Arc<ParquetMetaData>, ParquetError>> {
        async move {
            let cached = self
                .footers
                .get(&self.meta.location)
                .filter(|entry| entry.is_valid_for(&self.meta))
                .and_then(|entry| {
                    let found = entry
                        .file_metadata
                        .as_any()
                        .downcast_ref::<CachedParquetMetaData>()?;
                    Some(found.parquet_metadata().clone())
                });
            if let Some(metadata) = cached {
                return Ok(metadata);
            }
            // The page index is read with the footer whatever this scan asked for, and cached
            // with it: DataFusion's opener asks for the footer alone and then loads the page
            // index through `get_bytes` on every open unless the metadata it gets holds one,
            // which would cost every warm lookup a request (a Sieve block's page index is a
            // few KB).
            let file_len = self.checksums.file_len();
            let reader = ParquetMetaDataReader::new()
                .with_page_index_policy(PageIndexPolicy::Optional)
                .with_prefetch_hint(self.metadata_size_hint);
            let metadata = Arc::new(reader.load_and_finish(&mut *self, file_len).await?);
            self.footers.put(
                &self.meta.location,
                CachedFileMetadataEntry::new(
                    self.meta.clone(),
                    Arc::new(CachedParquetMetaData::new(metadata.clone())),
                ),
            );
            Ok(metadata)
        }
        .boxed()
    }
}
