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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sieve_index::KeyFilter;
use sieve_storage::{BlockList, Table};
use tokio::sync::Semaphore;

use crate::placement::Placement;

/// Locator files read at once while loading filters.
const LOADS_AT_ONCE: usize = 4;
/// How long a group whose filter failed to load is asked unconditionally before trying again.
const RETRY_AFTER: Duration = Duration::from_secs(30);

enum Loaded {
    Loading,
    Ready(Arc<KeyFilter>),
    Failed(Instant),
}

impl Loaded {
    fn bytes(&self) -> usize {
        match self {
            Loaded::Ready(f) => f.bytes(),
            _ => 0,
        }
    }
}

/// Every group's key filter a coordinator has loaded, by table id and group name.
pub struct NodeFilters {
    groups: Mutex<HashMap<(String, String), Loaded>>,
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
    pub fn new() -> Self {
        Self {
            groups: Mutex::default(),
            loads: Arc::new(Semaphore::new(LOADS_AT_ONCE)),
        }
    }

    /// The workers that may hold a row matching every probe (`column`, its keys' hashes): all
    /// owners of the table's blocks when there is no probe.
    pub fn workers_to_ask(
        self: &Arc<Self>,
        table: &Table,
        blocks: &BlockList,
        placement: &Placement,
        probes: &[(String, Vec<u64>)],
    ) -> Asked {
        let mut owning = vec![false; placement.workers().len()];
        let mut ask = owning.clone();
        let mut grouped = vec![false; blocks.len()];
        for group in blocks.locator_groups() {
            grouped[group.blocks.clone()].fill(true);
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
            if !grouped {
                let owner = placement.owner(blocks.block_id(i));
                owning[owner] = true;
                ask[owner] = true;
            }
        }
        let workers: Vec<usize> = (0..ask.len()).filter(|&w| ask[w]).collect();
        let skipped = owning.iter().filter(|&&o| o).count() - workers.len();
        Asked { workers, skipped }
    }

    /// The group's filter if loaded; else starts loading it and returns None.
    fn filter(
        self: &Arc<Self>,
        table: &Table,
        group: &str,
        header: &Arc<sieve_index::LocatorHeader>,
    ) -> Option<Arc<KeyFilter>> {
        let key = (table.def().id.clone(), group.to_string());
        let mut groups = self.groups.lock().expect("node filters lock");
        match groups.get(&key) {
            Some(Loaded::Ready(filter)) => return Some(filter.clone()),
            Some(Loaded::Loading) => return None,
            Some(Loaded::Failed(at)) if at.elapsed() < RETRY_AFTER => return None,
            _ => {}
        }
        groups.insert(key.clone(), Loaded::Loading);
        let (this, table, header) = (self.clone(), table.clone(), header.clone());
        tokio::spawn(async move {
            let _permit = this.loads.clone().acquire_owned().await;
            let loaded = match table.key_filter(&key.1, &header).await {
                Ok(filter) => {
                    log::debug!("node filter of locator {}: {} bytes", key.1, filter.bytes());
                    Loaded::Ready(Arc::new(filter))
                }
                Err(e) => {
                    log::warn!(
                        "node filter of locator {} not loaded, its owner is always asked: {e}",
                        key.1
                    );
                    Loaded::Failed(Instant::now())
                }
            };
            let mut groups = this.groups.lock().expect("node filters lock");
            groups.insert(key, loaded);
            if !groups.values().any(|l| matches!(l, Loaded::Loading)) {
                let bytes: usize = groups.values().map(Loaded::bytes).sum();
                log::info!(
                    "node filters loaded: {} groups, {bytes} bytes",
                    groups.len()
                );
            }
        });
        None
    }
}
