//! Node filters (Mosharraf & Adnan): before a point lookup is sent anywhere, the coordinator asks which
//! workers can hold the key, and contacts only those, so an absent key contacts no worker and a
//! present one only its owner. A worker's node filter is the routing filters
//! ([`RoutingFilters`]) of the locator groups it owns under the current placement; a new
//! commit's groups and a changed worker set only change which filters count for which worker.
//! Until a group's filter is in memory, and for blocks without a usable locator, the owning
//! worker is always asked: a filter only ever removes a worker that cannot hold the key.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::utils::LiteralGuarantee;
use sieve_storage::{BlockList, Table};

use crate::cluster::placement::Placement;
use crate::scan::exec::Shares;
use crate::scan::pruning::{minmax_keep, minmax_needed, probes};
use crate::scan::routing::RoutingFilters;

/// Which workers a lookup asks.
struct Asked {
    /// Indices into the placement's workers.
    workers: Vec<usize>,
    /// Workers that own blocks of the table but whose node filter ruled the keys out.
    skipped: usize,
    /// Per worker of the placement, the blocks (indices into the list) it would read: those
    /// min/max kept, less the groups node filters ruled out. A point lookup sends each worker
    /// its own, so the worker does not prune them again.
    chosen: Vec<Vec<u32>>,
    /// Every chosen block is in a group whose loaded filter said it may hold the keys: min/max
    /// could then only drop a filter's rare false positive, and is not worth its cost.
    vouched: bool,
}

/// The workers that may hold a row matching every probe (`column`, its keys' hashes), among
/// the owners of the blocks min/max `kept` (every block when None): all of those when there
/// is no probe.
fn workers_to_ask(
    routing: &Arc<RoutingFilters>,
    table: &Table,
    blocks: &BlockList,
    kept: Option<&[bool]>,
    placement: &Placement,
    probes: &[(String, Vec<u64>)],
) -> Asked {
    let mut owning = vec![false; placement.workers().len()];
    let mut chosen = vec![Vec::new(); placement.workers().len()];
    let mut grouped = vec![false; blocks.len()];
    let mut vouched = !probes.is_empty();
    let kept_of = |range: std::ops::Range<usize>| {
        range
            .filter(|&i| kept.is_none_or(|kept| kept[i]))
            .map(|i| i as u32)
    };
    for group in blocks.locator_groups() {
        grouped[group.blocks.clone()].fill(true);
        let mut read = kept_of(group.blocks.clone()).peekable();
        if read.peek().is_none() {
            continue;
        }
        let owner = placement.owner(&group.name);
        owning[owner] = true;
        // Whether the group may hold the keys, and whether a filter said so.
        let (may_hold, by_filter) = match (&group.header, probes.is_empty()) {
            (_, true) | (Err(_), _) => (true, false),
            (Ok(header), false) => match routing.filter(table, &group.name, header) {
                Some(filter) => {
                    // A column the filter does not cover (one min/max routes) it cannot vouch for.
                    let mut covered = true;
                    let may_hold = probes.iter().all(|(column, hashes)| {
                        hashes.iter().any(|&h| {
                            let answer = filter.may_contain(column, h);
                            covered &= answer.is_some();
                            answer.unwrap_or(true)
                        })
                    });
                    (may_hold, covered)
                }
                None => (true, false),
            },
        };
        if may_hold {
            chosen[owner].extend(read);
            vouched &= by_filter;
        }
    }
    for i in kept_of(0..blocks.len()) {
        if !grouped[i as usize] {
            let owner = placement.owner(blocks.block_id(i as usize));
            owning[owner] = true;
            chosen[owner].push(i);
            vouched = false;
        }
    }
    routing.forget_replaced(table, blocks);
    let workers: Vec<usize> = (0..chosen.len())
        .filter(|&w| !chosen[w].is_empty())
        .collect();
    let skipped = owning.iter().filter(|&&o| o).count() - workers.len();
    Asked {
        workers,
        skipped,
        chosen,
        vouched,
    }
}

/// What a coordinator decides before contacting anyone, for a scan of `blocks` filtered by
/// `predicate` (None: unfiltered, or pruning off) under `placement`: the owners of the blocks
/// min/max keeps, less those whose node filter rules the predicate's keys out (unless
/// `node_filters` is off), and each one's blocks. What a distributed scan and a coordinator's
/// point lookup both decide.
///
/// The node filters are asked first, from the predicate's literal guarantees: when every group
/// they leave has a loaded filter and the keys are the whole predicate ([`minmax_needed`]),
/// min/max is skipped, and with it building a pruning predicate.
pub fn shares_to_ask(
    routing: &Arc<RoutingFilters>,
    table: &Table,
    blocks: &BlockList,
    predicate: Option<&Arc<dyn PhysicalExpr>>,
    node_filters: bool,
    placement: Arc<Placement>,
) -> Result<(Shares, Vec<Vec<u32>>)> {
    let probes = match predicate.filter(|_| node_filters) {
        Some(predicate) => probes(table, &LiteralGuarantee::analyze(predicate)),
        None => Vec::new(),
    };
    let mut asked = workers_to_ask(routing, table, blocks, None, &placement, &probes);
    if let Some(pruning) = minmax_needed(table, predicate, &probes, asked.vouched) {
        let kept = minmax_keep(blocks, &pruning)?;
        asked = workers_to_ask(routing, table, blocks, Some(&kept), &placement, &probes);
    }
    let shares = Shares {
        placement,
        workers: asked.workers,
        skipped_by_node_filter: asked.skipped,
    };
    Ok((shares, asked.chosen))
}
