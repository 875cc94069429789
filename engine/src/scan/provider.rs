//! A Sieve table as DataFusion sees it: scans read only the blocks pruning keeps (with Parquet
//! predicate pushdown and page-index pruning inside them, see [`crate::scan::exec`]); inserts
//! stream into the table writer.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{FieldRef, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::DFSchema;
use datafusion::common::{internal_datafusion_err, not_impl_err};
use datafusion::datasource::TableType;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::error::Result;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::expressions::{Column, cast};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::projection::ProjectionExec;
use sieve_storage::{Catalog, Table};

use crate::access::principal::require;
use crate::access::privileges::{Object, Privilege};
use crate::cluster::coordinator::Cluster;
use crate::cluster::node_filters::shares_to_ask;
use crate::error::to_df;
use crate::maintenance::delete::{DeleteExec, DeleteRequest};
use crate::options::SieveOptions;
use crate::progress::WriteProgress;
use crate::scan::exec::{ScanRequest, SieveScanExec};
use crate::scan::routing::RoutingFilters;
use crate::sink::SieveSink;

/// Casts an INSERT's rows to the table's column types. DataFusion casts them when it plans the
/// INSERT, but before type coercion, so an expression whose type coercion settles later (`CASE
/// WHEN … THEN 7 ELSE number END` is DECIMAL(20,0)) reaches the sink uncast. The cast fails on a
/// value that does not fit rather than writing NULL.
fn cast_to_table(
    input: Arc<dyn ExecutionPlan>,
    table: &SchemaRef,
) -> Result<Arc<dyn ExecutionPlan>> {
    let from = input.schema();
    let same = |(f, t): (&FieldRef, &FieldRef)| f.data_type() == t.data_type();
    if from.fields().len() != table.fields().len()
        || from.fields().iter().zip(table.fields()).all(same)
    {
        return Ok(input);
    }
    let exprs = (from.fields().iter().zip(table.fields()).enumerate())
        .map(|(i, (f, t))| {
            let column = Arc::new(Column::new(f.name(), i));
            Ok((
                cast(column, &from, t.data_type().clone())?,
                t.name().clone(),
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(ProjectionExec::try_new(exprs, input)?))
}

#[derive(Debug)]
pub struct SieveTable {
    catalog: Catalog,
    table: Table,
}

impl SieveTable {
    pub fn new(catalog: Catalog, table: Table) -> Self {
        Self { catalog, table }
    }

    /// Refuses the statement unless the session's account holds `wanted` on this table:
    /// checked here, where a plan touches the table, whatever the statement's shape.
    fn require(&self, state: &dyn Session, wanted: Privilege) -> Result<()> {
        let def = self.table.def();
        require(
            state.config(),
            wanted,
            &Object::table(&def.database, &def.name),
        )
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

    /// Plans the scan without reading anything: pruning happens when it executes.
    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.require(state, Privilege::Select)?;
        let options = state.config_options();
        let sieve = options.extensions.get::<SieveOptions>();
        let df_schema = DFSchema::try_from(self.schema().as_ref().clone())?;
        let predicate = conjunction(filters.iter().cloned())
            .map(|e| state.create_physical_expr(e, &df_schema))
            .transpose()?;
        let pruning = sieve.is_none_or(|o| o.pruning);
        // A distributed scan reads one snapshot on every worker, so it is pinned here; its
        // blocks are placed over the workers live now, and node filters leave out the workers
        // that cannot hold the keys of a point lookup.
        let (snapshot, shares) = match state.config().get_extension::<Cluster>() {
            Some(cluster) => {
                let snapshot = self.table.snapshot().await.map_err(to_df)?;
                let blocks = self.table.blocks(&snapshot).await.map_err(to_df)?;
                let routing = state
                    .config()
                    .get_extension::<RoutingFilters>()
                    .ok_or_else(|| internal_datafusion_err!("a session without routing filters"))?;
                let (shares, _) = shares_to_ask(
                    &routing,
                    &self.table,
                    &blocks,
                    predicate.as_ref().filter(|_| pruning),
                    sieve.is_none_or(|o| o.node_filters),
                    Arc::new(cluster.placement()?),
                )?;
                (Some(snapshot.version), Some(shares))
            }
            None => (None, None),
        };
        // A scan of no column and no filter (what `count(*)` plans) in this process: its rows
        // are the snapshot's live rows, which its block list holds, so DataFusion answers the
        // count from them and no block is read. A table of many small blocks (one per
        // single-row INSERT) took ~36 KB of memory per block and seconds for each count.
        let mut exact = None;
        let no_column = projection.is_some_and(|p| p.is_empty());
        if shares.is_none() && no_column && filters.is_empty() && limit.is_none() {
            let staleness = sieve.map_or(0, |o| o.max_staleness_ms);
            let snapshot = (self.table)
                .snapshot_within(std::time::Duration::from_millis(staleness))
                .await
                .map_err(to_df)?;
            let blocks = self.table.blocks(&snapshot).await.map_err(to_df)?;
            let rows: u64 = (0..blocks.len()).map(|i| blocks.live_rows(i)).sum();
            exact = Some((snapshot.version, rows));
        }
        let mut request = ScanRequest::new(self.table.clone(), options);
        request.projection = projection.cloned();
        request.predicate = predicate;
        request.limit = limit;
        request.snapshot = snapshot.or(exact.map(|(version, _)| version));
        request.shares = shares;
        request.rows = exact.map(|(_, rows)| rows);
        Ok(Arc::new(SieveScanExec::new(request)?))
    }

    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.require(state, Privilege::Insert)?;
        if insert_op != InsertOp::Append {
            return not_impl_err!("{insert_op} is not supported; Sieve tables only append");
        }
        let progress = state.config().get_extension::<WriteProgress>();
        let sink = SieveSink::new(self.catalog.clone(), self.table.clone(), progress);
        let input = cast_to_table(input, &self.schema())?;
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }

    /// Plans the DELETE without reading anything: rows are chosen and deleted when it executes.
    /// `filters` are the WHERE clause's conjuncts (none: every row); the session refuses a WHERE
    /// clause with a subquery before it gets here ([`crate::guard::statement`]), since DataFusion
    /// would leave the subquery out of them.
    async fn delete_from(
        &self,
        state: &dyn Session,
        filters: Vec<Expr>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.require(state, Privilege::Delete)?;
        // As in MySQL: the WHERE clause reads the rows, and the count it answers tells of them.
        if !filters.is_empty() {
            self.require(state, Privilege::Select)?;
        }
        let sieve = state.config_options().extensions.get::<SieveOptions>();
        let schema = self.schema();
        let where_clause = conjunction(filters);
        let mut projection: Vec<usize> = match &where_clause {
            Some(e) => e
                .column_refs()
                .iter()
                .map(|c| schema.index_of(&c.name))
                .collect::<std::result::Result<_, _>>()?,
            None => Vec::new(),
        };
        projection.sort_unstable();
        let whole = DFSchema::try_from(schema.as_ref().clone())?;
        let read = DFSchema::try_from(schema.project(&projection)?)?;
        let physical = |schema: &DFSchema| {
            where_clause
                .clone()
                .map(|e| state.create_physical_expr(e, schema))
                .transpose()
        };
        Ok(Arc::new(DeleteExec::new(DeleteRequest {
            table: self.table.clone(),
            predicate: physical(&read)?,
            projection,
            pruning_predicate: physical(&whole)?,
            pruning: sieve.is_none_or(|o| o.pruning),
            locator: sieve.is_none_or(|o| o.locator),
        })))
    }
}
