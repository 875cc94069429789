//! A Sieve table as DataFusion sees it: scans read only the blocks pruning keeps (with Parquet
//! predicate pushdown and page-index pruning inside them); inserts stream into the table writer.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::DFSchema;
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
use sieve_storage::Table;

use crate::error::to_df;
use crate::options::SieveOptions;
use crate::progress::WriteProgress;
use crate::pruning::prune_blocks;
use crate::scan_exec::SieveScanExec;
use crate::sink::SieveSink;
use crate::storage_url::object_store_url;

#[derive(Debug)]
pub struct SieveTable {
    table: Table,
}

impl SieveTable {
    pub fn new(table: Table) -> Self {
        Self { table }
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
                })
                .collect();
            let partitions = state.config_options().execution.target_partitions.max(1);
            let per_group = files.len().div_ceil(partitions);
            let groups = files
                .chunks(per_group)
                .map(|c| FileGroup::new(c.to_vec()))
                .collect();
            let mut source = ParquetSource::new(schema.clone())
                .with_pushdown_filters(true)
                .with_enable_page_index(true);
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
        let sink = SieveSink::new(self.table.clone(), progress);
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}
