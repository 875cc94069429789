//! Which worker owns which blocks: rendezvous (highest-random-weight) hashing (Elghamrawy & Hassanien). Every
//! (worker, unit) pair gets a pseudo-random weight and a unit belongs to the worker of highest
//! weight, so every coordinator agrees on the owner without talking to the others, each worker
//! sees the same blocks query after query (and keeps their sidecars, locator pages and Parquet
//! footers warm), and a worker joining or leaving moves only the units it wins or held: about
//! 1/N of them, never a reshuffle.
//!
//! The unit placed is the locator group when a block has one (a group's locator pages and its
//! blocks then live on one worker, so one worker answers a key the group locates), else the
//! block. Weights hash the worker's name and the unit's with the pinned XXH3 hash, so every
//! build places alike.

use sieve_storage::BlockList;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The weight of `unit` on `worker`: XXH3 of the unit's name seeded with the XXH3 of the worker's.
fn weight(worker_seed: u64, unit: &str) -> u64 {
    xxh3_64_with_seed(unit.as_bytes(), worker_seed)
}

/// The live workers, by the names (URLs) every coordinator knows them by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Placement {
    workers: Vec<String>,
    seeds: Vec<u64>,
}

impl Placement {
    pub fn new(workers: Vec<String>) -> Self {
        let seeds = workers
            .iter()
            .map(|w| xxhash_rust::xxh3::xxh3_64(w.as_bytes()))
            .collect();
        Self { workers, seeds }
    }

    pub fn workers(&self) -> &[String] {
        &self.workers
    }

    /// The index in [`Self::workers`] of the worker that owns `unit`; ties (which need two equal
    /// 64-bit hashes) go to the first listed.
    pub fn owner(&self, unit: &str) -> usize {
        let mut best = (0, 0);
        for (i, &seed) in self.seeds.iter().enumerate() {
            let w = weight(seed, unit);
            if i == 0 || w > best.1 {
                best = (i, w);
            }
        }
        best.0
    }

    /// The owner of every block of `blocks`, in order: the owner of its locator group, or of the
    /// block itself when it has none.
    pub fn block_owners(&self, blocks: &BlockList) -> Vec<usize> {
        let mut owners = vec![usize::MAX; blocks.len()];
        for group in blocks.locator_groups() {
            let owner = self.owner(&group.name);
            owners[group.blocks.clone()].fill(owner);
        }
        for (i, owner) in owners.iter_mut().enumerate() {
            if *owner == usize::MAX {
                *owner = self.owner(blocks.block_id(i));
            }
        }
        owners
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("block-{i:06}")).collect()
    }

    fn names(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("http://127.0.0.1:{}", 9000 + i))
            .collect()
    }

    #[test]
    fn every_worker_gets_a_fair_share() {
        let placement = Placement::new(names(4));
        let mut counts = [0usize; 4];
        for unit in units(10_000) {
            counts[placement.owner(&unit)] += 1;
        }
        for count in counts {
            assert!((2_250..=2_750).contains(&count), "{counts:?}");
        }
    }

    #[test]
    fn a_worker_joining_takes_only_its_share_and_leaving_gives_back_only_its_own() {
        let (before, after) = (Placement::new(names(3)), Placement::new(names(4)));
        let units = units(10_000);
        let mut moved = 0;
        for unit in &units {
            let (old, new) = (before.owner(unit), after.owner(unit));
            if old != new {
                // Every unit that moves moves to the newcomer.
                assert_eq!(new, 3);
                moved += 1;
            }
        }
        // About a quarter moves, not a reshuffle.
        assert!((2_250..=2_750).contains(&moved), "{moved}");
        // The order workers are listed in does not matter.
        let mut reversed = names(4);
        reversed.reverse();
        let reversed = Placement::new(reversed);
        for unit in &units {
            assert_eq!(
                after.workers()[after.owner(unit)],
                reversed.workers()[reversed.owner(unit)]
            );
        }
    }
}
