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
//! Layout, version 5 (all integers little-endian):
//!
//! ```text
//! offset   size  field
//! 0        8     magic "SIEVEIXP"
//! 8        4     format version (5)
//! 12       4     entry count n
//! 16       8     locator offset · 8 locator length (0: none)
//! 32       8     header length h: the bytes from 0 to the end of the header checksum
//! 40       4     locator header length (0: none) · 4 zero
//! 48       64·n  directory, one record per row group of a data file:
//!                  u64 file's record count · u64 file size · u64 first row · u64 rows ·
//!                  u64 sidecar offset · u32 sidecar length · u32 path length ·
//!                  u64 map offset · u32 map length (0: none) · u32 layout length (0: none)
//! …        …     data file paths (UTF-8, as the warehouse's store names them), one per
//!                record, concatenated, zero-padded to a multiple of 8
//! …        …     the indexed columns, as every sidecar of the part lists them: u32 count,
//!                then per column u32 name length and the name (UTF-8); zero-padded to 8
//! …        …     layouts: per record with a map, in directory order, the map without its
//!                slice maps (row_group_map.rs with no maps: its slices and walked pages),
//!                each zero-padded to a multiple of 8
//! h - 8    8     header checksum: XXH3-64 of every byte before it
//! h        …     sidecars (sidecar format 1, one entry per indexed column), in directory order,
//!                each at the next multiple of 8, zero-padded, its row group map (with its
//!                slice maps) after it, likewise
//! …        …     the locator (part_locator.rs: Sieve's locator format, a block per record, in
//!                directory order), at the next multiple of 8
//! ```
//!
//! A process loading a part reads its first h bytes and its locator's header, in two or three
//! ranged reads ([`crate::AttachedIndexes::read_part`]), never its sidecars, maps or locator
//! pages, which a lookup reads by range when it needs them.
//!
//! Versions 1 to 4 are still read, whole. Version 4 has a 32-byte preamble (no lengths), no
//! columns or layouts in its header (a reader opens each sidecar and map), and zero where
//! version 5 has the layout's length. Version 3 has no locator fields either (its directory
//! starts at 16). Version 2 has 48-byte records without a map. Version 1 has 32-byte records
//! without first row and rows either: a record per data file, its sidecar over all the file's
//! rows.
//!
//! Each sidecar and map keeps its own checksum. Reading is as strict as the sidecar's: a
//! truncated, corrupt or unknown-version part is an error, and its files are then read
//! unpruned; a damaged sidecar or map is found when a lookup reads it, which then reads its
//! row group whole.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use sieve_index::{IndexError, LocatorHeader, Sidecar, SidecarHeader, SliceMap};
use xxhash_rust::xxh3::xxh3_64;

use super::part_locator::PartLocator;
use super::row_group_map::RowGroupMap;
use crate::error::{Result, StorageError};
use crate::meta::versions::ATTACHED_INDEX_PART_FORMAT;

const MAGIC: [u8; 8] = *b"SIEVEIXP";
/// Bytes before the directory: in versions 1 to 3, in version 4 (the locator's place), and
/// from version 5 (the header's length and the locator header's).
const PREAMBLE_V1: usize = 16;
const PREAMBLE_V4: usize = 32;
const PREAMBLE: usize = 48;
/// A directory record's size in format versions 1, 2, and from 3.
const RECORD_V1: usize = 32;
const RECORD_V2: usize = 48;
const RECORD: usize = 64;

/// The little-endian integer at `at` of `bytes`, if they hold it.
fn u32_le(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        bytes.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_le(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        bytes.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

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
    /// The format it was written in: [`ATTACHED_INDEX_PART_FORMAT`] or an older one the
    /// indexer builds again.
    pub format: u32,
    pub entries: Vec<IndexedFileEntry>,
    pub locator: Option<PartLocator>,
}

/// The bytes of a part holding `files`, whose sidecars index `columns`, with `locator` (built
/// over `files`, in their order).
pub fn encode(
    files: &[IndexedFile],
    columns: &[String],
    locator: Option<&[u8]>,
) -> Result<Vec<u8>> {
    let too_large =
        |what: &str| StorageError::Invalid(format!("{what} too large for an index part"));
    for f in files {
        let header = SidecarHeader::parse(&f.sidecar)
            .map_err(|e| StorageError::Invalid(format!("the sidecar of {}: {e}", f.path)))?;
        if !header.columns().eq(columns.iter().map(String::as_str)) {
            return Err(StorageError::Invalid(format!(
                "the sidecar of {} indexes other columns than {columns:?}",
                f.path
            )));
        }
    }
    let maps: Vec<Vec<u8>> = (files.iter())
        .map(|f| f.map.as_ref().map(RowGroupMap::encode).unwrap_or_default())
        .collect();
    let layouts: Vec<Vec<u8>> = (files.iter())
        .map(|f| f.map.as_ref().map(layout).unwrap_or_default())
        .collect();
    let mut names = Vec::new();
    let count = u32::try_from(columns.len()).map_err(|_| too_large("column count"))?;
    names.extend_from_slice(&count.to_le_bytes());
    for column in columns {
        let len = u32::try_from(column.len()).map_err(|_| too_large("column name"))?;
        names.extend_from_slice(&len.to_le_bytes());
        names.extend_from_slice(column.as_bytes());
    }
    names.resize(align8(names.len()), 0);
    let paths_len: usize = files.iter().map(|f| f.path.len()).sum();
    let header = PREAMBLE
        + RECORD * files.len()
        + align8(paths_len)
        + names.len()
        + layouts.iter().map(|l| align8(l.len())).sum::<usize>()
        + 8;
    let blobs_end = header
        + (files.iter().zip(&maps))
            .map(|(f, m)| align8(f.sidecar.len()) + align8(m.len()))
            .sum::<usize>();
    let mut out = Vec::with_capacity(blobs_end + locator.map_or(0, <[u8]>::len));
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&ATTACHED_INDEX_PART_FORMAT.to_le_bytes());
    let count = u32::try_from(files.len()).map_err(|_| too_large("file count"))?;
    out.extend_from_slice(&count.to_le_bytes());
    let (locator_at, locator_len, locator_header) = match locator {
        Some(bytes) => {
            let header = LocatorHeader::parse(bytes)
                .map_err(|e| StorageError::Invalid(format!("a part's locator: {e}")))?;
            (blobs_end as u64, bytes.len() as u64, header.len)
        }
        None => (0, 0, 0),
    };
    out.extend_from_slice(&locator_at.to_le_bytes());
    out.extend_from_slice(&locator_len.to_le_bytes());
    out.extend_from_slice(&(header as u64).to_le_bytes());
    let locator_header = u32::try_from(locator_header).map_err(|_| too_large("locator"))?;
    out.extend_from_slice(&locator_header.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    let mut offset = header;
    for ((f, map), layout) in files.iter().zip(&maps).zip(&layouts) {
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
        out.extend_from_slice(&(layout.len() as u32).to_le_bytes());
        offset = align8(offset + map.len());
    }
    for f in files {
        out.extend_from_slice(f.path.as_bytes());
    }
    out.resize(align8(out.len()), 0);
    out.extend_from_slice(&names);
    for layout in &layouts {
        out.extend_from_slice(layout);
        out.resize(align8(out.len()), 0);
    }
    out.extend_from_slice(&xxh3_64(&out).to_le_bytes());
    debug_assert_eq!(out.len(), header);
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

/// The bytes of `map` without its slice maps: what a process holds of it.
fn layout(map: &RowGroupMap) -> Vec<u8> {
    let layout = RowGroupMap {
        slice_starts: map.slice_starts.clone(),
        keys: Vec::new(),
        pages: map.pages.clone(),
    };
    layout.encode()
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
    /// Length of its layout in the header (version 5); 0 when it has none.
    layout: usize,
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

/// What a part's first bytes say: its version, where its directory is, and where its
/// locator is (checked against the header's checksum when the header is decoded).
#[derive(Debug)]
pub(crate) struct Preamble {
    version: u32,
    count: usize,
    directory_at: usize,
    record_size: usize,
    /// The locator's offset and length in the part.
    locator: Option<(u64, u64)>,
    /// From version 5: the header's length and the locator header's.
    lengths: Option<(usize, usize)>,
}

/// The bytes a reader reads first: the whole header of a part of a few hundred row groups.
pub(crate) const FIRST_READ: u64 = 64 << 10;

impl Preamble {
    /// The preamble of the part at `path` whose first bytes are `head`.
    pub(crate) fn parse(path: &Path, head: &[u8]) -> Result<Self> {
        let damaged = |why: &str| StorageError::Damaged(path.to_string(), why.to_string());
        if head.get(..8) != Some(&MAGIC[..]) {
            return Err(damaged("not a Sieve index part (bad magic)"));
        }
        let (u32_at, u64_at) = (|at| u32_le(head, at), |at| u64_le(head, at));
        let (version, count) = u32_at(8)
            .zip(u32_at(12))
            .ok_or_else(|| damaged("truncated"))?;
        let (directory_at, record_size) = match version {
            1 => (PREAMBLE_V1, RECORD_V1),
            2 => (PREAMBLE_V1, RECORD_V2),
            3 => (PREAMBLE_V1, RECORD),
            4 => (PREAMBLE_V4, RECORD),
            5 => (PREAMBLE, RECORD),
            _ => {
                return Err(StorageError::Newer(
                    path.to_string(),
                    format!(
                        "index part format {version} (this build reads 1 to \
                         {ATTACHED_INDEX_PART_FORMAT})"
                    ),
                ));
            }
        };
        if head.len() < directory_at {
            return Err(damaged("truncated"));
        }
        let locator = match (directory_at >= PREAMBLE_V4).then(|| (u64_at(16), u64_at(24))) {
            Some((Some(at), Some(len))) if len > 0 => Some((at, len)),
            _ => None,
        };
        let lengths = match version {
            5 => {
                let header = u64_at(32).and_then(|h| usize::try_from(h).ok());
                let locator_header = u32_at(40).map(|h| h as usize);
                Some(
                    header
                        .zip(locator_header)
                        .ok_or_else(|| damaged("truncated"))?,
                )
            }
            _ => None,
        };
        Ok(Self {
            version,
            count: count as usize,
            directory_at,
            record_size,
            locator,
            lengths,
        })
    }

    /// The ranges a process loading the part reads: its header, and its locator's header;
    /// None where it reads the whole part (versions 1 to 4).
    pub(crate) fn reads(&self) -> Option<(Range<u64>, Option<Range<u64>>)> {
        let (header, locator_header) = self.lengths?;
        let locator = (self.locator)
            .filter(|_| locator_header > 0)
            .and_then(|(at, _)| Some(at..at.checked_add(locator_header as u64)?));
        Some((0..header as u64, locator))
    }
}

/// The entries of the part at `path` whose bytes are `bytes` (all of them), as much of them as
/// `keep` says, none of them holding `bytes` (see [`IndexedFileEntry`]).
pub fn decode(path: &Path, bytes: Bytes, keep: KeptEntries) -> Result<Part> {
    let preamble = Preamble::parse(path, &bytes)?;
    let locator = match preamble.reads() {
        Some((_, Some(at))) => {
            let at = usize::try_from(at.start)
                .ok()
                .zip(usize::try_from(at.end).ok());
            let head = at.and_then(|(start, end)| bytes.get(start..end));
            Some(head.ok_or_else(|| {
                StorageError::Damaged(path.to_string(), "its locator lies outside it".into())
            })?)
        }
        _ => None,
    };
    decode_head(path, &bytes, bytes.len() as u64, locator, keep)
}

/// The entries of the part at `path`, `part_len` bytes, as much of them as `keep` says, from
/// `head`: its first bytes, its header at least in version 5 and all of it before; and from
/// `locator_head`, the first bytes of its locator (its header at least), in version 5.
pub(crate) fn decode_head(
    path: &Path,
    head: &[u8],
    part_len: u64,
    locator_head: Option<&[u8]>,
    keep: KeptEntries,
) -> Result<Part> {
    let damaged = |why: String| StorageError::Damaged(path.to_string(), why);
    let truncated = || damaged("truncated".into());
    let (u32_at, u64_at) = (|at| u32_le(head, at), |at| u64_le(head, at));
    let preamble = Preamble::parse(path, head)?;
    let Preamble {
        version,
        count,
        directory_at,
        record_size,
        locator,
        lengths,
    } = preamble;
    // The whole part before version 5.
    if lengths.is_none() && head.len() as u64 != part_len {
        return Err(truncated());
    }
    let directory_end = count
        .checked_mul(record_size)
        .and_then(|d| d.checked_add(directory_at))
        .filter(|&end| end <= head.len())
        .ok_or_else(truncated)?;
    let mut records = Vec::with_capacity(count);
    let mut paths_len = 0usize;
    for i in 0..count {
        let at = directory_at + i * record_size;
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
        let (map, layout) = match version {
            1 | 2 => ((0, 0), 0),
            _ => (
                (
                    u64_at(rest + 16).ok_or_else(truncated)?,
                    u32_at(rest + 24).ok_or_else(truncated)? as usize,
                ),
                // Zero before version 5.
                match lengths {
                    Some(_) => u32_at(rest + 28).ok_or_else(truncated)? as usize,
                    None => 0,
                },
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
            map,
            layout,
        };
        paths_len = paths_len
            .checked_add(record.path_len)
            .ok_or_else(truncated)?;
        records.push(record);
    }
    let paths_end = directory_end
        .checked_add(align8(paths_len))
        .ok_or_else(truncated)?;
    let checksum_at = match lengths {
        Some((header, _)) => header.checked_sub(8).filter(|&at| at >= paths_end),
        None => Some(paths_end),
    };
    let checksum_at = checksum_at
        .filter(|&at| at + 8 <= head.len())
        .ok_or_else(truncated)?;
    if u64_at(checksum_at) != Some(xxh3_64(&head[..checksum_at])) {
        return Err(damaged("header checksum mismatch".into()));
    }
    // Checked by the header's checksum above.
    let header_end = (checksum_at + 8) as u64;
    let inside = |start: u64, len: usize| {
        let range = start..start.checked_add(len as u64)?;
        (start >= header_end && start.is_multiple_of(8) && range.end <= part_len).then_some(range)
    };
    // Version 5's header lists the columns and holds the maps' layouts after the paths.
    let mut at = paths_end;
    let part_columns: Option<Arc<[String]>> = match lengths {
        Some(_) => {
            let bad = || damaged("its column list is damaged".into());
            let list = &head[..checksum_at];
            let u32_in = |at| u32_le(list, at);
            let n = u32_in(at).ok_or_else(bad)?;
            at += 4;
            let mut names = Vec::new();
            for _ in 0..n {
                let len = u32_in(at).ok_or_else(bad)? as usize;
                let name = list.get(at + 4..at + 4 + len).ok_or_else(bad)?;
                names.push(String::from_utf8(name.to_vec()).map_err(|_| bad())?);
                at += 4 + len;
            }
            at = align8(at);
            if at > checksum_at {
                return Err(bad());
            }
            Some(names.into())
        }
        None => None,
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
            layout,
        } = record;
        let path = std::str::from_utf8(&head[path_at..path_at + path_len])
            .map_err(|_| damaged("a path is not UTF-8".into()))?
            .to_string();
        path_at += path_len;
        let layout_at = at..at + layout;
        at = align8(at + layout);
        if at > checksum_at {
            return Err(damaged("its layouts lie past its header".into()));
        }
        if keep.files.is_some_and(|keep| !keep(&path)) {
            continue;
        }
        let Some(sidecar_at) = inside(offset, len) else {
            return Err(damaged(format!(
                "the sidecar of {path} lies outside the part"
            )));
        };
        let map_at = match map {
            (_, 0) => 0..0,
            (offset, len) => inside(offset, len)
                .filter(|m| m.start >= sidecar_at.end)
                .ok_or_else(|| {
                    damaged(format!("the row group map of {path} lies outside the part"))
                })?,
        };
        if first_row
            .checked_add(rows)
            .is_none_or(|end| end > record_count)
        {
            return Err(damaged(format!(
                "{path}: rows {first_row}+{rows} beyond its {record_count}"
            )));
        }
        // Before version 5, the columns and the maps' layouts are read from the sidecars and
        // maps themselves, in `head`, the whole part.
        let local = |r: &Range<u64>| &head[r.start as usize..r.end as usize];
        let columns = match &part_columns {
            Some(columns) => columns.clone(),
            None => {
                let sidecar = Bytes::copy_from_slice(local(&sidecar_at));
                let sidecar = open_sidecar(sidecar, &path).map_err(damaged)?;
                let names = sidecar.columns().iter().map(|c| c.column.as_str());
                match &last_columns {
                    Some(last) if names.clone().eq(last.iter().map(String::as_str)) => last.clone(),
                    _ => names.map(str::to_string).collect(),
                }
            }
        };
        last_columns = Some(columns.clone());
        let map = match (keep.maps, lengths) {
            (false, _) => None,
            (true, Some(_)) if layout > 0 => {
                Some(RowGroupMap::decode_layout(&head[layout_at], rows))
            }
            (true, None) if !map_at.is_empty() => {
                Some(RowGroupMap::decode_layout(local(&map_at), rows))
            }
            _ => None,
        };
        let map = (map.transpose()).map_err(|why| damaged(format!("{path}: {why}")))?;
        let held = map.as_ref().map_or(0, |m| {
            8 * m.slice_starts.len() + 24 * m.pages.iter().map(Vec::len).sum::<usize>()
        });
        entries.push(IndexedFileEntry {
            bytes: path.len() + held + std::mem::size_of::<IndexedFileEntry>(),
            path,
            record_count,
            file_size,
            first_row,
            rows,
            columns,
            filters: FiltersAt {
                sidecar: sidecar_at,
                map: map_at,
            },
            map,
            block: u32::try_from(block).map_err(|_| truncated())?,
        });
    }
    let locator = match locator {
        Some((at, len)) => {
            let outside = || damaged("its locator lies outside the part".into());
            at.checked_add(len)
                .filter(|&end| at >= header_end && end <= part_len)
                .ok_or_else(outside)?;
            let bytes = match lengths {
                Some(_) => locator_head.ok_or_else(outside)?,
                None => &head[at as usize..(at + len) as usize],
            };
            let located = PartLocator::open(bytes, count, path.clone(), at, len);
            Some(located.map_err(damaged)?)
        }
        None => None,
    };
    Ok(Part {
        path: path.clone(),
        format: version,
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
        let within = |at: u64| usize::try_from(at.checked_sub(start)?).ok();
        let range = within(r.start)?..within(r.end)?;
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
            if (entry.map.as_ref()).is_some_and(|held| held.slice_starts != map.slice_starts) {
                return Err(format!(
                    "the row group map of {} cuts other slices than its part's header",
                    entry.path
                ));
            }
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

    fn ids() -> Vec<String> {
        vec!["id".to_string()]
    }

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
        let bytes = Bytes::from(encode(&files, &ids(), None).unwrap());
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
                Bytes::from(encode(&[], &ids(), None).unwrap()),
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

    /// A part of a format this build does not read is a newer Sieve's, not a damaged one: the
    /// indexer removes damaged parts, and must leave a newer server's alone.
    #[test]
    fn a_part_of_a_newer_format_is_refused_as_newer_not_damaged() {
        let mut bytes = encode(&[file("w/a.parquet", 0..10)], &ids(), None).unwrap();
        bytes[8..12].copy_from_slice(&(ATTACHED_INDEX_PART_FORMAT + 1).to_le_bytes());
        match decode(&"p".into(), Bytes::from(bytes.clone()), KeptEntries::ALL) {
            Err(StorageError::Newer(path, why)) => {
                assert_eq!(path, "p");
                assert!(why.contains("this build reads 1 to"), "{why}");
            }
            other => panic!("{:?}", other.map(|p| p.entries.len())),
        }
        bytes[8..12].copy_from_slice(&ATTACHED_INDEX_PART_FORMAT.to_le_bytes());
        bytes[0] ^= 1;
        let damaged = decode(&"p".into(), Bytes::from(bytes), KeptEntries::ALL);
        assert!(matches!(damaged, Err(StorageError::Damaged(..))));
    }

    fn hash(key: i64) -> u64 {
        let array = arrow_array::Int64Array::from_iter_values([key]);
        ColumnHashes::from_array(&array).unwrap().hashes[0]
    }

    /// The `k`-th part of an index gets fingerprints as wide as a table's `k`-th group does, so
    /// the false reads of all its parts, each of which a lookup asks, sum to at most a table's
    /// budget (0.01 a key): the first part's 8 bits admit ~1/256 of absent keys, the 40th's 18
    /// bits ~1/262,144.
    #[tokio::test]
    async fn a_later_part_of_an_index_admits_fewer_absent_keys() {
        let store = crate::AttachedIndexes::new(crate::Storage::in_memory());
        let present = 0..20_000;
        let files = [file("w/a.parquet", present.clone())];
        let absent: Vec<u64> = (1_000_000..1_100_000).map(hash).collect();
        let mut admitted = Vec::new();
        for ordinal in [1, 40] {
            let mut keys = PartKeys::new(&ids(), present.clone().count());
            let hashes: Vec<u64> = present.clone().map(hash).collect();
            let slices = vec![0; hashes.len()];
            (keys.add_entry(vec![block_keys(&hashes, &slices, 1)], 1)).unwrap();
            let locator = keys.build(ordinal).unwrap();
            let bytes = Bytes::from(encode(&files, &ids(), Some(&locator)).unwrap());
            let path = Path::from(format!("p{ordinal}"));
            let payload = object_store::PutPayload::from(bytes.clone());
            (object_store::ObjectStoreExt::put(store.storage().store(), &path, payload))
                .await
                .unwrap();
            let part = decode(&path, bytes, KeptEntries::ALL).unwrap();
            let located = part.locator.as_ref().unwrap();
            let column = located.column("id").unwrap();
            let at = store.locate(located, column, &absent).await.unwrap();
            admitted.push(at.iter().filter(|&&l| l != Location::Absent).count());
        }
        // ~390 and ~0.4 of the 100,000.
        assert!(admitted[0] > 200 && admitted[1] <= 3, "{admitted:?}");
    }

    /// Two files' row groups with a locator over them: read back, it places each key in its
    /// row group's slice; a damaged locator is the part's error; a worker's share of the
    /// entries keeps the locator, each entry with its block (its record in the part); a
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
        let locator = keys.build(1).unwrap();
        let bytes = Bytes::from(encode(&files, &ids(), Some(&locator)).unwrap());
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
        let short =
            Bytes::from(encode(&files, &ids(), Some(&locator[..locator.len() - 1])).unwrap());
        assert!(decode(&path, short, KeptEntries::ALL).is_err());

        // Version 4, as this build wrote it before: read whole, its locator with it.
        let v4 = encode_v4(&files, Some(&locator));
        let store = crate::AttachedIndexes::new(crate::Storage::in_memory());
        let payload = object_store::PutPayload::from(v4.clone());
        object_store::ObjectStoreExt::put(store.storage().store(), &path, payload)
            .await
            .unwrap();
        let part = store.read_part(&path, KeptEntries::ALL).await.unwrap();
        assert_eq!(part.format, 4, "the indexer builds it again");
        let located = part.locator.as_ref().unwrap();
        let at = store.locate(located, column, &hashes).await.unwrap();
        assert_eq!(at, [slice(0, 0), slice(0, 1), slice(1, 1), slice(2, 0)]);
        let second = filters(&v4, &part.entries[1]);
        assert!((1000..1500).all(|k| probe(&second, k)));
        // Version 3: no locator fields, the directory at 16, offsets 16 lower.
        let v4 = encode_v4(&files, None);
        let mut v3 = MAGIC.to_vec();
        v3.extend_from_slice(&3u32.to_le_bytes());
        v3.extend_from_slice(&v4[12..16]);
        v3.extend_from_slice(&v4[PREAMBLE_V4..]);
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
        assert_eq!(part.format, 3);
        let second = filters(&v3, &part.entries[1]);
        assert!((1000..1500).all(|k| probe(&second, k)));
    }

    /// Damage in a part's header is the part's error (its files are read unpruned); in a
    /// sidecar, the error of the lookup that reads it (its row group is read whole).
    #[test]
    fn a_damaged_part_is_an_error_never_a_filter() {
        let bytes = encode(&[file("w/a.parquet", 0..1000)], &ids(), None).unwrap();
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
        let header = u64::from_le_bytes(bytes[32..40].try_into().unwrap()) as usize;
        for flip in [3, 9, 20, 33, 50, 100, header - 9] {
            let mut damaged = bytes.clone();
            damaged[flip] ^= 0x40;
            let e = decode(&"p".into(), Bytes::from(damaged), KeptEntries::ALL)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("cannot use p:"), "flip {flip}: {e}");
        }
        for flip in [header + 20, bytes.len() - 9] {
            let mut damaged = bytes.clone();
            damaged[flip] ^= 0x40;
            let part = decode(&"p".into(), Bytes::from(damaged.clone()), KeptEntries::ALL);
            let entry = &part.unwrap().entries[0];
            let range = entry.filters.range();
            let read = read_filters(&damaged[range.start as usize..range.end as usize], entry);
            assert!(read.is_err(), "flip {flip}");
        }
    }

    /// A part is loaded from its header and its locator's header, read by range, whatever
    /// lies between and after them: two reads one after another where the header is longer
    /// than the first read, and the same entries and locator as the whole part's.
    #[tokio::test]
    async fn a_part_is_loaded_from_its_header_alone() {
        // 1,200 row groups of paths 120 bytes long: a header of ~220 KB.
        let mut keys = PartKeys::new(&ids(), 12_000);
        let files: Vec<IndexedFile> = (0..1200)
            .map(|g| {
                let range = g * 10..g * 10 + 10;
                let hashes: Vec<u64> = range.clone().map(hash).collect();
                keys.add_entry(vec![block_keys(&hashes, &[0; 10], 1)], 1)
                    .unwrap();
                file(&format!("w/{}{g:05}.parquet", "d".repeat(100)), range)
            })
            .collect();
        let locator = keys.build(1).unwrap();
        let bytes = encode(&files, &ids(), Some(&locator)).unwrap();
        let header = u64::from_le_bytes(bytes[32..40].try_into().unwrap());
        let locator_header = u32::from_le_bytes(bytes[40..44].try_into().unwrap()) as usize;
        assert!(header > FIRST_READ, "{header}");
        // Zeroed past the header but for the locator's header: nothing a load reads.
        let mut loaded = bytes.clone();
        let locator_at = bytes.len() - locator.len();
        loaded[header as usize..locator_at].fill(0);
        loaded[locator_at + locator_header..].fill(0);
        let store = crate::AttachedIndexes::new(crate::Storage::in_memory());
        let path = Path::from("p");
        let payload = object_store::PutPayload::from(loaded);
        object_store::ObjectStoreExt::put(store.storage().store(), &path, payload)
            .await
            .unwrap();
        let trace = crate::RequestTrace::new();
        let read = trace.scope(store.read_part(&path, KeptEntries::ALL)).await;
        let read = read.unwrap();
        assert_eq!((trace.requests(), trace.sequential_requests()), (3, 2));
        let whole = decode(&path, Bytes::from(bytes), KeptEntries::ALL).unwrap();
        assert_eq!(read.entries.len(), 1200);
        for (r, w) in read.entries.iter().zip(&whole.entries) {
            assert_eq!(
                (&r.path, &r.filters, r.block),
                (&w.path, &w.filters, w.block)
            );
            assert_eq!(&*r.columns, ["id"]);
        }
        let (r, w) = (read.locator.unwrap(), whole.locator.unwrap());
        assert_eq!(
            (r.offset, r.header.file_len()),
            (w.offset, w.header.file_len())
        );
    }

    /// A part as this build wrote it in format 4: no lengths in its preamble, no columns or
    /// layouts in its header.
    fn encode_v4(files: &[IndexedFile], locator: Option<&[u8]>) -> Vec<u8> {
        let paths_len: usize = files.iter().map(|f| f.path.len()).sum();
        let header = PREAMBLE_V4 + RECORD * files.len() + align8(paths_len) + 8;
        let maps: Vec<Vec<u8>> = (files.iter())
            .map(|f| f.map.as_ref().map(RowGroupMap::encode).unwrap_or_default())
            .collect();
        let blobs_end = header
            + (files.iter().zip(&maps))
                .map(|(f, m)| align8(f.sidecar.len()) + align8(m.len()))
                .sum::<usize>();
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&4u32.to_le_bytes());
        out.extend_from_slice(&(files.len() as u32).to_le_bytes());
        let (at, len) = locator.map_or((0, 0), |l| (blobs_end as u64, l.len() as u64));
        out.extend_from_slice(&at.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        let mut offset = header;
        for (f, map) in files.iter().zip(&maps) {
            for n in [
                f.record_count,
                f.file_size,
                f.first_row,
                f.rows,
                offset as u64,
            ] {
                out.extend_from_slice(&n.to_le_bytes());
            }
            out.extend_from_slice(&(f.sidecar.len() as u32).to_le_bytes());
            out.extend_from_slice(&(f.path.len() as u32).to_le_bytes());
            offset = align8(offset + f.sidecar.len());
            out.extend_from_slice(&(offset as u64).to_le_bytes());
            out.extend_from_slice(&(map.len() as u32).to_le_bytes());
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
        out.extend_from_slice(locator.unwrap_or_default());
        out
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
        let bytes = Bytes::from(encode(&groups, &ids(), None).unwrap());
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
            Bytes::from(encode(&groups, &ids(), None).unwrap()),
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
