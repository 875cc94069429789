//! Segment metadata: one row per block (location, sizes, per-column min/max/null count, per
//! indexed column the filter kind, NDV estimate, keys, bytes and the entry's sidecar directory
//! record), stored as an Arrow IPC file.
//!
//! Keeping statistics as typed Arrow columns means the planner prunes all blocks of a snapshot with
//! one vectorised pass over arrays, without opening any Parquet footer.
//!
//! The file's Arrow schema carries its format version ([`BLOCKS_FORMAT`], in the schema metadata
//! under [`FORMAT_KEY`]) and is the schema it was written with: a segment decodes by column name,
//! so one written before a column was added to its table still reads (with unknown bounds for
//! that column).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, RecordBatch, StringArray, UInt32Array, UInt64Array,
    new_null_array,
};
use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::FileWriter;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use arrow_select::concat::{concat, concat_batches};
use arrow_select::take::take_record_batch;
use bytes::Bytes;

use roaring::RoaringBitmap;
use sieve_index::{LocatorHeader, SidecarEntry};

use crate::block::BlockStats;
use crate::block_checksums::BlockChecksums;
use crate::deletes::{BlockDeletes, DELETES_KIND, decode_deletes};
use crate::error::{Result, StorageError};
use crate::table_def::TableDef;

fn min_name(column: &str) -> String {
    format!("min:{column}")
}
fn max_name(column: &str) -> String {
    format!("max:{column}")
}
fn nulls_name(column: &str) -> String {
    format!("nulls:{column}")
}
fn index_name(what: &str, column: &str) -> String {
    format!("{what}:{column}")
}

const LOCATOR: &str = "locator";
const LOCATOR_HEADER: &str = "locator_header";

/// The format of blocks segments. A segment is written with the oldest format that describes it,
/// so a table without deletes stays readable by a Sieve that knows only format 1.
pub const BLOCKS_FORMAT: u32 = 1;

/// Format 2 adds deletes segments ([`crate::deletes`]), told apart by [`KIND_KEY`]; it is also
/// the newest format this build reads.
pub const DELETES_FORMAT: u32 = 2;

/// The schema metadata key holding a segment's format version.
pub const FORMAT_KEY: &str = "sieve.segment.format";

/// The schema metadata key naming a format-2 segment's kind; absent on blocks segments.
pub const KIND_KEY: &str = "sieve.segment.kind";

/// A decoded segment file: the blocks one commit added, or the rows one commit deleted.
#[derive(Debug)]
pub enum Segment {
    Blocks(RecordBatch),
    Deletes(Vec<(String, BlockDeletes)>),
}

/// The schema of a table's segment files; it follows from the table's definition.
pub fn segment_schema(def: &TableDef) -> SchemaRef {
    let u64_field = |name: String| Field::new(name, DataType::UInt64, false);
    let mut fields = vec![
        Field::new("block", DataType::Utf8, false),
        u64_field("rows".into()),
        u64_field("data_bytes".into()),
        Field::new("checksums", DataType::Binary, false),
        u64_field("sidecar_bytes".into()),
    ];
    for f in def.schema.fields() {
        fields.push(Field::new(min_name(f.name()), f.data_type().clone(), true));
        fields.push(Field::new(max_name(f.name()), f.data_type().clone(), true));
        fields.push(u64_field(nulls_name(f.name())));
    }
    for c in &def.options.index_columns {
        fields.push(Field::new(
            index_name("index_kind", c),
            DataType::Utf8,
            false,
        ));
        for what in ["ndv", "index_keys", "index_bytes"] {
            fields.push(u64_field(index_name(what, c)));
        }
        // Nullable: segments written before it was added have none.
        fields.push(Field::new(
            index_name("index_entry", c),
            DataType::Binary,
            true,
        ));
    }
    // The block's locator group, and the group's header on its first block; null for blocks
    // without a locator (and in segments written before locators).
    fields.push(Field::new(LOCATOR, DataType::Utf8, true));
    fields.push(Field::new(LOCATOR_HEADER, DataType::Binary, true));
    let metadata = HashMap::from([(FORMAT_KEY.to_string(), BLOCKS_FORMAT.to_string())]);
    Arc::new(Schema::new_with_metadata(fields, metadata))
}

/// Decodes the segment file at `path` (named in every error) for the table as defined now.
pub fn decode_segment(path: &str, def: &TableDef, bytes: Bytes) -> Result<Segment> {
    let damaged = |why: String| StorageError::Damaged(path.to_string(), why);
    let reader = FileReader::try_new(std::io::Cursor::new(bytes), None)
        .map_err(|e| damaged(format!("not an Arrow IPC file: {e}")))?;
    let written = reader.schema();
    let format = match written.metadata().get(FORMAT_KEY).map(|v| v.parse::<u32>()) {
        Some(Ok(version)) if version <= DELETES_FORMAT => version,
        Some(Ok(version)) => {
            return Err(damaged(format!(
                "segment format {version} was written by a newer Sieve (this one reads up to {DELETES_FORMAT})"
            )));
        }
        _ => return Err(damaged(format!("no valid {FORMAT_KEY} in its schema"))),
    };
    let kind = written.metadata().get(KIND_KEY).map(String::as_str);
    let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    let stored = concat_batches(&written, &batches)?;
    match (format, kind) {
        (_, None) => decode_blocks(path, def, &stored).map(Segment::Blocks),
        (DELETES_FORMAT, Some(DELETES_KIND)) => decode_deletes(path, &stored).map(Segment::Deletes),
        (_, Some(kind)) => Err(damaged(format!(
            "segment kind {kind:?} is not one of format {format}'s"
        ))),
    }
}

/// A blocks segment's columns, by name, in the order of the table's segment schema today.
fn decode_blocks(path: &str, def: &TableDef, stored: &RecordBatch) -> Result<RecordBatch> {
    let damaged = |why: String| StorageError::Damaged(path.to_string(), why);
    // By name, in today's order: min/max of a column the table did not have then are unknown.
    let schema = segment_schema(def);
    let columns = schema
        .fields()
        .iter()
        .map(|field| match stored.column_by_name(field.name()) {
            Some(column) if column.data_type() == field.data_type() => Ok(column.clone()),
            Some(column) => Err(damaged(format!(
                "column {} is {}, the table needs {}",
                field.name(),
                column.data_type(),
                field.data_type()
            ))),
            None if field.is_nullable() => Ok(new_null_array(field.data_type(), stored.num_rows())),
            None => Err(damaged(format!("column {} is missing", field.name()))),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(schema, columns)?)
}

/// Serializes the blocks of one commit.
pub fn encode_segment(def: &TableDef, blocks: &[BlockStats]) -> Result<Bytes> {
    let schema = segment_schema(def);
    let u64s = |f: &dyn Fn(&BlockStats) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(blocks.iter().map(f)))
    };
    let concat_one = |f: &dyn Fn(&BlockStats) -> &ArrayRef| -> Result<ArrayRef> {
        let parts: Vec<&dyn arrow_array::Array> = blocks.iter().map(|b| f(b).as_ref()).collect();
        Ok(concat(&parts)?)
    };
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            blocks.iter().map(|b| b.id.as_str()),
        )),
        u64s(&|b| b.rows),
        u64s(&|b| b.data_bytes),
        Arc::new(BinaryArray::from_iter_values(
            blocks.iter().map(|b| b.checksums.as_slice()),
        )),
        u64s(&|b| b.sidecar_bytes),
    ];
    for i in 0..def.schema.fields().len() {
        columns.push(concat_one(&|b| &b.mins[i])?);
        columns.push(concat_one(&|b| &b.maxes[i])?);
        columns.push(u64s(&|b| b.null_counts[i]));
    }
    for i in 0..def.options.index_columns.len() {
        columns.push(Arc::new(StringArray::from_iter_values(
            blocks.iter().map(|b| b.index[i].kind),
        )));
        columns.push(u64s(&|b| b.index[i].ndv_estimate));
        columns.push(u64s(&|b| b.index[i].key_count));
        columns.push(u64s(&|b| b.index[i].bytes));
        columns.push(Arc::new(BinaryArray::from_iter_values(
            blocks.iter().map(|b| b.index[i].record),
        )));
    }
    columns.push(Arc::new(StringArray::from_iter(
        blocks
            .iter()
            .map(|b| b.locator.as_ref().map(|(group, _)| group)),
    )));
    columns.push(Arc::new(BinaryArray::from_iter(blocks.iter().map(|b| {
        b.locator.as_ref().and_then(|(_, header)| header.as_deref())
    }))));
    ipc_file(&RecordBatch::try_new(schema, columns)?)
}

/// A segment file holding `batch`, with its schema's metadata (format, kind).
///
/// View columns (a string column's min/max) are compacted first: one taken from the block list
/// keeps every data buffer of the list, and the IPC writer writes them all (62 MB per segment
/// file at 10,000 blocks, where the list's own segments were 1.7 MB).
pub fn ipc_file(batch: &RecordBatch) -> Result<Bytes> {
    let columns = batch.columns().iter().map(compact_views).collect();
    let batch = RecordBatch::try_new(batch.schema(), columns)?;
    let mut writer = FileWriter::try_new(Vec::new(), &batch.schema())?;
    writer.write(&batch)?;
    writer.finish()?;
    Ok(Bytes::from(writer.into_inner()?))
}

/// `column` with only the bytes its views point at, if it is a view array.
fn compact_views(column: &ArrayRef) -> ArrayRef {
    match column.data_type() {
        DataType::Utf8View => Arc::new(column.as_string_view().gc()),
        DataType::BinaryView => Arc::new(column.as_binary_view().gc()),
        _ => column.clone(),
    }
}

/// Every block of a snapshot, in commit order, with the rows deleted from each.
#[derive(Debug, Clone)]
pub struct BlockList {
    batch: RecordBatch,
    /// Each block's deletion vector: the union of what every deletes segment named for it.
    deleted: HashMap<usize, RoaringBitmap>,
    /// Blocks whose sidecar a DELETE replaced: the newest one's name.
    sidecars: HashMap<usize, String>,
    /// Parallel to the segments the list was built from: the blocks each blocks segment added
    /// (None for a deletes segment).
    segment_blocks: Vec<Option<Range<usize>>>,
    /// Block UUID to index, built on first use (a DELETE's commit looks blocks up by name).
    positions: Arc<OnceLock<HashMap<String, usize>>>,
    /// Parsed on first use; the list is cached per table version, so once per version.
    locator_groups: Arc<OnceLock<Vec<LocatorGroup>>>,
}

/// Consecutive blocks of one commit indexed by one locator file.
#[derive(Debug, Clone)]
pub struct LocatorGroup {
    pub name: String,
    /// Indices into the block list.
    pub blocks: Range<usize>,
    /// The header from the segment; an error (the reason) if it is missing or does not parse,
    /// or does not describe exactly these blocks: then the group's blocks use their sidecars.
    pub header: std::result::Result<Arc<LocatorHeader>, String>,
}

impl BlockList {
    /// Concatenates decoded segments ([`decode_segment`]), in commit order, and applies their
    /// deletes.
    pub fn new(def: &TableDef, segments: &[Arc<Segment>]) -> Result<Self> {
        let schema = segment_schema(def);
        let blocks = segments.iter().filter_map(|s| match s.as_ref() {
            Segment::Blocks(batch) => Some(batch),
            Segment::Deletes(_) => None,
        });
        let mut end = 0;
        let segment_blocks = segments
            .iter()
            .map(|s| match s.as_ref() {
                Segment::Blocks(batch) => {
                    end += batch.num_rows();
                    Some(end - batch.num_rows()..end)
                }
                Segment::Deletes(_) => None,
            })
            .collect();
        let mut list = Self {
            batch: concat_batches(&schema, blocks)?,
            deleted: HashMap::new(),
            sidecars: HashMap::new(),
            segment_blocks,
            positions: Arc::default(),
            locator_groups: Arc::default(),
        };
        for segment in segments {
            let Segment::Deletes(deletes) = segment.as_ref() else {
                continue;
            };
            for (block, BlockDeletes { rows, sidecar }) in deletes {
                let damaged = |why: &str| {
                    StorageError::Damaged(format!("deletion vector of block {block}"), why.into())
                };
                let i = list
                    .position(block)
                    .ok_or_else(|| damaged("the table version has no such block"))?;
                if rows
                    .max()
                    .is_some_and(|r| u64::from(r) >= list.rows().value(i))
                {
                    return Err(damaged("it names a row past the block's end"));
                }
                *list.deleted.entry(i).or_default() |= rows;
                if let Some(sidecar) = sidecar {
                    list.sidecars.insert(i, sidecar.clone());
                }
            }
        }
        Ok(list)
    }

    /// The index of the block with this UUID.
    pub fn position(&self, block: &str) -> Option<usize> {
        self.positions
            .get_or_init(|| {
                (0..self.len())
                    .map(|i| (self.block_id(i).to_string(), i))
                    .collect()
            })
            .get(block)
            .copied()
    }

    /// The blocks the `k`-th segment of the list's snapshot added; None for a deletes segment.
    pub fn segment_blocks(&self, k: usize) -> Option<Range<usize>> {
        self.segment_blocks.get(k).cloned().flatten()
    }

    /// A blocks segment file listing the blocks `which` (in that order), as their own segments
    /// record them: what is left of a segment once an OPTIMIZE rewrote some of its blocks.
    pub fn encode_blocks(&self, which: &[usize]) -> Result<Bytes> {
        let indices = UInt32Array::from_iter_values(which.iter().map(|&i| i as u32));
        ipc_file(&take_record_batch(&self.batch, &indices)?)
    }

    /// Blocks `range` as a segment file, with the locator group (name, and header on a group's
    /// first block) `relabel` gives some of them in place of their own.
    pub fn encode_relocated(
        &self,
        range: Range<usize>,
        relabel: &HashMap<usize, (String, Option<Vec<u8>>)>,
    ) -> Result<Bytes> {
        let columns = self.batch.num_columns();
        let names = self.batch.column(columns - 2).as_string::<i32>();
        let headers = self.batch.column(columns - 1).as_binary::<i32>();
        let (mut new_names, mut new_headers) = (Vec::new(), Vec::new());
        for i in range.clone() {
            match relabel.get(&i) {
                Some((name, header)) => {
                    new_names.push(Some(name.as_str()));
                    new_headers.push(header.as_deref());
                }
                None => {
                    new_names.push(names.is_valid(i).then(|| names.value(i)));
                    new_headers.push(headers.is_valid(i).then(|| headers.value(i)));
                }
            }
        }
        let blocks = self.batch.slice(range.start, range.len());
        let mut arrays = blocks.columns().to_vec();
        arrays[columns - 2] = Arc::new(StringArray::from(new_names));
        arrays[columns - 1] = Arc::new(BinaryArray::from(new_headers));
        ipc_file(&RecordBatch::try_new(blocks.schema(), arrays)?)
    }

    /// The rows of block `i` deleted so far; None if none were.
    pub fn deleted(&self, i: usize) -> Option<&RoaringBitmap> {
        self.deleted.get(&i)
    }

    /// The name of block `i`'s sidecar file: the block's own, or the one a DELETE replaced it
    /// with last.
    pub fn sidecar_name(&self, i: usize) -> &str {
        self.sidecars
            .get(&i)
            .map_or_else(|| self.block_id(i), String::as_str)
    }

    /// Whether a DELETE replaced block `i`'s sidecar (its cuckoo entries may have forgotten
    /// keys the locator still names).
    pub fn sidecar_replaced(&self, i: usize) -> bool {
        self.sidecars.contains_key(&i)
    }

    /// Rows of block `i` no DELETE removed.
    pub fn live_rows(&self, i: usize) -> u64 {
        self.rows().value(i) - self.deleted(i).map_or(0, RoaringBitmap::len)
    }

    pub fn len(&self) -> usize {
        self.batch.num_rows()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn column(&self, name: &str) -> Option<&ArrayRef> {
        self.batch.column_by_name(name)
    }

    fn u64_column(&self, name: &str) -> &UInt64Array {
        self.column(name)
            .expect("segment schema column")
            .as_primitive::<UInt64Type>()
    }

    pub fn block_id(&self, i: usize) -> &str {
        // Column 0 by construction (`segment_schema`): not looked up by name, as this is called
        // per block on every query.
        self.batch.column(0).as_string::<i32>().value(i)
    }

    pub fn rows(&self) -> &UInt64Array {
        self.u64_column("rows")
    }

    pub fn data_bytes(&self) -> &UInt64Array {
        self.u64_column("data_bytes")
    }

    /// What a reader checks block `i`'s Parquet bytes against.
    pub fn checksums(&self, i: usize) -> BlockChecksums {
        let sums = self
            .column("checksums")
            .expect("segment schema column")
            .as_binary::<i32>();
        BlockChecksums::new(
            self.data_bytes().value(i),
            Bytes::copy_from_slice(sums.value(i)),
        )
    }

    pub fn sidecar_bytes(&self) -> &UInt64Array {
        self.u64_column("sidecar_bytes")
    }

    /// Per-block minimums of a table column (null where unknown); None for an unknown column.
    pub fn mins(&self, column: &str) -> Option<&ArrayRef> {
        self.column(&min_name(column))
    }

    pub fn maxes(&self, column: &str) -> Option<&ArrayRef> {
        self.column(&max_name(column))
    }

    pub fn null_counts(&self, column: &str) -> Option<&UInt64Array> {
        self.column(&nulls_name(column))
            .map(|a| a.as_primitive::<UInt64Type>())
    }

    /// Index statistics of an indexed column: (kind names, NDV estimates, keys, bytes) per block.
    pub fn index_stats(&self, column: &str) -> Option<IndexColumnStats<'_>> {
        Some(IndexColumnStats {
            kinds: self
                .column(&index_name("index_kind", column))?
                .as_string::<i32>(),
            ndv: self
                .column(&index_name("ndv", column))?
                .as_primitive::<UInt64Type>(),
            keys: self
                .column(&index_name("index_keys", column))?
                .as_primitive::<UInt64Type>(),
            bytes: self
                .column(&index_name("index_bytes", column))?
                .as_primitive::<UInt64Type>(),
        })
    }

    /// Where block `i`'s sidecar holds `column`'s entry, from the segment; None where the
    /// segment predates the record (or the column is not indexed), and the reader must parse
    /// the sidecar's header instead.
    pub fn sidecar_entry(&self, i: usize, column: &str) -> Option<Result<SidecarEntry>> {
        if self.sidecar_replaced(i) {
            return None; // the record is of the sidecar the block was written with
        }
        let records = self
            .column(&index_name("index_entry", column))?
            .as_binary::<i32>();
        records.is_valid(i).then(|| {
            SidecarEntry::from_record(column, records.value(i)).map_err(|e| {
                StorageError::Damaged(
                    format!("segment record of block {}", self.block_id(i)),
                    e.to_string(),
                )
            })
        })
    }
}

impl BlockList {
    /// The locator groups of the listed blocks, in order.
    pub fn locator_groups(&self) -> &[LocatorGroup] {
        self.locator_groups.get_or_init(|| {
            let names = self
                .batch
                .column(self.batch.num_columns() - 2)
                .as_string::<i32>();
            let headers = self
                .batch
                .column(self.batch.num_columns() - 1)
                .as_binary::<i32>();
            let mut groups: Vec<LocatorGroup> = Vec::new();
            for i in (0..self.len()).filter(|&i| names.is_valid(i)) {
                let name = names.value(i);
                match groups.last_mut() {
                    Some(g) if g.name == name && g.blocks.end == i => g.blocks.end += 1,
                    _ => groups.push(LocatorGroup {
                        name: name.to_string(),
                        blocks: i..i + 1,
                        header: if headers.is_valid(i) {
                            LocatorHeader::parse(headers.value(i))
                                .map(Arc::new)
                                .map_err(|e| e.to_string())
                        } else {
                            Err("no header on the group's first block".into())
                        },
                    }),
                }
            }
            for g in &mut groups {
                if let Ok(h) = &g.header
                    && h.blocks as usize != g.blocks.len()
                {
                    g.header = Err(format!(
                        "the header names {} blocks, the segment {}",
                        h.blocks,
                        g.blocks.len()
                    ));
                }
            }
            groups
        })
    }
}

pub struct IndexColumnStats<'a> {
    pub kinds: &'a StringArray,
    pub ndv: &'a UInt64Array,
    pub keys: &'a UInt64Array,
    pub bytes: &'a UInt64Array,
}
