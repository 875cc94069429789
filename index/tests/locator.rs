//! The locator may name a place wrongly, never miss one: every key of every block is found in
//! its block and slice (or a wider answer that covers them), over random group sizes, keys
//! repeated within and across blocks, and fingerprints from 1 to many bits.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use sieve_index::Location;
use sieve_index::locator::{self, LocatorHeader, SLICE_ROWS, fingerprint_bits};

/// Per block, (key, row) pairs: keys from a small domain so they repeat.
fn groups() -> impl Strategy<Value = (Vec<Vec<(u64, u32)>>, u32, u64)> {
    let slices = 1u32..5;
    (slices, 1u64..10_000).prop_flat_map(|(slices, ordinal)| {
        let block = prop::collection::vec((0u64..400, 0..slices * SLICE_ROWS), 0..300);
        (
            prop::collection::vec(block, 1..12),
            Just(slices),
            Just(ordinal),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_key_is_found_where_it_is((blocks, slices, ordinal) in groups()) {
        // Hash the small keys so they spread over shards and windows.
        let hash = |k: u64| sieve_index::hash::hash_bytes(&k.to_le_bytes());
        let per_block: Vec<Vec<(u64, u32)>> = blocks
            .iter()
            .map(|pairs| {
                let hashes: Vec<u64> = pairs.iter().map(|p| hash(p.0)).collect();
                let rows: Vec<u32> = pairs.iter().map(|p| p.1).collect();
                locator::block_keys(&hashes, &rows, SLICE_ROWS)
            })
            .collect();
        let file = locator::build(&[("c", per_block)], SLICE_ROWS, slices, fingerprint_bits(ordinal, 0.01)).unwrap();
        let header = LocatorHeader::parse(&file).unwrap();
        let column = header.column("c").unwrap();
        let mut places: BTreeMap<u64, BTreeSet<(u32, u32)>> = BTreeMap::new();
        for (b, pairs) in blocks.iter().enumerate() {
            for &(key, row) in pairs {
                places.entry(key).or_default().insert((b as u32, row / SLICE_ROWS));
            }
        }
        for (key, at) in places {
            let range = header.lookup_range(column, hash(key));
            let bytes = &file[range.start as usize..range.end as usize];
            let found = header.locate(column, hash(key), bytes).unwrap();
            let covered = at.iter().all(|&(block, slice)| match found {
                Location::Absent => false,
                Location::Slice { block: b, slice: s } => (b, s) == (block, slice),
                Location::Block(b) => b == block,
                Location::Blocks => true,
            });
            prop_assert!(covered, "key {key} in {at:?}, locator said {found:?}");
        }
    }
}

/// The fingerprint keeps absent keys out at about the rate the budget allows.
#[test]
fn absent_keys_rarely_match() {
    let hash = |k: u64| sieve_index::hash::hash_bytes(&k.to_le_bytes());
    let keys: Vec<u64> = (0..200_000u64).map(hash).collect();
    let rows: Vec<u32> = (0..200_000u32).map(|r| r % (4 * SLICE_ROWS)).collect();
    let file = locator::build(
        &[("c", vec![locator::block_keys(&keys, &rows, SLICE_ROWS)])],
        SLICE_ROWS,
        4,
        fingerprint_bits(1, 0.01),
    )
    .unwrap();
    let header = LocatorHeader::parse(&file).unwrap();
    let column = header.column("c").unwrap();
    let probes = 200_000u64;
    let matched = (1_000_000..1_000_000 + probes)
        .map(hash)
        .filter(|&h| {
            let r = header.lookup_range(column, h);
            header
                .locate(column, h, &file[r.start as usize..r.end as usize])
                .unwrap()
                != Location::Absent
        })
        .count();
    // The first group's budget is 0.005 (8 fingerprint bits: 1/256 at most).
    assert!(
        (matched as f64) / (probes as f64) < 0.006,
        "{matched} of {probes}"
    );
}

/// More keys than one shard holds: each key is still looked up in the shard it was built into.
#[test]
fn keys_across_shards_are_found() {
    let n = locator::SHARD_KEYS as u64 + 200_000;
    let hashes: Vec<u64> = (0..n)
        .map(|k| sieve_index::hash::hash_bytes(&k.to_le_bytes()))
        .collect();
    let rows: Vec<u32> = (0..n as u32).map(|r| r % (3 * SLICE_ROWS)).collect();
    let (first, second) = hashes.split_at(hashes.len() / 2);
    let blocks = vec![
        locator::block_keys(first, &rows[..first.len()], SLICE_ROWS),
        locator::block_keys(second, &rows[first.len()..], SLICE_ROWS),
    ];
    let file = locator::build(&[("c", blocks)], SLICE_ROWS, 3, fingerprint_bits(7, 0.01)).unwrap();
    let header = LocatorHeader::parse(&file).unwrap();
    let column = header.column("c").unwrap();
    assert_eq!(column.shards.len(), 2);
    for (i, &h) in hashes.iter().enumerate() {
        let r = header.lookup_range(column, h);
        let found = header
            .locate(column, h, &file[r.start as usize..r.end as usize])
            .unwrap();
        let block = u32::from(i >= first.len());
        let slice = rows[i] / SLICE_ROWS;
        assert_eq!(found, Location::Slice { block, slice }, "key {i}");
    }
}
