//! A point lookup's rows of an attached table's files, decoded on the lookup's own task as
//! Sieve's own blocks' are ([`crate::scan::page_read`]), not by DataFusion's Parquet scan.
//!
//! Why: a uniform lookup of a PyIceberg-written table spent over half its CPU in zstd. Parquet-rs's
//! page reader makes a codec per column chunk (two zstd contexts, each created by a `cpuid` that
//! traps on a virtual machine), and a lookup of a key in a row group's first,
//! dictionary-encoded pages decompressed that chunk's dictionary page, up to a few MB, again.
//! Here pages are decompressed by the thread's one context, dictionary pages are kept
//! decompressed in the data cache ([`KeptDictionaries`]), and the scan's per-file machinery
//! (its opener, a task and channel per partition) is not built up.
//!
//! Taken only where that read is exact without DataFusion's schema adapter: every column read
//! is in the file, by field id or through the table's name mapping
//! ([`super::field_ids::column_in_file`]), as a primitive column; the chunks read are zstd or
//! uncompressed; the selected rows' pages are located (a page index, or Sieve's walk of the
//! file); no equality delete applies. A column of a promoted type (`int` written, `long` now)
//! is cast as the adapter casts it. Any other read goes through DataFusion's scan.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{Field, Fields, SchemaRef};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::ParquetFileReaderFactory;
use datafusion::datasource::physical_plan::parquet::ParquetRowSelection;
use datafusion::error::Result;
use datafusion::parquet::arrow::arrow_reader::RowSelection;
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::arrow::{
    FieldLevels, ProjectionMask, parquet_to_arrow_field_levels, parquet_to_arrow_schema,
};
use datafusion::parquet::file::metadata::ParquetMetaData;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::future::try_join_all;
use sieve_iceberg::{FileNames, field_id};

use crate::scan::page_read::{KeptDictionaries, PageCounts, RowGroupRead, decompressible};

use super::field_ids::column_in_file;
use super::indexed_pages::IndexedPagesFactory;

/// A lookup's files of an attached table, each with the rows its index and position deletes
/// left ([`ParquetRowSelection`]), to be read directly if they can be.
#[derive(Debug)]
pub struct LocatedFiles {
    pub pages: Arc<IndexedPagesFactory>,
    pub files: Vec<PartitionedFile>,
    /// The table's columns read, in table order.
    pub read: Vec<usize>,
    pub schema: SchemaRef,
    pub file_names: Arc<FileNames>,
    pub batch_size: usize,
}

/// One file's direct read, planned.
struct FileRead {
    reader: Box<dyn AsyncFileReader + Send>,
    metadata: Arc<ParquetMetaData>,
    mask: ProjectionMask,
    levels: FieldLevels,
    /// For each column read, in the table's order, its place among the columns decoded.
    columns: Vec<usize>,
    /// The row groups holding selected rows, each with its rows' selection.
    groups: Vec<(usize, RowSelection)>,
    dictionaries: Option<KeptDictionaries>,
}

impl LocatedFiles {
    /// The files' selected rows of the columns read, as the table's projected schema types
    /// them; None when any file cannot be read directly (nothing was fetched but footers).
    pub async fn read(
        &self,
        metrics: &ExecutionPlanMetricsSet,
    ) -> Result<Option<Vec<RecordBatch>>> {
        let projected: SchemaRef = Arc::new(self.schema.project(&self.read)?);
        let mut reads = Vec::with_capacity(self.files.len());
        for (i, file) in self.files.iter().enumerate() {
            match self.open(i, file, metrics).await? {
                Some(read) => reads.push(read),
                None => return Ok(None),
            }
        }
        let pages = PageCounts::new(metrics);
        let reads = (reads.into_iter()).map(|read| self.read_file(read, &projected, &pages));
        Ok(Some(
            try_join_all(reads).await?.into_iter().flatten().collect(),
        ))
    }

    /// The plan of `file`'s direct read; None where it cannot be read directly.
    async fn open(
        &self,
        i: usize,
        file: &PartitionedFile,
        metrics: &ExecutionPlanMetricsSet,
    ) -> Result<Option<FileRead>> {
        let Some(selection) = file.extension::<ParquetRowSelection>() else {
            return Ok(None);
        };
        let mut reader = self.pages.create_reader(i, file.clone(), None, metrics)?;
        let metadata = reader.get_metadata(None).await?;
        if metadata.offset_index().is_none() {
            return Ok(None);
        }
        let parquet_schema = metadata.file_metadata().schema_descr();
        let in_file = parquet_to_arrow_schema(parquet_schema, None)?;
        // Each column read's root column in the file.
        let mut roots = Vec::with_capacity(self.read.len());
        for &column in &self.read {
            let field = self.schema.field(column);
            let Some(id) = field_id(field) else {
                return Ok(None);
            };
            let Some(at) = column_in_file(&in_file, id, &self.file_names)? else {
                return Ok(None);
            };
            if field.data_type().is_nested() || in_file.field(at).data_type().is_nested() {
                return Ok(None);
            }
            roots.push(at);
        }
        let mut decoded = roots.clone();
        decoded.sort_unstable();
        decoded.dedup();
        let columns = (roots.iter())
            .map(|at| decoded.binary_search(at).unwrap_or_default())
            .collect();
        let mask = ProjectionMask::roots(parquet_schema, decoded.iter().copied());
        // Decoded as the table types its columns where Parquet's reader can (a string as
        // `Utf8`, not a view); [`Self::read_file`] casts what it cannot.
        let hint: Fields = (in_file.fields().iter().enumerate())
            .map(|(at, field)| match roots.iter().position(|r| *r == at) {
                Some(k) => {
                    let table = self.schema.field(self.read[k]).data_type().clone();
                    Arc::new(Field::clone(field).with_data_type(table))
                }
                None => field.clone(),
            })
            .collect();
        let Ok(levels) = parquet_to_arrow_field_levels(parquet_schema, mask.clone(), Some(&hint))
        else {
            return Ok(None);
        };
        let mut rest = selection.selection().clone();
        let mut groups = Vec::new();
        for (index, group) in metadata.row_groups().iter().enumerate() {
            let selected = rest.split_off(group.num_rows() as usize);
            if selected.selects_any() {
                groups.push((index, selected));
            }
        }
        if !(groups.iter()).all(|(index, _)| decompressible(metadata.row_group(*index), &mask)) {
            return Ok(None);
        }
        Ok(Some(FileRead {
            dictionaries: self.pages.kept_dictionaries(file),
            reader,
            metadata,
            mask,
            levels,
            columns,
            groups,
        }))
    }

    async fn read_file(
        &self,
        read: FileRead,
        projected: &SchemaRef,
        pages: &PageCounts,
    ) -> Result<Vec<RecordBatch>> {
        let FileRead {
            mut reader,
            metadata,
            mask,
            levels,
            columns,
            groups,
            dictionaries,
        } = read;
        let mut rows = Vec::new();
        for (index, selection) in groups {
            let group = RowGroupRead {
                metadata: &metadata,
                row_group: index,
                mask: &mask,
                levels: &levels,
                batch_size: self.batch_size,
                dictionaries: dictionaries.as_ref(),
                pages,
            };
            for batch in group.read(reader.as_mut(), Some(selection)).await? {
                let columns = (columns.iter().zip(projected.fields()))
                    .map(|(&at, field)| {
                        let column = batch.column(at);
                        match column.data_type() == field.data_type() {
                            true => Ok(column.clone()),
                            false => cast(column, field.data_type()),
                        }
                    })
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                rows.push(RecordBatch::try_new(projected.clone(), columns)?);
            }
        }
        Ok(rows)
    }
}
