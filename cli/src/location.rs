//! Where the command's tables live and how much of them a process caches: the `--storage`,
//! `--sidecar-cache-mib`, `--data-cache-mib` and `--disk-cache` settings (flag, environment or config file), passed down to the engine
//! rather than read from the environment inside it.

use std::fmt;
use std::path::PathBuf;

use sieve_engine::Engine;
use std::sync::Arc;

use sieve_iceberg::{CatalogConfig, IcebergCatalog};
use sieve_storage::{ExternalLocation, ExternalStores, Storage};

#[derive(Debug, Clone)]
pub struct Location {
    pub url: String,
    pub sidecar_cache_mib: u64,
    pub data_cache_mib: u64,
    /// Where blocks' bytes are also kept on disk, and how many bytes at most.
    pub disk_cache: Option<(PathBuf, u64)>,
    /// What bounds locator group merges' I/O (MiB/s, 0: unbounded).
    pub merge_io_mib_per_s: u64,
    /// Where COPY INTO may read files from.
    pub external_locations: Vec<ExternalLocation>,
    /// The Iceberg catalogs statements may read tables of.
    pub iceberg_catalogs: Vec<CatalogConfig>,
}

impl Location {
    pub fn storage(&self) -> Result<Storage, String> {
        let storage = Storage::open(&self.url)
            .map_err(|e| e.to_string())?
            .with_caches(self.sidecar_cache_mib << 20, self.data_cache_mib << 20)
            .with_merge_rate(self.merge_io_mib_per_s);
        match &self.disk_cache {
            Some((dir, bytes)) => storage
                .with_disk_cache(dir, *bytes)
                .map_err(|e| e.to_string()),
            None => Ok(storage),
        }
    }

    pub async fn engine(&self) -> Result<Engine, String> {
        let external = ExternalStores::open(&self.external_locations)
            .map_err(|e| format!("external_locations: {e}"))?;
        let iceberg = self
            .iceberg_catalogs
            .iter()
            .map(|c| IcebergCatalog::open(c).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("iceberg_catalogs: {e}"))?;
        Engine::with_storage(self.storage()?)
            .await
            .map_err(|e| e.to_string())?
            .with_external_locations(external)
            .with_iceberg_catalogs(iceberg)
            .map_err(|e| e.to_string())
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}
