//! Measured false-positive rates match each kind's expected rate within 1.25×, on at least 1M
//! absent keys and enough of them to expect ≥ 400 false positives, so a 1.25× deviation is five
//! standard deviations. Keys come from fixed seeds, so a run is reproducible.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sieve_index::filter::{self, ColumnFilter, bloom_expected_fpr, cuckoo_expected_fpr};
use sieve_index::{EntryKind, FilterKind};

const KEYS: usize = 200_000;

fn expected(filter: &ColumnFilter, keys: u64, payload_len: usize) -> f64 {
    match filter {
        ColumnFilter::Xor8(_) | ColumnFilter::BinaryFuse8 { .. } => 1.0 / 256.0,
        ColumnFilter::Xor16(_) | ColumnFilter::BinaryFuse16 { .. } => 1.0 / 65536.0,
        ColumnFilter::Cuckoo(c) => {
            let load = c.occupied_slots() as f64 / (4 * c.bucket_count()) as f64;
            cuckoo_expected_fpr(c.fingerprint_bits(), load)
        }
        ColumnFilter::Bloom(_) => bloom_expected_fpr(keys, payload_len),
        other => unreachable!("{other:?} is not a filter"),
    }
}

fn check(kind: FilterKind) {
    let mut rng = StdRng::seed_from_u64(0x5133_7e5e);
    let mut keys: Vec<u64> = (0..KEYS).map(|_| rng.random()).collect();
    keys.sort_unstable();
    keys.dedup();
    let (built, payload) = filter::build(EntryKind::Filter(kind), &keys, keys.len() as u64);
    assert_eq!(built, EntryKind::Filter(kind));
    let payload_len = payload.len();
    let filter = ColumnFilter::open(built, keys.len() as u64, payload.into()).unwrap();
    let expected = expected(&filter, keys.len() as u64, payload_len);
    let probes = ((400.0 / expected) as u64).max(1_000_000);

    let mut false_positives = 0u64;
    let mut absent = 0u64;
    while absent < probes {
        let k: u64 = rng.random();
        if keys.binary_search(&k).is_err() {
            absent += 1;
            false_positives += u64::from(filter.may_contain(k));
        }
    }
    let measured = false_positives as f64 / absent as f64;
    let bits_per_key = payload_len as f64 * 8.0 / keys.len() as f64;
    println!(
        "{kind}: {bits_per_key:.2} bits/key, FPR {:.5}% measured over {absent} absent keys, {:.5}% expected",
        measured * 100.0,
        expected * 100.0
    );
    assert!(
        measured <= expected * 1.25 && measured >= expected / 1.25,
        "{kind}: measured FPR {measured} vs expected {expected}"
    );
}

#[test]
fn xor8() {
    check(FilterKind::Xor8);
}

#[test]
fn xor16() {
    check(FilterKind::Xor16);
}

#[test]
fn binary_fuse8() {
    check(FilterKind::BinaryFuse8);
}

#[test]
fn binary_fuse16() {
    check(FilterKind::BinaryFuse16);
}

#[test]
fn cuckoo12() {
    check(FilterKind::Cuckoo12);
}

#[test]
fn cuckoo16() {
    check(FilterKind::Cuckoo16);
}

#[test]
fn bloom() {
    check(FilterKind::Bloom);
}
