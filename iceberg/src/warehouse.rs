//! Where an Iceberg catalog's files are: its warehouse, a local directory or an S3 prefix, and
//! the one store that reads it. Every path a catalog or table names (metadata, manifests, data
//! and delete files) is an absolute URI; it is read only when it lies under the warehouse, so a
//! table's metadata cannot point the server at its host's other files or at other buckets.

use std::sync::Arc;

use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use sieve_storage::{ExternalLocation, TracedStore};
use url::Url;

use crate::error::{IcebergError, Result};
use crate::vended::{Renew, Vended, VendedStore};

#[derive(Debug, Clone)]
pub struct Warehouse {
    /// `file:///abs/dir` or `s3://bucket/prefix`, without a trailing `/`.
    prefix: String,
    /// Traced as Sieve's own storage is: its requests count in EXPLAIN ANALYZE's request
    /// traces and its bytes in `/metrics`.
    store: Arc<dyn ObjectStore>,
    /// The store's path of the prefix: empty for a local directory (the store is rooted
    /// there), the key prefix in the bucket for S3.
    base: Vec<String>,
    /// An S3 warehouse's store, for the keys a REST catalog vends with its tables.
    vended: Option<Arc<VendedStore>>,
}

impl Warehouse {
    /// Opens `location.url` with its S3 settings (for an `s3://` warehouse).
    pub fn open(location: &ExternalLocation) -> Result<Self> {
        let url = location.url.as_str();
        let invalid = |why: &str| IcebergError::Catalog {
            catalog: url.to_string(),
            why: format!("warehouse {url:?}: {why}"),
        };
        let parsed = Url::parse(&normalize(url)).map_err(|e| invalid(&e.to_string()))?;
        let segments: Vec<String> = parsed
            .path_segments()
            .map(|s| s.filter(|p| !p.is_empty()).map(str::to_string).collect())
            .unwrap_or_default();
        match parsed.scheme() {
            "file" => {
                let dir = parsed
                    .to_file_path()
                    .map_err(|_| invalid("not a local path"))?;
                let store =
                    LocalFileSystem::new_with_prefix(&dir).map_err(|e| invalid(&e.to_string()))?;
                Ok(Self {
                    prefix: format!("file://{}", dir.display())
                        .trim_end_matches('/')
                        .into(),
                    store: Arc::new(TracedStore::new(Arc::new(store))),
                    base: Vec::new(),
                    vended: None,
                })
            }
            "s3" | "s3a" => {
                let bucket = parsed.host_str().ok_or_else(|| invalid("no bucket"))?;
                let store = Arc::new(
                    VendedStore::new(location.clone(), bucket)
                        .map_err(|e| invalid(&e.to_string()))?,
                );
                let mut prefix = format!("s3://{bucket}");
                for segment in &segments {
                    prefix.push('/');
                    prefix.push_str(segment);
                }
                Ok(Self {
                    prefix,
                    store: Arc::new(TracedStore::new(store.clone())),
                    base: segments,
                    vended: Some(store),
                })
            }
            other => Err(invalid(&format!(
                "the warehouse is a local directory (file://) or an S3 prefix (s3://), not {other}://"
            ))),
        }
    }

    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    pub fn url(&self) -> &str {
        &self.prefix
    }

    /// Sends the requests under each of `vended`'s prefixes with its keys from now on;
    /// `renew` gives the way to ask the catalog for a prefix's keys again. A local warehouse
    /// takes no keys, and a prefix neither above nor under the warehouse is not its own.
    pub fn vend(&self, vended: &[Vended], renew: impl Fn(&Vended) -> Renew) -> Result<()> {
        let Some(store) = &self.vended else {
            return Ok(());
        };
        for one in vended {
            let prefix = canonical(&one.prefix);
            let above = self.prefix == prefix || self.prefix.starts_with(&format!("{prefix}/"));
            let path = match above {
                true => Path::from_iter(self.base.iter().map(String::as_str)),
                false => match self.path(&prefix) {
                    Ok(path) => path,
                    Err(_) => continue,
                },
            };
            store.vend(path, one, || renew(one))?;
        }
        Ok(())
    }

    /// The store's path of `uri`, which must lie under the warehouse.
    pub fn path(&self, uri: &str) -> Result<Path> {
        let outside = || IcebergError::OutsideWarehouse(uri.to_string(), self.prefix.clone());
        let uri = canonical(uri);
        let rest = uri
            .strip_prefix(&self.prefix)
            .and_then(|rest| rest.strip_prefix('/'))
            .ok_or_else(outside)?;
        let mut parts = self.base.clone();
        for part in rest.split('/') {
            if part.is_empty() || part == "." || part == ".." {
                return Err(outside());
            }
            parts.push(part.to_string());
        }
        Ok(Path::from_iter(parts))
    }

    /// Reads `range` of `uri`'s bytes.
    pub async fn read_range(&self, uri: &str, range: std::ops::Range<u64>) -> Result<bytes::Bytes> {
        let path = self.path(uri)?;
        self.store
            .get_range(&path, range)
            .await
            .map_err(|e| IcebergError::Store(uri.to_string(), e))
    }

    /// Reads all of `uri`.
    pub async fn read(&self, uri: &str) -> Result<bytes::Bytes> {
        let path = self.path(uri)?;
        let got = self
            .store
            .get(&path)
            .await
            .map_err(|e| IcebergError::Store(uri.to_string(), e))?;
        got.bytes()
            .await
            .map_err(|e| IcebergError::Store(uri.to_string(), e))
    }
}

/// `uri` as the warehouse's prefix spells it: local paths as [`normalize`] writes them, and
/// `s3a://` (Hadoop's) as `s3://`.
fn canonical(uri: &str) -> String {
    normalize(uri).replace("s3a://", "s3://")
}

/// Java writes local paths as `file:/abs/path`, PyIceberg as `file:///abs/path`; a bare
/// absolute path is a local one too.
fn normalize(uri: &str) -> String {
    if let Some(rest) = uri.strip_prefix("file:") {
        let path = rest.trim_start_matches('/');
        return format!("file:///{path}");
    }
    if uri.starts_with('/') {
        return format!("file://{uri}");
    }
    uri.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_only_under_the_warehouse() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().display().to_string();
        let local = |url: String| ExternalLocation {
            url,
            ..ExternalLocation::default()
        };
        let warehouse = Warehouse::open(&local(format!("file://{root}"))).unwrap();
        for uri in [
            format!("file://{root}/ns/t/data/a.parquet"),
            format!("file:{root}/ns/t/data/a.parquet"),
            format!("{root}/ns/t/data/a.parquet"),
        ] {
            assert_eq!(
                warehouse.path(&uri).unwrap().as_ref(),
                "ns/t/data/a.parquet",
                "{uri}"
            );
        }
        for uri in [
            "file:///etc/passwd".to_string(),
            format!("file://{root}/../x"),
            format!("file://{root}x/a"),
            format!("s3://b{root}/a"),
        ] {
            assert!(warehouse.path(&uri).is_err(), "{uri}");
        }
        let s3 = Warehouse::open(&ExternalLocation {
            url: "s3://lake/wh".into(),
            region: Some("us-east-1".into()),
            ..ExternalLocation::default()
        })
        .unwrap();
        assert_eq!(
            s3.path("s3://lake/wh/ns/t/m.avro").unwrap().as_ref(),
            "wh/ns/t/m.avro"
        );
        assert_eq!(
            s3.path("s3a://lake/wh/ns/t/m.avro").unwrap().as_ref(),
            "wh/ns/t/m.avro"
        );
        assert!(s3.path("s3://lake/whx/m.avro").is_err());
        assert!(s3.path("s3://other/wh/m.avro").is_err());
    }
}
