//! Split-block bloom filter in Parquet's layout (32-byte blocks of eight 32-bit words, one bit set
//! per word), by `sbbf-rs-safe`: the classic baseline the xor-family filters are compared against.
//!
//! The payload is the filter's bytes. The crate keeps its own 64-byte-aligned buffer for SIMD, so
//! opening copies the bytes once.

use sbbf_rs_safe::Filter;

use crate::error::IndexError;

/// ~1% false positives (Parquet's sizing formula gives 9.7 bits/key at 1%; blocks are whole).
pub const BITS_PER_KEY: usize = 10;
/// Over-provisioning against the cardinality estimate's error (HLL p=14: 0.8% standard error).
const ESTIMATE_HEADROOM: f64 = 1.03;
const BLOCK_BYTES: usize = 32;

pub fn encode(keys: &[u64], ndv_estimate: u64) -> Vec<u8> {
    let capacity = (ndv_estimate as f64 * ESTIMATE_HEADROOM).ceil() as usize;
    let mut filter = Filter::new(BITS_PER_KEY, capacity.max(1));
    for &key in keys {
        filter.insert_hash(key);
    }
    filter.as_bytes().to_vec()
}

pub fn open(payload: &[u8]) -> Result<Filter, IndexError> {
    Filter::from_bytes(payload)
        .ok_or_else(|| IndexError::Corrupt("bloom entry is not a whole number of blocks".into()))
}

/// The expected false-positive rate of a split-block filter: a block holding `i` keys answers
/// "maybe" with probability (1 - (31/32)^i)^8, and keys fall into blocks as a Poisson process.
pub fn expected_fpr(keys: u64, bytes: usize) -> f64 {
    let lambda = keys as f64 / (bytes / BLOCK_BYTES) as f64;
    let mut poisson = (-lambda).exp();
    let mut fpr = 0.0;
    for i in 0..(lambda * 4.0 + 64.0) as u32 {
        if i > 0 {
            poisson *= lambda / f64::from(i);
        }
        fpr += poisson * (1.0 - (31.0f64 / 32.0).powi(i as i32)).powi(8);
    }
    fpr
}
