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
//!
//! A block comes with its page table from the segment, if it has one ([`BlockPages`]). When the
//! locator named its rows, the reader rebuilds from it the offset index the row selection
//! needs, and the pages are the first bytes of the block it fetches (a cold lookup waits for one
//! round trip less). That metadata is kept apart from footers (under `<block>/pages`), since it
//! holds no statistics to prune pages with. The table also holds each page's checksum, so a page
//! read whole (located, or chosen by the footer's page index) is fetched exactly and checked
//! against it instead of widened to 64 KiB strides: a lookup's few KB of pages cost few KB.

use std::any::Any;

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{HashMap, internal_datafusion_err};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::ParquetFileReaderFactory;
use datafusion::datasource::physical_plan::parquet::{CachedParquetMetaData, ParquetFileMetrics};
use datafusion::error::Result;
use datafusion::execution::cache::cache_manager::{
    CachedFileMetadataEntry, FileMetadata, FileMetadataCache,
};
use datafusion::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::{
    PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader,
};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::metrics::{Count, MetricBuilder};
use futures::FutureExt;
use futures::future::{BoxFuture, join_all};
use object_store::ObjectMeta;
use sieve_storage::page_table::PageSums;
use sieve_storage::{BlockChecksums, Storage};

/// A block's page table ([`sieve_storage::page_table`]), with what rebuilding metadata from it
/// needs: the table's schema, which every block of the table was written with, and the block's
/// rows.
#[derive(Debug, Clone)]
pub struct BlockPages {
    pub table: Bytes,
    pub schema: SchemaRef,
    pub rows: u64,
    /// The locator named the rows read: the metadata is rebuilt from the table, not read from
    /// the footer.
    pub located: bool,
}

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

impl VerifiedReaderFactory {
    fn reader(
        &self,
        file: PartitionedFile,
        counts: ReadCounts,
        metadata_size_hint: Option<usize>,
    ) -> Result<VerifiedReader> {
        let path = &file.object_meta.location;
        let checksums = file.extension::<BlockChecksums>().cloned().ok_or_else(|| {
            internal_datafusion_err!("block {path} was scanned without its checksums")
        })?;
        Ok(VerifiedReader {
            counts,
            storage: self.storage.clone(),
            cached: self.cached,
            footers: self.footers.clone(),
            pages: file.extension::<BlockPages>().cloned(),
            sums: None,
            meta: file.object_meta,
            checksums,
            metadata_size_hint,
        })
    }

    /// Whether `file` is a block the locator named rows of, with a page table that fits: one
    /// [`Self::located`] reads.
    pub(crate) fn fits(&self, file: &PartitionedFile) -> bool {
        let pages = file.extension::<BlockPages>().filter(|p| p.located);
        pages.is_some_and(|pages| {
            page_table(self.footers.as_ref(), &file.object_meta, pages).is_some()
        })
    }

    /// A reader of a block the locator named rows of, and the Arrow metadata rebuilt from its
    /// page table, for decoding its pages without DataFusion's Parquet scan
    /// ([`crate::scan::page_read`]); None when the block has no page table that fits.
    pub(crate) fn located(
        &self,
        file: PartitionedFile,
        counts: ReadCounts,
    ) -> Result<Option<(VerifiedReader, ArrowReaderMetadata)>> {
        let mut reader = self.reader(file, counts, None)?;
        Ok(reader
            .read_page_table()
            .map(|located| (reader, located.arrow)))
    }
}

/// What a block's reads add to a scan's metrics: bytes fetched from storage, and hits of the
/// data and disk caches.
pub(crate) struct ReadCounts {
    pub bytes_scanned: Count,
    pub cache_hits: Count,
    pub cache_hit_bytes: Count,
    pub disk_hits: Count,
    pub disk_hit_bytes: Count,
}

impl ReadCounts {
    /// Counts registered in `metrics` for `partition`, beside `bytes_scanned` (the Parquet
    /// scan's own, or one of the caller's).
    pub fn new(metrics: &ExecutionPlanMetricsSet, partition: usize, bytes_scanned: Count) -> Self {
        let counter = |name| MetricBuilder::new(metrics).counter(name, partition);
        Self {
            bytes_scanned,
            cache_hits: counter("data_cache_hits"),
            cache_hit_bytes: counter("data_cache_hit_bytes"),
            disk_hits: counter("disk_cache_hits"),
            disk_hit_bytes: counter("disk_cache_hit_bytes"),
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
        let path = file.object_meta.location.clone();
        let scanned = ParquetFileMetrics::new(partition_index, path.as_ref(), metrics);
        let counts = ReadCounts::new(metrics, partition_index, scanned.bytes_scanned);
        Ok(Box::new(self.reader(file, counts, metadata_size_hint)?))
    }
}

pub(crate) struct VerifiedReader {
    storage: Storage,
    cached: bool,
    footers: Arc<FileMetadataCache>,
    /// The block's location and size, as the footer cache checks entries against.
    meta: ObjectMeta,
    checksums: BlockChecksums,
    pages: Option<BlockPages>,
    /// The block's page sums, once its page table is read.
    sums: Option<Arc<PageSums>>,
    counts: ReadCounts,
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
            if self.pages.is_some() && self.sums.is_none() {
                // Not read yet: the footer is read first when the locator did not name the rows,
                // and DataFusion reads the metadata through one reader and, when it probes
                // Parquet bloom filters, the pages through a fresh one.
                self.read_page_table();
            }
            let location = &self.meta.location;
            let widened: Vec<Range<u64>> = ranges.iter().map(|r| self.fetched_range(r)).collect();
            let caches = self.storage.caches();
            let memory = caches.data.as_ref().filter(|_| self.cached);
            let disk = caches.disk.get().filter(|_| self.cached);
            let key = |w: &Range<u64>| (location.to_string(), w.start, w.end);
            let mut found: Vec<Option<Bytes>> = widened
                .iter()
                .map(|w| memory.and_then(|c| c.get(&key(w))))
                .collect();
            for hit in found.iter().flatten() {
                self.counts.cache_hits.add(1);
                self.counts.cache_hit_bytes.add(hit.len());
            }
            if let Some(disk) = disk {
                let wanted: Vec<usize> = (0..found.len()).filter(|&i| found[i].is_none()).collect();
                let read = wanted.iter().map(|&i| disk.clone().get(key(&widened[i])));
                let kept = join_all(read).await;
                for (i, kept) in wanted.into_iter().zip(kept) {
                    let Some(bytes) = kept else { continue };
                    // Checked like bytes from the store: a damaged file is a miss.
                    match self.check(&widened[i], bytes) {
                        Ok(bytes) => {
                            self.counts.disk_hits.add(1);
                            self.counts.disk_hit_bytes.add(bytes.len());
                            if let Some(memory) = memory {
                                memory.insert(key(&widened[i]), bytes.clone());
                            }
                            found[i] = Some(bytes);
                        }
                        Err(e) => {
                            log::warn!("disk cache: {e}; reading it from storage");
                            disk.clone().discard_key(&key(&widened[i])).await;
                        }
                    }
                }
            }
            let missing: Vec<Range<u64>> = (widened.iter().zip(&found))
                .filter(|(_, hit)| hit.is_none())
                .map(|(w, _)| w.clone())
                .collect();
            if !missing.is_empty() {
                let total: u64 = missing.iter().map(|r| r.end - r.start).sum();
                self.counts.bytes_scanned.add(total as usize);
                // Ranges that follow each other (a chunk's dictionary page and its first data
                // page; one column's last page and the next column's first) are fetched as one:
                // a local directory reads every range of `get_ranges` alone. object_store
                // coalesces the rest, on stores that do.
                let mut joined: Vec<Range<u64>> = Vec::with_capacity(missing.len());
                let mut into = Vec::with_capacity(missing.len());
                for range in &missing {
                    match joined.last_mut() {
                        Some(last) if last.end == range.start => last.end = range.end,
                        _ => joined.push(range.clone()),
                    }
                    into.push(joined.len() - 1);
                }
                let whole = (self.storage.store())
                    .get_ranges(location, &joined)
                    .await
                    .map_err(external)?;
                if let Some((range, bytes)) =
                    (joined.iter().zip(&whole)).find(|(r, b)| b.len() as u64 != r.end - r.start)
                {
                    return Err(ParquetError::General(format!(
                        "{location}: {} bytes came back for the range {range:?}",
                        bytes.len()
                    )));
                }
                let mut fetched = missing.iter().zip(into).map(|(range, i)| {
                    let start = (range.start - joined[i].start) as usize;
                    whole[i].slice(start..start + (range.end - range.start) as usize)
                });
                let mut keep = Vec::new();
                for (w, slot) in widened.iter().zip(&mut found) {
                    if slot.is_some() {
                        continue;
                    }
                    let bytes = fetched.next().expect("one range fetched per range asked");
                    // Checked whole, so only verified bytes are kept.
                    let bytes = self.check(w, bytes).map_err(external)?;
                    if let Some(memory) = memory {
                        memory.insert(key(w), bytes.clone());
                    }
                    // Two ranges in one stride widen to the same one: kept once.
                    if let Some(disk) = disk
                        && !keep.iter().any(|(kept, _)| kept == w)
                    {
                        keep.push((w.clone(), disk.clone().insert(key(w), bytes.clone())));
                    }
                    *slot = Some(bytes);
                }
                join_all(keep.into_iter().map(|(_, write)| write)).await;
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
            // A located read takes the page table even when the footer is cached, so that its
            // path does not depend on what ran before (the differential tests compare it with
            // unpruned reads, which take the footer).
            if self.pages.as_ref().is_some_and(|p| p.located)
                && let Some(located) = self.read_page_table()
            {
                return Ok(located.metadata);
            }
            if let Some(metadata) = self.cached(&self.meta) {
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
            let entry = Arc::new(CachedParquetMetaData::new(metadata.clone()));
            self.keep(self.meta.clone(), entry);
            Ok(metadata)
        }
        .boxed()
    }
}

impl VerifiedReader {
    /// The range fetched for `range`: the range itself when it is a page the page table sums,
    /// else `range` widened to checksum strides.
    fn fetched_range(&self, range: &Range<u64>) -> Range<u64> {
        match &self.sums {
            Some(sums) if sums.covers(range) => range.clone(),
            _ => self.checksums.widen(range),
        }
    }

    /// `bytes`, fetched for `fetched` (a [`Self::fetched_range`]), checked.
    fn check(&self, fetched: &Range<u64>, bytes: Bytes) -> sieve_storage::Result<Bytes> {
        let location = self.meta.location.as_ref();
        let by_page = self.sums.as_ref();
        match by_page.and_then(|sums| sums.check(location, fetched, bytes.clone())) {
            Some(checked) => checked,
            None => self.checksums.check(location, fetched, bytes),
        }
    }

    /// The entry kept for `meta` (the block, or its page table's key), if any.
    fn cached_entry(&self, meta: &ObjectMeta) -> Option<Arc<dyn FileMetadata>> {
        self.footers
            .get(&meta.location)
            .filter(|entry| entry.is_valid_for(meta))
            .map(|entry| entry.file_metadata)
    }

    /// The footer kept for the block, if any.
    fn cached(&self, meta: &ObjectMeta) -> Option<Arc<ParquetMetaData>> {
        let entry = self.cached_entry(meta)?;
        let found = entry.as_any().downcast_ref::<CachedParquetMetaData>()?;
        Some(found.parquet_metadata().clone())
    }

    fn keep(&self, meta: ObjectMeta, metadata: Arc<dyn FileMetadata>) {
        let location = meta.location.clone();
        self.footers
            .put(&location, CachedFileMetadataEntry::new(meta, metadata));
    }

    /// The metadata rebuilt from the block's page table, and its page sums taken for this
    /// reader; None without one, or if it does not fit (then the footer is read, as for any
    /// block, and every range checked against the strides).
    fn read_page_table(&mut self) -> Option<Located> {
        let located = page_table(self.footers.as_ref(), &self.meta, self.pages.as_ref()?);
        match &located {
            Some(located) => self.sums = Some(located.sums.clone()),
            // Not parsed again by this reader's later reads.
            None => self.pages = None,
        }
        located
    }
}

/// What `block`'s page table rebuilds, kept in `footers` under `<block>/pages`; None if it does
/// not fit (logged: the footer is read instead).
fn page_table(
    footers: &FileMetadataCache,
    block: &ObjectMeta,
    pages: &BlockPages,
) -> Option<Located> {
    let meta = ObjectMeta {
        location: block.location.clone().join("pages"),
        ..block.clone()
    };
    let kept = footers
        .get(&meta.location)
        .filter(|e| e.is_valid_for(&meta));
    if let Some(located) = kept
        .as_ref()
        .and_then(|e| e.file_metadata.as_any().downcast_ref::<Located>())
    {
        return Some(located.clone());
    }
    let path = block.location.as_ref();
    let rebuilt =
        sieve_storage::page_table::metadata(path, &pages.table, &pages.schema, pages.rows)
            .map_err(|e| e.to_string())
            .and_then(|table| {
                let metadata = Arc::new(table.metadata);
                let arrow =
                    ArrowReaderMetadata::try_new(metadata.clone(), ArrowReaderOptions::new())
                        .map_err(|e| e.to_string())?;
                Ok(Located {
                    metadata,
                    sums: Arc::new(table.sums),
                    arrow,
                })
            });
    match rebuilt {
        Ok(located) => {
            let entry = CachedFileMetadataEntry::new(meta.clone(), Arc::new(located.clone()));
            footers.put(&meta.location, entry);
            Some(located)
        }
        Err(e) => {
            log::warn!("reading the footer of {path}: {e}");
            None
        }
    }
}

/// A located block's metadata and page sums, as the metadata cache keeps them, and the Arrow
/// reader's view of that metadata (its schema converted once, not per lookup).
#[derive(Clone)]
struct Located {
    metadata: Arc<ParquetMetaData>,
    sums: Arc<PageSums>,
    arrow: ArrowReaderMetadata,
}

impl FileMetadata for Located {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn memory_size(&self) -> usize {
        self.metadata.memory_size() + self.sums.memory_size()
    }

    fn extra_info(&self) -> HashMap<String, String> {
        HashMap::from([("page_table".to_string(), "true".to_string())])
    }
}
