//! A Sieve table as DataFusion sees it: scans read only the blocks pruning keeps (with Parquet
//! predicate pushdown and page-index pruning inside them); inserts stream into the table writer.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::DFSchema;
use datafusion::common::config::TableParquetOptions;
use datafusion::common::not_impl_err;
use datafusion::datasource::TableType;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_optimizer::pruning::PruningPredicateBuilder;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;
use sieve_storage::{Catalog, Table};

use crate::error::to_df;
use crate::options::SieveOptions;
use crate::progress::WriteProgress;
use crate::pruning::prune_blocks;
use crate::scan_exec::SieveScanExec;
use crate::sink::SieveSink;
use crate::storage_url::object_store_url;
use crate::verified_reader::VerifiedReaderFactory;

#[derive(Debug)]
pub struct SieveTable {
    catalog: Catalog,
    table: Table,
}

impl SieveTable {
    pub fn new(catalog: Catalog, table: Table) -> Self {
        Self { catalog, table }
    }
}

#[async_trait]
impl TableProvider for SieveTable {
    fn schema(&self) -> SchemaRef {
        self.table.def().schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// Filters prune blocks, and Parquet pushdown filters rows; DataFusion still re-applies them.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = self.schema();
        let pruning_on = state
            .config_options()
            .extensions
            .get::<SieveOptions>()
            .is_none_or(|o| o.pruning);
        let snapshot = self.table.snapshot().await.map_err(to_df)?;
        let blocks = self.table.blocks(&snapshot).await.map_err(to_df)?;

        let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
        let predicate = conjunction(filters.iter().cloned())
            .map(|e| state.create_physical_expr(e, &df_schema))
            .transpose()?;
        let pruning = predicate.as_ref().filter(|_| pruning_on).and_then(|p| {
            PruningPredicateBuilder::new()
                .with_file_schema(schema.clone())
                .build(p.clone())
        });
        let outcome = prune_blocks(&self.table, &blocks, pruning.as_deref()).await?;

        let rows_read: u64 = outcome
            .survivors
            .iter()
            .map(|&i| blocks.rows().value(i))
            .sum();
        let bytes_read: u64 = outcome
            .survivors
            .iter()
            .map(|&i| blocks.data_bytes().value(i))
            .sum();
        let projected = match projection {
            Some(p) => Arc::new(schema.project(p)?),
            None => schema.clone(),
        };
        let input: Arc<dyn ExecutionPlan> = if outcome.survivors.is_empty() {
            Arc::new(EmptyExec::new(projected))
        } else {
            let files: Vec<PartitionedFile> = outcome
                .survivors
                .iter()
                .map(|&i| {
                    let path = self.table.block_path(blocks.block_id(i));
                    PartitionedFile::new(path.to_string(), blocks.data_bytes().value(i))
                        .with_extension(blocks.checksums(i))
                })
                .collect();
            let partitions = state.config_options().execution.target_partitions.max(1);
            let per_group = files.len().div_ceil(partitions);
            let groups = files
                .chunks(per_group)
                .map(|c| FileGroup::new(c.to_vec()))
                .collect();
            // Parquet leaves NaN out of its statistics, so its own row-group and page pruning
            // would drop NaN rows for `d = 'NaN'` or `d > 5`; Sieve's block bounds include NaN
            // (see sieve_storage's nan_bounds), so a float predicate is left to them.
            let on_floats = filters.iter().any(|f| {
                f.column_refs().iter().any(|c| {
                    schema
                        .field_with_name(&c.name)
                        .is_ok_and(|field| field.data_type().is_floating())
                })
            });
            let mut options = TableParquetOptions::default();
            options.global.pruning = !on_floats;
            options.global.enable_page_index = !on_floats;
            options.global.pushdown_filters = true;
            let mut source = ParquetSource::new(schema.clone())
                .with_table_parquet_options(options)
                .with_parquet_file_reader_factory(Arc::new(VerifiedReaderFactory::new(
                    self.table.storage().store().clone(),
                )));
            if let Some(predicate) = &predicate {
                source = source.with_predicate(predicate.clone());
            }
            let url = object_store_url(self.table.storage())?;
            let config = FileScanConfigBuilder::new(url, Arc::new(source))
                .with_file_groups(groups)
                .with_projection_indices(projection.cloned())?
                .with_limit(limit)
                .build();
            DataSourceExec::from_data_source(config)
        };
        let name = format!("{}.{}", self.table.def().database, self.table.def().name);
        Ok(Arc::new(SieveScanExec::new(
            name, outcome, rows_read, bytes_read, input,
        )))
    }

    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if insert_op != InsertOp::Append {
            return not_impl_err!("{insert_op} is not supported; Sieve tables only append");
        }
        let progress = state.config().get_extension::<WriteProgress>();
        let sink = SieveSink::new(self.catalog.clone(), self.table.clone(), progress);
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}
