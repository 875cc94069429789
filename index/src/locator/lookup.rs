//! Looking a key up: the pages of its window, and what the slot found there means.

use super::*;
use crate::retrieval;

impl LocatorHeader {
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

    /// Every page of the file, as a range of it: what [`Self::lookup_range`] and
    /// [`Self::shard_range`] name lies within.
    pub fn pages_range(&self) -> Range<u64> {
        let start = self.len as u64;
        start..start + self.pages * PAGE as u64
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
