//! Verified byte ranges of blocks and locators kept on local disk (`--disk-cache DIR`,
//! `--disk-cache-gib N`), below the in-memory caches, as Databend's table data cache and
//! ClickHouse's filesystem cache keep what they read from object storage: a process reads its hot
//! pages from a local SSD instead of the store, and so does the next process on the same
//! directory after a restart. Blocks and locator files are immutable, so an entry never goes
//! stale; it is bounded in bytes, and the least recently used entries' files are removed to stay
//! under the bound.
//!
//! Two kinds of entry, one format: a block's range a query read (a few KiB to a MiB), and a
//! locator file's whole pages, written as the routing filter's load reads them (hundreds of MB;
//! [`EntryWriter`]). A lookup then reads its locator page from that file ([`DiskCache::get_slice`],
//! one positioned read) instead of sending a ranged GET: a uniform key's page is rarely in
//! memory, and the round trip to the store was most of a present key's pruning time.
//!
//! One file per range, named by the XXH3-128 of its key (block path and range), holding (format
//! version 1):
//!
//! ```text
//! b"SIEVEDC1" | u32 LE key length | key (UTF-8, "<path> <start> <end>") | the range's bytes
//! ```
//!
//! A read checks the magic, the key and the length, and the caller checks the bytes against the
//! block's checksums (or the locator's page checksums) before using them, as it does bytes from
//! the store: a damaged, truncated
//! or foreign file is removed and counts as a miss, never as data. A file is written under a
//! temporary name (`sievedc-<random>.tmp`) and renamed, so a crash leaves no half-written entry
//! (temporary files are removed at the next start). The cache adopts and removes only files
//! named as its entries or temporaries: a directory shared with other files keeps them. One
//! process uses a directory at a time (an exclusive lock on `DIR/.lock`). A read that fetched
//! from the store waits for its disk writes (a local write, after a remote read), so a process
//! that answered has its pages on disk.
//!
//! Written here rather than taken from a crate: the caches made for this (foyer) bring a
//! runtime and an on-disk engine of their own, and this one needs only files, a byte-bounded
//! index (quick_cache, which the memory caches use) and the checksums every read already has.

use std::fs::File;
use std::io::{Read, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Lifecycle, OptionsBuilder, Weighter};

use crate::error::{Result, StorageError};
use crate::read::cache::RangeKey;

const MAGIC: &[u8; 8] = b"SIEVEDC1";
const LOCK: &str = ".lock";
/// Temporary files are `sievedc-<random>.tmp`.
const TEMPORARY_PREFIX: &str = "sievedc-";
const TEMPORARY_SUFFIX: &str = ".tmp";

/// Whether `name` is an entry's file (32 hex digits): the cache adopts, and may remove, only
/// those and its own temporary files, whatever else the directory holds.
fn is_entry(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// An entry's file: its size, and which write put it in place.
#[derive(Clone, Copy)]
struct Held {
    bytes: u64,
    generation: u64,
}

/// Weighs an entry by its file's size.
#[derive(Clone)]
struct FileBytes;

impl Weighter<String, Held> for FileBytes {
    fn weight(&self, _: &String, held: &Held) -> u64 {
        held.bytes.max(1)
    }
}

/// Collects the files of evicted entries, removed once the index is unlocked.
#[derive(Clone)]
struct Evicted;

impl Lifecycle<String, Held> for Evicted {
    type RequestState = Vec<String>;

    fn begin_request(&self) -> Self::RequestState {
        Vec::new()
    }

    fn on_evict(&self, state: &mut Self::RequestState, name: String, _: Held) {
        state.push(name);
    }
}

/// Which write of an entry a [`DiskCache::get_slice`] read: a new write of the same entry puts
/// another file under its name. Not the file's inode, which a file written after a removal may
/// be given again.
#[derive(Debug, Clone, Copy)]
pub struct FileRead(u64);

pub struct DiskCache {
    dir: PathBuf,
    /// File name to size and write: what the directory holds, within the budget.
    index: Cache<String, Held, FileBytes, DefaultHashBuilder, Evicted>,
    /// Numbers the writes put in place.
    writes: AtomicU64,
    /// Held while a file is put in place or removed with its index entry, so that a removal
    /// meant for one write's file never takes a newer one's.
    files: Mutex<()>,
    /// Held while the cache is open.
    _lock: File,
}

impl std::fmt::Debug for DiskCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskCache")
            .field("dir", &self.dir)
            .field("files", &self.index.len())
            .field("bytes", &self.index.weight())
            .finish()
    }
}

fn key_text((path, start, end): &RangeKey) -> String {
    format!("{path} {start} {end}")
}

fn file_name(key: &str) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(key.as_bytes()))
}

/// What an entry's file starts with: the magic, the key's length and the key.
fn file_header(key: &str) -> Vec<u8> {
    let mut header = Vec::with_capacity(MAGIC.len() + 4 + key.len());
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&(key.len() as u32).to_le_bytes());
    header.extend_from_slice(key.as_bytes());
    header
}

impl DiskCache {
    /// Opens (creating it if needed) the cache in `dir`, keeping at most `bytes`: the files
    /// already there are kept, newest first, up to the budget.
    pub fn open(dir: &Path, bytes: u64) -> Result<Self> {
        let failed = |what: &str, e: std::io::Error| {
            StorageError::Invalid(format!("disk cache {}: {what}: {e}", dir.display()))
        };
        std::fs::create_dir_all(dir).map_err(|e| failed("cannot create it", e))?;
        let lock = File::create(dir.join(LOCK)).map_err(|e| failed("cannot lock it", e))?;
        lock.try_lock().map_err(|_| {
            StorageError::Invalid(format!(
                "disk cache {} is in use by another Sieve process",
                dir.display()
            ))
        })?;
        let cache = Self {
            dir: dir.to_path_buf(),
            // Sized for ranges of about 64 KiB. One shard: quick_cache admits no entry larger
            // than its shard's share of the budget, and a locator's pages (hundreds of MB) must
            // fit; the index is asked a few times per lookup, so its one lock is not contended.
            index: Cache::with_options(
                OptionsBuilder::new()
                    .shards(1)
                    .estimated_items_capacity((bytes >> 16).max(64) as usize)
                    .weight_capacity(bytes.max(1))
                    .build()
                    .expect("every option is set"),
                FileBytes,
                DefaultHashBuilder::default(),
                Evicted,
            ),
            writes: AtomicU64::new(0),
            files: Mutex::new(()),
            _lock: lock,
        };
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| failed("cannot list it", e))? {
            let entry = entry.map_err(|e| failed("cannot list it", e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(TEMPORARY_PREFIX) && name.ends_with(TEMPORARY_SUFFIX) {
                // A write a crash interrupted.
                let _ = std::fs::remove_file(entry.path());
                continue;
            }
            if !is_entry(&name) {
                continue;
            }
            if let Ok(meta) = entry.metadata() {
                found.push((meta.modified().ok(), name, meta.len()));
            }
        }
        // Oldest first, so the newest are the most recently used.
        found.sort();
        for (_, name, len) in found {
            cache.index_file(name, len);
        }
        Ok(cache)
    }

    /// Bytes of files held.
    pub fn bytes(&self) -> u64 {
        self.index.weight()
    }

    /// Reads that found their entry, and reads that did not (what `/metrics` reports).
    pub fn hits_and_misses(&self) -> (u64, u64) {
        (self.index.hits(), self.index.misses())
    }

    /// Records a file in the index and removes those it pushed out. (quick_cache reports the
    /// entry an insert replaces as evicted: the same name, whose file is the one just written.)
    fn index_file(&self, name: String, len: u64) {
        let held = Held {
            bytes: len,
            generation: self.writes.fetch_add(1, Ordering::Relaxed),
        };
        for evicted in self.index.insert_with_lifecycle(name.clone(), held) {
            if evicted != name {
                let _ = std::fs::remove_file(self.dir.join(evicted));
            }
        }
        // An entry larger than its share of the budget is not admitted: its file goes too.
        if self.index.peek(&name).is_none() {
            let _ = std::fs::remove_file(self.dir.join(&name));
        }
    }

    /// Whether an entry for `key` is held (its file may still turn out damaged when read).
    pub fn holds(&self, key: &RangeKey) -> bool {
        self.index.peek(&file_name(&key_text(key))).is_some()
    }

    /// The bytes kept for `key`, if its file is there and holds them; the caller checks them
    /// against the block's checksums.
    /// A future that borrows nothing, so reads of several ranges run together.
    pub async fn get(self: Arc<Self>, key: RangeKey) -> Option<Bytes> {
        let whole = key.1..key.2;
        self.get_slice(key, whole).await.map(|(bytes, _)| bytes)
    }

    /// The bytes of `within` (a range inside `key`'s) from the entry for `key`, read from its
    /// file without the rest, and which file they came from; the caller checks them, and
    /// forgets that file with [`Self::discard_read`] if they fail. A future that borrows nothing.
    pub async fn get_slice(
        self: Arc<Self>,
        key: RangeKey,
        within: Range<u64>,
    ) -> Option<(Bytes, FileRead)> {
        let text = key_text(&key);
        let name = file_name(&text);
        let held = self.index.get(&name)?;
        if within.start < key.1 || within.end > key.2 || within.start > within.end {
            return None;
        }
        let cache = self;
        tokio::task::spawn_blocking(move || {
            let path = cache.dir.join(&name);
            let header = file_header(&text);
            let read = || -> std::io::Result<Option<Vec<u8>>> {
                let mut file = File::open(&path)?;
                let mut head = vec![0; header.len()];
                file.read_exact(&mut head)?;
                let meta = file.metadata()?;
                if head != header || meta.len() != header.len() as u64 + (key.2 - key.1) {
                    return Ok(None);
                }
                let mut bytes = vec![0; (within.end - within.start) as usize];
                let at = header.len() as u64 + (within.start - key.1);
                file.read_exact_at(&mut bytes, at)?;
                Ok(Some(bytes))
            };
            let read_as = FileRead(held.generation);
            match read() {
                Ok(Some(bytes)) => Some((Bytes::from(bytes), read_as)),
                _ => {
                    // Gone, unreadable or not this entry: forgotten, so it is written again.
                    cache.discard_write(&name, read_as);
                    None
                }
            }
        })
        .await
        .ok()
        .flatten()
    }

    /// Forgets the entry of `key` whose bytes, read as `read`, failed their checksums, unless its
    /// file was written again since (a routing filter's load rewriting a damaged locator entry
    /// while a lookup read the old one).
    pub async fn discard_read(self: Arc<Self>, key: &RangeKey, read: FileRead) {
        let name = file_name(&key_text(key));
        let _ = tokio::task::spawn_blocking(move || self.discard_write(&name, read)).await;
    }

    /// Forgets and removes the entry `name` if its file is still the one `read` read.
    fn discard_write(&self, name: &str, read: FileRead) {
        let _files = self.lock_files();
        if self
            .index
            .peek(name)
            .is_some_and(|h| h.generation == read.0)
        {
            self.index.remove(name);
            let _ = std::fs::remove_file(self.dir.join(name));
        }
    }

    /// Forgets and removes an entry whose file is damaged (or whose bytes failed the block's
    /// checksums).
    fn discard(&self, name: &str) {
        let _files = self.lock_files();
        self.index.remove(name);
        let _ = std::fs::remove_file(self.dir.join(name));
    }

    fn lock_files(&self) -> std::sync::MutexGuard<'_, ()> {
        // Guards no data, only the order of renames and removals.
        self.files
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Forgets the entry of `key`: its bytes did not pass the block's checksums.
    pub async fn discard_key(self: Arc<Self>, key: &RangeKey) {
        let name = file_name(&key_text(key));
        let _ = tokio::task::spawn_blocking(move || self.discard(&name)).await;
    }

    /// Keeps `bytes` (checked against the block's checksums) for `key`. A failed write (a full
    /// disk) is logged and costs nothing but the entry.
    pub async fn insert(self: Arc<Self>, key: RangeKey, bytes: Bytes) {
        if self.holds(&key) {
            return;
        }
        let written = tokio::task::spawn_blocking(move || {
            let text = key_text(&key);
            let write = || -> std::io::Result<()> {
                let mut entry = self.writer(key)?;
                entry.append(&bytes)?;
                entry.finish()
            };
            if let Err(e) = write() {
                log::warn!("disk cache {}: cannot keep {text}: {e}", self.dir.display());
            }
        })
        .await;
        if let Err(e) = written {
            log::warn!("disk cache write task failed: {e}");
        }
    }

    /// Starts writing the entry for `key`, whose bytes the caller appends in order as they
    /// arrive (checked, as for [`Self::insert`]). Blocking: call it off the runtime.
    pub fn writer(self: &Arc<Self>, key: RangeKey) -> std::io::Result<EntryWriter> {
        let text = key_text(&key);
        // A name of its own per write: two writes of one range do not mix.
        let mut file = tempfile::Builder::new()
            .prefix(TEMPORARY_PREFIX)
            .suffix(TEMPORARY_SUFFIX)
            .tempfile_in(&self.dir)?;
        let header = file_header(&text);
        file.write_all(&header)?;
        Ok(EntryWriter {
            cache: self.clone(),
            name: file_name(&text),
            file,
            header: header.len() as u64,
            want: key.2 - key.1,
            written: 0,
        })
    }
}

/// An entry being written ([`DiskCache::writer`]): kept by [`Self::finish`] only if every byte
/// of its key's range was appended; dropped unfinished, its temporary file is removed.
pub struct EntryWriter {
    cache: Arc<DiskCache>,
    name: String,
    file: tempfile::NamedTempFile,
    header: u64,
    want: u64,
    written: u64,
}

impl EntryWriter {
    /// Writes the next bytes of the range. Blocking.
    pub fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.written + bytes.len() as u64 > self.want {
            return Err(std::io::Error::other("more bytes than the entry's range"));
        }
        self.file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Keeps the entry: renamed into place and counted against the budget. Blocking.
    pub fn finish(self) -> std::io::Result<()> {
        if self.written != self.want {
            return Err(std::io::Error::other(format!(
                "{} of the entry's {} bytes written",
                self.written, self.want
            )));
        }
        let Self {
            cache, name, file, ..
        } = self;
        let _files = cache.lock_files();
        file.persist(cache.dir.join(&name)).map_err(|e| e.error)?;
        cache.index_file(name, self.header + self.want);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64) -> RangeKey {
        ("tables/t/blocks/b.parquet".into(), i * 100, i * 100 + 100)
    }

    #[tokio::test]
    async fn entries_survive_a_restart_and_damage_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(DiskCache::open(dir.path(), 1 << 20).unwrap());
        assert!(DiskCache::open(dir.path(), 1 << 20).is_err(), "locked");
        for i in 0..3 {
            cache
                .clone()
                .insert(key(i), Bytes::from(vec![i as u8; 100]))
                .await;
        }
        assert_eq!(cache.clone().get(key(1)).await.unwrap(), vec![1u8; 100]);
        assert!(cache.clone().get(key(7)).await.is_none());
        drop(cache);

        let cache = Arc::new(DiskCache::open(dir.path(), 1 << 20).unwrap());
        assert_eq!(cache.clone().get(key(2)).await.unwrap(), vec![2u8; 100]);
        // A truncated file is a miss, and is removed.
        let name = file_name(&key_text(&key(0)));
        let path = dir.path().join(&name);
        let contents = std::fs::read(&path).unwrap();
        std::fs::write(&path, &contents[..contents.len() - 1]).unwrap();
        assert!(cache.clone().get(key(0)).await.is_none());
        assert!(!path.exists());
        // A file holding another key's entry is a miss too.
        let other = dir.path().join(file_name(&key_text(&key(1))));
        std::fs::copy(&other, dir.path().join(file_name(&key_text(&key(2))))).unwrap();
        assert!(cache.clone().get(key(2)).await.is_none());
    }

    #[tokio::test]
    async fn the_budget_bounds_the_files_kept() {
        let dir = tempfile::tempdir().unwrap();
        let budget = 10_000;
        // Not the cache's: never adopted, counted or removed.
        let foreign = dir.path().join("notes.txt");
        std::fs::write(&foreign, vec![b'x'; 50_000]).unwrap();
        let cache = Arc::new(DiskCache::open(dir.path(), budget).unwrap());
        for i in 0..500 {
            cache
                .clone()
                .insert(key(i), Bytes::from(vec![0u8; 100]))
                .await;
        }
        let on_disk = || -> u64 {
            std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap())
                .filter(|e| is_entry(&e.file_name().to_string_lossy()))
                .map(|e| e.metadata().unwrap().len())
                .sum()
        };
        assert!(on_disk() <= budget, "{} bytes on disk", on_disk());
        // The same range twice at once (two readers of one page): its file stays.
        let page = || Bytes::from(vec![7u8; 100]);
        futures::join!(
            cache.clone().insert(key(1000), page()),
            cache.clone().insert(key(1000), page())
        );
        assert_eq!(cache.clone().get(key(1000)).await.unwrap(), page());
        assert!(cache.bytes() <= budget);
        assert!(cache.bytes() > budget / 2, "{}", cache.bytes());
        drop(cache);
        // Reopened with a smaller budget, it removes what no longer fits.
        let cache = DiskCache::open(dir.path(), budget / 4).unwrap();
        assert!(on_disk() <= budget / 4, "{} bytes on disk", on_disk());
        assert!(cache.bytes() <= budget / 4);
        assert!(foreign.exists());
    }

    #[tokio::test]
    async fn an_entry_written_in_parts_is_read_in_slices() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(DiskCache::open(dir.path(), 1 << 20).unwrap());
        let whole: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
        let key: RangeKey = ("tables/t/locators/g.loc".into(), 100, 3100);
        let mut entry = cache.writer(key.clone()).unwrap();
        entry.append(&whole[..1000]).unwrap();
        entry.append(&whole[1000..]).unwrap();
        assert!(entry.append(&[0]).is_err(), "past the range");
        entry.finish().unwrap();
        assert!(cache.holds(&key));
        let (slice, read) = cache
            .clone()
            .get_slice(key.clone(), 1124..2148)
            .await
            .unwrap();
        assert_eq!(slice, whole[1024..2048]);
        // Written again since that read: a discard of what it read leaves the new file.
        let mut again = cache.writer(key.clone()).unwrap();
        again.append(&whole).unwrap();
        again.finish().unwrap();
        cache.clone().discard_read(&key, read).await;
        assert!(cache.holds(&key));
        let (_, read) = cache
            .clone()
            .get_slice(key.clone(), 100..200)
            .await
            .unwrap();
        cache.clone().discard_read(&key, read).await;
        assert!(!cache.holds(&key));
        let mut entry = cache.writer(key.clone()).unwrap();
        entry.append(&whole).unwrap();
        entry.finish().unwrap();
        assert!(
            cache
                .clone()
                .get_slice(key.clone(), 50..200)
                .await
                .is_none()
        );
        // Unfinished or short, an entry is not kept, and leaves no file behind.
        let short: RangeKey = ("tables/t/locators/h.loc".into(), 0, 10);
        let mut entry = cache.writer(short.clone()).unwrap();
        entry.append(&[1; 5]).unwrap();
        assert!(entry.finish().is_err());
        drop(cache.writer(short.clone()).unwrap());
        assert!(!cache.holds(&short));
        let files = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, 2, "the lock and one entry");
        // One larger than the budget is not kept either.
        let large: RangeKey = ("tables/t/locators/i.loc".into(), 0, 2 << 20);
        let mut entry = cache.writer(large.clone()).unwrap();
        entry.append(&vec![0; 2 << 20]).unwrap();
        entry.finish().unwrap();
        assert!(!cache.holds(&large));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
