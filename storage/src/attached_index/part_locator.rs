//! A part's locator: Sieve's own locator format (`sieve_index::locator`) over the row groups of
//! one part, each row group a block and its slices the slices of its [`super::RowGroupMap`]
//! (slice 0 for a row group of one slice). One probe says which row group of the part, and which
//! slice of it, holds a key, where without it a lookup probed the filter of every row group of
//! every file its manifest bounds left (1,000 at 100M rows in 100,000-row row groups, 10,000 at
//! 10B rows in PyIceberg's 1M-row ones).
//!
//! The header's rows per slice is written as the smallest a header may name and never read: a
//! row group's slices are cut at its pages, so their rows are the row group map's. A key in
//! several row groups of the part is [`Location::Blocks`]: the lookup asks those row groups'
//! filters, as it does for a part without a locator (version 3 and before).

use object_store::path::Path;
use sieve_index::LocatorHeader;
use sieve_index::locator::{self, BlockKeys, SLICE_ROWS_RANGE};

use crate::error::Result;
use crate::meta::table_def::DEFAULT_MAX_FALSE_READS;
use crate::write::group_keys::GroupKeys;

/// The indexed columns' keys of a part's row groups, added in the part's entry order, on their
/// way into its locator: held in memory while few, spilled to local files once many, as a
/// locator group of Sieve's own tables is ([`GroupKeys`]).
pub struct PartKeys {
    keys: GroupKeys,
    /// The most slices a row group added has.
    slices: u32,
}

impl PartKeys {
    /// For `columns` (the sidecars' order), holding at most `most_keys` keys each.
    pub fn new(columns: &[String], most_keys: usize) -> Self {
        let columns = columns.iter().map(|c| (c.clone(), most_keys));
        Self {
            keys: GroupKeys::new(columns),
            slices: 1,
        }
    }

    /// Adds the next entry's (row group's) keys, one list per column, each key with the slice
    /// of the row group it is in, of `slices`. Blocking once spilled: call it off the runtime.
    pub fn add_entry(&mut self, keys: Vec<BlockKeys>, slices: u32) -> Result<()> {
        self.slices = self.slices.max(slices);
        self.keys.add_block(keys)
    }

    /// The locator's bytes, its fingerprints as wide as the `ordinal`-th part of its index
    /// (from 1) needs for the false reads of all the index's parts, summed, to stay within a
    /// table's default budget, as a table's groups do ([`locator::fingerprint_bits`]): a
    /// lookup asks every part, and with the first part's 8 bits in each of 40 parts, 15% of
    /// absent keys read a slice. Blocking: it sorts and builds the keys' shards.
    pub fn build(self, ordinal: u64) -> Result<Vec<u8>> {
        let bits = locator::fingerprint_bits(ordinal, DEFAULT_MAX_FALSE_READS);
        let built = self
            .keys
            .build(*SLICE_ROWS_RANGE.start(), self.slices, bits)?;
        built.into_bytes()
    }
}

/// A part's locator as loaded: its parsed header and where it is. Its pages stay in storage,
/// read by range when a lookup asks ([`super::AttachedIndexes::locate`]) and kept in the
/// locator pages' cache as Sieve's own locators' are, so a process holds a few bytes of it
/// per shard and not ~27 bits per key.
#[derive(Debug)]
pub struct PartLocator {
    pub(crate) header: LocatorHeader,
    /// The part holding it, and its first byte there.
    pub(crate) path: Path,
    pub(crate) offset: u64,
}

impl PartLocator {
    /// The locator of `len` bytes whose header begins `bytes`, at `offset` of the part at
    /// `path` of `entries` entries: parsed as strictly as any locator, and refused unless it
    /// names one block per entry and ends where the part says it does.
    pub(crate) fn open(
        bytes: &[u8],
        entries: usize,
        path: Path,
        offset: u64,
        len: u64,
    ) -> std::result::Result<Self, String> {
        let header = LocatorHeader::parse(bytes).map_err(|e| e.to_string())?;
        if header.blocks as usize != entries {
            return Err(format!(
                "its locator names {} row groups of {entries}",
                header.blocks
            ));
        }
        if header.file_len() != len {
            return Err(format!(
                "its locator is {len} bytes where its header says {}",
                header.file_len()
            ));
        }
        Ok(Self {
            header,
            path,
            offset,
        })
    }

    /// The place of `column` among the locator's columns.
    pub fn column(&self, column: &str) -> Option<usize> {
        self.header.columns.iter().position(|c| c.column == column)
    }
}
