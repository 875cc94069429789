//! What a part keeps of a row group besides its filters, so that a lookup reads the pages that
//! may hold its key and not the whole row group: the row group cut into slices (at the page
//! boundaries of its columns, so a slice lies in one page of each), a [`SliceMap`] per indexed
//! column from key to slice, and, for a file written without Parquet's page index (PyArrow's
//! default), where each column's pages are, walked from their headers when it was indexed.
//!
//! Layout (all integers little-endian), the bytes a part record's map offset and length name:
//!
//! ```text
//! 4      slice count s · 4 slice map count k · 4 leaf column count c · 4 zero
//! 8·s    each slice's first row, relative to the row group: 0 first, ascending
//! per map (the sidecar's column order): 4 shard count h · 1 width · 3 zero,
//!        then per shard 4 seed · 4 rows
//! 4·c    each leaf column's page count, zero-padded to a multiple of 8
//! 24·Σ   per page: 8 offset in the file · 8 first row in the row group · 4 size with its
//!        header · 4 flags (bit 0: its values are not dictionary-encoded, so reading it needs
//!        no dictionary page; the other bits zero)
//! …      each shard's packed rows, zero-padded to a multiple of 8
//! 8      XXH3-64 of every byte before it
//! ```
//!
//! `k` is 0 for a row group of one slice, `c` is 0 for a file with a page index of its own.

use sieve_index::retrieval::{Geometry, Retrieval};
use sieve_index::{IndexError, SliceMap};
use xxhash_rust::xxh3::xxh3_64;

/// Where one page of a column chunk lies: Parquet's `PageLocation`, as Sieve stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLocation {
    pub offset: u64,
    /// Bytes of the page, its header included.
    pub size: u32,
    /// The page's first row, relative to its row group.
    pub first_row: u64,
    /// Whether its header said its values are not dictionary-encoded (false when unknown).
    pub plain: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowGroupMap {
    /// Each slice's first row, relative to the row group.
    pub slice_starts: Vec<u64>,
    /// Per indexed column, in the sidecar's order; empty for a row group of one slice.
    pub keys: Vec<SliceMap>,
    /// Per leaf column of the file, its pages; empty when the file has a page index.
    pub pages: Vec<Vec<PageLocation>>,
}

impl RowGroupMap {
    /// Rows of slice `slice` of a row group of `rows`, relative to it.
    pub fn slice_rows(&self, slice: u32, rows: u64) -> std::ops::Range<u64> {
        let i = slice as usize;
        let end = self.slice_starts.get(i + 1).copied().unwrap_or(rows);
        self.slice_starts[i]..end
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let put32 = |out: &mut Vec<u8>, n: usize| out.extend_from_slice(&(n as u32).to_le_bytes());
        put32(&mut out, self.slice_starts.len());
        put32(&mut out, self.keys.len());
        put32(&mut out, self.pages.len());
        put32(&mut out, 0);
        for start in &self.slice_starts {
            out.extend_from_slice(&start.to_le_bytes());
        }
        for map in &self.keys {
            put32(&mut out, map.shards().len());
            out.extend_from_slice(&[sieve_index::slice_map::width_for(map.slices()), 0, 0, 0]);
            for shard in map.shards() {
                put32(&mut out, shard.geometry().seed as usize);
                put32(&mut out, shard.geometry().rows as usize);
            }
        }
        for pages in &self.pages {
            put32(&mut out, pages.len());
        }
        out.resize(out.len().next_multiple_of(8), 0);
        for page in self.pages.iter().flatten() {
            out.extend_from_slice(&page.offset.to_le_bytes());
            out.extend_from_slice(&page.first_row.to_le_bytes());
            out.extend_from_slice(&page.size.to_le_bytes());
            put32(&mut out, usize::from(page.plain));
        }
        for shard in self.keys.iter().flat_map(|m| m.shards()) {
            out.extend_from_slice(shard.cells());
            out.resize(out.len().next_multiple_of(8), 0);
        }
        out.extend_from_slice(&xxh3_64(&out).to_le_bytes());
        out
    }

    /// The map stored as `bytes` of a row group of `rows` rows; an error saying why when the
    /// bytes are damaged or say something impossible.
    pub fn decode(bytes: &[u8], rows: u64) -> Result<Self, String> {
        Self::decode_with(bytes, rows, true)
    }

    /// The same, checked as strictly, without its slice maps (`keys` empty): what a process
    /// holds of a row group whose slice maps it reads with its filters, when a lookup asks
    /// them ([`super::part::RowGroupFilters`]).
    pub fn decode_layout(bytes: &[u8], rows: u64) -> Result<Self, String> {
        Self::decode_with(bytes, rows, false)
    }

    fn decode_with(bytes: &[u8], rows: u64, with_keys: bool) -> Result<Self, String> {
        let Some((body, sum)) = bytes.split_last_chunk::<8>() else {
            return Err("a row group map is truncated".into());
        };
        if u64::from_le_bytes(*sum) != xxh3_64(body) {
            return Err("a row group map's checksum does not match".into());
        }
        let mut at = Cursor { bytes: body, at: 0 };
        let (slices, maps, columns) = (at.u32()?, at.u32()?, at.u32()?);
        at.u32()?;
        let slice_starts = (0..slices)
            .map(|_| at.u64())
            .collect::<Result<Vec<_>, _>>()?;
        let ascending = slice_starts.windows(2).all(|w| w[0] < w[1]);
        if slice_starts.first().is_some_and(|&s| s != 0)
            || !ascending
            || slice_starts.last().is_some_and(|&s| s >= rows.max(1))
        {
            return Err(format!("slices {slice_starts:?} do not cut {rows} rows"));
        }
        let mut geometries = Vec::new();
        for _ in 0..maps {
            let shards = at.u32()?;
            let width = at.take(4)?[0];
            let shards = (0..shards)
                .map(|_| {
                    let (seed, rows) = (at.u32()?, at.u32()?);
                    Ok(Geometry { seed, rows, width })
                })
                .collect::<Result<Vec<_>, String>>()?;
            geometries.push(shards);
        }
        let counts = (0..columns)
            .map(|_| at.u32())
            .collect::<Result<Vec<_>, _>>()?;
        at.align8()?;
        let mut pages = Vec::with_capacity(counts.len());
        for count in counts {
            let mut column = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let (offset, first_row) = (at.u64()?, at.u64()?);
                let (size, flags) = (at.u32()?, at.u32()?);
                if flags > 1 {
                    return Err(format!("page flags {flags:#x} unknown to this build"));
                }
                column.push(PageLocation {
                    offset,
                    size,
                    first_row,
                    plain: flags == 1,
                });
            }
            let starts_at_0 = column.first().is_some_and(|p| p.first_row == 0);
            let ordered = (column.windows(2)).all(|w| {
                w[0].offset + u64::from(w[0].size) <= w[1].offset && w[0].first_row < w[1].first_row
            });
            if !starts_at_0 || !ordered || column.last().is_some_and(|p| p.first_row >= rows) {
                return Err(format!(
                    "a column's pages do not lie in order over {rows} rows"
                ));
            }
            pages.push(column);
        }
        let mut keys = Vec::with_capacity(geometries.len());
        for shards in geometries {
            let mut cells = Vec::with_capacity(shards.len());
            for g in shards {
                cells.push((g, at.take(g.byte_len())?));
                at.align8()?;
            }
            if with_keys {
                let shards = (cells.into_iter())
                    .map(|(g, cells)| {
                        Retrieval::from_parts(g, cells.to_vec())
                            .map_err(|e: IndexError| e.to_string())
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                keys.push(SliceMap::from_parts(slices, shards).map_err(|e| e.to_string())?);
            }
        }
        if at.at != body.len() {
            return Err("a row group map has bytes past its end".into());
        }
        Ok(Self {
            slice_starts,
            keys,
            pages,
        })
    }
}

/// Reads a map's fields in order, every read checked against its end.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = (self.at.checked_add(n)).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or("a row group map is truncated")?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or_default(),
        ))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or_default(),
        ))
    }

    fn align8(&mut self) -> Result<(), String> {
        self.take(self.at.next_multiple_of(8) - self.at).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use sieve_index::retrieval::Scratch;

    use super::*;

    fn map() -> RowGroupMap {
        let keys: Vec<(u64, u32)> = (0..10_000u64)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15), (i / 4000) as u32))
            .collect();
        let page = |offset, size, first_row| PageLocation {
            offset,
            size,
            first_row,
            plain: first_row > 0,
        };
        RowGroupMap {
            slice_starts: vec![0, 4000, 8000],
            keys: vec![SliceMap::build(keys, 3, &mut Scratch::default()).unwrap()],
            pages: vec![
                vec![page(4, 100, 0), page(104, 90, 4000), page(194, 80, 8000)],
                vec![page(300, 500, 0)],
            ],
        }
    }

    #[test]
    fn a_map_reads_back_as_written_and_damage_is_an_error() {
        let map = map();
        let bytes = map.encode();
        assert_eq!(RowGroupMap::decode(&bytes, 10_000).unwrap(), map);
        assert_eq!(map.slice_rows(2, 10_000), 8000..10_000);
        assert!(
            RowGroupMap::decode(&bytes, 8000).is_err(),
            "a slice past the rows"
        );
        for cut in [0, 9, bytes.len() - 1] {
            assert!(
                RowGroupMap::decode(&bytes[..cut], 10_000).is_err(),
                "cut {cut}"
            );
        }
        for flip in [0, 17, 60, bytes.len() - 20] {
            let mut damaged = bytes.clone();
            damaged[flip] ^= 1;
            assert!(
                RowGroupMap::decode(&damaged, 10_000).is_err(),
                "flip {flip}"
            );
        }
        let pages_only = RowGroupMap {
            slice_starts: vec![0],
            keys: vec![],
            pages: map.pages.clone(),
        };
        assert_eq!(
            RowGroupMap::decode(&pages_only.encode(), 10_000).unwrap(),
            pages_only
        );
    }
}
