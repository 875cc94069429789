//! Credentials a REST catalog vends with a table (the spec's `X-Iceberg-Access-Delegation:
//! vended-credentials`): Polaris, Unity Catalog, Lakekeeper and Iceberg's own REST fixture
//! answer a table's load with S3 keys good for its files, often a session scoped to its
//! location and an hour long. The warehouse's S3 store ([`VendedStore`]) sends each request
//! under the longest prefix some table was vended for with that table's keys, and every other
//! request with the warehouse's configured ones.
//!
//! Vended keys win over configured ones, as in Java's and PyIceberg's clients (a table's
//! `config` overrides the catalog's properties). Only the keys are taken: the endpoint and
//! region stay the warehouse's, so a catalog cannot point the server at another host.
//!
//! Why a store of Sieve's own: object_store signs with one credential provider per store and
//! does not see the path, while a catalog's credentials are per table.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use object_store::aws::AwsCredential;
use object_store::path::Path;
use object_store::{
    CopyOptions, CredentialProvider, GetOptions, GetResult, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use serde::Deserialize;
use sieve_storage::ExternalLocation;

use crate::error::Result;

/// Keys that expire this soon are renewed (the table loaded again) before a request uses them.
const RENEW_MARGIN: Duration = Duration::from_secs(5 * 60);

/// One credential a catalog vended with a table.
#[derive(Clone)]
pub struct Vended {
    /// The URI it is good under: a `storage-credentials` entry's prefix, else the table's
    /// location. Without a trailing `/`.
    pub prefix: String,
    pub credential: Arc<AwsCredential>,
    /// `s3.session-token-expires-at-ms`, when the catalog says.
    pub expires_at: Option<SystemTime>,
}

impl fmt::Debug for Vended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // AwsCredential's Debug leaves the secret out.
        (f.debug_struct("Vended"))
            .field("prefix", &self.prefix)
            .field("credential", &self.credential)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// A `storage-credentials` entry of a load-table answer (spec 1.7 on).
#[derive(Debug, Deserialize)]
pub struct StorageCredential {
    prefix: String,
    #[serde(default)]
    config: HashMap<String, String>,
}

/// The S3 keys a load-table answer vends: each `storage-credentials` entry with keys, else its
/// `config`'s keys for the table's `location`. None when it vends none (a catalog that does not
/// vend, or keys for another cloud).
pub fn from_load_table(
    location: Option<&str>,
    config: &HashMap<String, String>,
    storage: &[StorageCredential],
) -> Vec<Vended> {
    let scoped: Vec<Vended> = (storage.iter())
        .filter_map(|entry| keys(&entry.prefix, &entry.config))
        .collect();
    if !scoped.is_empty() {
        return scoped;
    }
    location
        .and_then(|location| keys(location, config))
        .into_iter()
        .collect()
}

fn keys(prefix: &str, config: &HashMap<String, String>) -> Option<Vended> {
    let key_id = config.get("s3.access-key-id")?;
    let secret_key = config.get("s3.secret-access-key")?;
    let expires_at = (config.get("s3.session-token-expires-at-ms"))
        .and_then(|ms| ms.parse::<u64>().ok())
        .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms));
    Some(Vended {
        prefix: prefix.trim_end_matches('/').to_string(),
        credential: Arc::new(AwsCredential {
            key_id: key_id.clone(),
            secret_key: secret_key.clone(),
            token: config.get("s3.session-token").cloned(),
        }),
        expires_at,
    })
}

/// Asks the catalog for a prefix's credential again: the table loaded anew.
pub type Renew = Arc<dyn Fn() -> BoxFuture<'static, Result<Option<Vended>>> + Send + Sync>;

/// One prefix's keys as the catalog last vended them, renewed when they are about to expire.
struct VendedKeys {
    prefix: String,
    current: RwLock<(Arc<AwsCredential>, Option<SystemTime>)>,
    renew: Renew,
    /// One renewal at a time; requests that find one under way wait for its keys.
    renewing: tokio::sync::Mutex<()>,
}

impl fmt::Debug for VendedKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VendedKeys")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl VendedKeys {
    fn set(&self, vended: &Vended) {
        *self.current.write().unwrap() = (vended.credential.clone(), vended.expires_at);
    }

    fn current(&self) -> (Arc<AwsCredential>, Option<SystemTime>) {
        self.current.read().unwrap().clone()
    }
}

/// Whether keys that expire at `at` are renewed before use.
fn due(at: Option<SystemTime>) -> bool {
    at.is_some_and(|at| at < SystemTime::now() + RENEW_MARGIN)
}

#[async_trait]
impl CredentialProvider for VendedKeys {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let (credential, expires_at) = self.current();
        if !due(expires_at) {
            return Ok(credential);
        }
        let _renewing = self.renewing.lock().await;
        let (credential, expires_at) = self.current();
        if !due(expires_at) {
            return Ok(credential);
        }
        let failed = |why: String| object_store::Error::Generic {
            store: "S3",
            source: format!(
                "the credentials the catalog vended for {}: {why}",
                self.prefix
            )
            .into(),
        };
        let still_good = expires_at.is_some_and(|at| at > SystemTime::now());
        match (self.renew)().await {
            Ok(Some(vended)) => {
                self.set(&vended);
                Ok(vended.credential)
            }
            // Keys that have not expired yet are used while the catalog cannot renew them.
            Ok(None) | Err(_) if still_good => Ok(credential),
            Ok(None) => Err(failed(
                "expired, and the catalog vends none for it any more".into(),
            )),
            Err(e) => Err(failed(format!("expired, and renewing them failed: {e}"))),
        }
    }
}

/// Requests under `prefix` go to `store`, signed with `keys`.
#[derive(Debug)]
struct Scoped {
    prefix: Path,
    keys: Arc<VendedKeys>,
    store: Arc<dyn ObjectStore>,
}

/// A warehouse's S3 store: each request signed with the keys vended for the longest prefix
/// that holds its path, or with the configured ones ([`Self::base`]).
#[derive(Debug)]
pub struct VendedStore {
    base: Arc<dyn ObjectStore>,
    location: ExternalLocation,
    bucket: String,
    /// Longest prefix first.
    scoped: RwLock<Vec<Scoped>>,
}

impl VendedStore {
    pub fn new(location: ExternalLocation, bucket: &str) -> Result<Self, object_store::Error> {
        Ok(Self {
            base: Arc::new(location.s3_builder(bucket).build()?),
            location,
            bucket: bucket.to_string(),
            scoped: RwLock::new(Vec::new()),
        })
    }

    /// Signs requests under `prefix` with `vended`'s keys from now on (`renew` makes what asks
    /// the catalog again when they are about to expire: made only for a prefix not seen
    /// before, since every statement that loads the table vends its keys again).
    pub fn vend(&self, prefix: Path, vended: &Vended, renew: impl FnOnce() -> Renew) -> Result<()> {
        if let Some(scoped) = (self.scoped.read().unwrap().iter()).find(|s| s.prefix == prefix) {
            scoped.keys.set(vended);
            return Ok(());
        }
        let keys = Arc::new(VendedKeys {
            prefix: vended.prefix.clone(),
            current: RwLock::new((vended.credential.clone(), vended.expires_at)),
            renew: renew(),
            renewing: tokio::sync::Mutex::new(()),
        });
        let store = (self.location.s3_builder(&self.bucket))
            .with_credentials(keys.clone())
            .build()
            .map_err(|e| crate::IcebergError::Store(vended.prefix.clone(), e))?;
        let mut scoped = self.scoped.write().unwrap();
        // Another statement may have added it meanwhile: the newer keys win either way.
        scoped.retain(|s| s.prefix != prefix);
        scoped.push(Scoped {
            prefix,
            keys,
            store: Arc::new(store),
        });
        scoped.sort_by_key(|s| std::cmp::Reverse(s.prefix.parts().count()));
        Ok(())
    }

    /// The store a request for `path` goes to.
    fn store_for(&self, path: &Path) -> Arc<dyn ObjectStore> {
        (self.scoped_for(path, |s| s.store.clone())).unwrap_or_else(|| self.base.clone())
    }

    /// `take` of the longest vended prefix that holds `path`, if any does.
    fn scoped_for<T>(&self, path: &Path, take: impl Fn(&Scoped) -> T) -> Option<T> {
        (self.scoped.read().unwrap().iter())
            .find(|s| path.prefix_matches(&s.prefix))
            .map(take)
    }
}

impl fmt::Display for VendedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.base.fmt(f)
    }
}

#[async_trait]
impl ObjectStore for VendedStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        (self.store_for(location))
            .put_opts(location, payload, opts)
            .await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        (self.store_for(location))
            .put_multipart_opts(location, opts)
            .await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.store_for(location).get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        self.store_for(location).get_ranges(location, ranges).await
    }

    /// Sieve deletes nothing in a warehouse; the configured keys are used if it ever does.
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.base.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let root = Path::default();
        self.store_for(prefix.unwrap_or(&root)).list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let root = Path::default();
        (self.store_for(prefix.unwrap_or(&root))).list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let root = Path::default();
        (self.store_for(prefix.unwrap_or(&root)))
            .list_with_delimiter(prefix)
            .await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.store_for(from).copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        (pairs.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_load_table_answer_vends_keys_for_its_location_or_its_prefixes() {
        let keys = config(&[
            ("s3.access-key-id", "AK"),
            ("s3.secret-access-key", "SK"),
            ("s3.session-token", "T"),
            ("s3.session-token-expires-at-ms", "1700000000000"),
        ]);
        let vended = from_load_table(Some("s3://b/wh/ns/t/"), &keys, &[]);
        assert_eq!(vended.len(), 1);
        assert_eq!(vended[0].prefix, "s3://b/wh/ns/t");
        assert_eq!(vended[0].credential.key_id, "AK");
        assert_eq!(vended[0].credential.token.as_deref(), Some("T"));
        assert_eq!(
            vended[0].expires_at,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000))
        );
        // storage-credentials win over config; an entry without S3 keys is not S3's.
        let storage = vec![
            StorageCredential {
                prefix: "s3://b/wh/ns/t/data".into(),
                config: config(&[("s3.access-key-id", "A2"), ("s3.secret-access-key", "S2")]),
            },
            StorageCredential {
                prefix: "gs://b/wh".into(),
                config: config(&[("gcs.oauth2.token", "x")]),
            },
        ];
        let vended = from_load_table(Some("s3://b/wh/ns/t"), &keys, &storage);
        assert_eq!(vended.len(), 1);
        assert_eq!(vended[0].prefix, "s3://b/wh/ns/t/data");
        assert_eq!(vended[0].credential.key_id, "A2");
        assert_eq!(vended[0].credential.token, None);
        // A catalog that vends nothing, or a secret without its key.
        assert!(from_load_table(Some("s3://b/wh/ns/t"), &HashMap::new(), &[]).is_empty());
        let half = config(&[("s3.secret-access-key", "SK")]);
        assert!(from_load_table(Some("s3://b/wh/ns/t"), &half, &[]).is_empty());
    }

    fn keys_expiring(at: Option<SystemTime>, renew: Renew) -> VendedKeys {
        let credential = Arc::new(AwsCredential {
            key_id: "old".into(),
            secret_key: "s".into(),
            token: None,
        });
        VendedKeys {
            prefix: "s3://b/wh/t".into(),
            current: RwLock::new((credential, at)),
            renew,
            renewing: tokio::sync::Mutex::new(()),
        }
    }

    fn renewed_as(key_id: &'static str, calls: Arc<std::sync::atomic::AtomicU32>) -> Renew {
        Arc::new(move || {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Box::pin(async move {
                Ok(Some(Vended {
                    prefix: "s3://b/wh/t".into(),
                    credential: Arc::new(AwsCredential {
                        key_id: key_id.into(),
                        secret_key: "s".into(),
                        token: None,
                    }),
                    expires_at: Some(SystemTime::now() + Duration::from_secs(3600)),
                }))
            })
        })
    }

    #[tokio::test]
    async fn keys_are_renewed_only_when_about_to_expire() {
        use std::sync::atomic::{AtomicU32, Ordering};
        let calls = Arc::new(AtomicU32::new(0));
        // Without an expiry, or an hour from now: used as they are.
        for at in [None, Some(SystemTime::now() + Duration::from_secs(3600))] {
            let keys = keys_expiring(at, renewed_as("new", calls.clone()));
            assert_eq!(keys.get_credential().await.unwrap().key_id, "old");
        }
        assert_eq!(calls.load(Ordering::Relaxed), 0);
        // A minute from now: renewed once, then the new keys are used as they are.
        let soon = Some(SystemTime::now() + Duration::from_secs(60));
        let keys = keys_expiring(soon, renewed_as("new", calls.clone()));
        assert_eq!(keys.get_credential().await.unwrap().key_id, "new");
        assert_eq!(keys.get_credential().await.unwrap().key_id, "new");
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        // Expired, and the catalog fails: a clear error; not yet expired: the old keys.
        let failing: Renew = Arc::new(|| {
            Box::pin(async {
                Err(crate::IcebergError::Catalog {
                    catalog: "lake".into(),
                    why: "down".into(),
                })
            })
        });
        let expired = Some(SystemTime::now() - Duration::from_secs(1));
        let keys = keys_expiring(expired, failing.clone());
        let error = keys.get_credential().await.unwrap_err().to_string();
        assert!(
            error.contains("s3://b/wh/t: expired, and renewing them failed"),
            "{error}"
        );
        assert!(error.contains("down"), "{error}");
        let keys = keys_expiring(soon, failing);
        assert_eq!(keys.get_credential().await.unwrap().key_id, "old");
    }

    #[test]
    fn requests_go_out_with_the_longest_prefixs_keys() {
        let location = ExternalLocation {
            url: "s3://b/wh".into(),
            region: Some("us-east-1".into()),
            access_key_id: Some("configured".into()),
            secret_access_key: Some("s".into()),
            ..ExternalLocation::default()
        };
        let store = VendedStore::new(location, "b").unwrap();
        let never: Renew = Arc::new(|| Box::pin(async { Ok(None) }));
        let vended = |key_id: &str| Vended {
            prefix: "s3://b/wh/ns".into(),
            credential: Arc::new(AwsCredential {
                key_id: key_id.into(),
                secret_key: "s".into(),
                token: None,
            }),
            expires_at: None,
        };
        store
            .vend(Path::from("wh/ns"), &vended("ns"), || never.clone())
            .unwrap();
        store
            .vend(Path::from("wh/ns/t"), &vended("t"), || never.clone())
            .unwrap();
        let keys_of =
            |path: &str| store.scoped_for(&Path::from(path), |s| s.keys.current().0.key_id.clone());
        assert_eq!(keys_of("wh/ns/t/data/a.parquet").as_deref(), Some("t"));
        assert_eq!(keys_of("wh/ns/t2/data/a.parquet").as_deref(), Some("ns"));
        assert_eq!(keys_of("wh/other/a.parquet"), None);
        // Vended again for the same prefix: the keys are replaced, not added.
        store
            .vend(Path::from("wh/ns/t"), &vended("t-again"), || never)
            .unwrap();
        assert_eq!(store.scoped.read().unwrap().len(), 2);
        assert_eq!(keys_of("wh/ns/t/m.json").as_deref(), Some("t-again"));
    }
}
