//! A point lookup's located pages, decoded on the task that reads the lookup instead of by
//! DataFusion's Parquet scan.
//!
//! The locator names the slices of a block that may hold a key, and the block's page table where
//! their pages lie. Read through DataFusion's scan, those few KB cost a file scan config, the
//! opener's state machine, a metrics set of some twenty metrics per file, and a task of their own
//! behind a channel: per lookup more CPU than the decoding itself. Here the projected columns'
//! pages of the selected rows are fetched straight from the verified reader (one request for all
//! of them, every byte checked, through the data and disk caches, with the row selection the
//! locator and the deletion vectors give: [`super::exec::block_file`]) and decoded by
//! parquet-rs's own page and array readers over the bytes fetched ([`LocatedRowGroup`]).
//! Parquet's page and value pruning is not needed: the selection already names only the
//! located pages. The rows are the scan's; the caller filters.
//!
//! Pages are decompressed here, not by parquet-rs ([`LocatedPages`], [`PageCodec`]): zstd by one
//! context per thread instead of a codec per column chunk, and, for the page where the selected
//! rows end, only as far as they reach ([`super::page_cut`]).

use std::ops::Range;
use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use bytes::{Buf, Bytes};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::internal_datafusion_err;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetRowSelection;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::parquet::arrow::arrow_reader::{
    ParquetRecordBatchReader, RowGroups, RowSelection, RowSelector,
};
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::arrow::{FieldLevels, ProjectionMask, parquet_to_arrow_field_levels};
use datafusion::parquet::basic::{Compression, Encoding};
use datafusion::parquet::column::page::{Page, PageIterator, PageMetadata, PageReader};
use datafusion::parquet::errors::{ParquetError, Result as ParquetResult};
use datafusion::parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData, RowGroupMetaData};
use datafusion::parquet::file::page_index::offset_index::OffsetIndexMetaData;
use datafusion::parquet::file::properties::{ReaderProperties, ReaderPropertiesPtr};
use datafusion::parquet::file::reader::{ChunkReader, Length};
use datafusion::parquet::file::serialized_reader::SerializedPageReader;
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder};
use futures::future::try_join_all;
use sieve_storage::{RangeKey, Storage};

use crate::scan::dictionary_pages::{Dictionary, offsets, plain_page};
use crate::scan::page_codec::PageCodec;
use crate::scan::page_cut::{Layout, PageCut};
use crate::scan::verified_reader::{ReadCounts, VerifiedReaderFactory};

/// The rows the selections of `files` (located blocks whose page tables fit,
/// [`VerifiedReaderFactory::fits`]) name, of the `projection` of the table's columns, as
/// `schema`'s batches; the blocks read side by side, their counts added to `metrics`.
pub(crate) async fn read_located(
    factory: &VerifiedReaderFactory,
    files: &[PartitionedFile],
    schema: &SchemaRef,
    projection: Option<&[usize]>,
    batch_size: usize,
    metrics: &ExecutionPlanMetricsSet,
) -> Result<Vec<RecordBatch>> {
    let reads = files.iter().map(|file| async move {
        let path = file.object_meta.location.clone();
        let bytes_scanned = MetricBuilder::new(metrics).counter("bytes_scanned", 0);
        let counts = ReadCounts::new(metrics, 0, bytes_scanned);
        let pages = PageCounts::new(metrics);
        let (mut reader, arrow) = factory.located(file.clone(), counts)?.ok_or_else(|| {
            internal_datafusion_err!("{path} was chosen for a direct read without a page table")
        })?;
        let metadata = arrow.metadata();
        let parquet_schema = metadata.file_metadata().schema_descr();
        let mask = match projection {
            Some(projection) => ProjectionMask::roots(parquet_schema, projection.iter().copied()),
            None => ProjectionMask::all(),
        };
        let selection = file
            .extension::<ParquetRowSelection>()
            .map(|s| s.selection().clone());
        let levels = parquet_to_arrow_field_levels(
            parquet_schema,
            mask.clone(),
            Some(arrow.schema().fields()),
        )?;
        let group = RowGroupRead {
            metadata,
            row_group: 0,
            mask: &mask,
            levels: &levels,
            batch_size,
            dictionaries: None,
            pages: &pages,
        };
        let batches = group.read(&mut reader, selection).await?;
        // The block's columns are the table's (the page table was checked against its schema);
        // the batches take the scan's schema, field metadata included.
        (batches.into_iter())
            .map(|batch| {
                Ok(RecordBatch::try_new(
                    schema.clone(),
                    batch.columns().to_vec(),
                )?)
            })
            .collect::<Result<Vec<_>>>()
    });
    Ok(try_join_all(reads).await?.into_iter().flatten().collect())
}

/// A scan that can decode a point lookup's located pages on the lookup's own task: Sieve's own
/// blocks' ([`crate::scan::exec::SieveScanExec`]) and an attached table's files'
/// ([`crate::iceberg::scan_exec::IcebergScanExec`]).
#[async_trait]
pub trait LocatedRead: Send + Sync {
    /// The scan's rows, unfiltered, decoded here; None when the scan chose to read through
    /// DataFusion's Parquet scan instead: execute it.
    async fn read_direct(&self, context: &TaskContext) -> Result<Option<Vec<RecordBatch>>>;
}

/// Where decompressed dictionary pages are kept: the process's data cache, under their file's
/// key marked apart from its byte ranges. A dictionary page is the first page of each column
/// chunk that has one, and every lookup of a key in the chunk's dictionary-encoded pages
/// decodes it: PyIceberg's and Spark's files begin each row group's columns with dictionaries
/// of up to a few MB, whose decompression was most of such a lookup's CPU.
#[derive(Clone)]
pub(crate) struct KeptDictionaries {
    pub storage: Storage,
    /// The file's key in the data cache.
    pub file: String,
}

impl KeptDictionaries {
    fn key(&self, chunk: &ColumnChunkMetaData) -> Option<RangeKey> {
        let start = u64::try_from(chunk.dictionary_page_offset()?).ok()?;
        let end = u64::try_from(chunk.data_page_offset()).ok()?;
        Some((
            format!("{}\u{0}decompressed dictionary", self.file),
            start,
            end,
        ))
    }
}

/// What a located read did with its pages, as EXPLAIN ANALYZE shows it.
#[derive(Clone, Default)]
pub(crate) struct PageCounts {
    /// The bytes pages decompressed to (`page_bytes_decompressed`).
    pub decompressed: Count,
    /// Dictionary-encoded pages read as PLAIN pages of the rows read, their chunk's dictionary
    /// never decoded by parquet-rs (`pages_from_dictionary`).
    pub from_dictionary: Count,
}

impl PageCounts {
    pub fn new(metrics: &ExecutionPlanMetricsSet) -> Self {
        Self {
            decompressed: MetricBuilder::new(metrics).counter("page_bytes_decompressed", 0),
            from_dictionary: MetricBuilder::new(metrics).counter("pages_from_dictionary", 0),
        }
    }
}

/// Whether every chunk of `group` in `mask` is one [`RowGroupRead`] can decompress
/// ([`PageCodec`]).
pub(crate) fn decompressible(group: &RowGroupMetaData, mask: &ProjectionMask) -> bool {
    (group.columns().iter().enumerate())
        .filter(|(column, _)| mask.leaf_included(*column))
        .all(|(_, chunk)| PageCodec::of(chunk.compression()).is_some())
}

/// One row group's read of a lookup: the columns in `mask`, decoded as `levels` say.
pub(crate) struct RowGroupRead<'a> {
    pub metadata: &'a ParquetMetaData,
    pub row_group: usize,
    pub mask: &'a ProjectionMask,
    pub levels: &'a FieldLevels,
    pub batch_size: usize,
    pub dictionaries: Option<&'a KeptDictionaries>,
    /// Counts what is done with the pages.
    pub pages: &'a PageCounts,
}

impl RowGroupRead<'_> {
    /// The row group's rows `selection` names (all when None), fetched through `reader` in one
    /// request and decoded, in the file's column order.
    pub async fn read(
        &self,
        reader: &mut (dyn AsyncFileReader + Send),
        selection: Option<RowSelection>,
    ) -> Result<Vec<RecordBatch>> {
        let span = selection.as_ref().map(selected_span);
        let mut group = LocatedRowGroup::new(self, span)?;
        let wanted = group.ranges(self.mask, selection.as_ref())?;
        let fetched = reader
            .get_byte_ranges(wanted.iter().map(|(_, r)| r.clone()).collect())
            .await?;
        group.fill(wanted, fetched);
        let rows = ParquetRecordBatchReader::try_new_with_row_groups(
            self.levels,
            &group,
            self.batch_size,
            selection,
        )?;
        Ok(rows.collect::<std::result::Result<Vec<_>, _>>()?)
    }
}

/// A located row group, holding the pages of it a read fetched: what parquet-rs's record batch
/// reader decodes (the model is its own `InMemoryRowGroup`, which is not public).
struct LocatedRowGroup<'a> {
    metadata: &'a ParquetMetaData,
    /// The row group's place in the file.
    index: usize,
    row_group: &'a RowGroupMetaData,
    /// Per leaf column, the pages fetched of it; None for a column not read.
    chunks: Vec<Option<Arc<FetchedPages>>>,
    dictionaries: Option<&'a KeptDictionaries>,
    /// The rows from the first selected to the one after the last (parquet-rs reads none past
    /// the selection's last, and only skips those before its first); None: all.
    span: Option<Range<usize>>,
    pages: &'a PageCounts,
}

impl<'a> LocatedRowGroup<'a> {
    /// The row group `read` reads, the rows `span`.
    fn new(read: &RowGroupRead<'a>, span: Option<Range<usize>>) -> Result<Self> {
        let row_group = (read.metadata.row_groups().get(read.row_group))
            .ok_or_else(|| internal_datafusion_err!("a located read of a row group not there"))?;
        Ok(Self {
            metadata: read.metadata,
            index: read.row_group,
            row_group,
            chunks: vec![None; row_group.num_columns()],
            dictionaries: read.dictionaries,
            span,
            pages: read.pages,
        })
    }

    /// The offset index of the row group's columns.
    fn offsets(&self) -> Option<&'a [OffsetIndexMetaData]> {
        let index = self.metadata.offset_index()?.get(self.index)?;
        Some(index.as_slice())
    }

    /// The byte ranges of the pages `selection` reads of the columns in `mask`, by leaf column:
    /// a chunk's dictionary page, then its data pages holding selected rows; without a
    /// selection, the whole chunk in one range.
    ///
    /// A selection of many short runs (deleted rows punched out of a slice) is one parquet-rs
    /// reads as a mask, decoding every row between the first and the last selected within a
    /// batch, skipped ones included: for one, the pages from its first selected row to its
    /// last are read. The test is parquet-rs's own default (`RowSelectionPolicy::Auto`: a mask
    /// when the runs average under 32 rows).
    fn ranges(
        &self,
        mask: &ProjectionMask,
        selection: Option<&RowSelection>,
    ) -> Result<Vec<(usize, Range<u64>)>> {
        let offsets = (self.offsets())
            .ok_or_else(|| internal_datafusion_err!("a page table without an offset index"))?;
        let covering = selection.filter(|s| read_as_mask(s)).map(covering);
        let selection = covering.as_ref().or(selection);
        let mut ranges = Vec::new();
        for (column, chunk) in self.row_group.columns().iter().enumerate() {
            if !mask.leaf_included(column) {
                continue;
            }
            let (start, length) = chunk.byte_range();
            let Some(selection) = selection else {
                ranges.push((column, start..start + length));
                continue;
            };
            let pages = &offsets[column].page_locations;
            if let Some(first) = pages.first().filter(|p| p.offset as u64 != start) {
                ranges.push((column, start..first.offset as u64));
            }
            let scanned = selection.scan_ranges(pages);
            ranges.extend(scanned.into_iter().map(|r| (column, r)));
        }
        Ok(ranges)
    }

    /// Takes the bytes fetched for [`Self::ranges`]' ranges, in their order.
    fn fill(&mut self, wanted: Vec<(usize, Range<u64>)>, fetched: Vec<Bytes>) {
        let mut pages: Vec<Vec<(u64, Bytes)>> = vec![Vec::new(); self.chunks.len()];
        for ((column, range), bytes) in wanted.into_iter().zip(fetched) {
            pages[column].push((range.start, bytes));
        }
        for (column, pages) in pages.into_iter().enumerate() {
            if !pages.is_empty() {
                let length = self.row_group.column(column).byte_range().1;
                self.chunks[column] = Some(Arc::new(FetchedPages { length, pages }));
            }
        }
    }
}

/// Whether parquet-rs's default policy reads `selection` as a mask.
fn read_as_mask(selection: &RowSelection) -> bool {
    let (rows, runs) = (selection.iter())
        .filter(|s| s.row_count > 0)
        .fold((0, 0), |(rows, runs), s| (rows + s.row_count, runs + 1));
    rows < runs * 32
}

/// The rows from `selection`'s first selected row to its last (empty at 0 when none is).
fn selected_span(selection: &RowSelection) -> Range<usize> {
    let (mut at, mut first, mut end) = (0, None, 0);
    for selector in selection.iter() {
        if !selector.skip && selector.row_count > 0 {
            first.get_or_insert(at);
            end = at + selector.row_count;
        }
        at += selector.row_count;
    }
    first.unwrap_or(0)..end
}

/// A selection of every row from `selection`'s first selected row to its last.
fn covering(selection: &RowSelection) -> RowSelection {
    let span = selected_span(selection);
    RowSelection::from(vec![
        RowSelector::skip(span.start),
        RowSelector::select(span.len()),
    ])
}

/// Reader settings for the located pages: no page statistics decoded (nothing prunes by them
/// here).
static PROPERTIES: LazyLock<ReaderPropertiesPtr> = LazyLock::new(|| {
    Arc::new(
        ReaderProperties::builder()
            .set_read_page_statistics(false)
            .build(),
    )
});

impl RowGroups for LocatedRowGroup<'_> {
    fn num_rows(&self) -> usize {
        self.row_group.num_rows() as usize
    }

    fn column_chunks(&self, i: usize) -> ParquetResult<Box<dyn PageIterator>> {
        let pages = self.chunks[i].clone().ok_or_else(|| {
            ParquetError::General(format!("column {i} of a located read was not fetched"))
        })?;
        let locations = self.offsets().map(|o| o[i].page_locations.clone());
        // Read as stored, undecompressed: [`LocatedPages`] decompresses them ([`decompressible`]
        // checks that it can before a read is made this way).
        let chunk = self.row_group.column(i);
        let codec = PageCodec::of(chunk.compression()).ok_or_else(|| {
            ParquetError::General(format!(
                "a located read of a chunk compressed by {}",
                chunk.compression()
            ))
        })?;
        let stored = chunk
            .clone()
            .into_builder()
            .set_compression(Compression::UNCOMPRESSED)
            .build()?;
        let rows = self.num_rows();
        let layout = Layout::of(chunk.column_descr());
        let reader = SerializedPageReader::new_with_properties(
            pages,
            &stored,
            rows,
            locations,
            PROPERTIES.clone(),
        )?;
        let reader = LocatedPages {
            pages: reader,
            codec,
            dictionary: (self.dictionaries)
                .and_then(|kept| Some((kept.storage.clone(), kept.key(chunk)?))),
            held: None,
            next: None,
            layout,
            row: layout.map(|_| 0),
            span: self.span.clone(),
            values: None,
            counts: self.pages.clone(),
        };
        Ok(Box::new(OnePage(Some(Ok(Box::new(reader))))))
    }

    fn row_groups(&self) -> Box<dyn Iterator<Item = &RowGroupMetaData> + '_> {
        Box::new(std::iter::once(self.row_group))
    }

    fn metadata(&self) -> &ParquetMetaData {
        self.metadata
    }
}

/// A column chunk's one page reader, as parquet-rs's readers take it.
struct OnePage(Option<ParquetResult<Box<dyn PageReader>>>);

impl Iterator for OnePage {
    type Item = ParquetResult<Box<dyn PageReader>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.take()
    }
}

impl PageIterator for OnePage {}

/// What a located read fetched of a column chunk: some of its pages, or all of it, as ranges by
/// file offset, sorted.
struct FetchedPages {
    /// The whole chunk's length.
    length: u64,
    pages: Vec<(u64, Bytes)>,
}

impl FetchedPages {
    /// The bytes fetched from file offset `start` to the end of the range holding it.
    fn at(&self, start: u64) -> ParquetResult<Bytes> {
        let after = self.pages.partition_point(|(offset, _)| *offset <= start);
        let (offset, bytes) = after
            .checked_sub(1)
            .map(|i| &self.pages[i])
            .filter(|(offset, bytes)| start < offset + bytes.len() as u64)
            .ok_or_else(|| {
                ParquetError::General(format!("a located read did not fetch the page at {start}"))
            })?;
        Ok(bytes.slice((start - offset) as usize..))
    }
}

impl Length for FetchedPages {
    fn len(&self) -> u64 {
        self.length
    }
}

impl ChunkReader for FetchedPages {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> ParquetResult<Self::T> {
        Ok(self.at(start)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> ParquetResult<Bytes> {
        let page = self.at(start)?;
        if length > page.len() {
            return Err(ParquetError::EOF(format!(
                "a located page at {start} is shorter than {length} bytes"
            )));
        }
        Ok(page.slice(..length))
    }
}

/// A column chunk's pages as read from the bytes fetched, decompressed here ([`PageCodec`]);
/// its dictionary page given to the column reader only before a dictionary-encoded data
/// page, and taken decompressed from the data cache, where it is kept ([`KeptDictionaries`]).
///
/// Why the dictionary waits: writers fall back from dictionary encoding to plain pages once a
/// chunk's dictionary outgrows its limit (PyArrow's 1 MB), so in a row group of unique keys
/// most data pages are plain, and a lookup of a row in one needs no dictionary. Parquet-rs's
/// column reader decodes a dictionary page as soon as it meets it (a few MB into its own
/// buffers, a tenth of such a lookup's CPU), so the page is held back until a data page
/// needs it.
///
/// The data page where the selected rows end ([`LocatedRowGroup::end`]) is decompressed only
/// as far as those rows reach, where [`PageCut`] can tell how far that is, and given to
/// parquet-rs as a page of just those rows.
struct LocatedPages<P> {
    pages: P,
    /// How the chunk's pages are compressed.
    codec: PageCodec,
    /// Where the chunk's dictionary page is kept decompressed.
    dictionary: Option<(Storage, RangeKey)>,
    /// The chunk's dictionary page, as stored, not yet given.
    held: Option<Page>,
    /// The data page read after the dictionary page given for it, given next.
    next: Option<Page>,
    /// How the chunk's pages are laid out, where a page of it can be cut.
    layout: Option<Layout>,
    /// The chunk's row the next data page begins with; None once not known.
    row: Option<usize>,
    /// The first row read (the rows before it are only skipped) and the row after the last;
    /// None: all.
    span: Option<Range<usize>>,
    /// The held dictionary page's values, once a dictionary-encoded page was rewritten from
    /// them ([`Self::plain`]).
    values: Option<Dictionary>,
    /// Counts what is done with the pages.
    counts: PageCounts,
}

impl<P: PageReader> LocatedPages<P> {
    /// A decompressed dictionary-encoded `page` beginning with the chunk's row `first`, as a
    /// PLAIN page of the rows read, from the held dictionary page ([`super::dictionary_pages`]);
    /// None where it cannot be rewritten: give parquet-rs the dictionary.
    fn plain(&mut self, page: &Page, first: Option<usize>) -> ParquetResult<Option<Page>> {
        let Page::DataPage {
            buf,
            num_values,
            def_level_encoding,
            rep_level_encoding,
            ..
        } = page
        else {
            return Ok(None);
        };
        let Some(layout) = self
            .layout
            .filter(|l| !l.optional || *def_level_encoding == Encoding::RLE)
        else {
            return Ok(None);
        };
        if self.values.is_none() {
            self.values = self.values(layout)?;
        }
        let Some(dictionary) = &self.values else {
            return Ok(None);
        };
        let rows = (self.rows_read(first, *num_values as usize)).unwrap_or(*num_values as usize);
        let start = self.span.as_ref().map_or(0, |span| span.start);
        let placeholders = first.map_or(0, |first| start.saturating_sub(first));
        let Some(values) = plain_page(buf, layout, dictionary, rows, placeholders) else {
            return Ok(None);
        };
        self.counts.from_dictionary.add(1);
        Ok(Some(Page::DataPage {
            buf: Bytes::from(values),
            num_values: rows as u32,
            encoding: Encoding::PLAIN,
            def_level_encoding: *def_level_encoding,
            rep_level_encoding: *rep_level_encoding,
            statistics: None,
        }))
    }

    /// The held dictionary page's values, decompressed, with their offsets where they are byte
    /// arrays; both kept in the data cache where the dictionary is.
    fn values(&self, layout: Layout) -> ParquetResult<Option<Dictionary>> {
        // Dictionary pages hold PLAIN values, whichever of these they name; parquet-rs
        // refuses others, so such a page is left to it.
        let Some(Page::DictionaryPage {
            buf,
            num_values,
            encoding: Encoding::PLAIN | Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY,
            ..
        }) = &self.held
        else {
            return Ok(None);
        };
        let count = *num_values as usize;
        let values = self.dictionary(buf.clone())?;
        let kept = (self.dictionary.as_ref()).and_then(|(storage, (file, start, end))| {
            let key = (format!("{file}\u{0}offsets"), *start, *end);
            Some((storage.caches().data.as_ref()?, key))
        });
        let offsets = match kept {
            _ if !layout.byte_arrays() => None,
            Some((cache, key)) => match cache.get(&key) {
                Some(offsets) => Some(offsets),
                None => offsets(&values, count).inspect(|o| cache.insert(key, o.clone())),
            },
            None => offsets(&values, count),
        };
        Ok(Dictionary::new(layout, values, count, offsets))
    }

    /// A dictionary page's bytes decompressed, from the data cache or kept there.
    fn dictionary(&self, compressed: Bytes) -> ParquetResult<Bytes> {
        if self.codec == PageCodec::Uncompressed {
            return Ok(compressed);
        }
        let kept = (self.dictionary.as_ref())
            .and_then(|(storage, key)| Some((storage.caches().data.as_ref()?, key)));
        let Some((cache, key)) = kept else {
            return self.count(self.codec.decompress(&compressed));
        };
        if let Some(bytes) = cache.get(key) {
            return Ok(bytes);
        }
        let bytes = self.count(self.codec.decompress(&compressed))?;
        cache.insert(key.clone(), bytes.clone());
        Ok(bytes)
    }

    /// `bytes` decompressed, counted.
    fn count(&self, bytes: ParquetResult<Bytes>) -> ParquetResult<Bytes> {
        if let Ok(bytes) = &bytes {
            self.counts.decompressed.add(bytes.len());
        }
        bytes
    }

    /// How many of its rows a data page beginning with row `first` and holding `rows` rows
    /// gives: up to [`Self::end`].
    fn rows_read(&self, first: Option<usize>, rows: usize) -> Option<usize> {
        let wanted = self.span.as_ref()?.end.checked_sub(first?)?;
        (wanted > 0 && wanted < rows).then_some(wanted)
    }

    /// Holds the dictionary page if it is the next page.
    fn hold_dictionary(&mut self) -> ParquetResult<()> {
        if self.held.is_none() && self.pages.peek_next_page()?.is_some_and(|p| p.is_dict) {
            self.held = self.pages.get_next_page()?;
        }
        Ok(())
    }

    /// A data page beginning with the chunk's row `first`, decompressed, and cut after the
    /// rows read where they end in it and the page can be cut.
    fn decompressed(&self, mut page: Page, first: Option<usize>) -> ParquetResult<Page> {
        // The first was held ([`Self::hold_dictionary`]); Parquet allows one per chunk.
        if page.is_dictionary_page() {
            return Err(ParquetError::General(
                "a column chunk with a second dictionary page".into(),
            ));
        }
        if self.codec == PageCodec::Uncompressed {
            return Ok(page);
        }
        let cut = self.rows_read(first, page.num_values() as usize);
        match &mut page {
            Page::DataPage {
                buf,
                num_values,
                encoding,
                def_level_encoding,
                statistics,
                ..
            } => {
                let cut = (self.layout.zip(cut))
                    .and_then(|(l, rows)| PageCut::new(l, rows, *encoding, *def_level_encoding));
                *buf = self.count(match cut {
                    Some(mut cut) => {
                        // A page of the rows read: parquet-rs decodes its first `num_values`
                        // levels and the values they hold, and nothing after.
                        *num_values = cut.rows() as u32;
                        *statistics = None;
                        self.codec.decompress_until(buf, |so_far| cut.reach(so_far))
                    }
                    None => self.codec.decompress(buf),
                })?;
            }
            Page::DataPageV2 {
                buf,
                def_levels_byte_len,
                rep_levels_byte_len,
                is_compressed,
                ..
            } if *is_compressed => {
                // Levels are stored uncompressed before the values.
                let levels = (*def_levels_byte_len + *rep_levels_byte_len) as usize;
                let values = buf.get(levels..).ok_or_else(|| {
                    ParquetError::General("a page shorter than its levels".into())
                })?;
                let values = self.count(self.codec.decompress(values))?;
                let mut whole = Vec::with_capacity(levels + values.len());
                whole.extend_from_slice(&buf[..levels]);
                whole.extend_from_slice(&values);
                *buf = Bytes::from(whole);
                *is_compressed = false;
            }
            Page::DataPageV2 { .. } | Page::DictionaryPage { .. } => {}
        }
        Ok(page)
    }
}

impl<P: PageReader> Iterator for LocatedPages<P> {
    type Item = ParquetResult<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl<P: PageReader> PageReader for LocatedPages<P> {
    fn get_next_page(&mut self) -> ParquetResult<Option<Page>> {
        if let Some(page) = self.next.take() {
            return Ok(Some(page));
        }
        self.hold_dictionary()?;
        let Some(page) = self.pages.get_next_page()? else {
            return Ok(None);
        };
        let first = self.row;
        if page.is_data_page() {
            self.row = first.map(|row| row + page.num_values() as usize);
        }
        let page = self.decompressed(page, first)?;
        let wants_dictionary = matches!(
            page.encoding(),
            Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY
        );
        if wants_dictionary && let Some(plain) = self.plain(&page, first)? {
            return Ok(Some(plain));
        }
        match self.held.take() {
            Some(Page::DictionaryPage {
                buf,
                num_values,
                encoding,
                is_sorted,
            }) if wants_dictionary => {
                self.next = Some(page);
                Ok(Some(Page::DictionaryPage {
                    buf: self.dictionary(buf)?,
                    num_values,
                    encoding,
                    is_sorted,
                }))
            }
            held => {
                self.held = held;
                Ok(Some(page))
            }
        }
    }

    /// The next data page's: the dictionary page is never offered, so the column reader
    /// skips data pages without decoding it.
    fn peek_next_page(&mut self) -> ParquetResult<Option<PageMetadata>> {
        if let Some(page) = &self.next {
            return Ok(Some(PageMetadata {
                num_rows: None,
                num_levels: Some(page.num_values() as usize),
                is_dict: false,
            }));
        }
        self.hold_dictionary()?;
        self.pages.peek_next_page()
    }

    fn skip_next_page(&mut self) -> ParquetResult<()> {
        if self.next.take().is_some() {
            return Ok(());
        }
        self.hold_dictionary()?;
        let rows = (self.pages.peek_next_page()?).and_then(|p| p.num_rows.or(p.num_levels));
        self.row = self.row.zip(rows).map(|(row, rows)| row + rows);
        self.pages.skip_next_page()
    }

    fn at_record_boundary(&mut self) -> ParquetResult<bool> {
        self.pages.at_record_boundary()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::parquet::basic::ZstdLevel;
    use datafusion::parquet::file::properties::WriterProperties;

    use super::*;
    use crate::test_files::written;

    fn zstd() -> Compression {
        Compression::ZSTD(ZstdLevel::default())
    }

    /// 100,000 distinct strings in one row group of zstd pages of at most 5,000 rows, with a
    /// page index; the dictionary outgrows its 64 KB limit early, so later pages are plain.
    fn fallen_back() -> (Bytes, Arc<ParquetMetaData>) {
        use datafusion::arrow::array::StringArray;
        use datafusion::arrow::datatypes::{DataType, Field, Schema};

        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Utf8, false)]));
        let values = StringArray::from_iter_values((0..100_000).map(|i| format!("key {i:08}")));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(values)]).unwrap();
        let properties = WriterProperties::builder()
            .set_compression(zstd())
            .set_dictionary_page_size_limit(64 << 10)
            .set_data_page_row_count_limit(5_000)
            .set_write_batch_size(1_000)
            .build();
        written(&batch, properties)
    }

    /// A lookup of a row in a plain page never decompresses the chunk's dictionary page; one
    /// in a dictionary-encoded page does, and keeps it.
    #[tokio::test]
    async fn a_dictionary_page_is_read_only_for_a_page_that_needs_it() {
        use datafusion::arrow::array::AsArray;

        let (file, metadata) = fallen_back();
        let chunk = metadata.row_group(0).column(0);
        let kept = KeptDictionaries {
            storage: Storage::in_memory().with_caches(0, 64 << 20),
            file: "fallen back".into(),
        };
        // The chunk has a dictionary page; a row read without it is in a plain page.
        let key = kept.key(chunk).unwrap();
        let held = || {
            kept.storage
                .caches()
                .data
                .as_ref()
                .unwrap()
                .get(&key)
                .is_some()
        };
        let (mask, levels) = every_column(&metadata);
        let group = RowGroupRead {
            metadata: &metadata,
            row_group: 0,
            mask: &mask,
            levels: &levels,
            batch_size: 8192,
            dictionaries: Some(&kept),
            pages: &PageCounts::default(),
        };
        for (row, dictionary) in [(99_999, false), (90_001, false), (3, true), (99_998, true)] {
            let selection =
                RowSelection::from(vec![RowSelector::skip(row), RowSelector::select(1)]);
            let mut reader = std::io::Cursor::new(file.to_vec());
            let batches = group.read(&mut reader, Some(selection)).await.unwrap();
            let got: Vec<&str> = (batches.iter())
                .flat_map(|b| b.column(0).as_string::<i32>().iter().flatten())
                .collect();
            assert_eq!(got, [format!("key {row:08}")]);
            assert_eq!(held(), dictionary, "after row {row}");
        }
    }

    /// 100,000 rows in one row group of two `codec` pages of 50,000 PLAIN values a column (no
    /// dictionaries), with a page index: an int64 key, a string null at irregular rows (its
    /// levels mix repeated and bit-packed runs), an int32 null at every fifth.
    fn plain_pages(codec: Compression) -> (Bytes, Arc<ParquetMetaData>, RecordBatch) {
        let properties = WriterProperties::builder()
            .set_compression(codec)
            .set_dictionary_enabled(false)
            .set_data_page_row_count_limit(50_000)
            .set_data_page_size_limit(64 << 20)
            .set_write_batch_size(1_000)
            .build();
        three_columns(
            |i| i,
            |i| format!("{}", (i * 7919) as f64 / 104_729.0),
            |i| i as i32 * 3,
            properties,
        )
    }

    /// 100,000 rows written with `properties`: an int64 `key(row)`, a string `string(row)` null
    /// at irregular rows (its levels mix repeated and bit-packed runs), an int32 `number(row)`
    /// null at every fifth.
    fn three_columns(
        key: impl Fn(i64) -> i64,
        string: impl Fn(i64) -> String,
        number: impl Fn(i64) -> i32,
        properties: WriterProperties,
    ) -> (Bytes, Arc<ParquetMetaData>, RecordBatch) {
        use datafusion::arrow::array::{Int32Array, Int64Array, StringArray};
        use datafusion::arrow::datatypes::{DataType, Field, Schema};

        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
            Field::new("n", DataType::Int32, true),
        ]));
        let rows = 0..100_000i64;
        let keys = Int64Array::from_iter_values(rows.clone().map(key));
        let strings = StringArray::from_iter(
            (rows.clone()).map(|i| (i % 7 != 3 && i % 11 != 0).then(|| string(i))),
        );
        let numbers = Int32Array::from_iter(rows.map(|i| (i % 5 != 0).then(|| number(i))));
        let batch = RecordBatch::try_new(
            schema,
            vec![Arc::new(keys), Arc::new(strings), Arc::new(numbers)],
        )
        .unwrap();
        let (file, metadata) = written(&batch, properties);
        (file, metadata, batch)
    }

    /// A read of every column of `metadata`'s file, as decoded.
    fn every_column(metadata: &ParquetMetaData) -> (ProjectionMask, FieldLevels) {
        let mask = ProjectionMask::all();
        let schema = metadata.file_metadata().schema_descr();
        let levels = parquet_to_arrow_field_levels(schema, mask.clone(), None).unwrap();
        (mask, levels)
    }

    /// A lookup whose rows end inside a page decompresses the page only about as far as they
    /// reach, and gets the same rows as a whole read; reads ending at a page's end, crossing
    /// pages or read as a mask too.
    #[tokio::test]
    async fn a_page_is_decompressed_only_as_far_as_its_rows_read_reach() {
        let (file, metadata, batch) = plain_pages(zstd());
        let group = metadata.row_group(0);
        assert_eq!(offsets(&metadata, 0), [0, 50_000], "two pages a column");
        let whole: i64 = group.columns().iter().map(|c| c.uncompressed_size()).sum();
        // How much of the chunks each of [`lookups`] may decompress, where bounded.
        let bounds = [
            Some(whole / 8),
            None,
            None,
            Some(whole * 7 / 8),
            Some(whole * 7 / 8),
            None,
        ];
        let selections = lookups().into_iter().zip(bounds);
        for (selectors, at_most) in selections {
            let selection = RowSelection::from(selectors);
            let (got, pages) = read_rows(&file, &batch.schema(), &metadata, &selection, None).await;
            assert_eq!(got, selected(&batch, &selection), "{selection:?}");
            let decompressed = pages.decompressed.value() as i64;
            assert!(decompressed > 0);
            if let Some(at_most) = at_most {
                assert!(
                    decompressed <= at_most,
                    "{selection:?}: {decompressed} of {whole} bytes decompressed"
                );
            }
        }
    }

    /// Selections of one row, rows crossing pages, rows read as a mask, the last row.
    fn lookups() -> Vec<Vec<RowSelector>> {
        let mut short_runs: Vec<RowSelector> = vec![RowSelector::skip(60_000)];
        for _ in 0..200 {
            short_runs.extend([RowSelector::select(1), RowSelector::skip(2)]);
        }
        vec![
            vec![RowSelector::skip(10), RowSelector::select(5)],
            vec![RowSelector::skip(49_990), RowSelector::select(20)],
            vec![RowSelector::skip(40_000), RowSelector::select(10_000)],
            vec![
                RowSelector::skip(70_000),
                RowSelector::select(1),
                RowSelector::skip(100),
                RowSelector::select(3),
            ],
            short_runs,
            vec![RowSelector::skip(99_999), RowSelector::select(1)],
        ]
    }

    /// The rows of `selection` read from the file's first row group, every column, as `schema`'s
    /// batch, and what was done with their pages.
    async fn read_rows(
        file: &Bytes,
        schema: &SchemaRef,
        metadata: &ParquetMetaData,
        selection: &RowSelection,
        dictionaries: Option<&KeptDictionaries>,
    ) -> (RecordBatch, PageCounts) {
        let (mask, levels) = every_column(metadata);
        let pages = PageCounts::default();
        let read = RowGroupRead {
            metadata,
            row_group: 0,
            mask: &mask,
            levels: &levels,
            batch_size: 8192,
            dictionaries,
            pages: &pages,
        };
        let mut reader = std::io::Cursor::new(file.to_vec());
        let got = read
            .read(&mut reader, Some(selection.clone()))
            .await
            .unwrap();
        let got = datafusion::arrow::compute::concat_batches(schema, &got).unwrap();
        (got, pages)
    }

    /// The rows of `batch` that `selection` selects.
    fn selected(batch: &RecordBatch, selection: &RowSelection) -> RecordBatch {
        use datafusion::arrow::array::BooleanArray;
        use datafusion::arrow::compute::filter_record_batch;

        let mut wanted = Vec::new();
        for selector in selection.iter() {
            wanted.extend(std::iter::repeat_n(!selector.skip, selector.row_count));
        }
        wanted.resize(batch.num_rows(), false);
        filter_record_batch(batch, &BooleanArray::from(wanted)).unwrap()
    }

    /// 100,000 rows in one row group of `codec` pages of 10,000 dictionary-encoded values a
    /// column, with a page index ([`three_columns`]): an int64 key (bit-packed indices), a
    /// string of 700 values, and an int32 in runs of 1,000 (repeated runs).
    fn dictionary_pages(codec: Compression) -> (Bytes, Arc<ParquetMetaData>, RecordBatch) {
        let properties = WriterProperties::builder()
            .set_compression(codec)
            .set_dictionary_page_size_limit(4 << 20)
            .set_data_page_row_count_limit(10_000)
            .set_write_batch_size(1_000)
            .build();
        three_columns(
            |i| i * 3 + 1,
            |i| format!("value {}", (i * 7919) % 700),
            |i| i as i32 / 1000,
            properties,
        )
    }

    /// Dictionary-encoded pages are read as PLAIN pages of the rows read, with and without the
    /// dictionaries kept, and give the rows a whole read gives.
    #[tokio::test]
    async fn dictionary_encoded_pages_are_read_as_plain_pages_of_the_rows_read() {
        let (file, metadata, batch) = dictionary_pages(zstd());
        assert_eq!(offsets(&metadata, 0).len(), 10, "ten pages a column");
        let kept = KeptDictionaries {
            storage: Storage::in_memory().with_caches(0, 64 << 20),
            file: "dictionary pages".into(),
        };
        for dictionaries in [None, Some(&kept), Some(&kept)] {
            for selectors in lookups() {
                let selection = RowSelection::from(selectors);
                let (got, pages) =
                    read_rows(&file, &batch.schema(), &metadata, &selection, dictionaries).await;
                assert_eq!(got, selected(&batch, &selection), "{selection:?}");
                // Every column's pages holding rows read, rewritten.
                assert!(pages.from_dictionary.value() >= 3, "{selection:?}");
            }
        }
    }

    /// Pages of each codec a located read decompresses itself, plain or dictionary-encoded,
    /// give the rows a whole read gives, their last page cut; a chunk of another codec is
    /// left to the scan ([`decompressible`]), and a read of it made regardless is refused.
    #[tokio::test]
    async fn pages_of_each_codec_read_give_the_rows_a_whole_read_gives() {
        use datafusion::parquet::basic::{BrotliLevel, GzipLevel};

        for codec in [
            Compression::SNAPPY,
            Compression::GZIP(GzipLevel::default()),
            Compression::LZ4_RAW,
            Compression::LZ4,
            Compression::BROTLI(BrotliLevel::default()),
            Compression::UNCOMPRESSED,
            zstd(),
        ] {
            for (dictionary, (file, metadata, batch)) in
                [(false, plain_pages(codec)), (true, dictionary_pages(codec))]
            {
                let (mask, _) = every_column(&metadata);
                assert!(decompressible(metadata.row_group(0), &mask), "{codec}");
                for selectors in lookups() {
                    let selection = RowSelection::from(selectors);
                    let (got, pages) =
                        read_rows(&file, &batch.schema(), &metadata, &selection, None).await;
                    assert_eq!(got, selected(&batch, &selection), "{codec}: {selection:?}");
                    let decompressed = pages.decompressed.value();
                    assert_eq!(
                        decompressed > 0,
                        codec != Compression::UNCOMPRESSED,
                        "{codec}"
                    );
                    if dictionary {
                        assert!(pages.from_dictionary.value() >= 3, "{codec}: {selection:?}");
                    }
                }
            }
            // The first row's pages only: the string page (about 1 MB decompressed) is cut
            // after its first rows, where its codec can stop early.
            let (file, metadata, batch) = plain_pages(codec);
            let selection = RowSelection::from(vec![RowSelector::select(10)]);
            let (_, pages) = read_rows(&file, &batch.schema(), &metadata, &selection, None).await;
            let whole: i64 = (metadata.row_group(0).columns().iter())
                .map(|c| c.uncompressed_size())
                .sum();
            let decompressed = pages.decompressed.value() as i64;
            match codec {
                Compression::GZIP(_) | Compression::BROTLI(_) | Compression::ZSTD(_) => {
                    assert!(
                        decompressed < whole / 4,
                        "{codec}: {decompressed} of {whole}"
                    )
                }
                _ => {}
            }
        }
        // Chunks named LZO, which parquet-rs can neither write nor read.
        let (file, metadata, _) = plain_pages(Compression::UNCOMPRESSED);
        let mut lzo = Arc::unwrap_or_clone(metadata).into_builder();
        let groups = (lzo.take_row_groups().into_iter())
            .map(|group| {
                let mut group = group.into_builder();
                let chunks = (group.take_columns().into_iter())
                    .map(|c| c.into_builder().set_compression(Compression::LZO).build())
                    .collect::<ParquetResult<_>>()?;
                group.set_column_metadata(chunks).build()
            })
            .collect::<ParquetResult<_>>()
            .unwrap();
        let metadata = lzo.set_row_groups(groups).build();
        let (mask, levels) = every_column(&metadata);
        assert!(!decompressible(metadata.row_group(0), &mask));
        let pages = PageCounts::default();
        let read = RowGroupRead {
            metadata: &metadata,
            row_group: 0,
            mask: &mask,
            levels: &levels,
            batch_size: 8192,
            dictionaries: None,
            pages: &pages,
        };
        let mut reader = std::io::Cursor::new(file.to_vec());
        let selection = RowSelection::from(vec![RowSelector::select(1)]);
        let e = read.read(&mut reader, Some(selection)).await.unwrap_err();
        assert!(e.to_string().contains("compressed by LZO"), "{e}");
    }

    /// The first rows of the pages of `row_group`'s first column.
    fn offsets(metadata: &ParquetMetaData, row_group: usize) -> Vec<i64> {
        let index = &metadata.offset_index().unwrap()[row_group][0];
        index
            .page_locations
            .iter()
            .map(|p| p.first_row_index)
            .collect()
    }
}
