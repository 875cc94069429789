//! Where an attached table's indexes live in Sieve's storage, never in the table's own location
//! (Spark's remove-orphan-files would delete them there):
//!
//! ```text
//! attached/iceberg/<table uuid>/indexes/<name>.json       the definition (checked JSON)
//! attached/iceberg/<table uuid>/indexes/<id>/<uuid>.part  its parts (crate::attached_index::part)
//! ```
//!
//! Keyed by the table's UUID, so a table renamed in its catalog keeps its index, and one
//! dropped and created again under the same name does not inherit it. A definition is written
//! last, with a create-if-absent put, after the parts of the first pass: an index whose build
//! failed or was interrupted does not exist, and its parts (under an id no definition names)
//! are never read. Dropping removes the definition first, so no reader starts on a half-deleted
//! index.

use std::ops::Range;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{GetOptions, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};
use sieve_index::FilterKind;
use sieve_index::locator::Location;

use super::part::{self, IndexedFile, IndexedFileEntry, KeptEntries, Part, RowGroupFilters};
use super::part_locator::PartLocator;
use crate::error::{Result, StorageError};
use crate::location::Storage;
use crate::meta::checked_json;
use crate::read::locator_pages;

/// What `CREATE INDEX` over an attached table made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachedIndexDef {
    pub name: String,
    /// Names the directory of its parts: a new index of the same name starts empty.
    pub id: String,
    /// The catalog, namespace and table it was made on, for the indexer to find the table
    /// again; the table is checked to still have `table_uuid`.
    pub catalog: String,
    pub namespace: String,
    pub table: String,
    pub table_uuid: String,
    pub columns: Vec<String>,
    /// The Iceberg field ids of `columns`: a column renamed or replaced since is not the one
    /// indexed.
    pub field_ids: Vec<i32>,
    #[serde(with = "crate::meta::table_def::filter_name")]
    pub filter: FilterKind,
    /// Milliseconds since the Unix epoch.
    pub created_ms: i64,
}

fn table_dir(table_uuid: &str) -> Path {
    Path::from_iter(["attached", "iceberg", table_uuid, "indexes"])
}

fn definition_path(table_uuid: &str, name: &str) -> Path {
    table_dir(table_uuid).join(format!("{name}.json"))
}

fn parts_dir(def: &AttachedIndexDef) -> Path {
    table_dir(&def.table_uuid).join(def.id.as_str())
}

/// Reads and writes attached tables' indexes in one Sieve storage.
#[derive(Debug, Clone)]
pub struct AttachedIndexes {
    storage: Storage,
}

impl AttachedIndexes {
    pub fn new(storage: Storage) -> Self {
        Self { storage }
    }

    /// The storage the indexes are in, whose caches attached tables' reads share.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The indexes of the table whose UUID is `table_uuid`, by name.
    pub async fn definitions(&self, table_uuid: &str) -> Result<Vec<AttachedIndexDef>> {
        let store = self.storage.store();
        let listed = store
            .list_with_delimiter(Some(&table_dir(table_uuid)))
            .await?;
        let mut defs = Vec::new();
        for object in listed.objects {
            if object.location.extension() != Some("json") {
                continue;
            }
            defs.push(self.definition_at(&object.location).await?);
        }
        defs.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(defs)
    }

    /// Every index of every attached table: what a background indexer keeps up to date.
    pub async fn all_definitions(&self) -> Result<Vec<AttachedIndexDef>> {
        let store = self.storage.store();
        let tables = Path::from_iter(["attached", "iceberg"]);
        let listed = store.list_with_delimiter(Some(&tables)).await?;
        let mut defs = Vec::new();
        for prefix in listed.common_prefixes {
            if let Some(uuid) = prefix.filename() {
                defs.extend(self.definitions(uuid).await?);
            }
        }
        Ok(defs)
    }

    async fn definition_at(&self, path: &Path) -> Result<AttachedIndexDef> {
        let bytes = self.storage.store().get(path).await?.bytes().await?;
        checked_json::decode(path.as_ref(), &bytes)
    }

    /// Makes `def` visible to readers, once its first pass's parts are written; fails if the
    /// table has an index of that name.
    pub async fn create(&self, def: &AttachedIndexDef) -> Result<()> {
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        let body = PutPayload::from(checked_json::encode(def)?);
        let path = definition_path(&def.table_uuid, &def.name);
        match self.storage.store().put_opts(&path, body, opts).await {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => Err(StorageError::Invalid(format!(
                "index '{}' on {}.{}.{} already exists",
                def.name, def.catalog, def.namespace, def.table
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes the index `name` of the table: the definition, then its parts. False if there
    /// was none.
    pub async fn drop(&self, table_uuid: &str, name: &str) -> Result<bool> {
        let path = definition_path(table_uuid, name);
        let def = match self.definition_at(&path).await {
            Ok(def) => def,
            Err(StorageError::ObjectStore(object_store::Error::NotFound { .. })) => {
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        self.storage.store().delete(&path).await?;
        self.remove_parts(&def).await?;
        Ok(true)
    }

    /// Deletes every part of `def` (an index dropped, or a first pass that failed).
    pub async fn remove_parts(&self, def: &AttachedIndexDef) -> Result<()> {
        let store = self.storage.store();
        let parts = store
            .list(Some(&parts_dir(def)))
            .map_ok(|m| m.location)
            .boxed();
        store
            .delete_stream(parts)
            .try_for_each(|_| async { Ok(()) })
            .await?;
        Ok(())
    }

    /// Deletes `parts` (merged into others, or holding only files their table no longer has).
    /// A part already gone (another process removed it) is not an error.
    pub async fn remove(&self, parts: &[Path]) -> Result<()> {
        let paths: Vec<Result<Path, object_store::Error>> = parts.iter().cloned().map(Ok).collect();
        let paths = futures::stream::iter(paths).boxed();
        let mut deleted = self.storage.store().delete_stream(paths);
        while let Some(done) = deleted.next().await {
            match done {
                Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Writes one part of `def` holding `files` and the `locator` built over them; its path.
    pub async fn write_part(
        &self,
        def: &AttachedIndexDef,
        files: &[IndexedFile],
        locator: Option<&[u8]>,
    ) -> Result<Path> {
        let name = uuid::Uuid::new_v4().simple().to_string();
        let path = parts_dir(def).join(format!("{name}.part"));
        let body = PutPayload::from(part::encode(files, &def.columns, locator)?);
        self.storage.store().put(&path, body).await?;
        Ok(path)
    }

    /// The parts of `def` written so far.
    pub async fn parts(&self, def: &AttachedIndexDef) -> Result<Vec<Path>> {
        let store = self.storage.store();
        let mut parts: Vec<Path> = store
            .list(Some(&parts_dir(def)))
            .try_filter_map(|m| async move {
                Ok((m.location.extension() == Some("part")).then_some(m.location))
            })
            .try_collect()
            .await?;
        parts.sort();
        Ok(parts)
    }

    /// Where each of `hashes` may be in the `column`-th column of a part's `locator`: one ranged
    /// read of the part per hash unless the pages are cached. An error (a missing part, a
    /// damaged page) means the part's row groups must be probed another way.
    pub async fn locate(
        &self,
        locator: &PartLocator,
        column: usize,
        hashes: &[u64],
    ) -> Result<Vec<Location>> {
        let (path, header) = (&locator.path, &locator.header);
        let column = header
            .columns
            .get(column)
            .ok_or_else(|| StorageError::Invalid(format!("{path}: no locator column {column}")))?;
        let reads = locator_pages::locate(
            &self.storage,
            path,
            locator.offset,
            header,
            column,
            hashes,
            None,
        );
        // A page that fails its checks damages the part, as its filters' would.
        match reads.await {
            Ok((found, _)) => Ok(found),
            Err(StorageError::Index(e)) => {
                Err(StorageError::Damaged(path.to_string(), e.to_string()))
            }
            Err(e) => Err(e),
        }
    }

    /// The filters and slice maps of `entry` of the part at `part`: one ranged read unless
    /// cached (concurrent lookups of the same row group wait for one read). An error (a
    /// missing part, damaged bytes) means the row group must be read whole.
    pub async fn filters(
        &self,
        part: &Path,
        entry: &IndexedFileEntry,
    ) -> Result<Arc<RowGroupFilters>> {
        let range = entry.filters.range();
        let key = (part.to_string(), range.start, range.end);
        let cache = &self.storage.caches().attached_filters;
        let read = async {
            let bytes = self.storage.store().get_range(part, range).await?;
            let filters = part::read_filters(&bytes, entry)
                .map_err(|why| StorageError::Damaged(part.to_string(), why))?;
            Ok::<_, StorageError>(Arc::new(filters))
        };
        cache.get_or_insert_async(&key, read).await
    }

    /// The part's entries, as much of them as `keep` says: its header and its locator's,
    /// read by range (the first [`part::FIRST_READ`] bytes, then what they did not hold), or
    /// the whole part before format 5.
    pub async fn read_part(&self, path: &Path, keep: KeptEntries<'_>) -> Result<Part> {
        let store = self.storage.store();
        let options = GetOptions {
            range: Some((0..part::FIRST_READ).into()),
            ..Default::default()
        };
        let first = store.get_opts(path, options).await?;
        let size = first.meta.size;
        let head = first.bytes().await?;
        let whole = head.len() as u64 == size;
        let reads = part::Preamble::parse(path, &head)?.reads();
        let Some((header, locator)) = reads.filter(|_| !whole) else {
            let bytes = match whole {
                true => head,
                false => store.get(path).await?.bytes().await?,
            };
            return part::decode(path, bytes, keep);
        };
        let read = |range: Range<u64>| {
            let head = head.clone();
            async move {
                match range.end <= head.len() as u64 {
                    true => Ok(head.slice(range.start as usize..range.end as usize)),
                    false => store.get_range(path, range).await,
                }
            }
        };
        let locator = async {
            match locator {
                Some(range) => read(range).await.map(Some),
                None => Ok(None),
            }
        };
        let (header, locator) = futures::try_join!(read(header), locator)?;
        part::decode_head(path, &header, size, locator.as_deref(), keep)
    }
}
