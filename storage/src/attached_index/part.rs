//! One part of an attached table's index: the sidecars of the data files one indexing pass
//! read, a sidecar per row group of each file, with the file's path, row count and size and the
//! rows the row group holds, in one object.
//!
//! Why parts and not a sidecar per data file: a process loading the index of a table of 10,000
//! files lists and fetches a handful of parts instead of 10,000 objects, and a pass that indexes
//! the files a new snapshot added writes one object, atomically. Why a sidecar per row group:
//! the files other engines write hold row groups of a million rows or more and often no page
//! index, so a key's row group is the least a lookup can read, and a filter per file would
//! have it read every row group of the file.
//!
//! Why a map per row group too ([`RowGroupMap`]): a row group is still a million rows; the map
//! names the slice of it, and the pages, a key may be in.
//!
//! Why a locator per part too ([`PartLocator`]): probing every row group's filter is a cost
//! that grows with the table; one probe of the part's locator names the row group and slice.
//!
//! Layout, version 4 (all integers little-endian):
//!
//! ```text
//! offset   size  field
//! 0        8     magic "SIEVEIXP"
//! 8        4     format version (4)
//! 12       4     entry count n
//! 16       8     locator offset · 8 locator length (0: none)
//! 32       64·n  directory, one record per row group of a data file:
//!                  u64 file's record count · u64 file size · u64 first row · u64 rows ·
//!                  u64 sidecar offset · u32 sidecar length · u32 path length ·
//!                  u64 map offset · u32 map length (0: none) · u32 zero
//! …        …     data file paths (UTF-8, as the warehouse's store names them), one per
//!                record, concatenated, zero-padded to a multiple of 8
//! …        8     header checksum: XXH3-64 of every byte before it
//! …        …     sidecars (sidecar format 1, one entry per indexed column), in directory order,
//!                each at the next multiple of 8, zero-padded, its row group map after it
//!                (row_group_map.rs), likewise
//! …        …     the locator (part_locator.rs: Sieve's locator format, a block per record, in
//!                directory order), at the next multiple of 8
//! ```
//!
//! Versions 1 to 3 are still read. Version 3 has no locator fields (its directory starts at
//! 16). Version 2 has 48-byte records without a map. Version 1 has 32-byte records without
//! first row and rows either: a record per data file, its sidecar over all the file's rows.
//!
//! Each sidecar keeps its own checksums. Reading is as strict as the sidecar's: a truncated,
//! corrupt or unknown-version part is an error, and its files are then read unpruned.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use sieve_index::{IndexError, Sidecar, SliceMap};
use xxhash_rust::xxh3::xxh3_64;

use super::part_locator::PartLocator;
use super::row_group_map::RowGroupMap;
use crate::error::{Result, StorageError};
use crate::meta::versions::ATTACHED_INDEX_PART_FORMAT;

const MAGIC: [u8; 8] = *b"SIEVEIXP";
/// Bytes before the directory: in versions 1 to 3, and from version 4 (the locator's place).
const PREAMBLE_V1: usize = 16;
const PREAMBLE: usize = 32;
/// A directory record's size in format versions 1, 2 and 3.
const RECORD_V1: usize = 32;
const RECORD_V2: usize = 48;
const RECORD: usize = 64;

fn align8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// One row group's entry in a part, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedFile {
    pub path: String,
    /// What the table's manifest said of the file when it was indexed: an entry is used only
    /// for a file the manifest still describes the same way.
    pub record_count: u64,
    pub file_size: u64,
    /// The row group's rows: ordinals `first_row..first_row + rows` of the file.
    pub first_row: u64,
    pub rows: u64,
    /// The row group's sidecar ([`sieve_index::sidecar::encode`]).
    pub sidecar: Vec<u8>,
    pub map: Option<RowGroupMap>,
}

/// One row group's entry in a part, as read (a whole file's, from a version 1 part): what a
/// process holds of it, a few dozen bytes and its slices and walked pages. Its filters and
/// slice maps, ~27 bits a key, stay in the part in storage ([`FiltersAt`]): a lookup whose key
/// the part's locator places needs neither, and one whose key it cannot place reads them by
/// range ([`crate::AttachedIndexes::filters`]), so that what a process holds no longer grows
/// with the table's rows.
#[derive(Debug, Clone)]
pub struct IndexedFileEntry {
    pub path: String,
    pub record_count: u64,
    pub file_size: u64,
    pub first_row: u64,
    pub rows: u64,
    /// The columns its sidecar indexes, in the sidecar's order.
    pub columns: Arc<[String]>,
    pub filters: FiltersAt,
    /// Its slices and walked pages, its slice maps (`keys`) left out: they are read with the
    /// filters. None in a part of version 1 or 2, for a row group of one page, or where the
    /// process keeps no maps ([`KeptEntries::maps`]).
    pub map: Option<RowGroupMap>,
    /// About what the entry holds in memory.
    pub bytes: usize,
    /// Its record's place in the part's directory: its block in the part's locator (a worker's
    /// share of the entries leaves the others out).
    pub block: u32,
}

/// Where a row group's filters (its sidecar) and slice maps (its map) lie in its part.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FiltersAt {
    pub sidecar: Range<u64>,
    /// Empty where it has no map.
    pub map: Range<u64>,
}

impl FiltersAt {
    /// The bytes to read for both: the map follows the sidecar.
    pub(crate) fn range(&self) -> Range<u64> {
        let end = if self.map.is_empty() {
            self.sidecar.end
        } else {
            self.map.end
        };
        self.sidecar.start..end
    }
}

/// A row group's filters and its maps from key to slice (per indexed column, in the sidecar's
/// order; empty for a row group of one slice), as read from its part.
#[derive(Debug)]
pub struct RowGroupFilters {
    pub sidecar: Sidecar,
    pub keys: Vec<SliceMap>,
    /// The bytes they were read from.
    pub bytes: usize,
}

/// A part as read: where it is, its entries, and its locator where it has one (a block of the
/// locator is an entry's [`IndexedFileEntry::block`]).
#[derive(Debug)]
pub struct Part {
    pub path: Path,
    pub entries: Vec<IndexedFileEntry>,
    pub locator: Option<PartLocator>,
}

/// The bytes of a part holding `files`, with `locator` (built over `files`, in their order).
pub fn encode(files: &[IndexedFile], locator: Option<&[u8]>) -> Result<Vec<u8>> {
    let too_large =
        |what: &str| StorageError::Invalid(format!("{what} too large for an index part"));
    let paths_len: usize = files.iter().map(|f| f.path.len()).sum();
    let header = PREAMBLE + RECORD * files.len() + align8(paths_len) + 8;
    let maps: Vec<Vec<u8>> = (files.iter())
        .map(|f| f.map.as_ref().map(RowGroupMap::encode).unwrap_or_default())
        .collect();
    let blobs_end = header
        + (files.iter().zip(&maps))
            .map(|(f, m)| align8(f.sidecar.len()) + align8(m.len()))
            .sum::<usize>();
    let mut out = Vec::with_capacity(blobs_end + locator.map_or(0, <[u8]>::len));
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&ATTACHED_INDEX_PART_FORMAT.to_le_bytes());
    let count = u32::try_from(files.len()).map_err(|_| too_large("file count"))?;
    out.extend_from_slice(&count.to_le_bytes());
    let (locator_at, locator_len) = match locator {
        Some(bytes) => (blobs_end as u64, bytes.len() as u64),
        None => (0, 0),
    };
    out.extend_from_slice(&locator_at.to_le_bytes());
    out.extend_from_slice(&locator_len.to_le_bytes());
    let mut offset = header;
    for (f, map) in files.iter().zip(&maps) {
        out.extend_from_slice(&f.record_count.to_le_bytes());
        out.extend_from_slice(&f.file_size.to_le_bytes());
        out.extend_from_slice(&f.first_row.to_le_bytes());
        out.extend_from_slice(&f.rows.to_le_bytes());
        out.extend_from_slice(&(offset as u64).to_le_bytes());
        let len = u32::try_from(f.sidecar.len()).map_err(|_| too_large("sidecar"))?;
        out.extend_from_slice(&len.to_le_bytes());
        let path_len = u32::try_from(f.path.len()).map_err(|_| too_large("path"))?;
        out.extend_from_slice(&path_len.to_le_bytes());
        offset = align8(offset + f.sidecar.len());
        out.extend_from_slice(&(offset as u64).to_le_bytes());
        let len = u32::try_from(map.len()).map_err(|_| too_large("row group map"))?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        offset = align8(offset + map.len());
    }
    for f in files {
        out.extend_from_slice(f.path.as_bytes());
    }
    out.resize(align8(out.len()), 0);
    out.extend_from_slice(&xxh3_64(&out).to_le_bytes());
    for (f, map) in files.iter().zip(&maps) {
        out.extend_from_slice(&f.sidecar);
        out.resize(align8(out.len()), 0);
        out.extend_from_slice(map);
        out.resize(align8(out.len()), 0);
    }
    debug_assert_eq!(out.len(), blobs_end);
    out.extend_from_slice(locator.unwrap_or_default());
    Ok(out)
}

/// A directory record as read.
struct Record {
    record_count: u64,
    file_size: u64,
    first_row: u64,
    rows: u64,
    offset: u64,
    len: usize,
    path_len: usize,
    /// Offset and length of the row group map; length 0 when it has none.
    map: (u64, usize),
}

/// What a process holds of a part's entries.
#[derive(Clone, Copy)]
pub struct KeptEntries<'a> {
    /// The data files whose entries are kept; None: every file's (a worker keeps its own
    /// files' only).
    pub files: Option<&'a (dyn Fn(&str) -> bool + Sync)>,
    /// Whether the row group maps' slices and walked pages are kept: a coordinator that only
    /// chooses files and sends them to their owners needs none.
    pub maps: bool,
}

impl KeptEntries<'_> {
    /// Every entry, with its map.
    pub const ALL: KeptEntries<'static> = KeptEntries {
        files: None,
        maps: true,
    };
}

/// The entries of the part at `path` whose bytes are `bytes`, as much of them as `keep` says,
/// each sidecar and map checked as strictly as when they are read for a lookup, none of them
/// held (see [`IndexedFileEntry`]): nothing keeps `bytes` once this returns.
pub fn decode(path: &Path, bytes: Bytes, keep: KeptEntries) -> Result<Part> {
    let damaged = |why: String| StorageError::Damaged(path.to_string(), why);
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
    let (preamble, record_size) = match version {
        1 => (PREAMBLE_V1, RECORD_V1),
        2 => (PREAMBLE_V1, RECORD_V2),
        3 => (PREAMBLE_V1, RECORD),
        ATTACHED_INDEX_PART_FORMAT => (PREAMBLE, RECORD),
        _ => {
            return Err(damaged(format!(
                "index part format {version} (this build reads 1 to {ATTACHED_INDEX_PART_FORMAT})"
            )));
        }
    };
    let count = u32_at(12).ok_or_else(truncated)? as usize;
    let directory_end = count
        .checked_mul(record_size)
        .and_then(|d| d.checked_add(preamble))
        .filter(|&end| end <= bytes.len())
        .ok_or_else(truncated)?;
    let mut records = Vec::with_capacity(count);
    let mut paths_len = 0usize;
    for i in 0..count {
        let at = preamble + i * record_size;
        let record_count = u64_at(at).ok_or_else(truncated)?;
        // Version 1's records are whole files; version 2's add a row group's rows, 3's its map.
        let (first_row, rows, rest) = match version {
            1 => (0, record_count, at + 16),
            _ => (
                u64_at(at + 16).ok_or_else(truncated)?,
                u64_at(at + 24).ok_or_else(truncated)?,
                at + 32,
            ),
        };
        let record = Record {
            record_count,
            file_size: u64_at(at + 8).ok_or_else(truncated)?,
            first_row,
            rows,
            offset: u64_at(rest).ok_or_else(truncated)?,
            len: u32_at(rest + 8).ok_or_else(truncated)? as usize,
            path_len: u32_at(rest + 12).ok_or_else(truncated)? as usize,
            map: match version {
                1 | 2 => (0, 0),
                _ => (
                    u64_at(rest + 16).ok_or_else(truncated)?,
                    u32_at(rest + 24).ok_or_else(truncated)? as usize,
                ),
            },
        };
        paths_len = paths_len
            .checked_add(record.path_len)
            .ok_or_else(truncated)?;
        records.push(record);
    }
    let checksum_at = directory_end
        .checked_add(align8(paths_len))
        .filter(|&at| at + 8 <= bytes.len())
        .ok_or_else(truncated)?;
    if u64_at(checksum_at) != Some(xxh3_64(&bytes[..checksum_at])) {
        return Err(damaged("header checksum mismatch".into()));
    }
    // Checked by the header's checksum above; where it points, below.
    let locator = match (preamble == PREAMBLE).then(|| (u64_at(16), u64_at(24))) {
        Some((Some(at), Some(len))) if len > 0 => Some((at, len)),
        _ => None,
    };
    let mut path_at = directory_end;
    let mut entries = Vec::with_capacity(count);
    // The entries of a part index the same columns: one list of their names for all of them.
    let mut last_columns: Option<Arc<[String]>> = None;
    for (block, record) in records.into_iter().enumerate() {
        let Record {
            record_count,
            file_size,
            first_row,
            rows,
            offset,
            len,
            path_len,
            map,
        } = record;
        let path = std::str::from_utf8(&bytes[path_at..path_at + path_len])
            .map_err(|_| damaged("a path is not UTF-8".into()))?
            .to_string();
        path_at += path_len;
        if keep.files.is_some_and(|keep| !keep(&path)) {
            continue;
        }
        let start = usize::try_from(offset).map_err(|_| truncated())?;
        let inside = |start: usize, len: usize| {
            let range = start..start.checked_add(len)?;
            (start >= checksum_at + 8 && start.is_multiple_of(8) && range.end <= bytes.len())
                .then_some(range)
        };
        let Some(sidecar_at) = inside(start, len) else {
            return Err(damaged(format!(
                "the sidecar of {path} lies outside the part"
            )));
        };
        let sidecar = open_sidecar(bytes.slice(sidecar_at.clone()), &path).map_err(damaged)?;
        let names: Vec<&str> = (sidecar.columns().iter())
            .map(|c| c.column.as_str())
            .collect();
        let columns = match &last_columns {
            Some(last) if last.iter().map(String::as_str).eq(names.iter().copied()) => last.clone(),
            _ => names.iter().map(|c| c.to_string()).collect(),
        };
        last_columns = Some(columns.clone());
        if first_row
            .checked_add(rows)
            .is_none_or(|end| end > record_count)
        {
            return Err(damaged(format!(
                "{path}: rows {first_row}+{rows} beyond its {record_count}"
            )));
        }
        let map_at = match map {
            (_, 0) => 0..0,
            (offset, len) => {
                let start = usize::try_from(offset).map_err(|_| truncated())?;
                inside(start, len).ok_or_else(|| {
                    damaged(format!("the row group map of {path} lies outside the part"))
                })?
            }
        };
        let map = match map_at.is_empty() {
            false if keep.maps => Some(
                RowGroupMap::decode_layout(&bytes[map_at.clone()], rows)
                    .map_err(|why| damaged(format!("{path}: {why}")))?,
            ),
            _ => None,
        };
        let held = map.as_ref().map_or(0, |m| {
            8 * m.slice_starts.len() + 24 * m.pages.iter().map(Vec::len).sum::<usize>()
        });
        let wide = |r: Range<usize>| r.start as u64..r.end as u64;
        entries.push(IndexedFileEntry {
            bytes: path.len() + held + std::mem::size_of::<IndexedFileEntry>(),
            path,
            record_count,
            file_size,
            first_row,
            rows,
            columns,
            filters: FiltersAt {
                sidecar: wide(sidecar_at),
                map: wide(map_at),
            },
            map,
            block: u32::try_from(block).map_err(|_| truncated())?,
        });
    }
    let locator = match locator {
        Some((at, len)) => {
            let range = usize::try_from(at)
                .ok()
                .zip(usize::try_from(len).ok())
                .and_then(|(at, len)| Some(at..at.checked_add(len)?))
                .filter(|r| r.start >= checksum_at + 8 && r.end <= bytes.len())
                .ok_or_else(|| damaged("its locator lies outside the part".into()))?;
            let located = PartLocator::open(&bytes[range], count, path.clone(), at);
            Some(located.map_err(damaged)?)
        }
        None => None,
    };
    Ok(Part {
        path: path.clone(),
        entries,
        locator,
    })
}

fn open_sidecar(bytes: Bytes, path: &str) -> std::result::Result<Sidecar, String> {
    Sidecar::open(bytes).map_err(|e: IndexError| format!("the sidecar of {path}: {e}"))
}

/// The filters and slice maps of `entry`, from `bytes`, its part's bytes over
/// [`FiltersAt::range`]: checked as strictly as when the part was loaded, and refused unless
/// they index the columns the entry was loaded with.
pub(crate) fn read_filters(
    bytes: &[u8],
    entry: &IndexedFileEntry,
) -> std::result::Result<RowGroupFilters, String> {
    let at = &entry.filters;
    let start = at.sidecar.start;
    let local = |r: &Range<u64>| {
        let range = usize::try_from(r.start - start).ok()?..usize::try_from(r.end - start).ok()?;
        bytes.get(range.clone()).map(|_| range)
    };
    let read_short = || format!("{} bytes read of {:?}", bytes.len(), at.range());
    let sidecar_at = local(&at.sidecar).ok_or_else(read_short)?;
    // A copy, so that the cache weighs what it holds.
    let sidecar = open_sidecar(Bytes::copy_from_slice(&bytes[sidecar_at]), &entry.path)?;
    if !(sidecar.columns().iter().map(|c| &c.column)).eq(entry.columns.iter()) {
        return Err(format!(
            "the sidecar of {} indexes other columns than when its part was read",
            entry.path
        ));
    }
    let keys = match at.map.is_empty() {
        true => Vec::new(),
        false => {
            let map = &bytes[local(&at.map).ok_or_else(read_short)?];
            let map = RowGroupMap::decode(map, entry.rows)
                .map_err(|why| format!("{}: {why}", entry.path))?;
            map.keys
        }
    };
    Ok(RowGroupFilters {
        sidecar,
        keys,
        bytes: bytes.len(),
    })
}

#[cfg(test)]
mod tests {
    use sieve_index::locator::{Location, block_keys};
    use sieve_index::{ColumnHashes, ColumnIndex, FilterKind, sidecar};

    use super::*;
    use crate::PartKeys;

    fn file(path: &str, keys: std::ops::Range<i64>) -> IndexedFile {
        let array = arrow_array::Int64Array::from_iter_values(keys.clone());
        let hashes = ColumnHashes::from_array(&array).unwrap();
        let column = ColumnIndex::build("id", FilterKind::BinaryFuse8, hashes);
        IndexedFile {
            path: path.into(),
            record_count: keys.clone().count() as u64,
            file_size: 1234,
            first_row: 0,
            rows: keys.count() as u64,
            sidecar: sidecar::encode(&[column]).unwrap(),
            map: None,
        }
    }

    /// The filters of `entry` read from `part`, the part's bytes, as a lookup reads them.
    fn filters(part: &[u8], entry: &IndexedFileEntry) -> RowGroupFilters {
        let range = entry.filters.range();
        read_filters(&part[range.start as usize..range.end as usize], entry).unwrap()
    }

    fn probe(filters: &RowGroupFilters, key: i64) -> bool {
        filters.sidecar.column("id").unwrap().may_contain(hash(key))
    }

    #[test]
    fn a_part_reads_back_every_file_and_key() {
        let files = [
            file("w/a.parquet", 0..1000),
            file("w/bé.parquet", 5000..5100),
        ];
        let bytes = Bytes::from(encode(&files, None).unwrap());
        let entries = decode(&"p".into(), bytes.clone(), KeptEntries::ALL)
            .unwrap()
            .entries;
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].path, "w/bé.parquet");
        assert_eq!((entries[1].record_count, entries[1].file_size), (100, 1234));
        let (a, b) = (filters(&bytes, &entries[0]), filters(&bytes, &entries[1]));
        assert!((0..1000).all(|k| probe(&a, k)));
        assert!((5000..5100).all(|k| probe(&b, k)));
        assert!(b.keys.is_empty() && entries[1].map.is_none());
        let false_hits = (100_000..110_000).filter(|&k| probe(&a, k)).count();
        assert!(false_hits < 100, "{false_hits} false hits in 10,000");
        assert!(
            decode(
                &"p".into(),
                Bytes::from(encode(&[], None).unwrap()),
                KeptEntries::ALL
            )
            .unwrap()
            .entries
            .is_empty()
        );
        // No entry holds the part's bytes: they go once read.
        assert!(bytes.is_unique());
        drop(entries);
        let owns = |p: &str| p.starts_with("w/b");
        let keep = KeptEntries {
            files: Some(&owns),
            maps: true,
        };
        let mine = decode(&"p".into(), bytes.clone(), keep).unwrap().entries;
        assert!(bytes.is_unique());
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0].path, "w/bé.parquet");
        let b = filters(&bytes, &mine[0]);
        assert!((5000..5100).all(|k| probe(&b, k)));
    }

    fn hash(key: i64) -> u64 {
        let array = arrow_array::Int64Array::from_iter_values([key]);
        ColumnHashes::from_array(&array).unwrap().hashes[0]
    }

    /// Two files' row groups with a locator over them: read back, it places each key in its
    /// row group's slice; a damaged locator is the part's error; a worker's share of the
    /// entries gets no locator (its blocks would no longer be the entries' places); a
    /// version 3 part (no locator fields) is still read.
    #[tokio::test]
    async fn a_part_locator_names_each_keys_row_group_and_slice() {
        let groups = [
            ("w/a.parquet", 0..1000),
            ("w/a.parquet", 1000..1500),
            ("w/b.parquet", 5000..5100),
        ];
        let files = groups.clone().map(|(path, keys)| file(path, keys));
        let mut keys = PartKeys::new(&["id".to_string()], 1600);
        for (_, range) in groups {
            // Two slices in each row group: its keys' first and second halves.
            let half = range.start + (range.end - range.start) / 2;
            let (hashes, slices): (Vec<u64>, Vec<u32>) =
                range.map(|k| (hash(k), u32::from(k >= half))).unzip();
            keys.add_entry(vec![block_keys(&hashes, &slices, 1)], 2)
                .unwrap();
        }
        let locator = keys.build().unwrap();
        let bytes = Bytes::from(encode(&files, Some(&locator)).unwrap());
        // Its pages are read from the part in storage.
        let store = crate::AttachedIndexes::new(crate::Storage::in_memory());
        let path = Path::from("p");
        let put = |bytes: &Bytes| {
            let payload = object_store::PutPayload::from(bytes.clone());
            object_store::ObjectStoreExt::put(store.storage().store(), &path, payload)
        };
        put(&bytes).await.unwrap();
        // The part's bytes (not the store's) go once read: no entry shares them.
        let read = Bytes::copy_from_slice(&bytes);
        let part = decode(&path, read.clone(), KeptEntries::ALL).unwrap();
        assert_eq!(part.entries.len(), 3);
        assert!(read.is_unique());
        // A row group's filters are read from the part in storage, then kept.
        let second = store.filters(&path, &part.entries[1]).await.unwrap();
        assert!((1000..1500).all(|k| probe(&second, k)));
        let again = store.filters(&path, &part.entries[1]).await.unwrap();
        assert!(Arc::ptr_eq(&second, &again));
        // Damaged since the part was loaded, they are an error, and one that is not kept.
        let mut damaged = bytes.to_vec();
        damaged[part.entries[0].filters.sidecar.start as usize + 40] ^= 0x40;
        let elsewhere = crate::AttachedIndexes::new(crate::Storage::in_memory());
        let payload = object_store::PutPayload::from(damaged);
        object_store::ObjectStoreExt::put(elsewhere.storage().store(), &path, payload)
            .await
            .unwrap();
        for _ in 0..2 {
            let e = elsewhere
                .filters(&path, &part.entries[0])
                .await
                .unwrap_err();
            assert!(e.to_string().contains("the sidecar of w/a.parquet"), "{e}");
        }
        let located = part.locator.as_ref().unwrap();
        let column = located.column("id").unwrap();
        let keys: Vec<i64> = vec![3, 999, 1499, 5001];
        let hashes: Vec<u64> = keys.iter().map(|&k| hash(k)).collect();
        let at = store.locate(located, column, &hashes).await.unwrap();
        let slice = |block, slice| Location::Slice { block, slice };
        assert_eq!(at, [slice(0, 0), slice(0, 1), slice(1, 1), slice(2, 0)]);
        let absent: Vec<u64> = (100_000..101_000).map(hash).collect();
        let placed = (store.locate(located, column, &absent).await.unwrap().iter())
            .filter(|l| **l != Location::Absent)
            .count();
        assert!(placed < 20, "{placed} of 1,000 absent keys placed");
        assert!(located.column("other").is_none());
        let owns = |p: &str| p.starts_with("w/b");
        let share = KeptEntries {
            files: Some(&owns),
            maps: true,
        };
        // A worker's share keeps the locator, its blocks still the directory's records.
        let mine = decode(&path, bytes.clone(), share).unwrap();
        assert!(mine.locator.is_some());
        assert_eq!(
            mine.entries.iter().map(|e| e.block).collect::<Vec<_>>(),
            [2]
        );
        // Damage inside the locator's header is the part's; in a page, the lookup's that reads it.
        let locator_at = bytes.len() - locator.len();
        let mut damaged = bytes.to_vec();
        damaged[locator_at + 10] ^= 0x40;
        let e = decode(&path, Bytes::from(damaged), KeptEntries::ALL).unwrap_err();
        assert!(e.to_string().starts_with("cannot use p:"), "{e}");
        let mut damaged = bytes.to_vec();
        let last = damaged.len() - 9;
        damaged[last] ^= 0x40;
        let damaged = Bytes::from(damaged);
        let part = decode(&path, damaged.clone(), KeptEntries::ALL).unwrap();
        // In a store of its own: this one's cache holds good pages.
        let store = crate::AttachedIndexes::new(crate::Storage::in_memory());
        let payload = object_store::PutPayload::from(damaged);
        object_store::ObjectStoreExt::put(store.storage().store(), &path, payload)
            .await
            .unwrap();
        let located = part.locator.unwrap();
        let all: Vec<u64> = (0..1500).map(hash).collect();
        let one_by_one = all.chunks(1).map(|h| store.locate(&located, column, h));
        let failed = (futures::future::join_all(one_by_one).await.iter())
            .filter(|found| found.is_err())
            .count();
        assert!(failed > 0);
        let short = Bytes::from(encode(&files, Some(&locator[..locator.len() - 1])).unwrap());
        assert!(decode(&path, short, KeptEntries::ALL).is_err());

        // Version 3: no locator fields, the directory at 16, offsets 16 lower.
        let v4 = encode(&files, None).unwrap();
        let mut v3 = MAGIC.to_vec();
        v3.extend_from_slice(&3u32.to_le_bytes());
        v3.extend_from_slice(&v4[12..16]);
        v3.extend_from_slice(&v4[PREAMBLE..]);
        for i in 0..files.len() {
            let record = PREAMBLE_V1 + i * RECORD;
            for field in [record + 32, record + 48] {
                let was = u64::from_le_bytes(v3[field..field + 8].try_into().unwrap());
                let now = if was == 0 { 0 } else { was - 16 };
                v3[field..field + 8].copy_from_slice(&now.to_le_bytes());
            }
        }
        let paths: usize = files.iter().map(|f| f.path.len()).sum();
        let checksum_at = align8(PREAMBLE_V1 + RECORD * files.len() + paths);
        let sum = xxh3_64(&v3[..checksum_at]);
        v3[checksum_at..checksum_at + 8].copy_from_slice(&sum.to_le_bytes());
        let part = decode(&"p".into(), Bytes::from(v3.clone()), KeptEntries::ALL).unwrap();
        assert!(part.locator.is_none());
        let second = filters(&v3, &part.entries[1]);
        assert!((1000..1500).all(|k| probe(&second, k)));
    }

    #[test]
    fn a_damaged_part_is_an_error_never_a_filter() {
        let bytes = encode(&[file("w/a.parquet", 0..1000)], None).unwrap();
        for cut in [0, 7, 15, 40, bytes.len() - 1] {
            assert!(
                decode(
                    &"p".into(),
                    Bytes::copy_from_slice(&bytes[..cut]),
                    KeptEntries::ALL
                )
                .is_err(),
                "cut {cut}"
            );
        }
        for flip in [3, 9, 20, 50, bytes.len() - 9] {
            let mut damaged = bytes.clone();
            damaged[flip] ^= 0x40;
            let e = decode(&"p".into(), Bytes::from(damaged), KeptEntries::ALL)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("cannot use p:"), "flip {flip}: {e}");
        }
    }

    #[test]
    fn row_groups_read_back_with_their_rows_and_maps_and_older_parts_as_written() {
        let mut groups = [file("w/g.parquet", 0..600), file("w/g.parquet", 600..1000)];
        groups[0].record_count = 1000;
        groups[1].record_count = 1000;
        groups[1].first_row = 600;
        let keyed = (600..1000)
            .map(|k| (hash(k), u32::from(k >= 800)))
            .collect();
        let slices = SliceMap::build(keyed, 2, &mut Default::default()).unwrap();
        let map = RowGroupMap {
            slice_starts: vec![0, 200],
            keys: vec![slices.clone()],
            pages: vec![vec![crate::PageLocation {
                offset: 4,
                size: 10,
                first_row: 0,
                plain: true,
            }]],
        };
        groups[1].map = Some(map.clone());
        let bytes = Bytes::from(encode(&groups, None).unwrap());
        let entries = decode(&"p".into(), bytes.clone(), KeptEntries::ALL)
            .unwrap()
            .entries;
        let rows: Vec<_> = entries.iter().map(|e| (e.first_row, e.rows)).collect();
        assert_eq!(rows, [(0, 600), (600, 400)]);
        // The map's slices and pages are held; its slice maps are read with the filters.
        let layout = RowGroupMap {
            keys: vec![],
            ..map.clone()
        };
        assert_eq!(
            (entries[0].map.as_ref(), entries[1].map.as_ref()),
            (None, Some(&layout))
        );
        let second = filters(&bytes, &entries[1]);
        assert!(probe(&second, 700) && !probe(&second, 5));
        assert_eq!(second.keys, [slices]);
        // Without the maps (a coordinator's), the same filters.
        let routing = KeptEntries {
            files: None,
            maps: false,
        };
        let routed = decode(&"p".into(), bytes.clone(), routing).unwrap().entries;
        assert!(routed.iter().all(|e| e.map.is_none()));
        assert_eq!(routed[1].filters, entries[1].filters);
        // A row group past its file's rows is damage, not a filter.
        groups[1].rows = 401;
        let e = decode(
            &"p".into(),
            Bytes::from(encode(&groups, None).unwrap()),
            KeptEntries::ALL,
        )
        .unwrap_err();
        assert!(e.to_string().contains("beyond its 1000"), "{e}");

        // Versions 1 and 2, as this build wrote them before: 32-byte records and a sidecar per
        // file; 48-byte records with the row group's rows, and no map.
        let whole = file("w/a.parquet", 0..1000);
        for version in [1u32, 2] {
            let record = if version == 1 { RECORD_V1 } else { RECORD_V2 };
            let mut old = MAGIC.to_vec();
            old.extend_from_slice(&version.to_le_bytes());
            old.extend_from_slice(&1u32.to_le_bytes());
            let sidecar_at = align8(PREAMBLE_V1 + record + whole.path.len()) + 8;
            let mut numbers = vec![whole.record_count, whole.file_size];
            if version == 2 {
                numbers.extend([0, whole.rows]);
            }
            numbers.push(sidecar_at as u64);
            for n in numbers {
                old.extend_from_slice(&n.to_le_bytes());
            }
            old.extend_from_slice(&(whole.sidecar.len() as u32).to_le_bytes());
            old.extend_from_slice(&(whole.path.len() as u32).to_le_bytes());
            old.extend_from_slice(whole.path.as_bytes());
            old.resize(align8(old.len()), 0);
            old.extend_from_slice(&xxh3_64(&old).to_le_bytes());
            old.extend_from_slice(&whole.sidecar);
            let entries = decode(&"p".into(), Bytes::from(old.clone()), KeptEntries::ALL)
                .unwrap()
                .entries;
            assert_eq!(
                (entries[0].first_row, entries[0].rows),
                (0, 1000),
                "v{version}"
            );
            assert!(entries[0].map.is_none());
            let whole = filters(&old, &entries[0]);
            assert!((0..1000).all(|k| probe(&whole, k)), "v{version}");
        }
    }
}
