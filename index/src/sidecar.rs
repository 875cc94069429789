//! The sidecar: one file per block holding every indexed column's entry.
//!
//! Layout, version 1 (all integers little-endian):
//!
//! ```text
//! offset   size  field
//! 0        8     magic "SIEVEIDX"
//! 8        4     format version (1)
//! 12       4     column count c
//! 16       40·c  directory, one record per column:
//!                  u8 kind code · u8 flags (bit 0: has nulls) · u16 name length · u32 payload
//!                  length · u64 key count · u64 NDV estimate · u64 payload offset ·
//!                  u64 payload checksum (XXH3-64)
//! …        …     column names (UTF-8), concatenated, zero-padded to a multiple of 8
//! …        8     header checksum: XXH3-64 of every byte before it
//! …        …     payloads in directory order, each at the next multiple of 8, zero-padded
//! ```
//!
//! Payloads start 8-aligned so fingerprints can be probed in place; the reader copies a buffer
//! that is not 8-aligned in memory once. Each payload has its own checksum, so one column can be
//! read and trusted without the rest of the file ([`SidecarHeader`]). Opening is strict: anything
//! but exactly this layout (a truncated, corrupt, reordered or unknown-version file) is an error,
//! never a panic and never a filter that could say "no" wrongly. Writing the same entries twice
//! gives the same bytes.

use std::ops::Range;

use bytes::Bytes;
use xxhash_rust::xxh3::xxh3_64;

use crate::canonical::ColumnHashes;
use crate::column_index::ColumnIndex;
use crate::error::IndexError;
use crate::filter::{ColumnFilter, Cuckoo};
use crate::kind::{EntryKind, FilterKind};

pub const MAGIC: [u8; 8] = *b"SIEVEIDX";
pub const VERSION: u32 = 1;
const PREAMBLE: usize = 16;
/// Bytes of one directory record.
pub const RECORD: usize = 40;
const FLAG_HAS_NULL: u8 = 1;

fn align8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

fn header_len(names_len: usize, columns: usize) -> usize {
    PREAMBLE + RECORD * columns + align8(names_len) + 8
}

/// Serializes one block's column entries. Fails only if a name or payload exceeds the format's
/// field widths (64 KiB, 4 GiB).
pub fn encode(columns: &[ColumnIndex]) -> Result<Vec<u8>, IndexError> {
    let names_len: usize = columns.iter().map(|c| c.column.len()).sum();
    let mut offset = header_len(names_len, columns.len());
    let mut out = Vec::with_capacity(
        offset
            + columns
                .iter()
                .map(|c| align8(c.payload.len()))
                .sum::<usize>(),
    );
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(
        &u32::try_from(columns.len())
            .map_err(|_| too_large("column count"))?
            .to_le_bytes(),
    );
    for c in columns {
        Record {
            code: c.kind.code(),
            flags: if c.has_null { FLAG_HAS_NULL } else { 0 },
            name_len: u16::try_from(c.column.len()).map_err(|_| too_large("column name"))?,
            payload_len: u32::try_from(c.payload.len()).map_err(|_| too_large("payload"))?,
            key_count: c.key_count,
            ndv_estimate: c.ndv_estimate,
            offset: offset as u64,
            checksum: xxh3_64(&c.payload),
        }
        .write(&mut out);
        offset = align8(offset + c.payload.len());
    }
    for c in columns {
        out.extend_from_slice(c.column.as_bytes());
    }
    out.resize(align8(out.len()), 0);
    out.extend_from_slice(&xxh3_64(&out).to_le_bytes());
    for c in columns {
        out.extend_from_slice(&c.payload);
        out.resize(align8(out.len()), 0);
    }
    Ok(out)
}

fn too_large(what: &str) -> IndexError {
    IndexError::Corrupt(format!("{what} too large for the sidecar format"))
}

/// One column's entry of an open sidecar.
#[derive(Debug, Clone)]
pub struct SidecarColumn {
    pub column: String,
    pub kind: EntryKind,
    pub has_null: bool,
    pub key_count: u64,
    pub ndv_estimate: u64,
    pub payload_len: u64,
    pub filter: ColumnFilter,
}

impl SidecarColumn {
    /// False only if the block holds no non-null value with this hash.
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        self.filter.may_contain(hash)
    }
}

/// An opened, fully validated sidecar.
#[derive(Debug, Clone)]
pub struct Sidecar {
    columns: Vec<SidecarColumn>,
}

/// A sidecar's directory, checked on its own (magic, version, header checksum, layout). It says
/// where each column's payload lies, so a reader that needs one column of a large sidecar fetches
/// the header and that payload — two ranged reads — instead of the whole file.
#[derive(Debug, Clone)]
pub struct SidecarHeader {
    len: usize,
    entries: Vec<SidecarEntry>,
}

/// One column's directory record.
#[derive(Debug, Clone)]
pub struct SidecarEntry {
    column: String,
    kind: EntryKind,
    has_null: bool,
    key_count: u64,
    ndv_estimate: u64,
    offset: usize,
    payload_len: usize,
    checksum: u64,
}

/// Reads fixed-width fields off the front of a byte slice the caller has length-checked.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let (head, rest) = self.0.split_at(N);
        self.0 = rest;
        head.try_into().expect("split at N")
    }
}

/// A directory record as stored, before it is checked against the rest of the header.
struct Record {
    code: u8,
    flags: u8,
    name_len: u16,
    payload_len: u32,
    key_count: u64,
    ndv_estimate: u64,
    offset: u64,
    checksum: u64,
}

impl Record {
    fn read(r: &mut Reader<'_>) -> Self {
        let [code, flags] = r.take();
        Self {
            code,
            flags,
            name_len: u16::from_le_bytes(r.take()),
            payload_len: u32::from_le_bytes(r.take()),
            key_count: u64::from_le_bytes(r.take()),
            ndv_estimate: u64::from_le_bytes(r.take()),
            offset: u64::from_le_bytes(r.take()),
            checksum: u64::from_le_bytes(r.take()),
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.code, self.flags]);
        out.extend_from_slice(&self.name_len.to_le_bytes());
        out.extend_from_slice(&self.payload_len.to_le_bytes());
        out.extend_from_slice(&self.key_count.to_le_bytes());
        out.extend_from_slice(&self.ndv_estimate.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.checksum.to_le_bytes());
    }

    /// The entry this record describes for `column`, with everything a record can check on its
    /// own checked (the offset's place in the layout is the header's to check).
    fn entry(self, column: String) -> Result<SidecarEntry, IndexError> {
        let kind = EntryKind::from_code(self.code).ok_or_else(|| {
            IndexError::Corrupt(format!("unknown entry kind {} for {column:?}", self.code))
        })?;
        if self.flags & !FLAG_HAS_NULL != 0 {
            return Err(IndexError::Corrupt(format!(
                "unknown flags {:#x} for {column:?}",
                self.flags
            )));
        }
        let offset = usize::try_from(self.offset)
            .map_err(|_| IndexError::Corrupt(format!("entry {column:?} lies beyond any file")))?;
        Ok(SidecarEntry {
            kind,
            has_null: self.flags & FLAG_HAS_NULL != 0,
            key_count: self.key_count,
            ndv_estimate: self.ndv_estimate,
            offset,
            payload_len: self.payload_len as usize,
            checksum: self.checksum,
            column,
        })
    }
}

impl SidecarHeader {
    /// Parses the header off the front of `prefix`, which may hold more of the file (or all of
    /// it) or end anywhere after the header; a shorter prefix is `Truncated`.
    pub fn parse(prefix: &[u8]) -> Result<Self, IndexError> {
        let preamble = prefix
            .get(..PREAMBLE)
            .ok_or(IndexError::Truncated("preamble"))?;
        if preamble[..8] != MAGIC {
            return Err(IndexError::BadMagic);
        }
        let version = u32::from_le_bytes(preamble[8..12].try_into().expect("4 bytes"));
        if version != VERSION {
            return Err(IndexError::UnsupportedVersion(version, VERSION));
        }
        let count = u32::from_le_bytes(preamble[12..16].try_into().expect("4 bytes")) as usize;
        let records = count
            .checked_mul(RECORD)
            .and_then(|len| prefix.get(PREAMBLE..PREAMBLE + len))
            .ok_or(IndexError::Truncated("directory"))?;

        let mut reader = Reader(records);
        let records: Vec<Record> = (0..count).map(|_| Record::read(&mut reader)).collect();
        let names_len: usize = records.iter().map(|r| usize::from(r.name_len)).sum();
        let len = header_len(names_len, count);
        let header = prefix.get(..len).ok_or(IndexError::Truncated("header"))?;
        let (covered, stored) = header.split_at(len - 8);
        if xxh3_64(covered) != u64::from_le_bytes(stored.try_into().expect("8 bytes")) {
            return Err(IndexError::Corrupt("header checksum mismatch".into()));
        }

        let mut names = &header[PREAMBLE + RECORD * count..];
        let mut expected_offset = len;
        let mut entries: Vec<SidecarEntry> = Vec::with_capacity(count);
        for record in records {
            let (name, rest) = names.split_at(usize::from(record.name_len));
            names = rest;
            let column = std::str::from_utf8(name)
                .map_err(|_| IndexError::Corrupt("column name is not UTF-8".into()))?
                .to_string();
            if entries.iter().any(|e| e.column == column) {
                return Err(IndexError::Corrupt(format!(
                    "column {column:?} appears twice"
                )));
            }
            let entry = record.entry(column)?;
            if entry.offset != expected_offset {
                return Err(IndexError::Corrupt(format!(
                    "entry {:?} is not where the layout puts it",
                    entry.column
                )));
            }
            expected_offset = align8(expected_offset + entry.payload_len);
            entries.push(entry);
        }
        Ok(Self { len, entries })
    }

    /// Bytes of the header: the first payload starts here.
    pub fn byte_len(&self) -> usize {
        self.len
    }

    /// Bytes of the whole file, as the directory lays it out.
    pub fn file_len(&self) -> usize {
        self.entries
            .last()
            .map_or(self.len, |e| align8(e.range().end))
    }

    pub fn entry(&self, column: &str) -> Option<&SidecarEntry> {
        self.entries.iter().find(|e| e.column == column)
    }

    /// The columns it indexes, in its order.
    pub fn columns(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.column.as_str())
    }
}

impl SidecarEntry {
    /// This entry's directory record: what a reader that knows it (the segment metadata keeps
    /// one per block and indexed column) needs to fetch the payload with one ranged read,
    /// without the sidecar's header.
    pub fn record(&self) -> [u8; RECORD] {
        let mut out = Vec::with_capacity(RECORD);
        Record {
            code: self.kind.code(),
            flags: if self.has_null { FLAG_HAS_NULL } else { 0 },
            name_len: u16::try_from(self.column.len()).expect("parsed from a u16 length"),
            payload_len: u32::try_from(self.payload_len).expect("parsed from a u32 length"),
            key_count: self.key_count,
            ndv_estimate: self.ndv_estimate,
            offset: self.offset as u64,
            checksum: self.checksum,
        }
        .write(&mut out);
        out.try_into().expect("a record is RECORD bytes")
    }

    /// The entry for `column` from a record [`SidecarEntry::record`] made, checked as strictly
    /// as the header checks it, the name's length included. A wrong offset cannot pass for a
    /// right one: the payload read from it must still match the checksum.
    pub fn from_record(column: &str, record: &[u8]) -> Result<Self, IndexError> {
        if record.len() != RECORD {
            return Err(IndexError::Corrupt(format!(
                "a directory record is {RECORD} bytes, this one {}",
                record.len()
            )));
        }
        let record = Record::read(&mut Reader(record));
        if usize::from(record.name_len) != column.len() {
            return Err(IndexError::Corrupt(format!(
                "the record for {column:?} names a column of {} bytes",
                record.name_len
            )));
        }
        record.entry(column.to_string())
    }

    pub fn column(&self) -> &str {
        &self.column
    }

    /// Where the payload lies in the file.
    pub fn range(&self) -> Range<usize> {
        self.offset..self.offset + self.payload_len
    }

    /// Opens the entry from exactly its payload's bytes, checked against the directory's checksum.
    pub fn open(&self, payload: Bytes) -> Result<SidecarColumn, IndexError> {
        if payload.len() != self.payload_len {
            return Err(IndexError::Truncated("payload"));
        }
        if xxh3_64(&payload) != self.checksum {
            return Err(IndexError::Corrupt(format!(
                "checksum mismatch in {:?}",
                self.column
            )));
        }
        Ok(SidecarColumn {
            column: self.column.clone(),
            kind: self.kind,
            has_null: self.has_null,
            key_count: self.key_count,
            ndv_estimate: self.ndv_estimate,
            payload_len: self.payload_len as u64,
            filter: ColumnFilter::open(self.kind, self.key_count, align_in_memory(payload))?,
        })
    }
}

impl Sidecar {
    /// Opens a whole sidecar, strictly: the file must be exactly the header's layout, padding
    /// included, and every payload must match its checksum.
    pub fn open(bytes: Bytes) -> Result<Self, IndexError> {
        let bytes = align_in_memory(bytes);
        let header = SidecarHeader::parse(&bytes)?;
        let file_len = header.file_len();
        if bytes.len() < file_len {
            return Err(IndexError::Truncated("payload"));
        }
        if bytes.len() != file_len {
            return Err(IndexError::Corrupt(format!(
                "sidecar is {} bytes, its layout ends at {file_len}",
                bytes.len()
            )));
        }
        let mut columns = Vec::with_capacity(header.entries.len());
        for entry in &header.entries {
            let range = entry.range();
            if bytes[range.end..align8(range.end)].iter().any(|&b| b != 0) {
                return Err(IndexError::Corrupt("padding is not zero".into()));
            }
            columns.push(entry.open(bytes.slice(range))?);
        }
        Ok(Self { columns })
    }

    pub fn column(&self, name: &str) -> Option<&SidecarColumn> {
        self.columns.iter().find(|c| c.column == name)
    }

    pub fn columns(&self) -> &[SidecarColumn] {
        &self.columns
    }
}

/// What a DELETE changed in one column of a block: the keys whose last live row it removed,
/// and the keys that still have a live row.
#[derive(Debug, Clone, Default)]
pub struct KeyChanges {
    pub column: String,
    pub forgotten: Vec<u64>,
    pub live: Vec<u64>,
}

/// A new version of the sidecar `bytes` after a DELETE, or None if no entry changes. Cuckoo
/// entries delete the forgotten keys. Xor, fuse and bloom entries cannot delete: once the keys
/// they hold without a live row reach `stale_rebuild_fraction` of their keys (Wei et al.'s lazy
/// policy), they are built again from the live keys. A `minmax` entry of a column that held
/// every integer of its range has no keys to forget: it becomes a filter of the table's
/// `configured` kind built from the live keys, at once for a kind that can forget (as a cuckoo
/// entry would have forgotten), otherwise once as stale as a fuse entry would be rebuilt. Other
/// entries are copied as they are. A cuckoo entry must be told each inserted key at most once,
/// or another key could be lost (see [`Cuckoo::delete`]): the caller forgets a key only when the
/// block's last live row of it goes.
pub fn rewrite(
    bytes: Bytes,
    changes: &[KeyChanges],
    stale_rebuild_fraction: f64,
    configured: FilterKind,
) -> Result<Option<Vec<u8>>, IndexError> {
    let bytes = align_in_memory(bytes);
    Sidecar::open(bytes.clone())?;
    let header = SidecarHeader::parse(&bytes)?;
    let mut changed = false;
    let mut columns = Vec::with_capacity(header.entries.len());
    for entry in &header.entries {
        let mut column = ColumnIndex {
            column: entry.column.clone(),
            kind: entry.kind,
            has_null: entry.has_null,
            key_count: entry.key_count,
            ndv_estimate: entry.ndv_estimate,
            payload: bytes[entry.range()].to_vec(),
        };
        let change = changes.iter().find(|c| c.column == entry.column);
        match (change, entry.kind) {
            (Some(change), EntryKind::Filter(kind))
                if kind.can_delete() && !change.forgotten.is_empty() =>
            {
                let mut cuckoo = Cuckoo::open(column.payload)?;
                for &hash in &change.forgotten {
                    column.key_count -= u64::from(cuckoo.delete(hash));
                }
                column.payload = cuckoo.into_bytes();
                changed = true;
            }
            (Some(change), EntryKind::Filter(kind))
                if !kind.can_delete() && stale_enough(entry, change, stale_rebuild_fraction) =>
            {
                column = rebuilt(entry, change, kind);
                changed = true;
            }
            (Some(change), EntryKind::MinMaxOnly)
                if entry.key_count > 1
                    && !change.forgotten.is_empty()
                    && (configured.can_delete()
                        || stale_enough(entry, change, stale_rebuild_fraction)) =>
            {
                column = rebuilt(entry, change, configured);
                changed = true;
            }
            _ => {}
        }
        columns.push(column);
    }
    Ok(if changed {
        Some(encode(&columns)?)
    } else {
        None
    })
}

/// Whether the keys `entry` holds without a live row reach `fraction` of its keys.
fn stale_enough(entry: &SidecarEntry, change: &KeyChanges, fraction: f64) -> bool {
    let stale = entry.key_count.saturating_sub(change.live.len() as u64);
    stale > 0 && stale as f64 >= fraction * entry.key_count as f64
}

/// `entry` built again, as a `kind` filter, from the live keys alone.
fn rebuilt(entry: &SidecarEntry, change: &KeyChanges, kind: FilterKind) -> ColumnIndex {
    let live = ColumnHashes {
        hashes: change.live.clone(),
        has_null: entry.has_null,
    };
    ColumnIndex::build(entry.column.clone(), kind, live)
}

/// Object stores hand out buffers at any address; in-place probes need payloads 8-aligned in
/// memory, and payload offsets are multiples of 8, so the buffer itself must be.
fn align_in_memory(bytes: Bytes) -> Bytes {
    if bytes.as_ptr().align_offset(8) == 0 {
        return bytes;
    }
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(&bytes);
    Bytes::from_owner(AlignedWords(words, bytes.len()))
}

/// u64-backed storage that lends itself out as its first `.1` bytes.
struct AlignedWords(Vec<u64>, usize);

impl AsRef<[u8]> for AlignedWords {
    fn as_ref(&self) -> &[u8] {
        &bytemuck::cast_slice::<u64, u8>(&self.0)[..self.1]
    }
}
