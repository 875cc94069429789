//! A filter of the keys a locator group holds, for a coordinator deciding which workers to ask
//! (Mosharraf & Adnan's node filters): the locator's rows with their slot bits dropped and their
//! fingerprints cut to at most [`KEY_FILTER_BITS`]. The locator's values are `fingerprint << s |
//! slot`, and its retrieval is linear bit by bit ([`Retrieval::high_bits`]), so the top bits of
//! its rows retrieve the top bits of every key's fingerprint: a key filter is derived from the
//! index already written, never from the data, and never needs rebuilding, since a group's
//! locator is immutable. It has no false negatives (a key of the group always matches) and an
//! absent key matches with probability 2^-bits.

use std::ops::Range;
use std::sync::Arc;

use crate::error::IndexError;
use crate::locator::{ColumnLocator, LocatorHeader, corrupt, fingerprint, in_shard, shard_of};
use crate::retrieval::Retrieval;

/// Fingerprint bits a key filter keeps at most: 2^-16 false matches per group per absent key,
/// so 1000 groups (a thousand small commits not merged yet, or 128 billion rows in a write's
/// groups) ask a worker needlessly for 1.5% of absent keys, at about 17.5 bits per key.
pub const KEY_FILTER_BITS: u8 = 16;

struct ColumnKeys {
    column: String,
    bits: u8,
    shards: Vec<Retrieval>,
}

/// Every indexed column's key filter for one locator group.
pub struct KeyFilter {
    columns: Vec<ColumnKeys>,
}

impl KeyFilter {
    fn bits(column: &ColumnLocator) -> u8 {
        column.fingerprint_bits.min(KEY_FILTER_BITS)
    }

    /// What [`Self::bytes`] will be for the locator `header` describes, known before its file
    /// is read: a coordinator bounding its node filters' memory decides from this.
    pub fn planned_bytes(header: &LocatorHeader) -> usize {
        header
            .columns
            .iter()
            .flat_map(|c| c.shards.iter().map(|s| s.geometry.narrowed(Self::bits(c))))
            .map(|g| g.byte_len())
            .sum()
    }

    /// Whether the group may hold `hash` in `column`; None if the locator does not index it.
    pub fn may_contain(&self, column: &str, hash: u64) -> Option<bool> {
        let c = self.columns.iter().find(|c| c.column == column)?;
        let count = c.shards.len();
        let value = c.shards[shard_of(hash, count)].get(in_shard(hash, count));
        Some(value == fingerprint(hash, c.bits))
    }

    /// Bytes held in memory.
    pub fn bytes(&self) -> usize {
        self.columns
            .iter()
            .flat_map(|c| &c.shards)
            .map(|s| s.cells().len())
            .sum()
    }
}

/// Builds a [`KeyFilter`] a few shards at a time: a merged group's locator file (hundreds of MB
/// from tier 1 up) is never in memory whole, only the shards of one read. [`Self::next_read`]
/// names the file range holding the next shards, [`Self::add`] reduces its bytes.
pub struct KeyFilterBuilder {
    header: Arc<LocatorHeader>,
    columns: Vec<ColumnKeys>,
    /// Every shard as (column, shard), in file order; the next to reduce is `done`.
    order: Vec<(usize, usize)>,
    done: usize,
    /// Shards the range [`Self::next_read`] named last holds.
    pending: usize,
}

impl KeyFilterBuilder {
    pub fn new(header: Arc<LocatorHeader>) -> Self {
        let columns = header
            .columns
            .iter()
            .map(|c| ColumnKeys {
                column: c.column.clone(),
                bits: KeyFilter::bits(c),
                shards: Vec::with_capacity(c.shards.len()),
            })
            .collect();
        let order = (header.columns.iter().enumerate())
            .flat_map(|(c, column)| (0..column.shards.len()).map(move |s| (c, s)))
            .collect();
        Self {
            header,
            columns,
            order,
            done: 0,
            pending: 0,
        }
    }

    fn range(&self, (c, s): (usize, usize)) -> Range<u64> {
        self.header.shard_range(&self.header.columns[c].shards[s])
    }

    /// The file range of the next shards, adjacent in the file and at most `max_bytes` unless
    /// one shard is larger; None once every shard is added.
    pub fn next_read(&mut self, max_bytes: u64) -> Option<Range<u64>> {
        let mut range = self.range(*self.order.get(self.done)?);
        self.pending = 1;
        while let Some(&next) = self.order.get(self.done + self.pending) {
            let next = self.range(next);
            if next.start != range.end || next.end - range.start > max_bytes {
                break;
            }
            range.end = next.end;
            self.pending += 1;
        }
        Some(range)
    }

    /// Reduces the shards in `bytes`, the range [`Self::next_read`] named; fails if a page is
    /// damaged.
    pub fn add(&mut self, bytes: &[u8]) -> Result<(), IndexError> {
        let mut offset = 0;
        for &(c, s) in &self.order[self.done..self.done + self.pending] {
            let shard = &self.header.columns[c].shards[s];
            let range = self.header.shard_range(shard);
            let len = (range.end - range.start) as usize;
            let part = (bytes.get(offset..offset + len))
                .ok_or_else(|| corrupt("a read is shorter than its shards"))?;
            let rows = self.header.shard_rows(shard, part)?;
            let whole = Retrieval::from_parts(shard.geometry, rows)?;
            let column = &mut self.columns[c];
            column.shards.push(whole.high_bits(column.bits));
            offset += len;
        }
        self.done += self.pending;
        self.pending = 0;
        Ok(())
    }

    /// The filter, once [`Self::next_read`] returned None.
    pub fn finish(self) -> KeyFilter {
        debug_assert_eq!(self.done, self.order.len(), "shards left to add");
        KeyFilter {
            columns: self.columns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locator::{PAGE, SLICE_ROWS, block_keys, build, fingerprint_bits};

    /// Reads `file` `max_bytes` at a time (or a shard, if larger), as a coordinator does.
    fn from_locator(
        header: &LocatorHeader,
        file: &[u8],
        max_bytes: u64,
    ) -> Result<KeyFilter, IndexError> {
        let mut builder = KeyFilterBuilder::new(Arc::new(header.clone()));
        let mut reads = 0;
        while let Some(range) = builder.next_read(max_bytes) {
            reads += 1;
            builder.add(&file[range.start as usize..range.end as usize])?;
        }
        // One column's shard, or both columns' in one read.
        assert_eq!(reads, if max_bytes == u64::MAX { 1 } else { 2 });
        Ok(builder.finish())
    }

    #[test]
    fn every_key_of_the_group_matches_and_few_others_do() {
        let hashes: Vec<u64> = (0..20_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x1234)
            .collect();
        // Two blocks sharing some keys, two columns.
        let rows: Vec<u32> = (0..10_000).collect();
        let b0 = block_keys(&hashes[..10_000], &rows, SLICE_ROWS);
        let b1 = block_keys(&hashes[5_000..15_000], &rows, SLICE_ROWS);
        let other = block_keys(&hashes[..10_000], &rows, SLICE_ROWS);
        let file = build(
            &[("a", vec![b0, b1]), ("b", vec![other, vec![]])],
            SLICE_ROWS,
            10_000u32.div_ceil(SLICE_ROWS),
            // A late group: the locator's fingerprints are wider than a key filter keeps.
            fingerprint_bits(1000, 0.01),
        )
        .unwrap();
        let header = LocatorHeader::parse(&file).unwrap();
        assert!(header.column("a").unwrap().fingerprint_bits > KEY_FILTER_BITS);
        let filter = from_locator(&header, &file, u64::MAX).unwrap();
        let by_shard = from_locator(&header, &file, PAGE as u64).unwrap();
        for &h in &hashes {
            assert_eq!(filter.may_contain("a", h), by_shard.may_contain("a", h));
            assert_eq!(filter.may_contain("b", h), by_shard.may_contain("b", h));
        }
        for &h in &hashes[..15_000] {
            assert_eq!(filter.may_contain("a", h), Some(true));
        }
        for &h in &hashes[..10_000] {
            assert_eq!(filter.may_contain("b", h), Some(true));
        }
        let false_matches = hashes[15_000..]
            .iter()
            .filter(|&&h| filter.may_contain("a", h) == Some(true))
            .count();
        assert!(
            false_matches <= 2,
            "{false_matches} of 5000 absent keys matched"
        );
        assert_eq!(filter.may_contain("c", 1), None);
        // About 1.1 × 16 bits per key, known before the file is read.
        assert_eq!(KeyFilter::planned_bytes(&header), filter.bytes());
        let bits_per_key = filter.bytes() as f64 * 8.0 / 25_000.0;
        assert!(bits_per_key < 19.0, "{bits_per_key}");
    }

    #[test]
    fn a_damaged_page_is_an_error() {
        let hashes: Vec<u64> = (0..3000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let rows: Vec<u32> = (0..3000).collect();
        let mut file = build(
            &[("a", vec![block_keys(&hashes, &rows, SLICE_ROWS)])],
            SLICE_ROWS,
            1,
            fingerprint_bits(1, 0.01),
        )
        .unwrap();
        let header = LocatorHeader::parse(&file).unwrap();
        let last = file.len() - 20;
        file[last] ^= 1;
        assert!(from_locator(&header, &file, u64::MAX).is_err());
    }
}
