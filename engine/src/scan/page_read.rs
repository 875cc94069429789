//! A point lookup's located pages, decoded on the task that reads the lookup instead of by
//! DataFusion's Parquet scan.
//!
//! The locator names the slices of a block that may hold a key, and the block's page table where
//! their pages lie. Read through DataFusion's scan, those few KB cost a file scan config, the
//! opener's state machine, a metrics set of some twenty metrics per file, and a task of their own
//! behind a channel: per lookup more CPU than the decoding itself. Here parquet-rs's async reader
//! (what DataFusion's opener drives too) decodes the projected columns' pages of the selected
//! rows straight from the verified reader: one request for all of them, every byte checked,
//! through the data and disk caches, with the row selection the locator and the deletion vectors
//! give ([`super::exec::block_file`]). Parquet's page and value pruning is not needed: the
//! selection already names only the located pages. The rows are the scan's; the caller filters.

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::internal_datafusion_err;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetRowSelection;
use datafusion::error::Result;
use datafusion::parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder};
use futures::TryStreamExt;
use futures::future::try_join_all;

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
        let (reader, arrow) = factory.located(file.clone(), counts)?.ok_or_else(|| {
            internal_datafusion_err!("{path} was chosen for a direct read without a page table")
        })?;
        let mut builder = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, arrow)
            .with_batch_size(batch_size);
        if let Some(selection) = file.extension::<ParquetRowSelection>() {
            builder = builder.with_row_selection(selection.selection().clone());
        }
        if let Some(projection) = projection {
            let mask = ProjectionMask::roots(builder.parquet_schema(), projection.iter().copied());
            builder = builder.with_projection(mask);
        }
        let batches: Vec<RecordBatch> = builder.build()?.try_collect().await?;
        // The block's columns are the table's (the page table was checked against its schema);
        // the batches take the scan's schema, field metadata included.
        batches
            .into_iter()
            .map(|b| Ok(RecordBatch::try_new(schema.clone(), b.columns().to_vec())?))
            .collect::<Result<Vec<_>>>()
    });
    Ok(try_join_all(reads).await?.into_iter().flatten().collect())
}
