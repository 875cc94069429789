//! Checksums of a block's Parquet file, one XXH3-64 per 64 KiB stride, kept in the segment.
//!
//! parquet 59 writes no page CRCs, and a whole-file checksum cannot check the ranged reads a scan
//! makes (a footer, a few column chunks, some pages). Fixed strides can: a reader widens every range
//! it fetches to stride boundaries, checks each stride, and hands on the bytes asked for. Any damage
//! to the bytes a query reads — data pages, dictionary, page index, footer — is then an error
//! naming the block, never a different answer. A widened range costs at most two strides more.

use std::ops::Range;

use bytes::Bytes;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Result, StorageError};

/// Bytes covered by one checksum.
pub const STRIDE: u64 = 64 << 10;

/// The checksums of `file`: XXH3-64 of each stride, little-endian, concatenated.
pub fn compute(file: &[u8]) -> Vec<u8> {
    file.chunks(STRIDE as usize)
        .flat_map(|stride| xxh3_64(stride).to_le_bytes())
        .collect()
}

/// A block's checksums as the segment holds them.
#[derive(Debug, Clone)]
pub struct BlockChecksums {
    file_len: u64,
    sums: Bytes,
}

impl BlockChecksums {
    pub fn new(file_len: u64, sums: Bytes) -> Self {
        Self { file_len, sums }
    }

    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// `range` widened to whole strides (the last stride ends at the end of the file).
    pub fn widen(&self, range: &Range<u64>) -> Range<u64> {
        let start = range.start / STRIDE * STRIDE;
        let end = range
            .end
            .div_ceil(STRIDE)
            .saturating_mul(STRIDE)
            .min(self.file_len);
        start..end.max(range.end)
    }

    /// Checks `fetched`, the bytes of a widened range, and returns the part `range` asked for.
    /// `path` names the block in the error.
    pub fn check(&self, path: &str, range: &Range<u64>, fetched: Bytes) -> Result<Bytes> {
        let widened = self.widen(range);
        let damaged = |why: String| StorageError::Damaged(path.to_string(), why);
        let expected_strides = self.file_len.div_ceil(STRIDE);
        if self.sums.len() as u64 != expected_strides * 8 {
            return Err(damaged(format!(
                "the segment holds {} bytes of checksums for a {}-byte block",
                self.sums.len(),
                self.file_len
            )));
        }
        if widened.end > self.file_len || fetched.len() as u64 != widened.end - widened.start {
            return Err(damaged(format!(
                "asked for bytes {widened:?} of a {}-byte block, got {}",
                self.file_len,
                fetched.len()
            )));
        }
        let first = (widened.start / STRIDE) as usize;
        for (i, stride) in fetched.chunks(STRIDE as usize).enumerate() {
            let at = (first + i) * 8;
            let stored = u64::from_le_bytes(self.sums[at..at + 8].try_into().expect("8 bytes"));
            if xxh3_64(stride) != stored {
                let offset = (first + i) as u64 * STRIDE;
                return Err(damaged(format!(
                    "checksum mismatch in bytes {offset}..{}",
                    offset + stride.len() as u64
                )));
            }
        }
        let skip = (range.start - widened.start) as usize;
        Ok(fetched.slice(skip..skip + (range.end - range.start) as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_range_is_checked_through_its_strides() {
        let file: Vec<u8> = (0..(3 * STRIDE + 100))
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let sums = BlockChecksums::new(file.len() as u64, compute(&file).into());
        let whole = Bytes::from(file.clone());
        for range in [
            0..1,
            5..STRIDE + 3,
            STRIDE..2 * STRIDE,
            3 * STRIDE + 50..3 * STRIDE + 100,
        ] {
            let widened = sums.widen(&range);
            let fetched = whole.slice(widened.start as usize..widened.end as usize);
            let got = sums.check("b.parquet", &range, fetched).unwrap();
            assert_eq!(&got[..], &file[range.start as usize..range.end as usize]);
        }
        let mut damaged = file.clone();
        damaged[STRIDE as usize + 10] ^= 4;
        let damaged = Bytes::from(damaged);
        let range = STRIDE + 20..STRIDE + 30; // the damage lies outside the bytes asked for
        let widened = sums.widen(&range);
        let error = sums
            .check(
                "b.parquet",
                &range,
                damaged.slice(widened.start as usize..widened.end as usize),
            )
            .unwrap_err();
        assert!(error.to_string().contains("b.parquet"), "{error}");
    }
}
