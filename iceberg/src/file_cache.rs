//! Manifests and delete files as planning read them, kept across snapshots. Iceberg writes a
//! file once and never changes it (a commit writes new files and names them), so a manifest or
//! delete file read for one snapshot is the same for every later snapshot that names it. A table
//! that commits every few seconds (a streaming writer, a CDC pipeline) is then planned at each
//! new snapshot by reading its metadata, its manifest list and what the commit added, instead of
//! every manifest and delete file again.
//!
//! Entries are keyed by what their reading depends on besides the file: the sequence number and
//! spec a manifest's entries inherit from its manifest list, the blob a deletion vector is, and
//! the types an equality delete's keys are cast to. The cache is bounded by an estimate of the
//! bytes each parsed entry holds.

use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use quick_cache::Weighter;
use quick_cache::sync::Cache;

use crate::error::Result;
use crate::manifest::{FileEntry, ManifestFile};
use crate::position_deletes::Positions;

/// How many bytes of parsed files a catalog keeps, at most (approximately).
pub(crate) const FILE_CACHE_BYTES: u64 = 64 << 20;

/// A manifest's live entries, as its manifest list's sequence number and spec complete them.
type ManifestKey = (String, i64, i32);
/// A delete file, or a deletion vector's blob of one (offset, size).
type DeleteKey = (String, Option<(u64, u64)>);
/// An equality delete file and the table's types its keys are cast to.
type KeysKey = (String, Vec<DataType>);
/// An equality delete file's keys: per batch, one array per column.
pub(crate) type Keys = Vec<Vec<ArrayRef>>;

#[derive(Debug)]
pub(crate) struct FileCache {
    manifests: Cache<ManifestKey, Arc<Vec<FileEntry>>, Bytes>,
    deletes: Cache<DeleteKey, Arc<Positions>, Bytes>,
    keys: Cache<KeysKey, Arc<Keys>, Bytes>,
}

impl FileCache {
    pub(crate) fn new(bytes: u64) -> Self {
        // A third each: a table with many delete files is a table with many manifests too.
        let each = bytes / 3;
        let items = (each / 4096).max(16) as usize;
        Self {
            manifests: Cache::with_weighter(items, each, Bytes),
            deletes: Cache::with_weighter(items, each, Bytes),
            keys: Cache::with_weighter(items, each, Bytes),
        }
    }

    /// The live entries of `manifest`, read by `read` unless kept.
    pub(crate) async fn manifest(
        &self,
        manifest: &ManifestFile,
        read: impl Future<Output = Result<Vec<FileEntry>>>,
    ) -> Result<Arc<Vec<FileEntry>>> {
        let key = (
            manifest.path.clone(),
            manifest.sequence_number,
            manifest.spec_id,
        );
        kept(&self.manifests, key, read).await
    }

    /// The positions the delete file or deletion vector `entry` deletes, read by `read`
    /// unless kept.
    pub(crate) async fn deletes(
        &self,
        entry: &FileEntry,
        read: impl Future<Output = Result<Positions>>,
    ) -> Result<Arc<Positions>> {
        let blob = entry.vector.as_ref().map(|v| (v.offset, v.size));
        kept(&self.deletes, (entry.path.clone(), blob), read).await
    }

    /// The keys of the equality delete file `path` as `types`, read by `read` unless kept.
    pub(crate) async fn keys(
        &self,
        path: &str,
        types: &[DataType],
        read: impl Future<Output = Result<Keys>>,
    ) -> Result<Arc<Keys>> {
        kept(&self.keys, (path.to_string(), types.to_vec()), read).await
    }
}

/// `cache`'s value of `key`, or `read`'s, kept. Concurrent plans needing one file read it once.
async fn kept<K: Eq + Hash + Clone, V: Weighed>(
    cache: &Cache<K, Arc<V>, Bytes>,
    key: K,
    read: impl Future<Output = Result<V>>,
) -> Result<Arc<V>> {
    cache
        .get_or_insert_async(&key, async { read.await.map(Arc::new) })
        .await
}

/// What a parsed file holds in memory, estimated.
pub(crate) trait Weighed {
    fn bytes(&self) -> u64;
}

#[derive(Debug, Clone, Copy)]
struct Bytes;

impl<K, V: Weighed> Weighter<K, Arc<V>> for Bytes {
    fn weight(&self, _: &K, value: &Arc<V>) -> u64 {
        value.bytes().max(1)
    }
}

impl Weighed for Vec<FileEntry> {
    fn bytes(&self) -> u64 {
        let entry = |e: &FileEntry| {
            let bounds = (e.bounds.lower.values())
                .chain(e.bounds.upper.values())
                .map(|v| v.len() + 48)
                .sum::<usize>()
                + e.bounds.null_counts.len() * 32;
            std::mem::size_of::<FileEntry>()
                + e.path.len()
                + bounds
                + e.partition.bytes()
                + e.equality_ids.len() * 4
                + e.vector.as_ref().map_or(0, |v| v.data_file.len())
        };
        self.iter().map(entry).sum::<usize>() as u64
    }
}

impl Weighed for Positions {
    fn bytes(&self) -> u64 {
        (self.iter())
            .map(|(path, rows)| path.len() as u64 + 64 + rows.serialized_size() as u64)
            .sum()
    }
}

impl Weighed for Keys {
    fn bytes(&self) -> u64 {
        (self.iter().flatten())
            .map(|array| array.get_array_memory_size() as u64)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use roaring::RoaringBitmap;

    use super::*;
    use crate::manifest::{ColumnBounds, FileContent, partition};

    fn entry(path: &str) -> FileEntry {
        FileEntry {
            content: FileContent::PositionDeletes,
            path: path.into(),
            format: "PARQUET".into(),
            record_count: 1,
            file_size: 1,
            sequence_number: 1,
            bounds: ColumnBounds::default(),
            partition: partition(0, None),
            equality_ids: Vec::new(),
            vector: None,
        }
    }

    #[tokio::test]
    async fn a_file_is_read_once_for_what_its_reading_depends_on() {
        let cache = FileCache::new(FILE_CACHE_BYTES);
        let reads = AtomicUsize::new(0);
        let manifest = |path: &str, sequence_number| ManifestFile {
            path: path.into(),
            sequence_number,
            spec_id: 0,
        };
        let read = || async {
            reads.fetch_add(1, Ordering::Relaxed);
            Ok::<_, crate::IcebergError>(vec![entry("data.parquet")])
        };
        for m in [manifest("m1", 1), manifest("m1", 1), manifest("m2", 1)] {
            let got = cache.manifest(&m, read()).await.unwrap();
            assert_eq!(got[0].path, "data.parquet");
        }
        assert_eq!(reads.load(Ordering::Relaxed), 2, "m1 once, m2 once");
        // Entries inherit the sequence number their list gives the manifest: another number is
        // another reading.
        cache.manifest(&manifest("m1", 2), read()).await.unwrap();
        assert_eq!(reads.load(Ordering::Relaxed), 3);

        // A failed read keeps nothing: the next plan reads the file again.
        let d1 = entry("d1");
        let failed = cache.deletes(&d1, async {
            Err(crate::IcebergError::Deletes("d1".into(), "damaged".into()))
        });
        assert!(failed.await.is_err());
        let rows = Positions::from([("data.parquet".into(), RoaringBitmap::from_iter([3u32]))]);
        let got = cache.deletes(&d1, async { Ok(rows.clone()) });
        assert_eq!(*got.await.unwrap(), rows);
        let again = cache.deletes(&d1, async { panic!("read again") });
        assert_eq!(*again.await.unwrap(), rows);
    }
}
