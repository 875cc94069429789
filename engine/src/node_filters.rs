//! Node filters (seed 000): before a point lookup is sent anywhere, the coordinator asks which
//! workers can hold the key, and contacts only those, so an absent key contacts no worker and a
//! present one only its owner. A worker's node filter is the [`KeyFilter`]s of the locator
//! groups it owns under the current placement: each is derived from its group's locator file,
//! which is immutable, so a filter never goes stale; a new commit's groups and a changed worker
//! set only change which filters count for which worker.
//!
//! Filters load in the background the first time a table is looked up (a group's whole locator
//! file, once); until a group's filter is in memory, and for blocks without a usable locator,
//! the owning worker is always asked. A filter that cannot be read is retried after
//! [`RETRY_AFTER`]. Never a missed row: a filter only ever removes a worker that cannot hold
//! the key.
//!
//! Memory is bounded: filters take about 17 bits per key per indexed column (2.1 GB per billion
//! keys, measured), so a coordinator loads them up to its budget, in the order lookups meet
//! their groups, and asks the owners of the groups beyond it unconditionally. Groups a commit
//! replaced (OPTIMIZE) are forgotten, giving their bytes back.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sieve_index::KeyFilter;
use sieve_storage::{BlockList, Table};
use tokio::sync::Semaphore;

use crate::placement::Placement;

/// Locator files read and reduced at once while filters load: half the cores, so that the
/// lookups a fresh coordinator serves meanwhile keep the other half (a reduction is CPU-bound).
fn loads_at_once() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// How long a group whose filter failed to load is asked unconditionally before trying again.
const RETRY_AFTER: Duration = Duration::from_secs(30);

enum Loaded {
    /// Its planned bytes are reserved.
    Loading,
    Ready(Arc<KeyFilter>),
    Failed(Instant),
}

/// What a coordinator holds, by table id and group name.
#[derive(Default)]
struct Held {
    tables: HashMap<String, HashMap<String, Loaded>>,
    /// Bytes of the filters ready or loading.
    bytes: usize,
    over_budget_told: bool,
}

/// Every group's key filter a coordinator has loaded, within a budget of bytes.
pub struct NodeFilters {
    held: Mutex<Held>,
    budget: usize,
    loads: Arc<Semaphore>,
}

impl std::fmt::Debug for NodeFilters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeFilters").finish_non_exhaustive()
    }
}

/// Which workers a lookup asks.
pub struct Asked {
    /// Indices into the placement's workers.
    pub workers: Vec<usize>,
    /// Workers that own blocks of the table but whose node filter ruled the keys out.
    pub skipped: usize,
}

impl NodeFilters {
    /// Filters of at most `budget` bytes in all.
    pub fn new(budget: usize) -> Self {
        Self {
            held: Mutex::default(),
            budget,
            loads: Arc::new(Semaphore::new(loads_at_once())),
        }
    }

    /// The workers that may hold a row matching every probe (`column`, its keys' hashes), among
    /// the owners of the blocks min/max `kept` (every block when None): all of those when there
    /// is no probe.
    pub fn workers_to_ask(
        self: &Arc<Self>,
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
                (Ok(header), false) => match self.filter(table, &group.name, header) {
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
        self.forget_replaced(table, blocks);
        let workers: Vec<usize> = (0..ask.len()).filter(|&w| ask[w]).collect();
        let skipped = owning.iter().filter(|&&o| o).count() - workers.len();
        Asked { workers, skipped }
    }

    /// Drops the filters of groups `blocks` no longer has (a commit replaced them).
    fn forget_replaced(&self, table: &Table, blocks: &BlockList) {
        let mut held = self.held.lock().expect("node filters lock");
        let Held { tables, bytes, .. } = &mut *held;
        let Some(groups) = tables.get_mut(&table.def().id) else {
            return;
        };
        let current = blocks.locator_groups();
        if groups.len() <= current.len() {
            return;
        }
        let names: HashSet<&str> = current.iter().map(|g| g.name.as_str()).collect();
        groups.retain(|name, loaded| {
            let keep = names.contains(name.as_str());
            if !keep && let Loaded::Ready(filter) = loaded {
                *bytes -= filter.bytes();
            }
            // A filter still loading keeps its reservation until it lands, then is dropped
            // the next time a lookup meets the table.
            keep || matches!(loaded, Loaded::Loading)
        });
    }

    /// The group's filter if loaded; else starts loading it if the budget allows (asked again
    /// at each lookup, so bytes a replaced group gave back are used), and returns None.
    fn filter(
        self: &Arc<Self>,
        table: &Table,
        group: &str,
        header: &Arc<sieve_index::LocatorHeader>,
    ) -> Option<Arc<KeyFilter>> {
        let table_id = table.def().id.clone();
        let mut held = self.held.lock().expect("node filters lock");
        let Held {
            tables,
            bytes,
            over_budget_told,
        } = &mut *held;
        let groups = tables.entry(table_id.clone()).or_default();
        match groups.get(group) {
            Some(Loaded::Ready(filter)) => return Some(filter.clone()),
            Some(Loaded::Loading) => return None,
            Some(Loaded::Failed(at)) if at.elapsed() < RETRY_AFTER => return None,
            _ => {}
        }
        let planned = KeyFilter::planned_bytes(header);
        if *bytes + planned > self.budget {
            if !std::mem::replace(over_budget_told, true) {
                log::warn!(
                    "node filters reached their budget ({} MiB): the owners of groups beyond it \
                     are always asked (raise node_filter_mib to filter them)",
                    self.budget >> 20
                );
            }
            return None;
        }
        *bytes += planned;
        groups.insert(group.to_string(), Loaded::Loading);
        drop(held);
        let (this, table, header, group) = (
            self.clone(),
            table.clone(),
            header.clone(),
            group.to_string(),
        );
        tokio::spawn(async move {
            let _permit = this.loads.clone().acquire_owned().await;
            let loaded = match table.key_filter(&group, &header).await {
                Ok(filter) => {
                    log::debug!("node filter of locator {group}: {} bytes", filter.bytes());
                    Loaded::Ready(Arc::new(filter))
                }
                Err(e) => {
                    log::warn!(
                        "node filter of locator {group} not loaded, its owner is always asked: {e}"
                    );
                    Loaded::Failed(Instant::now())
                }
            };
            let mut guard = this.held.lock().expect("node filters lock");
            let held = &mut *guard;
            if matches!(loaded, Loaded::Failed(_)) {
                held.bytes -= planned;
            }
            let groups = held.tables.entry(table_id).or_default();
            groups.insert(group, loaded);
            if !groups.values().any(|l| matches!(l, Loaded::Loading)) {
                log::info!(
                    "node filters loaded: {} groups of the table, {} bytes in all",
                    groups.len(),
                    held.bytes
                );
            }
        });
        None
    }
}
