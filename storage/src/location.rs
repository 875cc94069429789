//! Where tables live: an object store and the prefix inside it, from one URL.
//!
//! `file:///path` or a plain path (the embedded default), `memory://` (tests), and
//! `s3://bucket/prefix` configured the way object_store users expect: AWS_ENDPOINT,
//! AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ALLOW_HTTP.

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::prefix::PrefixStore;
use url::Url;

use crate::error::{Result, StorageError};
use crate::local_store::LocalStore;
use crate::meta::snapshot::Snapshot;
use crate::meta::table_def::TableDef;
use crate::operations::merge_rate::MergeRate;
use crate::read::cache::{Caches, DEFAULT_DATA_CACHE_BYTES, DEFAULT_SIDECAR_CACHE_BYTES};
use crate::read::disk_cache::DiskCache;
use crate::read::freshness::Freshness;
use crate::read::request_trace::TracedStore;
use crate::write::group_commit::CommitQueues;

/// An object store rooted at the storage URL (every path Sieve writes is relative to it), with
/// the caches every query on it shares. Its requests are recorded in the entered
/// [`crate::RequestTrace`].
#[derive(Debug, Clone)]
pub struct Storage {
    store: Arc<dyn ObjectStore>,
    url: String,
    caches: Arc<Caches>,
    /// Checks of tables' newest snapshots and of their definitions in flight, shared by the
    /// queries of every clone.
    snapshots: Arc<Freshness<Snapshot>>,
    definitions: Arc<Freshness<Option<TableDef>>>,
    /// Appends waiting to commit, shared by every clone ([`crate::write::group_commit`]).
    commits: Arc<CommitQueues>,
    /// What paces and counts background merges' and compactions' I/O.
    merge_rate: Arc<MergeRate>,
}

/// object_store refuses a plain-HTTP endpoint unless told to, with only "builder error" on the
/// first request; say what to set instead.
fn check_plain_http() -> std::result::Result<(), String> {
    let endpoint = ["AWS_ENDPOINT", "AWS_ENDPOINT_URL"]
        .iter()
        .find_map(|name| std::env::var(name).ok().map(|value| (name, value)));
    let allowed = std::env::var("AWS_ALLOW_HTTP").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    match endpoint {
        Some((name, value)) if value.starts_with("http://") && !allowed => Err(format!(
            "{name}={value} is plain HTTP; set AWS_ALLOW_HTTP=true to use it (or an https:// endpoint)"
        )),
        _ => Ok(()),
    }
}

impl Storage {
    pub fn open(location: &str) -> Result<Self> {
        Self::open_wrapped(location, |store| store)
    }

    /// The storage at `location`, its store wrapped by `wrap` (tests log requests this way).
    pub fn open_wrapped(
        location: &str,
        wrap: impl FnOnce(Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore>,
    ) -> Result<Self> {
        let invalid = |why: &str| StorageError::InvalidUrl(location.to_string(), why.to_string());
        let url = match Url::parse(location) {
            Ok(url) if url.scheme().len() > 1 => url,
            // A plain path (or a Windows drive letter) is a local directory.
            _ => {
                let path = std::path::absolute(location).map_err(|e| invalid(&e.to_string()))?;
                Url::from_directory_path(&path).map_err(|_| invalid("not a directory path"))?
            }
        };
        let store: Arc<dyn ObjectStore> = match url.scheme() {
            "file" => {
                let path = url
                    .to_file_path()
                    .map_err(|_| invalid("not a local path"))?;
                std::fs::create_dir_all(&path).map_err(|e| invalid(&e.to_string()))?;
                Arc::new(LocalStore::new(LocalFileSystem::new_with_prefix(&path)?))
            }
            "memory" => {
                let url = format!("memory://{}", uuid::Uuid::new_v4().simple());
                return Ok(Self::new(wrap(Arc::new(InMemory::new())), url));
            }
            "s3" | "s3a" => {
                let bucket = url.host_str().ok_or_else(|| invalid("missing bucket"))?;
                check_plain_http().map_err(|why| invalid(&why))?;
                let s3 = AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .build()?;
                let prefix = url.path().trim_matches('/');
                if prefix.is_empty() {
                    Arc::new(s3)
                } else {
                    Arc::new(PrefixStore::new(s3, prefix))
                }
            }
            other => {
                return Err(invalid(&format!(
                    "unsupported scheme {other:?}; use file://, s3:// or memory://"
                )));
            }
        };
        Ok(Self::new(wrap(store), url.to_string()))
    }

    pub fn new(store: Arc<dyn ObjectStore>, url: String) -> Self {
        Self {
            store: Arc::new(TracedStore::new(store)),
            url,
            caches: Arc::new(Caches::new(
                DEFAULT_SIDECAR_CACHE_BYTES,
                DEFAULT_DATA_CACHE_BYTES,
            )),
            snapshots: Arc::default(),
            definitions: Arc::default(),
            commits: Arc::default(),
            merge_rate: Arc::new(MergeRate::new(0)),
        }
    }

    /// The same storage with its locator group merges and compactions reading and writing at
    /// most `mib_per_s` MiB per second together ([`crate::operations::merge_rate`]); 0:
    /// unbounded.
    pub fn with_merge_rate(self, mib_per_s: u64) -> Self {
        Self {
            merge_rate: Arc::new(MergeRate::new(mib_per_s)),
            ..self
        }
    }

    pub(crate) fn merge_rate(&self) -> &MergeRate {
        &self.merge_rate
    }

    /// Bytes this storage's background merges and compactions have read and written.
    pub fn merge_io_bytes(&self) -> u64 {
        self.merge_rate.spent()
    }

    /// The same store with caches that keep up to `sidecar_bytes` of opened sidecar entries and
    /// `data_bytes` of blocks' bytes (0: none), fresh: call it before the storage is used.
    pub fn with_caches(self, sidecar_bytes: u64, data_bytes: u64) -> Self {
        Self {
            caches: Arc::new(Caches::new(sidecar_bytes, data_bytes)),
            ..self
        }
    }

    /// The same storage keeping up to `bytes` of blocks' bytes in files under `dir` as well
    /// ([`crate::read::disk_cache`]): call it before the storage is used.
    pub fn with_disk_cache(self, dir: &std::path::Path, bytes: u64) -> Result<Self> {
        let disk = Arc::new(DiskCache::open(dir, bytes)?);
        self.caches
            .disk
            .set(disk)
            .map_err(|_| StorageError::Invalid("the storage has a disk cache already".into()))?;
        Ok(self)
    }

    /// A fresh in-memory store (clones share it; each has its own URL).
    pub fn in_memory() -> Self {
        let url = format!("memory://{}", uuid::Uuid::new_v4().simple());
        Self::new(Arc::new(InMemory::new()), url)
    }

    pub fn caches(&self) -> &Caches {
        &self.caches
    }

    pub(crate) fn snapshots(&self) -> &Arc<Freshness<Snapshot>> {
        &self.snapshots
    }

    pub(crate) fn definitions(&self) -> &Arc<Freshness<Option<TableDef>>> {
        &self.definitions
    }

    pub(crate) fn commits(&self) -> &CommitQueues {
        &self.commits
    }

    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    pub fn url(&self) -> &str {
        &self.url
    }
}
