//! Equality delete files (spec: "Equality Delete Files", what Flink's upserts and merge-on-read
//! writers commit): rows of some of a table's columns, named by the file's `equality_ids`. Each
//! deletes every row whose columns equal it (a null equal to a null) from the data files of an
//! older data sequence number, in the delete file's partition unless its spec is unpartitioned.
//! A data file written in the same commit as the delete has the same sequence number and keeps
//! its rows: that is how an upsert replaces a row.
//!
//! The keys of all delete files over the same columns and partition are held together, each
//! with the highest sequence number of a delete of it, so a data file asks one hash set per
//! column set whatever the number of commits, and the memory is one entry per deleted key. A
//! key is held in arrow's row format, which encodes a tuple of columns as bytes that are equal
//! exactly when the values are.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_row::{RowConverter, SortField};
use arrow_schema::{ArrowError, DataType, Schema as ArrowSchema};
use futures::{StreamExt, TryStreamExt};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::error::{IcebergError, Result};
use crate::file_cache::{FileCache, Keys};
use crate::manifest::{FileEntry, Partition};
use crate::schema::{field_id, field_with_id};
use crate::table_scan::CONCURRENT_READS;
use crate::warehouse::Warehouse;

/// The equality deletes that apply to one data file.
#[derive(Debug, Clone)]
pub struct EqualityDeletes {
    /// The data file's data sequence number: deletes of a higher one remove its rows.
    pub sequence_number: i64,
    /// One set of deleted keys per column set.
    pub keys: Vec<Arc<DeletedKeys>>,
}

/// The keys deleted over one set of columns in one partition (or all of them).
pub struct DeletedKeys {
    field_ids: Vec<i32>,
    /// The columns' types in the table's current schema, which rows are read as.
    types: Vec<DataType>,
    converter: RowConverter,
    /// Each key, in the row format, with the highest sequence number of a delete of it.
    keys: HashMap<Box<[u8]>, i64>,
    highest: i64,
}

impl std::fmt::Debug for DeletedKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("DeletedKeys")
            .field("field_ids", &self.field_ids)
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl DeletedKeys {
    /// The columns compared, by field id.
    pub fn field_ids(&self) -> &[i32] {
        &self.field_ids
    }

    /// The types [`Self::mark`] takes the columns as.
    pub fn types(&self) -> &[DataType] {
        &self.types
    }

    /// Sets `deleted[i]` for each row `i` of `columns` (the data file's values of
    /// [`Self::field_ids`], as [`Self::types`]) that a delete removes from a data file of
    /// sequence number `sequence`.
    pub fn mark(
        &self,
        columns: &[ArrayRef],
        sequence: i64,
        deleted: &mut [bool],
    ) -> std::result::Result<(), ArrowError> {
        if self.highest <= sequence {
            return Ok(());
        }
        let rows = self.converter.convert_columns(columns)?;
        for (i, row) in rows.iter().enumerate() {
            if self.keys.get(row.as_ref()).is_some_and(|&s| s > sequence) {
                deleted[i] = true;
            }
        }
        Ok(())
    }
}

/// The keys of the delete files `deletes` (equality delete entries), grouped by column set and
/// partition, and a way to find those that apply to a data file.
pub struct KeysByPartition {
    groups: Vec<(Option<Partition>, Arc<DeletedKeys>)>,
}

impl KeysByPartition {
    /// Reads the delete files, their columns cast to the types `schema` (the table's current
    /// schema) gives their field ids; `table` names the table in errors.
    pub async fn read(
        warehouse: &Warehouse,
        files: &FileCache,
        table: &str,
        schema: &ArrowSchema,
        deletes: &[FileEntry],
    ) -> Result<Self> {
        let reads: Vec<_> = deletes
            .iter()
            .map(|entry| async move {
                let types = key_types(table, schema, entry)?;
                let read = read_keys(warehouse, &types, entry);
                let keys = files.keys(&entry.path, &types, read).await?;
                Ok::<_, IcebergError>((types, keys))
            })
            .collect();
        let read: Vec<(Vec<DataType>, Arc<Keys>)> = futures::stream::iter(reads)
            .buffered(CONCURRENT_READS)
            .try_collect()
            .await?;
        Self::group(deletes, read)
    }

    /// The keys of `deletes`, whose columns `read` holds (their types in the table and their
    /// batches, in the same order), grouped by columns and partition.
    fn group(deletes: &[FileEntry], read: Vec<(Vec<DataType>, Arc<Keys>)>) -> Result<Self> {
        // Grouped by columns and partition (None: an unpartitioned spec's, applying to all).
        let mut grouped: HashMap<(Vec<i32>, Option<Partition>), DeletedKeys> = HashMap::new();
        for (entry, (types, batches)) in deletes.iter().zip(read) {
            let scope = (!entry.partition.unpartitioned).then(|| entry.partition.clone());
            let group = match grouped.entry((entry.equality_ids.clone(), scope)) {
                std::collections::hash_map::Entry::Occupied(group) => group.into_mut(),
                std::collections::hash_map::Entry::Vacant(vacant) => {
                    let fields = types.iter().cloned().map(SortField::new).collect();
                    let converter = RowConverter::new(fields)
                        .map_err(|e| IcebergError::Deletes(entry.path.clone(), e.to_string()))?;
                    vacant.insert(DeletedKeys {
                        field_ids: entry.equality_ids.clone(),
                        types,
                        converter,
                        keys: HashMap::new(),
                        highest: i64::MIN,
                    })
                }
            };
            let sequence = entry.sequence_number;
            for columns in batches.iter() {
                let rows = (group.converter.convert_columns(columns))
                    .map_err(|e| IcebergError::Deletes(entry.path.clone(), e.to_string()))?;
                for row in rows.iter() {
                    let highest = group.keys.entry(row.as_ref().into()).or_insert(sequence);
                    *highest = (*highest).max(sequence);
                }
            }
            group.highest = group.highest.max(sequence);
        }
        let groups = grouped
            .into_iter()
            .map(|((_, scope), keys)| (scope, Arc::new(keys)))
            .collect();
        Ok(Self { groups })
    }

    /// The deletes that can remove rows of the data file `file`; None when none can.
    pub fn applying_to(&self, file: &FileEntry) -> Option<EqualityDeletes> {
        let keys: Vec<Arc<DeletedKeys>> = (self.groups.iter())
            .filter(|(scope, keys)| {
                keys.highest > file.sequence_number
                    && scope.as_ref().is_none_or(|p| *p == file.partition)
            })
            .map(|(_, keys)| keys.clone())
            .collect();
        (!keys.is_empty()).then_some(EqualityDeletes {
            sequence_number: file.sequence_number,
            keys,
        })
    }
}

/// The types of an equality delete file's columns in the table (by the file's `equality_ids`, in
/// that order, in `schema`: the current schema's columns and those it dropped that deletes
/// compare): what its keys are compared as.
fn key_types(table: &str, schema: &ArrowSchema, entry: &FileEntry) -> Result<Vec<DataType>> {
    if entry.format != "PARQUET" {
        return Err(IcebergError::Unsupported(
            table.to_string(),
            format!(
                "its snapshot has equality deletes that are not Parquet ({})",
                entry.path
            ),
        ));
    }
    if entry.equality_ids.is_empty() {
        let why = "an equality delete file without equality_ids".into();
        return Err(IcebergError::Deletes(entry.path.clone(), why));
    }
    (entry.equality_ids.iter())
        .map(|&id| {
            let to = field_with_id(schema, id).ok_or_else(|| {
                IcebergError::Unsupported(
                    table.to_string(),
                    format!(
                        "an equality delete ({}) compares field id {id}, which no schema of \
                         the table has",
                        entry.path
                    ),
                )
            })?;
            Ok(to.data_type().clone())
        })
        .collect()
}

/// The batches of one equality delete file's columns (its `equality_ids`) cast to `types`.
/// Read whole: such a file holds the keys of one commit's deletes.
async fn read_keys(warehouse: &Warehouse, types: &[DataType], entry: &FileEntry) -> Result<Keys> {
    let bad = |why: String| IcebergError::Deletes(entry.path.clone(), why);
    let bytes = warehouse.read(&entry.path).await?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(|e| bad(e.to_string()))?;
    let file_schema = builder.schema().clone();
    let mut at = Vec::with_capacity(entry.equality_ids.len());
    for (&id, to) in entry.equality_ids.iter().zip(types) {
        let in_file = (file_schema.fields().iter())
            .position(|f| field_id(f) == Some(id))
            .ok_or_else(|| bad(format!("no column with field id {id}")))?;
        at.push((in_file, to));
    }
    let mut roots: Vec<usize> = at.iter().map(|(i, _)| *i).collect();
    roots.sort_unstable();
    roots.dedup();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots.iter().copied());
    let batches = builder
        .with_projection(mask)
        .build()
        .map_err(|e| bad(e.to_string()))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    (batches.iter())
        .map(|batch| {
            (at.iter())
                .map(|(in_file, to)| {
                    let projected = roots.binary_search(in_file).expect("projected");
                    arrow_cast::cast(batch.column(projected), to).map_err(|e| bad(e.to_string()))
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use apache_avro::types::Value;
    use arrow_array::{Int64Array, StringArray};

    use super::*;
    use crate::manifest::{ColumnBounds, FileContent, partition};

    fn entry(content: FileContent, sequence: i64, region: Option<&str>, ids: &[i32]) -> FileEntry {
        let record = region.map(|r| Value::Record(vec![("region".into(), r.into())]));
        FileEntry {
            content,
            path: format!("f{sequence}{region:?}"),
            format: "PARQUET".into(),
            record_count: 1,
            file_size: 1,
            sequence_number: sequence,
            bounds: ColumnBounds::default(),
            partition: partition(1, record.as_ref()),
            equality_ids: ids.to_vec(),
            vector: None,
        }
    }

    fn ids(values: &[Option<i64>]) -> Vec<ArrayRef> {
        vec![Arc::new(Int64Array::from(values.to_vec()))]
    }

    /// Which rows of `columns` the deletes applying to `file` remove.
    fn deleted(keys: &KeysByPartition, file: &FileEntry, columns: &[ArrayRef]) -> Vec<bool> {
        let mut deleted = vec![false; columns[0].len()];
        if let Some(deletes) = keys.applying_to(file) {
            for set in &deletes.keys {
                let of_set: Vec<ArrayRef> = match set.field_ids() {
                    [1] => columns[..1].to_vec(),
                    _ => columns.to_vec(),
                };
                set.mark(&of_set, deletes.sequence_number, &mut deleted)
                    .unwrap();
            }
        }
        deleted
    }

    #[test]
    fn deletes_apply_to_older_files_of_their_partition_and_a_null_equals_a_null() {
        use FileContent::{Data, EqualityDeletes};
        let long = vec![DataType::Int64];
        let both = vec![DataType::Int64, DataType::Utf8];
        let names = |v: &[Option<&str>]| -> ArrayRef { Arc::new(StringArray::from(v.to_vec())) };
        let deletes = vec![
            // Sequence 3, unpartitioned: id 1 and a null id, everywhere.
            entry(EqualityDeletes, 3, None, &[1]),
            // Sequence 5, region a only: id 2; and (id 3, name "x") there too.
            entry(EqualityDeletes, 5, Some("a"), &[1]),
            entry(EqualityDeletes, 5, Some("a"), &[1, 2]),
        ];
        let read = vec![
            (long.clone(), Arc::new(vec![ids(&[Some(1), None])])),
            (long, Arc::new(vec![ids(&[Some(2)])])),
            (
                both,
                Arc::new(vec![vec![ids(&[Some(3)])[0].clone(), names(&[Some("x")])]]),
            ),
        ];
        let keys = KeysByPartition::group(&deletes, read).unwrap();
        let rows = vec![
            ids(&[Some(1), None, Some(2), Some(3), Some(3), Some(4)])[0].clone(),
            names(&[
                Some("x"),
                Some("x"),
                Some("x"),
                Some("x"),
                Some("y"),
                Some("x"),
            ]),
        ];
        let (t, f) = (true, false);
        // Older, in region a: every delete applies.
        let a2 = entry(Data, 2, Some("a"), &[]);
        assert_eq!(deleted(&keys, &a2, &rows), [t, t, t, t, f, f]);
        // Region b: only the unpartitioned delete.
        let b2 = entry(Data, 2, Some("b"), &[]);
        assert_eq!(deleted(&keys, &b2, &rows), [t, t, f, f, f, f]);
        // Of sequence 3: the delete of the same sequence number (an upsert's) leaves it.
        let a3 = entry(Data, 3, Some("a"), &[]);
        assert_eq!(deleted(&keys, &a3, &rows), [f, f, t, t, f, f]);
        // Newer than every delete: nothing applies.
        assert!(keys.applying_to(&entry(Data, 5, Some("a"), &[])).is_none());
    }
}
