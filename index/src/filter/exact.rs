//! An exact set of a handful of hashes: for a block whose column has only a few distinct values it
//! is smaller than any filter and never says "maybe" wrongly (Databend stores 61 bytes for a
//! boolean block).

use crate::error::IndexError;

/// `keys` are sorted and distinct; the payload is them as little-endian u64s.
pub fn encode(keys: &[u64]) -> Vec<u8> {
    keys.iter().flat_map(|k| k.to_le_bytes()).collect()
}

pub fn validate(payload: &[u8], key_count: u64) -> Result<(), IndexError> {
    if payload.len() as u64 != key_count.saturating_mul(8) {
        return Err(IndexError::Corrupt(format!(
            "exact entry holds {} bytes for {key_count} keys",
            payload.len()
        )));
    }
    Ok(())
}

/// A linear scan: the list is only chosen when it is a few words long.
#[inline]
pub fn contains(payload: &[u8], hash: u64) -> bool {
    payload
        .chunks_exact(8)
        .any(|word| u64::from_le_bytes(word.try_into().expect("8-byte chunk")) == hash)
}
