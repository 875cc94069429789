//! One part of an attached table's index: the sidecars of the data files one indexing pass
//! read, with the path, row count and size of each, in one object.
//!
//! Why parts and not a sidecar per data file: a process loading the index of a table of 10,000
//! files lists and fetches a handful of parts instead of 10,000 objects, and a pass that indexes
//! the files a new snapshot added writes one object, atomically.
//!
//! Layout, version 1 (all integers little-endian):
//!
//! ```text
//! offset   size  field
//! 0        8     magic "SIEVEIXP"
//! 8        4     format version (1)
//! 12       4     file count n
//! 16       32·n  directory, one record per data file:
//!                  u64 record count · u64 file size · u64 sidecar offset · u32 sidecar length ·
//!                  u32 path length
//! …        …     data file paths (UTF-8, as the warehouse's store names them), concatenated,
//!                zero-padded to a multiple of 8
//! …        8     header checksum: XXH3-64 of every byte before it
//! …        …     sidecars (sidecar format 1, one entry per indexed column), in directory order,
//!                each at the next multiple of 8, zero-padded
//! ```
//!
//! Each sidecar keeps its own checksums. Reading is as strict as the sidecar's: a truncated,
//! corrupt or unknown-version part is an error, and its files are then read unpruned.

use bytes::Bytes;
use sieve_index::{IndexError, Sidecar};
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Result, StorageError};
use crate::meta::versions::ATTACHED_INDEX_PART_FORMAT;

const MAGIC: [u8; 8] = *b"SIEVEIXP";
const PREAMBLE: usize = 16;
const RECORD: usize = 32;

fn align8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// One data file's entry in a part, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedFile {
    pub path: String,
    /// What the table's manifest said of the file when it was indexed: an entry is used only
    /// for a file the manifest still describes the same way.
    pub record_count: u64,
    pub file_size: u64,
    /// The file's sidecar ([`sieve_index::sidecar::encode`]).
    pub sidecar: Vec<u8>,
}

/// One data file's entry in a part, as read.
#[derive(Debug, Clone)]
pub struct IndexedFileEntry {
    pub path: String,
    pub record_count: u64,
    pub file_size: u64,
    pub sidecar: Sidecar,
}

/// The bytes of a part holding `files`.
pub fn encode(files: &[IndexedFile]) -> Result<Vec<u8>> {
    let too_large =
        |what: &str| StorageError::Invalid(format!("{what} too large for an index part"));
    let paths_len: usize = files.iter().map(|f| f.path.len()).sum();
    let header = PREAMBLE + RECORD * files.len() + align8(paths_len) + 8;
    let mut out =
        Vec::with_capacity(header + files.iter().map(|f| align8(f.sidecar.len())).sum::<usize>());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&ATTACHED_INDEX_PART_FORMAT.to_le_bytes());
    let count = u32::try_from(files.len()).map_err(|_| too_large("file count"))?;
    out.extend_from_slice(&count.to_le_bytes());
    let mut offset = header;
    for f in files {
        out.extend_from_slice(&f.record_count.to_le_bytes());
        out.extend_from_slice(&f.file_size.to_le_bytes());
        out.extend_from_slice(&(offset as u64).to_le_bytes());
        let len = u32::try_from(f.sidecar.len()).map_err(|_| too_large("sidecar"))?;
        out.extend_from_slice(&len.to_le_bytes());
        let path_len = u32::try_from(f.path.len()).map_err(|_| too_large("path"))?;
        out.extend_from_slice(&path_len.to_le_bytes());
        offset = align8(offset + f.sidecar.len());
    }
    for f in files {
        out.extend_from_slice(f.path.as_bytes());
    }
    out.resize(align8(out.len()), 0);
    out.extend_from_slice(&xxh3_64(&out).to_le_bytes());
    for f in files {
        out.extend_from_slice(&f.sidecar);
        out.resize(align8(out.len()), 0);
    }
    Ok(out)
}

/// The entries of the part `name` (named in errors) whose bytes are `bytes`.
pub fn decode(name: &str, bytes: Bytes) -> Result<Vec<IndexedFileEntry>> {
    let damaged = |why: String| StorageError::Damaged(name.to_string(), why);
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    let u64_at = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
    };
    if bytes.get(..8) != Some(&MAGIC[..]) {
        return Err(damaged("not a Sieve index part (bad magic)".into()));
    }
    let truncated = || damaged("truncated".into());
    let version = u32_at(8).ok_or_else(truncated)?;
    if version != ATTACHED_INDEX_PART_FORMAT {
        return Err(damaged(format!(
            "index part format {version} (this build reads {ATTACHED_INDEX_PART_FORMAT})"
        )));
    }
    let count = u32_at(12).ok_or_else(truncated)? as usize;
    let directory_end = count
        .checked_mul(RECORD)
        .and_then(|d| d.checked_add(PREAMBLE))
        .filter(|&end| end <= bytes.len())
        .ok_or_else(truncated)?;
    let mut records = Vec::with_capacity(count);
    let mut paths_len = 0usize;
    for i in 0..count {
        let at = PREAMBLE + i * RECORD;
        let record = (
            u64_at(at).ok_or_else(truncated)?,
            u64_at(at + 8).ok_or_else(truncated)?,
            u64_at(at + 16).ok_or_else(truncated)?,
            u32_at(at + 24).ok_or_else(truncated)? as usize,
            u32_at(at + 28).ok_or_else(truncated)? as usize,
        );
        paths_len = paths_len.checked_add(record.4).ok_or_else(truncated)?;
        records.push(record);
    }
    let checksum_at = directory_end
        .checked_add(align8(paths_len))
        .filter(|&at| at + 8 <= bytes.len())
        .ok_or_else(truncated)?;
    if u64_at(checksum_at) != Some(xxh3_64(&bytes[..checksum_at])) {
        return Err(damaged("header checksum mismatch".into()));
    }
    let mut path_at = directory_end;
    let mut entries = Vec::with_capacity(count);
    for (record_count, file_size, offset, len, path_len) in records {
        let path = std::str::from_utf8(&bytes[path_at..path_at + path_len])
            .map_err(|_| damaged("a path is not UTF-8".into()))?
            .to_string();
        path_at += path_len;
        let start = usize::try_from(offset).map_err(|_| truncated())?;
        let range = start..start.checked_add(len).ok_or_else(truncated)?;
        if start < checksum_at + 8 || start % 8 != 0 || range.end > bytes.len() {
            return Err(damaged(format!(
                "the sidecar of {path} lies outside the part"
            )));
        }
        let sidecar = Sidecar::open(bytes.slice(range))
            .map_err(|e: IndexError| damaged(format!("the sidecar of {path}: {e}")))?;
        entries.push(IndexedFileEntry {
            path,
            record_count,
            file_size,
            sidecar,
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use sieve_index::{ColumnHashes, ColumnIndex, FilterKind, sidecar};

    use super::*;

    fn file(path: &str, keys: std::ops::Range<i64>) -> IndexedFile {
        let array = arrow_array::Int64Array::from_iter_values(keys.clone());
        let hashes = ColumnHashes::from_array(&array).unwrap();
        let column = ColumnIndex::build("id", FilterKind::BinaryFuse8, hashes);
        IndexedFile {
            path: path.into(),
            record_count: keys.count() as u64,
            file_size: 1234,
            sidecar: sidecar::encode(&[column]).unwrap(),
        }
    }

    fn probe(entry: &IndexedFileEntry, key: i64) -> bool {
        let array = arrow_array::Int64Array::from_iter_values([key]);
        let hash = ColumnHashes::from_array(&array).unwrap().hashes[0];
        entry.sidecar.column("id").unwrap().may_contain(hash)
    }

    #[test]
    fn a_part_reads_back_every_file_and_key() {
        let files = [
            file("w/a.parquet", 0..1000),
            file("w/bé.parquet", 5000..5100),
        ];
        let bytes = Bytes::from(encode(&files).unwrap());
        let entries = decode("p", bytes.clone()).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].path, "w/bé.parquet");
        assert_eq!((entries[1].record_count, entries[1].file_size), (100, 1234));
        assert!((0..1000).all(|k| probe(&entries[0], k)));
        assert!((5000..5100).all(|k| probe(&entries[1], k)));
        let false_hits = (100_000..110_000)
            .filter(|&k| probe(&entries[0], k))
            .count();
        assert!(false_hits < 100, "{false_hits} false hits in 10,000");
        assert!(
            decode("p", Bytes::from(encode(&[]).unwrap()))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_damaged_part_is_an_error_never_a_filter() {
        let bytes = encode(&[file("w/a.parquet", 0..1000)]).unwrap();
        for cut in [0, 7, 15, 40, bytes.len() - 1] {
            assert!(
                decode("p", Bytes::copy_from_slice(&bytes[..cut])).is_err(),
                "cut {cut}"
            );
        }
        for flip in [3, 9, 20, 50, bytes.len() - 9] {
            let mut damaged = bytes.clone();
            damaged[flip] ^= 0x40;
            let e = decode("p", Bytes::from(damaged)).unwrap_err().to_string();
            assert!(e.starts_with("cannot use p:"), "flip {flip}: {e}");
        }
    }
}
