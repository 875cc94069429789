//! The locator: for a group of blocks, one file that says where in the group a key may be (which
//! block, and which 8192-row slice of it) with one small ranged read, however many blocks the
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
//!   4     rows per slice (8192)
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
use crate::retrieval::{self, Geometry, Retrieval, Scratch};

pub const MAGIC: [u8; 8] = *b"SIEVELOC";
/// The locator format this build writes and the newest it reads.
pub const LOCATOR_FORMAT: u16 = 2;
/// Rows per slice: the unit a locator names inside a block, and the Parquet page size.
pub const SLICE_ROWS: u32 = 8192;
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

/// A block's [`BlockKeys`] from its key hashes and the row of each.
pub fn block_keys(hashes: &[u64], rows: &[u32]) -> BlockKeys {
    let mut keys: Vec<(u64, u32)> = hashes
        .iter()
        .zip(rows)
        .map(|(&h, &row)| (h, row / SLICE_ROWS))
        .collect();
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
/// sums to at most `max_false_reads` however many groups follow (seed 003 tightens its
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

/// Builds a group's locator file from its blocks' [`block_keys`], per column (in the table's
/// index column order), for the group that is the table's `ordinal`-th. Returns the file; its
/// header is the first [`LocatorHeader::len`] bytes.
pub fn build(
    columns: &[(&str, Vec<BlockKeys>)],
    slices_per_block: u32,
    ordinal: u64,
    max_false_reads: f64,
) -> Result<Vec<u8>, IndexError> {
    let blocks = columns.first().map_or(0, |(_, b)| b.len()) as u32;
    if columns.iter().any(|(_, b)| b.len() as u32 != blocks) {
        return Err(corrupt("every column needs the same blocks"));
    }
    let fingerprint_bits = fingerprint_bits(ordinal, max_false_reads);
    let mut pages = PageWriter::new(Vec::new());
    let mut locators = Vec::with_capacity(columns.len());
    for (column, per_block) in columns {
        let upper: usize = per_block.iter().map(Vec::len).sum();
        let shard_count = upper.div_ceil(SHARD_KEYS).max(1);
        let mut builder = ColumnBuilder::new(
            column,
            blocks,
            slices_per_block,
            fingerprint_bits,
            shard_count,
        );
        // Each block's keys are sorted by hash, so a shard is a contiguous run of each.
        let mut cursors = vec![0usize; per_block.len()];
        let mut entries = Vec::new();
        for shard in 0..shard_count {
            entries.clear();
            for (block, keys) in per_block.iter().enumerate() {
                let start = cursors[block];
                let len =
                    keys[start..].partition_point(|(h, _)| shard_of(*h, shard_count) == shard);
                cursors[block] = start + len;
                entries.extend(
                    keys[start..start + len]
                        .iter()
                        .map(|&(h, slice)| (h, block as u32, slice)),
                );
            }
            builder.add_shard(&mut entries, &mut pages)?;
        }
        locators.push(builder.finish()?);
    }
    let (pages, page_count) = pages.finish()?;
    let mut out = encode_header(blocks, slices_per_block, page_count, &locators)?;
    out.extend_from_slice(&pages);
    Ok(out)
}

/// Writes a locator's pages as its shards are built, numbering them from the first; what lets
/// a builder hold one shard's keys at a time and spill the rest.
pub struct PageWriter<W: std::io::Write> {
    out: W,
    pages: u64,
    scratch: Scratch,
}

impl<W: std::io::Write> PageWriter<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            pages: 0,
            scratch: Scratch::default(),
        }
    }

    /// The sink and the number of pages written to it.
    pub fn finish(mut self) -> Result<(W, u64), IndexError> {
        self.out.flush().map_err(io_error)?;
        Ok((self.out, self.pages))
    }

    fn write(&mut self, cells: &[u8]) -> Result<u64, IndexError> {
        let first = self.pages;
        for chunk in cells.chunks(PAGE_DATA) {
            let mut data = [0u8; PAGE_DATA];
            data[..chunk.len()].copy_from_slice(chunk);
            self.out.write_all(&data).map_err(io_error)?;
            let sum = xxh3_64_with_seed(&data, self.pages);
            self.out.write_all(&sum.to_le_bytes()).map_err(io_error)?;
            self.pages += 1;
        }
        Ok(first)
    }
}

fn io_error(e: std::io::Error) -> IndexError {
    IndexError::Corrupt(format!("locator: cannot write pages: {e}"))
}

/// One column's part of a locator, built shard after shard in hash order.
pub struct ColumnBuilder {
    column: String,
    blocks: u32,
    slices_per_block: u32,
    fingerprint_bits: u8,
    slot_bits: u8,
    shard_count: usize,
    shards: Vec<Shard>,
    keys: u64,
    values: Vec<(u64, u64)>,
}

impl ColumnBuilder {
    /// For a group of `blocks` blocks of `slices_per_block` slices whose keys fall in
    /// `shard_count` shards ([`Self::shard_of`]).
    pub fn new(
        column: &str,
        blocks: u32,
        slices_per_block: u32,
        fingerprint_bits: u8,
        shard_count: usize,
    ) -> Self {
        let max_slot = u64::from(blocks) * u64::from(slices_per_block) + u64::from(blocks);
        Self {
            column: column.to_string(),
            blocks,
            slices_per_block,
            fingerprint_bits,
            slot_bits: (64 - max_slot.leading_zeros()).max(1) as u8,
            shard_count: shard_count.max(1),
            shards: Vec::new(),
            keys: 0,
            values: Vec::new(),
        }
    }

    /// The shard a key hash belongs to: shards are added in this order.
    pub fn shard_of(&self, hash: u64) -> usize {
        shard_of(hash, self.shard_count)
    }

    /// Builds the next shard from `entries`, (hash, block, slice) of every key of every block
    /// in it, in any order (they are sorted here), and writes its pages.
    pub fn add_shard<W: std::io::Write>(
        &mut self,
        entries: &mut Vec<(u64, u32, u32)>,
        pages: &mut PageWriter<W>,
    ) -> Result<(), IndexError> {
        if self.shards.len() == self.shard_count {
            return Err(corrupt("more shards than the column has"));
        }
        let (blocks, per_block) = (u64::from(self.blocks), u64::from(self.slices_per_block));
        let max_slot = blocks * per_block + blocks;
        let shard_count = self.shard_count;
        sort_by_hash(entries, |e| in_shard(e.0, shard_count));
        self.values.clear();
        for &(h, block, slice) in entries.iter() {
            if u64::from(block) >= blocks {
                return Err(corrupt(format!(
                    "block {block} is past the group's {blocks}"
                )));
            }
            let slot = match self.values.last() {
                Some(&(last, _)) if last == h => {
                    self.values.pop();
                    max_slot
                }
                _ if slice == MANY_SLICES => blocks * per_block + u64::from(block),
                _ if u64::from(slice) >= per_block => {
                    return Err(corrupt(format!(
                        "slice {slice} is past the {per_block} of a block"
                    )));
                }
                _ => u64::from(block) * per_block + u64::from(slice),
            };
            self.values.push((
                h,
                fingerprint(h, self.fingerprint_bits) << self.slot_bits | slot,
            ));
        }
        self.keys += self.values.len() as u64;
        for entry in &mut self.values {
            entry.0 = in_shard(entry.0, shard_count);
        }
        let width = self.slot_bits + self.fingerprint_bits;
        let retrieval = Retrieval::build(&self.values, width, &mut pages.scratch)?;
        let first_page = pages.write(retrieval.cells())?;
        self.shards.push(Shard {
            geometry: *retrieval.geometry(),
            first_page,
        });
        Ok(())
    }

    /// Builds the shards of part `part` of `parts` (the keys whose hash's top bits say so:
    /// `hash · parts >> 64`, a whole number of shards when `parts` divides the shard count)
    /// from `entries`, every key of it in any order, and writes their pages.
    pub fn add_part<W: std::io::Write>(
        &mut self,
        mut entries: Vec<(u64, u32, u32)>,
        part: usize,
        parts: usize,
        pages: &mut PageWriter<W>,
    ) -> Result<(), IndexError> {
        if parts == 0
            || !self.shard_count.is_multiple_of(parts)
            || self.shards.len() != part * (self.shard_count / parts)
        {
            return Err(corrupt(format!("part {part} of {parts} is out of order")));
        }
        // Within a part, `hash · parts` (mod 2^64) ascends with the hash: the part's shards are
        // consecutive runs of the sorted keys.
        sort_by_hash(&mut entries, |e| e.0.wrapping_mul(parts as u64));
        let per_part = self.shard_count / parts;
        let mut rest = &entries[..];
        let mut shard_entries = Vec::new();
        for shard in part * per_part..(part + 1) * per_part {
            let len = rest.partition_point(|e| self.shard_of(e.0) == shard);
            shard_entries.clear();
            shard_entries.extend_from_slice(&rest[..len]);
            self.add_shard(&mut shard_entries, pages)?;
            rest = &rest[len..];
        }
        if !rest.is_empty() {
            return Err(corrupt(format!("keys outside part {part} of {parts}")));
        }
        Ok(())
    }

    /// The column's header entry, once every shard is added (lookups find a key's shard by
    /// the shard count: a missing one would hide keys).
    pub fn finish(self) -> Result<ColumnLocator, IndexError> {
        if self.shards.len() != self.shard_count {
            return Err(corrupt(format!(
                "{} of {} shards built",
                self.shards.len(),
                self.shard_count
            )));
        }
        Ok(ColumnLocator {
            column: self.column,
            fingerprint_bits: self.fingerprint_bits,
            slot_bits: self.slot_bits,
            keys: self.keys,
            shards: self.shards,
        })
    }
}

/// A locator's header, for pages already written by a [`PageWriter`].
pub fn encode_header(
    blocks: u32,
    slices_per_block: u32,
    pages: u64,
    columns: &[ColumnLocator],
) -> Result<Vec<u8>, IndexError> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&LOCATOR_FORMAT.to_le_bytes());
    out.extend_from_slice(&blocks.to_le_bytes());
    out.extend_from_slice(&SLICE_ROWS.to_le_bytes());
    out.extend_from_slice(&slices_per_block.to_le_bytes());
    out.extend_from_slice(&pages.to_le_bytes());
    let count = u16::try_from(columns.len()).map_err(|_| corrupt("too many columns"))?;
    out.extend_from_slice(&count.to_le_bytes());
    for c in columns {
        let name_len =
            u16::try_from(c.column.len()).map_err(|_| corrupt("column name too long"))?;
        out.extend_from_slice(&name_len.to_le_bytes());
        out.extend_from_slice(c.column.as_bytes());
        out.extend_from_slice(&[c.fingerprint_bits, c.slot_bits]);
        out.extend_from_slice(&c.keys.to_le_bytes());
        out.extend_from_slice(&(c.shards.len() as u32).to_le_bytes());
        for s in &c.shards {
            out.extend_from_slice(&s.geometry.seed.to_le_bytes());
            out.extend_from_slice(&s.geometry.rows.to_le_bytes());
            out.extend_from_slice(&s.first_page.to_le_bytes());
        }
    }
    out.extend_from_slice(&xxh3_64(&out).to_le_bytes());
    Ok(out)
}

/// Reads fields off the front of a header, failing on truncation.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], IndexError> {
        if self.0.len() < n {
            return Err(corrupt("header is truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, IndexError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, IndexError> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }
    fn u32(&mut self) -> Result<u32, IndexError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, IndexError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
}

impl LocatorHeader {
    /// Parses a header from the front of `bytes` (the file, or the header as the segment keeps
    /// it), checking everything it can without the pages.
    pub fn parse(bytes: &[u8]) -> Result<Self, IndexError> {
        let mut f = Fields(bytes);
        if f.take(8)? != MAGIC {
            return Err(corrupt("bad magic"));
        }
        let format = f.u16()?;
        if format != LOCATOR_FORMAT {
            return Err(corrupt(format!(
                "format {format} is not supported by this build (reads {LOCATOR_FORMAT})"
            )));
        }
        let blocks = f.u32()?;
        if f.u32()? != SLICE_ROWS {
            return Err(corrupt("unexpected slice size"));
        }
        let slices_per_block = f.u32()?;
        let pages = f.u64()?;
        let mut columns = Vec::new();
        for _ in 0..f.u16()? {
            let name_len = f.u16()? as usize;
            let column = std::str::from_utf8(f.take(name_len)?)
                .map_err(|_| corrupt("column name is not UTF-8"))?
                .to_string();
            let (fingerprint_bits, slot_bits) = (f.u8()?, f.u8()?);
            let width = fingerprint_bits
                .checked_add(slot_bits)
                .filter(|w| (1..=64).contains(w) && fingerprint_bits >= 1)
                .ok_or_else(|| corrupt("bad value width"))?;
            let keys = f.u64()?;
            let shard_count = f.u32()? as usize;
            if shard_count == 0 || shard_count > f.0.len() / 16 {
                return Err(corrupt("bad shard count"));
            }
            let mut shards = Vec::with_capacity(shard_count);
            for _ in 0..shard_count {
                let geometry = Geometry {
                    seed: f.u32()?,
                    rows: f.u32()?,
                    width,
                };
                let first_page = f.u64()?;
                if (geometry.rows as usize) < retrieval::WINDOW
                    || first_page.saturating_add(geometry.byte_len().div_ceil(PAGE_DATA) as u64)
                        > pages
                {
                    return Err(corrupt("shard lies outside the pages"));
                }
                shards.push(Shard {
                    geometry,
                    first_page,
                });
            }
            columns.push(ColumnLocator {
                column,
                fingerprint_bits,
                slot_bits,
                keys,
                shards,
            });
        }
        let len = bytes.len() - f.0.len();
        let stored = f.u64()?;
        if xxh3_64(&bytes[..len]) != stored {
            return Err(corrupt("header checksum mismatch"));
        }
        Ok(Self {
            blocks,
            slices_per_block,
            pages,
            columns,
            len: len + 8,
        })
    }

    pub fn column(&self, name: &str) -> Option<&ColumnLocator> {
        self.columns.iter().find(|c| c.column == name)
    }

    /// Bytes of the whole file.
    pub fn file_len(&self) -> u64 {
        self.len as u64 + self.pages * PAGE as u64
    }

    /// The bytes of the file to read to look `hash` up in `column`: the pages of its window.
    pub fn lookup_range(&self, column: &ColumnLocator, hash: u64) -> Range<u64> {
        let (_, _, pages) = Self::window_pages(column, hash);
        let start = self.len as u64 + pages.start * PAGE as u64;
        start..start + (pages.end - pages.start) * PAGE as u64
    }

    /// A hash's shard, its key there, and the pages of its window.
    fn window_pages(column: &ColumnLocator, hash: u64) -> (&Shard, u64, Range<u64>) {
        let count = column.shards.len();
        let (shard, key) = (&column.shards[shard_of(hash, count)], in_shard(hash, count));
        let window = shard.geometry.window(key);
        let first = shard.first_page + (window.start / PAGE_DATA) as u64;
        let last = shard.first_page + ((window.end - 1) / PAGE_DATA) as u64;
        (shard, key, first..last + 1)
    }

    /// The pages of `shard`'s rows, as a range of the file.
    pub fn shard_range(&self, shard: &Shard) -> Range<u64> {
        let pages = shard.geometry.byte_len().div_ceil(PAGE_DATA) as u64;
        let start = self.len as u64 + shard.first_page * PAGE as u64;
        start..start + pages * PAGE as u64
    }

    /// A shard's packed rows from exactly the bytes of its [`Self::shard_range`] (the caller
    /// slices them from its read), every page checked.
    pub(crate) fn shard_rows(&self, shard: &Shard, bytes: &[u8]) -> Result<Vec<u8>, IndexError> {
        let len = shard.geometry.byte_len();
        let pages = shard.first_page..shard.first_page + len.div_ceil(PAGE_DATA) as u64;
        let mut rows = Vec::with_capacity(len + PAGE_DATA);
        for (page, number) in bytes.chunks(PAGE).zip(pages) {
            let (body, sum) = page.split_at(PAGE_DATA);
            if xxh3_64_with_seed(body, number).to_le_bytes() != sum {
                return Err(corrupt(format!("page {number} checksum mismatch")));
            }
            rows.extend_from_slice(body);
        }
        rows.truncate(len);
        Ok(rows)
    }

    /// Where `hash` may be, from `bytes`, the file's [`Self::lookup_range`] for it; fails if a
    /// page is damaged.
    pub fn locate(
        &self,
        column: &ColumnLocator,
        hash: u64,
        bytes: &[u8],
    ) -> Result<Location, IndexError> {
        let (shard, key, pages) = Self::window_pages(column, hash);
        if bytes.len() as u64 != (pages.end - pages.start) * PAGE as u64 {
            return Err(corrupt("lookup read the wrong number of bytes"));
        }
        let mut data = Vec::with_capacity(bytes.len());
        for (page, number) in bytes.chunks(PAGE).zip(pages.clone()) {
            let (body, sum) = page.split_at(PAGE_DATA);
            if xxh3_64_with_seed(body, number).to_le_bytes() != sum {
                return Err(corrupt(format!("page {number} checksum mismatch")));
            }
            data.extend_from_slice(body);
        }
        let offset = (pages.start - shard.first_page) as usize * PAGE_DATA;
        let value = retrieval::get_in(&shard.geometry, &data, offset, key);
        let slot_mask = (1u64 << column.slot_bits) - 1;
        if value >> column.slot_bits != fingerprint(hash, column.fingerprint_bits) {
            return Ok(Location::Absent);
        }
        let (blocks, per_block) = (u64::from(self.blocks), u64::from(self.slices_per_block));
        let slot = value & slot_mask;
        Ok(if slot < blocks * per_block {
            Location::Slice {
                block: (slot / per_block) as u32,
                slice: (slot % per_block) as u32,
            }
        } else if slot < blocks * per_block + blocks {
            Location::Block((slot - blocks * per_block) as u32)
        } else if slot == blocks * per_block + blocks {
            Location::Blocks
        } else {
            Location::Absent
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let b0 = block_keys(&[1, 2, 2], &[5, 6, 3 * SLICE_ROWS + 1]);
        let b1 = block_keys(&[3, 1], &[SLICE_ROWS, 0]);
        let file = build(&[("c", vec![b0, b1])], 4, 1, 0.01).unwrap();
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
            block_keys(&hashes[..10_000], &rows),
            block_keys(&hashes[10_000..20_000], &rows),
            block_keys(&hashes[15_000..25_000], &rows),
        ];
        let whole = build(&[("c", blocks.to_vec())], 4, 3, 0.01).unwrap();
        let (parts, shard_count) = (3, 6);
        let mut pages = PageWriter::new(Vec::new());
        let mut column = ColumnBuilder::new("c", 3, 4, fingerprint_bits(3, 0.01), shard_count);
        for part in 0..parts {
            let entries: Vec<(u64, u32, u32)> = blocks
                .iter()
                .enumerate()
                .flat_map(|(b, keys)| keys.iter().map(move |&(h, s)| (h, b as u32, s)))
                .filter(|e| shard_of(e.0, parts) == part)
                .rev()
                .collect();
            column.add_part(entries, part, parts, &mut pages).unwrap();
        }
        let (bytes, count) = pages.finish().unwrap();
        let mut parted = encode_header(3, 4, count, &[column.finish().unwrap()]).unwrap();
        parted.extend_from_slice(&bytes);
        for &h in &hashes[..25_000] {
            assert_eq!(lookup(&parted, "c", h), lookup(&whole, "c", h));
            assert_ne!(lookup(&parted, "c", h), Location::Absent);
        }
        // A part out of order, or a column short of shards, is refused.
        let mut column = ColumnBuilder::new("c", 3, 4, 8, shard_count);
        let mut pages = PageWriter::new(Vec::new());
        assert!(column.add_part(Vec::new(), 1, parts, &mut pages).is_err());
        column.add_part(Vec::new(), 0, parts, &mut pages).unwrap();
        assert!(column.finish().is_err());
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
        let b0 = block_keys(&hashes, &(0..5000).collect::<Vec<_>>());
        let mut file = build(&[("c", vec![b0])], 1, 1, 0.01).unwrap();
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
