//! A key's locator pages, read by range and kept: for Sieve's own locator groups (a file each)
//! and for an attached index part's locator (at an offset inside the part), so both are read
//! and cached the same way.

use std::sync::Arc;

use bytes::Bytes;
use object_store::ObjectStoreExt;
use object_store::path::Path;
use sieve_index::LocatorHeader;
use sieve_index::locator::{ColumnLocator, Location};

use crate::error::{Result, StorageError};
use crate::location::Storage;
use crate::read::cache::RangeKey;
use crate::read::disk_cache::DiskCache;

/// Where each of `hashes` may be in `column` of the locator whose header is `header`, at byte
/// `base` of the object at `path`: one ranged read of at most two pages per hash, all sent at
/// once, unless the pages are in the memory cache or in `disk` (the disk cache, holding the
/// locator's pages under its key). Returns the bytes read from storage too. An error (a missing
/// object or a damaged page) means the blocks must be probed another way.
pub(crate) async fn locate(
    storage: &Storage,
    path: &Path,
    base: u64,
    header: &LocatorHeader,
    column: &ColumnLocator,
    hashes: &[u64],
    disk: Option<(&Arc<DiskCache>, &RangeKey)>,
) -> Result<(Vec<Location>, u64)> {
    let cache = &storage.caches().locator_pages;
    let reads = hashes.iter().map(|&hash| async move {
        let range = header.lookup_range(column, hash);
        let at = base + range.start..base + range.end;
        let key = (path.to_string(), at.start, at.end);
        if let Some(pages) = cache.get(&key) {
            return Ok((header.locate(column, hash, &pages)?, 0));
        }
        if let Some((disk, kept)) = disk
            && let Some((pages, read)) = disk.clone().get_slice(kept.clone(), range.clone()).await
        {
            match header.locate(column, hash, &pages) {
                Ok(location) => {
                    cache.insert(key, pages);
                    return Ok((location, 0));
                }
                Err(e) => {
                    log::warn!("disk cache: locator {path}: {e}; reading it from storage");
                    disk.clone().discard_read(kept, read).await;
                }
            }
        }
        let pages = storage.store().get_range(path, at).await?;
        let location = header.locate(column, hash, &pages)?;
        let fetched = pages.len() as u64;
        // A copy: a response's bytes may be a slice of a larger buffer the cache would keep
        // alive unweighed.
        cache.insert(key, Bytes::copy_from_slice(&pages));
        Ok::<_, StorageError>((location, fetched))
    });
    let found = futures::future::try_join_all(reads).await?;
    let bytes = found.iter().map(|(_, b)| b).sum();
    Ok((found.into_iter().map(|(l, _)| l).collect(), bytes))
}
