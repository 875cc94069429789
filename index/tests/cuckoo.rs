//! The cuckoo filter's insert/delete contract: deletes leave no false negatives for the keys that
//! remain, and a failed insert changes nothing.

use proptest::prelude::*;
use sieve_index::filter::{Cuckoo, Full};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn deletes_keep_the_remaining_keys(
        bits in proptest::sample::select(vec![12u32, 16]),
        keys in proptest::collection::btree_set(any::<u64>(), 1..4000),
        delete_mask in proptest::collection::vec(any::<bool>(), 4000),
    ) {
        let keys: Vec<u64> = keys.into_iter().collect();
        let mut filter = Cuckoo::build(bits, &keys, keys.len() as u64);
        let (deleted, kept): (Vec<u64>, Vec<u64>) =
            keys.iter().partition(|&&k| delete_mask[keys.binary_search(&k).unwrap()]);
        for &k in &deleted {
            prop_assert!(filter.delete(k));
        }
        for &k in &kept {
            prop_assert!(filter.contains(k), "lost {k} after deletes");
        }
        // Deleted keys free their slots: re-inserting them fits again.
        for &k in &deleted {
            prop_assert_eq!(filter.insert(k), Ok(()));
        }
        for &k in &keys {
            prop_assert!(filter.contains(k));
        }
    }
}

#[test]
fn a_failed_insert_changes_nothing() {
    for bits in [12, 16] {
        let mut filter = Cuckoo::with_capacity(bits, 64);
        let mut inserted = Vec::new();
        let mut hash = 0x9e37_79b9_7f4a_7c15u64;
        let mut failures = 0;
        for _ in 0..200 {
            hash = hash.wrapping_mul(0x2545_f491_4f6c_dd1d).wrapping_add(1);
            let before = filter.clone().into_bytes();
            match filter.insert(hash) {
                Ok(()) => inserted.push(hash),
                Err(Full) => {
                    failures += 1;
                    assert_eq!(
                        filter.clone().into_bytes(),
                        before,
                        "a failed insert moved keys"
                    );
                }
            }
        }
        assert!(failures > 0, "the filter never filled up");
        assert!(
            inserted.len() >= 56,
            "only {} of 64 slots used",
            inserted.len()
        );
        assert!(inserted.iter().all(|&k| filter.contains(k)));
    }
}

#[test]
fn building_twice_gives_the_same_bytes() {
    let keys: Vec<u64> = (0..50_000u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    let a = Cuckoo::build(12, &keys, 50_000).into_bytes();
    let b = Cuckoo::build(12, &keys, 50_000).into_bytes();
    assert_eq!(a, b);
}

#[test]
fn an_underestimated_cardinality_still_holds_every_key() {
    let keys: Vec<u64> = (0..20_000u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    let filter = Cuckoo::build(16, &keys, 5_000);
    assert!(keys.iter().all(|&k| filter.contains(k)));
}
