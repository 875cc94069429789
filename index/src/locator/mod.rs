//! The locator: for a group of blocks, one file that says where in the group a key may be (which
//! block, and which slice of it: 4096 rows as this build writes them) with one small ranged read, however many blocks the
//! group holds. Seed 003's "which of many sets holds this key", answered by a static function
//! instead of a filter per set: each distinct key of an indexed column maps to a fingerprint of
//! its hash and a slot ([`Location`]), stored in [`crate::retrieval`] shards of at most
//! [`SHARD_KEYS`] keys. An absent key matches a fingerprint with probability 2^-bits per group,
//! whatever the group's size.
//!
//! Layout, version 2 (all integers little-endian; [`LOCATOR_FORMAT`]; version 1 placed windows
//! by a mix of the whole hash, and is read as unknown):
//!
//! ```text
//! header
//!   8     magic "SIEVELOC"
//!   2     format version (2)
//!   4     blocks in the group, G
//!   4     rows per slice R (a power of two, 1024 to 65536; 8192 before 4096 was chosen)
//!   4     slices per block, P
//!   8     pages after the header
//!   2     column count
//!   per column:
//!     2+n   name length, UTF-8 name
//!     1     fingerprint bits f · 1 slot bits s
//!     8     distinct keys
//!     4     shard count, then per shard: u32 seed · u32 rows · u64 first page
//!   8     XXH3-64 of every header byte before it
//! pages, 1024 bytes each: 1016 bytes of a shard's packed rows (zero-padded after its last row)
//!   and the XXH3-64 of those bytes seeded with the page's number
//! ```
//!
//! A key's shard is `hash · shards >> 64` (the hash's top bits, so a group's keys sorted by hash
//! are its shards in order) and its key within the shard the low 64 bits of that product (so
//! they ascend with the hash too, and the shard is banded front to back); its value,
//! `fingerprint << s | slot`, is read at that key from the shard's 64-row window
//! ([`crate::retrieval::Geometry::window`]), at most two pages. Slots: `b·P + p`
//! is slice `p` of block `b`; `G·P + b` is "several slices of block `b`"; `G·P + G` is "several
//! blocks" (the reader falls back to the blocks' sidecars); anything above is absent.
//!
//! The header is also kept in the segment, so a cold lookup is one read of two pages. Parsing is
//! strict and every page is checked: a damaged or newer locator is an error, which readers turn
//! into "use the sidecars", never a missed row.

use std::ops::Range;

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

use crate::error::IndexError;
use crate::hash_sort::sort_by_hash;
use crate::retrieval::Geometry;

mod build;
mod header;
mod lookup;

pub use build::{
    BuiltPart, ColumnBuilder, ColumnLayout, PageWriter, build, encode_header, shards_for,
};

pub const MAGIC: [u8; 8] = *b"SIEVELOC";
/// The locator format this build writes and the newest it reads.
pub const LOCATOR_FORMAT: u16 = 2;
/// Rows per slice this build writes: the unit a locator names inside a block, and the Parquet
/// page size. A lookup reads a slice of every projected column, so a slice of t10b's c2 (random
/// doubles as text, ~8 bytes a value compressed) is most of its bytes: 4096 rows keep a lookup
/// of two columns near 40 KB (8192 cost ~80 KB), for one more slot bit per key. Readers take a
/// group's slice size from its header, so groups written with 8192 are read as written.
pub const SLICE_ROWS: u32 = 4096;
/// The slice sizes a header may name.
pub const SLICE_ROWS_RANGE: std::ops::RangeInclusive<u32> = 1024..=65536;
/// Keys per retrieval shard at most. At 2^20 keys the 8% first attempt usually failed (8 key
/// sets, release: 1.0 retries on average, 1.04 s per shard), at 2^18 it usually holds (0.4
/// retries, 0.12 s per shard: half the time per key), and the working memory is ~8 MB. Readers
/// take the shard count from the header, so this is the writer's choice, not the format's.
pub const SHARD_KEYS: usize = 1 << 18;
pub const PAGE: usize = 1024;
const PAGE_DATA: usize = PAGE - 8;
/// A block's key occurs in more than one of its slices.
pub const MANY_SLICES: u32 = u32::MAX;

pub(crate) fn corrupt(why: impl Into<String>) -> IndexError {
    IndexError::Corrupt(format!("locator: {}", why.into()))
}

/// One block's distinct keys of one column and the slice each is in ([`MANY_SLICES`] if more
/// than one), sorted by hash: what the writer keeps of a block until its group is built.
pub type BlockKeys = Vec<(u64, u32)>;

/// A block's [`BlockKeys`] from its key hashes and the row of each, in slices of `slice_rows`.
pub fn block_keys(hashes: &[u64], rows: &[u32], slice_rows: u32) -> BlockKeys {
    let keys = hashes.iter().zip(rows);
    distinct_keys(keys.map(|(&h, &row)| (h, row / slice_rows)).collect())
}

/// `keys`, each a hash and the slice a row of it is in, in any order and repeated as the column
/// repeats them, sorted by hash once each: [`MANY_SLICES`] for a key in more than one slice.
pub fn distinct_keys(mut keys: Vec<(u64, u32)>) -> BlockKeys {
    sort_by_hash(&mut keys, |k| k.0);
    keys.dedup_by(|next, kept| {
        if next.0 != kept.0 {
            return false;
        }
        if next.1 != kept.1 {
            kept.1 = MANY_SLICES;
        }
        true
    });
    keys
}

/// The fingerprint bits that keep the expected false reads of every group of a table, summed,
/// under `max_false_reads`: the `k`-th group gets `max_false_reads / (k (k + 1))`, a series that
/// sums to at most `max_false_reads` however many groups follow (Wei et al. tighten their
/// per-filter rate as the array grows; this does it without rebuilding the older groups).
pub fn fingerprint_bits(ordinal: u64, max_false_reads: f64) -> u8 {
    let k = ordinal.max(1) as f64;
    let rate = max_false_reads.clamp(1e-12, 1.0) / (k * (k + 1.0));
    (-rate.log2()).ceil().clamp(1.0, 48.0) as u8
}

/// Where a key may be in a group, by the locator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// In no block of the group.
    Absent,
    /// Only in this slice of this block (block index within the group).
    Slice { block: u32, slice: u32 },
    /// In several slices of this block.
    Block(u32),
    /// In several blocks: ask their sidecars.
    Blocks,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    pub geometry: Geometry,
    pub first_page: u64,
}

/// One indexed column's part of a group's locator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnLocator {
    pub column: String,
    pub fingerprint_bits: u8,
    pub slot_bits: u8,
    pub keys: u64,
    pub shards: Vec<Shard>,
}

impl ColumnLocator {
    /// Bytes of the column's pages in the file.
    pub fn bytes(&self) -> u64 {
        let pages: usize = self
            .shards
            .iter()
            .map(|s| s.geometry.byte_len().div_ceil(PAGE_DATA))
            .sum();
        (pages * PAGE) as u64
    }
}

/// A parsed locator header: everything a lookup needs besides two pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatorHeader {
    pub blocks: u32,
    /// Rows per slice: how the slices this locator names map to rows.
    pub slice_rows: u32,
    pub slices_per_block: u32,
    pub pages: u64,
    pub columns: Vec<ColumnLocator>,
    /// Bytes of the header: pages start here.
    pub len: usize,
}

pub(crate) fn fingerprint(hash: u64, bits: u8) -> u64 {
    // Independent of the shard (the hash's top bits) and of the window (mixed with the seed).
    let mixed = (hash ^ 0x243f_6a88_85a3_08d3).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (mixed ^ (mixed >> 29)) >> (64 - u32::from(bits))
}

pub(crate) fn shard_of(hash: u64, shards: usize) -> usize {
    ((u128::from(hash) * shards as u128) >> 64) as usize
}

/// A hash's key within its shard: the part of `hash · shards` below the shard, which ascends
/// with the hash across the shard and is distinct for distinct hashes.
pub(crate) fn in_shard(hash: u64, shards: usize) -> u64 {
    hash.wrapping_mul(shards as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slice size locators were first written with: still read.
    const SLICE: u32 = 8192;

    fn lookup(file: &[u8], column: &str, hash: u64) -> Location {
        let header = LocatorHeader::parse(file).unwrap();
        let c = header.column(column).unwrap();
        let range = header.lookup_range(c, hash);
        header
            .locate(c, hash, &file[range.start as usize..range.end as usize])
            .unwrap()
    }

    #[test]
    fn keys_are_found_where_they_are() {
        // Block 0: key 1 in slice 0, key 2 in slices 0 and 3. Block 1: key 3 in slice 1, key 1.
        let b0 = block_keys(&[1, 2, 2], &[5, 6, 3 * SLICE + 1], SLICE);
        let b1 = block_keys(&[3, 1], &[SLICE, 0], SLICE);
        let file = build(&[("c", vec![b0, b1])], SLICE, 4, fingerprint_bits(1, 0.01)).unwrap();
        assert_eq!(lookup(&file, "c", 1), Location::Blocks);
        assert_eq!(lookup(&file, "c", 2), Location::Block(0));
        assert_eq!(
            lookup(&file, "c", 3),
            Location::Slice { block: 1, slice: 1 }
        );
    }

    #[test]
    fn a_locator_built_in_parts_finds_what_one_built_whole_does() {
        // 3 blocks of 4 slices; keys spread over the hash range, some in two blocks.
        let hashes: Vec<u64> = (0..30_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x55)
            .collect();
        let rows: Vec<u32> = (0..10_000).map(|r| r * 3).collect();
        let blocks = [
            block_keys(&hashes[..10_000], &rows, SLICE),
            block_keys(&hashes[10_000..20_000], &rows, SLICE),
            block_keys(&hashes[15_000..25_000], &rows, SLICE),
        ];
        let whole = build(
            &[("c", blocks.to_vec())],
            SLICE,
            4,
            fingerprint_bits(3, 0.01),
        )
        .unwrap();
        let (parts, shard_count) = (3, 6);
        let mut pages = PageWriter::new(Vec::new());
        let mut column = ColumnBuilder::new("c", 3, 4, fingerprint_bits(3, 0.01), shard_count);
        let mut scratch = crate::retrieval::Scratch::default();
        for part in 0..parts {
            let entries: Vec<(u64, u32, u32)> = blocks
                .iter()
                .enumerate()
                .flat_map(|(b, keys)| keys.iter().map(move |&(h, s)| (h, b as u32, s)))
                .filter(|e| shard_of(e.0, parts) == part)
                .rev()
                .collect();
            let built = column
                .layout()
                .build_part(entries, part, parts, &mut scratch);
            column.write_part(built.unwrap(), &mut pages).unwrap();
        }
        let (bytes, count) = pages.finish().unwrap();
        let mut parted = encode_header(3, SLICE, 4, count, &[column.finish().unwrap()]).unwrap();
        parted.extend_from_slice(&bytes);
        for &h in &hashes[..25_000] {
            assert_eq!(lookup(&parted, "c", h), lookup(&whole, "c", h));
            assert_ne!(lookup(&parted, "c", h), Location::Absent);
        }
        // A part out of order, keys outside their part, or a column short of shards, is refused.
        let mut column = ColumnBuilder::new("c", 3, 4, 8, shard_count);
        let mut pages = PageWriter::new(Vec::new());
        let layout = column.layout();
        let mut part = |p| {
            layout
                .build_part(Vec::new(), p, parts, &mut scratch)
                .unwrap()
        };
        assert!(column.write_part(part(1), &mut pages).is_err());
        column.write_part(part(0), &mut pages).unwrap();
        assert!(column.finish().is_err());
        let outside = vec![(u64::MAX, 0, 0)];
        assert!(layout.build_part(outside, 0, parts, &mut scratch).is_err());
    }

    #[test]
    fn fingerprint_bits_follow_the_budget() {
        assert_eq!(fingerprint_bits(1, 0.01), 8); // 0.005 → 7.6 bits
        assert_eq!(fingerprint_bits(100, 0.01), 20); // 1e-6 → 19.9 bits
        let total: f64 = (1..=100_000u64)
            .map(|k| 2f64.powi(-i32::from(fingerprint_bits(k, 0.01))))
            .sum();
        assert!(total <= 0.01, "{total}");
    }

    #[test]
    fn damage_is_an_error() {
        // Hashes spread over the whole range, as the pinned hash's are.
        let hashes: Vec<u64> = (0..5000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let b0 = block_keys(&hashes, &(0..5000).collect::<Vec<_>>(), SLICE);
        let mut file = build(&[("c", vec![b0])], SLICE, 1, fingerprint_bits(1, 0.01)).unwrap();
        let header = LocatorHeader::parse(&file).unwrap();
        assert_eq!(header.file_len(), file.len() as u64);
        let c = header.column("c").unwrap().clone();
        let range = header.lookup_range(&c, 77);
        file[range.start as usize + 3] ^= 1;
        let bytes = &file[range.start as usize..range.end as usize];
        assert!(header.locate(&c, 77, bytes).is_err());
        file[10] ^= 1;
        assert!(LocatorHeader::parse(&file).is_err());
        for version in [1, LOCATOR_FORMAT + 1] {
            let mut other = file.clone();
            other[8..10].copy_from_slice(&version.to_le_bytes());
            assert!(LocatorHeader::parse(&other).is_err());
        }
    }
}
