//! Deletion vectors: the rows of a block a DELETE removed, as a Roaring bitmap of row positions
//! (Delta's and Iceberg's answer too). A block's Parquet file is never rewritten by a DELETE; a
//! commit adds a *deletes segment* naming, per block it touched, the rows it deleted, and a block's
//! deletion vector is the union over every deletes segment of its table version.
//!
//! A deletes segment is an Arrow IPC file like a blocks segment, written with segment format 2
//! and `sieve.segment.kind = deletes` in its schema metadata, so a Sieve that knows only format 1
//! refuses a table with deletes instead of showing deleted rows. Columns: `block` (Utf8, the
//! block's UUID), `rows_deleted` (UInt64), `deleted` (Binary, the positions in Roaring's
//! portable serialization, the format the Java, Go and C libraries share) and `sidecar` (Utf8,
//! nullable: the name of the block's new sidecar, whose cuckoo entries forgot the keys whose
//! last live row the commit deleted; null keeps the one it had).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;
use roaring::RoaringBitmap;

use crate::error::{Result, StorageError};
use crate::meta::segment::ipc_file;
use crate::meta::versions::{DELETES_FORMAT, DELETES_KIND, FORMAT_KEY, KIND_KEY};

/// What one commit deletes from one block.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockDeletes {
    pub rows: RoaringBitmap,
    /// The block's new sidecar file (`blocks/<name>.sidecar`), if the commit wrote one.
    pub sidecar: Option<String>,
}

/// What one commit deletes, by block UUID.
pub type Deletes = HashMap<String, BlockDeletes>;

fn deletes_schema() -> SchemaRef {
    let metadata = HashMap::from([
        (FORMAT_KEY.to_string(), DELETES_FORMAT.to_string()),
        (KIND_KEY.to_string(), DELETES_KIND.to_string()),
    ]);
    Arc::new(Schema::new_with_metadata(
        vec![
            Field::new("block", DataType::Utf8, false),
            Field::new("rows_deleted", DataType::UInt64, false),
            Field::new("deleted", DataType::Binary, false),
            Field::new("sidecar", DataType::Utf8, true),
        ],
        metadata,
    ))
}

/// Serializes the rows one commit deletes, in block order so the file is reproducible.
pub fn encode_deletes(deletes: &Deletes) -> Result<Bytes> {
    let mut entries: Vec<(&String, &BlockDeletes)> = deletes.iter().collect();
    entries.sort_unstable_by_key(|(block, _)| *block);
    let bitmaps = entries
        .iter()
        .map(|(_, d)| {
            let mut bytes = Vec::with_capacity(d.rows.serialized_size());
            d.rows.serialize_into(&mut bytes)?;
            Ok(bytes)
        })
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| StorageError::Invalid(format!("cannot serialize a deletion vector: {e}")))?;
    let schema = deletes_schema();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            entries.iter().map(|(b, _)| b.as_str()),
        )),
        Arc::new(UInt64Array::from_iter_values(
            entries.iter().map(|(_, d)| d.rows.len()),
        )),
        Arc::new(BinaryArray::from_iter_values(bitmaps)),
        Arc::new(StringArray::from_iter(
            entries.iter().map(|(_, d)| d.sidecar.as_deref()),
        )),
    ];
    ipc_file(&RecordBatch::try_new(schema, columns)?)
}

/// Decodes a deletes segment's rows; `path` names the file in errors.
pub fn decode_deletes(path: &str, stored: &RecordBatch) -> Result<Vec<(String, BlockDeletes)>> {
    let damaged = |why: String| StorageError::Damaged(path.to_string(), why);
    let column = |name: &str, data_type: DataType| {
        stored
            .column_by_name(name)
            .filter(|c| *c.data_type() == data_type)
            .ok_or_else(|| damaged(format!("no {data_type} column {name}")))
    };
    let blocks = column("block", DataType::Utf8)?.as_string::<i32>();
    let counts = column("rows_deleted", DataType::UInt64)?.as_primitive::<UInt64Type>();
    let bitmaps = column("deleted", DataType::Binary)?.as_binary::<i32>();
    let sidecars = column("sidecar", DataType::Utf8)?.as_string::<i32>();
    (0..stored.num_rows())
        .map(|i| {
            let block = blocks.value(i);
            let rows = RoaringBitmap::deserialize_from(bitmaps.value(i))
                .map_err(|e| damaged(format!("deletion vector of block {block}: {e}")))?;
            if rows.len() != counts.value(i) {
                return Err(damaged(format!(
                    "deletion vector of block {block} holds {} rows, the segment says {}",
                    rows.len(),
                    counts.value(i)
                )));
            }
            let sidecar = sidecars.is_valid(i).then(|| sidecars.value(i).to_string());
            Ok((block.to_string(), BlockDeletes { rows, sidecar }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::segment::{Segment, decode_segment};
    use crate::meta::table_def::{TableDef, TableOptions};

    #[test]
    fn deletes_round_trip_through_a_segment_file() {
        let deletes = Deletes::from([
            (
                "b".to_string(),
                BlockDeletes {
                    rows: RoaringBitmap::from_iter([0u32, 7, 70_000]),
                    sidecar: Some("c".into()),
                },
            ),
            (
                "a".to_string(),
                BlockDeletes {
                    rows: RoaringBitmap::from_iter(0u32..5000),
                    sidecar: None,
                },
            ),
        ]);
        let bytes = encode_deletes(&deletes).unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("c", DataType::Int64, false)]));
        let options = TableOptions::defaults_for(&schema);
        let def = TableDef::new("db", "t", schema, options).unwrap();
        let Segment::Deletes(decoded) = decode_segment("s", &def, bytes).unwrap() else {
            panic!("a deletes segment decodes as one");
        };
        let decoded: Deletes = decoded.into_iter().collect();
        assert_eq!(decoded, deletes);
    }
}
