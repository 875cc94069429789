//! A static function from distinct key hashes to `width`-bit values: a binary fuse "retrieval"
//! structure (Graf & Lemire's binary fuse filter, storing a value per key instead of a
//! fingerprint). It stores about 1.13 × `width` bits per key (more below ~100k keys), and reading
//! a key's value touches three cells that lie within three consecutive segments, so a reader that
//! holds only the geometry can fetch them with one small ranged read ([`Retrieval::span`]).
//!
//! A key that was not built in gets an arbitrary value: callers that must tell absent keys apart
//! put a fingerprint of the hash in some of the value's bits, which an absent key matches with
//! probability 2^-bits.
//!
//! Written here rather than taken from a crate: xorf stores only fingerprints, and the crates
//! that build static functions (sux's VFunc) keep their layout and position functions internal.
//! The locator stores these cells on object storage and fetches three of them by byte range, so
//! the layout and the position function are part of Sieve's on-disk format and must be pinned
//! and documented here, like the value hash.

use crate::error::IndexError;

/// Seeds tried before construction gives up; each fails with probability well under 1%.
const MAX_ATTEMPTS: u64 = 64;

/// Where a structure's cells lie: everything a reader needs besides the cells themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub seed: u64,
    /// Cells per segment, a power of two.
    pub segment_length: u32,
    /// Segments a key's first cell can fall in, times `segment_length`.
    pub segment_count_length: u32,
    /// Bits per cell, 1 ..= 32.
    pub width: u8,
}

impl Geometry {
    /// The layout for `keys` keys of `width`-bit values, Graf & Lemire's sizing for arity 3 (as
    /// in xorf 0.13). The formula's segments are too long just after a power-of-two step, where
    /// peeling rarely succeeds; `halved` cuts the same cells into segments half as long, as xorf
    /// does on some retries (FastFilter/xorfilter#50).
    fn for_keys(keys: usize, width: u8, seed: u64, halved: bool) -> Self {
        let n = keys.max(2) as f64;
        let mut segment_length =
            (1u32 << ((n.ln() / 3.33f64.ln() + 2.25).floor() as u32)).min(1 << 18);
        let size_factor = (0.875 + 0.25 * 1e6f64.ln() / n.ln()).max(1.125);
        let capacity = (n * size_factor).round() as u32;
        let mut segments = capacity.div_ceil(segment_length).saturating_sub(2).max(1);
        if halved && segment_length > 4 {
            segment_length /= 2;
            segments = segments * 2 + 2;
        }
        Self {
            seed,
            segment_length,
            segment_count_length: segments * segment_length,
            width,
        }
    }

    /// Cells in the structure.
    pub fn cells(&self) -> usize {
        (self.segment_count_length + 2 * self.segment_length) as usize
    }

    /// Bytes of the packed cells.
    pub fn byte_len(&self) -> usize {
        (self.cells() * usize::from(self.width)).div_ceil(8)
    }

    /// The three cells of a key hash.
    #[inline]
    pub fn positions(&self, hash: u64) -> [usize; 3] {
        let hash = mix(hash, self.seed);
        let mask = self.segment_length - 1;
        let h0 = ((u128::from(hash) * u128::from(self.segment_count_length)) >> 64) as u32;
        let h1 = (h0 + self.segment_length) ^ ((hash >> 18) as u32 & mask);
        let h2 = (h0 + 2 * self.segment_length) ^ (hash as u32 & mask);
        [h0 as usize, h1 as usize, h2 as usize]
    }

    /// The byte range of the packed cells that holds all three of a key's cells: at most three
    /// segments' worth, whatever the number of keys.
    pub fn span(&self, hash: u64) -> std::ops::Range<usize> {
        let [h0, _, h2] = self.positions(hash);
        let width = usize::from(self.width);
        (h0 * width / 8)..((h2 + 1) * width).div_ceil(8)
    }
}

/// murmur3's 64-bit finaliser over `key + seed`: positions change with the seed, so a failed
/// construction retries with another.
#[inline]
fn mix(key: u64, seed: u64) -> u64 {
    let mut h = key.wrapping_add(seed);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Cells packed `width` bits each, little-endian, in bytes: cell `i` starts at bit `i · width`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retrieval {
    geometry: Geometry,
    cells: Vec<u8>,
}

impl Retrieval {
    /// Builds the function from `(hash, value)` pairs with distinct hashes; values must fit in
    /// `width` bits. Memory is about 24 bytes per key while building.
    pub fn build(entries: &[(u64, u32)], width: u8) -> Result<Self, IndexError> {
        if !(1..=32).contains(&width) {
            return Err(IndexError::Corrupt(format!(
                "retrieval width {width} is not 1..=32"
            )));
        }
        if let Some((_, v)) = entries.iter().find(|(_, v)| width < 32 && v >> width != 0) {
            return Err(IndexError::Corrupt(format!(
                "value {v} does not fit in {width} bits"
            )));
        }
        let mut sorted: Vec<u64> = entries.iter().map(|(h, _)| *h).collect();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return Err(IndexError::Corrupt(
                "retrieval keys must be distinct hashes".into(),
            ));
        }
        drop(sorted);
        for attempt in 0..MAX_ATTEMPTS {
            let halved = attempt % 2 == 1 && entries.len() < 1_000_000;
            let geometry = Geometry::for_keys(entries.len(), width, attempt, halved);
            if let Some(order) = peel(entries, &geometry) {
                return Ok(Self::assign(entries, geometry, &order));
            }
        }
        Err(IndexError::Corrupt(format!(
            "no retrieval layout found for {} keys in {MAX_ATTEMPTS} attempts",
            entries.len()
        )))
    }

    /// Fills cells in reverse peeling order: each key's free cell makes its three XOR to its value.
    fn assign(entries: &[(u64, u32)], geometry: Geometry, order: &[(u32, u8)]) -> Self {
        let mut cells = vec![0u32; geometry.cells()];
        for &(entry, slot) in order.iter().rev() {
            let (hash, value) = entries[entry as usize];
            let p = geometry.positions(hash);
            let (own, a, b) = match slot {
                0 => (p[0], p[1], p[2]),
                1 => (p[1], p[0], p[2]),
                _ => (p[2], p[0], p[1]),
            };
            cells[own] = value ^ cells[a] ^ cells[b];
        }
        let mut packed = vec![0u8; geometry.byte_len()];
        let width = usize::from(geometry.width);
        for (i, &cell) in cells.iter().enumerate() {
            write_bits(&mut packed, i * width, width, cell);
        }
        Self {
            geometry,
            cells: packed,
        }
    }

    /// A structure from its geometry and packed cells, as stored.
    pub fn from_parts(geometry: Geometry, cells: Vec<u8>) -> Result<Self, IndexError> {
        if !(1..=32).contains(&geometry.width)
            || !geometry.segment_length.is_power_of_two()
            || geometry.segment_count_length % geometry.segment_length != 0
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

    /// The value built in for `hash`, or an arbitrary one if it was not.
    pub fn get(&self, hash: u64) -> u32 {
        get_in(&self.geometry, &self.cells, 0, hash)
    }
}

/// The value of `hash` read from `bytes`, the packed cells starting at byte `offset` (the whole
/// array, or just a key's [`Geometry::span`]).
pub fn get_in(geometry: &Geometry, bytes: &[u8], offset: usize, hash: u64) -> u32 {
    let width = usize::from(geometry.width);
    geometry.positions(hash).iter().fold(0, |acc, &p| {
        acc ^ read_bits(bytes, p * width - offset * 8, width)
    })
}

/// Peels the 3-hypergraph of the keys' cells: the order in which keys (with the slot of the cell
/// each one owns) can be assigned, or None if this seed leaves a core that cannot be peeled.
fn peel(entries: &[(u64, u32)], geometry: &Geometry) -> Option<Vec<(u32, u8)>> {
    let cells = geometry.cells();
    // Per cell: how many keys use it (·4) plus the XOR of the slots they use it as, and the XOR
    // of their entry numbers, so a cell used once names its key.
    let mut count = vec![0u8; cells];
    let mut xor = vec![0u32; cells];
    for (i, &(hash, _)) in entries.iter().enumerate() {
        for (slot, p) in geometry.positions(hash).into_iter().enumerate() {
            count[p] = count[p].checked_add(4)?;
            count[p] ^= slot as u8;
            xor[p] ^= i as u32;
        }
    }
    let mut alone: Vec<u32> = (0..cells as u32)
        .filter(|&c| count[c as usize] >> 2 == 1)
        .collect();
    let mut order = Vec::with_capacity(entries.len());
    while let Some(cell) = alone.pop() {
        let cell = cell as usize;
        if count[cell] >> 2 != 1 {
            continue;
        }
        let (entry, slot) = (xor[cell], count[cell] & 3);
        order.push((entry, slot));
        for (other_slot, p) in geometry
            .positions(entries[entry as usize].0)
            .into_iter()
            .enumerate()
        {
            if other_slot as u8 == slot {
                continue;
            }
            count[p] -= 4;
            count[p] ^= other_slot as u8;
            xor[p] ^= entry;
            if count[p] >> 2 == 1 {
                alone.push(p as u32);
            }
        }
        count[cell] = 0;
    }
    (order.len() == entries.len()).then_some(order)
}

fn read_bits(bytes: &[u8], bit: usize, width: usize) -> u32 {
    let mut word = [0u8; 8];
    let start = bit / 8;
    let end = (start + 8).min(bytes.len());
    word[..end - start].copy_from_slice(&bytes[start..end]);
    let value = u64::from_le_bytes(word) >> (bit % 8);
    (value & ((1u64 << width) - 1)) as u32
}

fn write_bits(bytes: &mut [u8], bit: usize, width: usize, value: u32) {
    let mut value = u64::from(value) << (bit % 8);
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

    fn entries(n: u64, width: u8) -> Vec<(u64, u32)> {
        let mask = if width == 32 {
            u32::MAX
        } else {
            (1 << width) - 1
        };
        (0..n)
            .map(|i| {
                let h = mix(i, 0x5eed);
                (h, (h >> 7) as u32 & mask)
            })
            .collect()
    }

    #[test]
    fn every_key_gets_its_value_at_every_size_and_width() {
        for n in [0, 1, 2, 3, 10, 100, 1000, 10_000, 200_000] {
            for width in [1, 7, 8, 13, 27, 32] {
                let entries = entries(n, width);
                let r = Retrieval::build(&entries, width).unwrap();
                for &(h, v) in &entries {
                    assert_eq!(r.get(h), v, "n={n} width={width}");
                    let span = r.geometry().span(h);
                    assert_eq!(
                        get_in(r.geometry(), &r.cells()[span.clone()], span.start, h),
                        v
                    );
                }
            }
        }
    }

    #[test]
    fn a_million_keys_cost_under_1_2_cells_each_and_a_span_is_small() {
        let r = Retrieval::build(&entries(1_000_000, 24), 24).unwrap();
        let g = r.geometry();
        assert!(g.cells() < 1_200_000, "{} cells", g.cells());
        let widest = (0..10_000).map(|i| g.span(mix(i, 1)).len()).max().unwrap();
        assert!(
            widest <= 3 * g.segment_length as usize * 3 + 4,
            "{widest} bytes"
        );
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(Retrieval::build(&[(1, 0), (1, 1)], 8).is_err());
        assert!(Retrieval::build(&[(1, 256)], 8).is_err());
        assert!(Retrieval::build(&[(1, 0)], 0).is_err());
        let r = Retrieval::build(&entries(100, 8), 8).unwrap();
        let mut cells = r.cells().to_vec();
        cells.pop();
        assert!(Retrieval::from_parts(*r.geometry(), cells).is_err());
    }
}
