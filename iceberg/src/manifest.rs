//! Manifest lists and manifests (spec: "Manifests", "Manifest Lists"): Avro object container
//! files naming a snapshot's data and delete files. Fields are found by the spec's names, which
//! every writer uses; fields a reader of v1 and v2 tables does not need are not decoded into
//! anything. Sequence numbers left null are inherited as the spec's "Sequence Number
//! Inheritance" says. A data file's column bounds and null counts are kept as the manifest has
//! them (by field id, in the spec's single-value serialization), for lookups to prune files.

use std::collections::HashMap;

use apache_avro::Reader;
use apache_avro::types::Value;

use crate::error::{IcebergError, Result};

/// One manifest as its snapshot's manifest list names it.
#[derive(Debug, Clone)]
pub struct ManifestFile {
    pub path: String,
    /// Added entries whose sequence number is null inherit this one.
    pub sequence_number: i64,
    /// The partition spec its files were written with.
    pub spec_id: i32,
}

/// What a data or delete file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileContent {
    Data,
    PositionDeletes,
    EqualityDeletes,
}

/// A live (added or existing) file of a manifest.
#[derive(Debug, Clone)]
pub struct FileEntry {
    pub content: FileContent,
    pub path: String,
    /// `PARQUET`, `AVRO`, `ORC` or `PUFFIN`, upper-cased.
    pub format: String,
    pub record_count: u64,
    pub file_size: u64,
    /// The data sequence number, inherited where null.
    pub sequence_number: i64,
    pub bounds: ColumnBounds,
    /// The partition its rows belong to.
    pub partition: Partition,
    /// An equality delete file's columns, by field id; empty for other files.
    pub equality_ids: Vec<i32>,
    /// A deletion vector's data file and place in its Puffin file; None for other files.
    pub vector: Option<VectorBlob>,
}

/// Where a deletion vector (v3) lies: a blob of a Puffin file, deleting from one data file.
#[derive(Debug, Clone)]
pub struct VectorBlob {
    pub data_file: String,
    pub offset: u64,
    pub size: u64,
}

/// A file's partition (spec: "Partitioning"): its spec and the values of the spec's fields, for
/// equality deletes, which apply within their partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Partition {
    pub spec_id: i32,
    /// The values as Avro holds them, in a form that compares and hashes (Avro's values do
    /// neither): equal exactly when the values are.
    values: String,
    /// Whether the spec has no fields: an equality delete of such a spec applies to every
    /// partition.
    pub unpartitioned: bool,
}

impl Partition {
    /// The bytes its values take as kept.
    pub(crate) fn bytes(&self) -> usize {
        self.values.len()
    }
}

/// What a manifest says of a data file's columns, by field id: the lower and upper bounds of
/// their non-null values (single-value serialization, spec Appendix D; a string's may be
/// truncated, its upper bound then raised so it still bounds), and their null counts. A column
/// the writer kept no metrics for is absent.
#[derive(Debug, Clone, Default)]
pub struct ColumnBounds {
    pub lower: HashMap<i32, Vec<u8>>,
    pub upper: HashMap<i32, Vec<u8>>,
    pub null_counts: HashMap<i32, u64>,
}

impl ColumnBounds {
    /// The same without the bounds of the fields `ids` (their null counts kept).
    pub fn without(mut self, ids: &[i32]) -> Self {
        for id in ids {
            self.lower.remove(id);
            self.upper.remove(id);
        }
        self
    }
}

/// The manifests of a manifest list, read from `uri`.
pub fn read_manifest_list(uri: &str, bytes: &[u8]) -> Result<Vec<ManifestFile>> {
    let bad = |why: String| IcebergError::Manifest(uri.to_string(), why);
    records(bytes, &bad)?
        .iter()
        .map(|record| {
            Ok(ManifestFile {
                path: string(field(record, "manifest_path"))
                    .ok_or_else(|| bad("an entry without manifest_path".into()))?,
                sequence_number: int(field(record, "sequence_number")).unwrap_or(0),
                spec_id: int(field(record, "partition_spec_id"))
                    .and_then(|id| i32::try_from(id).ok())
                    .unwrap_or(0),
            })
        })
        .collect()
}

/// The live files of the manifest `manifest` names, read from its bytes.
pub fn read_manifest(manifest: &ManifestFile, bytes: &[u8]) -> Result<Vec<FileEntry>> {
    let bad = |why: String| IcebergError::Manifest(manifest.path.clone(), why);
    let mut live = Vec::new();
    for record in records(bytes, &bad)? {
        // 0 EXISTING, 1 ADDED, 2 DELETED: deleted entries only record a removal.
        let status =
            int(field(&record, "status")).ok_or_else(|| bad("an entry without status".into()))?;
        if status == 2 {
            continue;
        }
        let sequence_number = match int(field(&record, "sequence_number")) {
            Some(n) => n,
            None if status == 1 || manifest.sequence_number == 0 => manifest.sequence_number,
            None => return Err(bad("an existing entry without its sequence number".into())),
        };
        let file =
            field(&record, "data_file").ok_or_else(|| bad("an entry without data_file".into()))?;
        let content = match int(field(file, "content")).unwrap_or(0) {
            0 => FileContent::Data,
            1 => FileContent::PositionDeletes,
            2 => FileContent::EqualityDeletes,
            other => return Err(bad(format!("data file content {other}"))),
        };
        let count = |name: &str| {
            int(field(file, name))
                .and_then(|n| u64::try_from(n).ok())
                .ok_or_else(|| bad(format!("a data file without {name}")))
        };
        let format = string(field(file, "file_format"))
            .unwrap_or_default()
            .to_ascii_uppercase();
        let vector = match format.as_str() {
            "PUFFIN" => (|| {
                Some(VectorBlob {
                    data_file: string(field(file, "referenced_data_file"))?,
                    offset: u64::try_from(int(field(file, "content_offset"))?).ok()?,
                    size: u64::try_from(int(field(file, "content_size_in_bytes"))?).ok()?,
                })
            })(),
            _ => None,
        };
        live.push(FileEntry {
            content,
            path: string(field(file, "file_path"))
                .ok_or_else(|| bad("a data file without file_path".into()))?,
            format,
            vector,
            record_count: count("record_count")?,
            file_size: count("file_size_in_bytes")?,
            sequence_number,
            partition: partition(manifest.spec_id, field(file, "partition")),
            equality_ids: match field(file, "equality_ids") {
                Some(Value::Array(ids)) => ids
                    .iter()
                    .map(|id| int(Some(unwrap(id))).and_then(|id| i32::try_from(id).ok()))
                    .collect::<Option<_>>()
                    .ok_or_else(|| bad("equality_ids that are not field ids".into()))?,
                _ => Vec::new(),
            },
            bounds: ColumnBounds {
                lower: by_field_id(field(file, "lower_bounds"), bytes_of),
                upper: by_field_id(field(file, "upper_bounds"), bytes_of),
                null_counts: by_field_id(field(file, "null_value_counts"), |v| {
                    u64::try_from(int(Some(v))?).ok()
                }),
            },
        });
    }
    Ok(live)
}

/// The partition of spec `spec_id` whose values the manifest entry's `partition` record holds.
pub(crate) fn partition(spec_id: i32, record: Option<&Value>) -> Partition {
    let values: &[(String, Value)] = match record {
        Some(Value::Record(fields)) => fields,
        _ => &[],
    };
    let values: Vec<&Value> = values.iter().map(|(_, v)| unwrap(v)).collect();
    Partition {
        spec_id,
        unpartitioned: values.is_empty(),
        values: format!("{values:?}"),
    }
}

/// The records of an Avro object container file.
fn records(bytes: &[u8], bad: &impl Fn(String) -> IcebergError) -> Result<Vec<Value>> {
    let reader = Reader::new(bytes).map_err(|e| bad(e.to_string()))?;
    reader
        .map(|value| value.map_err(|e| bad(e.to_string())))
        .collect()
}

/// A record's field by name, through the union an optional field is written as.
fn field<'a>(record: &'a Value, name: &str) -> Option<&'a Value> {
    let Value::Record(fields) = unwrap(record) else {
        return None;
    };
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| unwrap(v))
        .filter(|v| !matches!(v, Value::Null))
}

fn unwrap(value: &Value) -> &Value {
    match value {
        Value::Union(_, inner) => unwrap(inner),
        other => other,
    }
}

fn int(value: Option<&Value>) -> Option<i64> {
    match value? {
        Value::Int(n) => Some(i64::from(*n)),
        Value::Long(n) => Some(*n),
        _ => None,
    }
}

fn bytes_of(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::Bytes(b) | Value::Fixed(_, b) => Some(b.clone()),
        _ => None,
    }
}

/// An Iceberg map keyed by field id, which Avro holds as an array of key/value records; entries
/// `value` cannot read are left out (unknown, so nothing is pruned by them).
fn by_field_id<T>(map: Option<&Value>, value: impl Fn(&Value) -> Option<T>) -> HashMap<i32, T> {
    let Some(Value::Array(entries)) = map else {
        return HashMap::new();
    };
    entries
        .iter()
        .filter_map(|entry| {
            let key = i32::try_from(int(field(entry, "key"))?).ok()?;
            Some((key, value(field(entry, "value")?)?))
        })
        .collect()
}

fn string(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}
