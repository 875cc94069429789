//! Reading a locator's header: strict parsing, so a damaged or newer file is an error.

use super::*;
use crate::retrieval;

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
        let slice_rows = f.u32()?;
        if !(slice_rows.is_power_of_two() && SLICE_ROWS_RANGE.contains(&slice_rows)) {
            return Err(corrupt(format!("unexpected slice size {slice_rows}")));
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
            slice_rows,
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
}
