//! DataFusion finds object stores by URL; each Sieve storage is registered under its own
//! `sieve://` authority, and block paths are relative to it.

use datafusion::error::Result;
use datafusion::execution::object_store::ObjectStoreUrl;
use sieve_storage::Storage;
use xxhash_rust::xxh3::xxh3_64;

/// A stable URL per storage location, so two storages in one process never collide.
pub fn object_store_url(storage: &Storage) -> Result<ObjectStoreUrl> {
    ObjectStoreUrl::parse(format!(
        "sieve://{:016x}",
        xxh3_64(storage.url().as_bytes())
    ))
}
