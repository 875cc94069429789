//! A static function from distinct key hashes to `width`-bit values: a standard Ribbon retrieval
//! structure (Dillinger & Walzer, "Ribbon filter: practically smaller than Bloom and Xor", 2021).
//! Each key XORs together the rows its 64 coefficient bits pick from a window of 64 consecutive
//! rows, so reading a key's value needs only that window: one contiguous range of 64 × `width`
//! bits, whatever the number of keys. That is what lets the locator keep its rows on object
//! storage and fetch a few hundred bytes per lookup. It stores about 1.09 × `width` bits per key
//! (at a million keys).
//!
//! A key that was not built in gets an arbitrary value: callers that must tell absent keys apart
//! put a fingerprint of the hash in some of the value's bits, which an absent key matches with
//! probability 2^-bits.
//!
//! A key's window starts at a row that grows with the key (its top bits scaled to the rows), so
//! keys given in ascending order are banded front to back, each one touching rows the previous
//! ones just touched: the working set stays in cache however large the structure. Only the
//! coefficients depend on the seed a retry changes.
//!
//! Written here rather than taken from a crate: the crates that build static functions (sux's
//! VFunc) and xorf's fuse filters keep their layout and position functions internal, and binary
//! fuse layouts spread a key over three segments (tens of KB apart at a million keys), not one
//! small window. The locator stores these rows on object storage and fetches them by byte range,
//! so the layout and the position function are part of Sieve's on-disk format and are pinned
//! here, like the value hash.

use crate::error::IndexError;

/// Rows a key's value is spread over: the coefficient word's bits.
pub const WINDOW: usize = 64;

/// Seeds tried before construction gives up; the overhead grows a little with each attempt.
const MAX_ATTEMPTS: u32 = 32;

/// Spare rows per key on the first attempt; each retry adds a tenth. Measured (release, 8 key
/// sets each): a 64-bit window's threshold is sharp, about 7% at 100k keys, 8.3% at 1M and 10%
/// at 4M, which is why the locator cuts its keys into small shards
/// ([`crate::locator::SHARD_KEYS`]).
const BASE_OVERHEAD: f64 = 0.08;

/// Where a structure's rows lie: everything a reader needs besides the rows themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub seed: u32,
    /// Rows in the structure, at least [`WINDOW`].
    pub rows: u32,
    /// Bits per row (and per value), 1 ..= 64.
    pub width: u8,
}

impl Geometry {
    fn for_keys(keys: usize, width: u8, attempt: u32) -> Self {
        let overhead = BASE_OVERHEAD * (1.0 + f64::from(attempt) / 10.0);
        let rows = (keys as f64 * (1.0 + overhead)).ceil() as u64 + WINDOW as u64 - 1;
        Self {
            seed: attempt,
            rows: rows.max(WINDOW as u64).min(u64::from(u32::MAX)) as u32,
            width,
        }
    }

    /// Bytes of the packed rows.
    pub fn byte_len(&self) -> usize {
        (self.rows as usize * usize::from(self.width)).div_ceil(8)
    }

    /// The geometry of [`Retrieval::high_bits`]`(bits)`: the same rows, at most `bits` wide.
    pub fn narrowed(&self, bits: u8) -> Self {
        Self {
            width: bits.clamp(1, self.width),
            ..*self
        }
    }

    /// The first row of a key's window (non-decreasing in the key) and which of its rows the
    /// key XORs (bit 0 always set).
    #[inline]
    pub fn place(&self, key: u64) -> (usize, u64) {
        let starts = u64::from(self.rows) - WINDOW as u64 + 1;
        let start = ((u128::from(key) * u128::from(starts)) >> 64) as usize;
        (start, mix(key, u64::from(self.seed)) | 1)
    }

    /// The byte range of the packed rows that holds a key's whole window.
    pub fn window(&self, hash: u64) -> std::ops::Range<usize> {
        let (start, _) = self.place(hash);
        let width = usize::from(self.width);
        (start * width / 8)..((start + WINDOW) * width).div_ceil(8)
    }
}

/// murmur3's 64-bit finaliser over `key + seed`.
#[inline]
fn mix(key: u64, seed: u64) -> u64 {
    let mut h = key.wrapping_add(seed);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Rows packed `width` bits each, little-endian, in bytes: row `i` starts at bit `i · width`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retrieval {
    geometry: Geometry,
    cells: Vec<u8>,
}

/// Working memory for building many structures one after another (16 bytes per row), reused so
/// that each build writes warm pages instead of faulting in fresh zeroed ones.
#[derive(Default)]
pub struct Scratch {
    coefficients: Vec<u64>,
    results: Vec<u64>,
}

impl Retrieval {
    /// Builds the function from `(key, value)` pairs with distinct keys, fastest in ascending key
    /// order; values must fit in `width` bits.
    pub fn build(
        entries: &[(u64, u64)],
        width: u8,
        scratch: &mut Scratch,
    ) -> Result<Self, IndexError> {
        if !(1..=64).contains(&width) {
            return Err(IndexError::Corrupt(format!(
                "retrieval width {width} is not 1..=64"
            )));
        }
        if let Some((_, v)) = entries.iter().find(|(_, v)| width < 64 && v >> width != 0) {
            return Err(IndexError::Corrupt(format!(
                "value {v} does not fit in {width} bits"
            )));
        }
        for attempt in 0..MAX_ATTEMPTS {
            let geometry = Geometry::for_keys(entries.len(), width, attempt);
            match band(entries, &geometry, scratch) {
                Banding::Solved => return Ok(Self::solve(geometry, scratch)),
                Banding::Duplicate => {
                    return Err(IndexError::Corrupt(
                        "retrieval keys must be distinct hashes".into(),
                    ));
                }
                Banding::Failed => {}
            }
        }
        Err(IndexError::Corrupt(format!(
            "no retrieval layout found for {} keys in {MAX_ATTEMPTS} attempts",
            entries.len()
        )))
    }

    /// Back-substitution, in place over the results: each row's value makes the rows its
    /// equation names XOR to its result. Rows no equation starts at are free and stay 0.
    ///
    /// Bit by bit of the value, as Ribbon's implementation does: `window[j]` holds bit `j` of
    /// the solution of the next 63 rows (row `i + k` at bit `k`), so a row's bit `j` is its
    /// result's bit `j` XOR the parity of its coefficients and that word: `width` independent
    /// popcounts instead of a chain of ~32 dependent loads.
    fn solve(geometry: Geometry, scratch: &mut Scratch) -> Self {
        let Scratch {
            coefficients,
            results: solution,
        } = scratch;
        let width = usize::from(geometry.width);
        // Bit 0 is the row being solved (0 until it is); shifted up after each row, so the row
        // a window no longer reaches falls off the top.
        let mut window = [0u64; 64];
        for i in (0..geometry.rows as usize).rev() {
            let (c, result) = (coefficients[i], solution[i]);
            let mut value = 0;
            for (j, bits) in window[..width].iter_mut().enumerate() {
                let bit = (result >> j ^ u64::from((c & *bits).count_ones())) & 1;
                value |= bit << j;
                *bits = (*bits | bit) << 1;
            }
            solution[i] = value;
        }
        let mut packed = vec![0u8; geometry.byte_len()];
        let width = usize::from(geometry.width);
        for (i, &row) in solution.iter().enumerate() {
            write_bits(&mut packed, i * width, width, row);
        }
        Self {
            geometry,
            cells: packed,
        }
    }

    /// A structure from its geometry and packed rows, as stored.
    pub fn from_parts(geometry: Geometry, cells: Vec<u8>) -> Result<Self, IndexError> {
        if !(1..=64).contains(&geometry.width)
            || (geometry.rows as usize) < WINDOW
            || cells.len() != geometry.byte_len()
        {
            return Err(IndexError::Corrupt(format!(
                "retrieval geometry {geometry:?} does not describe {} bytes",
                cells.len()
            )));
        }
        Ok(Self { geometry, cells })
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn cells(&self) -> &[u8] {
        &self.cells
    }

    /// The same function keeping only the top `bits` bits of each value. Every value is the XOR
    /// of some rows, bit by bit, so each row's top bits alone make the function of the values'
    /// top bits: a node filter keeps a locator's fingerprints this way and drops its slots.
    pub fn high_bits(&self, bits: u8) -> Self {
        let geometry = self.geometry.narrowed(bits);
        let bits = geometry.width;
        let (width, shift) = (usize::from(self.geometry.width), self.geometry.width - bits);
        let mut cells = vec![0u8; geometry.byte_len()];
        for row in 0..self.geometry.rows as usize {
            let value = read_bits(&self.cells, row * width, width) >> shift;
            write_bits(
                &mut cells,
                row * usize::from(bits),
                usize::from(bits),
                value,
            );
        }
        Self { geometry, cells }
    }

    /// The value built in for `hash`, or an arbitrary one if it was not.
    pub fn get(&self, hash: u64) -> u64 {
        get_in(&self.geometry, &self.cells, 0, hash)
    }
}

/// The value of `hash` read from `bytes`, the packed rows starting at byte `offset` (the whole
/// array, or just a key's [`Geometry::window`]).
pub fn get_in(geometry: &Geometry, bytes: &[u8], offset: usize, hash: u64) -> u64 {
    let width = usize::from(geometry.width);
    let (start, mut coefficients) = geometry.place(hash);
    let mut value = 0;
    while coefficients != 0 {
        let row = start + coefficients.trailing_zeros() as usize;
        value ^= read_bits(bytes, row * width - offset * 8, width);
        coefficients &= coefficients - 1;
    }
    value
}

enum Banding {
    /// The scratch holds, per row, the equation stored there (coefficients, bit 0 being the row
    /// itself) and its result; 0 coefficients where none is.
    Solved,
    /// Two keys had the same hash.
    Duplicate,
    /// The equations were not independent for this seed and size.
    Failed,
}

/// On-the-fly Gaussian elimination: each key's equation is reduced by the ones already stored
/// until it finds an empty row to lead (Ribbon's "banding").
fn band(entries: &[(u64, u64)], geometry: &Geometry, scratch: &mut Scratch) -> Banding {
    let rows = geometry.rows as usize;
    let Scratch {
        coefficients,
        results,
    } = scratch;
    for rows_of in [&mut *coefficients, &mut *results] {
        rows_of.clear();
        rows_of.resize(rows, 0);
    }
    for &(hash, value) in entries {
        let (mut row, mut c) = geometry.place(hash);
        let mut v = value;
        loop {
            if coefficients[row] == 0 {
                coefficients[row] = c;
                results[row] = v;
                break;
            }
            c ^= coefficients[row];
            v ^= results[row];
            if c == 0 {
                // The same equation again: only a repeated hash gives that with 64 random bits.
                let repeated = entries.iter().filter(|(h, _)| *h == hash).count() > 1;
                return if repeated {
                    Banding::Duplicate
                } else {
                    Banding::Failed
                };
            }
            let shift = c.trailing_zeros();
            row += shift as usize;
            c >>= shift;
        }
    }
    Banding::Solved
}

fn read_bits(bytes: &[u8], bit: usize, width: usize) -> u64 {
    let mut word = [0u8; 16];
    let start = bit / 8;
    let end = (start + 16).min(bytes.len());
    word[..end - start].copy_from_slice(&bytes[start..end]);
    let value = u128::from_le_bytes(word) >> (bit % 8);
    (value & ((1u128 << width) - 1)) as u64
}

fn write_bits(bytes: &mut [u8], bit: usize, width: usize, value: u64) {
    let mut value = u128::from(value) << (bit % 8);
    let mut at = bit / 8;
    let mut bits = width + bit % 8;
    while bits > 0 {
        bytes[at] |= value as u8;
        value >>= 8;
        at += 1;
        bits = bits.saturating_sub(8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(n: u64, width: u8, salt: u64) -> Vec<(u64, u64)> {
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1 << width) - 1
        };
        (0..n)
            .map(|i| {
                let h = mix(i, salt);
                (h, h.rotate_left(17) & mask)
            })
            .collect()
    }

    /// In any key order, with one scratch reused across sizes that grow and shrink.
    #[test]
    fn every_key_gets_its_value_at_every_size_and_width() {
        let mut scratch = Scratch::default();
        for n in [0, 1, 2, 3, 10, 100, 1000, 10_000, 200_000, 50] {
            for width in [1, 7, 8, 13, 27, 32, 41, 64] {
                let mut entries = entries(n, width, 0x5eed);
                if width % 2 == 0 {
                    entries.sort_unstable();
                }
                let r = Retrieval::build(&entries, width, &mut scratch).unwrap();
                for &(h, v) in &entries {
                    assert_eq!(r.get(h), v, "n={n} width={width}");
                    let window = r.geometry().window(h);
                    let bytes = &r.cells()[window.clone()];
                    assert_eq!(get_in(r.geometry(), bytes, window.start, h), v);
                }
            }
        }
    }

    #[test]
    fn the_top_bits_of_every_row_retrieve_the_top_bits_of_every_value() {
        let mut scratch = Scratch::default();
        for (n, width) in [(1, 1), (1000, 13), (10_000, 64), (5000, 27)] {
            let entries = entries(n, width, 0xf00d);
            let r = Retrieval::build(&entries, width, &mut scratch).unwrap();
            for bits in [1, width / 2, width] {
                let top = r.high_bits(bits.max(1));
                assert_eq!(top.geometry().width, bits.max(1));
                for &(h, v) in &entries {
                    assert_eq!(
                        top.get(h),
                        v >> (width - bits.max(1)),
                        "n={n} width={width}"
                    );
                }
            }
        }
    }

    /// The overhead [`BASE_OVERHEAD`] claims: a million keys in under 1.1 rows each within three
    /// attempts, and every key's window a few hundred bytes.
    #[test]
    fn ribbon_overhead() {
        for salt in 0..3 {
            let mut entries = entries(1_000_000, 24, salt);
            entries.sort_unstable();
            let r = Retrieval::build(&entries, 24, &mut Scratch::default()).unwrap();
            let g = r.geometry();
            assert!(g.seed <= 2, "salt {salt} needed attempt {}", g.seed);
            assert!(g.rows < 1_100_000, "{} rows", g.rows);
            assert!(g.window(12345).len() <= WINDOW * 24 / 8 + 1);
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        let scratch = &mut Scratch::default();
        assert!(Retrieval::build(&[(1, 0), (1, 1)], 8, scratch).is_err());
        assert!(Retrieval::build(&[(1, 256)], 8, scratch).is_err());
        assert!(Retrieval::build(&[(1, 0)], 0, scratch).is_err());
        let r = Retrieval::build(&entries(100, 8, 1), 8, scratch).unwrap();
        let mut cells = r.cells().to_vec();
        cells.pop();
        assert!(Retrieval::from_parts(*r.geometry(), cells).is_err());
    }
}
