//! Turns one block's column of value hashes into its sidecar entry, choosing the entry kind from
//! the cardinality estimate.

use crate::canonical::ColumnHashes;
use crate::cardinality::estimate_ndv;
use crate::filter;
use crate::hash_sort::sort_by_hash;
use crate::kind::{EntryKind, FilterKind};

/// Up to this many distinct values an exact list of hashes (8 bytes each) is stored: it is about
/// as small as any filter at that size and has no false positives.
pub const EXACT_MAX_KEYS: u64 = 16;

/// One column's index for one block, as written into the sidecar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnIndex {
    pub column: String,
    pub kind: EntryKind,
    pub has_null: bool,
    /// Distinct hashes the entry was built from (the estimate when min/max decides).
    pub key_count: u64,
    /// HyperLogLog estimate of the column's distinct non-null values in the block (exact when
    /// built [`Self::from_distinct`] a locator's keys); planner statistics use it.
    pub ndv_estimate: u64,
    pub payload: Vec<u8>,
}

impl ColumnIndex {
    /// NDV ≤ 1: nothing (min/max decides); a handful: the exact list; otherwise `configured`.
    pub fn build(column: impl Into<String>, configured: FilterKind, hashes: ColumnHashes) -> Self {
        let ColumnHashes {
            hashes: mut keys,
            has_null,
        } = hashes;
        let ndv_estimate = estimate_ndv(&keys);
        if ndv_estimate > 1 {
            // Xor and fuse construction need distinct keys; sorting also makes output reproducible.
            sort_by_hash(&mut keys, |&k| k);
            keys.dedup();
        }
        Self::from_distinct(column, configured, keys, has_null, ndv_estimate)
    }

    /// The entry of a column min/max decides by itself, whatever its distinct values: one that
    /// holds every integer between its min and max.
    pub fn min_max_only(column: impl Into<String>, ndv: u64) -> Self {
        Self {
            column: column.into(),
            kind: EntryKind::MinMaxOnly,
            has_null: false,
            key_count: ndv,
            ndv_estimate: ndv,
            payload: Vec::new(),
        }
    }

    /// [`Self::build`] from the column's distinct hashes, sorted, when the caller has them
    /// already (the locator's keys are).
    pub fn from_distinct(
        column: impl Into<String>,
        configured: FilterKind,
        distinct: Vec<u64>,
        has_null: bool,
        ndv_estimate: u64,
    ) -> Self {
        let chosen = match ndv_estimate {
            0 | 1 => EntryKind::MinMaxOnly,
            n if n <= EXACT_MAX_KEYS => EntryKind::Exact,
            _ => EntryKind::Filter(configured),
        };
        let key_count = if chosen == EntryKind::MinMaxOnly {
            ndv_estimate
        } else {
            distinct.len() as u64
        };
        let (kind, payload) = filter::build(chosen, &distinct, ndv_estimate);
        Self {
            column: column.into(),
            kind,
            has_null,
            key_count,
            ndv_estimate,
            payload,
        }
    }
}
