//! Object storage beside Sieve's own: the locations users' files may be loaded from (COPY INTO),
//! each named in the server's configuration with its own credentials. Nothing else is read:
//! not the host's files, not a bucket or prefix the configuration does not name.

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use serde::Deserialize;
use url::Url;

use crate::error::{Result, StorageError};

/// One location as the configuration names it (an Iceberg catalog's warehouse is one too).
/// Settings left out come from the environment (AWS_ENDPOINT, AWS_ACCESS_KEY_ID, … as for the
/// storage itself).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalLocation {
    /// `s3://bucket/prefix`: everything under it may be read.
    pub url: String,
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub allow_http: Option<bool>,
}

impl ExternalLocation {
    /// The store of `bucket` with this location's settings, the environment's where left out.
    pub fn s3_store(&self, bucket: &str) -> Result<AmazonS3> {
        Ok(self.s3_builder(bucket).build()?)
    }

    /// The builder of [`Self::s3_store`], for a caller that adds to it: an Iceberg warehouse
    /// gives a table's requests the credentials its catalog vends.
    pub fn s3_builder(&self, bucket: &str) -> AmazonS3Builder {
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
        if let Some(endpoint) = &self.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        if let Some(region) = &self.region {
            builder = builder.with_region(region);
        }
        if let Some(key) = &self.access_key_id {
            builder = builder.with_access_key_id(key);
        }
        if let Some(secret) = &self.secret_access_key {
            builder = builder.with_secret_access_key(secret);
        }
        if let Some(allow) = self.allow_http {
            builder = builder.with_allow_http(allow);
        }
        builder
    }
}

#[derive(Debug)]
struct Opened {
    bucket: String,
    prefix: Vec<String>,
    store: Arc<dyn ObjectStore>,
}

/// The locations files may be read from, their stores built once.
#[derive(Debug, Default)]
pub struct ExternalStores {
    locations: Vec<Opened>,
}

fn invalid(url: &str, why: &str) -> StorageError {
    StorageError::InvalidUrl(url.to_string(), why.to_string())
}

/// A URL's bucket and path segments, for `s3://` (and `s3a://`) only.
fn bucket_and_path(url: &str) -> Result<(String, Vec<String>)> {
    let host_or_other = || {
        invalid(
            url,
            "files are loaded from s3:// locations only, never from the server's host",
        )
    };
    let parsed = Url::parse(url).map_err(|_| host_or_other())?;
    if !matches!(parsed.scheme(), "s3" | "s3a") {
        return Err(host_or_other());
    }
    let bucket = parsed
        .host_str()
        .ok_or_else(|| invalid(url, "missing bucket"))?;
    let path = parsed
        .path_segments()
        .map(|s| s.filter(|p| !p.is_empty()).map(str::to_string).collect())
        .unwrap_or_default();
    Ok((bucket.to_string(), path))
}

impl ExternalStores {
    pub fn open(locations: &[ExternalLocation]) -> Result<Self> {
        let mut opened = Vec::with_capacity(locations.len());
        for location in locations {
            let (bucket, prefix) = bucket_and_path(&location.url)?;
            opened.push(Opened {
                store: Arc::new(location.s3_store(&bucket)?),
                bucket,
                prefix,
            });
        }
        Ok(Self { locations: opened })
    }

    /// The store holding `url`, its bucket and its path there, if a configured location
    /// contains it.
    pub fn resolve(&self, url: &str) -> Result<ExternalPath> {
        let (bucket, path) = bucket_and_path(url)?;
        let location = self
            .locations
            .iter()
            .position(|l| l.bucket == bucket && path.starts_with(&l.prefix))
            .ok_or_else(|| {
                invalid(
                    url,
                    "not under any of the server's external_locations (its configuration names \
                     the locations files may be loaded from)",
                )
            })?;
        Ok(ExternalPath {
            location,
            store: self.locations[location].store.clone(),
            bucket,
            path: Path::from_iter(path),
        })
    }

    /// Each location's place in the configuration, bucket and store.
    pub fn stores(&self) -> impl Iterator<Item = (usize, &str, &Arc<dyn ObjectStore>)> {
        self.locations
            .iter()
            .enumerate()
            .map(|(i, l)| (i, l.bucket.as_str(), &l.store))
    }
}

/// Where a URL under a configured location is.
#[derive(Debug, Clone)]
pub struct ExternalPath {
    /// The location's place in the configuration.
    pub location: usize,
    pub store: Arc<dyn ObjectStore>,
    pub bucket: String,
    pub path: Path,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stores() -> ExternalStores {
        ExternalStores::open(&[ExternalLocation {
            url: "s3://landing/team/in".into(),
            region: Some("us-east-1".into()),
            ..ExternalLocation::default()
        }])
        .unwrap()
    }

    #[test]
    fn only_urls_under_a_configured_location_resolve() {
        let stores = stores();
        let resolved = stores.resolve("s3://landing/team/in/2026/a.csv").unwrap();
        assert_eq!(resolved.bucket, "landing");
        assert_eq!(resolved.path.as_ref(), "team/in/2026/a.csv");
        assert!(stores.resolve("s3://landing/team/in/").is_ok());
        // Spellings of the same location resolve to its one normal form, which is what is read.
        for spelling in [
            "S3://landing/team/in/2026/a.csv",
            "s3://landing//team/in//2026/a.csv",
            "s3a://landing/team/x/../in/2026/a.csv",
        ] {
            let resolved = stores.resolve(spelling).unwrap();
            assert_eq!(
                (resolved.bucket.as_str(), resolved.path.as_ref()),
                ("landing", "team/in/2026/a.csv"),
                "{spelling}"
            );
        }
        for refused in [
            "s3://landing/team/inbox/a.csv",
            "s3://landing/team/in/../secret/a.csv",
            "s3://landing/team/in%2F..%2Fsecret/a.csv",
            "s3://landing/team",
            "s3://other/team/in/a.csv",
        ] {
            let e = stores.resolve(refused).unwrap_err().to_string();
            assert!(
                e.contains("not under any of the server's external_locations"),
                "{e}"
            );
        }
        for host in ["file:///etc/passwd", "/etc/passwd", "http://x/y"] {
            let e = stores.resolve(host).unwrap_err().to_string();
            assert!(
                e.contains("never from the server's host") || e.contains("relative URL"),
                "{e}"
            );
        }
    }
}
