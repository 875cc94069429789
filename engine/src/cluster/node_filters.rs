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
use sieve_storage::{BlockList, Table};

use crate::cluster::placement::Placement;
use crate::scan::exec::Shares;
use crate::scan::pruning::{minmax_keep, probes, pruning_predicate};
use crate::scan::routing::RoutingFilters;

/// Which workers a lookup asks.
pub struct Asked {
    /// Indices into the placement's workers.
    pub workers: Vec<usize>,
    /// Workers that own blocks of the table but whose node filter ruled the keys out.
    pub skipped: usize,
}

/// The workers that may hold a row matching every probe (`column`, its keys' hashes), among
/// the owners of the blocks min/max `kept` (every block when None): all of those when there
/// is no probe.
pub fn workers_to_ask(
    routing: &Arc<RoutingFilters>,
    table: &Table,
    blocks: &BlockList,
    kept: Option<&[bool]>,
    placement: &Placement,
    probes: &[(String, Vec<u64>)],
) -> Asked {
    let mut owning = vec![false; placement.workers().len()];
    let mut ask = owning.clone();
    let mut grouped = vec![false; blocks.len()];
    for group in blocks.locator_groups() {
        grouped[group.blocks.clone()].fill(true);
        if kept.is_some_and(|kept| !kept[group.blocks.clone()].contains(&true)) {
            continue;
        }
        let owner = placement.owner(&group.name);
        owning[owner] = true;
        if ask[owner] {
            continue;
        }
        let may_hold = match (&group.header, probes.is_empty()) {
            (_, true) | (Err(_), _) => true,
            (Ok(header), false) => match routing.filter(table, &group.name, header) {
                Some(filter) => probes.iter().all(|(column, hashes)| {
                    hashes
                        .iter()
                        .any(|&h| filter.may_contain(column, h).unwrap_or(true))
                }),
                None => true,
            },
        };
        ask[owner] |= may_hold;
    }
    for (i, grouped) in grouped.iter().enumerate() {
        if !grouped && kept.is_none_or(|kept| kept[i]) {
            let owner = placement.owner(blocks.block_id(i));
            owning[owner] = true;
            ask[owner] = true;
        }
    }
    routing.forget_replaced(table, blocks);
    let workers: Vec<usize> = (0..ask.len()).filter(|&w| ask[w]).collect();
    let skipped = owning.iter().filter(|&&o| o).count() - workers.len();
    Asked { workers, skipped }
}

/// The workers a scan of `blocks` filtered by `predicate` (None: unfiltered, or pruning off)
/// asks under `placement`: the owners of the blocks min/max keeps, less those whose node filter
/// rules the predicate's keys out (unless `node_filters` is off). What a distributed scan and
/// a coordinator's point lookup both decide before contacting anyone.
pub fn shares_to_ask(
    routing: &Arc<RoutingFilters>,
    table: &Table,
    blocks: &BlockList,
    predicate: Option<&Arc<dyn PhysicalExpr>>,
    node_filters: bool,
    placement: Arc<Placement>,
) -> Result<Shares> {
    let pruning = predicate.and_then(|p| pruning_predicate(table, p));
    let kept = pruning
        .as_ref()
        .map(|p| minmax_keep(blocks, p))
        .transpose()?;
    let probes = pruning
        .filter(|_| node_filters)
        .map(|p| probes(table, &p))
        .unwrap_or_default();
    let asked = workers_to_ask(routing, table, blocks, kept.as_deref(), &placement, &probes);
    Ok(Shares {
        placement,
        workers: asked.workers,
        skipped_by_node_filter: asked.skipped,
    })
}
