//! What a read of a table's current snapshot must scan (spec: "Scan Planning"): its live data
//! files, each with the row ordinals position deletes and deletion vectors remove from it and
//! the keys equality deletes remove, and the Arrow schema to read them as.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arrow_schema::{FieldRef, Schema as ArrowSchema};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use roaring::RoaringBitmap;

use crate::deletion_vectors;
use crate::equality_deletes::{EqualityDeletes, KeysByPartition};
use crate::error::{IcebergError, Result};
use crate::file_cache::FileCache;
use crate::manifest::{self, ColumnBounds, FileContent, FileEntry, ManifestFile};
use crate::metadata::TableMetadata;
use crate::name_mapping::FileNames;
use crate::position_deletes;
use crate::schema::field_with_id;
use crate::warehouse::Warehouse;

/// Manifests and delete files read at once.
pub(crate) const CONCURRENT_READS: usize = 16;

#[derive(Debug)]
pub struct TableScan {
    pub schema: Arc<ArrowSchema>,
    pub files: Vec<DataFile>,
    /// The snapshot read; None for a table without one (no rows).
    pub snapshot_id: Option<i64>,
    /// What Sieve keys the table's indexes by; None for a v1 table without one.
    pub table_uuid: Option<String>,
    /// How a data file without field ids names the table's columns.
    pub file_names: Arc<FileNames>,
    /// Columns the table has dropped that equality deletes still compare (spec: "If a delete
    /// column in an equality delete file is later dropped from the table, it must still be
    /// used when applying the equality deletes"), as the newest schema that had each typed
    /// it: read from the data files by field id to apply the deletes, never output.
    pub dropped_keys: Vec<FieldRef>,
    /// The metadata file it was planned from: files are never rewritten, so this names the
    /// same scan wherever it is planned again ([`crate::IcebergCatalog::scan_at`]).
    pub metadata_location: String,
    /// `files` by path, made when first asked ([`Self::file`]): a worker reads the few files
    /// its coordinator chose without going over all the snapshot's.
    by_path: OnceLock<HashMap<String, usize>>,
}

#[derive(Debug)]
pub struct DataFile {
    /// The path in the warehouse's store.
    pub path: Path,
    pub record_count: u64,
    pub file_size: u64,
    /// The row ordinals position deletes remove; None when none do.
    pub deleted: Option<RoaringBitmap>,
    /// Its columns' bounds and null counts as its manifest entry gives them.
    pub bounds: ColumnBounds,
    /// The equality deletes that can remove its rows; None when none can.
    pub equality_deletes: Option<EqualityDeletes>,
}

impl TableScan {
    /// The data file at `path`, if the snapshot has one there.
    pub fn file(&self, path: &str) -> Option<&DataFile> {
        let by_path = self.by_path.get_or_init(|| {
            (self.files.iter().enumerate())
                .map(|(i, file)| (file.path.to_string(), i))
                .collect()
        });
        by_path.get(path).map(|&i| &self.files[i])
    }

    /// Plans a read of the table whose metadata file is `metadata_location`; `table` names it
    /// in errors. Manifests and delete files an earlier plan read are taken from `files`.
    pub(crate) async fn plan(
        warehouse: &Warehouse,
        files: &FileCache,
        table: &str,
        metadata_location: &str,
    ) -> Result<Self> {
        let bytes = warehouse.read(metadata_location).await?;
        let metadata = TableMetadata::parse(metadata_location, &bytes)?;
        let current = metadata.current_schema()?;
        let file_names = Arc::new(FileNames::of(&metadata, current));
        (current.nested_names_stable(metadata.all_schemas()))
            .map_err(|why| IcebergError::Unsupported(table.to_string(), why))?;
        let schema = current.to_arrow(table)?;
        let Some(snapshot) = metadata.current_snapshot()? else {
            return Ok(Self {
                schema,
                files: Vec::new(),
                snapshot_id: None,
                table_uuid: metadata.table_uuid,
                file_names,
                dropped_keys: Vec::new(),
                metadata_location: metadata_location.to_string(),
                by_path: OnceLock::new(),
            });
        };
        let manifests = match (&snapshot.manifest_list, &snapshot.manifests) {
            (Some(list), _) => manifest::read_manifest_list(list, &warehouse.read(list).await?)?,
            (None, Some(paths)) => paths
                .iter()
                .map(|path| ManifestFile {
                    path: path.clone(),
                    sequence_number: 0,
                    spec_id: 0,
                })
                .collect(),
            (None, None) => {
                return Err(IcebergError::Metadata(
                    metadata_location.to_string(),
                    format!("snapshot {} names no manifests", snapshot.snapshot_id),
                ));
            }
        };
        // Futures made before they are streamed: a stream mapping borrowed items through a
        // closure fails the Send check of async_trait callers (a higher-ranked lifetime error).
        let reads: Vec<_> = manifests
            .iter()
            .map(|m| {
                files.manifest(m, async move {
                    manifest::read_manifest(m, &warehouse.read(&m.path).await?)
                })
            })
            .collect();
        let entries: Vec<Arc<Vec<FileEntry>>> = futures::stream::iter(reads)
            .buffered(CONCURRENT_READS)
            .try_collect()
            .await?;
        let (mut data, mut deletes, mut equality) = (Vec::new(), Vec::new(), Vec::new());
        for entry in entries.iter().flat_map(|m| m.iter()).cloned() {
            let kind = match (entry.content, entry.format.as_str()) {
                (FileContent::Data, "PARQUET") => {
                    data.push(entry);
                    continue;
                }
                (FileContent::PositionDeletes, "PARQUET" | "PUFFIN") => {
                    deletes.push(entry);
                    continue;
                }
                (FileContent::EqualityDeletes, _) => {
                    equality.push(entry);
                    continue;
                }
                (FileContent::Data, _) => "data files that are not Parquet",
                (FileContent::PositionDeletes, _) => "position deletes that are not Parquet",
            };
            return Err(IcebergError::Unsupported(
                table.to_string(),
                format!(
                    "its snapshot has {kind} ({}), which Sieve does not read yet",
                    entry.path
                ),
            ));
        }
        // A geometry's bounds are a bounding box, a variant's a variant: left out, so no pruning
        // reads them as min/max.
        let without_min_max = current.ids_without_min_max();
        let deleted = deleted_rows(warehouse, files, &data, &deletes).await?;
        let dropped_keys = dropped_keys(&metadata, &schema, &equality);
        let with_dropped = ArrowSchema::new(
            (schema.fields().iter())
                .chain(&dropped_keys)
                .cloned()
                .collect::<Vec<_>>(),
        );
        let keys = KeysByPartition::read(warehouse, files, table, &with_dropped, &equality).await?;
        let files = data
            .into_iter()
            .enumerate()
            .map(|(i, entry)| {
                Ok(DataFile {
                    path: warehouse.path(&entry.path)?,
                    record_count: entry.record_count,
                    file_size: entry.file_size,
                    deleted: deleted.get(&i).cloned(),
                    equality_deletes: keys.applying_to(&entry),
                    bounds: entry.bounds.without(&without_min_max),
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            schema,
            files,
            snapshot_id: Some(snapshot.snapshot_id),
            table_uuid: metadata.table_uuid.clone(),
            file_names,
            dropped_keys,
            metadata_location: metadata_location.to_string(),
            by_path: OnceLock::new(),
        })
    }
}

/// The fields `equality` deletes compare that `current` has not, each as the newest schema that
/// has it types it (schemas are listed oldest first), nullable. An id no schema has is left to
/// [`KeysByPartition::read`] to refuse.
fn dropped_keys(
    metadata: &TableMetadata,
    current: &ArrowSchema,
    equality: &[FileEntry],
) -> Vec<FieldRef> {
    let mut ids: Vec<i32> = (equality.iter())
        .flat_map(|entry| entry.equality_ids.iter().copied())
        .filter(|&id| field_with_id(current, id).is_none())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Vec::new();
    }
    let older: Vec<Arc<ArrowSchema>> = (metadata.all_schemas())
        .filter_map(|schema| schema.to_arrow("").ok())
        .collect();
    // Nullable whatever it was: files written after the drop have no value for it.
    let nullable = |field: &FieldRef| Arc::new(field.as_ref().clone().with_nullable(true));
    (ids.into_iter())
        .filter_map(|id| {
            older
                .iter()
                .rev()
                .find_map(|s| field_with_id(s, id).map(nullable))
        })
        .collect()
}

/// The deleted ordinals of each data file (by its place in `data`) that `deletes` remove: a
/// position delete file or deletion vector applies to a data file of the same or an older
/// sequence number. A data file's vector holds the position deletes written for it before
/// (writers merge them in), so taking both is the vector's rows again, never fewer.
async fn deleted_rows(
    warehouse: &Warehouse,
    files: &FileCache,
    data: &[FileEntry],
    deletes: &[FileEntry],
) -> Result<HashMap<usize, RoaringBitmap>> {
    let reads: Vec<_> = deletes
        .iter()
        .map(|entry| {
            files.deletes(entry, async move {
                match entry.format.as_str() {
                    "PUFFIN" => deletion_vectors::read(warehouse, entry).await,
                    _ => position_deletes::read(warehouse, entry).await,
                }
            })
        })
        .collect();
    let read: Vec<Arc<position_deletes::Positions>> = futures::stream::iter(reads)
        .buffered(CONCURRENT_READS)
        .try_collect()
        .await?;
    let mut deleted = HashMap::new();
    for (i, file) in data.iter().enumerate() {
        for (entry, positions) in deletes.iter().zip(&read) {
            if entry.sequence_number < file.sequence_number {
                continue;
            }
            if let Some(rows) = positions.get(&file.path) {
                *deleted.entry(i).or_insert_with(RoaringBitmap::new) |= rows;
            }
        }
    }
    Ok(deleted)
}
