//! A cuckoo filter (Fan et al., "Cuckoo Filter: Practically Better Than Bloom", CoNEXT 2014):
//! 4-way buckets, 12- or 16-bit fingerprints, partial-key cuckoo hashing, insert and delete.
//!
//! Written here because no crate fits (measured at 1M keys, see the index issue's note):
//! `cuckoofilter` 0.5 has fixed 8-bit fingerprints (2.9% FPR) and kicks with `thread_rng`;
//! `scalable_cuckoo_filter` 0.5 picks widths from an FPR, grows by adding wider sub-filters and
//! serializes only through serde with its hasher unsaved; `bloom-lib` has fixed 16-bit
//! fingerprints. None has a documented byte format or probes borrowed bytes. Sieve needs 12/16-bit
//! fingerprints over its pinned hash, deletes (the deletion path, node filters), byte-identical
//! output and probing in place from a sidecar.
//!
//! Payload: `fingerprint_bits u8 | 7 zero bytes | bucket_count u64 | buckets`, a bucket being
//! four fingerprints packed little-endian into 6 bytes (12-bit) or 8 bytes (16-bit). Zero marks an
//! empty slot. The bucket count needs not be a power of two: the alternate bucket is
//! `(h(fp) - i) mod m`, an involution for any m, so a filter is sized to its keys.

use crate::error::IndexError;

pub const SLOTS: usize = 4;
const HEADER: usize = 16;
/// Evictions tried before an insert gives up (the reference implementation uses 500).
const MAX_KICKS: usize = 500;
/// Fraction of slots a freshly built filter fills; 4-way buckets reach ~95% before inserts fail.
const BUILD_LOAD: f64 = 0.94;
/// Over-provisioning against the cardinality estimate's error (HLL p=14: 0.8% standard error).
const ESTIMATE_HEADROOM: f64 = 1.03;

/// The table, over owned bytes while built or mutated, over a sidecar's bytes when probed.
#[derive(Debug, Clone)]
pub struct Cuckoo<B> {
    fingerprint_bits: u32,
    buckets: u64,
    bytes: B,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

fn bucket_bytes(fingerprint_bits: u32) -> usize {
    SLOTS * fingerprint_bits as usize / 8
}

/// Maps 32 random bits onto `0..n` without division (Lemire's fast range).
#[inline]
fn range(x: u32, n: u64) -> u64 {
    (u64::from(x) * n) >> 32
}

impl<B: AsRef<[u8]>> Cuckoo<B> {
    /// Checks the header against the payload length so every probe stays in bounds.
    pub fn open(bytes: B) -> Result<Self, IndexError> {
        let payload = bytes.as_ref();
        if payload.len() < HEADER {
            return Err(IndexError::Truncated("cuckoo header"));
        }
        let fingerprint_bits = u32::from(payload[0]);
        let buckets = u64::from_le_bytes(payload[8..16].try_into().expect("8 bytes"));
        let consistent = matches!(fingerprint_bits, 12 | 16)
            && payload[1..8].iter().all(|&b| b == 0)
            && buckets > 0
            && buckets.checked_mul(bucket_bytes(fingerprint_bits) as u64)
                == Some((payload.len() - HEADER) as u64);
        if !consistent {
            return Err(IndexError::Corrupt("cuckoo entry is inconsistent".into()));
        }
        Ok(Self {
            fingerprint_bits,
            buckets,
            bytes,
        })
    }

    pub fn fingerprint_bits(&self) -> u32 {
        self.fingerprint_bits
    }

    pub fn bucket_count(&self) -> u64 {
        self.buckets
    }

    /// The fingerprint (never zero, zero marks an empty slot) and the first bucket of a hash. They
    /// come from disjoint bits of the hash so they are independent.
    #[inline]
    fn locate(&self, hash: u64) -> (u16, u64) {
        let fp = (hash & ((1 << self.fingerprint_bits) - 1)) as u16;
        (fp.max(1), range((hash >> 32) as u32, self.buckets))
    }

    #[inline]
    fn alternate(&self, bucket: u64, fp: u16) -> u64 {
        // Fibonacci hashing spreads the few thousand fingerprint values over all buckets.
        let h = range(
            (u64::from(fp).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32,
            self.buckets,
        );
        (h + self.buckets - bucket) % self.buckets
    }

    #[inline]
    fn bucket_word(&self, bucket: u64) -> u64 {
        let width = bucket_bytes(self.fingerprint_bits);
        let start = HEADER + bucket as usize * width;
        let mut word = [0u8; 8];
        word[..width].copy_from_slice(&self.bytes.as_ref()[start..start + width]);
        u64::from_le_bytes(word)
    }

    #[inline]
    fn slot(&self, word: u64, slot: usize) -> u16 {
        ((word >> (slot as u32 * self.fingerprint_bits)) & ((1 << self.fingerprint_bits) - 1))
            as u16
    }

    #[inline]
    fn bucket_has(&self, bucket: u64, fp: u16) -> bool {
        let word = self.bucket_word(bucket);
        (0..SLOTS).any(|s| self.slot(word, s) == fp)
    }

    /// False means the key was never inserted (or was deleted as often as inserted).
    #[inline]
    pub fn contains(&self, hash: u64) -> bool {
        let (fp, i1) = self.locate(hash);
        self.bucket_has(i1, fp) || self.bucket_has(self.alternate(i1, fp), fp)
    }

    pub fn occupied_slots(&self) -> u64 {
        (0..self.buckets)
            .map(|b| {
                let word = self.bucket_word(b);
                (0..SLOTS).filter(|&s| self.slot(word, s) != 0).count() as u64
            })
            .sum()
    }
}

impl Cuckoo<Vec<u8>> {
    /// An empty filter with room for `capacity` keys at full load.
    pub fn with_capacity(fingerprint_bits: u32, capacity: u64) -> Self {
        assert!(
            matches!(fingerprint_bits, 12 | 16),
            "cuckoo fingerprints are 12 or 16 bits"
        );
        let buckets = capacity.div_ceil(SLOTS as u64).max(1);
        let mut bytes = vec![0u8; HEADER + buckets as usize * bucket_bytes(fingerprint_bits)];
        bytes[0] = fingerprint_bits as u8;
        bytes[8..16].copy_from_slice(&buckets.to_le_bytes());
        Self {
            fingerprint_bits,
            buckets,
            bytes,
        }
    }

    /// Builds from distinct keys, sized from the cardinality estimate; grows and rebuilds in the
    /// rare case an insert fails, so the result always holds every key.
    pub fn build(fingerprint_bits: u32, keys: &[u64], ndv_estimate: u64) -> Self {
        let mut capacity = (ndv_estimate as f64 * ESTIMATE_HEADROOM / BUILD_LOAD).ceil() as u64;
        loop {
            let mut filter = Self::with_capacity(fingerprint_bits, capacity);
            let mut kicks = KickRng::default();
            if keys
                .iter()
                .all(|&k| filter.insert_with(k, &mut kicks).is_ok())
            {
                return filter;
            }
            capacity += capacity / 16 + SLOTS as u64;
        }
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    fn set_slot(&mut self, bucket: u64, slot: usize, fp: u16) {
        let width = bucket_bytes(self.fingerprint_bits);
        let shift = slot as u32 * self.fingerprint_bits;
        let mask = ((1u64 << self.fingerprint_bits) - 1) << shift;
        let word = (self.bucket_word(bucket) & !mask) | (u64::from(fp) << shift);
        let start = HEADER + bucket as usize * width;
        self.bytes[start..start + width].copy_from_slice(&word.to_le_bytes()[..width]);
    }

    fn place(&mut self, bucket: u64, fp: u16) -> bool {
        let word = self.bucket_word(bucket);
        match (0..SLOTS).find(|&s| self.slot(word, s) == 0) {
            Some(s) => {
                self.set_slot(bucket, s, fp);
                true
            }
            None => false,
        }
    }

    /// Inserts a key. On `Err(Full)` the table is exactly as it was before the call: evictions are
    /// undone, so no key that was in the filter is ever lost.
    pub fn insert(&mut self, hash: u64) -> Result<(), Full> {
        self.insert_with(hash, &mut KickRng::default())
    }

    fn insert_with(&mut self, hash: u64, rng: &mut KickRng) -> Result<(), Full> {
        let (fp, i1) = self.locate(hash);
        let i2 = self.alternate(i1, fp);
        if self.place(i1, fp) || self.place(i2, fp) {
            return Ok(());
        }
        let mut path = [(0u64, 0usize); MAX_KICKS];
        let (mut bucket, mut homeless) = (if rng.next() & 1 == 0 { i1 } else { i2 }, fp);
        for step in path.iter_mut() {
            let slot = (rng.next() % SLOTS as u64) as usize;
            let evicted = self.slot(self.bucket_word(bucket), slot);
            self.set_slot(bucket, slot, homeless);
            *step = (bucket, slot);
            homeless = evicted;
            bucket = self.alternate(bucket, homeless);
            if self.place(bucket, homeless) {
                return Ok(());
            }
        }
        for &(bucket, slot) in path.iter().rev() {
            let placed = self.slot(self.bucket_word(bucket), slot);
            self.set_slot(bucket, slot, homeless);
            homeless = placed;
        }
        Err(Full)
    }

    /// Removes one copy of a key's fingerprint. Only delete keys that were inserted: deleting an
    /// absent key that shares a fingerprint and bucket with a present one would remove that one.
    pub fn delete(&mut self, hash: u64) -> bool {
        let (fp, i1) = self.locate(hash);
        for bucket in [i1, self.alternate(i1, fp)] {
            let word = self.bucket_word(bucket);
            if let Some(s) = (0..SLOTS).find(|&s| self.slot(word, s) == fp) {
                self.set_slot(bucket, s, 0);
                return true;
            }
        }
        false
    }
}

/// The expected false-positive rate: a probe compares against the occupied slots of two buckets,
/// each matching with probability 1/(2^f - 1).
pub fn expected_fpr(fingerprint_bits: u32, load: f64) -> f64 {
    2.0 * SLOTS as f64 * load / ((1u64 << fingerprint_bits) - 1) as f64
}

/// A fixed-seed splitmix64 so that eviction choices, and so the built bytes, are reproducible.
#[derive(Debug)]
struct KickRng(u64);

impl Default for KickRng {
    fn default() -> Self {
        Self(0x2545_f491_4f6c_dd1d)
    }
}

impl KickRng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
