//! Caches shared by every query on one storage: what each table's newest version was last found
//! to be, decoded segments (immutable once written) and the block lists built from them per
//! table version, opened sidecar entries, verified locator pages and verified byte ranges of
//! blocks, each bounded in bytes. A commit makes a query fetch its one new segment, not the
//! table's every segment again; a lookup of a hot key reads its pages from memory.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use sieve_index::SidecarColumn;

use crate::attached_index::RowGroupFilters;
use crate::meta::block_list::BlockList;
use crate::meta::segment::Segment;
use crate::meta::snapshot::{KnownLatest, Snapshot};
use crate::meta::table_def::TableDef;
use crate::read::disk_cache::DiskCache;

/// The sidecar cache's default budget. A point query on a column that min/max cannot prune probes
/// every block's sidecar, so this budget decides whether such queries on a big table stay warm
/// (1B rows of t10b with binary_fuse8 on both columns have about 2.3 GB of sidecars); the CLI
/// passes its `sidecar_cache_mib` setting down ([`crate::Storage::with_caches`]).
pub const DEFAULT_SIDECAR_CACHE_BYTES: u64 = 256 << 20;

/// Locator pages kept: a lookup reads at most 2 KiB per group, so this holds the pages of about
/// 64k (key, group) lookups — a warm working set of a few thousand point queries at a billion
/// rows (8 groups as `sieve load` writes them) — in a fixed budget beside the sidecars'.
const LOCATOR_PAGE_BYTES: u64 = 128 << 20;

/// Decoded segments and the block lists built from them (one per table version) are kept within
/// a budget of bytes each. Kept by count (4,096 segments, 64 lists), a table of 5-row commits
/// outgrew the segments, so each new version fetched the evicted ones again (thousands of GETs
/// per read on MinIO), and 64 lists of 48,000 blocks held gigabytes. t10b's 10,000 blocks are a
/// few MB of either.
const SEGMENT_BYTES: u64 = 256 << 20;
const BLOCK_LIST_BYTES: u64 = 256 << 20;

/// Segments and block lists are cached by path or table id, and checksum or version.
pub type MetaKey = (String, u64);

/// Weighs a decoded segment by what it holds in memory (plus the key).
#[derive(Clone)]
pub struct SegmentBytes;

impl Weighter<MetaKey, Arc<Segment>> for SegmentBytes {
    fn weight(&self, key: &MetaKey, segment: &Arc<Segment>) -> u64 {
        segment.memory_size() + key.0.len() as u64 + 64
    }
}

/// Weighs a block list by what it holds in memory.
#[derive(Clone)]
pub struct BlockListBytes;

impl Weighter<MetaKey, Arc<BlockList>> for BlockListBytes {
    fn weight(&self, key: &MetaKey, list: &Arc<BlockList>) -> u64 {
        list.memory_size() + key.0.len() as u64 + 64
    }
}
/// Tables whose newest version is remembered.
const TABLES: usize = 1024;

/// Sidecar entries are cached by sidecar path and column.
pub type EntryKey = (String, String);

/// Weighs an opened sidecar entry by its payload's bytes (plus a little for the rest, so that no
/// entry weighs nothing).
#[derive(Clone)]
pub struct EntryBytes;

impl Weighter<EntryKey, Arc<SidecarColumn>> for EntryBytes {
    fn weight(&self, key: &EntryKey, entry: &Arc<SidecarColumn>) -> u64 {
        entry.payload_len + (key.0.len() + key.1.len()) as u64 + 64
    }
}

/// The data cache's default budget: the pages a few thousand hot lookups read (a t10b lookup
/// reads about 100 KB of c2 and c1 pages); the CLI passes its `data_cache_mib` setting down.
pub const DEFAULT_DATA_CACHE_BYTES: u64 = 256 << 20;

/// Locator pages are cached by locator path and the read's byte range (a lookup reads one page
/// or two from the same start); block bytes by block path and the range read (checksum strides).
pub type RangeKey = (String, u64, u64);

/// Weighs verified bytes by their length (plus the key).
#[derive(Clone)]
pub struct RangeBytes;

impl Weighter<RangeKey, Bytes> for RangeBytes {
    fn weight(&self, key: &RangeKey, bytes: &Bytes) -> u64 {
        (bytes.len() + key.0.len()) as u64 + 16
    }
}

/// Weighs an attached index's row group filters by the bytes they were read from (plus the
/// key).
#[derive(Clone)]
pub struct FiltersBytes;

impl Weighter<RangeKey, Arc<RowGroupFilters>> for FiltersBytes {
    fn weight(&self, key: &RangeKey, filters: &Arc<RowGroupFilters>) -> u64 {
        (filters.bytes + key.0.len()) as u64 + 64
    }
}

pub struct Caches {
    /// By table directory.
    pub latest: Cache<String, KnownLatest>,
    /// Snapshots named pointers carried, by table directory, until the table's first check
    /// ([`crate::Table::snapshot`]).
    pub pointer_hints: Cache<String, Snapshot>,
    /// Definitions this process has fetched, by path, as last found with their ETags (None
    /// while the first fetch runs, or when it found none): only a first fetch asks for the
    /// named pointer too, a later one is a conditional GET (the definition, unchanged, is not
    /// sent again), and a table's definition, written once when it is made, serves a caller
    /// that names its id ([`crate::Catalog::table_known`]).
    pub definitions_fetched: Cache<String, Option<(TableDef, Option<String>)>>,
    /// By segment path and checksum.
    pub segments: Cache<MetaKey, Arc<Segment>, SegmentBytes>,
    /// By table id and version.
    pub block_lists: Cache<MetaKey, Arc<BlockList>, BlockListBytes>,
    pub sidecars: Cache<EntryKey, Arc<SidecarColumn>, EntryBytes>,
    /// Attached indexes' row group filters, by part path and the range read
    /// ([`crate::AttachedIndexes::filters`]), within a budget of their own as large as the
    /// sidecars'.
    pub attached_filters: Cache<RangeKey, Arc<RowGroupFilters>, FiltersBytes>,
    /// Only pages whose checksums held: a damaged read is never cached.
    pub locator_pages: Cache<RangeKey, Bytes, RangeBytes>,
    /// Byte ranges of blocks (widened to checksum strides) whose checksums held. Blocks are
    /// immutable, so an entry never goes stale; None when the budget is 0.
    pub data: Option<Cache<RangeKey, Bytes, RangeBytes>>,
    /// The same, on local disk below the memory ([`crate::Storage::with_disk_cache`]).
    pub disk: OnceLock<Arc<DiskCache>>,
}

impl Caches {
    pub fn new(sidecar_bytes: u64, data_bytes: u64) -> Self {
        Self {
            latest: Cache::new(TABLES),
            pointer_hints: Cache::new(TABLES),
            definitions_fetched: Cache::new(TABLES),
            // Sized for segments of about 16 KiB and lists of about 1 MiB.
            segments: Cache::with_weighter(
                (SEGMENT_BYTES >> 14) as usize,
                SEGMENT_BYTES,
                SegmentBytes,
            ),
            block_lists: Cache::with_weighter(
                (BLOCK_LIST_BYTES >> 20) as usize,
                BLOCK_LIST_BYTES,
                BlockListBytes,
            ),
            // Sized for entries of about a MiB each.
            sidecars: Cache::with_weighter(
                (sidecar_bytes >> 20).max(1024) as usize,
                sidecar_bytes,
                EntryBytes,
            ),
            // Sized for a row group's of about 256 KiB (100,000 keys).
            attached_filters: Cache::with_weighter(
                (sidecar_bytes >> 18).max(1024) as usize,
                sidecar_bytes,
                FiltersBytes,
            ),
            locator_pages: Cache::with_weighter(
                (LOCATOR_PAGE_BYTES / 2048) as usize,
                LOCATOR_PAGE_BYTES,
                RangeBytes,
            ),
            // Sized for ranges of about 64 KiB.
            data: (data_bytes > 0).then(|| {
                Cache::with_weighter((data_bytes >> 16).max(64) as usize, data_bytes, RangeBytes)
            }),
            disk: OnceLock::new(),
        }
    }
}

impl Caches {
    /// Bytes of index held: opened sidecar entries, attached indexes' filters and verified
    /// locator pages. What placement spreads among workers, each caching the index of the
    /// blocks it owns.
    pub fn index_bytes(&self) -> u64 {
        self.sidecars.weight() + self.attached_filters.weight() + self.locator_pages.weight()
    }
}

impl std::fmt::Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches")
            .field("latest", &self.latest.len())
            .field("segments", &self.segments.len())
            .field("block_lists", &self.block_lists.len())
            .field("sidecars", &self.sidecars.len())
            .field("sidecar_bytes", &self.sidecars.weight())
            .field("attached_filter_bytes", &self.attached_filters.weight())
            .field("locator_page_bytes", &self.locator_pages.weight())
            .field("data_bytes", &self.data.as_ref().map_or(0, |d| d.weight()))
            .field("disk", &self.disk.get())
            .finish()
    }
}
