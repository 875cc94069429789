//! Which slice of a row group holds a key: a static function from one column's key hashes to
//! slice numbers, built from the locator's retrieval shards ([`crate::retrieval`], sharded by
//! the hash's top bits as [`crate::locator`] shards) and held in memory.
//!
//! Why not a filter per slice: a row group of a million rows cut into 30 slices would cost a
//! lookup 30 filter probes per row group its filter admits, and ~9 more bits per key at least;
//! this costs one probe and `width` × 1.09 bits per key (5 for 30 slices). It is asked only
//! after the row group's own filter admitted the key: an absent key gets an arbitrary value,
//! a slice (which it reads, as a false positive read the whole row group before) or a value
//! no key built in has ([`SliceOf::Absent`]), so the map is a second filter for free: of the
//! `2^width` values, those past the slice count and below "several" name no slice.
//!
//! A key in several slices (a column whose values repeat) maps to [`SliceMap::several`], all
//! ones, and a lookup of it reads the whole row group.

use crate::error::IndexError;
use crate::locator::{MANY_SLICES, SHARD_KEYS, distinct_keys, in_shard, shard_of};
use crate::retrieval::{Retrieval, Scratch};

/// Where a row group's map says a key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceOf {
    /// In this slice, and no other.
    One(u32),
    /// In several slices (or a hash never built in whose arbitrary value is "several").
    Several,
    /// In none: the value names no slice and is not "several", which no key built in has.
    Absent,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceMap {
    slices: u32,
    shards: Vec<Retrieval>,
}

/// Bits per value for `slices` slices: every slice number and the all-ones "several".
pub fn width_for(slices: u32) -> u8 {
    (32 - slices.leading_zeros()).max(1) as u8
}

impl SliceMap {
    /// The map of `keys`, each a hash and the slice (below `slices`) a row of it is in, in any
    /// order and repeated as often as the column repeats it.
    pub fn build(
        keys: Vec<(u64, u32)>,
        slices: u32,
        scratch: &mut Scratch,
    ) -> Result<Self, IndexError> {
        if let Some((_, s)) = keys.iter().find(|(_, s)| *s >= slices) {
            return Err(IndexError::Corrupt(format!(
                "slice {s} of a row group of {slices}"
            )));
        }
        Self::from_distinct(&distinct_keys(keys), slices, scratch)
    }

    /// The map of a row group's distinct keys as [`distinct_keys`] gives them (sorted by hash,
    /// [`MANY_SLICES`] for a key in several slices): what a build that has them already (an
    /// attached index's, for its part's locator) passes, so they are sorted once.
    pub fn from_distinct(
        keys: &[(u64, u32)],
        slices: u32,
        scratch: &mut Scratch,
    ) -> Result<Self, IndexError> {
        if let Some((_, s)) = keys.iter().find(|(_, s)| *s >= slices && *s != MANY_SLICES) {
            return Err(IndexError::Corrupt(format!(
                "slice {s} of a row group of {slices}"
            )));
        }
        let width = width_for(slices);
        let several = (1u64 << width) - 1;
        let value = |s: u32| {
            if s == MANY_SLICES {
                several
            } else {
                u64::from(s)
            }
        };
        let distinct: Vec<(u64, u64)> = keys.iter().map(|&(h, s)| (h, value(s))).collect();
        let count = distinct.len().div_ceil(SHARD_KEYS).max(1);
        let mut shards = Vec::with_capacity(count);
        let mut rest = distinct.as_slice();
        for shard in 0..count {
            // Sorted by hash, so a shard's keys are a run, ascending within it.
            let end = rest.partition_point(|(h, _)| shard_of(*h, count) == shard);
            let entries: Vec<(u64, u64)> = (rest[..end].iter())
                .map(|&(h, v)| (in_shard(h, count), v))
                .collect();
            shards.push(Retrieval::build(&entries, width, scratch)?);
            rest = &rest[end..];
        }
        Ok(Self { slices, shards })
    }

    /// A map as stored: its slice count and shards, each checked to have the width it needs.
    pub fn from_parts(slices: u32, shards: Vec<Retrieval>) -> Result<Self, IndexError> {
        let width = width_for(slices);
        if slices == 0 || shards.is_empty() || shards.iter().any(|s| s.geometry().width != width) {
            return Err(IndexError::Corrupt(format!(
                "a slice map of {slices} slices needs shards {width} bits wide"
            )));
        }
        Ok(Self { slices, shards })
    }

    pub fn slices(&self) -> u32 {
        self.slices
    }

    pub fn shards(&self) -> &[Retrieval] {
        &self.shards
    }

    /// The value of a key in several slices.
    pub fn several(&self) -> u64 {
        (1u64 << width_for(self.slices)) - 1
    }

    /// Where `hash` is: exact for a hash built in; for one never built in, an arbitrary
    /// answer, [`SliceOf::Absent`] where its value names no slice.
    pub fn slice_of(&self, hash: u64) -> SliceOf {
        let count = self.shards.len();
        let value = self.shards[shard_of(hash, count)].get(in_shard(hash, count));
        if value < u64::from(self.slices) {
            SliceOf::One(value as u32)
        } else if value == self.several() {
            SliceOf::Several
        } else {
            SliceOf::Absent
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(i: u64) -> u64 {
        i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x1234_5678
    }

    #[test]
    fn every_key_maps_to_its_slice_and_a_repeated_one_to_several() {
        let mut keys: Vec<(u64, u32)> = (0..100_000u64)
            .map(|i| (hash(i), (i / 4096) as u32))
            .collect();
        keys.push((hash(5), 3)); // key 5 is in slice 0 too
        keys.push((hash(9), 0)); // again in its own slice: still one
        let slices = 25;
        let map = SliceMap::build(keys, slices, &mut Scratch::default()).unwrap();
        assert_eq!(map.several(), 31);
        for i in (0..100_000u64).filter(|&i| i != 5) {
            assert_eq!(
                map.slice_of(hash(i)),
                SliceOf::One((i / 4096) as u32),
                "key {i}"
            );
        }
        assert_eq!(map.slice_of(hash(5)), SliceOf::Several);
        // Of hashes never built in, those valued 25 to 30 are in no slice: about 6 in 32.
        let absent = (1_000_000..1_100_000u64)
            .filter(|&i| map.slice_of(hash(i)) == SliceOf::Absent)
            .count();
        assert!((15_000..22_500).contains(&absent), "{absent} of 100,000");
        let stored = SliceMap::from_parts(slices, map.shards().to_vec()).unwrap();
        assert_eq!(stored, map);
        assert!(SliceMap::from_parts(40, map.shards().to_vec()).is_err());
        assert!(SliceMap::build(vec![(1, 25)], slices, &mut Scratch::default()).is_err());
    }

    #[test]
    fn keys_past_a_shard_are_spread_over_shards() {
        let keys: Vec<(u64, u32)> = (0..(SHARD_KEYS as u64 + 10))
            .map(|i| (hash(i), (i % 3) as u32))
            .collect();
        let map = SliceMap::build(keys, 3, &mut Scratch::default()).unwrap();
        assert_eq!(map.shards().len(), 2);
        assert!((0..1000u64).all(|i| map.slice_of(hash(i)) == SliceOf::One((i % 3) as u32)));
        assert_eq!(width_for(1), 1);
        assert_eq!(width_for(2), 2);
    }
}
