//! Writing a locator: a group's keys into retrieval shards, pages and the header.

use super::*;
use crate::retrieval::{Retrieval, Scratch};

/// Builds a group's locator file from its blocks' [`block_keys`], per column (in the table's
/// index column order), whose blocks are cut into `slices_per_block` slices of `slice_rows`,
/// with fingerprints of `fingerprint_bits` ([`fingerprint_bits`] of the group's place in its
/// table). Returns the file; its header is the first [`LocatorHeader::len`] bytes.
pub fn build(
    columns: &[(&str, Vec<BlockKeys>)],
    slice_rows: u32,
    slices_per_block: u32,
    fingerprint_bits: u8,
) -> Result<Vec<u8>, IndexError> {
    let blocks = columns.first().map_or(0, |(_, b)| b.len()) as u32;
    if columns.iter().any(|(_, b)| b.len() as u32 != blocks) {
        return Err(corrupt("every column needs the same blocks"));
    }
    let mut pages = PageWriter::new(Vec::new());
    let mut locators = Vec::with_capacity(columns.len());
    for (column, per_block) in columns {
        let upper: usize = per_block.iter().map(Vec::len).sum();
        let mut builder = ColumnBuilder::new(
            column,
            blocks,
            slices_per_block,
            fingerprint_bits,
            shards_for(upper),
        );
        builder.add_blocks(per_block, &mut pages)?;
        locators.push(builder.finish()?);
    }
    let (pages, page_count) = pages.finish()?;
    let mut out = encode_header(blocks, slice_rows, slices_per_block, page_count, &locators)?;
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

/// Shards for a column of `keys` keys: each at most [`SHARD_KEYS`].
pub fn shards_for(keys: usize) -> usize {
    keys.div_ceil(SHARD_KEYS).max(1)
}

/// What building a column's shards needs to know, apart from their keys: copied to every thread
/// that builds some of them ([`Self::build_part`]).
#[derive(Debug, Clone, Copy)]
pub struct ColumnLayout {
    blocks: u32,
    slices_per_block: u32,
    fingerprint_bits: u8,
    slot_bits: u8,
    shard_count: usize,
}

impl ColumnLayout {
    /// The shard a key hash belongs to: shards are added in this order.
    pub fn shard_of(&self, hash: u64) -> usize {
        shard_of(hash, self.shard_count)
    }

    /// Builds the shards of part `part` of `parts` (the keys whose hash's top bits say so:
    /// `hash · parts >> 64`, a whole number of shards when `parts` divides the shard count)
    /// from `entries`, every key of it in any order, for [`ColumnBuilder::write_part`].
    pub fn build_part(
        &self,
        entries: Vec<(u64, u32, u32)>,
        part: usize,
        parts: usize,
        scratch: &mut Scratch,
    ) -> Result<BuiltPart, IndexError> {
        if parts == 0 || !self.shard_count.is_multiple_of(parts) || part >= parts {
            return Err(corrupt(format!(
                "part {part} of {parts} does not cut {} shards",
                self.shard_count
            )));
        }
        // Each shard's keys gathered by one counting pass (build_shard sorts each): sorting the
        // whole part first would sort every key twice.
        let per_part = self.shard_count / parts;
        let first = part * per_part;
        let mut starts = vec![0usize; per_part + 1];
        for e in &entries {
            let shard = self.shard_of(e.0);
            if !(first..first + per_part).contains(&shard) {
                return Err(corrupt(format!("keys outside part {part} of {parts}")));
            }
            starts[shard - first + 1] += 1;
        }
        for k in 0..per_part {
            starts[k + 1] += starts[k];
        }
        let mut by_shard = vec![(0u64, 0u32, 0u32); entries.len()];
        let mut next = starts.clone();
        for e in entries {
            let k = self.shard_of(e.0) - first;
            by_shard[next[k]] = e;
            next[k] += 1;
        }
        let (mut shard_entries, mut values) = (Vec::new(), Vec::new());
        let mut built = BuiltPart {
            part,
            parts,
            shards: Vec::with_capacity(per_part),
            keys: 0,
        };
        for k in 0..per_part {
            shard_entries.clear();
            shard_entries.extend_from_slice(&by_shard[starts[k]..starts[k + 1]]);
            built
                .shards
                .push(self.build_shard(&mut shard_entries, &mut values, scratch)?);
            built.keys += values.len() as u64;
        }
        Ok(built)
    }

    /// Builds one shard's retrieval from `entries`, (hash, block, slice) of every key of every
    /// block in it, in any order (they are sorted here); `values` is left holding its rows.
    fn build_shard(
        &self,
        entries: &mut Vec<(u64, u32, u32)>,
        values: &mut Vec<(u64, u64)>,
        scratch: &mut Scratch,
    ) -> Result<Retrieval, IndexError> {
        let (blocks, per_block) = (u64::from(self.blocks), u64::from(self.slices_per_block));
        let max_slot = blocks * per_block + blocks;
        let shard_count = self.shard_count;
        sort_by_hash(entries, |e| in_shard(e.0, shard_count));
        values.clear();
        for &(h, block, slice) in entries.iter() {
            if u64::from(block) >= blocks {
                return Err(corrupt(format!(
                    "block {block} is past the group's {blocks}"
                )));
            }
            let slot = match values.last() {
                Some(&(last, _)) if last == h => {
                    values.pop();
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
            values.push((
                h,
                fingerprint(h, self.fingerprint_bits) << self.slot_bits | slot,
            ));
        }
        for entry in values.iter_mut() {
            entry.0 = in_shard(entry.0, shard_count);
        }
        Retrieval::build(values, self.slot_bits + self.fingerprint_bits, scratch)
    }
}

/// A part's shards, built and not yet written: parts build on several threads and are written
/// in order.
pub struct BuiltPart {
    part: usize,
    parts: usize,
    shards: Vec<Retrieval>,
    keys: u64,
}

/// One column's part of a locator, built shard after shard in hash order.
pub struct ColumnBuilder {
    column: String,
    layout: ColumnLayout,
    shards: Vec<Shard>,
    keys: u64,
}

impl ColumnBuilder {
    /// For a group of `blocks` blocks of `slices_per_block` slices whose keys fall in
    /// `shard_count` shards ([`ColumnLayout::shard_of`]).
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
            layout: ColumnLayout {
                blocks,
                slices_per_block,
                fingerprint_bits,
                slot_bits: (64 - max_slot.leading_zeros()).max(1) as u8,
                shard_count: shard_count.max(1),
            },
            shards: Vec::new(),
            keys: 0,
        }
    }

    pub fn layout(&self) -> ColumnLayout {
        self.layout
    }

    /// Builds and writes every shard from the group's blocks' keys, each block's sorted by hash
    /// as [`block_keys`] leaves them: a group whose keys are all in memory.
    pub fn add_blocks<W: std::io::Write>(
        &mut self,
        per_block: &[BlockKeys],
        pages: &mut PageWriter<W>,
    ) -> Result<(), IndexError> {
        if !self.shards.is_empty() {
            return Err(corrupt("blocks added to a column with shards"));
        }
        let shard_count = self.layout.shard_count;
        // Each block's keys are sorted by hash, so a shard is a contiguous run of each.
        let mut cursors = vec![0usize; per_block.len()];
        let (mut entries, mut values) = (Vec::new(), Vec::new());
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
            let retrieval =
                self.layout
                    .build_shard(&mut entries, &mut values, &mut pages.scratch)?;
            self.keys += values.len() as u64;
            self.push(&retrieval, pages)?;
        }
        Ok(())
    }

    /// Writes a part [`ColumnLayout::build_part`] built, the one after the last written.
    pub fn write_part<W: std::io::Write>(
        &mut self,
        built: BuiltPart,
        pages: &mut PageWriter<W>,
    ) -> Result<(), IndexError> {
        let BuiltPart {
            part,
            parts,
            shards,
            keys,
        } = built;
        if parts == 0 || self.shards.len() != part * (self.layout.shard_count / parts) {
            return Err(corrupt(format!("part {part} of {parts} is out of order")));
        }
        for retrieval in &shards {
            self.push(retrieval, pages)?;
        }
        self.keys += keys;
        Ok(())
    }

    fn push<W: std::io::Write>(
        &mut self,
        retrieval: &Retrieval,
        pages: &mut PageWriter<W>,
    ) -> Result<(), IndexError> {
        if self.shards.len() == self.layout.shard_count {
            return Err(corrupt("more shards than the column has"));
        }
        let first_page = pages.write(retrieval.cells())?;
        self.shards.push(Shard {
            geometry: *retrieval.geometry(),
            first_page,
        });
        Ok(())
    }

    /// The column's header entry, once every shard is added (lookups find a key's shard by
    /// the shard count: a missing one would hide keys).
    pub fn finish(self) -> Result<ColumnLocator, IndexError> {
        if self.shards.len() != self.layout.shard_count {
            return Err(corrupt(format!(
                "{} of {} shards built",
                self.shards.len(),
                self.layout.shard_count
            )));
        }
        Ok(ColumnLocator {
            column: self.column,
            fingerprint_bits: self.layout.fingerprint_bits,
            slot_bits: self.layout.slot_bits,
            keys: self.keys,
            shards: self.shards,
        })
    }
}

/// A locator's header, for pages already written by a [`PageWriter`].
pub fn encode_header(
    blocks: u32,
    slice_rows: u32,
    slices_per_block: u32,
    pages: u64,
    columns: &[ColumnLocator],
) -> Result<Vec<u8>, IndexError> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&LOCATOR_FORMAT.to_le_bytes());
    out.extend_from_slice(&blocks.to_le_bytes());
    out.extend_from_slice(&slice_rows.to_le_bytes());
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
