//! The short path of a point lookup: `SELECT columns FROM table WHERE …` whose condition is `=`
//! and `IN` on columns joined by AND and OR, with an optional `LIMIT`, planned straight into
//! the plan DataFusion would make of it (a scan of the table, a filter, a projection) without
//! DataFusion's SQL planner, its optimizer passes and its physical planner, which cost a served
//! lookup more CPU than finding its row. A prepared statement recognises its shape once
//! and binds each execution's values into it.
//!
//! The short path only takes what it can plan exactly as the full path would, and hands
//! everything else back (`None`): a value whose type differs from its column's in kind (a
//! string for an integer column, whose comparison DataFusion coerces), a cast that would lose
//! anything, NULL, an unknown table or column (whose error the full path words), a table that
//! is not a Sieve table. `SET sieve.short_path = false` turns it off, the baseline of its
//! differential tests.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::cast::as_boolean_array;
use datafusion::common::{DFSchema, ScalarValue, internal_datafusion_err};
use datafusion::config::ConfigOptions;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::ExecutionProps;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{Expr as LogicalExpr, col, in_list, lit};
use datafusion::optimizer::simplify_expressions::THRESHOLD_INLINE_INLIST;
use datafusion::physical_expr::utils::reassign_expr_columns;
use datafusion::physical_expr::{PhysicalExpr, create_physical_expr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::expressions::Column;
use datafusion::physical_plan::filter::FilterExecBuilder;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::planner::IdentNormalizer;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, GroupByExpr, Ident, LimitClause, ObjectName, Query, Select, SelectItem,
    SetExpr, Statement, TableFactor, UnaryOperator, Value,
};
use sieve_storage::Table;

use std::time::Duration;

use tokio::time::Instant;

use super::Session;
use crate::access::privileges::{Object, Privilege};
use crate::cluster::coordinator::Cluster;
use crate::cluster::lookup_wire::{
    LOOKUP_WIRE_VERSION, WireColumn, WireLookup, WireNode, WireOp, WireValue, malformed,
};
use crate::cluster::placement::Placement;
use crate::cluster::remote_lookup::{Owned, RemoteLookup};
use crate::error::to_df;
use crate::guard::deadline::{DeadlineStream, QueryTimeout};
use crate::iceberg::catalog::namespace_named;
use crate::options::SieveOptions;
use crate::scan::exec::{ChosenBlocks, ScanRequest, Shares, SieveScanExec};
use crate::scan::lossless_cast::lossless_cast;
use crate::scan::page_read::LocatedRead;
use crate::scan::routing::RoutingFilters;
use crate::session::lookup_results::{LookupKey, LookupResults, keeping};
use crate::session::query_stream::{ColumnOrigin, QueryStream};

/// A literal of the statement's text, or the `n`th parameter (from 0) of a prepared statement.
#[derive(Debug, Clone)]
enum Operand {
    Value(ScalarValue),
    Param(usize),
}

#[derive(Debug, Clone)]
enum Condition {
    In(String, Vec<Operand>),
    And(Box<Condition>, Box<Condition>),
    Or(Box<Condition>, Box<Condition>),
}

/// What a point lookup asks, its names normalised as DataFusion's planner normalises them.
#[derive(Debug, Clone)]
pub(crate) struct PointLookup {
    /// The table as written: one part, database and table, or an attached catalog, namespace
    /// and table.
    table: Vec<String>,
    /// The name the result's columns are qualified by (database if written, and table): the
    /// alias, or the table as written.
    qualifier: (Option<String>, String),
    /// Output columns: (table column, output name); None for `*`.
    columns: Option<Vec<(String, String)>>,
    condition: Condition,
    limit: Option<Operand>,
}

/// A lookup with its values bound.
pub(crate) struct Bound {
    pub origins: Vec<Option<ColumnOrigin>>,
    /// What its result depends on.
    pub key: LookupKey,
}

impl PointLookup {
    /// The lookup `statement` is, if it is one.
    pub fn recognize(statement: &DFStatement, normalize: bool) -> Option<Self> {
        let DFStatement::Statement(statement) = statement else {
            return None;
        };
        let Statement::Query(query) = statement.as_ref() else {
            return None;
        };
        let names = IdentNormalizer::new(normalize);
        let limit = plain_query(query)?;
        let SetExpr::Select(select) = query.body.as_ref() else {
            return None;
        };
        let (name, alias) = single_table(select)?;
        let table: Vec<String> = name
            .0
            .iter()
            .map(|part| part.as_ident().cloned().map(|i| names.normalize(i)))
            .collect::<Option<_>>()?;
        if table.is_empty() || table.len() > 3 {
            return None;
        }
        // As DataFusion qualifies a column of `catalog.namespace.table`: by namespace and table.
        let qualifier = match (alias, table.as_slice()) {
            (Some(alias), _) => (None, names.normalize(alias.clone())),
            (None, [.., db, table]) => (Some(db.clone()), table.clone()),
            (None, _) => (None, table[0].clone()),
        };
        let column = |expr: &Expr| -> Option<String> {
            match expr {
                Expr::Identifier(ident) => Some(names.normalize(ident.clone())),
                // Qualified by the alias or the one-part table name exactly; other forms
                // (`db.t.c`, `t.c` of `db.t`) are left to DataFusion's name resolution.
                Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                    [q, c]
                        if qualifier.0.is_none() && names.normalize(q.clone()) == qualifier.1 =>
                    {
                        Some(names.normalize(c.clone()))
                    }
                    _ => None,
                },
                _ => None,
            }
        };
        let columns = match select.projection.as_slice() {
            [SelectItem::Wildcard(options)] if options.opt_alias.is_none() => {
                let plain = options.opt_ilike.is_none()
                    && options.opt_exclude.is_none()
                    && options.opt_except.is_none()
                    && options.opt_replace.is_none()
                    && options.opt_rename.is_none();
                plain.then_some(None)?
            }
            items => {
                let mut columns = Vec::with_capacity(items.len());
                for item in items {
                    columns.push(match item {
                        SelectItem::UnnamedExpr(expr) => {
                            let name = column(expr)?;
                            (name.clone(), name)
                        }
                        SelectItem::ExprWithAlias { expr, alias } => {
                            (column(expr)?, names.normalize(alias.clone()))
                        }
                        _ => return None,
                    });
                }
                let mut outputs: Vec<&String> = columns.iter().map(|(_, out)| out).collect();
                outputs.sort_unstable();
                outputs.dedup();
                // DataFusion refuses two output columns of one name; let it say so.
                (outputs.len() == columns.len()).then_some(Some(columns))?
            }
        };
        let condition = condition(select.selection.as_ref()?, &column)?;
        if condition.ands_one_column() {
            return None;
        }
        Some(Self {
            table,
            qualifier,
            columns,
            condition,
            limit,
        })
    }

    /// The table as (database, table), unqualified names in `database`; an attached table's
    /// name ([`Self::attached`]) as its namespace and table.
    pub fn table<'a>(&'a self, database: &'a str) -> (&'a str, &'a str) {
        match self.table.as_slice() {
            [.., db, table] => (db, table),
            [table] => (database, table),
            [] => unreachable!("recognised with one part or more"),
        }
    }

    /// The attached catalog a three-part name starts with, and its namespace and table.
    pub fn attached(&self) -> Option<(&str, &str, &str)> {
        match self.table.as_slice() {
            [catalog, namespace, table] => Some((catalog, namespace, table)),
            _ => None,
        }
    }

    /// The lookup over version `version` of the table `id` of `schema` with `params` bound:
    /// what its result depends on and where its columns come from; None when the full path
    /// must plan it. Cheap: a kept result answers from this alone, and only a miss plans
    /// ([`Self::physical`]).
    pub fn bind(
        &self,
        (schema, id): (&SchemaRef, &str),
        version: u64,
        database: &str,
        params: &[ScalarValue],
        options: &ConfigOptions,
    ) -> Option<Bound> {
        let condition = bind(&self.condition, schema, params)?;
        let limit = match &self.limit {
            None => None,
            Some(operand) => Some(row_count(operand, params)?),
        };
        let outputs: Vec<(usize, String)> = match &self.columns {
            None => (0..schema.fields().len())
                .map(|i| (i, schema.field(i).name().clone()))
                .collect(),
            Some(columns) => columns
                .iter()
                .map(|(column, name)| Some((schema.index_of(column).ok()?, name.clone())))
                .collect::<Option<_>>()?,
        };
        let origin = ColumnOrigin {
            database: self.qualifier.0.as_deref().unwrap_or(database).to_string(),
            table: self.qualifier.1.clone(),
        };
        Some(Bound {
            origins: vec![Some(origin); outputs.len()],
            key: LookupKey {
                table: id.to_string(),
                version,
                condition,
                outputs,
                limit,
                pruning: options
                    .extensions
                    .get::<SieveOptions>()
                    .map_or((true, true, true), |o| (o.pruning, o.locator, o.routing)),
                owner: None,
            },
        })
    }

    /// The plan of a bound lookup: a scan of the columns it reads at the key's version (of the
    /// blocks `chosen`, on a worker its coordinator pruned for), the condition, the outputs.
    pub fn physical(
        &self,
        table: &Table,
        key: &LookupKey,
        chosen: Option<ChosenBlocks>,
        options: &ConfigOptions,
    ) -> Result<LookupPlan> {
        let schema = table.def().schema.clone();
        let read = Self::columns_read(&schema, key)?;
        let predicate = Self::predicate(&schema, key)?;
        let mut request = ScanRequest::new(table.clone(), options);
        request.projection = Some(read.clone());
        request.predicate = Some(predicate);
        (request.pruning, request.locator) = (key.pruning.0, key.pruning.1);
        request.shares = key.owner.as_ref().map(|(placement, worker)| Shares {
            placement: placement.clone(),
            workers: vec![*worker],
            skipped_by_node_filter: 0,
        });
        // A key's rows are in a block or two: a lookup of n keys reads about n blocks, so more
        // partitions than keys would only start tasks that read nothing.
        request.partitions = request.partitions.min(self.condition.keys()).max(1);
        request.snapshot = Some(key.version);
        request.direct = (options.extensions.get::<SieveOptions>()).is_none_or(|o| o.direct_reads);
        request.chosen = chosen;
        let scan = Arc::new(SieveScanExec::new(request)?);
        let direct: Arc<dyn LocatedRead> = scan.clone();
        LookupPlan::new((scan, Some(direct)), &schema, &read, key, options)
    }

    /// The columns of `schema` a bound lookup reads: its outputs' and its condition's, in
    /// table order.
    pub fn columns_read(schema: &SchemaRef, key: &LookupKey) -> Result<Vec<usize>> {
        let mut read: Vec<usize> = key.outputs.iter().map(|(i, _)| *i).collect();
        for name in key.condition.column_refs() {
            read.push(schema.index_of(&name.name)?);
        }
        read.sort_unstable();
        read.dedup();
        Ok(read)
    }
}

/// A worker's rows of a lookup, and the scan that read them (None: the rows were kept), whose
/// counts its answer carries once the rows are read.
pub(crate) struct OwnedRows {
    pub rows: SendableRecordBatchStream,
    pub scan: Option<Arc<dyn ExecutionPlan>>,
}

/// A bound lookup's scan and what the lookup does with the scan's rows: the filter and
/// projection DataFusion runs above the scan ([`LookupPlan::plan`]), built only when the scan
/// does not decode its pages directly (building them costs a direct read a tenth of its CPU).
pub(crate) struct LookupPlan {
    scan: Arc<dyn ExecutionPlan>,
    /// The scan, when it is one that can decode its located pages directly.
    direct: Option<Arc<dyn LocatedRead>>,
    /// The lookup's condition, over the scan's columns.
    predicate: Arc<dyn PhysicalExpr>,
    /// The scan's columns the lookup returns, in order, with their output names.
    outputs: Vec<(usize, String)>,
    limit: Option<usize>,
    /// The lookup's rows' schema.
    pub schema: SchemaRef,
    batch_size: usize,
}

impl LookupPlan {
    /// The plan of the lookup `key` of a table of `schema` over `scan`, a scan of its columns
    /// `read` (the one it decodes directly, if it can, second).
    pub fn new(
        (scan, direct): (Arc<dyn ExecutionPlan>, Option<Arc<dyn LocatedRead>>),
        schema: &SchemaRef,
        read: &[usize],
        key: &LookupKey,
        options: &ConfigOptions,
    ) -> Result<Self> {
        let predicate = PointLookup::predicate(schema, key)?;
        let outputs = key.outputs.iter();
        Ok(Self {
            scan,
            direct,
            // The same condition over the scan's columns: the table's, renumbered.
            predicate: reassign_expr_columns(predicate, &schema.project(read)?)?,
            outputs: outputs
                .map(|(i, name)| (read.binary_search(i).expect("read"), name.clone()))
                .collect(),
            limit: key.limit,
            schema: PointLookup::output_schema(schema, key),
            batch_size: options.execution.batch_size.get(),
        })
    }

    /// The lookup's rows, read and filtered on this task when its scan decodes located pages
    /// directly ([`LocatedRead::read_direct`]); None: run [`Self::plan`]. `FilterExec`'s and
    /// `ProjectionExec`'s work, done on the few rows of a slice or two.
    pub async fn read_direct(&self, context: &TaskContext) -> Result<Option<Vec<RecordBatch>>> {
        let Some(direct) = &self.direct else {
            return Ok(None);
        };
        let Some(batches) = direct.read_direct(context).await? else {
            return Ok(None);
        };
        let mut left = self.limit.unwrap_or(usize::MAX);
        let mut rows = Vec::new();
        for batch in batches {
            if left == 0 {
                break;
            }
            let keep = self
                .predicate
                .evaluate(&batch)?
                .into_array(batch.num_rows())?;
            let kept = filter_record_batch(&batch, as_boolean_array(&keep)?)?;
            let kept = kept.slice(0, kept.num_rows().min(left));
            left -= kept.num_rows();
            if kept.num_rows() > 0 {
                let columns = self.outputs.iter().map(|(i, _)| kept.column(*i).clone());
                rows.push(RecordBatch::try_new(
                    self.schema.clone(),
                    columns.collect(),
                )?);
            }
        }
        Ok(Some(rows))
    }

    /// The plan whose metrics say what the lookup read (its scan's), for a direct read's result.
    pub fn scan(&self) -> Arc<dyn ExecutionPlan> {
        self.scan.clone()
    }

    /// Scan, filter, projection (and a merge of the scan's partitions): the plan DataFusion's
    /// planner would make of the lookup, for a scan that does not read its pages directly.
    pub fn plan(&self) -> Result<Arc<dyn ExecutionPlan>> {
        let filter = FilterExecBuilder::new(self.predicate.clone(), self.scan.clone())
            .with_batch_size(self.batch_size)
            .with_fetch(self.limit)
            .build()?;
        let input = filter.schema();
        let exprs = (self.outputs.iter())
            .map(|(at, name)| {
                let column = Arc::new(Column::new(input.field(*at).name(), *at));
                (column as _, name.clone())
            })
            .collect::<Vec<_>>();
        let mut plan: Arc<dyn ExecutionPlan> =
            Arc::new(ProjectionExec::try_new(exprs, Arc::new(filter))?);
        let partitions = self
            .scan
            .properties()
            .output_partitioning()
            .partition_count();
        if partitions > 1 {
            plan = Arc::new(CoalescePartitionsExec::new(plan).with_fetch(self.limit));
        }
        Ok(plan)
    }
}

impl PointLookup {
    /// The schema of a bound lookup's rows: its outputs named as asked, typed as the columns of
    /// the table's `schema` (what [`Self::physical`]'s projection gives).
    pub fn output_schema(schema: &SchemaRef, key: &LookupKey) -> SchemaRef {
        let fields: Vec<Field> = key
            .outputs
            .iter()
            .map(|(i, name)| schema.field(*i).as_ref().clone().with_name(name))
            .collect();
        Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
    }

    /// The bound condition over the columns of the table's `schema`, as a scan's predicate.
    pub fn predicate(schema: &SchemaRef, key: &LookupKey) -> Result<Arc<dyn PhysicalExpr>> {
        let whole = DFSchema::try_from(schema.as_ref().clone())?;
        let context = PhysicalPlanningContext::default();
        create_physical_expr(&key.condition, &whole, &ExecutionProps::new(), &context)
    }

    /// The lookup with `params` in place, as the worker owning its blocks is asked it under
    /// the asking session's `options` (kept results only with `lookup_cache`); the placement
    /// and the worker are the caller's to fill in. None when a value is one the wire does not
    /// carry (the short path types every literal it takes as the wire does).
    pub fn wire(
        &self,
        (database, params): (&str, &[ScalarValue]),
        key: &LookupKey,
        lookup_cache: bool,
        options: &SieveOptions,
    ) -> Option<WireLookup> {
        let (db, table) = self.table(database);
        let mut condition = Vec::new();
        self.condition.to_wire(params, &mut condition)?;
        Some(WireLookup {
            wire_version: LOOKUP_WIRE_VERSION,
            database: db.to_string(),
            table: table.to_string(),
            table_id: key.table.clone(),
            version: key.version,
            condition,
            columns: (self.columns.iter().flatten())
                .map(|(column, name)| WireColumn {
                    column: column.clone(),
                    name: name.clone(),
                })
                .collect(),
            all_columns: self.columns.is_none(),
            limit: key.limit.map(|n| n as u64),
            placement: Vec::new(),
            worker: 0,
            pruning: key.pruning.0,
            locator: key.pruning.1,
            routing: key.pruning.2,
            lookup_cache,
            allow_full_scan: options.allows_full_scan(),
            data_cache: options.data_cache,
            direct_reads: options.direct_reads,
            chosen: false,
            chosen_blocks: Vec::new(),
            blocks_listed: 0,
            metadata_location: String::new(),
            files: Vec::new(),
        })
    }

    /// The lookup a worker is asked.
    pub fn from_wire(wire: &WireLookup) -> Result<Self> {
        let mut nodes = wire.condition.iter();
        let condition = Condition::from_wire(&mut nodes, 0)?;
        if nodes.next().is_some() {
            return Err(malformed("nodes after the condition"));
        }
        let columns = (!wire.all_columns).then(|| {
            (wire.columns.iter())
                .map(|c| (c.column.clone(), c.name.clone()))
                .collect()
        });
        Ok(Self {
            table: vec![wire.database.clone(), wire.table.clone()],
            qualifier: (Some(wire.database.clone()), wire.table.clone()),
            columns,
            condition,
            limit: wire
                .limit
                .map(|n| Operand::Value(ScalarValue::UInt64(Some(n)))),
        })
    }
}

/// How deeply a worker nests a condition it is sent: far beyond what a coordinator's parser
/// builds of a statement it takes, and well within a thread's stack.
const MAX_WIRE_DEPTH: usize = 4096;

/// The LIMIT of a query that has nothing else around its SELECT (no WITH, ORDER BY, OFFSET, …);
/// None when it has. The outer option says whether the query is plain.
#[allow(clippy::option_option)]
fn plain_query(query: &Query) -> Option<Option<Operand>> {
    let plain = query.with.is_none()
        && query.order_by.is_none()
        && query.fetch.is_none()
        && query.locks.is_empty()
        && query.for_clause.is_none()
        && query.settings.is_none()
        && query.format_clause.is_none()
        && query.pipe_operators.is_empty();
    if !plain {
        return None;
    }
    match &query.limit_clause {
        None => Some(None),
        Some(LimitClause::LimitOffset {
            limit: Some(limit),
            offset: None,
            limit_by,
        }) if limit_by.is_empty() => Some(Some(operand(limit)?)),
        Some(_) => None,
    }
}

/// The one table a SELECT reads and its alias, if the SELECT is nothing but columns of it
/// filtered (no DISTINCT, GROUP BY, HAVING, join, …).
fn single_table(select: &Select) -> Option<(&ObjectName, Option<&Ident>)> {
    let plain = select.optimizer_hints.is_empty()
        && select.distinct.is_none()
        && select.select_modifiers.is_none()
        && select.top.is_none()
        && select.exclude.is_none()
        && select.into.is_none()
        && select.lateral_views.is_empty()
        && select.prewhere.is_none()
        && select.connect_by.is_empty()
        && matches!(&select.group_by, GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty())
        && select.cluster_by.is_empty()
        && select.distribute_by.is_empty()
        && select.sort_by.is_empty()
        && select.having.is_none()
        && select.named_window.is_empty()
        && select.qualify.is_none()
        && select.value_table_mode.is_none();
    let [from] = select.from.as_slice() else {
        return None;
    };
    if !plain || !from.joins.is_empty() {
        return None;
    }
    match &from.relation {
        TableFactor::Table {
            name,
            alias,
            args: None,
            with_hints,
            version: None,
            with_ordinality: false,
            partitions,
            json_path: None,
            sample: None,
            index_hints,
        } if with_hints.is_empty() && partitions.is_empty() && index_hints.is_empty() => {
            match alias {
                None => Some((name, None)),
                Some(alias) if alias.columns.is_empty() => Some((name, Some(&alias.name))),
                Some(_) => None,
            }
        }
        _ => None,
    }
}

impl Condition {
    /// How many values the condition names.
    fn keys(&self) -> usize {
        match self {
            Self::In(_, values) => values.len(),
            Self::And(l, r) | Self::Or(l, r) => l.keys() + r.keys(),
        }
    }

    fn columns(&self) -> Vec<&str> {
        match self {
            Self::In(name, _) => vec![name],
            Self::And(l, r) | Self::Or(l, r) => [l.columns(), r.columns()].concat(),
        }
    }

    /// The condition in prefix order, its parameters replaced by `params`' values.
    fn to_wire(&self, params: &[ScalarValue], out: &mut Vec<WireNode>) -> Option<()> {
        let op = match self {
            Self::In(column, operands) => {
                let values = operands
                    .iter()
                    .map(|o| WireValue::of(value(o, params)?))
                    .collect::<Option<_>>()?;
                out.push(WireNode {
                    op: WireOp::In as i32,
                    column: column.clone(),
                    values,
                });
                return Some(());
            }
            Self::And(..) => WireOp::And,
            Self::Or(..) => WireOp::Or,
        };
        out.push(WireNode {
            op: op as i32,
            ..Default::default()
        });
        let (Self::And(l, r) | Self::Or(l, r)) = self else {
            unreachable!("an IN returned above")
        };
        l.to_wire(params, out)?;
        r.to_wire(params, out)
    }

    fn from_wire<'a>(nodes: &mut impl Iterator<Item = &'a WireNode>, depth: usize) -> Result<Self> {
        if depth > MAX_WIRE_DEPTH {
            return Err(malformed("a condition nested too deeply"));
        }
        let node = nodes
            .next()
            .ok_or_else(|| malformed("a condition cut short"))?;
        let mut side = || Self::from_wire(nodes, depth + 1).map(Box::new);
        match WireOp::try_from(node.op) {
            Ok(WireOp::In) if !node.values.is_empty() => Ok(Self::In(
                node.column.clone(),
                (node.values.iter())
                    .map(|v| v.scalar().map(Operand::Value))
                    .collect::<Result<_>>()?,
            )),
            Ok(WireOp::And) => Ok(Self::And(side()?, side()?)),
            Ok(WireOp::Or) => Ok(Self::Or(side()?, side()?)),
            _ => Err(malformed("an IN without values, or an unknown operator")),
        }
    }

    /// Whether an AND has one column on both sides (`k = 1 AND k IN (1, 2)`). DataFusion's
    /// simplifier intersects those (to nothing, at times, and then reads nothing), so they
    /// take the full path.
    fn ands_one_column(&self) -> bool {
        match self {
            Self::In(..) => false,
            Self::Or(l, r) => l.ands_one_column() || r.ands_one_column(),
            Self::And(l, r) => {
                let left = l.columns();
                r.columns().iter().any(|c| left.contains(c))
                    || l.ands_one_column()
                    || r.ands_one_column()
            }
        }
    }
}

fn condition(expr: &Expr, column: &impl Fn(&Expr) -> Option<String>) -> Option<Condition> {
    match expr {
        Expr::Nested(inner) => condition(inner, column),
        Expr::BinaryOp { left, op, right } => match op {
            BinaryOperator::And => Some(Condition::And(
                Box::new(condition(left, column)?),
                Box::new(condition(right, column)?),
            )),
            BinaryOperator::Or => Some(Condition::Or(
                Box::new(condition(left, column)?),
                Box::new(condition(right, column)?),
            )),
            BinaryOperator::Eq => match (column(left), column(right)) {
                (Some(name), None) => Some(Condition::In(name, vec![operand(right)?])),
                (None, Some(name)) => Some(Condition::In(name, vec![operand(left)?])),
                _ => None,
            },
            _ => None,
        },
        Expr::InList {
            expr,
            list,
            negated: false,
        } if !list.is_empty() => Some(Condition::In(
            column(expr)?,
            list.iter().map(operand).collect::<Option<_>>()?,
        )),
        _ => None,
    }
}

/// A literal integer or string, or a parameter, as DataFusion types the literal (`Int64`,
/// `Utf8`). Other literals (decimals, NULL, MySQL's double-quoted strings) take the full path.
fn operand(expr: &Expr) -> Option<Operand> {
    match expr {
        Expr::Nested(inner) => operand(inner),
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match operand(expr)? {
            Operand::Value(ScalarValue::Int64(Some(n))) if n != i64::MIN => {
                Some(Operand::Value(ScalarValue::Int64(Some(-n))))
            }
            _ => None,
        },
        Expr::Value(value) => match &value.value {
            Value::Number(digits, false) => Some(Operand::Value(ScalarValue::Int64(Some(
                digits.parse().ok()?,
            )))),
            Value::SingleQuotedString(s) => {
                Some(Operand::Value(ScalarValue::Utf8(Some(s.clone()))))
            }
            Value::Placeholder(p) => {
                let n: usize = p.strip_prefix('$')?.parse().ok()?;
                Some(Operand::Param(n.checked_sub(1)?))
            }
            _ => None,
        },
        _ => None,
    }
}

fn value<'a>(operand: &'a Operand, params: &'a [ScalarValue]) -> Option<&'a ScalarValue> {
    match operand {
        Operand::Value(v) => Some(v),
        Operand::Param(n) => params.get(*n),
    }
}

fn row_count(operand: &Operand, params: &[ScalarValue]) -> Option<usize> {
    match value(operand, params)?.cast_to(&DataType::UInt64).ok()? {
        ScalarValue::UInt64(Some(n)) => usize::try_from(n).ok(),
        _ => None,
    }
}

/// The condition with every value as a literal of its column's type; None when a value is not
/// of its column's kind or does not cast to it exactly.
fn bind(
    condition: &Condition,
    schema: &datafusion::arrow::datatypes::Schema,
    params: &[ScalarValue],
) -> Option<LogicalExpr> {
    match condition {
        Condition::And(l, r) => Some(bind(l, schema, params)?.and(bind(r, schema, params)?)),
        Condition::Or(l, r) => Some(bind(l, schema, params)?.or(bind(r, schema, params)?)),
        Condition::In(name, operands) => {
            let to = schema.field_with_name(name).ok()?.data_type();
            let values = operands
                .iter()
                .map(|o| {
                    let v = value(o, params)?;
                    (same_kind(&v.data_type(), to) && !v.is_null())
                        .then(|| lossless_cast(v, to))
                        .flatten()
                        .map(lit)
                })
                .collect::<Option<Vec<_>>>()?;
            let column = col(datafusion::common::Column::new_unqualified(name));
            // As DataFusion's simplifier leaves them: short lists as ORs of equalities.
            Some(if values.len() <= THRESHOLD_INLINE_INLIST {
                let mut values = values.into_iter().map(|v| column.clone().eq(v));
                let first = values.next().expect("IN lists are not empty");
                values.fold(first, LogicalExpr::or)
            } else {
                in_list(column, values, false)
            })
        }
    }
}

/// Both integers or both strings: the comparisons DataFusion makes without coercing the column.
fn same_kind(value: &DataType, column: &DataType) -> bool {
    (value.is_integer() && column.is_integer()) || (is_string(value) && is_string(column))
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
}

impl Session {
    /// Runs `lookup` by the short path when the session allows it and the lookup is one it plans
    /// exactly; None leaves it to the full path. On a coordinator the rows come from the
    /// workers owning the blocks that may hold them, one call each ([`RemoteLookup`]).
    pub(super) async fn short_path(
        &self,
        lookup: &PointLookup,
        database: &str,
        params: &[ScalarValue],
    ) -> Result<Option<QueryStream>> {
        if !self.options(|o| o.short_path) {
            return Ok(None);
        }
        if let Some(attached) = lookup.attached() {
            return self
                .attached_lookup(lookup, attached, database, params)
                .await;
        }
        let (db, name) = lookup.table(database);
        // `catalog.namespace` as a database: named so, or the session's after `USE`.
        if let Some((catalog, namespace)) = namespace_named(&self.iceberg, db) {
            let attached = (catalog.name(), namespace, name);
            return self
                .attached_lookup(lookup, attached, database, params)
                .await;
        }
        let (staleness, cache) = self.options(|o| (o.max_staleness_ms, o.lookup_cache));
        let staleness = Duration::from_millis(staleness);
        let (table, snapshot) = match self.catalog.open_table_at_newest(db, name, staleness).await {
            Ok(opened) => opened,
            // An unknown table's or an unreachable store's error is the full path's to word.
            Err(_) => return Ok(None),
        };
        // Where the full path's scan would check it; a kept result is no exception.
        self.require(Privilege::Select, &Object::table(db, name))?;
        let def = table.def();
        let (bound, results) = self.bind(
            lookup,
            (&def.schema, &def.id),
            snapshot.version,
            (database, params),
            cache,
        );
        let Some(Bound { origins, key }) = bound else {
            return Ok(None);
        };
        self.progress.reset();
        if let Some(kept) = self.kept(results.as_ref(), &key, &origins) {
            return Ok(Some(kept));
        }
        // The scan reads the version the key names; its blocks are listed (and cached) here.
        let blocks = table.blocks(&snapshot).await.map_err(to_df)?;
        let answer = match &self.cluster {
            Some(cluster) => {
                let wire = self.options(|o| lookup.wire((database, params), &key, cache, o));
                let Some(wire) = wire else {
                    return Ok(None);
                };
                let predicate = PointLookup::predicate(&table.def().schema, &key)?;
                let schema = PointLookup::output_schema(&table.def().schema, &key);
                let owned = Owned::Blocks {
                    routing: (self.ctx.state_ref().read().config())
                        .get_extension::<RoutingFilters>()
                        .ok_or_else(|| internal_datafusion_err!("a session without routing"))?,
                    predicate: Some(predicate).filter(|_| key.pruning.0),
                    node_filters: self.options(|o| o.node_filters),
                    table,
                    blocks,
                };
                self.ask_workers(cluster, owned, wire, schema, origins)
            }
            None => {
                let plan = {
                    let state = self.ctx.state_ref();
                    let state = state.read();
                    lookup.physical(&table, &key, None, state.config_options())?
                };
                self.answer(&plan, origins).await?
            }
        };
        Ok(Some(match results {
            Some(results) => answer.map_rows(|rows| keeping(rows, results, key)),
            None => answer,
        }))
    }

    /// The rows `wire` asks of the workers owning `owned`, as a statement's answer of `schema`.
    pub(super) fn ask_workers(
        &self,
        cluster: &Arc<Cluster>,
        owned: Owned,
        wire: WireLookup,
        schema: SchemaRef,
        origins: Vec<Option<ColumnOrigin>>,
    ) -> QueryStream {
        let read = Arc::default();
        let remote = RemoteLookup {
            cluster: cluster.clone(),
            owned,
            wire,
            schema: schema.clone(),
            read: Arc::clone(&read),
        };
        let mut rows = remote.rows();
        if let Some(limit) = self.max_execution_time() {
            rows = DeadlineStream::wrap(rows, Instant::now(), limit);
        }
        QueryStream::rows(schema, rows, None, self.pool())
            .with_origins(origins)
            .read_by_workers(read)
            .by_short_path()
    }

    /// A worker's side of [`RemoteLookup`]: the rows of `wire`'s lookup in the blocks this
    /// worker owns under the coordinator's placement, read at exactly the version asked (a
    /// worker that has not seen it yet reads it; none answers from an older one), through the
    /// same short path as one process, its caches and kept results included.
    pub(crate) async fn answer_owned(&self, wire: &WireLookup) -> Result<OwnedRows> {
        let lookup = PointLookup::from_wire(wire)?;
        let worker = wire.worker as usize;
        if worker >= wire.placement.len() {
            return Err(malformed("the worker asked is not in the placement"));
        }
        if !wire.metadata_location.is_empty() {
            return self.answer_attached_owned(&lookup, wire).await;
        }
        let table = self
            .catalog
            .open_table_known(&wire.database, &wire.table, &wire.table_id)
            .await
            .map_err(to_df)?;
        if table.def().id != wire.table_id {
            return Err(DataFusionError::Execution(format!(
                "{}.{} was dropped and made again since the coordinator looked it up: ask again",
                wire.database, wire.table
            )));
        }
        let def = table.def();
        let (bound, results) = self.bind(
            &lookup,
            (&def.schema, &def.id),
            wire.version,
            (&wire.database, &[]),
            wire.lookup_cache,
        );
        let Some(Bound { mut key, .. }) = bound else {
            return Err(malformed("a lookup this worker cannot bind to the table"));
        };
        key.pruning = (wire.pruning, wire.locator, wire.routing);
        let placement = Arc::new(Placement::new(wire.placement.clone()));
        key.owner = Some((placement, worker));
        if let Some(kept) = results.as_ref().and_then(|r| r.get(&key)) {
            return Ok(OwnedRows {
                rows: kept.rows(),
                scan: None,
            });
        }
        let chosen = wire.chosen.then(|| ChosenBlocks {
            blocks: wire.chosen_blocks.as_slice().into(),
            listed: wire.blocks_listed,
        });
        let plan = {
            let state = self.ctx.state_ref();
            let state = state.read();
            lookup.physical(&table, &key, chosen, state.config_options())?
        };
        let owned = self.owned_rows(&plan).await?;
        Ok(match results {
            Some(results) => OwnedRows {
                rows: keeping(owned.rows, results, key),
                ..owned
            },
            None => owned,
        })
    }

    /// The rows of a worker's `plan`: read on this task when its scan decodes its located
    /// pages directly, else its plan run on the executor.
    pub(super) async fn owned_rows(&self, plan: &LookupPlan) -> Result<OwnedRows> {
        let rows = match self.read_direct(plan).await? {
            Some(rows) => rows,
            None => {
                self.rows(plan.plan()?, &plan.schema, Instant::now(), None)?
                    .1
            }
        };
        Ok(OwnedRows {
            rows,
            scan: Some(plan.scan()),
        })
    }

    /// `plan`'s answer: its rows read on this task when its scan decodes its located pages
    /// directly, else its plan run on the executor.
    pub(super) async fn answer(
        &self,
        plan: &LookupPlan,
        origins: Vec<Option<ColumnOrigin>>,
    ) -> Result<QueryStream> {
        Ok(match self.read_direct(plan).await? {
            Some(rows) => {
                QueryStream::rows(plan.schema.clone(), rows, Some(plan.scan()), self.pool())
                    .with_origins(origins)
                    .by_short_path()
            }
            None => self.run_physical(plan.plan()?, origins)?,
        })
    }

    /// `plan`'s rows when its scan decodes its located pages directly: read on this task (a
    /// lookup whose pages are cached never leaves it), within the statement's deadline. None:
    /// the plan runs on the executor.
    async fn read_direct(&self, plan: &LookupPlan) -> Result<Option<SendableRecordBatchStream>> {
        // The session's context without its function registry: the scan calls no function by
        // name, and copying the registry's maps cost a direct read a twentieth of its CPU.
        let context = {
            let state = self.ctx.state_ref();
            let state = state.read();
            TaskContext::new(
                None,
                state.session_id().to_string(),
                state.config().clone(),
                HashMap::new(),
                HashMap::new(),
                HashMap::new(),
                HashMap::new(),
                state.runtime_env().clone(),
            )
        };
        let read = plan.read_direct(&context);
        let batches = match self.max_execution_time() {
            Some(limit) => tokio::time::timeout(limit, read)
                .await
                .map_err(|_| QueryTimeout::error(limit))??,
            None => read.await?,
        };
        Ok(batches.map(|batches| {
            let rows = futures::stream::iter(batches.into_iter().map(Ok));
            Box::pin(RecordBatchStreamAdapter::new(plan.schema.clone(), rows)) as _
        }))
    }

    /// `lookup` bound to `version` of the table `id` of `schema` (in the session's `database`,
    /// with `params`) under this session's settings, and the kept results it may be answered
    /// from (None when `cache` is off).
    pub(super) fn bind(
        &self,
        lookup: &PointLookup,
        table: (&SchemaRef, &str),
        version: u64,
        (database, params): (&str, &[ScalarValue]),
        cache: bool,
    ) -> (Option<Bound>, Option<Arc<LookupResults>>) {
        let state = self.ctx.state_ref();
        let state = state.read();
        let bound = lookup.bind(table, version, database, params, state.config_options());
        let results = state.config().get_extension::<LookupResults>();
        (bound, results.filter(|_| cache))
    }

    /// The answer of `key` from its kept result, if `results` keeps one.
    pub(super) fn kept(
        &self,
        results: Option<&Arc<LookupResults>>,
        key: &LookupKey,
        origins: &[Option<ColumnOrigin>],
    ) -> Option<QueryStream> {
        let kept = results?.get(key)?;
        let answer = QueryStream::rows(kept.schema.clone(), kept.rows(), None, self.pool());
        Some(answer.with_origins(origins.to_vec()).by_short_path())
    }
}
