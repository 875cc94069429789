//! Chooses the blocks a scan must read, and the slices of them: first by min/max statistics
//! (DataFusion's `PruningPredicate` over the snapshot's block list), then by the predicate's
//! literal guarantees (`=`, `IN` lists of any length, ORs of equalities on one column, ANDs of
//! those): the locator groups of the survivors name the blocks and slices that may hold the
//! keys, and the blocks no locator answered for are probed with their filter sidecars.
//!
//! Every step may only keep blocks wrongly, never drop one wrongly: a literal that cannot be cast
//! to the column type without loss, a column without an index, or a sidecar that is missing or
//! unreadable all mean "read the block"; a locator that is missing or damaged means "ask the
//! sidecars".

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Column, ScalarValue};
use datafusion::error::Result;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::utils::{Guarantee, LiteralGuarantee, collect_columns};
use datafusion::physical_optimizer::pruning::{
    PruningPredicate, PruningPredicateBuilder, PruningStatistics,
};
use futures::StreamExt;
use sieve_index::{ColumnHashes, Location};
use sieve_storage::{BlockList, Table};

use crate::scan::lossless_cast::lossless_cast;
use crate::scan::routing::RoutingFilters;

/// What pruning decided for one scan, shown by EXPLAIN ANALYZE.
#[derive(Debug, Default, Clone)]
pub struct PruneOutcome {
    pub total: usize,
    /// Blocks every row of which was deleted: never read.
    pub fully_deleted: usize,
    pub pruned_by_minmax: usize,
    pub pruned_by_filter: usize,
    /// Blocks the locators said hold none of the keys.
    pub pruned_by_locator: usize,
    /// Indices into the block list of the blocks to read.
    pub survivors: Vec<usize>,
    /// Parallel to `survivors`: the slices of each to read (None: all of it).
    pub slices: Vec<Slices>,
    pub sidecar_bytes: u64,
    /// Every byte of index read from storage: locator pages and sidecar entries.
    pub index_bytes: u64,
    pub locator_groups_probed: u64,
    /// Groups whose routing filter ruled the keys out, so no locator page of theirs was read.
    pub locator_groups_routed_out: u64,
    pub locators_unreadable: u64,
    /// The filter names keys of an indexed column (`=`, IN): a point lookup.
    pub point_lookup: bool,
    pub sidecar_cache_hits: u64,
    pub sidecars_unreadable: u64,
}

/// Min/max, null counts and row counts of every block, or of the blocks `subset` lists (in its
/// order), for DataFusion's pruning predicate.
struct BlockStatistics<'a> {
    blocks: &'a BlockList,
    subset: Option<UInt32Array>,
}

impl BlockStatistics<'_> {
    fn of(&self, array: ArrayRef) -> Option<ArrayRef> {
        match &self.subset {
            Some(indices) => take(array.as_ref(), indices, None).ok(),
            None => Some(array),
        }
    }
}

impl PruningStatistics for BlockStatistics<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.of(self.blocks.mins(&column.name)?.clone())
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.of(self.blocks.maxes(&column.name)?.clone())
    }

    fn num_containers(&self) -> usize {
        self.subset.as_ref().map_or(self.blocks.len(), |s| s.len())
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        self.of(Arc::new(self.blocks.null_counts(&column.name)?.clone()))
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        self.of(Arc::new(self.blocks.rows().clone()))
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None // filters are probed after min/max, on the survivors only
    }
}

/// The hashes to probe for one `column IN (literals)` guarantee, or None if the literals cannot
/// be hashed as the column's values were (then the guarantee prunes nothing).
fn guarantee_hashes(table: &Table, guarantee: &LiteralGuarantee) -> Option<(String, Vec<u64>)> {
    if guarantee.guarantee != Guarantee::In {
        return None; // a filter can say a value is absent, never that only some values are present
    }
    let name = &guarantee.column.name;
    let def = table.def();
    if !def.options.index_columns.contains(name) {
        return None;
    }
    let column_type = def.schema.field_with_name(name).ok()?.data_type();
    Some((
        name.clone(),
        literal_hashes(&guarantee.literals, column_type)?,
    ))
}

/// The hashes of `literals` as values of a `column_type` column, or None if one cannot be cast
/// to it without loss: a lossy cast (5.5 into an integer column) could hash another value.
pub(crate) fn literal_hashes(
    literals: &HashSet<ScalarValue>,
    column_type: &DataType,
) -> Option<Vec<u64>> {
    let mut hashes = Vec::with_capacity(literals.len());
    for literal in literals {
        let cast = lossless_cast(literal, column_type)?;
        hashes.extend(
            ColumnHashes::from_array(cast.to_array().ok()?.as_ref())
                .ok()?
                .hashes,
        );
    }
    Some(hashes)
}

/// Which slices of a surviving block to read: None for the whole block.
pub type Slices = Option<BTreeSet<u32>>;

/// Narrows `current` to what another column allows: both must hold for a row to match.
fn intersect(current: Slices, other: Slices) -> Slices {
    match (current, other) {
        (None, other) => other,
        (current, None) => current,
        (Some(a), Some(b)) => Some(a.intersection(&b).copied().collect()),
    }
}

/// What the locators said about one column's probe, for the blocks they answered for.
struct LocatorAnswer {
    /// Per block of the list, whether its group answered: only those in `found` may hold the
    /// keys. A flag per block, not a set: a lookup over 10,000 blocks sets them all.
    answered: Vec<bool>,
    found: HashMap<usize, Slices>,
}

impl LocatorAnswer {
    fn none(blocks: &BlockList) -> Self {
        Self {
            answered: vec![false; blocks.len()],
            found: HashMap::new(),
        }
    }

    fn answer_for(&mut self, blocks: std::ops::Range<usize>) {
        self.answered[blocks].fill(true);
    }
}

/// Asks every locator group holding a block of `kept` where `hashes` may be (groups a routing
/// filter ruled out hold none of `kept`: [`routed_out`] took their blocks first). Groups without
/// a usable locator, or that say "in several blocks", answer for none of their blocks, which
/// then go to their sidecars.
async fn ask_locators(
    table: &Table,
    blocks: &BlockList,
    kept: &[usize],
    column: &str,
    hashes: &[u64],
    routing: Option<&Arc<RoutingFilters>>,
    outcome: &mut PruneOutcome,
) -> LocatorAnswer {
    let mut wanted = vec![false; blocks.len()];
    for &b in kept {
        wanted[b] = true;
    }
    let mut answer = LocatorAnswer::none(blocks);
    // Owned items: a stream over borrowed ones makes the scan's future not Send.
    let mut groups = Vec::new();
    for group in blocks.locator_groups() {
        if !wanted[group.blocks.clone()].contains(&true) {
            continue;
        }
        match &group.header {
            Ok(header) => {
                let Some(locator) = header.column(column) else {
                    continue;
                };
                groups.push((group.clone(), header.clone(), locator.clone()));
            }
            Err(why) => {
                log::warn!(
                    "locator {} unusable, its blocks' sidecars are used: {why}",
                    group.name
                );
                outcome.locators_unreadable += 1;
            }
        }
    }
    let asked: Vec<_> = futures::stream::iter(groups)
        .map(|(group, header, locator)| async move {
            let found = table.locate(&group, &header, &locator, hashes).await;
            (group, found)
        })
        .buffer_unordered(LOCATOR_CONCURRENCY)
        .collect()
        .await;
    if let Some(routing) = routing {
        routing.forget_replaced(table, blocks);
    }
    for (group, found) in asked {
        let (locations, bytes) = match found {
            Ok(found) => found,
            Err(e) => {
                log::warn!(
                    "cannot read locator {}, its blocks' sidecars are used: {e}",
                    group.name
                );
                outcome.locators_unreadable += 1;
                continue;
            }
        };
        outcome.locator_groups_probed += 1;
        outcome.index_bytes += bytes;
        if locations.contains(&Location::Blocks) {
            continue;
        }
        answer.answer_for(group.blocks.clone());
        for location in locations {
            let (block, slice) = match location {
                Location::Absent | Location::Blocks => continue,
                Location::Slice { block, slice } => (block, Some(slice)),
                Location::Block(block) => (block, None),
            };
            let slices = answer
                .found
                .entry(group.blocks.start + block as usize)
                .or_insert_with(|| Some(BTreeSet::new()));
            match (slices, slice) {
                (Some(set), Some(slice)) => {
                    set.insert(slice);
                }
                (whole, None) => *whole = None,
                (None, Some(_)) => {}
            }
        }
    }
    answer
}

/// Locator groups (an attached index's parts) asked at once for one query.
pub(crate) const LOCATOR_CONCURRENCY: usize = 64;

/// The predicate as DataFusion's pruning predicate over the table's columns; None if it cannot
/// prune.
fn pruning_predicate(
    table: &Table,
    predicate: &Arc<dyn PhysicalExpr>,
) -> Option<Arc<PruningPredicate>> {
    PruningPredicateBuilder::new()
        .with_file_schema(table.def().schema.clone())
        .build(predicate.clone())
}

/// Every `column IN (keys)` the predicate's `guarantees` name on an indexed column, as the keys'
/// hashes: a row can match only if, for each, its column holds one of them.
pub fn probes(table: &Table, guarantees: &[LiteralGuarantee]) -> Vec<(String, Vec<u64>)> {
    guarantees
        .iter()
        .filter_map(|g| guarantee_hashes(table, g))
        .collect()
}

/// How a scan narrows its blocks by its predicate.
pub enum Narrowing<'a> {
    /// Every step: routing filters, min/max (its pruning predicate built only when the filters
    /// leave blocks they cannot vouch for: [`minmax_needed`]), then locators and sidecars.
    Prune(&'a Arc<dyn PhysicalExpr>),
    /// The blocks given are what a coordinator's min/max and node filters kept for this worker
    /// ([`crate::cluster::remote_lookup`]): its routing filters, locators and sidecars are left
    /// to ask, for the predicate's guarantees. A worker that ran min/max again did its
    /// coordinator's work twice.
    Chosen(&'a [LiteralGuarantee]),
}

/// Per block, whether its min/max, null and row counts allow a row matching `predicate`.
pub fn minmax_keep(blocks: &BlockList, predicate: &PruningPredicate) -> Result<Vec<bool>> {
    let all = BlockStatistics {
        blocks,
        subset: None,
    };
    predicate.prune(&all)
}

/// The blocks of `which` whose min/max, null and row counts allow a row matching `predicate`.
fn minmax_survivors(
    blocks: &BlockList,
    which: Vec<usize>,
    predicate: &PruningPredicate,
) -> Result<Vec<usize>> {
    // Most blocks: their statistics as they are, rather than copies of most of them.
    if which.len() * 2 >= blocks.len() {
        let keep = minmax_keep(blocks, predicate)?;
        return Ok(which.into_iter().filter(|&i| keep[i]).collect());
    }
    if which.is_empty() {
        return Ok(which);
    }
    let subset = BlockStatistics {
        blocks,
        subset: Some(which.iter().map(|&i| i as u32).collect()),
    };
    let keep = predicate.prune(&subset)?;
    Ok(which
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(i, _)| i)
        .collect())
}

/// What the routing filters said of each block.
struct Routed {
    /// Its group is ruled out for one of the probes (every probe must hold for a row to
    /// match): it needs neither min/max nor a locator read.
    out: Vec<bool>,
    /// Its group's loaded filter answered for every probe: min/max could drop it only when the
    /// filter's "maybe" is a false positive, which its locator answers anyway.
    vouched: Vec<bool>,
}

/// What the loaded routing filters say of `blocks` for `probes`. Only the groups of `owned`
/// blocks are asked, so a worker loads the filters of its own groups only: memory partitions
/// by owner.
fn routed(
    table: &Table,
    blocks: &BlockList,
    owned: Option<&[bool]>,
    probes: &[(String, Vec<u64>)],
    routing: &Arc<RoutingFilters>,
    outcome: &mut PruneOutcome,
) -> Routed {
    let mut out = vec![false; blocks.len()];
    let mut vouched = out.clone();
    for group in blocks.locator_groups() {
        if owned.is_some_and(|o| !o[group.blocks.clone()].contains(&true)) {
            continue;
        }
        let Ok(header) = &group.header else { continue };
        // Per group per lookup, so no list of answers: whether one ruled the group out, and
        // whether every probe was answered.
        let (mut ruled_out, mut answered) = (false, true);
        for (column, hashes) in probes {
            let answer = header
                .column(column)
                .and_then(|_| routing.may_hold(table, &group.name, header, column, hashes));
            ruled_out |= answer == Some(false);
            answered &= answer.is_some();
        }
        if ruled_out {
            outcome.locator_groups_routed_out += 1;
            out[group.blocks.clone()].fill(true);
        } else if answered {
            vouched[group.blocks.clone()].fill(true);
        }
    }
    Routed { out, vouched }
}

/// The min/max predicate a lookup still needs once the routing (or node) filters have answered:
/// None when they `vouched` for every block left and the keys `probes` name are the whole of
/// `predicate` (every column it reads is probed, so min/max could only narrow on another
/// column), or when min/max cannot prune on it. One rule for a scan's pruning and a
/// coordinator's choice of workers.
pub fn minmax_needed(
    table: &Table,
    predicate: Option<&Arc<dyn PhysicalExpr>>,
    probes: &[(String, Vec<u64>)],
    vouched: bool,
) -> Option<Arc<PruningPredicate>> {
    let covered = |p: &Arc<dyn PhysicalExpr>| {
        !probes.is_empty()
            && collect_columns(p)
                .iter()
                .all(|c| probes.iter().any(|(name, _)| name == c.name()))
    };
    predicate
        .filter(|p| !(vouched && covered(p)))
        .and_then(|p| pruning_predicate(table, p))
}

/// Chooses the blocks to read among `owned` (all when None: a distributed scan's task reads only
/// its workers' blocks, and counts only those; a worker's lookup, the blocks its coordinator
/// chose).
pub async fn prune_blocks(
    table: &Table,
    blocks: &BlockList,
    owned: Option<&[bool]>,
    narrowing: Option<Narrowing<'_>>,
    use_locator: bool,
    routing: Option<&Arc<RoutingFilters>>,
) -> Result<PruneOutcome> {
    let mine: Vec<usize> = (0..blocks.len())
        .filter(|&i| owned.is_none_or(|o| o[i]))
        .collect();
    let total = mine.len();
    let mine: Vec<usize> = mine
        .into_iter()
        .filter(|&i| blocks.live_rows(i) > 0)
        .collect();
    let mut outcome = PruneOutcome {
        total,
        fully_deleted: total - mine.len(),
        ..Default::default()
    };
    let (guarantees, predicate) = match narrowing {
        None => {
            outcome.slices = vec![None; mine.len()];
            outcome.survivors = mine;
            return Ok(outcome);
        }
        Some(Narrowing::Prune(predicate)) => (
            Cow::Owned(LiteralGuarantee::analyze(predicate)),
            Some(predicate),
        ),
        Some(Narrowing::Chosen(guarantees)) => (Cow::Borrowed(guarantees), None),
    };
    let probes = probes(table, &guarantees);
    outcome.point_lookup = !probes.is_empty();
    // Routing first: it is in memory, and at 10,000 blocks min/max over every block's string
    // bounds would cost a lookup more than the rest of its pruning. A worker given chosen blocks
    // asks its routing filters again: groups beyond its coordinator's `--node-filter-mib` were
    // chosen unasked.
    let (candidates, vouched): (Vec<usize>, bool) = match routing
        .filter(|_| use_locator && !probes.is_empty())
    {
        Some(routing) => {
            let routed = routed(table, blocks, owned, &probes, routing, &mut outcome);
            let candidates: Vec<usize> = mine.iter().copied().filter(|&i| !routed.out[i]).collect();
            let vouched = candidates.iter().all(|&i| routed.vouched[i]);
            (candidates, vouched)
        }
        None => (mine.clone(), false),
    };
    outcome.pruned_by_locator = mine.len() - candidates.len();
    let minmax = (!candidates.is_empty())
        .then(|| minmax_needed(table, predicate, &probes, vouched))
        .flatten();
    let survivors = match minmax {
        Some(minmax) => minmax_survivors(blocks, candidates, &minmax)?,
        None => candidates,
    };
    outcome.pruned_by_minmax = mine.len() - outcome.pruned_by_locator - survivors.len();

    // One column at a time, each probing only the blocks the columns before it kept.
    let mut kept: Vec<(usize, Slices)> = survivors.into_iter().map(|b| (b, None)).collect();
    for (column, hashes) in &probes {
        if kept.is_empty() {
            break;
        }
        let before = kept.len();
        let which: Vec<usize> = kept.iter().map(|(b, _)| *b).collect();
        let answer = if use_locator {
            ask_locators(table, blocks, &which, column, hashes, routing, &mut outcome).await
        } else {
            LocatorAnswer::none(blocks)
        };
        let mut narrowed = Vec::with_capacity(kept.len());
        let mut unanswered = Vec::new();
        for (block, slices) in kept {
            if !answer.answered[block] {
                unanswered.push((block, slices));
            } else if let Some(found) = answer.found.get(&block) {
                let slices = intersect(slices, found.clone());
                if slices.as_ref().is_none_or(|s| !s.is_empty()) {
                    narrowed.push((block, slices));
                }
            }
        }
        outcome.pruned_by_locator += before - unanswered.len() - narrowed.len();
        // A DELETE may have made a block's cuckoo entry forget keys its locator still names.
        let (recheck, located): (Vec<_>, Vec<_>) = narrowed
            .into_iter()
            .partition(|(b, _)| blocks.sidecar_replaced(*b));
        narrowed = located;
        unanswered.extend(recheck);
        let which: Vec<usize> = unanswered.iter().map(|(b, _)| *b).collect();
        let fetch = table.sidecar_entries(blocks, &which, column).await;
        outcome.sidecar_bytes += fetch.bytes_fetched;
        outcome.index_bytes += fetch.bytes_fetched;
        outcome.sidecar_cache_hits += fetch.cache_hits;
        outcome.sidecars_unreadable += fetch.unreadable;
        let (probed, by_locator) = (unanswered.len(), narrowed.len());
        narrowed.extend(
            unanswered
                .into_iter()
                .zip(&fetch.entries)
                .filter(|(_, entry)| {
                    entry
                        .as_ref()
                        .is_none_or(|index| hashes.iter().any(|&h| index.may_contain(h)))
                })
                .map(|(block, _)| block),
        );
        outcome.pruned_by_filter += probed - (narrowed.len() - by_locator);
        narrowed.sort_unstable_by_key(|(b, _)| *b);
        kept = narrowed;
    }
    (outcome.survivors, outcome.slices) = kept.into_iter().unzip();
    Ok(outcome)
}
