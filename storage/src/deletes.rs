//! Deletion vectors: the rows of a block a DELETE removed, as a Roaring bitmap of row positions
//! (Delta's and Iceberg's answer too). A block's Parquet file is never rewritten by a DELETE; a
//! commit adds a *deletes segment* naming, per block it touched, the rows it deleted, and a block's
//! deletion vector is the union over every deletes segment of its table version.
//!
//! A deletes segment is an Arrow IPC file like a blocks segment, written with segment format 2
//! and `sieve.segment.kind = deletes` in its schema metadata, so a Sieve that knows only format 1
//! refuses a table with deletes instead of showing deleted rows. Columns: `block` (Utf8, the
//! block's UUID), `rows_deleted` (UInt64) and `deleted` (Binary, the positions in Roaring's
//! portable serialization, the format the Java, Go and C libraries share).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{ArrayRef, BinaryArray, RecordBatch, StringArray, UInt64Array};
use arrow_ipc::writer::FileWriter;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;
use roaring::RoaringBitmap;

use crate::error::{Result, StorageError};
use crate::segment::{DELETES_FORMAT, FORMAT_KEY, KIND_KEY};

/// The value of [`KIND_KEY`] on a deletes segment.
pub const DELETES_KIND: &str = "deletes";

/// Rows one commit deleted, by block UUID.
pub type Deletes = HashMap<String, RoaringBitmap>;

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
        ],
        metadata,
    ))
}

/// Serializes the rows one commit deletes, in block order so the file is reproducible.
pub fn encode_deletes(deletes: &Deletes) -> Result<Bytes> {
    let mut entries: Vec<(&String, &RoaringBitmap)> = deletes.iter().collect();
    entries.sort_unstable_by_key(|(block, _)| *block);
    let bitmaps = entries
        .iter()
        .map(|(_, rows)| {
            let mut bytes = Vec::with_capacity(rows.serialized_size());
            rows.serialize_into(&mut bytes)?;
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
            entries.iter().map(|(_, rows)| rows.len()),
        )),
        Arc::new(BinaryArray::from_iter_values(bitmaps)),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    let mut writer = FileWriter::try_new(Vec::new(), &schema)?;
    writer.write(&batch)?;
    writer.finish()?;
    Ok(Bytes::from(writer.into_inner()?))
}

/// Decodes a deletes segment's rows; `path` names the file in errors.
pub fn decode_deletes(path: &str, stored: &RecordBatch) -> Result<Vec<(String, RoaringBitmap)>> {
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
            Ok((block.to_string(), rows))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::{Segment, decode_segment};
    use crate::table_def::{TableDef, TableOptions};

    #[test]
    fn deletes_round_trip_through_a_segment_file() {
        let deletes = Deletes::from([
            ("b".to_string(), RoaringBitmap::from_iter([0u32, 7, 70_000])),
            ("a".to_string(), RoaringBitmap::from_iter(0u32..5000)),
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
