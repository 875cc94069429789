//! Every on-disk format version Sieve's storage writes, in one place (as Databend's
//! `table_meta/src/meta/versions.rs` keeps them), so a format change is one reviewed edit here and
//! in `docs/format.md`.
//!
//! Each reader refuses a version newer than the one it knows with a named error; an older one is
//! read as written. The index crate's files carry their own versions, re-exported here so the
//! whole list is in one place: [`SIDECAR_FORMAT`] (per-block sidecars) and [`LOCATOR_FORMAT`]
//! (locator files).

pub use sieve_index::locator::LOCATOR_FORMAT;
pub use sieve_index::sidecar::VERSION as SIDECAR_FORMAT;

/// The checksummed JSON envelope of snapshots, the `latest` pointer, catalog entries and lists
/// of copied files ([`super::checked_json`]): the version this build writes and the newest it
/// reads. Bodies grow only by optional fields (a snapshot's `copies`), which older builds ignore.
pub const ENVELOPE_FORMAT: u32 = 1;

/// The format of blocks segments. A segment is written with the oldest format that describes it,
/// so a table without deletes stays readable by a Sieve that knows only format 1.
pub const BLOCKS_FORMAT: u32 = 1;

/// Format 2 adds deletes segments ([`super::deletes`]), told apart by [`KIND_KEY`]; it is also
/// the newest segment format this build reads.
pub const DELETES_FORMAT: u32 = 2;

/// The version byte of a block's page table, a segment column ([`super::page_table`]): 2 adds
/// page checksums, and 1 is still read; a
/// reader that finds another reads the block's footer instead.
pub const PAGE_TABLE_FORMAT: u8 = 2;

/// The body of a list of users (`catalog/users/<n>.json`, [`crate::users`]): the version this
/// build writes and the newest it reads.
pub const USERS_FORMAT: u32 = 1;

/// The binary parts of an attached table's index (`attached/iceberg/<uuid>/indexes/<id>/*.part`,
/// [`crate::attached_index`]): the version this build writes. It reads 1 to 4 too (1: a
/// sidecar per file; 2: per row group; 3: and a map of each row group's slices and pages; 4:
/// and a locator over the part's row groups; 5: and the header's length, the columns and the
/// maps' slices and pages in the header, so a reader loads the header alone). A part holds
/// sidecars, row group maps and a locator of their own formats: a change to any of them that
/// an older reader would refuse must come with a new part format too, since a server takes a
/// part whose pieces it cannot read for damaged and, with its files indexed again, removes it
/// (a part of a newer format it leaves alone).
pub const ATTACHED_INDEX_PART_FORMAT: u32 = 5;

/// The schema metadata key holding a segment's format version.
pub const FORMAT_KEY: &str = "sieve.segment.format";

/// The schema metadata key naming a format-2 segment's kind; absent on blocks segments.
pub const KIND_KEY: &str = "sieve.segment.kind";

/// The value of [`KIND_KEY`] on a deletes segment.
pub const DELETES_KIND: &str = "deletes";
