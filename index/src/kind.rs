//! The kinds of index a block's column can carry, with the names users write in table options and
//! the codes the sidecar stores.

use std::fmt;
use std::str::FromStr;

use crate::error::IndexError;

/// A probabilistic filter a table can be configured with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FilterKind {
    Xor8,
    Xor16,
    #[default]
    BinaryFuse8,
    BinaryFuse16,
    /// 12-bit fingerprints, 4-way buckets; supports delete.
    Cuckoo12,
    /// 16-bit fingerprints, 4-way buckets; supports delete.
    Cuckoo16,
    /// Split-block bloom filter in Parquet's layout, the classic baseline.
    Bloom,
}

impl FilterKind {
    pub const ALL: [FilterKind; 7] = [
        FilterKind::Xor8,
        FilterKind::Xor16,
        FilterKind::BinaryFuse8,
        FilterKind::BinaryFuse16,
        FilterKind::Cuckoo12,
        FilterKind::Cuckoo16,
        FilterKind::Bloom,
    ];
    const NAMES: &'static str = "xor8, xor16, binary_fuse8, binary_fuse16, cuckoo, cuckoo16, bloom";

    /// Whether an entry of this kind can forget a key (cuckoo); the others are rebuilt from the
    /// keys left instead.
    pub fn can_delete(self) -> bool {
        matches!(self, FilterKind::Cuckoo12 | FilterKind::Cuckoo16)
    }

    pub fn name(self) -> &'static str {
        match self {
            FilterKind::Xor8 => "xor8",
            FilterKind::Xor16 => "xor16",
            FilterKind::BinaryFuse8 => "binary_fuse8",
            FilterKind::BinaryFuse16 => "binary_fuse16",
            FilterKind::Cuckoo12 => "cuckoo",
            FilterKind::Cuckoo16 => "cuckoo16",
            FilterKind::Bloom => "bloom",
        }
    }
}

impl fmt::Display for FilterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FilterKind {
    type Err = IndexError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        let alias = match lower.as_str() {
            "fuse8" | "bfuse8" => "binary_fuse8",
            "fuse16" | "bfuse16" => "binary_fuse16",
            "cuckoo12" => "cuckoo",
            other => other,
        };
        Self::ALL
            .into_iter()
            .find(|k| k.name() == alias)
            .ok_or_else(|| IndexError::UnknownKind(s.to_string(), Self::NAMES))
    }
}

/// What a sidecar entry actually holds for one column of one block; stored as one byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// At most one distinct value, or every integer between min and max (a row number): min/max
    /// already decides, nothing is stored.
    MinMaxOnly,
    /// A handful of distinct values: their sorted hashes, smaller than any filter and exact.
    Exact,
    Filter(FilterKind),
}

impl EntryKind {
    pub fn code(self) -> u8 {
        match self {
            EntryKind::MinMaxOnly => 0,
            EntryKind::Exact => 1,
            EntryKind::Filter(FilterKind::Xor8) => 2,
            EntryKind::Filter(FilterKind::Xor16) => 3,
            EntryKind::Filter(FilterKind::BinaryFuse8) => 4,
            EntryKind::Filter(FilterKind::BinaryFuse16) => 5,
            EntryKind::Filter(FilterKind::Cuckoo12) => 6,
            EntryKind::Filter(FilterKind::Cuckoo16) => 7,
            EntryKind::Filter(FilterKind::Bloom) => 8,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        let kind = match code {
            0 => EntryKind::MinMaxOnly,
            1 => EntryKind::Exact,
            2..=8 => EntryKind::Filter(FilterKind::ALL[usize::from(code - 2)]),
            _ => return None,
        };
        Some(kind)
    }

    pub fn name(self) -> &'static str {
        match self {
            EntryKind::MinMaxOnly => "minmax",
            EntryKind::Exact => "exact",
            EntryKind::Filter(kind) => kind.name(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for code in 0..=u8::MAX {
            if let Some(kind) = EntryKind::from_code(code) {
                assert_eq!(kind.code(), code);
            }
        }
        for kind in FilterKind::ALL {
            let entry = EntryKind::Filter(kind);
            assert_eq!(EntryKind::from_code(entry.code()), Some(entry));
            assert_eq!(kind.name().parse::<FilterKind>(), Ok(kind));
        }
    }

    #[test]
    fn unknown_names_list_the_choices() {
        let err = "xor9".parse::<FilterKind>().unwrap_err().to_string();
        assert!(
            err.contains("xor9") && err.contains("binary_fuse8"),
            "{err}"
        );
    }
}
