//! Where each page of a block lies, kept in the segment so that a lookup the locator sent to a
//! block's slice reads the slice's pages without the block's footer first: a cold present-key
//! lookup then waits for one round trip less (issue 30's "no footer or page-index fetch").
//!
//! A block's page table is the part of its Parquet footer a page read needs: per leaf column, the
//! column chunk's start, its dictionary page's size and, per data page, its size and rows (pages
//! of a chunk are contiguous, so offsets follow from sizes). [`metadata`] rebuilds from it, and
//! the table's Arrow schema, a [`ParquetMetaData`] with the offset index and nothing else (no
//! statistics, no column index, no bloom filter offsets), which a reader with a row selection
//! needs and which never makes it fetch more of the file. It is not a footer to prune with: a
//! scan that prunes pages by value reads the real one.
//!
//! Encoding (the segment column `pages`, version 1; every integer an unsigned LEB128 varint):
//!
//! ```text
//! u8 version = 1
//! varint columns                 leaf columns, in the Parquet schema's order
//! per column:
//!   varint chunk_start           file offset of the chunk (its dictionary page, else first page)
//!   varint dictionary_bytes      0 when the chunk has no dictionary page
//!   varint values                the chunk's num_values
//!   varint pages
//!   per data page: varint bytes (header included), varint rows
//! ```
//!
//! Only blocks whose every chunk is zstd (as Sieve writes them) and whose pages are contiguous
//! get one; a reader that finds none, another version, or one that does not fit the table's
//! schema or the block's rows reads the footer as before. The table is trusted as far as the
//! segment's checksum vouches for it, like the rest of the segment: it was taken from the
//! writer's own offset index, and the bytes it leads to are checked against the block's
//! checksums. Per-page row counts that were wrong but summed right (a writer bug) would make a
//! selection skip the wrong rows; the differential tests compare every located read with an
//! unpruned read of the footer.

use std::sync::Arc;

use arrow_schema::Schema;
use integer_encoding::VarInt;
use parquet::arrow::{ArrowSchemaConverter, encode_arrow_schema};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::{
    ColumnChunkMetaData, FileMetaData, KeyValue, ParquetMetaData, ParquetMetaDataBuilder,
    RowGroupMetaData,
};
use parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};

use crate::error::{Result, StorageError};
use crate::meta::versions::PAGE_TABLE_FORMAT;

/// The page table of a one-row-group block `metadata` describes; None when it has none to give
/// (no offset index, several row groups, a chunk not zstd, pages not contiguous).
pub fn encode(metadata: &ParquetMetaData) -> Option<Vec<u8>> {
    let [row_group] = metadata.row_groups() else {
        return None;
    };
    let offsets = metadata.offset_index()?.first()?;
    let mut out = vec![PAGE_TABLE_FORMAT];
    let mut put = |n: u64| out.extend_from_slice(&n.encode_var_vec());
    put(row_group.num_columns() as u64);
    for (chunk, index) in row_group.columns().iter().zip(offsets) {
        if !matches!(chunk.compression(), Compression::ZSTD(_)) {
            return None;
        }
        let (start, len) = chunk.byte_range();
        let pages = index.page_locations();
        let first = u64::try_from(pages.first()?.offset).ok()?;
        put(start);
        put(first.checked_sub(start)?);
        put(u64::try_from(chunk.num_values()).ok()?);
        put(pages.len() as u64);
        let mut next = first;
        for (k, page) in pages.iter().enumerate() {
            let rows_end = match pages.get(k + 1) {
                Some(following) => following.first_row_index,
                None => row_group.num_rows(),
            };
            if u64::try_from(page.offset).ok()? != next {
                return None;
            }
            let bytes = u64::try_from(page.compressed_page_size).ok()?;
            next += bytes;
            put(bytes);
            put(u64::try_from(rows_end - page.first_row_index).ok()?);
        }
        if next != start + len {
            return None;
        }
    }
    Some(out)
}

/// The metadata a reader needs to read pages of a block of `rows` rows written with `schema`,
/// from its page table. `block` names the block in errors.
pub fn metadata(block: &str, table: &[u8], schema: &Schema, rows: u64) -> Result<ParquetMetaData> {
    let unusable =
        |why: &str| StorageError::Damaged(block.to_string(), format!("its page table {why}"));
    if table.first() != Some(&PAGE_TABLE_FORMAT) {
        return Err(unusable("is not version 1"));
    }
    let mut rest = &table[1..];
    let mut take = || -> Result<u64> {
        let (n, used) = u64::decode_var(rest).ok_or_else(|| unusable("is cut short"))?;
        rest = &rest[used..];
        Ok(n)
    };
    let i64_of = |n: u64| i64::try_from(n).map_err(|_| unusable("holds an offset past 2^63"));
    let descriptor = Arc::new(ArrowSchemaConverter::new().convert(schema)?);
    if take()? != descriptor.num_columns() as u64 {
        return Err(unusable("does not have the table's columns"));
    }
    let (mut chunks, mut offsets) = (Vec::new(), Vec::new());
    for column in descriptor.columns() {
        let start = take()?;
        let dictionary = take()?;
        let values = take()?;
        let pages = take()?;
        let (mut next, mut row) = (start + dictionary, 0u64);
        let mut locations = Vec::new();
        for _ in 0..pages {
            let (bytes, page_rows) = (take()?, take()?);
            locations.push(PageLocation {
                offset: i64_of(next)?,
                compressed_page_size: i32::try_from(bytes)
                    .map_err(|_| unusable("holds a page over 2 GiB"))?,
                first_row_index: i64_of(row)?,
            });
            next += bytes;
            row += page_rows;
        }
        if row != rows {
            return Err(unusable("does not cover the block's rows"));
        }
        chunks.push(
            ColumnChunkMetaData::builder(column.clone())
                .set_compression(Compression::ZSTD(ZstdLevel::default()))
                .set_dictionary_page_offset((dictionary > 0).then_some(i64_of(start)?))
                .set_data_page_offset(i64_of(start + dictionary)?)
                .set_total_compressed_size(i64_of(next - start)?)
                .set_num_values(i64_of(values)?)
                .build()?,
        );
        offsets.push(OffsetIndexMetaData {
            page_locations: locations,
            unencoded_byte_array_data_bytes: None,
        });
    }
    if take().is_ok() {
        return Err(unusable("has bytes after its last column"));
    }
    let rows = i64_of(rows)?;
    let row_group = RowGroupMetaData::builder(descriptor.clone())
        .set_num_rows(rows)
        .set_column_metadata(chunks)
        .build()?;
    // As ArrowWriter stores it: readers take the Arrow types from it, not from Parquet's.
    let arrow_schema = KeyValue::new("ARROW:schema".into(), encode_arrow_schema(schema));
    let file = FileMetaData::new(1, rows, None, Some(vec![arrow_schema]), descriptor, None);
    Ok(ParquetMetaDataBuilder::new(file)
        .add_row_group(row_group)
        .set_offset_index(Some(vec![offsets]))
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field};
    use bytes::Bytes;
    use parquet::arrow::ArrowWriter;
    use parquet::arrow::arrow_reader::{
        ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
    };
    use parquet::file::metadata::PageIndexPolicy;
    use parquet::file::properties::WriterProperties;

    fn block() -> (Arc<Schema>, Bytes, ParquetMetaData) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("c1", DataType::Int64, false),
            Field::new("c2", DataType::Utf8, true),
        ]));
        let rows = 50_000;
        let c1: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows));
        let c2: ArrayRef = Arc::new(StringArray::from_iter(
            (0..rows).map(|i| (i % 7 != 0).then(|| format!("v{}", i % 100))),
        ));
        let batch = RecordBatch::try_new(schema.clone(), vec![c1, c2]).unwrap();
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap()))
            .set_data_page_row_count_limit(8192)
            .set_write_batch_size(1024)
            .build();
        let mut buffer = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut buffer, schema.clone(), Some(props)).unwrap();
        writer.write(&batch).unwrap();
        let metadata = writer.close().unwrap();
        (schema, Bytes::from(buffer), metadata)
    }

    /// Rows read through the rebuilt metadata are the rows read through the file's footer, for
    /// a selection inside one page, across pages, and of a dictionary-encoded column.
    #[test]
    fn rebuilt_metadata_reads_what_the_footer_reads() {
        let (schema, file, written) = block();
        let table = encode(&written).expect("a zstd block with an offset index has one");
        assert!(written.offset_index().is_some());
        let rebuilt = metadata("b", &table, &schema, 50_000).unwrap();
        assert!(rebuilt.column_index().is_none());
        for (skip, take) in [(0, 3), (8190, 10), (20_000, 16_384), (49_990, 10)] {
            let read = |metadata: Option<ParquetMetaData>| {
                let selection = RowSelection::from_consecutive_ranges(
                    std::iter::once(skip..skip + take),
                    50_000,
                );
                let builder = match metadata {
                    Some(m) => {
                        let options = ArrowReaderOptions::new();
                        let m = ArrowReaderMetadata::try_new(Arc::new(m), options).unwrap();
                        ParquetRecordBatchReaderBuilder::new_with_metadata(file.clone(), m)
                    }
                    None => ParquetRecordBatchReaderBuilder::try_new_with_options(
                        file.clone(),
                        ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required),
                    )
                    .unwrap(),
                };
                let reader = builder.with_row_selection(selection).build().unwrap();
                reader.map(|b| b.unwrap()).collect::<Vec<_>>()
            };
            assert_eq!(read(Some(rebuilt.clone())), read(None), "{skip}+{take}");
        }
    }

    #[test]
    fn a_table_that_does_not_fit_is_refused() {
        let (schema, _, written) = block();
        let table = encode(&written).unwrap();
        let one_column = Schema::new(vec![schema.field(0).clone()]);
        assert!(metadata("b", &table, &one_column, 50_000).is_err());
        assert!(metadata("b", &table, &schema, 49_999).is_err());
        assert!(metadata("b", &table[..table.len() - 1], &schema, 50_000).is_err());
        let mut newer = table.clone();
        newer[0] = 2;
        assert!(metadata("b", &newer, &schema, 50_000).is_err());
    }
}
