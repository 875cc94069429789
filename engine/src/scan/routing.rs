//! Routing filters (seeds 000 and 003): before a lookup reads a locator group's pages, it asks
//! the group's [`KeyFilter`] held in memory whether the group may hold the key, so an absent key
//! reads no locator page and a present one only its group's, however many groups a table has.
//! A coordinator asks the same filters which workers to contact (the node filters of
//! `cluster::node_filters`). A group's filter is derived from its locator file, which is
//! immutable, so a filter never goes stale; a new commit's groups only add filters.
//!
//! Filters load in the background the first time a table is looked up (a group's whole locator
//! file, once, kept on the disk cache if the process has one: `Table::key_filter`); until a group's filter is in memory, and for blocks without a usable locator,
//! the group is probed as without routing. A filter that cannot be read is retried after
//! [`RETRY_AFTER`]. Never a missed row: a filter only ever rules out a group that cannot hold
//! the key (it has no false negatives).
//!
//! Memory is bounded: filters take about 17 bits per key per indexed column (2.1 GB per billion
//! keys, measured; an absent key matches a group with probability 2^-16), so a process loads them
//! up to its budget, in the order lookups meet their groups, and probes the groups beyond it.
//! Groups a commit replaced (OPTIMIZE, merges) are forgotten, giving their bytes back.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datafusion::execution::TaskContext;

use sieve_index::{KeyFilter, LocatorHeader};
use sieve_storage::{BlockList, Table};
use tokio::sync::{Notify, Semaphore};

use crate::options::SieveOptions;

/// Filters of about a billion keys (one indexed column of t10b at 1B rows) by default.
pub const DEFAULT_ROUTING_BYTES: usize = 2048 << 20;

/// Locator files read and reduced at once while filters load: half the cores, so that the
/// lookups a fresh process serves meanwhile keep the other half (a reduction is CPU-bound).
fn loads_at_once() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// How long a group whose filter failed to load is probed unconditionally before trying again.
const RETRY_AFTER: Duration = Duration::from_secs(30);

enum Loaded {
    /// Its planned bytes are reserved.
    Loading,
    Ready(Arc<KeyFilter>),
    Failed(Instant),
}

/// What a process holds, by table id and group name.
#[derive(Default)]
struct Held {
    tables: HashMap<String, HashMap<String, Loaded>>,
    /// Bytes of the filters ready or loading.
    bytes: usize,
    /// Filters loading now.
    loading: usize,
    over_budget_told: bool,
}

/// Every group's key filter a process has loaded, within a budget of bytes.
pub struct RoutingFilters {
    held: Mutex<Held>,
    budget: usize,
    loads: Arc<Semaphore>,
    /// Told whenever the last load in flight lands.
    settled: Notify,
}

impl std::fmt::Debug for RoutingFilters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoutingFilters").finish_non_exhaustive()
    }
}

/// The routing filters a scan running in `context` consults: None when the session turned
/// routing off (`SET sieve.routing = false`).
pub fn routing_of(context: &TaskContext) -> Option<Arc<RoutingFilters>> {
    let on = SieveOptions::of(context).routing;
    context
        .session_config()
        .get_extension::<RoutingFilters>()
        .filter(|_| on)
}

impl RoutingFilters {
    /// Filters of at most `budget` bytes in all.
    pub fn new(budget: usize) -> Self {
        Self {
            held: Mutex::default(),
            budget,
            loads: Arc::new(Semaphore::new(loads_at_once())),
            settled: Notify::new(),
        }
    }

    /// Whether group `group` (of `table`, described by `header`) may hold a row whose
    /// `column` is one of `hashes`: Some(false) only when its filter is loaded and rules every
    /// hash out; None when the filter is not in memory (its load is started if the budget
    /// allows) or does not index the column.
    pub fn may_hold(
        self: &Arc<Self>,
        table: &Table,
        group: &str,
        header: &Arc<LocatorHeader>,
        column: &str,
        hashes: &[u64],
    ) -> Option<bool> {
        let filter = self.filter(table, group, header)?;
        let mut any = false;
        for &hash in hashes {
            any |= filter.may_contain(column, hash)?;
        }
        Some(any)
    }

    /// Waits until no filter is loading: what a test or a benchmark waits on before it counts
    /// the groups a lookup probes.
    pub async fn settled(&self) {
        loop {
            let notified = self.settled.notified();
            if self.held.lock().expect("routing filters lock").loading == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Bytes of the filters in memory or loading.
    pub fn bytes(&self) -> usize {
        self.held.lock().expect("routing filters lock").bytes
    }

    /// Drops the filters of groups `blocks` no longer has (a commit replaced them).
    pub fn forget_replaced(&self, table: &Table, blocks: &BlockList) {
        let mut held = self.held.lock().expect("routing filters lock");
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
    pub fn filter(
        self: &Arc<Self>,
        table: &Table,
        group: &str,
        header: &Arc<LocatorHeader>,
    ) -> Option<Arc<KeyFilter>> {
        let mut held = self.held.lock().expect("routing filters lock");
        let Held {
            tables,
            bytes,
            loading,
            over_budget_told,
        } = &mut *held;
        // Asked for every group of every lookup: found without allocating.
        match tables
            .get(&table.def().id)
            .and_then(|groups| groups.get(group))
        {
            Some(Loaded::Ready(filter)) => return Some(filter.clone()),
            Some(Loaded::Loading) => return None,
            Some(Loaded::Failed(at)) if at.elapsed() < RETRY_AFTER => return None,
            _ => {}
        }
        let table_id = table.def().id.clone();
        let groups = tables.entry(table_id.clone()).or_default();
        let planned = KeyFilter::planned_bytes(header);
        if *bytes + planned > self.budget {
            if self.budget > 0 && !std::mem::replace(over_budget_told, true) {
                log::warn!(
                    "routing filters reached their budget ({} MiB): groups beyond it are always \
                     probed, and their owners asked (raise node_filter_mib to route them)",
                    self.budget >> 20
                );
            }
            return None;
        }
        *bytes += planned;
        *loading += 1;
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
                    log::debug!(
                        "routing filter of locator {group}: {} bytes",
                        filter.bytes()
                    );
                    Loaded::Ready(Arc::new(filter))
                }
                Err(e) => {
                    log::warn!(
                        "routing filter of locator {group} not loaded, the group is always probed: {e}"
                    );
                    Loaded::Failed(Instant::now())
                }
            };
            let mut guard = this.held.lock().expect("routing filters lock");
            let held = &mut *guard;
            if matches!(loaded, Loaded::Failed(_)) {
                held.bytes -= planned;
            }
            held.loading -= 1;
            if held.loading == 0 {
                this.settled.notify_waiters();
            }
            let groups = held.tables.entry(table_id).or_default();
            groups.insert(group, loaded);
            if !groups.values().any(|l| matches!(l, Loaded::Loading)) {
                log::info!(
                    "routing filters loaded: {} groups of the table, {} bytes in all",
                    groups.len(),
                    held.bytes
                );
            }
        });
        None
    }
}
