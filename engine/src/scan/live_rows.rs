//! Which rows of a block a reader asks Parquet for: the slices the locator named (or all), less
//! the rows DELETEs removed ([`sieve_storage::BlockList::deleted`]). Scans skip deleted rows by
//! never decoding them, and a DELETE maps the rows it reads back to their positions through the
//! same ranges.

use std::collections::BTreeSet;
use std::ops::Range;

use sieve_storage::{BlockList, RoaringBitmap};

/// The live row ranges of block `i` within `slices` (as its locator group cuts it), in order;
/// None when that is the whole block (no slices chosen and nothing deleted).
pub fn live_ranges(
    blocks: &BlockList,
    i: usize,
    slices: Option<&BTreeSet<u32>>,
) -> Option<Vec<Range<usize>>> {
    let rows = blocks.rows().value(i) as usize;
    let sliced = slices.map(|s| (s, blocks.slice_rows(i)));
    ranges(rows, sliced, blocks.deleted(i))
}

/// The rows of `wanted` (sorted ranges) that `deleted` leaves, in order: the rows of an
/// attached table's file an index left to read, less its deletes.
pub fn live_within(
    wanted: Vec<Range<usize>>,
    deleted: Option<&RoaringBitmap>,
) -> Vec<Range<usize>> {
    let mut live = Vec::with_capacity(wanted.len());
    for range in wanted {
        let mut start = range.start;
        // Only the deleted rows within the range: a lookup reads one slice of a block whose
        // deletion vector may hold a million rows.
        let within = deleted.map(|d| d.range(range.start as u32..range.end as u32));
        for row in within.into_iter().flatten() {
            let row = row as usize;
            if row > start {
                live.push(start..row);
            }
            start = row + 1;
        }
        if start < range.end {
            live.push(start..range.end);
        }
    }
    live
}

/// The live row ranges of `rows` rows within `slices` of the given rows each, less `deleted`.
fn ranges(
    rows: usize,
    slices: Option<(&BTreeSet<u32>, u32)>,
    deleted: Option<&RoaringBitmap>,
) -> Option<Vec<Range<usize>>> {
    if slices.is_none() && deleted.is_none_or(RoaringBitmap::is_empty) {
        return None;
    }
    let wanted: Vec<Range<usize>> = match slices {
        Some((slices, slice_rows)) => slices
            .iter()
            .map(|&s| {
                let slice = slice_rows as usize;
                let start = (s as usize * slice).min(rows);
                start..(start + slice).min(rows)
            })
            .collect(),
        None => std::iter::once(0..rows).collect(),
    };
    Some(live_within(wanted, deleted))
}

/// Row positions in a block, in the order a scan of [`live_ranges`] returns its rows.
pub struct Positions {
    ranges: std::vec::IntoIter<Range<usize>>,
    current: Range<usize>,
}

impl Positions {
    pub fn new(ranges: Vec<Range<usize>>) -> Self {
        Self {
            ranges: ranges.into_iter(),
            current: 0..0,
        }
    }
}

impl Iterator for Positions {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        loop {
            if let Some(row) = self.current.next() {
                return Some(row);
            }
            self.current = self.ranges.next()?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deleted_rows_are_cut_out_of_the_slices() {
        let deleted = RoaringBitmap::from_iter([0u32, 5, 6, 8191, 8192, 9000, 20_000]);
        assert_eq!(ranges(10, None, Some(&deleted)), Some(vec![1..5, 7..10]));
        let slices = BTreeSet::from([0u32, 1]);
        assert_eq!(
            ranges(10_000, Some((&slices, 8192)), Some(&deleted)),
            Some(vec![1..5, 7..8191, 8193..9000, 9001..10_000])
        );
        let slices = BTreeSet::from([1u32, 4]);
        assert_eq!(
            ranges(20_000, Some((&slices, 4096)), Some(&deleted)),
            Some(vec![4096..8191, 16_384..20_000])
        );
        assert_eq!(ranges(10, None, None), None);
        assert_eq!(ranges(10, None, Some(&RoaringBitmap::new())), None);
        let all = RoaringBitmap::from_iter(0u32..10);
        assert_eq!(ranges(10, None, Some(&all)), Some(vec![]));
        let positions: Vec<usize> = Positions::new(vec![1..3, 7..9]).collect();
        assert_eq!(positions, [1, 2, 7, 8]);
    }
}
