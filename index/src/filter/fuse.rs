//! Xor and binary fuse filters, built and probed by `xorf`.
//!
//! Payloads: xor is `seed u64 | block_length u64 | fingerprints`, binary fuse is xorf's 20-byte
//! descriptor, 4 zero bytes, then the fingerprints, so they start 8-aligned and are probed in place
//! (xorf's `BinaryFuse*Ref`). xorf has no borrowed xor filter, so xor fingerprints are copied once
//! when a sidecar is opened. 16-bit fingerprints are little-endian.

use xorf::{BinaryFuse8, BinaryFuse16, DmaSerializable, Xor8, Xor16};

use crate::error::IndexError;

const FUSE_HEADER: usize = 24;
const XOR_HEADER: usize = 16;

fn corrupt(what: &str) -> IndexError {
    IndexError::Corrupt(format!("{what} entry is inconsistent"))
}

/// `keys` must be distinct (xor construction never terminates on duplicates).
pub fn encode_xor8(keys: &[u64]) -> Vec<u8> {
    let filter = Xor8::from(keys);
    encode_xor(filter.seed, filter.block_length, &filter.fingerprints)
}

pub fn encode_xor16(keys: &[u64]) -> Vec<u8> {
    let filter = Xor16::from(keys);
    let fingerprints: Vec<u8> = filter
        .fingerprints
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    encode_xor(filter.seed, filter.block_length, &fingerprints)
}

fn encode_xor(seed: u64, block_length: usize, fingerprints: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(XOR_HEADER + fingerprints.len());
    out.extend_from_slice(&seed.to_le_bytes());
    out.extend_from_slice(&(block_length as u64).to_le_bytes());
    out.extend_from_slice(fingerprints);
    out
}

/// Splits an xor payload after checking that every probe stays inside the fingerprints.
fn open_xor(payload: &[u8], width: usize) -> Result<(u64, usize, &[u8]), IndexError> {
    let (header, fingerprints) = payload
        .split_at_checked(XOR_HEADER)
        .ok_or(IndexError::Truncated("xor header"))?;
    let seed = u64::from_le_bytes(header[..8].try_into().expect("8 bytes"));
    let block_length = u64::from_le_bytes(header[8..].try_into().expect("8 bytes"));
    let expected = block_length.checked_mul(3 * width as u64);
    if block_length == 0 || expected != Some(fingerprints.len() as u64) {
        return Err(corrupt("xor"));
    }
    Ok((seed, block_length as usize, fingerprints))
}

pub fn open_xor8(payload: &[u8]) -> Result<Xor8, IndexError> {
    let (seed, block_length, fingerprints) = open_xor(payload, 1)?;
    Ok(Xor8 {
        seed,
        block_length,
        fingerprints: fingerprints.into(),
    })
}

pub fn open_xor16(payload: &[u8]) -> Result<Xor16, IndexError> {
    let (seed, block_length, fingerprints) = open_xor(payload, 2)?;
    let fingerprints = fingerprints
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    Ok(Xor16 {
        seed,
        block_length,
        fingerprints,
    })
}

/// Binary fuse construction can fail (in practice only on duplicate keys); the caller then falls
/// back to the xor filter of the same width.
pub fn encode_fuse8(keys: &[u64]) -> Option<Vec<u8>> {
    BinaryFuse8::try_from(keys)
        .ok()
        .map(|f| encode_fuse(&f, f.dma_fingerprints()))
}

pub fn encode_fuse16(keys: &[u64]) -> Option<Vec<u8>> {
    BinaryFuse16::try_from(keys)
        .ok()
        .map(|f| encode_fuse(&f, f.dma_fingerprints()))
}

fn encode_fuse(filter: &impl DmaSerializable, fingerprints: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; FUSE_HEADER];
    filter.dma_copy_descriptor_to(&mut out[..xorf::Descriptor::DMA_LEN]);
    // Native-endian fingerprints: the crate refuses to build on big-endian hosts.
    out.extend_from_slice(fingerprints);
    out
}

/// Checks the descriptor against the fingerprint length so no probe can index out of bounds, and
/// returns the (descriptor, fingerprints) split.
pub fn validate_fuse(payload: &[u8], width: usize) -> Result<(&[u8], &[u8]), IndexError> {
    let (header, fingerprints) = payload
        .split_at_checked(FUSE_HEADER)
        .ok_or(IndexError::Truncated("binary fuse header"))?;
    let word = |i: usize| u64::from(u32::from_le_bytes(header[i..i + 4].try_into().expect("4")));
    let (segment_length, mask, segment_count_length) = (word(8), word(12), word(16));
    let slots = segment_count_length + 2 * segment_length;
    let consistent = segment_length.is_power_of_two()
        && mask == segment_length - 1
        && segment_count_length > 0
        && segment_count_length % segment_length == 0
        && slots <= u64::from(u32::MAX)
        && slots * width as u64 == fingerprints.len() as u64
        && fingerprints.as_ptr().align_offset(width) == 0;
    if !consistent {
        return Err(corrupt("binary fuse"));
    }
    Ok((&header[..xorf::Descriptor::DMA_LEN], fingerprints))
}
