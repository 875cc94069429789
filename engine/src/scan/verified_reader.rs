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
//! cached reader factory does. Blocks are immutable, so a cached footer never goes stale.

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
use futures::FutureExt;
use futures::future::BoxFuture;
use object_store::{ObjectMeta, ObjectStore};
use sieve_storage::BlockChecksums;

#[derive(Debug)]
pub struct VerifiedReaderFactory {
    store: Arc<dyn ObjectStore>,
    footers: Arc<FileMetadataCache>,
}

impl VerifiedReaderFactory {
    pub fn new(store: Arc<dyn ObjectStore>, footers: Arc<FileMetadataCache>) -> Self {
        Self { store, footers }
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
            store: self.store.clone(),
            footers: self.footers.clone(),
            meta: file.object_meta,
            checksums,
            metadata_size_hint,
        }))
    }
}

struct VerifiedReader {
    store: Arc<dyn ObjectStore>,
    footers: Arc<FileMetadataCache>,
    /// The block's location and size, as the footer cache checks entries against.
    meta: ObjectMeta,
    checksums: BlockChecksums,
    metrics: ParquetFileMetrics,
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
            let widened: Vec<Range<u64>> = ranges.iter().map(|r| self.checksums.widen(r)).collect();
            let total: u64 = widened.iter().map(|r| r.end - r.start).sum();
            self.metrics.bytes_scanned.add(total as usize);
            // object_store coalesces ranges that widening made adjacent or overlapping.
            let fetched = self
                .store
                .get_ranges(&self.meta.location, &widened)
                .await
                .map_err(external)?;
            ranges
                .iter()
                .zip(fetched)
                .map(|(range, bytes)| {
                    self.checksums
                        .check(self.meta.location.as_ref(), range, bytes)
                        .map_err(external)
                })
                .collect()
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
