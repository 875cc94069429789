//! Encodes one block: a Parquet file (one row group, zstd, pages of one locator slice with
//! statistics for the page index) and its sidecar, hashing every indexed value exactly once. Pure
//! CPU work, run off the async runtime.

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, RecordBatch};
use arrow_ord::ord::make_comparator;
use arrow_schema::{DataType, SortOptions};
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use sieve_index::locator::{self, BlockKeys, SLICE_ROWS};
use sieve_index::sidecar;
use sieve_index::{ColumnHashes, ColumnIndex, SidecarHeader};

use crate::error::Result;
use crate::meta::block_checksums;
use crate::meta::nan_bounds::widen_to_nans;
use crate::meta::page_table;
use crate::meta::table_def::TableDef;

/// What the segment metadata records of one indexed column of one block.
#[derive(Debug, Clone)]
pub struct IndexStats {
    pub kind: &'static str,
    pub ndv_estimate: u64,
    pub key_count: u64,
    pub bytes: u64,
    /// The entry's sidecar directory record ([`sieve_index::SidecarEntry::record`]): readers
    /// fetch the payload with one exact ranged read, without the sidecar's header.
    pub record: [u8; sidecar::RECORD],
}

/// Per-block statistics the planner prunes with, one entry per schema column (min/max arrays hold
/// one value; null where Parquet keeps no statistics for the type).
#[derive(Debug, Clone)]
pub struct BlockStats {
    pub id: String,
    pub rows: u64,
    pub data_bytes: u64,
    /// See [`crate::meta::block_checksums`].
    pub checksums: Vec<u8>,
    pub sidecar_bytes: u64,
    pub mins: Vec<ArrayRef>,
    pub maxes: Vec<ArrayRef>,
    pub null_counts: Vec<u64>,
    /// Parallel to the table's index columns.
    pub index: Vec<IndexStats>,
    /// The locator group the block is in (set by the writer once the group is built), and on
    /// the group's first block the group's header.
    pub locator: Option<(String, Option<Vec<u8>>)>,
    /// See [`crate::meta::page_table`]; None when the block has none.
    pub pages: Option<Vec<u8>>,
}

pub struct EncodedBlock {
    pub parquet: Bytes,
    pub sidecar: Bytes,
    pub stats: BlockStats,
    /// Per index column, what the block's locator group needs of it; empty when the table has
    /// no locator.
    pub locator_keys: Vec<BlockColumn>,
}

/// One indexed column of one block, kept until the block's locator group is built.
pub struct BlockColumn {
    pub keys: ColumnKeys,
    /// The block's (min, max) when its values never descend and none is null or a float: then
    /// min/max and the Parquet page index find a key's block and page without a locator.
    pub ascending: Option<(ArrayRef, ArrayRef)>,
}

/// One indexed column's keys and their slices ([`locator::block_keys`]).
pub enum ColumnKeys {
    Hashed(BlockKeys),
    /// The column's arrays, of a block holding every integer of its range ([`dense_range`]):
    /// hashed only if its group locates the column. A write leaves such a column out of its
    /// groups while its blocks ascend apart, so a row number's keys are never hashed at all.
    Deferred(Vec<ArrayRef>),
}

impl ColumnKeys {
    pub fn into_keys(self) -> Result<BlockKeys> {
        match self {
            Self::Hashed(keys) => Ok(keys),
            Self::Deferred(arrays) => Ok(hash_keys(&arrays)?.0),
        }
    }
}

/// A column's locator keys, hashing every value once, and whether it holds a null.
fn hash_keys(arrays: &[ArrayRef]) -> Result<(BlockKeys, bool)> {
    let mut hashes = ColumnHashes::default();
    let mut key_rows = Vec::new();
    let mut first_row = 0u32;
    for array in arrays {
        hashes.extend_with_rows(array.as_ref(), first_row, &mut key_rows)?;
        first_row += array.len() as u32;
    }
    let keys = locator::block_keys(&hashes.hashes, &key_rows, SLICE_ROWS);
    Ok((keys, hashes.has_null))
}

/// The count of distinct values when `arrays`, in order, hold no null and step up by 0 or 1
/// from their first integer to their last (a row number): every integer between the block's min
/// and max is in it, so no filter could rule out a key min/max lets through, and none is built.
fn dense_range(arrays: &[ArrayRef]) -> Option<u64> {
    fn steps<T: ArrowPrimitiveType>(arrays: &[ArrayRef]) -> Option<u64>
    where
        T::Native: Into<i128>,
    {
        let mut values = arrays
            .iter()
            .flat_map(|a| a.as_primitive::<T>().values().iter().map(|&v| v.into()));
        let first: i128 = values.next()?;
        let mut last = first;
        for value in values {
            if !(0..=1).contains(&(value - last)) {
                return None;
            }
            last = value;
        }
        u64::try_from(last - first + 1).ok()
    }
    if arrays.iter().any(|a| a.null_count() > 0) {
        return None;
    }
    match arrays.first()?.data_type() {
        DataType::Int8 => steps::<Int8Type>(arrays),
        DataType::Int16 => steps::<Int16Type>(arrays),
        DataType::Int32 => steps::<Int32Type>(arrays),
        DataType::Int64 => steps::<Int64Type>(arrays),
        DataType::UInt8 => steps::<UInt8Type>(arrays),
        DataType::UInt16 => steps::<UInt16Type>(arrays),
        DataType::UInt32 => steps::<UInt32Type>(arrays),
        DataType::UInt64 => steps::<UInt64Type>(arrays),
        _ => None,
    }
}

/// Whether column `index` of `batches` never descends and holds no null. Floats are left out:
/// NaN is outside Parquet's page statistics, so the page index does not find it.
fn ascends(batches: &[RecordBatch], index: usize) -> Result<bool> {
    let arrays: Vec<&ArrayRef> = batches
        .iter()
        .map(|b| b.column(index))
        .filter(|a| !a.is_empty())
        .collect();
    let Some(first) = arrays.first() else {
        return Ok(false);
    };
    if first.data_type().is_floating() || arrays.iter().any(|a| a.null_count() > 0) {
        return Ok(false);
    }
    let options = SortOptions::default();
    for (i, array) in arrays.iter().enumerate() {
        let within = make_comparator(array.as_ref(), array.as_ref(), options)?;
        if (1..array.len()).any(|row| within(row - 1, row) == Ordering::Greater) {
            return Ok(false);
        }
        if let Some(next) = arrays.get(i + 1) {
            let across = make_comparator(array.as_ref(), next.as_ref(), options)?;
            if across(array.len() - 1, 0) == Ordering::Greater {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// `plain_columns`: index columns whose values are nearly all distinct. A dictionary would not
/// shrink them, and its page (up to 1 MiB) would be read with every slice the locator names.
/// `delta_columns`: integer index columns that ascend in the block, stored as deltas (a row
/// number's 8 bytes a value become a few bits a page, and zstd has next to nothing to do).
fn writer_properties(
    def: &TableDef,
    plain_columns: &[&str],
    delta_columns: &[&str],
) -> Result<WriterProperties> {
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
        .set_statistics_enabled(EnabledStatistics::Page)
        // One row group per block: the block is the unit of pruning.
        .set_max_row_group_row_count(None)
        .set_max_row_group_bytes(None)
        // Pages of one locator slice, so reading a slice reads about one page per column.
        .set_data_page_row_count_limit(SLICE_ROWS as usize);
    for column in plain_columns.iter().chain(delta_columns) {
        builder = builder.set_column_dictionary_enabled(ColumnPath::from(*column), false);
    }
    for column in delta_columns {
        builder =
            builder.set_column_encoding(ColumnPath::from(*column), Encoding::DELTA_BINARY_PACKED);
    }
    if def.options.parquet_bloom_filters {
        for column in &def.options.index_columns {
            let path = ColumnPath::from(column.as_str());
            builder = builder
                .set_column_bloom_filter_enabled(path.clone(), true)
                // A block's distinct values are at most its rows (Parquet's default fpp, 5%).
                .set_column_bloom_filter_max_ndv(path, def.options.block_rows as u64);
        }
    }
    Ok(builder.build())
}

pub fn encode_block(def: &TableDef, id: String, batches: &[RecordBatch]) -> Result<EncodedBlock> {
    let schema = def.schema.clone();
    let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
    // The index first: its distinct-value estimates decide which columns get a dictionary.
    let mut columns = Vec::with_capacity(def.options.index_columns.len());
    let mut locator_keys = Vec::new();
    let mut delta_columns = Vec::new();
    for name in &def.options.index_columns {
        let index = schema.index_of(name)?;
        let arrays: Vec<ArrayRef> = batches.iter().map(|b| b.column(index).clone()).collect();
        if let Some(ndv) = dense_range(&arrays) {
            columns.push(ColumnIndex::min_max_only(name.clone(), ndv));
            delta_columns.push(name.as_str());
            if def.options.locator {
                locator_keys.push((ColumnKeys::Deferred(arrays), true));
            }
            continue;
        }
        let ascending = ascends(batches, index)?;
        if ascending && schema.field(index).data_type().is_integer() {
            delta_columns.push(name.as_str());
        }
        if def.options.locator {
            // The locator's keys are the column's distinct hashes, sorted: the sidecar's
            // filter is built from them instead of sorting the hashes a second time, and their
            // count is exact where an estimate would be.
            let (keys, has_null) = hash_keys(&arrays)?;
            let distinct: Vec<u64> = keys.iter().map(|&(hash, _)| hash).collect();
            let ndv = distinct.len() as u64;
            columns.push(ColumnIndex::from_distinct(
                name.clone(),
                def.options.filter,
                distinct,
                has_null,
                ndv,
            ));
            locator_keys.push((ColumnKeys::Hashed(keys), ascending));
        } else {
            let mut hashes = ColumnHashes::default();
            for array in &arrays {
                hashes.extend_from_array(array.as_ref())?;
            }
            columns.push(ColumnIndex::build(name.clone(), def.options.filter, hashes));
        }
    }
    let plain_columns: Vec<&str> = columns
        .iter()
        .filter(|c| c.ndv_estimate * 2 > rows)
        .map(|c| c.column.as_str())
        .collect();

    let mut buffer = Vec::new();
    let mut writer = ArrowWriter::try_new(
        &mut buffer,
        schema.clone(),
        Some(writer_properties(def, &plain_columns, &delta_columns)?),
    )?;
    // Cut where slices end: the writer ends a page at the first write after it holds a slice's
    // rows, so a batch across a slice's end would shift every later page off its slice (and a
    // lookup of one slice would read two pages per column).
    let mut written = 0;
    for batch in batches {
        let mut offset = 0;
        while offset < batch.num_rows() {
            let to_slice_end = SLICE_ROWS as usize - written % SLICE_ROWS as usize;
            let length = to_slice_end.min(batch.num_rows() - offset);
            writer.write(&batch.slice(offset, length))?;
            (offset, written) = (offset + length, written + length);
        }
    }
    let metadata = writer.close()?;
    let parquet = Bytes::from(buffer);

    let parquet_schema = metadata.file_metadata().schema_descr();
    let (mut mins, mut maxes, mut null_counts) = (Vec::new(), Vec::new(), Vec::new());
    for field in schema.fields() {
        let converter = StatisticsConverter::try_new(field.name(), &schema, parquet_schema)?;
        let mut min = converter.row_group_mins(metadata.row_groups())?;
        let mut max = converter.row_group_maxes(metadata.row_groups())?;
        widen_to_nans(batches, mins.len(), &mut min, &mut max);
        mins.push(min);
        maxes.push(max);
        let nulls = converter.row_group_null_counts(metadata.row_groups())?;
        null_counts.push(nulls.iter().flatten().sum());
    }

    let sidecar = Bytes::from(sidecar::encode(&columns)?);
    let header = SidecarHeader::parse(&sidecar)?;
    let index = columns
        .iter()
        .map(|c| IndexStats {
            kind: c.kind.name(),
            ndv_estimate: c.ndv_estimate,
            key_count: c.key_count,
            bytes: c.payload.len() as u64,
            record: header.entry(&c.column).expect("encoded just now").record(),
        })
        .collect();

    let stats = BlockStats {
        id,
        rows,
        data_bytes: parquet.len() as u64,
        checksums: block_checksums::compute(&parquet),
        sidecar_bytes: sidecar.len() as u64,
        mins,
        maxes,
        null_counts,
        index,
        locator: None,
        pages: page_table::encode(&metadata, &parquet),
    };
    let locator_keys = locator_keys
        .into_iter()
        .zip(&def.options.index_columns)
        .map(|((keys, ascending), name)| {
            let i = schema.index_of(name).expect("checked above");
            BlockColumn {
                keys,
                ascending: ascending.then(|| (stats.mins[i].clone(), stats.maxes[i].clone())),
            }
        })
        .collect();
    Ok(EncodedBlock {
        parquet,
        sidecar,
        stats,
        locator_keys,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, StringArray, UInt64Array};

    use super::*;

    fn dense(arrays: Vec<ArrayRef>) -> Option<u64> {
        dense_range(&arrays)
    }

    #[test]
    fn dense_ranges_step_by_zero_or_one_with_no_null() {
        let ints = |v: &[i32]| Arc::new(Int32Array::from(v.to_vec())) as ArrayRef;
        assert_eq!(
            dense(vec![ints(&[-2, -1, 0]), ints(&[]), ints(&[1])]),
            Some(4)
        );
        assert_eq!(dense(vec![ints(&[5, 5, 6, 6])]), Some(2));
        assert_eq!(dense(vec![ints(&[7])]), Some(1));
        // A gap, a step down (within or across arrays), a null: a filter could prune.
        assert_eq!(dense(vec![ints(&[1, 3])]), None);
        assert_eq!(dense(vec![ints(&[2, 1])]), None);
        assert_eq!(dense(vec![ints(&[1, 2]), ints(&[2, 1])]), None);
        assert_eq!(dense(vec![ints(&[1, 2]), ints(&[4])]), None);
        let nulls = Arc::new(Int32Array::from(vec![Some(1), None, Some(2)])) as ArrayRef;
        assert_eq!(dense(vec![nulls]), None);
        assert_eq!(dense(vec![]), None);
        let top = Arc::new(UInt64Array::from(vec![u64::MAX - 1, u64::MAX])) as ArrayRef;
        assert_eq!(dense(vec![top]), Some(2));
        let text = Arc::new(StringArray::from(vec!["1", "2"])) as ArrayRef;
        assert_eq!(dense(vec![text]), None);
    }
}
