//! The local directory's object store: object_store's `LocalFileSystem`, except that a request
//! for an object's metadata alone is answered on the calling thread. That is a HEAD, and a
//! conditional GET that the file's ETag answers "not modified": the two requests of every
//! freshness check ([`crate::meta::snapshot::latest`]), and a table definition's.
//!
//! `LocalFileSystem` runs every request on tokio's blocking pool. For a `stat` of a file the
//! page cache holds (a few µs), handing it to a pool thread and waking the caller back costs
//! far more than the call: at one connection it was half of an absent key's lookup
//! (docs/benchmarks.md). Reads of contents still go to the pool, where a cold disk may block.
//! The ETag is computed as `LocalFileSystem` computes it, so the two answer alike.

use std::fmt;
use std::ops::Range;
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    Attributes, CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
    Result,
};

#[derive(Debug)]
pub struct LocalStore {
    files: LocalFileSystem,
}

impl LocalStore {
    pub fn new(files: LocalFileSystem) -> Self {
        Self { files }
    }

    /// The object's metadata from a `stat`, as `LocalFileSystem` reports it.
    fn stat(&self, location: &Path) -> Result<ObjectMeta> {
        let path = self.files.path_to_filesystem(location)?;
        let not_found = |source: std::io::Error| object_store::Error::NotFound {
            path: path.to_string_lossy().to_string(),
            source: source.into(),
        };
        let metadata = match std::fs::metadata(&path) {
            Ok(metadata) if metadata.is_dir() => {
                return Err(not_found(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "is directory",
                )));
            }
            Ok(metadata) => metadata,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found(e)),
            Err(e) => {
                return Err(object_store::Error::Generic {
                    store: "LocalFileSystem",
                    source: format!("stat {}: {e}", path.display()).into(),
                });
            }
        };
        let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        let micros = (modified.duration_since(SystemTime::UNIX_EPOCH))
            .unwrap_or_default()
            .as_micros();
        let inode = std::os::unix::fs::MetadataExt::ino(&metadata);
        Ok(ObjectMeta {
            location: location.clone(),
            last_modified: modified.into(),
            size: metadata.len(),
            e_tag: Some(format!("{inode:x}-{micros:x}-{:x}", metadata.len())),
            version: None,
        })
    }
}

impl fmt::Display for LocalStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.files.fmt(f)
    }
}

#[async_trait]
impl ObjectStore for LocalStore {
    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if options.head || options.if_none_match.is_some() {
            let meta = self.stat(location)?;
            options.check_preconditions(&meta)?;
            if options.head {
                return Ok(GetResult {
                    payload: GetResultPayload::Stream(Box::pin(futures::stream::empty())),
                    range: 0..0,
                    meta,
                    attributes: Attributes::default(),
                });
            }
        }
        self.files.get_opts(location, options).await
    }

    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.files.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.files.put_multipart_opts(location, opts).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.files.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.files.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.files.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.files.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.files.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.files.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.files.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use object_store::{ObjectStoreExt, PutMode};

    use super::*;

    /// A HEAD and a conditional GET answer as `LocalFileSystem` answers them: the same
    /// metadata and ETag, "not modified" while the file is unchanged, the new contents once it
    /// changed, and not found for a missing file or a directory.
    #[tokio::test]
    async fn metadata_answered_inline_matches_the_local_file_systems() {
        let dir = tempfile::tempdir().unwrap();
        let files = || LocalFileSystem::new_with_prefix(dir.path()).unwrap();
        let (store, plain) = (LocalStore::new(files()), files());
        let path = Path::from("t/latest.json");
        store.put(&path, "v1".into()).await.unwrap();
        let (ours, theirs) = (
            store.head(&path).await.unwrap(),
            plain.head(&path).await.unwrap(),
        );
        assert_eq!(ours, theirs);
        let etag = ours.e_tag.clone();
        let conditional = || GetOptions {
            if_none_match: etag.clone(),
            ..Default::default()
        };
        let unchanged = store.get_opts(&path, conditional()).await.unwrap_err();
        assert!(
            matches!(unchanged, object_store::Error::NotModified { .. }),
            "{unchanged}"
        );
        assert!(matches!(
            plain.get_opts(&path, conditional()).await.unwrap_err(),
            object_store::Error::NotModified { .. }
        ));
        // A replaced file has another inode, so another ETag, whatever its time and size.
        let replaced = PutOptions::from(PutMode::Overwrite);
        (store.put_opts(&path, "v2".into(), replaced).await).unwrap();
        let got = store.get_opts(&path, conditional()).await.unwrap();
        assert_eq!(got.bytes().await.unwrap(), "v2");
        for missing in [Path::from("t/none.json"), Path::from("t")] {
            let error = store.head(&missing).await.unwrap_err();
            assert!(
                matches!(error, object_store::Error::NotFound { .. }),
                "{missing}: {error}"
            );
            let theirs = plain.head(&missing).await.unwrap_err();
            assert!(matches!(theirs, object_store::Error::NotFound { .. }));
        }
    }
}
