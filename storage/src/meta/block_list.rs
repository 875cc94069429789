//! Every block of a snapshot as one Arrow batch (the segments' rows concatenated in commit
//! order), with the rows deleted from each and the locator groups that index them. Built once per
//! table version and cached, so pruning reads statistics as arrays.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow_select::concat::concat_batches;
use arrow_select::take::take_record_batch;
use bytes::Bytes;

use roaring::RoaringBitmap;
use sieve_index::locator::SLICE_ROWS;
use sieve_index::{LocatorHeader, SidecarEntry};

use crate::error::{Result, StorageError};
use crate::meta::block_checksums::BlockChecksums;
use crate::meta::deletes::BlockDeletes;
use crate::meta::table_def::TableDef;

use crate::meta::segment::{
    LOCATOR, LOCATOR_HEADER, PAGES, Segment, index_name, ipc_file, max_name, min_name, nulls_name,
    segment_schema,
};

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
    /// Bytes it holds in memory, for the cache's budget: the blocks' rows, the deletion
    /// vectors, and about 128 bytes a block for the lookups built on first use.
    pub fn memory_size(&self) -> u64 {
        let deleted: usize = self.deleted.values().map(|d| d.serialized_size()).sum();
        let sidecars: usize = self.sidecars.values().map(|n| n.len() + 16).sum();
        let lookups = self.batch.num_rows() * 128;
        (self.batch.get_array_memory_size() + deleted + sidecars + lookups) as u64
    }

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
        let schema = self.batch.schema();
        let (names_at, headers_at) = (schema.index_of(LOCATOR)?, schema.index_of(LOCATOR_HEADER)?);
        let names = self.batch.column(names_at).as_string::<i32>();
        let headers = self.batch.column(headers_at).as_binary::<i32>();
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
        arrays[names_at] = Arc::new(StringArray::from(new_names));
        arrays[headers_at] = Arc::new(BinaryArray::from(new_headers));
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

    /// Block `i`'s page table ([`crate::meta::page_table`]), if its segment recorded one.
    pub fn page_table(&self, i: usize) -> Option<&[u8]> {
        let tables = self
            .column(PAGES)
            .expect("segment schema column")
            .as_binary::<i32>();
        tables.is_valid(i).then(|| tables.value(i))
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
    /// Rows per slice of block `i` as its locator group names them ([`SLICE_ROWS`] for a block
    /// in no usable group, which no locator names slices of).
    pub fn slice_rows(&self, i: usize) -> u32 {
        let groups = self.locator_groups();
        let k = groups.partition_point(|g| g.blocks.end <= i);
        match groups.get(k) {
            Some(LocatorGroup {
                blocks,
                header: Ok(header),
                ..
            }) if blocks.contains(&i) => header.slice_rows,
            _ => SLICE_ROWS,
        }
    }

    /// The locator groups of the listed blocks, in order.
    pub fn locator_groups(&self) -> &[LocatorGroup] {
        self.locator_groups.get_or_init(|| {
            let column = |name| self.column(name).expect("segment schema column");
            let names = column(LOCATOR).as_string::<i32>();
            let headers = column(LOCATOR_HEADER).as_binary::<i32>();
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
