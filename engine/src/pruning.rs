//! Chooses the blocks a scan must read: first by min/max statistics (DataFusion's
//! `PruningPredicate` over the snapshot's block list), then by the filter sidecars of the
//! survivors, probed with the predicate's literal guarantees (`=`, `IN` lists of any length, ORs
//! of equalities on one column, ANDs of those).
//!
//! Every step may only keep blocks wrongly, never drop one wrongly: a literal that cannot be cast
//! to the column type without loss, a column without an index, or a sidecar that is missing or
//! unreadable all mean "read the block".

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray};
use datafusion::common::{Column, ScalarValue};
use datafusion::error::Result;
use datafusion::physical_expr::utils::{Guarantee, LiteralGuarantee};
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningStatistics};
use sieve_index::ColumnHashes;
use sieve_storage::{BlockList, Table};

/// What pruning decided for one scan, shown by EXPLAIN ANALYZE.
#[derive(Debug, Default, Clone)]
pub struct PruneOutcome {
    pub total: usize,
    pub pruned_by_minmax: usize,
    pub pruned_by_filter: usize,
    /// Indices into the block list of the blocks to read.
    pub survivors: Vec<usize>,
    pub sidecar_bytes: u64,
    pub sidecar_cache_hits: u64,
    pub sidecars_unreadable: u64,
}

/// Min/max, null counts and row counts of every block, for DataFusion's pruning predicate.
struct BlockStatistics<'a>(&'a BlockList);

impl PruningStatistics for BlockStatistics<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.0.mins(&column.name).cloned()
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.0.maxes(&column.name).cloned()
    }

    fn num_containers(&self) -> usize {
        self.0.len()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        self.0
            .null_counts(&column.name)
            .map(|a| Arc::new(a.clone()) as ArrayRef)
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        Some(Arc::new(self.0.rows().clone()))
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None // filters are probed after min/max, on the survivors only
    }
}

/// The hashes to probe for one `column IN (literals)` guarantee, or None if the literals cannot
/// be hashed as the column's values were (then the guarantee prunes nothing).
fn literal_hashes(table: &Table, guarantee: &LiteralGuarantee) -> Option<(String, Vec<u64>)> {
    if guarantee.guarantee != Guarantee::In {
        return None; // a filter can say a value is absent, never that only some values are present
    }
    let name = &guarantee.column.name;
    let def = table.def();
    if !def.options.index_columns.contains(name) {
        return None;
    }
    let column_type = def.schema.field_with_name(name).ok()?.data_type();
    let mut hashes = Vec::with_capacity(guarantee.literals.len());
    for literal in &guarantee.literals {
        let cast = literal.cast_to(column_type).ok()?;
        // A lossy cast (5.5 into an integer column) could hash a different value: do not prune.
        if cast.cast_to(&literal.data_type()).ok()? != *literal {
            return None;
        }
        hashes.extend(
            ColumnHashes::from_array(cast.to_array().ok()?.as_ref())
                .ok()?
                .hashes,
        );
    }
    Some((name.clone(), hashes))
}

pub async fn prune_blocks(
    table: &Table,
    blocks: &BlockList,
    predicate: Option<&PruningPredicate>,
) -> Result<PruneOutcome> {
    let mut outcome = PruneOutcome {
        total: blocks.len(),
        ..Default::default()
    };
    let Some(predicate) = predicate else {
        outcome.survivors = (0..blocks.len()).collect();
        return Ok(outcome);
    };
    let keep = predicate.prune(&BlockStatistics(blocks))?;
    let survivors: Vec<usize> = (0..blocks.len()).filter(|&i| keep[i]).collect();
    outcome.pruned_by_minmax = blocks.len() - survivors.len();

    let probes: Vec<(String, Vec<u64>)> = predicate
        .literal_guarantees()
        .iter()
        .filter_map(|g| literal_hashes(table, g))
        .collect();
    if probes.is_empty() || survivors.is_empty() {
        outcome.survivors = survivors;
        return Ok(outcome);
    }
    // One column at a time, each probing only the blocks the columns before it kept.
    let mut kept = survivors;
    for (column, hashes) in &probes {
        if kept.is_empty() {
            break;
        }
        let fetch = table.sidecar_entries(blocks, &kept, column).await;
        outcome.sidecar_bytes += fetch.bytes_fetched;
        outcome.sidecar_cache_hits += fetch.cache_hits;
        outcome.sidecars_unreadable += fetch.unreadable;
        let before = kept.len();
        kept = kept
            .into_iter()
            .zip(&fetch.entries)
            .filter(|(_, entry)| {
                entry
                    .as_ref()
                    .is_none_or(|index| hashes.iter().any(|&h| index.may_contain(h)))
            })
            .map(|(block, _)| block)
            .collect();
        outcome.pruned_by_filter += before - kept.len();
    }
    outcome.survivors = kept;
    Ok(outcome)
}
