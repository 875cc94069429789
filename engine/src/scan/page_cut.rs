//! Where a data page's first rows end in its bytes, so that a lookup whose rows end inside the
//! page decompresses it only that far ([`super::page_codec::PageCodec::decompress_until`]) and hands
//! parquet-rs a page of just those rows.
//!
//! Only pages this can tell exactly are cut: version 1 data pages (PyArrow's, Spark's and
//! parquet-rs's default) of a flat column (no repetition levels, at most one definition level,
//! RLE-encoded), PLAIN-encoded. Such a page is its definition levels (a 4-byte length, then
//! RLE/bit-packed runs of 1-bit levels) followed by its non-null values, one after another:
//! fixed-width, bit-packed booleans, or byte arrays each after a 4-byte length
//! (parquet-format's Encodings.md). Any other page is decompressed whole.
//!
//! The runs are walked here rather than by parquet-rs's level decoder, which is not public.

use datafusion::parquet::basic::{Encoding, Type};
use datafusion::parquet::schema::types::ColumnDescriptor;

use super::page_codec::Reach;

/// How a flat column's PLAIN pages are laid out.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    /// Whether its pages begin with definition levels.
    pub(super) optional: bool,
    pub(super) values: Values,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Values {
    /// Bit-packed, eight to a byte.
    Bits,
    /// This many bytes each.
    Fixed(usize),
    /// Each a 4-byte little-endian length, then that many bytes.
    Lengths,
}

impl Layout {
    /// Whether the column's values are byte arrays.
    pub(super) fn byte_arrays(&self) -> bool {
        matches!(self.values, Values::Lengths)
    }

    /// `column`'s layout; None for a column whose pages are never cut (nested).
    pub fn of(column: &ColumnDescriptor) -> Option<Layout> {
        if column.max_rep_level() > 0 || column.max_def_level() > 1 {
            return None;
        }
        let values = match column.physical_type() {
            Type::BOOLEAN => Values::Bits,
            Type::INT32 | Type::FLOAT => Values::Fixed(4),
            Type::INT64 | Type::DOUBLE => Values::Fixed(8),
            Type::INT96 => Values::Fixed(12),
            Type::FIXED_LEN_BYTE_ARRAY => Values::Fixed(
                usize::try_from(column.type_length())
                    .ok()
                    .filter(|w| *w > 0)?,
            ),
            Type::BYTE_ARRAY => Values::Lengths,
        };
        Some(Layout {
            optional: column.max_def_level() == 1,
            values,
        })
    }
}

/// A page's first `rows` rows, found as its bytes are decompressed.
pub(crate) struct PageCut {
    layout: Layout,
    rows: usize,
    state: State,
}

enum State {
    /// The levels are not all decompressed yet.
    Levels,
    /// The values begin at `at`; `left` of the rows' values are not yet passed.
    Values { at: usize, left: usize },
}

impl PageCut {
    /// The cut of a version 1 data page's first `rows` rows; None where the page's encodings
    /// are not ones a cut can tell.
    pub fn new(layout: Layout, rows: usize, encoding: Encoding, levels: Encoding) -> Option<Self> {
        let plain = encoding == Encoding::PLAIN;
        (plain && (!layout.optional || levels == Encoding::RLE)).then_some(Self {
            layout,
            rows,
            state: State::Levels,
        })
    }

    /// How many rows the cut keeps.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Where the rows end, given the page's first bytes.
    pub fn reach(&mut self, page: &[u8]) -> Reach {
        if let State::Levels = self.state {
            let (at, left) = if self.layout.optional {
                let Some(length) = page.first_chunk::<4>().map(|l| u32::from_le_bytes(*l)) else {
                    return Reach::Further;
                };
                let end = 4 + length as usize;
                let Some(levels) = page.get(4..end) else {
                    return Reach::Further;
                };
                match present(levels, self.rows) {
                    Some(present) => (end, present),
                    None => return Reach::Whole,
                }
            } else {
                (0, self.rows)
            };
            self.state = State::Values { at, left };
        }
        let State::Values { at, left } = &mut self.state else {
            unreachable!("the levels were passed above");
        };
        match self.layout.values {
            Values::Bits => Reach::Within(*at + left.div_ceil(8)),
            Values::Fixed(width) => match left.checked_mul(width) {
                Some(bytes) => Reach::Within(at.saturating_add(bytes)),
                None => Reach::Whole,
            },
            Values::Lengths => {
                while *left > 0 {
                    let Some(length) = page.get(*at..).and_then(|p| p.first_chunk::<4>()) else {
                        return Reach::Further;
                    };
                    *at = at.saturating_add(4 + u32::from_le_bytes(*length) as usize);
                    *left -= 1;
                }
                Reach::Within(*at)
            }
        }
    }
}

/// How many of the first `rows` of 1-bit definition levels `levels` holds are 1 (a value is
/// present); None where the runs end first or are malformed.
pub(super) fn present(mut levels: &[u8], rows: usize) -> Option<usize> {
    let (mut left, mut present) = (rows, 0);
    while left > 0 {
        let header = uleb128(&mut levels)?;
        let count = usize::try_from(header >> 1).ok().filter(|c| *c > 0)?;
        if header & 1 == 0 {
            // A repeated run: `count` times the value in the next byte.
            let (value, rest) = levels.split_first()?;
            levels = rest;
            let taken = count.min(left);
            present += taken * usize::from(value & 1);
            left -= taken;
        } else {
            // A bit-packed run of `count` groups of 8 levels, one byte each.
            let bytes = levels.get(..count)?;
            levels = &levels[count..];
            let taken = (count * 8).min(left);
            let (whole, bits) = (taken / 8, taken % 8);
            let ones: u32 = bytes[..whole].iter().map(|b| b.count_ones()).sum();
            let partial = bytes
                .get(whole)
                .map_or(0, |b| (b & ((1 << bits) - 1)).count_ones());
            present += (ones + partial) as usize;
            left -= taken;
        }
    }
    Some(present)
}

/// An unsigned LEB128 varint, as RLE run headers are written, taken off the front of `bytes`.
pub(super) fn uleb128(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(optional: bool, values: Values, rows: usize, page: &[u8]) -> Option<usize> {
        let layout = Layout { optional, values };
        let mut cut = PageCut::new(layout, rows, Encoding::PLAIN, Encoding::RLE).unwrap();
        match cut.reach(page) {
            Reach::Within(n) => Some(n),
            Reach::Further | Reach::Whole => None,
        }
    }

    /// A page's definition levels, as runs: a repeated run of 1s, a bit-packed group, a repeated
    /// run of 0s.
    fn levels() -> Vec<u8> {
        // 10 present; then 8 levels 1,0,1,1,0,0,0,1 (LSB first); then 5 absent.
        let runs = [10 << 1, 1, (1 << 1) | 1, 0b1000_1101, 5 << 1, 0];
        let mut page = (runs.len() as u32).to_le_bytes().to_vec();
        page.extend(runs);
        page
    }

    #[test]
    fn the_rows_end_after_their_levels_and_present_values() {
        let levels = levels();
        let at = levels.len();
        // Of the first 12 rows, 11 are present; of 18, 14; of 23, 14.
        for (rows, present) in [(0, 0), (10, 10), (12, 11), (18, 14), (23, 14)] {
            let got = cut(true, Values::Fixed(8), rows, &levels);
            assert_eq!(got, Some(at + 8 * present), "rows {rows}");
            let got = cut(true, Values::Bits, rows, &levels);
            assert_eq!(got, Some(at + present.div_ceil(8)), "rows {rows}");
        }
        // More rows than the runs hold: whole.
        assert_eq!(cut(true, Values::Fixed(8), 24, &levels), None);
        // Required: no levels.
        assert_eq!(cut(false, Values::Fixed(4), 7, &[]), Some(28));
    }

    #[test]
    fn byte_arrays_are_walked_as_their_bytes_arrive() {
        let mut page = Vec::new();
        for value in ["a", "", "bcd", "efgh"] {
            page.extend((value.len() as u32).to_le_bytes());
            page.extend(value.as_bytes());
        }
        let layout = Layout {
            optional: false,
            values: Values::Lengths,
        };
        let mut cut = PageCut::new(layout, 3, Encoding::PLAIN, Encoding::RLE).unwrap();
        // The second and third values' lengths are not there yet; then they are, and the
        // third's end (5 + 4 + 7 bytes) is told, though its bytes are not all there.
        assert!(matches!(cut.reach(&page[..6]), Reach::Further));
        assert!(matches!(cut.reach(&page[..10]), Reach::Further));
        assert!(matches!(cut.reach(&page[..13]), Reach::Within(16)));
        assert!(matches!(cut.reach(&page), Reach::Within(16)));
    }

    #[test]
    fn pages_a_cut_cannot_tell_are_not_cut() {
        let layout = Layout {
            optional: true,
            values: Values::Fixed(8),
        };
        let dictionary = Encoding::RLE_DICTIONARY;
        assert!(PageCut::new(layout, 1, dictionary, Encoding::RLE).is_none());
        #[allow(deprecated)]
        let packed = Encoding::BIT_PACKED;
        assert!(PageCut::new(layout, 1, Encoding::PLAIN, packed).is_none());
        // A run of zero length is malformed.
        let mut page = 2u32.to_le_bytes().to_vec();
        page.extend([0, 1]);
        let mut cut = PageCut::new(layout, 1, Encoding::PLAIN, Encoding::RLE).unwrap();
        assert!(matches!(cut.reach(&page), Reach::Whole));
    }
}
