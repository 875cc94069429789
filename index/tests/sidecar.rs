//! The sidecar format: round trip, reproducible bytes, and strict opening (a damaged file is an
//! error, never a panic and never a filter that could say "no" wrongly).

use arrow_array::{BooleanArray, Int64Array, StringArray};
use bytes::Bytes;
use proptest::prelude::*;
use sieve_index::sidecar::{self, KeyChanges, MAGIC, Sidecar, VERSION};
use sieve_index::{ColumnHashes, ColumnIndex, EntryKind, FilterKind, IndexError, SidecarHeader};
use xxhash_rust::xxh3::xxh3_64;

fn column(name: &str, kind: FilterKind, array: &dyn arrow_array::Array) -> ColumnIndex {
    ColumnIndex::build(name, kind, ColumnHashes::from_array(array).unwrap())
}

/// A sidecar with one column of every entry kind.
fn sample_columns() -> Vec<ColumnIndex> {
    let numbers = Int64Array::from_iter_values(0..300);
    let mut columns: Vec<ColumnIndex> = FilterKind::ALL
        .iter()
        .map(|&k| column(&format!("c_{k}"), k, &numbers))
        .collect();
    columns.push(column(
        "flag",
        FilterKind::BinaryFuse8,
        &BooleanArray::from(vec![Some(true), None, Some(false)]),
    ));
    columns.push(column(
        "constant",
        FilterKind::BinaryFuse8,
        &StringArray::from(vec!["x"; 10]),
    ));
    columns
}

fn sample() -> Vec<u8> {
    sidecar::encode(&sample_columns()).unwrap()
}

#[test]
fn round_trip_keeps_every_entry_and_probes_alike() {
    let columns = sample_columns();
    let kinds: Vec<EntryKind> = columns.iter().map(|c| c.kind).collect();
    assert!(kinds.contains(&EntryKind::Exact) && kinds.contains(&EntryKind::MinMaxOnly));
    let opened = Sidecar::open(sidecar::encode(&columns).unwrap().into()).unwrap();
    assert_eq!(opened.columns().len(), columns.len());
    for (built, open) in columns.iter().zip(opened.columns()) {
        assert_eq!(
            (
                &built.column,
                built.kind,
                built.has_null,
                built.key_count,
                built.ndv_estimate
            ),
            (
                &open.column,
                open.kind,
                open.has_null,
                open.key_count,
                open.ndv_estimate
            )
        );
        assert_eq!(open.payload_len, built.payload.len() as u64);
    }
    let present = ColumnHashes::from_array(&Int64Array::from(vec![42]))
        .unwrap()
        .hashes[0];
    for kind in FilterKind::ALL {
        assert!(
            opened
                .column(&format!("c_{kind}"))
                .unwrap()
                .may_contain(present)
        );
    }
    assert!(opened.column("missing").is_none());
}

#[test]
fn indexing_the_same_block_twice_gives_identical_bytes() {
    assert_eq!(sample(), sample());
}

#[test]
fn a_boolean_or_two_value_column_costs_at_most_64_bytes() {
    let base = vec![column(
        "id",
        FilterKind::BinaryFuse8,
        &Int64Array::from_iter_values(0..1000),
    )];
    let without = sidecar::encode(&base).unwrap().len();
    for extra in [
        column(
            "b",
            FilterKind::BinaryFuse8,
            &BooleanArray::from(vec![true, false, true]),
        ),
        column(
            "s",
            FilterKind::BinaryFuse16,
            &StringArray::from(vec!["yes", "no", "no"]),
        ),
    ] {
        let mut columns = base.clone();
        columns.push(extra);
        let cost = sidecar::encode(&columns).unwrap().len() - without;
        assert!(cost <= 64, "a two-value column costs {cost} bytes");
    }
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = sample();
    for len in 0..bytes.len() {
        let error = Sidecar::open(Bytes::copy_from_slice(&bytes[..len])).unwrap_err();
        assert!(
            matches!(error, IndexError::Truncated(_) | IndexError::BadMagic),
            "truncated to {len}: {error}"
        );
    }
}

#[test]
fn every_flipped_byte_is_an_error() {
    let bytes = sample();
    for i in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[i] ^= 0x5a;
        assert!(
            Sidecar::open(damaged.into()).is_err(),
            "flipping byte {i} went unnoticed"
        );
    }
}

#[test]
fn unknown_version_and_magic_are_named() {
    let mut bytes = sample();
    bytes[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
    assert_eq!(
        Sidecar::open(bytes.clone().into()).unwrap_err(),
        IndexError::UnsupportedVersion(VERSION + 1, VERSION)
    );
    bytes[0] = b'X';
    assert_eq!(
        Sidecar::open(bytes.into()).unwrap_err(),
        IndexError::BadMagic
    );
}

#[test]
fn opens_from_an_unaligned_buffer() {
    let bytes = sample();
    let mut shifted = vec![0u8];
    shifted.extend_from_slice(&bytes);
    let shifted = Bytes::from(shifted).slice(1..);
    assert_ne!(shifted.as_ptr().align_offset(8), 0);
    let opened = Sidecar::open(shifted).unwrap();
    let present = ColumnHashes::from_array(&Int64Array::from(vec![7]))
        .unwrap()
        .hashes[0];
    assert!(
        opened
            .column("c_binary_fuse16")
            .unwrap()
            .may_contain(present)
    );
}

/// Rewrites the header checksum and every entry checksum, so damage reaches the structural
/// checks behind them.
fn fix_checksums(bytes: &mut [u8]) {
    let word = |b: &[u8], at: usize, n: usize| -> Option<usize> {
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(b.get(at..at + n)?);
        usize::try_from(u64::from_le_bytes(le)).ok()
    };
    let Some(count) = word(bytes, 12, 4) else {
        return;
    };
    let mut names = 0usize;
    for c in 0..count {
        let record = 16 + 40 * c;
        let (Some(name_len), Some(len), Some(offset)) = (
            word(bytes, record + 2, 2),
            word(bytes, record + 4, 4),
            word(bytes, record + 24, 8),
        ) else {
            return;
        };
        names += name_len;
        if let Some(payload) = offset
            .checked_add(len)
            .and_then(|end| bytes.get(offset..end))
        {
            let sum = xxh3_64(payload).to_le_bytes();
            bytes[record + 32..record + 40].copy_from_slice(&sum);
        }
    }
    let header_end = 16 + 40 * count + names.div_ceil(8) * 8 + 8;
    if header_end <= bytes.len() {
        let sum = xxh3_64(&bytes[..header_end - 8]).to_le_bytes();
        bytes[header_end - 8..header_end].copy_from_slice(&sum);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = Sidecar::open(bytes.into());
    }

    #[test]
    fn arbitrary_bytes_after_a_valid_preamble_never_panic(
        count in 0u32..4, rest in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.extend_from_slice(&count.to_le_bytes());
        bytes.extend_from_slice(&rest);
        let _ = Sidecar::open(bytes.into());
    }

    /// Damage with valid checksums: whatever opens must still probe without panicking.
    #[test]
    fn damaged_structure_never_panics(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6), probes in proptest::collection::vec(any::<u64>(), 64)) {
        let mut bytes = sample();
        for (at, value) in edits {
            let at = at % bytes.len();
            bytes[at] = value;
        }
        fix_checksums(&mut bytes);
        if let Ok(opened) = Sidecar::open(bytes.into()) {
            for column in opened.columns() {
                for &h in &probes {
                    let _ = column.may_contain(h);
                }
            }
        }
    }
}

#[test]
fn one_entry_opens_from_the_header_and_its_own_bytes() {
    let bytes = Bytes::from(sample());
    let whole = Sidecar::open(bytes.clone()).unwrap();
    let header = SidecarHeader::parse(&bytes).unwrap();
    assert_eq!(header.file_len(), bytes.len());
    // Any prefix holding the header parses alike; a shorter one is truncated, never wrong.
    for len in 0..header.byte_len() {
        let error = SidecarHeader::parse(&bytes[..len]).unwrap_err();
        assert!(
            matches!(error, IndexError::Truncated(_) | IndexError::BadMagic),
            "prefix {len}: {error}"
        );
    }
    let prefix = SidecarHeader::parse(&bytes[..header.byte_len()]).unwrap();
    let keys: Vec<u64> = ColumnHashes::from_array(&Int64Array::from_iter_values(-50..350))
        .unwrap()
        .hashes;
    for within in whole.columns() {
        let entry = prefix.entry(&within.column).unwrap();
        // Copied out, as a ranged read hands it over: alignment is the reader's job.
        let alone = entry
            .open(Bytes::copy_from_slice(&bytes[entry.range()]))
            .unwrap();
        assert_eq!(
            (alone.kind, alone.key_count),
            (within.kind, within.key_count)
        );
        assert!(
            keys.iter()
                .all(|&k| alone.may_contain(k) == within.may_contain(k))
        );
        let range = entry.range();
        if !range.is_empty() {
            let mut damaged = bytes[range.clone()].to_vec();
            damaged[0] ^= 1;
            let error = entry.open(damaged.into()).unwrap_err();
            assert!(
                matches!(error, IndexError::Corrupt(_)),
                "{}: {error}",
                within.column
            );
            let short = Bytes::copy_from_slice(&bytes[range.start..range.end - 1]);
            let error = entry.open(short).unwrap_err();
            assert!(
                matches!(error, IndexError::Truncated(_)),
                "{}: {error}",
                within.column
            );
        }
    }
    assert!(prefix.entry("missing").is_none());
}

/// A DELETE's new sidecar: the cuckoo entries forget the keys given, other filters are rebuilt
/// from the live keys once enough are stale, every live key stays, and a damaged sidecar is
/// refused rather than rewritten.
#[test]
fn forgetting_keys_removes_them_from_cuckoo_entries_only() {
    let hashes = |values: std::ops::Range<i64>| {
        ColumnHashes::from_array(&Int64Array::from_iter_values(values))
            .unwrap()
            .hashes
    };
    let bytes = Bytes::from(sample());
    let changes = |fraction: f64| {
        let changes: Vec<KeyChanges> = FilterKind::ALL
            .iter()
            .map(|k| KeyChanges {
                column: format!("c_{k}"),
                forgotten: hashes(0..150),
                live: hashes(150..300),
            })
            .collect();
        let rewritten =
            sidecar::rewrite(bytes.clone(), &changes, fraction, FilterKind::Xor8).unwrap();
        Sidecar::open(rewritten.unwrap().into()).unwrap()
    };
    // Half the keys are stale: under the threshold only cuckoo entries change.
    let after = changes(0.6);
    let before = Sidecar::open(bytes.clone()).unwrap();
    assert_eq!(before.columns().len(), after.columns().len());
    let numbers = before.columns().iter().zip(after.columns());
    for (old, new) in numbers.filter(|(old, _)| old.column.starts_with("c_")) {
        assert!(
            hashes(150..300).iter().all(|&h| new.may_contain(h)),
            "{}",
            new.column
        );
        let still = hashes(0..150)
            .iter()
            .filter(|&&h| new.may_contain(h))
            .count();
        match new.kind {
            EntryKind::Filter(FilterKind::Cuckoo12 | FilterKind::Cuckoo16) => {
                // Only a false positive of a remaining key answers "maybe" now.
                assert!(
                    still <= 3,
                    "{}: {still} of 150 forgotten keys remain",
                    new.column
                );
                assert_eq!(new.key_count, old.key_count - 150);
            }
            _ => {
                assert_eq!(still, 150, "{} cannot forget", new.column);
                assert_eq!(new.key_count, old.key_count);
            }
        }
    }
    // At the threshold every filter is built again from the live keys: it forgets them too.
    let rebuilt = changes(0.5);
    for new in rebuilt
        .columns()
        .iter()
        .filter(|c| c.column.starts_with("c_"))
    {
        assert!(hashes(150..300).iter().all(|&h| new.may_contain(h)));
        let still = hashes(0..150)
            .iter()
            .filter(|&&h| new.may_contain(h))
            .count();
        assert!(
            still <= 15,
            "{}: {still} of 150 stale keys remain",
            new.column
        );
    }
    // Nothing forgotten, nothing stale: no new sidecar.
    let none = [KeyChanges {
        column: "c_binary_fuse8".into(),
        forgotten: Vec::new(),
        live: hashes(0..300),
    }];
    assert!(
        sidecar::rewrite(bytes.clone(), &none, 0.1, FilterKind::Xor8)
            .unwrap()
            .is_none()
    );
    let mut damaged = bytes.to_vec();
    let last = damaged.len() - 9;
    damaged[last] ^= 1;
    let error = sidecar::rewrite(Bytes::from(damaged), &none, 0.1, FilterKind::Xor8).unwrap_err();
    assert!(matches!(error, IndexError::Corrupt(_)), "{error}");
}

/// A `minmax` entry of a column that held every integer of its range becomes a filter of the
/// table's kind built from the live keys once a DELETE leaves gaps: at once for a kind that
/// forgets (cuckoo), once stale enough for the others; one of a single value stays as it is.
#[test]
fn a_dense_column_gets_a_filter_once_deletes_leave_gaps() {
    let hashes = |values: std::ops::Range<i64>| {
        ColumnHashes::from_array(&Int64Array::from_iter_values(values))
            .unwrap()
            .hashes
    };
    let entries = [
        ColumnIndex::min_max_only("n", 300),
        ColumnIndex::min_max_only("one", 1),
    ];
    let bytes = Bytes::from(sidecar::encode(&entries).unwrap());
    let changes: Vec<KeyChanges> = ["n", "one"]
        .iter()
        .map(|column| KeyChanges {
            column: column.to_string(),
            forgotten: hashes(0..100),
            live: hashes(100..300),
        })
        .collect();
    let rewrite = |fraction: f64, kind: FilterKind| {
        sidecar::rewrite(bytes.clone(), &changes, fraction, kind)
            .unwrap()
            .map(|b| Sidecar::open(b.into()).unwrap())
    };
    // A third of the keys stale: a fuse table waits, a cuckoo table forgets them now.
    assert!(rewrite(0.5, FilterKind::BinaryFuse8).is_none());
    for (fraction, kind) in [(0.5, FilterKind::Cuckoo12), (0.3, FilterKind::BinaryFuse8)] {
        let after = rewrite(fraction, kind).unwrap();
        let n = after.column("n").unwrap();
        assert_eq!((n.kind, n.key_count), (EntryKind::Filter(kind), 200));
        assert!(hashes(100..300).iter().all(|&h| n.may_contain(h)));
        let still = hashes(0..100).iter().filter(|&&h| n.may_contain(h)).count();
        assert!(still <= 3, "{kind}: {still} of 100 deleted keys remain");
        assert_eq!(after.column("one").unwrap().kind, EntryKind::MinMaxOnly);
    }
}
