//! A dictionary-encoded data page rewritten as a PLAIN page of the rows a lookup reads, so that
//! parquet-rs never decodes the chunk's dictionary.
//!
//! Writers begin each row group's column chunks with a dictionary (PyArrow's up to 1 MB, of the
//! first ~50,000 strings or ~131,000 int64s of a column of unique keys) and encode the first data
//! pages as indices into it. Parquet-rs's column reader decodes the whole dictionary page into
//! its own buffers before the first such page (`set_dict`: every value copied, strings checked as
//! UTF-8), which for a point lookup landing in those pages cost more than the rest of its read
//! (15% of all lookups' CPU on PyIceberg's files). Here the page's indices of the rows read are
//! looked up in the dictionary as it is stored (its PLAIN values, found by their offsets, which
//! are kept beside it) and written out as the values themselves: a PLAIN page parquet-rs decodes
//! like any other.
//!
//! A page is rewritten only where that is exact: a version 1 data page of a flat column whose
//! definition levels are RLE runs (as [`super::page_cut`] reads them) and whose values are
//! RLE/bit-packed hybrid indices (parquet-format's Encodings.md). The rows before the first one
//! a lookup selects are given placeholder values (a zero-length string, zero bytes): parquet-rs
//! only skips them. Anything else, an index out of the dictionary included, leaves the page to
//! parquet-rs, which reads it (or reports it corrupt) as it would.
//!
//! The hybrid indices are decoded here because parquet-rs's `RleDecoder` is not public (its
//! `encodings` module is behind the `experimental` feature).

use bytes::Bytes;

use super::page_cut::{Layout, Values, present, uleb128};

/// A dictionary page's values as stored (PLAIN), and where each begins.
pub(crate) struct Dictionary {
    values: Bytes,
    entries: Entries,
}

enum Entries {
    /// Each this many bytes.
    Fixed { width: usize, count: usize },
    /// Byte arrays: where each value's 4-byte length begins, and after the last one, as
    /// little-endian u32s ([`offsets`]).
    Offsets(Bytes),
}

impl Dictionary {
    /// The dictionary page `values` of `count` values in a column laid out as `layout`, with the
    /// offsets of its byte arrays (from [`offsets`]); None for values a page cannot be rewritten
    /// from (booleans, offsets missing or not matching).
    pub fn new(
        layout: Layout,
        values: Bytes,
        count: usize,
        offsets: Option<Bytes>,
    ) -> Option<Self> {
        let entries = match layout.values {
            Values::Bits => return None,
            Values::Fixed(width) => {
                (count.checked_mul(width)? <= values.len()).then_some(())?;
                Entries::Fixed { width, count }
            }
            Values::Lengths => {
                let offsets = offsets?;
                (offsets.len() == (count + 1) * 4).then_some(())?;
                Entries::Offsets(offsets)
            }
        };
        Some(Self { values, entries })
    }

    /// The stored bytes of value `index`: for a byte array, its length and then its bytes, as
    /// a PLAIN page holds it.
    fn entry(&self, index: usize) -> Option<&[u8]> {
        match &self.entries {
            Entries::Fixed { width, count } => {
                (index < *count).then_some(())?;
                self.values.get(index * width..(index + 1) * width)
            }
            Entries::Offsets(offsets) => {
                let at = |i: usize| {
                    let bytes = offsets.get(i * 4..i * 4 + 4)?;
                    Some(u32::from_le_bytes(bytes.try_into().ok()?) as usize)
                };
                self.values.get(at(index)?..at(index + 1)?)
            }
        }
    }

    /// A placeholder value, for a row read only to be skipped.
    fn placeholder(&self) -> usize {
        match self.entries {
            Entries::Fixed { width, .. } => width,
            // A zero length: an empty string.
            Entries::Offsets(_) => 4,
        }
    }
}

/// Where each of the `count` byte arrays of a PLAIN dictionary page `values` begins, and where
/// the last ends, as little-endian u32s: computed once per dictionary and kept beside it; None
/// where the lengths run past the page.
pub(crate) fn offsets(values: &[u8], count: usize) -> Option<Bytes> {
    let mut offsets = Vec::with_capacity((count + 1) * 4);
    let mut at = 0usize;
    for _ in 0..count {
        offsets.extend_from_slice(&u32::try_from(at).ok()?.to_le_bytes());
        let length = values.get(at..at + 4)?;
        at += 4 + u32::from_le_bytes(length.try_into().ok()?) as usize;
        (at <= values.len()).then_some(())?;
    }
    offsets.extend_from_slice(&u32::try_from(at).ok()?.to_le_bytes());
    Some(Bytes::from(offsets))
}

/// The decompressed version 1 data `page` of dictionary indices, as a PLAIN page of its first
/// `rows` rows, the first `placeholders` of them given placeholder values; None where it cannot
/// be rewritten exactly (see the module's doc).
pub(crate) fn plain_page(
    page: &[u8],
    layout: Layout,
    dictionary: &Dictionary,
    rows: usize,
    placeholders: usize,
) -> Option<Vec<u8>> {
    let placeholders = placeholders.min(rows);
    let (levels_end, kept, skipped) = if layout.optional {
        let length = u32::from_le_bytes(*page.first_chunk::<4>()?) as usize;
        let end = 4usize.checked_add(length)?;
        let levels = page.get(4..end)?;
        (end, present(levels, rows)?, present(levels, placeholders)?)
    } else {
        (0, rows, placeholders)
    };
    let (width, indices) = page.get(levels_end..)?.split_first()?;
    let mut out = Vec::with_capacity(levels_end + kept * dictionary.placeholder());
    out.extend_from_slice(&page[..levels_end]);
    out.resize(out.len() + skipped * dictionary.placeholder(), 0);
    let mut runs = Runs::new(indices, *width)?;
    runs.skip(skipped)?;
    for _ in skipped..kept {
        out.extend_from_slice(dictionary.entry(runs.next()? as usize)?);
    }
    Some(out)
}

/// RLE/bit-packed hybrid indices of `width` bits, read one at a time.
struct Runs<'a> {
    data: &'a [u8],
    width: usize,
    run: Run<'a>,
}

enum Run<'a> {
    /// `left` more of `value`.
    Repeated { value: u32, left: usize },
    /// Packed values, the next at bit `at`, `left` more of them.
    Packed {
        bytes: &'a [u8],
        at: usize,
        left: usize,
    },
}

impl<'a> Runs<'a> {
    fn new(data: &'a [u8], width: u8) -> Option<Self> {
        (width <= 32).then_some(())?;
        Some(Self {
            data,
            width: width.into(),
            run: Run::Repeated { value: 0, left: 0 },
        })
    }

    /// Reads the next run's header and, for a repeated run, its value.
    fn next_run(&mut self) -> Option<()> {
        let header = uleb128(&mut self.data)?;
        let count = usize::try_from(header >> 1).ok().filter(|c| *c > 0)?;
        if header & 1 == 0 {
            let (value, rest) = self.data.split_at_checked(self.width.div_ceil(8))?;
            let mut le = [0u8; 4];
            le[..value.len()].copy_from_slice(value);
            self.data = rest;
            self.run = Run::Repeated {
                value: u32::from_le_bytes(le),
                left: count,
            };
        } else {
            // `count` groups of eight values; a writer may end the last group early.
            let length = count.checked_mul(self.width)?.min(self.data.len());
            let (bytes, rest) = self.data.split_at(length);
            self.data = rest;
            self.run = Run::Packed {
                bytes,
                at: 0,
                left: count * 8,
            };
        }
        Some(())
    }

    /// Passes `n` indices.
    fn skip(&mut self, mut n: usize) -> Option<()> {
        while n > 0 {
            match &mut self.run {
                Run::Repeated { left, .. } | Run::Packed { left, .. } if *left == 0 => {
                    self.next_run()?
                }
                Run::Repeated { left, .. } => {
                    let taken = n.min(*left);
                    *left -= taken;
                    n -= taken;
                }
                Run::Packed { at, left, .. } => {
                    let taken = n.min(*left);
                    *left -= taken;
                    *at += taken * self.width;
                    n -= taken;
                }
            }
        }
        Some(())
    }

    fn next(&mut self) -> Option<u32> {
        loop {
            match &mut self.run {
                Run::Repeated { left, .. } | Run::Packed { left, .. } if *left == 0 => {
                    self.next_run()?
                }
                Run::Repeated { value, left } => {
                    *left -= 1;
                    return Some(*value);
                }
                Run::Packed { bytes, at, left } => {
                    let (byte, shift) = (*at / 8, *at % 8);
                    // Up to 32 bits from `shift`: within the eight bytes from `byte`.
                    let mut le = [0u8; 8];
                    let there = bytes.get(byte..)?;
                    let n = there.len().min(8);
                    (n * 8 >= shift + self.width).then_some(())?;
                    le[..n].copy_from_slice(&there[..n]);
                    let mask = (1u64 << self.width) - 1;
                    *at += self.width;
                    *left -= 1;
                    return Some(((u64::from_le_bytes(le) >> shift) & mask) as u32);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-packs `values` of `width` bits, LSB first, in groups of eight.
    fn packed(values: &[u32], width: usize) -> Vec<u8> {
        let groups = values.len().div_ceil(8);
        let mut bits = vec![0u8; groups * width];
        for (i, v) in values.iter().enumerate() {
            for b in 0..width {
                if v >> b & 1 == 1 {
                    let at = i * width + b;
                    bits[at / 8] |= 1 << (at % 8);
                }
            }
        }
        let mut run = vec![((groups << 1) | 1) as u8];
        run.extend(bits);
        run
    }

    #[test]
    fn hybrid_runs_are_read_and_skipped() {
        // 5 times 3 (repeated), then 0..16 of 5 bits (packed), then 2 times 31.
        let mut data = vec![5 << 1, 3];
        let values: Vec<u32> = (0..16).collect();
        data.extend(packed(&values, 5));
        data.extend([2 << 1, 31]);
        let all: Vec<u32> = [vec![3; 5], values, vec![31; 2]].concat();
        for skip in 0..all.len() {
            let mut runs = Runs::new(&data, 5).unwrap();
            runs.skip(skip).unwrap();
            let rest: Vec<u32> = (skip..all.len()).map(|_| runs.next().unwrap()).collect();
            assert_eq!(rest, all[skip..], "skipping {skip}");
            assert_eq!(runs.next(), None);
        }
        // Wide indices: 20 bits, across byte boundaries.
        let wide = [1 << 19, 12345, 0, (1 << 20) - 1, 7, 99999, 3, 1];
        let data = packed(&wide, 20);
        let mut runs = Runs::new(&data, 20).unwrap();
        let read: Vec<u32> = (0..8).map(|_| runs.next().unwrap()).collect();
        assert_eq!(read, wide);
    }

    #[test]
    fn an_index_out_of_the_dictionary_leaves_the_page_alone() {
        let layout = Layout {
            optional: false,
            values: Values::Fixed(8),
        };
        let values = Bytes::from((0..4u64).flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
        let dictionary = Dictionary::new(layout, values, 4, None).unwrap();
        let page = |index: u32| [vec![3u8], packed(&[1, index, 2], 3)].concat();
        let plain = plain_page(&page(3), layout, &dictionary, 3, 1).unwrap();
        let expected: Vec<u8> = [0u64, 3, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(plain, expected);
        assert!(plain_page(&page(4), layout, &dictionary, 3, 0).is_none());
        // More rows than the page holds.
        assert!(plain_page(&page(3), layout, &dictionary, 9, 0).is_none());
    }
}
