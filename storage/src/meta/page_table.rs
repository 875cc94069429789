//! Where each page of a block lies, kept in the segment so that a lookup the locator sent to a
//! block's slice reads the slice's pages without the block's footer first: a cold present-key
//! lookup then waits for one round trip less.
//!
//! A block's page table is the part of its Parquet footer a page read needs: per leaf column, the
//! column chunk's start, its dictionary page's size and, per data page, its size and rows (pages
//! of a chunk are contiguous, so offsets follow from sizes). [`metadata`] rebuilds from it, and
//! the table's Arrow schema, a [`ParquetMetaData`] with the offset index and nothing else (no
//! statistics, no column index, no bloom filter offsets), which a reader with a row selection
//! needs and which never makes it fetch more of the file. It is not a footer to prune with: a
//! scan that prunes pages by value reads the real one.
//!
//! Encoding (the segment column `pages`, version 2; every integer an unsigned LEB128 varint,
//! every `sum` the low 32 bits of the XXH3-64 of the bytes it names, little-endian):
//!
//! ```text
//! u8 version = 2
//! varint columns                 leaf columns, in the Parquet schema's order
//! per column:
//!   varint chunk_start           file offset of the chunk (its dictionary page, else first page)
//!   varint dictionary_bytes      0 when the chunk has no dictionary page
//!   u32 sum                      of the dictionary page; only when dictionary_bytes > 0
//!   varint values                the chunk's num_values
//!   varint pages
//!   per data page: varint bytes (header included), varint rows, u32 sum
//! ```
//!
//! Version 1 is the same without the sums, and is still read. The sums let a located read fetch
//! exactly the pages it needs and check them ([`PageSums`]): checked against the block's 64 KiB
//! stride checksums instead, a 4 KB page costs a 64 KiB fetch, and a lookup of two columns read
//! ~200 KB where its pages held ~75 KB. 32 bits are enough to catch damage (a damaged page passes
//! with odds of 2^-32) and keep a block's table small: 4 bytes a page.
//!
//! Only blocks whose every chunk is zstd (as Sieve writes them) and whose pages are contiguous
//! get one; a reader that finds none, another version, or one that does not fit the table's
//! schema or the block's rows reads the footer as before. The table is trusted as far as the
//! segment's checksum vouches for it, like the rest of the segment: it was taken from the
//! writer's own offset index, and the bytes it leads to are checked against the block's
//! checksums. Per-page row counts that were wrong but summed right (a writer bug) would make a
//! selection skip the wrong rows; the differential tests compare every located read with an
//! unpruned read of the footer.

use std::ops::Range;
use std::sync::Arc;

use arrow_schema::Schema;
use bytes::Bytes;
use integer_encoding::VarInt;
use parquet::arrow::{ArrowSchemaConverter, encode_arrow_schema};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::{
    ColumnChunkMetaData, FileMetaData, KeyValue, ParquetMetaData, ParquetMetaDataBuilder,
    RowGroupMetaData,
};
use parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Result, StorageError};
use crate::meta::versions::PAGE_TABLE_FORMAT;

/// The page checksum of version 2: the low 32 bits of the bytes' XXH3-64.
fn sum(bytes: &[u8]) -> u32 {
    xxh3_64(bytes) as u32
}

/// The page table of a one-row-group block `metadata` describes, with the sums of its pages
/// in `file`, the block's bytes; None when it has none to give (no offset index, several row
/// groups, a chunk not zstd, pages not contiguous).
pub fn encode(metadata: &ParquetMetaData, file: &[u8]) -> Option<Vec<u8>> {
    let [row_group] = metadata.row_groups() else {
        return None;
    };
    let offsets = metadata.offset_index()?.first()?;
    let mut out = vec![PAGE_TABLE_FORMAT];
    let put = |out: &mut Vec<u8>, n: u64| out.extend_from_slice(&n.encode_var_vec());
    let put_sum = |out: &mut Vec<u8>, range: Range<u64>| -> Option<()> {
        let bytes =
            file.get(usize::try_from(range.start).ok()?..usize::try_from(range.end).ok()?)?;
        out.extend_from_slice(&sum(bytes).to_le_bytes());
        Some(())
    };
    put(&mut out, row_group.num_columns() as u64);
    for (chunk, index) in row_group.columns().iter().zip(offsets) {
        if !matches!(chunk.compression(), Compression::ZSTD(_)) {
            return None;
        }
        let (start, len) = chunk.byte_range();
        let pages = index.page_locations();
        let first = u64::try_from(pages.first()?.offset).ok()?;
        put(&mut out, start);
        put(&mut out, first.checked_sub(start)?);
        if first > start {
            put_sum(&mut out, start..first)?;
        }
        put(&mut out, u64::try_from(chunk.num_values()).ok()?);
        put(&mut out, pages.len() as u64);
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
            put(&mut out, bytes);
            put(
                &mut out,
                u64::try_from(rows_end - page.first_row_index).ok()?,
            );
            put_sum(&mut out, next..next + bytes)?;
            next += bytes;
        }
        if next != start + len {
            return None;
        }
    }
    Some(out)
}

/// What a located read takes from a block's page table: Parquet metadata holding the offset
/// index, and the sums of the pages.
#[derive(Debug)]
pub struct PageTable {
    pub metadata: ParquetMetaData,
    pub sums: PageSums,
}

/// The sums of a block's pages (and dictionary pages) by byte range, sorted by start; empty
/// for a version-1 table.
#[derive(Debug, Default)]
pub struct PageSums(Vec<(Range<u64>, u32)>);

impl PageSums {
    fn find(&self, range: &Range<u64>) -> Option<u32> {
        let i = self
            .0
            .binary_search_by_key(&range.start, |(r, _)| r.start)
            .ok()?;
        let (page, sum) = &self.0[i];
        (page.end == range.end).then_some(*sum)
    }

    /// Whether `range` is exactly one page, which [`PageSums::check`] can then check.
    pub fn covers(&self, range: &Range<u64>) -> bool {
        self.find(range).is_some()
    }

    /// `bytes`, fetched for the page at `range`, if they are the page's; None when `range` is
    /// not one page. `path` names the block in the error.
    pub fn check(&self, path: &str, range: &Range<u64>, bytes: Bytes) -> Option<Result<Bytes>> {
        let expected = self.find(range)?;
        Some(
            if sum(&bytes) == expected && bytes.len() as u64 == range.end - range.start {
                Ok(bytes)
            } else {
                Err(StorageError::Damaged(
                    path.to_string(),
                    format!(
                        "the page at bytes {}..{} fails its checksum",
                        range.start, range.end
                    ),
                ))
            },
        )
    }

    pub fn memory_size(&self) -> usize {
        self.0.capacity() * std::mem::size_of::<(Range<u64>, u32)>()
    }
}

/// A page table being decoded: the bytes not read yet, and the block it belongs to.
struct Reader<'a> {
    rest: &'a [u8],
    block: &'a str,
}

impl Reader<'_> {
    fn unusable(&self, why: &str) -> StorageError {
        StorageError::Damaged(self.block.to_string(), format!("its page table {why}"))
    }

    fn varint(&mut self) -> Result<u64> {
        let (n, used) = u64::decode_var(self.rest).ok_or_else(|| self.unusable("is cut short"))?;
        self.rest = &self.rest[used..];
        Ok(n)
    }

    fn sum(&mut self) -> Result<u32> {
        let Some((word, rest)) = self.rest.split_first_chunk::<4>() else {
            return Err(self.unusable("is cut short"));
        };
        self.rest = rest;
        Ok(u32::from_le_bytes(*word))
    }
}

/// The metadata a reader needs to read pages of a block of `rows` rows written with `schema`,
/// with its pages' sums, from its page table. `block` names the block in errors.
pub fn metadata(block: &str, table: &[u8], schema: &Schema, rows: u64) -> Result<PageTable> {
    let mut reader = Reader { rest: table, block };
    let summed = match table.first() {
        Some(1) => false,
        Some(&PAGE_TABLE_FORMAT) => true,
        _ => return Err(reader.unusable("is neither version 1 nor 2")),
    };
    reader.rest = &table[1..];
    let i64_of = |n: u64| {
        i64::try_from(n).map_err(|_| {
            StorageError::Damaged(
                block.into(),
                "its page table holds an offset past 2^63".into(),
            )
        })
    };
    let descriptor = Arc::new(ArrowSchemaConverter::new().convert(schema)?);
    if reader.varint()? != descriptor.num_columns() as u64 {
        return Err(reader.unusable("does not have the table's columns"));
    }
    let (mut chunks, mut offsets, mut sums) = (Vec::new(), Vec::new(), Vec::new());
    for column in descriptor.columns() {
        let start = reader.varint()?;
        let dictionary = reader.varint()?;
        if summed && dictionary > 0 {
            sums.push((start..start + dictionary, reader.sum()?));
        }
        let values = reader.varint()?;
        let pages = reader.varint()?;
        let (mut next, mut row) = (start + dictionary, 0u64);
        let mut locations = Vec::new();
        for _ in 0..pages {
            let (bytes, page_rows) = (reader.varint()?, reader.varint()?);
            if summed {
                sums.push((next..next + bytes, reader.sum()?));
            }
            locations.push(PageLocation {
                offset: i64_of(next)?,
                compressed_page_size: i32::try_from(bytes)
                    .map_err(|_| reader.unusable("holds a page over 2 GiB"))?,
                first_row_index: i64_of(row)?,
            });
            next += bytes;
            row += page_rows;
        }
        if row != rows {
            return Err(reader.unusable("does not cover the block's rows"));
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
    if !reader.rest.is_empty() {
        return Err(reader.unusable("has bytes after its last column"));
    }
    let rows = i64_of(rows)?;
    let row_group = RowGroupMetaData::builder(descriptor.clone())
        .set_num_rows(rows)
        .set_column_metadata(chunks)
        .build()?;
    // As ArrowWriter stores it: readers take the Arrow types from it, not from Parquet's.
    let arrow_schema = KeyValue::new("ARROW:schema".into(), encode_arrow_schema(schema));
    let file = FileMetaData::new(1, rows, None, Some(vec![arrow_schema]), descriptor, None);
    let metadata = ParquetMetaDataBuilder::new(file)
        .add_row_group(row_group)
        .set_offset_index(Some(vec![offsets]))
        .build();
    sums.sort_unstable_by_key(|(range, _)| range.start);
    Ok(PageTable {
        metadata,
        sums: PageSums(sums),
    })
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
        let table = encode(&written, &file).expect("a zstd block with an offset index has one");
        assert!(written.offset_index().is_some());
        let rebuilt = metadata("b", &table, &schema, 50_000).unwrap().metadata;
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
        let (schema, file, written) = block();
        let table = encode(&written, &file).unwrap();
        let one_column = Schema::new(vec![schema.field(0).clone()]);
        assert!(metadata("b", &table, &one_column, 50_000).is_err());
        assert!(metadata("b", &table, &schema, 49_999).is_err());
        assert!(metadata("b", &table[..table.len() - 1], &schema, 50_000).is_err());
        let mut newer = table.clone();
        newer[0] = 3;
        assert!(metadata("b", &newer, &schema, 50_000).is_err());
    }

    /// Every page and dictionary page of the block is summed, its bytes pass and damaged bytes
    /// fail; a range that is not one page is left to the stride checksums.
    #[test]
    fn pages_are_checked_by_their_sums() {
        let (schema, file, written) = block();
        let table = encode(&written, &file).unwrap();
        let sums = metadata("b", &table, &schema, 50_000).unwrap().sums;
        let chunks = written.row_group(0).columns();
        let pages: usize = written.offset_index().unwrap()[0]
            .iter()
            .map(|c| c.page_locations().len())
            .sum();
        let dictionaries = chunks
            .iter()
            .filter(|c| c.dictionary_page_offset().is_some());
        assert_eq!(sums.0.len(), pages + dictionaries.count());
        assert!(
            chunks[1].dictionary_page_offset().is_some(),
            "c2 has a dictionary"
        );
        for (range, _) in &sums.0 {
            let bytes = file.slice(range.start as usize..range.end as usize);
            assert_eq!(
                sums.check("b", range, bytes.clone()).unwrap().unwrap(),
                bytes
            );
            let mut damaged = bytes.to_vec();
            let middle = damaged.len() / 2;
            damaged[middle] ^= 1;
            assert!(sums.check("b", range, damaged.into()).unwrap().is_err());
        }
        let (first, _) = &sums.0[0];
        assert!(
            sums.check("b", &(first.start..first.end + 1), file.slice(0..1))
                .is_none()
        );
        assert!(!sums.covers(&(first.start + 1..first.end)));
    }

    /// A version-1 table (no sums) is read as before: the same metadata, no sums.
    #[test]
    fn version_1_is_still_read() {
        let (schema, file, written) = block();
        let table = encode(&written, &file).unwrap();
        let v2 = metadata("b", &table, &schema, 50_000).unwrap();
        let mut v1 = vec![1u8];
        let mut reader = Reader {
            rest: &table[1..],
            block: "b",
        };
        let mut copy = |reader: &mut Reader| {
            let n = reader.varint().unwrap();
            v1.extend_from_slice(&n.encode_var_vec());
            n
        };
        for _ in 0..copy(&mut reader) {
            copy(&mut reader);
            if copy(&mut reader) > 0 {
                reader.sum().unwrap();
            }
            copy(&mut reader);
            for _ in 0..copy(&mut reader) {
                copy(&mut reader);
                copy(&mut reader);
                reader.sum().unwrap();
            }
        }
        assert!(reader.rest.is_empty());
        let read = metadata("b", &v1, &schema, 50_000).unwrap();
        assert!(read.sums.0.is_empty());
        assert_eq!(read.metadata.offset_index(), v2.metadata.offset_index());
        assert_eq!(read.metadata.row_groups(), v2.metadata.row_groups());
    }
}
