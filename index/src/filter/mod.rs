//! One interface over every kind of column index: build from a block's distinct value hashes into a
//! payload, open a payload (validated, so probing can never read out of bounds), probe with a hash.

mod bloom;
mod cuckoo;
mod exact;
mod fuse;

use std::sync::Arc;

use bytes::Bytes;
use xorf::{BinaryFuse8Ref, BinaryFuse16Ref, Filter, FilterRef, Xor8, Xor16};

pub use bloom::expected_fpr as bloom_expected_fpr;
pub use cuckoo::{Cuckoo, Full, expected_fpr as cuckoo_expected_fpr};

use crate::error::IndexError;
use crate::kind::{EntryKind, FilterKind};

/// Builds the payload of `kind` from sorted distinct `keys`. Returns the kind actually built: a
/// binary fuse construction that fails falls back to the xor filter of the same width.
pub fn build(kind: EntryKind, keys: &[u64], ndv_estimate: u64) -> (EntryKind, Vec<u8>) {
    match kind {
        EntryKind::MinMaxOnly => (kind, Vec::new()),
        EntryKind::Exact => (kind, exact::encode(keys)),
        EntryKind::Filter(FilterKind::Xor8) => (kind, fuse::encode_xor8(keys)),
        EntryKind::Filter(FilterKind::Xor16) => (kind, fuse::encode_xor16(keys)),
        EntryKind::Filter(FilterKind::BinaryFuse8) => match fuse::encode_fuse8(keys) {
            Some(payload) => (kind, payload),
            None => (EntryKind::Filter(FilterKind::Xor8), fuse::encode_xor8(keys)),
        },
        EntryKind::Filter(FilterKind::BinaryFuse16) => match fuse::encode_fuse16(keys) {
            Some(payload) => (kind, payload),
            None => (
                EntryKind::Filter(FilterKind::Xor16),
                fuse::encode_xor16(keys),
            ),
        },
        EntryKind::Filter(FilterKind::Cuckoo12) => {
            (kind, Cuckoo::build(12, keys, ndv_estimate).into_bytes())
        }
        EntryKind::Filter(FilterKind::Cuckoo16) => {
            (kind, Cuckoo::build(16, keys, ndv_estimate).into_bytes())
        }
        EntryKind::Filter(FilterKind::Bloom) => (kind, bloom::encode(keys, ndv_estimate)),
    }
}

/// A column index ready to probe. Fuse, cuckoo and exact entries probe the sidecar's bytes in
/// place; xor and bloom hold a decoded copy (their crates have no borrowed form), shared, so a
/// clone costs a reference count whatever the kind: an attached table keeps a clone of each row
/// group's filter in one array per data file, and probes them without following a pointer to
/// each row group's entry. A fuse filter's descriptor is kept beside the fingerprints' address
/// rather than read from the sidecar's bytes, for the same reason: the fingerprints' positions
/// depend on it, so reading it from another cache line put a memory access in front of each
/// probe's three.
#[derive(Debug, Clone)]
pub enum ColumnFilter {
    MinMaxOnly,
    Exact(Bytes),
    Xor8(Arc<Xor8>),
    Xor16(Arc<Xor16>),
    BinaryFuse8 {
        descriptor: FuseDescriptor,
        fingerprints: Bytes,
    },
    BinaryFuse16 {
        descriptor: FuseDescriptor,
        fingerprints: Bytes,
    },
    Cuckoo(Cuckoo<Bytes>),
    Bloom(Arc<sbbf_rs_safe::Filter>),
}

/// A binary fuse filter's descriptor as xorf serializes it ([`xorf::Descriptor::DMA_LEN`]
/// bytes).
pub type FuseDescriptor = [u8; xorf::Descriptor::DMA_LEN];

impl ColumnFilter {
    /// `payload` must start 8-byte aligned in memory (the sidecar reader guarantees it).
    pub fn open(kind: EntryKind, key_count: u64, payload: Bytes) -> Result<Self, IndexError> {
        let fuse_parts = |width| -> Result<(FuseDescriptor, Bytes), IndexError> {
            let (descriptor, fingerprints) = fuse::validate_fuse(&payload, width)?;
            let descriptor: FuseDescriptor = descriptor.try_into().expect("validated length");
            Ok((descriptor, payload.slice_ref(fingerprints)))
        };
        Ok(match kind {
            EntryKind::MinMaxOnly if payload.is_empty() => ColumnFilter::MinMaxOnly,
            EntryKind::MinMaxOnly => {
                return Err(IndexError::Corrupt(
                    "min/max-only entry has a payload".into(),
                ));
            }
            EntryKind::Exact => {
                exact::validate(&payload, key_count)?;
                ColumnFilter::Exact(payload)
            }
            EntryKind::Filter(FilterKind::Xor8) => {
                ColumnFilter::Xor8(Arc::new(fuse::open_xor8(&payload)?))
            }
            EntryKind::Filter(FilterKind::Xor16) => {
                ColumnFilter::Xor16(Arc::new(fuse::open_xor16(&payload)?))
            }
            EntryKind::Filter(FilterKind::BinaryFuse8) => {
                let (descriptor, fingerprints) = fuse_parts(1)?;
                ColumnFilter::BinaryFuse8 {
                    descriptor,
                    fingerprints,
                }
            }
            EntryKind::Filter(FilterKind::BinaryFuse16) => {
                let (descriptor, fingerprints) = fuse_parts(2)?;
                ColumnFilter::BinaryFuse16 {
                    descriptor,
                    fingerprints,
                }
            }
            EntryKind::Filter(kind @ (FilterKind::Cuckoo12 | FilterKind::Cuckoo16)) => {
                let cuckoo = Cuckoo::open(payload)?;
                let bits = if kind == FilterKind::Cuckoo12 { 12 } else { 16 };
                if cuckoo.fingerprint_bits() != bits {
                    return Err(IndexError::Corrupt(
                        "cuckoo fingerprint width mismatch".into(),
                    ));
                }
                ColumnFilter::Cuckoo(cuckoo)
            }
            EntryKind::Filter(FilterKind::Bloom) => {
                ColumnFilter::Bloom(Arc::new(bloom::open(&payload)?))
            }
        })
    }

    /// False only if no value with this hash is in the block. True for min/max-only entries:
    /// there the block's statistics decide.
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        match self {
            ColumnFilter::MinMaxOnly => true,
            ColumnFilter::Exact(payload) => exact::contains(payload, hash),
            ColumnFilter::Xor8(f) => f.contains(&hash),
            ColumnFilter::Xor16(f) => f.contains(&hash),
            ColumnFilter::BinaryFuse8 {
                descriptor,
                fingerprints,
            } => BinaryFuse8Ref::from_dma(descriptor, fingerprints).contains(&hash),
            ColumnFilter::BinaryFuse16 {
                descriptor,
                fingerprints,
            } => BinaryFuse16Ref::from_dma(descriptor, fingerprints).contains(&hash),
            ColumnFilter::Cuckoo(f) => f.contains(hash),
            ColumnFilter::Bloom(f) => f.contains_hash(hash),
        }
    }
}
