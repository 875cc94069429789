//! A filter may say "maybe" wrongly, never "no" wrongly: every kind × every supported type, through
//! the whole path a block takes (hash → choose → build → sidecar bytes → open → probe).

mod common;

use arrow_array::Array;
use proptest::prelude::*;
use sieve_index::filter::{self, ColumnFilter};
use sieve_index::sidecar::{self, Sidecar};
use sieve_index::{ColumnHashes, ColumnIndex, EntryKind, FilterKind};

/// Builds one sidecar with a column per supported type, opens it, and probes every non-null value
/// hashed on its own, the way a literal is.
fn check_every_type(kind: FilterKind, values: &[Option<i64>]) {
    let arrays = common::arrays_of_every_type(values);
    let columns: Vec<ColumnIndex> = arrays
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let hashes = ColumnHashes::from_array(a.as_ref()).unwrap();
            ColumnIndex::build(format!("c{i}"), kind, hashes)
        })
        .collect();
    let sidecar = Sidecar::open(sidecar::encode(&columns).unwrap().into()).unwrap();
    for (i, array) in arrays.iter().enumerate() {
        let column = sidecar.column(&format!("c{i}")).unwrap();
        assert_eq!(column.has_null, array.null_count() > 0);
        for row in (0..array.len()).filter(|&r| array.is_valid(r)) {
            let literal = ColumnHashes::from_array(array.slice(row, 1).as_ref()).unwrap();
            assert!(
                column.may_contain(literal.hashes[0]),
                "{kind} ({:?}) on {} lost row {row}",
                column.kind,
                array.data_type(),
            );
        }
    }
}

fn values(max_len: usize) -> impl Strategy<Value = Vec<Option<i64>>> {
    proptest::collection::vec(proptest::option::weighted(0.9, any::<i64>()), 0..max_len)
}

fn kind() -> impl Strategy<Value = FilterKind> {
    proptest::sample::select(FilterKind::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Mostly-distinct values: the configured filter kind is built.
    #[test]
    fn no_false_negatives_any_kind_any_type(kind in kind(), values in values(400)) {
        check_every_type(kind, &values);
    }

    /// Few distinct values: the min/max-only and exact entries.
    #[test]
    fn no_false_negatives_few_distinct(kind in kind(), values in proptest::collection::vec(
        proptest::option::of(-3i64..3), 0..60)) {
        check_every_type(kind, &values);
    }

    /// Each filter directly, on key sets of every size, including tiny ones the chooser would
    /// never give it (where binary fuse construction may fall back to xor).
    #[test]
    fn no_false_negatives_forced_filters(kind in kind(), keys in proptest::collection::btree_set(any::<u64>(), 1..3000)) {
        let keys: Vec<u64> = keys.into_iter().collect();
        let (built, payload) = filter::build(EntryKind::Filter(kind), &keys, keys.len() as u64);
        let filter = ColumnFilter::open(built, keys.len() as u64, aligned(payload)).unwrap();
        for &k in &keys {
            prop_assert!(filter.may_contain(k), "{kind} lost {k}");
        }
    }
}

/// A Vec<u8>'s allocation is 8-aligned on every allocator Sieve runs on; this asserts it.
fn aligned(payload: Vec<u8>) -> bytes::Bytes {
    let bytes = bytes::Bytes::from(payload);
    assert_eq!(bytes.as_ptr().align_offset(8), 0);
    bytes
}

#[test]
fn the_chooser_picks_by_distinct_count() {
    let build = |values: Vec<i64>| {
        let hashes = ColumnHashes::from_array(&arrow_array::Int64Array::from(values)).unwrap();
        ColumnIndex::build("c", FilterKind::BinaryFuse8, hashes)
    };
    let one = build(vec![7; 1000]);
    assert_eq!(
        (one.kind, one.ndv_estimate, one.payload.len()),
        (EntryKind::MinMaxOnly, 1, 0)
    );
    let few = build((0..1000).map(|i| i % 5).collect());
    assert_eq!(
        (few.kind, few.key_count, few.ndv_estimate),
        (EntryKind::Exact, 5, 5)
    );
    let many = build((0..1000).collect());
    assert_eq!(
        (many.kind, many.key_count),
        (EntryKind::Filter(FilterKind::BinaryFuse8), 1000)
    );
    assert!(
        many.ndv_estimate.abs_diff(1000) <= 20,
        "{}",
        many.ndv_estimate
    );
    let empty = build(vec![]);
    assert_eq!((empty.kind, empty.ndv_estimate), (EntryKind::MinMaxOnly, 0));
}
