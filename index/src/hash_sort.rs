//! Sorting by a hash. A load sorts every block's key hashes (for the filters' dedup, and for the
//! locator's shards), millions per block: a general comparison sort spends ~20 comparisons per
//! key on that. Hashes are uniform, so one counting pass on their top bits puts each key within
//! a bucket of a handful, and a small sort per bucket finishes the job: two linear passes.
//!
//! Written here rather than taken from a radix-sort crate: those sort by every byte of the key
//! (eight passes for a u64), which is what uniformity makes unnecessary; and this order must
//! agree with the items' own `Ord` (the key's top bits first), which a key-only sort does not
//! give for ties.

/// Keys per bucket the counting pass aims for.
const BUCKET: usize = 8;
/// Below this many items a comparison sort is as fast.
const SMALL: usize = 1024;

/// Sorts `items` by their `Ord`, given `key`: a u64 that is non-decreasing in that order and
/// spread uniformly (a hash, or a monotone function of one). Non-uniform keys stay correct, only
/// slower (one large bucket is sorted by comparison).
pub fn sort_by_hash<T: Ord + Copy>(items: &mut Vec<T>, key: impl Fn(&T) -> u64) {
    let n = items.len();
    if n < SMALL {
        items.sort_unstable();
        return;
    }
    let bits = (n / BUCKET).ilog2().min(24);
    let bucket = |item: &T| (key(item) >> (64 - bits)) as usize;
    // starts[b] is where bucket b begins in the output once the counts are summed.
    let mut starts = vec![0usize; (1 << bits) + 1];
    for item in items.iter() {
        starts[bucket(item) + 1] += 1;
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    let mut sorted = items.clone();
    let mut next = starts.clone();
    for item in items.iter() {
        let at = &mut next[bucket(item)];
        sorted[*at] = *item;
        *at += 1;
    }
    for range in starts.windows(2) {
        sorted[range[0]..range[1]].sort_unstable();
    }
    *items = sorted;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::hash_bytes;

    #[test]
    fn agrees_with_a_comparison_sort() {
        for n in [0, 1, 5, 1023, 1024, 5000, 100_000] {
            // Uniform keys with repeats, tied keys told apart by the second field.
            let mut items: Vec<(u64, u32)> = (0..n as u64)
                .map(|i| (hash_bytes(&(i % 777).to_le_bytes()), (i % 3) as u32))
                .collect();
            let mut expected = items.clone();
            expected.sort_unstable();
            sort_by_hash(&mut items, |i| i.0);
            assert_eq!(items, expected, "n={n}");
        }
        // Keys that are not uniform at all: one bucket.
        let mut skewed: Vec<u64> = (0..5000u64).rev().collect();
        sort_by_hash(&mut skewed, |&k| k);
        assert!(skewed.windows(2).all(|w| w[0] <= w[1]));
    }
}
