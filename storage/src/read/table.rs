//! A handle on one table's data: its snapshots, block list and sidecars.
//!
//! `tables/<id>/blocks/<block>.parquet` and `.sidecar`, `tables/<id>/locators/<group>.loc`,
//! `tables/<id>/segments/<segment>.arrow`,
//! `tables/<id>/snapshots/…` (see [`crate::meta::snapshot`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use sieve_index::{
    ColumnLocator, IndexError, KeyFilter, KeyFilterBuilder, Location, LocatorHeader, SidecarColumn,
    SidecarEntry, SidecarHeader,
};

use crate::catalog;
use crate::error::{Result, StorageError};
use crate::location::Storage;
use crate::meta::block_list::{BlockList, LocatorGroup};
use crate::meta::checked_json;
use crate::meta::copied_files::{CopiedFiles, copies_path};
use crate::meta::segment::{Segment, decode_segment};
use crate::meta::snapshot::{self, SegmentRef, Snapshot};
use crate::meta::table_def::TableDef;
use crate::read::cache::RangeKey;
use crate::read::disk_cache::{DiskCache, EntryWriter};
use crate::read::locator_pages;

/// Segment GETs (of sidecars and locators) in flight at once for one query.
const SEGMENT_FETCH_CONCURRENCY: usize = 32;

#[derive(Debug, Clone)]
pub struct Table {
    storage: Storage,
    def: Arc<TableDef>,
}

/// The first read of a sidecar: the directory of a table with up to about 90 indexed columns,
/// and the whole sidecar of a small block.
const SIDECAR_HEAD_BYTES: u64 = 4096;

/// Bytes of a locator file read at once to build a group's key filter: a few shards, so the
/// memory a node filter's build holds is bounded whatever the group's tier.
const KEY_FILTER_READ: u64 = 16 << 20;

/// The disk cache's key for a locator file's pages: the file, from its first page to its last.
fn pages_key(path: &Path, header: &LocatorHeader) -> RangeKey {
    let pages = header.pages_range();
    (path.to_string(), pages.start, pages.end)
}

/// One column's sidecar entries for a list of blocks, and what fetching them cost.
#[derive(Debug, Default)]
pub struct SidecarFetch {
    /// Parallel to the requested blocks; None where the sidecar is missing or unreadable or has
    /// no entry for the column, which means "cannot prune this block", never an error.
    pub entries: Vec<Option<Arc<SidecarColumn>>>,
    pub bytes_fetched: u64,
    pub cache_hits: u64,
    pub unreadable: u64,
}

impl Table {
    pub fn new(storage: Storage, def: TableDef) -> Self {
        Self {
            storage,
            def: Arc::new(def),
        }
    }

    pub fn def(&self) -> &TableDef {
        &self.def
    }

    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    pub fn dir(&self) -> Path {
        Path::from("tables").join(self.def.id.as_str())
    }

    pub fn block_path(&self, block: &str) -> Path {
        self.dir().join("blocks").join(format!("{block}.parquet"))
    }

    pub fn sidecar_path(&self, block: &str) -> Path {
        self.dir().join("blocks").join(format!("{block}.sidecar"))
    }

    /// See [`crate::meta::snapshot::named_pointer_snapshot`].
    pub fn named_pointer_path(&self) -> Path {
        catalog::pointer_path(&self.def.database, &self.def.name)
    }

    pub fn locator_path(&self, group: &str) -> Path {
        self.dir().join("locators").join(format!("{group}.loc"))
    }

    pub fn segment_path(&self, segment: &str) -> Path {
        self.dir().join("segments").join(format!("{segment}.arrow"))
    }

    /// Uploads a segment file under a fresh name; no snapshot names it yet.
    pub(crate) async fn put_segment(&self, bytes: Bytes) -> Result<SegmentRef> {
        let segment = SegmentRef::new(uuid::Uuid::new_v4().simple().to_string(), &bytes);
        self.storage
            .store()
            .put(&self.segment_path(&segment.name), PutPayload::from(bytes))
            .await?;
        Ok(segment)
    }

    /// The files COPY INTO loaded as of `snapshot` ([`crate::meta::copied_files`]).
    pub async fn copied_files(&self, snapshot: &Snapshot) -> Result<CopiedFiles> {
        let Some(list) = &snapshot.copies else {
            return Ok(CopiedFiles::default());
        };
        let path = copies_path(&self.dir(), &list.name);
        let bytes = self.storage.store().get(&path).await?.bytes().await?;
        list.verify(path.as_ref(), &bytes)?;
        checked_json::decode(path.as_ref(), &bytes)
    }

    /// Writes a list of copied files, to be named by a commit's snapshot.
    pub async fn put_copied_files(&self, files: &CopiedFiles) -> Result<SegmentRef> {
        let bytes = checked_json::encode(files)?;
        let list = SegmentRef::new(uuid::Uuid::new_v4().simple().to_string(), &bytes);
        self.storage
            .store()
            .put(
                &copies_path(&self.dir(), &list.name),
                PutPayload::from(bytes),
            )
            .await?;
        Ok(list)
    }

    /// The newest snapshot, as a check sent after this call began sees it: every commit made
    /// before is in it, a DROP too (as [`StorageError::UnknownTable`]). Concurrent callers share
    /// checks ([`crate::read::freshness`]).
    pub async fn snapshot(&self) -> Result<Snapshot> {
        let key = self.dir().to_string();
        let table = self.clone();
        let checked = self
            .storage
            .snapshots()
            .latest(&key, move || {
                let table = table.clone();
                async move { table.check_newest().await }
            })
            .await;
        checked.map_err(|e| match e.root() {
            StorageError::Dropped(_) => {
                StorageError::UnknownTable(self.def.database.clone(), self.def.name.clone())
            }
            _ => e,
        })
    }

    /// One check of the newest snapshot. The first in a process, with the snapshot the table's
    /// named pointer carried, also fetches that snapshot's segments: its answer then finds them
    /// cached (or fetches what differs). Both go out in one poll of one task, side by side.
    async fn check_newest(&self) -> Result<Snapshot> {
        let (storage, dir) = (&self.storage, self.dir());
        let caches = storage.caches();
        let key = dir.to_string();
        let hint = caches.pointer_hints.remove(&key).map(|(_, hint)| hint);
        match hint.filter(|_| caches.latest.get(&key).is_none()) {
            Some(hinted) => {
                let (checked, prefetched) =
                    futures::join!(snapshot::latest(storage, &dir), self.segments(&hinted));
                if let Err(e) = prefetched {
                    log::debug!("prefetching the segments of {key}: {e}");
                }
                checked
            }
            None => snapshot::latest(storage, &dir).await,
        }
    }

    /// Marks the table dropped ([`snapshot::commit_drop`]): its last commit.
    pub(crate) async fn commit_drop(&self) -> Result<()> {
        snapshot::commit_drop(&self.storage, &self.dir(), &self.named_pointer_path()).await
    }

    /// Commits `next` unless another commit took its version ([`snapshot::try_put`]).
    pub(crate) async fn try_put(&self, next: Snapshot) -> Result<Option<Snapshot>> {
        snapshot::try_put(&self.storage, &self.dir(), &self.named_pointer_path(), next).await
    }

    /// Leaves the snapshot a named pointer carried for this table's first check.
    pub(crate) fn leave_pointer_hint(&self, hinted: Snapshot) {
        let key = self.dir().to_string();
        if self.storage.caches().latest.get(&key).is_none() {
            self.storage.caches().pointer_hints.insert(key, hinted);
        }
    }

    /// The newest snapshot, or one a check sent at most `max_staleness` ago found, which costs
    /// no request: for readers who chose a bounded staleness (`SET sieve.max_staleness_ms`).
    pub async fn snapshot_within(&self, max_staleness: Duration) -> Result<Snapshot> {
        match snapshot::known_within(&self.storage, &self.dir(), max_staleness) {
            Some(snapshot) => Ok(snapshot),
            None => self.snapshot().await,
        }
    }

    /// Every block of a committed version, as a distributed query's workers read the one its
    /// coordinator saw: from the cache without any request when this process has listed that
    /// version before (versions never change), else its snapshot is read first.
    pub async fn blocks_at(&self, version: u64) -> Result<Arc<BlockList>> {
        let key = (self.def.id.clone(), version);
        if let Some(found) = self.storage.caches().block_lists.get(&key) {
            return Ok(found);
        }
        let snapshot = match snapshot::read(&self.storage, &self.dir(), version).await {
            Err(StorageError::ObjectStore(object_store::Error::NotFound { .. })) => {
                // Asked by a coordinator (a worker's lookup, a pinned scan) that saw a version
                // this storage never held: no answer from another version stands in for it.
                return Err(StorageError::Invalid(format!(
                    "version {version} of {}.{} is not committed in this storage: a coordinator \
                     and its workers must share one storage",
                    self.def.database, self.def.name
                )));
            }
            read => read?,
        };
        self.blocks(&snapshot).await
    }

    /// Every block of a snapshot. Segments are decoded once and cached, and so is the list built
    /// from them per version: after a commit only the new segment is fetched.
    pub async fn blocks(&self, snapshot: &Snapshot) -> Result<Arc<BlockList>> {
        let caches = self.storage.caches();
        let key = (self.def.id.clone(), snapshot.version);
        if let Some(found) = caches.block_lists.get(&key) {
            return Ok(found);
        }
        let segments = self.segments(snapshot).await?;
        let list = Arc::new(BlockList::new(&self.def, &segments)?);
        caches.block_lists.insert(key, list.clone());
        Ok(list)
    }

    /// The decoded segments of a snapshot, each fetched unless cached.
    async fn segments(&self, snapshot: &Snapshot) -> Result<Vec<Arc<Segment>>> {
        // Owned items and owned futures: a borrowed closure argument makes the future not Send.
        futures::stream::iter(snapshot.segments.clone())
            .map(|segment| {
                let (storage, def, path) = (
                    self.storage.clone(),
                    self.def.clone(),
                    self.segment_path(&segment.name),
                );
                async move {
                    let key = (path.to_string(), segment.xxh3);
                    if let Some(found) = storage.caches().segments.get(&key) {
                        return Ok(found);
                    }
                    let bytes = storage.store().get(&path).await?.bytes().await?;
                    segment.verify(path.as_ref(), &bytes)?;
                    let decoded = Arc::new(decode_segment(path.as_ref(), &def, bytes)?);
                    storage.caches().segments.insert(key, decoded.clone());
                    Ok::<_, StorageError>(decoded)
                }
            })
            .buffered(SEGMENT_FETCH_CONCURRENCY)
            .try_collect()
            .await
    }

    /// Fetches (through the shared byte-bounded cache) `column`'s sidecar entry for the blocks
    /// `which` of `blocks`, at most [`SEGMENT_FETCH_CONCURRENCY`] at a time. A query probes one
    /// or two columns, and a block's sidecar holds every indexed column: reading only the entry
    /// it needs halves a cold query's bytes on a table indexed on two columns. The segment says
    /// where each entry lies, so that is one exact ranged read per block (none for an entry with
    /// no payload); only blocks of segments written before it kept that record cost a read of
    /// the sidecar's header first.
    pub async fn sidecar_entries(
        &self,
        blocks: &BlockList,
        which: &[usize],
        column: &str,
    ) -> SidecarFetch {
        if !self.def.options.index_columns.iter().any(|c| c == column) {
            return SidecarFetch {
                entries: vec![None; which.len()],
                ..Default::default()
            };
        }
        // Cached entries first, without a future per block: a warm query on a table of many
        // blocks is mostly this loop.
        let cache = &self.storage.caches().sidecars;
        let mut fetch = SidecarFetch {
            entries: Vec::with_capacity(which.len()),
            ..Default::default()
        };
        let mut misses = Vec::new();
        // The key is the sidecar's path, formatted here rather than built as a `Path` per block.
        let blocks_dir = self.dir().join("blocks");
        for (slot, &i) in which.iter().enumerate() {
            let key = (
                format!("{blocks_dir}/{}.sidecar", blocks.sidecar_name(i)),
                column.to_string(),
            );
            let found = cache.get(&key);
            fetch.cache_hits += u64::from(found.is_some());
            if found.is_none() {
                misses.push((slot, i, key));
            }
            fetch.entries.push(found);
        }
        let fetched: Vec<_> = futures::stream::iter(misses)
            .map(|(slot, i, key)| async move {
                let path = self.sidecar_path(blocks.sidecar_name(i));
                debug_assert_eq!(path.as_ref(), key.0);
                let fetched = match blocks.sidecar_entry(i, column) {
                    Some(Ok(entry)) => self.fetch_located(&path, &entry).await,
                    Some(Err(e)) => Err(e),
                    None => self.fetch_entry(&path, column).await,
                };
                match fetched {
                    Ok((entry, bytes)) => {
                        let entry = entry.map(Arc::new);
                        if let Some(entry) = &entry {
                            cache.insert(key, entry.clone());
                        }
                        (slot, entry, bytes, false)
                    }
                    Err(e) => {
                        log::warn!("cannot use sidecar {path}, the block will be read: {e}");
                        (slot, None, 0, true)
                    }
                }
            })
            .buffer_unordered(SEGMENT_FETCH_CONCURRENCY)
            .collect()
            .await;
        for (slot, entry, bytes, unreadable) in fetched {
            fetch.unreadable += u64::from(unreadable);
            fetch.bytes_fetched += bytes;
            fetch.entries[slot] = entry;
        }
        fetch
    }

    /// A locator group's [`KeyFilter`]: its locator file read [`KEY_FILTER_READ`] bytes at a time
    /// and reduced to the keys' fingerprints. An error (a missing or damaged file) means "the
    /// group may hold any key". The reduction is CPU-bound, so it runs on a blocking thread, off
    /// the runtime the queries' I/O shares. With a disk cache the file's pages are kept there as
    /// they are read and checked (one entry, [`pages_key`]), so that [`Self::locate`] reads a
    /// page locally, and a restarted process loads the filter from disk.
    pub async fn key_filter(&self, group: &str, header: &Arc<LocatorHeader>) -> Result<KeyFilter> {
        let path = self.locator_path(group);
        let disk = self.storage.caches().disk.get().cloned();
        let kept = pages_key(&path, header);
        if let Some(disk) = disk.as_ref().filter(|disk| disk.holds(&kept)) {
            match self
                .reduce_locator(&path, header, Some((disk, &kept)), None)
                .await
            {
                Ok(filter) => return Ok(filter),
                Err(e) => {
                    log::warn!("disk cache: locator {path}: {e}; reading it from storage");
                    disk.clone().discard_key(&kept).await;
                }
            }
        }
        let mirror = match disk {
            Some(disk) => {
                let key = kept.clone();
                match tokio::task::spawn_blocking(move || disk.writer(key)).await? {
                    Ok(writer) => Some(writer),
                    Err(e) => {
                        log::warn!("disk cache: cannot keep locator {path}: {e}");
                        None
                    }
                }
            }
            None => None,
        };
        self.reduce_locator(&path, header, None, mirror).await
    }

    /// [`Self::key_filter`]'s reads: from the disk cache's entry `local` when given (failing if
    /// it no longer holds it), else from storage, appending what it read to `mirror`.
    async fn reduce_locator(
        &self,
        path: &Path,
        header: &Arc<LocatorHeader>,
        local: Option<(&Arc<DiskCache>, &RangeKey)>,
        mut mirror: Option<EntryWriter>,
    ) -> Result<KeyFilter> {
        let damaged = |e: IndexError| StorageError::Damaged(path.to_string(), e.to_string());
        let mut builder = KeyFilterBuilder::new(header.clone());
        // The mirror's next byte: it is kept only if the reads follow the file's pages in order.
        let mut next = header.pages_range().start;
        while let Some(range) = builder.next_read(KEY_FILTER_READ) {
            let bytes = match local {
                // Gone meanwhile (a lookup found it damaged): the caller reads from storage and
                // keeps the file again.
                Some((disk, key)) => match disk.clone().get_slice(key.clone(), range.clone()).await
                {
                    Some((bytes, _)) => bytes,
                    None => return Err(StorageError::Invalid(format!("{key:?} left it"))),
                },
                None => self.storage.store().get_range(path, range.clone()).await?,
            };
            let in_order = range.start == next;
            next = range.end;
            let (added, kept_mirror) = tokio::task::spawn_blocking(move || {
                let added = builder.add(&bytes).map(|()| builder);
                // Only checked bytes are kept.
                let mirror = mirror
                    .filter(|_| added.is_ok() && in_order)
                    .and_then(|mut m| m.append(&bytes).ok().map(|()| m));
                (added, mirror)
            })
            .await?;
            mirror = kept_mirror;
            builder = added.map_err(damaged)?;
        }
        if let Some(mirror) = mirror
            && let Err(e) = tokio::task::spawn_blocking(move || mirror.finish()).await?
        {
            log::warn!("disk cache: cannot keep locator {path}: {e}");
        }
        Ok(builder.finish())
    }

    /// Where each of `hashes` may be in `column` of a locator group: one ranged read of at most
    /// two pages per hash, all sent at once, unless the pages are cached in memory or the disk
    /// cache holds the file's pages ([`Self::key_filter`]). Returns the bytes read from storage
    /// too. An error (a missing or damaged file) means the group's blocks must be probed another
    /// way.
    pub async fn locate(
        &self,
        group: &LocatorGroup,
        header: &LocatorHeader,
        column: &ColumnLocator,
        hashes: &[u64],
    ) -> Result<(Vec<Location>, u64)> {
        let path = self.locator_path(&group.name);
        let kept = pages_key(&path, header);
        let disk = (self.storage.caches().disk.get()).filter(|disk| disk.holds(&kept));
        let disk = disk.map(|disk| (disk, &kept));
        locator_pages::locate(&self.storage, &path, 0, header, column, hashes, disk).await
    }

    /// A locator group's whole file, for tools that probe many keys at once (a benchmark's
    /// false-read count) rather than a query's few.
    pub async fn read_locator(&self, group: &LocatorGroup) -> Result<Bytes> {
        let path = self.locator_path(&group.name);
        Ok(self.storage.store().get(&path).await?.bytes().await?)
    }

    /// An entry whose place the segment recorded: exactly its payload's bytes.
    async fn fetch_located(
        &self,
        path: &Path,
        entry: &SidecarEntry,
    ) -> Result<(Option<SidecarColumn>, u64)> {
        let range = entry.range();
        if range.is_empty() {
            // A min/max-only entry; an empty range is not a valid GET.
            return Ok((Some(entry.open(Bytes::new())?), 0));
        }
        let payload = self
            .storage
            .store()
            .get_range(path, range.start as u64..range.end as u64)
            .await?;
        let fetched = payload.len() as u64;
        Ok((Some(entry.open(payload)?), fetched))
    }

    /// One column's entry of a sidecar whose segment has no record of it, and the bytes read for
    /// it: the first
    /// [`SIDECAR_HEAD_BYTES`], then the payload's range unless that first read already holds it.
    async fn fetch_entry(&self, path: &Path, column: &str) -> Result<(Option<SidecarColumn>, u64)> {
        let store = self.storage.store();
        let mut head = store.get_range(path, 0..SIDECAR_HEAD_BYTES).await?;
        let mut fetched = head.len() as u64;
        let header = match SidecarHeader::parse(&head) {
            Err(IndexError::Truncated(_)) if fetched == SIDECAR_HEAD_BYTES => {
                // A directory longer than the first read (very many or very long column names).
                head = store.get(path).await?.bytes().await?;
                fetched += head.len() as u64;
                SidecarHeader::parse(&head)?
            }
            parsed => parsed?,
        };
        let Some(entry) = header.entry(column) else {
            return Ok((None, fetched));
        };
        let range = entry.range();
        if range.end <= head.len() {
            return Ok((Some(entry.open(head.slice(range))?), fetched));
        }
        let (entry, payload_bytes) = self.fetch_located(path, entry).await?;
        Ok((entry, fetched + payload_bytes))
    }
}
