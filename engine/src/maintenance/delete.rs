//! DELETE FROM a Sieve table: prunes blocks with the statement's predicate as a scan would, reads
//! the survivors' live rows of the predicate's columns, and commits the positions that match as
//! deletion vectors in one snapshot ([`sieve_storage::Table::delete_rows`]). Nothing is rewritten
//! and nothing is visible before that commit: a failure or a crash leaves the table as it was.
//!
//! Its plan yields one row, `count`, the rows deleted (the affected rows a MySQL client sees).

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::cast::as_boolean_array;
use datafusion::common::plan_err;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::physical_plan::FileGroup;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{DmlStatement, Expr, LogicalPlan, WriteOp};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::{StreamExt, TryStreamExt};
use sieve_index::ColumnHashes;
use sieve_index::sidecar::KeyChanges;
use sieve_storage::{BlockDeletes, BlockList, Deletes, RoaringBitmap, StorageError, Table};

use crate::error::to_df;
use crate::scan::exec::{block_file, parquet_scan};
use crate::scan::live_rows::{Positions, live_ranges};
use crate::scan::pruning::{Narrowing, prune_blocks};
use crate::scan::routing::routing_of;

/// Refuses a DELETE whose WHERE clause reads another relation (a subquery, a join): DataFusion
/// hands a table only the conjuncts on its own columns, so `WHERE c IN (SELECT …)` would reach
/// [`crate::scan::provider`] as no filter at all, which deletes every row.
pub fn check_delete(plan: &LogicalPlan) -> Result<()> {
    let LogicalPlan::Dml(DmlStatement {
        op: WriteOp::Delete,
        input,
        table_name,
        ..
    }) = plan
    else {
        return Ok(());
    };
    let reads_another = input.exists(|node| {
        Ok(
            matches!(node, LogicalPlan::Join(_) | LogicalPlan::Subquery(_))
                || node.expressions().iter().any(|e| {
                    e.exists(|e| {
                        Ok(matches!(
                            e,
                            Expr::Exists(_) | Expr::InSubquery(_) | Expr::ScalarSubquery(_)
                        ))
                    })
                    .unwrap_or(true)
                }),
        )
    })?;
    if reads_another {
        return plan_err!(
            "DELETE FROM {table_name} with a subquery in its WHERE clause is not supported; \
             select the keys first and delete them with WHERE … IN (list)"
        );
    }
    Ok(())
}

/// Blocks read at once while choosing the rows to delete.
const BLOCKS_IN_FLIGHT: usize = 4;

/// What to delete: rows of `table` for which `predicate` is true (every row when None).
#[derive(Debug, Clone)]
pub struct DeleteRequest {
    pub table: Table,
    /// Over the columns in `projection`, in that order.
    pub predicate: Option<Arc<dyn PhysicalExpr>>,
    /// The table columns the predicate reads.
    pub projection: Vec<usize>,
    /// The same predicate over the whole table's columns, for pruning blocks.
    pub pruning_predicate: Option<Arc<dyn PhysicalExpr>>,
    /// Off: every block is read (the differential tests' baseline).
    pub pruning: bool,
    pub locator: bool,
}

#[derive(Debug)]
pub struct DeleteExec {
    request: DeleteRequest,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl DeleteExec {
    pub fn new(request: DeleteRequest) -> Self {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "count",
            DataType::UInt64,
            false,
        )]));
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Self {
            request,
            schema,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

/// Times a DELETE chooses its rows again after an OPTIMIZE rewrote blocks it chose rows in.
const MAX_CHOICES: usize = 10;

/// Chooses the rows to delete and commits them; returns how many this statement deleted.
async fn delete(
    request: &DeleteRequest,
    metrics: &ExecutionPlanMetricsSet,
    context: &Arc<TaskContext>,
) -> Result<u64> {
    let mut tries = 0;
    let committed = loop {
        let rows = choose(request, metrics, context).await?;
        match request.table.delete_rows(rows).await {
            Err(StorageError::Rewritten(_)) if tries + 1 < MAX_CHOICES => tries += 1,
            done => break done.map_err(to_df)?,
        }
    };
    MetricBuilder::new(metrics)
        .global_counter("rows_deleted")
        .add(committed.rows as usize);
    Ok(committed.rows)
}

/// The rows the DELETE removes from the newest version, with the new sidecars of the blocks
/// they are in.
async fn choose(
    request: &DeleteRequest,
    metrics: &ExecutionPlanMetricsSet,
    context: &Arc<TaskContext>,
) -> Result<Deletes> {
    let table = &request.table;
    let snapshot = table.snapshot().await.map_err(to_df)?;
    let blocks = table.blocks(&snapshot).await.map_err(to_df)?;
    let routing = routing_of(context);
    let outcome = prune_blocks(
        table,
        &blocks,
        None,
        (request.pruning_predicate.as_ref())
            .filter(|_| request.pruning)
            .map(Narrowing::Prune),
        request.locator,
        routing.as_ref(),
    )
    .await?;
    let count = |name: &'static str, value: usize| {
        MetricBuilder::new(metrics).global_counter(name).add(value)
    };
    count("blocks_total", outcome.total);
    count("blocks_fully_deleted", outcome.fully_deleted);
    count("blocks_read", outcome.survivors.len());
    // Owned items and futures: borrowed ones make the plan's stream not Send.
    let survivors = outcome.survivors.into_iter().zip(outcome.slices);
    let indexed = !table.def().options.index_columns.is_empty();
    let chosen: Vec<(usize, BlockDeletes)> = futures::stream::iter(survivors)
        .map(|(i, slices)| {
            let (request, blocks, context) = (request.clone(), blocks.clone(), context.clone());
            async move {
                let rows = blocks.rows().value(i) as usize;
                let ranges = live_ranges(&blocks, i, slices.as_ref())
                    .unwrap_or_else(|| std::iter::once(0..rows).collect());
                let matched =
                    matching_rows(&request, &blocks, i, &slices, ranges, &context).await?;
                let mut sidecar = None;
                if indexed && !matched.is_empty() {
                    let table = &request.table;
                    let changes = key_changes(table, &blocks, i, &matched, &context).await?;
                    if changes.iter().any(|c| !c.forgotten.is_empty()) {
                        let fraction = table.def().options.stale_rebuild_fraction;
                        let name = table.rewrite_sidecar(&blocks, i, &changes, fraction).await;
                        sidecar = name.map_err(to_df)?;
                    }
                }
                let rows = matched;
                Ok::<_, DataFusionError>((i, BlockDeletes { rows, sidecar }))
            }
        })
        .buffered(BLOCKS_IN_FLIGHT)
        .try_collect()
        .await?;
    Ok(chosen
        .into_iter()
        .filter(|(_, d)| !d.rows.is_empty())
        .map(|(i, d)| (blocks.block_id(i).to_string(), d))
        .collect())
}

/// The live rows of block `i` within `slices` (all when None), of the columns `projection`
/// (all when None); None if there is none. No predicate is pushed into the scan: every live row
/// comes back, in order, so the n-th row read is the n-th position of the block's
/// [`live_ranges`].
pub(crate) fn live_rows(
    table: &Table,
    blocks: &BlockList,
    i: usize,
    slices: Option<&std::collections::BTreeSet<u32>>,
    projection: Option<Vec<usize>>,
    context: &Arc<TaskContext>,
) -> Result<Option<SendableRecordBatchStream>> {
    let Some(file) = block_file(table, blocks, i, slices) else {
        return Ok(None);
    };
    let group = vec![FileGroup::new(vec![file])];
    let scan = parquet_scan(table, group, projection, None, None, context)?;
    Ok(Some(scan.execute(0, context.clone())?))
}

/// The positions in block `i` of the live rows in `ranges` that the predicate holds for.
async fn matching_rows(
    request: &DeleteRequest,
    blocks: &BlockList,
    i: usize,
    slices: &Option<std::collections::BTreeSet<u32>>,
    ranges: Vec<std::ops::Range<usize>>,
    context: &Arc<TaskContext>,
) -> Result<RoaringBitmap> {
    let mut positions = Positions::new(ranges);
    let Some(predicate) = &request.predicate else {
        return Ok(positions.map(|row| row as u32).collect());
    };
    let projection = Some(request.projection.clone());
    let table = &request.table;
    let Some(mut batches) = live_rows(table, blocks, i, slices.as_ref(), projection, context)?
    else {
        return Ok(RoaringBitmap::new());
    };
    let mut matched = RoaringBitmap::new();
    while let Some(batch) = batches.next().await {
        let batch = batch?;
        let holds = predicate.evaluate(&batch)?.into_array(batch.num_rows())?;
        let holds = as_boolean_array(&holds)?;
        for row in 0..batch.num_rows() {
            let position = positions.next().ok_or_else(|| {
                DataFusionError::Internal(format!(
                    "block {} returned more rows than it has live",
                    blocks.block_id(i)
                ))
            })?;
            // NULL is not true: SQL deletes only the rows the predicate holds for.
            if holds.is_valid(row) && holds.value(row) {
                matched.insert(position as u32);
            }
        }
    }
    if positions.next().is_some() {
        return Err(DataFusionError::Internal(format!(
            "block {} returned fewer rows than it has live",
            blocks.block_id(i)
        )));
    }
    Ok(matched)
}

/// Per indexed column, the hashes of keys whose every live row in block `i` is in `matched`
/// (once the DELETE commits the block holds none of them: a cuckoo entry forgets them, seed
/// 000, so a lookup of a deleted key reads no block), and of the keys left.
pub(crate) async fn key_changes(
    table: &Table,
    blocks: &BlockList,
    i: usize,
    matched: &RoaringBitmap,
    context: &Arc<TaskContext>,
) -> Result<Vec<KeyChanges>> {
    let def = table.def();
    let columns = def
        .options
        .index_columns
        .iter()
        .map(|c| def.schema.index_of(c))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let rows = blocks.rows().value(i) as usize;
    let ranges = live_ranges(blocks, i, None).unwrap_or_else(|| std::iter::once(0..rows).collect());
    let positions: Vec<u32> = Positions::new(ranges).map(|p| p as u32).collect();
    let projection = Some(columns.clone());
    let Some(mut batches) = live_rows(table, blocks, i, None, projection, context)? else {
        return Ok(Vec::new());
    };
    // Per column: keys of the rows deleted now, and of the rows that stay.
    let mut keys = vec![(HashSet::new(), HashSet::new()); columns.len()];
    let mut read = 0u32;
    while let Some(batch) = batches.next().await {
        let batch = batch?;
        for (column, (gone, kept)) in batch.columns().iter().zip(&mut keys) {
            let (mut hashes, mut at) = (ColumnHashes::default(), Vec::new());
            hashes
                .extend_with_rows(column.as_ref(), read, &mut at)
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            for (hash, row) in hashes.hashes.into_iter().zip(at) {
                let position = positions.get(row as usize).ok_or_else(|| {
                    DataFusionError::Internal(format!(
                        "block {} returned more rows than it has live",
                        blocks.block_id(i)
                    ))
                })?;
                if matched.contains(*position) {
                    gone.insert(hash);
                } else {
                    kept.insert(hash);
                }
            }
        }
        read += batch.num_rows() as u32;
    }
    Ok(def
        .options
        .index_columns
        .iter()
        .zip(keys)
        .map(|(column, (gone, kept))| {
            let mut forgotten: Vec<u64> = gone.difference(&kept).copied().collect();
            forgotten.sort_unstable();
            let mut live: Vec<u64> = kept.into_iter().collect();
            live.sort_unstable();
            KeyChanges {
                column: column.clone(),
                forgotten,
                live,
            }
        })
        .collect())
}

impl DisplayAs for DeleteExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let def = self.request.table.def();
        write!(f, "SieveDeleteExec: table={}.{}", def.database, def.name)?;
        if let Some(predicate) = &self.request.pruning_predicate {
            write!(f, ", predicate={predicate}")?;
        }
        if !self.request.pruning {
            write!(f, ", pruning=off")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for DeleteExec {
    fn name(&self) -> &'static str {
        "SieveDeleteExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        match &self.request.pruning_predicate {
            Some(predicate) => f(predicate),
            None => Ok(TreeNodeRecursion::Continue),
        }
    }

    fn with_new_children(
        self: Arc<Self>,
        _: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        _partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let (request, metrics, schema) = (
            self.request.clone(),
            self.metrics.clone(),
            self.schema.clone(),
        );
        let done = futures::stream::once(async move {
            let rows = delete(&request, &metrics, &context).await?;
            Ok(RecordBatch::try_new(
                schema,
                vec![Arc::new(UInt64Array::from(vec![rows]))],
            )?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            done,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}
