//! Sieve's index library: the pinned value hash and its canonical value forms, per-block column
//! filters (xor, binary fuse, cuckoo, split-block bloom, exact lists), cardinality-based sizing and
//! the sidecar file format.
//!
//! No I/O and no query engine here: bytes in, bytes out. The storage layer writes and fetches
//! sidecars; the engine hashes literals with [`ColumnHashes::from_array`] and probes
//! [`SidecarColumn::may_contain`].

#[cfg(target_endian = "big")]
compile_error!("the sidecar format stores fingerprints little-endian and probes them in place");

pub mod canonical;
mod cardinality;
mod column_index;
mod error;
pub mod filter;
pub mod hash;
mod hash_sort;
pub mod key_filter;
mod kind;
pub mod locator;
pub mod retrieval;
pub mod sidecar;
pub mod slice_map;

pub use canonical::{ColumnHashes, is_hashable};
pub use cardinality::estimate_ndv;
pub use column_index::{ColumnIndex, EXACT_MAX_KEYS};
pub use error::IndexError;
pub use key_filter::{KeyFilter, KeyFilterBuilder};
pub use kind::{EntryKind, FilterKind};
pub use locator::{ColumnLocator, Location, LocatorHeader};
pub use sidecar::{Sidecar, SidecarColumn, SidecarEntry, SidecarHeader};
pub use slice_map::{SliceMap, SliceOf};
