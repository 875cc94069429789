//! Where a column chunk's pages are, for a file written without Parquet's page index: walked
//! from header to header, reading each page's header and none of its data. Parquet's own page
//! reader parses the headers (its `SerializedPageReader`, asked to peek at and skip each page);
//! the chunk reader under it fetches a few KB at each page's start and notes where that was.
//!
//! Why walk at all: a lookup that reads one page of a row group needs each column's page
//! offsets, which only a page index gives, and PyArrow writes none by default. Walking costs a
//! small ranged read per page, once, when the file is indexed.
//!
//! Each page's encoding is read from its header too (with the `thrift` crate's compact
//! protocol: Parquet keeps its own header type private), so that a lookup whose pages are all
//! plain-encoded skips the column's dictionary page: writers fall back from a dictionary that
//! grew too large (PyIceberg at 2 MB) to plain pages, and that dictionary would otherwise be
//! most of what a lookup reads.

use std::io::Read;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use datafusion::common::exec_datafusion_err;
use datafusion::error::Result;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::column::page::PageReader;
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::ColumnChunkMetaData;
use datafusion::parquet::file::reader::{ChunkReader, Length};
use datafusion::parquet::file::serialized_reader::SerializedPageReader;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use sieve_storage::PageLocation;
use thrift::protocol::{TCompactInputProtocol, TInputProtocol, TType};
use tokio::runtime::Handle;

/// Bytes fetched at a page's start: a header without statistics is ~30 bytes; one with long
/// string bounds reads on in steps of [`MORE`].
const FIRST: u64 = 1024;
const MORE: u64 = 16 * 1024;

/// The data pages of the chunk `column` describes, in order; None when its rows cannot be told
/// from its headers (a repeated column's version 1 pages count values, not rows).
pub async fn column_pages(
    store: Arc<dyn ObjectStore>,
    path: Path,
    column: ColumnChunkMetaData,
    rows: u64,
) -> Result<Option<Vec<PageLocation>>> {
    let source = Source::Store {
        store,
        path: path.clone(),
        handle: Handle::current(),
    };
    tokio::task::spawn_blocking(move || walk(source, &column, rows))
        .await
        .map_err(|e| exec_datafusion_err!("{e}"))?
        .map_err(|e| exec_datafusion_err!("pages of {path}: {e}"))
}

/// [`column_pages`] of a file held in memory, `file` its bytes: blocking, but with no request
/// to wait for, so a file read whole is walked on the thread that indexes it.
pub fn column_pages_in(
    file: &Bytes,
    column: &ColumnChunkMetaData,
    rows: u64,
) -> Result<Option<Vec<PageLocation>>, ParquetError> {
    walk(Source::Memory(file.clone()), column, rows)
}

fn walk(
    source: Source,
    column: &ColumnChunkMetaData,
    rows: u64,
) -> Result<Option<Vec<PageLocation>>, ParquetError> {
    if column.column_descr().max_rep_level() > 0 {
        return Ok(None);
    }
    let (start, len) = column.byte_range();
    let reader = Arc::new(Headers {
        fetcher: Arc::new(Fetcher {
            source,
            end: start + len,
        }),
        reads: Mutex::default(),
    });
    // Marked uncompressed: the walk reads headers alone, and the page reader would otherwise
    // make the chunk's codec first (for zstd, a compressor and a decompressor: 4.6% of CREATE
    // INDEX's CPU over 10,000 small files).
    let headers_only = (column.clone().into_builder())
        .set_compression(Compression::UNCOMPRESSED)
        .build()?;
    let total = usize::try_from(rows).unwrap_or(usize::MAX);
    let mut pages_reader = SerializedPageReader::new(reader.clone(), &headers_only, total, None)?;
    let mut pages: Vec<PageLocation> = Vec::new();
    let mut first_row = 0;
    while let Some(page) = pages_reader.peek_next_page()? {
        // The page peeked at starts where its header was read: the last read begun.
        let last = reader
            .reads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .last()
            .cloned();
        let (start, header) =
            last.ok_or_else(|| ParquetError::General("no page header read".into()))?;
        if let Some(last) = pages.last_mut() {
            last.size = u32::try_from(start - last.offset).unwrap_or(u32::MAX);
        }
        if !page.is_dict {
            let Some(page_rows) = page.num_rows.or(page.num_levels) else {
                return Ok(None);
            };
            let header = header.lock().unwrap_or_else(|e| e.into_inner()).clone();
            pages.push(PageLocation {
                offset: start,
                size: 0,
                first_row,
                plain: encoding(&header).is_some_and(|e| !DICTIONARY_ENCODINGS.contains(&e)),
            });
            first_row += page_rows as u64;
        }
        pages_reader.skip_next_page()?;
    }
    if let Some(last) = pages.last_mut() {
        last.size = u32::try_from(reader.fetcher.end - last.offset).unwrap_or(u32::MAX);
    }
    Ok((first_row == rows && !pages.is_empty()).then_some(pages))
}

/// Parquet's `Encoding` values of dictionary-encoded pages: PLAIN_DICTIONARY, RLE_DICTIONARY.
const DICTIONARY_ENCODINGS: [i32; 2] = [2, 8];

/// The encoding a data page's header gives (`DataPageHeader` field 2, `DataPageHeaderV2`
/// field 4); None when `header` does not hold it whole (a header longer than the first fetch).
fn encoding(header: &[u8]) -> Option<i32> {
    let mut thrift = TCompactInputProtocol::new(header);
    thrift.read_struct_begin().ok()?;
    loop {
        let field = thrift.read_field_begin().ok()?;
        match (field.id, field.field_type) {
            (_, TType::Stop) => return None,
            (Some(5), TType::Struct) => return i32_field(&mut thrift, 2),
            (Some(8), TType::Struct) => return i32_field(&mut thrift, 4),
            (_, other) => thrift.skip(other).ok()?,
        }
        thrift.read_field_end().ok()?;
    }
}

/// Field `id` of the struct `thrift` is at, an i32.
fn i32_field(thrift: &mut TCompactInputProtocol<&[u8]>, id: i16) -> Option<i32> {
    thrift.read_struct_begin().ok()?;
    loop {
        let field = thrift.read_field_begin().ok()?;
        match (field.id, field.field_type) {
            (_, TType::Stop) => return None,
            (Some(at), TType::I32) if at == id => return thrift.read_i32().ok(),
            (_, other) => thrift.skip(other).ok()?,
        }
        thrift.read_field_end().ok()?;
    }
}

/// A column chunk as Parquet's page reader reads it, fetched a header at a time.
struct Headers {
    fetcher: Arc<Fetcher>,
    /// Where each read began, in order, and the bytes first fetched there.
    reads: Mutex<Vec<(u64, Arc<Mutex<Bytes>>)>>,
}

struct Fetcher {
    source: Source,
    /// The chunk's end: no read goes past it.
    end: u64,
}

/// Where a walked file's bytes are.
enum Source {
    /// In storage, fetched by range, the walk blocking its thread on `handle` for each.
    Store {
        store: Arc<dyn ObjectStore>,
        path: Path,
        handle: Handle,
    },
    /// In memory: the whole file.
    Memory(Bytes),
}

impl Fetcher {
    fn fetch(&self, start: u64, len: u64) -> Result<Bytes, ParquetError> {
        let range = start..(start + len).min(self.end);
        match &self.source {
            Source::Store {
                store,
                path,
                handle,
            } => (handle.block_on(store.get_range(path, range)))
                .map_err(|e| ParquetError::External(Box::new(e))),
            Source::Memory(file) => {
                match range.start <= range.end && range.end <= file.len() as u64 {
                    true => Ok(file.slice(range.start as usize..range.end as usize)),
                    false => Err(ParquetError::EOF(format!(
                        "a page at {start} runs past the file's {} bytes",
                        file.len()
                    ))),
                }
            }
        }
    }
}

impl Length for Headers {
    fn len(&self) -> u64 {
        self.fetcher.end
    }
}

impl ChunkReader for Headers {
    type T = HeaderRead;

    fn get_read(&self, start: u64) -> Result<HeaderRead, ParquetError> {
        let first = Arc::new(Mutex::new(Bytes::new()));
        let mut reads = self.reads.lock().unwrap_or_else(|e| e.into_inner());
        reads.push((start, first.clone()));
        Ok(HeaderRead {
            fetcher: self.fetcher.clone(),
            next: start,
            buffered: Bytes::new(),
            first: Some(first),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes, ParquetError> {
        self.fetcher.fetch(start, length as u64)
    }
}

/// Bytes from a page's start, fetched [`FIRST`] then [`MORE`] at a time as the header parser
/// asks for them.
struct HeaderRead {
    fetcher: Arc<Fetcher>,
    next: u64,
    buffered: Bytes,
    /// Where the first fetch's bytes go, until it is made.
    first: Option<Arc<Mutex<Bytes>>>,
}

impl Read for HeaderRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.buffered.is_empty() {
            if self.next >= self.fetcher.end {
                return Ok(0);
            }
            let step = if self.first.is_some() { FIRST } else { MORE };
            let fetched = self.fetcher.fetch(self.next, step);
            self.buffered = fetched.map_err(std::io::Error::other)?;
            self.next += self.buffered.len() as u64;
            if let Some(first) = self.first.take() {
                *first.lock().unwrap_or_else(|e| e.into_inner()) = self.buffered.clone();
            }
        }
        let n = buf.len().min(self.buffered.len());
        buf[..n].copy_from_slice(&self.buffered[..n]);
        self.buffered = self.buffered.slice(n..);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
    use datafusion::parquet::file::properties::WriterProperties;
    use object_store::memory::InMemory;
    use object_store::{ObjectStoreExt, PutPayload};

    use super::*;
    use crate::test_files::written;

    /// A walk finds the pages the writer's own offset index lists, and tells the pages after
    /// a dictionary grew too large (plain) from those before it.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_walk_finds_the_pages_the_writer_indexed() {
        let rows = 20_000i64;
        let batch = RecordBatch::try_from_iter([
            ("id", Arc::new(Int64Array::from_iter_values(0..rows)) as _),
            (
                "name",
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|i| format!("n{}", i % 7)),
                )) as _,
            ),
        ])
        .unwrap();
        let properties = WriterProperties::builder()
            .set_data_page_row_count_limit(700)
            .set_write_batch_size(100)
            .set_dictionary_page_size_limit(4096)
            .build();
        let (bytes, metadata) = written(&batch, properties);
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = Path::from("f.parquet");
        store.put(&path, PutPayload::from(bytes)).await.unwrap();

        let group = metadata.row_group(0);
        for (c, column) in group.columns().iter().enumerate() {
            let walked = column_pages(store.clone(), path.clone(), column.clone(), rows as u64)
                .await
                .unwrap()
                .unwrap();
            let written = &metadata.offset_index().unwrap()[0][c].page_locations;
            assert!(written.len() > 20, "{} pages", written.len());
            let found: Vec<_> = (walked.iter())
                .map(|p| (p.offset as i64, p.size as i32, p.first_row as i64))
                .collect();
            let want: Vec<_> = (written.iter())
                .map(|p| (p.offset, p.compressed_page_size, p.first_row_index))
                .collect();
            assert_eq!(found, want, "column {c}");
            let plain: Vec<bool> = walked.iter().map(|p| p.plain).collect();
            match c {
                // Distinct ids outgrow a 4 KB dictionary within the first pages.
                0 => assert!(!plain[0] && plain[plain.len() - 1], "{plain:?}"),
                // Seven names never do.
                _ => assert!(plain.iter().all(|p| !p), "{plain:?}"),
            }
        }
    }
}
