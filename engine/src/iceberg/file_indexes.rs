//! The indexes of attached tables as this process holds them: every part of every index of a
//! table, loaded and kept, by data file: each row group's directory record, slices and walked
//! pages, and a part's locator (from format 4) by its header. The locator's pages are read by
//! range when a lookup asks it where a key is ([`FileIndexes::considered`]: the row group and
//! slice; a lookup considers only the files the locators name and those none covers,
//! [`SnapshotFiles`]); a row group's filters and slice maps, only for a key the locator could not place in
//! one row group (a key in several, a failed read, a part without a locator), then kept in a
//! cache of bounded bytes. So what a process holds grows with the row groups' slices (8 bytes
//! each), not with the keys (~27 bits a key when the filters and maps were held). Parts and
//! data files never change, so what was loaded stays true; what can change is which parts
//! exist (a pass of the indexer, an index created or dropped), and that is listed again at
//! most every [`RELIST_AFTER`], or at once after this process changed it. A listing that fails
//! keeps what was loaded; a part that cannot be read is left out, so its files are read
//! unpruned. A part found damaged (its bytes fail their checks when it is loaded or when a
//! lookup reads its locator's pages or a row group's filters) is left out of every view from
//! then on ([`FileIndexes::damaged`]) until the indexer's next pass has indexed its files again
//! and removed it: a damaged part costs speed until that pass, never a row, and is not fetched
//! and checked again on every lookup meanwhile.
//!
//! A worker keeps only the entries of the data files it owns ([`Share`]): a coordinator sends each
//! file's lookups to its owner by rendezvous, so the rest would be memory no lookup of this worker
//! reads (each part's locator header it keeps: its blocks name the part's directory records,
//! [`sieve_storage::IndexedFileEntry::block`]). A file whose entries a view lacks would be read
//! unpruned, never skipped. A coordinator keeps no row group's slices or walked pages
//! ([`FileIndexes::for_routing`]): it only chooses the files a lookup or a scan reads and sends
//! them to their owners; a read it makes itself reads a key's whole row group, not its slice.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use datafusion::arrow::datatypes::Schema;
use datafusion::parquet::file::metadata::ParquetMetaData;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::utils::{Guarantee, LiteralGuarantee};
use futures::StreamExt;
use object_store::path::Path;
use sieve_iceberg::{DataFile, TableScan};
use sieve_index::SliceOf;
use sieve_index::locator::Location;
use sieve_storage::{
    AttachedIndexDef, AttachedIndexes, IndexedFileEntry, KeptEntries, PageLocation, Part, Result,
    RowGroupFilters, RowGroupMap, StorageError,
};

use crate::cluster::placement::Placement;
use crate::scan::pruning::{LOCATOR_CONCURRENCY, literal_hashes};

use super::snapshot_files::{Considered, SnapshotFiles};

/// The views a worker keeps of one table under as many placements (coordinators that see other
/// live workers, or a worker joining or leaving): past that, the oldest goes.
const SHARE_VIEWS: usize = 2;

/// How stale this process's view of which parts exist may be: a part written by another process
/// is used this much later at most (until then its files are read unpruned, never skipped).
pub const RELIST_AFTER: Duration = Duration::from_secs(2);

/// How many snapshots' [`SnapshotFiles`] a loaded index keeps: the table's current one, and
/// the one before it for lookups that started before a commit.
const SNAPSHOTS: usize = 2;

/// The most memory the footers kept of one table's files take ([`Loaded::footer_with_pages`]);
/// past that, a lookup's footer is built and dropped, as it was before any was kept.
const FOOTER_BYTES: usize = 32 << 20;

/// Row groups' filters one lookup reads at once, as many as a native table's sidecar segments:
/// a key no locator places may ask the filters of thousands of row groups, and all at once
/// they would be as many requests in flight and tasks woken.
const FILTER_READS: usize = 32;

/// The footers [`Loaded::footer_with_pages`] kept, within [`FOOTER_BYTES`].
#[derive(Debug, Default)]
struct KeptFooters {
    /// Per data file path, its footers, each with the dictionary pages it leaves out.
    by_file: HashMap<String, Vec<(Vec<bool>, Arc<ParquetMetaData>)>>,
    bytes: usize,
}

/// An entry of a loaded part: the part, and the entry's place in it.
type EntryAt = (Arc<Part>, usize);

/// A file's coverage of a probe's column ([`Loaded::covered`]): the probe's place, the coverage
/// and the file's entries.
type Covered<'a> = (usize, &'a Coverage, &'a [EntryAt]);

/// What one table's indexes say, as last listed.
#[derive(Debug, Default)]
pub struct Loaded {
    pub defs: Vec<AttachedIndexDef>,
    parts: HashMap<Path, Arc<Part>>,
    /// Per data file path, the entries of the parts that cover it and what they cover.
    files: HashMap<String, FileEntries>,
    /// Footers with the offset index of their files' walked pages ([`Self::footer_with_pages`]).
    footers: Mutex<KeptFooters>,
    /// What the last [`SNAPSHOTS`] snapshots looked up are to these indexes, by their scan
    /// (only compared: a scan never changes once planned).
    snapshots: Mutex<Vec<(Weak<TableScan>, Arc<SnapshotFiles>)>>,
}

impl Loaded {
    fn new(defs: Vec<AttachedIndexDef>, parts: HashMap<Path, Arc<Part>>) -> Self {
        let mut entries: HashMap<String, Vec<_>> = HashMap::new();
        for part in parts.values() {
            for (i, entry) in part.entries.iter().enumerate() {
                entries
                    .entry(entry.path.clone())
                    .or_default()
                    .push((part.clone(), i));
            }
        }
        let files = (entries.into_iter())
            .map(|(path, mut entries)| {
                // In row order once here, not per lookup: coverage is worked out in this order.
                // A file in two parts (a merge's new part before its old ones are removed, or
                // two passes that raced) is covered by the larger, then the first by path: all
                // of its row groups from one part, whose locator then places its keys.
                entries.sort_by(|(a, i), (b, j)| {
                    let (x, y) = (&a.entries[*i], &b.entries[*j]);
                    (x.first_row, x.rows, b.entries.len(), &a.path).cmp(&(
                        y.first_row,
                        y.rows,
                        a.entries.len(),
                        &b.path,
                    ))
                });
                let coverage = Coverage::of(&entries);
                let walked = (entries.iter()).any(|(part, i)| {
                    (part.entries[*i].map.as_ref()).is_some_and(|m| !m.pages.is_empty())
                });
                let file = FileEntries {
                    entries,
                    coverage,
                    walked,
                };
                (path, file)
            })
            .collect();
        Self {
            defs,
            parts,
            files,
            footers: Mutex::default(),
            snapshots: Mutex::default(),
        }
    }

    /// The part at `path`, if it was listed and could be read.
    pub fn part(&self, path: &Path) -> Option<&Arc<Part>> {
        self.parts.get(path)
    }

    /// What `scan`'s files are to these indexes, worked out on the first lookup of the snapshot
    /// (lookups of the table meanwhile wait for that one walk, a few ms at 10,000 files).
    pub fn snapshot_files(&self, scan: &Arc<TableScan>) -> Arc<SnapshotFiles> {
        let mut kept = self.snapshots.lock().unwrap_or_else(|e| e.into_inner());
        let at = (kept.iter()).position(|(of, _)| std::ptr::eq(of.as_ptr(), Arc::as_ptr(scan)));
        if let Some(at) = at {
            return kept[at].1.clone();
        }
        let files = Arc::new(SnapshotFiles::of(self, &scan.files));
        if kept.len() == SNAPSHOTS {
            kept.remove(0);
        }
        kept.push((Arc::downgrade(scan), files.clone()));
        files
    }

    /// `file`'s entries for `column`, each a range of its rows (a row group; the whole file
    /// in a version 1 part), in row order, and the locator of their part; None unless entries
    /// built from the file as the manifest now describes it cover every row.
    fn coverage(&self, file: &DataFile, column: &str) -> Option<(&Coverage, &[EntryAt])> {
        let FileEntries {
            entries, coverage, ..
        } = self.files.get(file.path.as_ref())?;
        let coverage = coverage.iter().find(|c| {
            (c.record_count, c.file_size) == (file.record_count, file.file_size)
                && c.column == column
        })?;
        Some((coverage, entries))
    }

    /// Each of `files`' coverage of each probe's column, where it has one, with the probe's
    /// place in `probes`.
    fn covered(&self, files: &[&DataFile], probes: &[Probe]) -> Vec<Covered<'_>> {
        (files.iter())
            .flat_map(|file| (probes.iter().enumerate()).map(move |probe| (file, probe)))
            .filter_map(|(file, (p, probe))| {
                let (coverage, entries) = self.coverage(file, &probe.column)?;
                Some((p, coverage, entries))
            })
            .collect()
    }

    /// The locator that covers `file`'s `column`, where one part's does: the part, the column's
    /// place in its locator, and each of the file's row groups' block in it.
    pub fn located_blocks(
        &self,
        file: &DataFile,
        column: &str,
    ) -> Option<(&Arc<Part>, usize, impl Iterator<Item = u32>)> {
        let locator = self.coverage(file, column)?.0.locator.as_ref()?;
        let blocks = locator.blocks.iter().map(|(block, _)| *block);
        Some((&locator.part, locator.column, blocks))
    }

    /// The footer of the file at `path` that `build` makes of its walked pages
    /// ([`Self::walked_pages`]) and the column chunks (in file order) whose dictionary page it
    /// leaves out, `dropped`: built once per file and pattern, and kept while the table's kept
    /// footers fit in [`FOOTER_BYTES`] (a data file never changes once written; a lookup's
    /// pattern is one of a few per row group). Rebuilding it, a copy of the footer, was a few
    /// percent of a lookup's CPU. None where `build` makes none (the walked pages do not fit
    /// the footer), which is then asked again on the next read.
    pub fn footer_with_pages(
        &self,
        path: &str,
        dropped: Vec<bool>,
        build: impl FnOnce(&[bool]) -> Option<ParquetMetaData>,
    ) -> Option<Arc<ParquetMetaData>> {
        let footers = || self.footers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kept) =
            (footers().by_file.get(path)).and_then(|kept| kept.iter().find(|(d, _)| *d == dropped))
        {
            return Some(kept.1.clone());
        }
        let built = Arc::new(build(&dropped)?);
        let bytes = built.memory_size() + dropped.len();
        let mut footers = footers();
        if footers.bytes + bytes <= FOOTER_BYTES {
            let kept = footers.by_file.entry(path.to_string()).or_default();
            // Another lookup may have built the same one meanwhile.
            if !kept.iter().any(|(d, _)| *d == dropped) {
                kept.push((dropped, built.clone()));
                footers.bytes += bytes;
            }
        }
        Some(built)
    }

    /// Whether the index walked the pages of the file at `path`: it does only for a file written
    /// without a page index.
    pub fn walked(&self, path: &str) -> bool {
        self.files.get(path).is_some_and(|f| f.walked)
    }

    /// The pages of the file at `path`, whose footer is `metadata`, as its index walked them,
    /// per row group and leaf column: None unless every row group has an entry with pages for
    /// every column and the entries' rows are the row groups'. Whether each page lies inside
    /// its column chunk is asked only of a footer about to be built (`pages_inside`, in
    /// indexed_pages.rs): a lookup asks for the pages of every row group, and checking each
    /// page was a percent of its CPU where pages hold 4096 rows.
    pub fn walked_pages(
        &self,
        path: &str,
        metadata: &ParquetMetaData,
    ) -> Option<Vec<&[Vec<PageLocation>]>> {
        let entries = &self.files.get(path)?.entries;
        let mut walked = Vec::with_capacity(metadata.num_row_groups());
        let mut first_row = 0u64;
        // The entries are in row order, as the row groups are: one pass over both (a search
        // of the entries per row group was quadratic in a file's row groups).
        let mut entries = (entries.iter())
            .map(|(part, i)| &part.entries[*i])
            .peekable();
        for group in metadata.row_groups() {
            let rows = u64::try_from(group.num_rows()).ok()?;
            while (entries.peek()).is_some_and(|e| (e.first_row, e.rows) < (first_row, rows)) {
                entries.next();
            }
            let entry = (entries.peek()).filter(|e| (e.first_row, e.rows) == (first_row, rows))?;
            let pages = &entry.map.as_ref()?.pages;
            if pages.len() != group.num_columns() || pages.iter().any(Vec::is_empty) {
                return None;
            }
            walked.push(pages.as_slice());
            first_row += rows;
        }
        Some(walked)
    }

    /// Whether any index of the table covers `file`.
    pub fn covers(&self, file: &DataFile) -> bool {
        self.defs
            .iter()
            .any(|d| self.covers_columns(file, &d.columns))
    }

    /// Whether an index covers each of `columns` in `file`.
    pub fn covers_columns(&self, file: &DataFile, columns: &[String]) -> bool {
        columns.iter().all(|c| self.coverage(file, c).is_some())
    }

    /// The indexed columns' guarantees of `predicate` over `schema`, as the hashes a file must
    /// hold one of: empty when the predicate names no key of an indexed column. Columns are
    /// matched by field id: a renamed column is still the one indexed (its sidecars keep the
    /// name it was indexed under), one dropped and added again is not.
    pub fn probes(&self, predicate: &Arc<dyn PhysicalExpr>, schema: &Schema) -> Vec<Probe> {
        let indexed: HashMap<i32, &String> = (self.defs.iter())
            .flat_map(|d| d.field_ids.iter().copied().zip(&d.columns))
            .collect();
        LiteralGuarantee::analyze(predicate)
            .iter()
            .filter(|g| g.guarantee == Guarantee::In)
            .filter_map(|g| {
                let field = schema.field_with_name(&g.column.name).ok()?;
                let indexed_as = indexed.get(&sieve_iceberg::field_id(field)?)?;
                Some(Probe {
                    column: indexed_as.to_string(),
                    table_column: g.column.name.clone(),
                    hashes: literal_hashes(&g.literals, field.data_type())?,
                })
            })
            .collect()
    }

    /// The rows of `file` that may hold a row every probe allows: the slices (or row groups)
    /// no probe's locator, filter or map rules out, with how many row groups they left out;
    /// None when no probe's column is indexed in the file (every row may). Empty only when an
    /// index built from this very file rules a probe's keys out of each of its row groups.
    /// `located` holds what the parts' locators said of the probes' keys.
    pub fn matching_rows(
        &self,
        file: &DataFile,
        probes: &[Probe],
        located: &Located,
    ) -> Option<MatchingRows> {
        let mut matching: Option<(Vec<Range<u64>>, usize)> = None;
        let mut every_probe = true;
        for probe in probes {
            let Some((coverage, entries)) = self.coverage(file, &probe.column) else {
                every_probe = false;
                continue;
            };
            let groups = &coverage.row_groups;
            let Placed { named, unplaced } = coverage.place(probe, located);
            let mut visited: Vec<usize> = named.iter().map(|(g, _)| *g).collect();
            visited.dedup();
            if !unplaced.is_empty() {
                visited = (0..groups.len()).collect();
            }
            let mut ranges: Vec<Range<u64>> = Vec::new();
            let (mut admitted, mut next) = (0, 0);
            for g in visited {
                let mut wanted = Wanted::default();
                while let Some(&(_, slice)) = named.get(next).filter(|(at, _)| *at == g) {
                    match slice {
                        Some(slice) => wanted.slices.push(slice),
                        None => wanted.whole = true,
                    }
                    next += 1;
                }
                let (part, i) = &entries[groups[g].entry];
                let group = RowGroupIndex {
                    group: &groups[g],
                    entry: &part.entries[*i],
                    filters: located.filters.get(&(Arc::as_ptr(part) as usize, *i)),
                };
                // A row group whose filters could not be read is read whole, and the file's
                // manifest bounds are asked too.
                every_probe &= group.probe(&unplaced, &mut wanted);
                admitted += usize::from(group.push_rows(wanted, &mut ranges));
            }
            let left_out = groups.len() - admitted;
            matching = Some(match matching {
                None => (ranges, left_out),
                Some((before, before_left_out)) => {
                    (intersect(&before, &ranges), before_left_out.max(left_out))
                }
            });
        }
        matching.map(|(ranges, left_out)| MatchingRows {
            ranges,
            left_out,
            every_probe,
        })
    }
}

/// A data file's entries, in row order, and what they cover: worked out once when the indexes
/// load and not on every lookup of every file (a fifth of an absent key's choice of files, at
/// 100M rows), in one map so a lookup hashes the file's path once.
#[derive(Debug)]
struct FileEntries {
    entries: Vec<EntryAt>,
    coverage: Vec<Coverage>,
    /// Whether any entry holds the file's walked pages ([`Loaded::walked`], asked on every
    /// read of the file).
    walked: bool,
}

/// A column's entries that cover every row of a data file as a manifest may describe it (its
/// record count and size), once each.
#[derive(Debug)]
struct Coverage {
    record_count: u64,
    file_size: u64,
    column: String,
    /// Each row group, in row order.
    row_groups: Vec<CoveredGroup>,
    /// The locator of the part all the row groups are in, where they are in one part and it
    /// locates the column.
    locator: Option<CoverLocator>,
}

/// A part's locator as one file's coverage of a column asks it.
#[derive(Debug)]
struct CoverLocator {
    part: Arc<Part>,
    /// The column's place in the locator.
    column: usize,
    /// Each of the file's row groups' block in the locator (its entry's record in the part) and
    /// its place in the coverage's row groups, by block.
    blocks: Vec<(u32, usize)>,
}

impl CoverLocator {
    /// Where `entries` (the file's) say `row_groups` are, if they are all in one part with a
    /// locator of `column`.
    fn of(entries: &[EntryAt], row_groups: &[CoveredGroup], column: &str) -> Option<Self> {
        let part = &entries[row_groups.first()?.entry].0;
        let located = part.locator.as_ref()?.column(column)?;
        let mut blocks = Vec::with_capacity(row_groups.len());
        for (g, group) in row_groups.iter().enumerate() {
            let (in_part, i) = &entries[group.entry];
            if !Arc::ptr_eq(in_part, part) {
                return None;
            }
            blocks.push((in_part.entries[*i].block, g));
        }
        blocks.sort_unstable();
        Some(Self {
            part: part.clone(),
            column: located,
            blocks,
        })
    }

    /// The row group (its place in the coverage) that is `block`: None for a block of another
    /// file.
    fn group_of(&self, block: u32) -> Option<usize> {
        let at = self.blocks.binary_search_by_key(&block, |(b, _)| *b).ok()?;
        Some(self.blocks[at].1)
    }
}

/// What the parts' locators said of a lookup's keys ([`FileIndexes::considered`], or
/// [`FileIndexes::locate`] for a worker's files), asked once per
/// part and key before any file is chosen: a part holds many files, and its pages are read
/// from storage.
#[derive(Debug, Default)]
pub struct Located {
    /// By the part (its address while the lookup holds it), the column's place and the hash.
    answers: HashMap<(usize, usize, u64), Location>,
    /// The filters and slice maps read of the row groups of files where a key was not placed,
    /// by the part (its address) and the entry's place in it.
    filters: HashMap<(usize, usize), Arc<RowGroupFilters>>,
}

impl Located {
    /// The answer of `part`'s locator for `hash` in the column at `column` in it; None if it
    /// has none (its read failed), when the filters are asked.
    pub fn answer(&self, part: &Arc<Part>, column: usize, hash: u64) -> Option<Location> {
        let part = Arc::as_ptr(part) as usize;
        self.answers.get(&(part, column, hash)).copied()
    }
}

/// A row group of a file as one column's entries cover it.
#[derive(Debug)]
struct CoveredGroup {
    rows: Range<u64>,
    /// The row group's entry (its place in the file's entries) and the column's place in the
    /// entry's sidecar and map.
    entry: usize,
    at: usize,
}

/// What the locator said of a probe's keys in one file.
struct Placed {
    /// The row groups it named (their places in the coverage), each with a slice (None: all
    /// of it), sorted.
    named: Vec<(usize, Option<u32>)>,
    /// The hashes it could not place in one row group, which every row group's filters are
    /// asked of.
    unplaced: Vec<u64>,
}

impl Coverage {
    /// Where `located` places `probe`'s keys among the row groups.
    fn place(&self, probe: &Probe, located: &Located) -> Placed {
        let Some(locator) = &self.locator else {
            return Placed {
                named: Vec::new(),
                unplaced: probe.hashes.clone(),
            };
        };
        let (mut named, mut unplaced) = (Vec::new(), Vec::new());
        for &hash in &probe.hashes {
            let (block, slice) = match located.answer(&locator.part, locator.column, hash) {
                Some(Location::Absent) => continue,
                Some(Location::Slice { block, slice }) => (block, Some(slice)),
                Some(Location::Block(block)) => (block, None),
                Some(Location::Blocks) | None => {
                    unplaced.push(hash);
                    continue;
                }
            };
            named.extend(locator.group_of(block).map(|g| (g, slice)));
        }
        named.sort_unstable();
        Placed { named, unplaced }
    }

    /// What a file's `entries` (in row order) cover, per record count, size and column.
    fn of(entries: &[EntryAt]) -> Vec<Self> {
        let mut covers: Vec<Self> = Vec::new();
        for (e, (part, i)) in entries.iter().enumerate() {
            let entry = &part.entries[*i];
            for (at, column) in entry.columns.iter().enumerate() {
                let wanted = (entry.record_count, entry.file_size, column.as_str());
                let found = (covers.iter_mut())
                    .find(|c| (c.record_count, c.file_size, c.column.as_str()) == wanted);
                let cover = match found {
                    Some(cover) => cover,
                    None => {
                        covers.push(Self {
                            record_count: entry.record_count,
                            file_size: entry.file_size,
                            column: column.clone(),
                            row_groups: Vec::new(),
                            locator: None,
                        });
                        covers.last_mut().expect("pushed")
                    }
                };
                let rows = entry.first_row..entry.first_row + entry.rows;
                // A file indexed twice (by two passes that raced) has its ranges twice: one each.
                if cover.row_groups.last().is_none_or(|last| last.rows != rows) {
                    cover.row_groups.push(CoveredGroup { rows, entry: e, at });
                }
            }
        }
        // Only where the row groups follow each other from the first row to the last.
        covers.retain(|c| {
            let mut next = 0;
            for group in &c.row_groups {
                if group.rows.start != next {
                    return false;
                }
                next = group.rows.end;
            }
            next == c.record_count && !c.row_groups.is_empty()
        });
        for cover in &mut covers {
            cover.locator = CoverLocator::of(entries, &cover.row_groups, &cover.column);
        }
        covers
    }
}

/// What an index holds for one row group of a file and one column.
struct RowGroupIndex<'a> {
    group: &'a CoveredGroup,
    entry: &'a IndexedFileEntry,
    /// Its filters and slice maps, where a lookup read them ([`Located`]).
    filters: Option<&'a Arc<RowGroupFilters>>,
}

impl RowGroupIndex<'_> {
    /// The row group's map (its slices), if it has one.
    fn map(&self) -> Option<&RowGroupMap> {
        self.entry.map.as_ref()
    }

    /// Adds to `wanted` what the row group's filter and map say of `hashes`: each key's slice,
    /// the whole row group for a key in several, nothing for keys they rule out. Without its
    /// filters (their read failed), the whole row group, and false: the index did not answer.
    fn probe(&self, hashes: &[u64], wanted: &mut Wanted) -> bool {
        if hashes.is_empty() {
            return true;
        }
        let Some(filter) = (self.filters).and_then(|f| f.sidecar.columns().get(self.group.at))
        else {
            wanted.whole = true;
            return false;
        };
        let mut admitted = hashes.iter().filter(|&&h| filter.may_contain(h));
        let Some(first) = admitted.next() else {
            return true;
        };
        let Some(keys) = (self.filters).and_then(|f| f.keys.get(self.group.at)) else {
            wanted.whole = true;
            return true;
        };
        for &hash in std::iter::once(first).chain(admitted) {
            match keys.slice_of(hash) {
                SliceOf::One(slice) => wanted.slices.push(slice),
                SliceOf::Several => {
                    wanted.whole = true;
                    break;
                }
                SliceOf::Absent => {}
            }
        }
        true
    }

    /// Appends to `ranges` the rows `wanted` names, sorted and not overlapping; whether it
    /// named any. A slice the row group has no map of, or past its slices (a locator's answer
    /// for a key it never held), is the whole row group.
    fn push_rows(&self, wanted: Wanted, ranges: &mut Vec<Range<u64>>) -> bool {
        let Wanted { whole, mut slices } = wanted;
        if !whole && slices.is_empty() {
            return false;
        }
        let group = &self.group.rows;
        let map = self.map();
        let known = |s: &u32| map.is_some_and(|m| (*s as usize) < m.slice_starts.len());
        let (Some(map), false) = (map, whole || !slices.iter().all(known)) else {
            ranges.push(group.clone());
            return true;
        };
        slices.sort_unstable();
        slices.dedup();
        let (start, rows) = (group.start, group.end - group.start);
        let first = ranges.len();
        for slice in slices {
            let within = map.slice_rows(slice, rows);
            let range = start + within.start..start + within.end;
            match ranges[first..].last_mut() {
                Some(last) if last.end == range.start => last.end = range.end,
                _ => ranges.push(range),
            }
        }
        true
    }
}

/// What a lookup reads of one row group: all of it, or the slices named.
#[derive(Debug, Default)]
struct Wanted {
    whole: bool,
    slices: Vec<u32>,
}

/// The rows of a file an index leaves to read.
#[derive(Debug)]
pub struct MatchingRows {
    /// Sorted, not overlapping.
    pub ranges: Vec<Range<u64>>,
    /// The row groups (a file's entries) a filter or a map ruled out.
    pub left_out: usize,
    /// Whether the file's index answered for every probe (its filters read where they were
    /// needed): then its manifest bounds could rule the file out only where a filter's "maybe"
    /// is false, which reading its rows answers.
    pub every_probe: bool,
}

/// The rows in both `a` and `b`, each sorted and not overlapping.
fn intersect(a: &[Range<u64>], b: &[Range<u64>]) -> Vec<Range<u64>> {
    let (mut i, mut j, mut both) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let (start, end) = (a[i].start.max(b[j].start), a[i].end.min(b[j].end));
        if start < end {
            both.push(start..end);
        }
        if a[i].end < b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    both
}

/// One column's keys a lookup asks for, hashed as the index hashed the column's values.
#[derive(Debug)]
pub struct Probe {
    /// The column as its index names it.
    pub column: String,
    /// The column as the table names it now, as a predicate reads it.
    pub table_column: String,
    pub hashes: Vec<u64>,
}

#[derive(Debug, Default)]
struct TableState {
    loaded: Arc<Loaded>,
    listed: Option<Instant>,
    /// [`FileIndexes::damage`] when it was listed: a part found damaged since is still in it.
    damage: u64,
}

/// A worker's place under the placement a coordinator asked it under: the data files it owns
/// there are the only ones it reads.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Share {
    pub placement: Arc<Placement>,
    pub worker: usize,
}

impl Share {
    fn owns(&self, path: &str) -> bool {
        self.placement.owner(path) == self.worker
    }
}

/// Which view of a table's indexes: its UUID, and the share a worker's view is limited to.
type ViewKey = (String, Option<Share>);

/// Every attached table's loaded indexes, by table UUID (and a worker's share); shared by the
/// engine's sessions.
#[derive(Debug)]
pub struct FileIndexes {
    store: AttachedIndexes,
    /// Whether this process's own views keep the row group maps (not a coordinator's).
    maps: bool,
    /// Each view with the order it was made in, for [`SHARE_VIEWS`].
    tables: Mutex<HashMap<ViewKey, (u64, Arc<tokio::sync::Mutex<TableState>>)>>,
    made: AtomicU64,
    /// The parts this process found damaged, left out of its views: they are not read again
    /// (a part never changes, so its checks would fail again; bytes damaged only on the way
    /// cost the part's files an indexing, never a row). The indexer removes them
    /// ([`Self::damaged`]); a read that failed otherwise (a part gone, storage unreachable) is
    /// not remembered.
    damaged: Mutex<HashSet<Path>>,
    /// How many times `damaged` grew: a view listed before the last time is listed again.
    damage: AtomicU64,
}

impl FileIndexes {
    pub fn new(store: AttachedIndexes) -> Self {
        Self {
            store,
            maps: true,
            tables: Mutex::default(),
            made: Default::default(),
            damaged: Mutex::default(),
            damage: Default::default(),
        }
    }

    /// A coordinator's: its own views hold no slices or walked pages (see the module's doc).
    pub fn for_routing(store: AttachedIndexes) -> Self {
        Self {
            maps: false,
            ..Self::new(store)
        }
    }

    pub fn store(&self) -> &AttachedIndexes {
        &self.store
    }

    fn view(&self, key: ViewKey) -> Arc<tokio::sync::Mutex<TableState>> {
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, view)) = tables.get(&key) {
            return view.clone();
        }
        if key.1.is_some() {
            let mut shares: Vec<(u64, ViewKey)> = (tables.iter())
                .filter(|((uuid, share), _)| *uuid == key.0 && share.is_some())
                .map(|(k, (made, _))| (*made, k.clone()))
                .collect();
            shares.sort_unstable_by_key(|(made, _)| *made);
            let excess = (shares.len() + 1).saturating_sub(SHARE_VIEWS);
            for (_, old) in shares.into_iter().take(excess) {
                tables.remove(&old);
            }
        }
        let made = self.made.fetch_add(1, Ordering::Relaxed);
        tables
            .entry(key)
            .or_insert((made, Arc::default()))
            .1
            .clone()
    }

    /// The table's indexes (of the files `share` owns, on a worker), listed again if the last
    /// listing is older than [`RELIST_AFTER`], or [`Self::changed`] was called or a part was
    /// found damaged since. Lookups of one view wait for one listing.
    pub async fn loaded(&self, table_uuid: &str, share: Option<&Share>) -> Arc<Loaded> {
        let table = self.view((table_uuid.to_string(), share.cloned()));
        let mut state = table.lock().await;
        let damage = self.damage.load(Ordering::Acquire);
        if state.listed.is_some_and(|at| at.elapsed() < RELIST_AFTER) && state.damage == damage {
            return state.loaded.clone();
        }
        match self.list(table_uuid, share, &state.loaded).await {
            Ok(Some(loaded)) => {
                let whose = match share {
                    Some(s) => {
                        let workers = s.placement.workers().len();
                        format!(" (this worker's share, of {workers} workers)")
                    }
                    None if !self.maps => " (without slices, to route reads to workers)".into(),
                    None => String::new(),
                };
                let bytes: usize = (loaded.parts.values().flat_map(|p| &p.entries))
                    .map(|e| e.bytes)
                    .sum();
                log::info!(
                    "indexes of attached table {table_uuid} loaded: entries of {} data files, \
                     {:.1} MiB{whose}",
                    loaded.files.len(),
                    bytes as f64 / (1 << 20) as f64
                );
                state.loaded = Arc::new(loaded);
                state.damage = damage;
            }
            Ok(None) => state.damage = damage,
            // Its damage count kept: listed again at the next lookup while a part it holds
            // is known damaged.
            Err(e) => log::warn!("indexes of attached table {table_uuid} not listed: {e}"),
        }
        state.listed = Some(Instant::now());
        state.loaded.clone()
    }

    /// Remembers the part at `path` as damaged if `error` (of reading it) says so; what the
    /// warning of the failed read adds then.
    fn note_damage(&self, path: &Path, error: &StorageError) -> &'static str {
        if !matches!(error.root(), StorageError::Damaged(..)) {
            return "";
        }
        let mut damaged = self.damaged.lock().unwrap_or_else(|e| e.into_inner());
        if damaged.insert(path.clone()) {
            self.damage.fetch_add(1, Ordering::Release);
        }
        "; its part is left out until the indexer builds its files' index again"
    }

    /// Which of `parts` this process found damaged (before the view `loaded` last listed, if
    /// given): the indexer removes them once it has indexed their files again (their files
    /// are in no view listed since).
    pub fn damaged<'p>(&self, parts: &'p [Path], seen_by: Option<&Loaded>) -> Vec<&'p Path> {
        let damaged = self.damaged.lock().unwrap_or_else(|e| e.into_inner());
        let before = |p: &Path| seen_by.is_none_or(|loaded| !loaded.parts.contains_key(p));
        (parts.iter())
            .filter(|p| damaged.contains(*p) && before(p))
            .collect()
    }

    /// Forgets `parts`, removed from storage.
    pub fn removed(&self, parts: &[Path]) {
        let mut damaged = self.damaged.lock().unwrap_or_else(|e| e.into_inner());
        for part in parts {
            damaged.remove(part);
        }
    }

    /// The live files of a snapshot's `files` a lookup of `probes` considers, by what
    /// `snapshot` says of them (see [`SnapshotFiles`]), and what the parts' locators and, where
    /// a key was not placed, the filters said of its keys.
    pub async fn considered<'s>(
        &self,
        loaded: &Loaded,
        (snapshot, files): (&SnapshotFiles, &'s [DataFile]),
        probes: &[Probe],
    ) -> (Considered<'s>, Located) {
        let asked = snapshot.locators(probes).collect();
        let mut located = self.ask_locators(asked, probes).await;
        let considered = snapshot.considered(files, probes, &located);
        let covered = loaded.covered(&considered.files, probes);
        self.read_filters(&covered, probes, &mut located).await;
        (considered, located)
    }

    /// What the locators of the parts that cover `files` in `loaded` say of `probes`' keys,
    /// and the filters where a key was not placed: for a worker's few files.
    pub async fn locate(&self, loaded: &Loaded, files: &[&DataFile], probes: &[Probe]) -> Located {
        // Each file's coverage of each probe's column, looked up once for both steps.
        let covered = loaded.covered(files, probes);
        let asked = (covered.iter())
            .filter_map(|&(p, coverage, _)| {
                let locator = coverage.locator.as_ref()?;
                Some((&locator.part, locator.column, p))
            })
            .collect();
        let mut located = self.ask_locators(asked, probes).await;
        self.read_filters(&covered, probes, &mut located).await;
        located
    }

    /// What the locators say of each probe's keys (`asked`: a part, a column's place in its
    /// locator, a probe's place in `probes`), each part, column and probe asked once (one
    /// ranged read per part and key, at most two pages, unless cached), as many parts at once
    /// as a native table's locator groups. A part whose read fails is left out (its files'
    /// filters are asked).
    async fn ask_locators(
        &self,
        asked: Vec<(&Arc<Part>, usize, usize)>,
        probes: &[Probe],
    ) -> Located {
        let mut unique: HashMap<(usize, usize, usize), &Arc<Part>> = HashMap::new();
        for (part, column, p) in asked {
            let key = (Arc::as_ptr(part) as usize, column, p);
            unique.entry(key).or_insert(part);
        }
        // Collected first: a stream over the lazy map would hold its closure across the
        // awaits, which the compiler cannot prove general over the borrows' lifetimes.
        let reads: Vec<_> = (unique.into_iter())
            .map(|((at, column, p), part)| async move {
                let probe = &probes[p];
                let in_part = part.locator.as_ref()?;
                match self.store.locate(in_part, column, &probe.hashes).await {
                    Ok(found) => Some((at, column, &probe.hashes, found)),
                    Err(e) => {
                        let left = self.note_damage(&part.path, &e);
                        log::warn!(
                            "an index part's locator unusable ({e}), its filters asked{left}"
                        );
                        None
                    }
                }
            })
            .collect();
        let found: Vec<_> = futures::stream::iter(reads)
            .buffer_unordered(LOCATOR_CONCURRENCY)
            .collect()
            .await;
        let mut located = Located::default();
        for (part, column, hashes, found) in found.into_iter().flatten() {
            for (&hash, location) in hashes.iter().zip(found) {
                located.answers.insert((part, column, hash), location);
            }
        }
        located
    }

    /// Adds to `located` the filters of every row group of each file's `covered` column where
    /// the locators did not place its probe's key in one row group, [`FILTER_READS`] at once:
    /// a key no locator places (a part written before locators) asks every row group's.
    async fn read_filters(&self, covered: &[Covered<'_>], probes: &[Probe], located: &mut Located) {
        let mut unplaced: HashMap<(usize, usize), &EntryAt> = HashMap::new();
        for &(p, coverage, entries) in covered {
            if coverage.place(&probes[p], located).unplaced.is_empty() {
                continue;
            }
            for group in &coverage.row_groups {
                let at @ (part, i) = &entries[group.entry];
                unplaced.insert((Arc::as_ptr(part) as usize, *i), at);
            }
        }
        let reads: Vec<_> = (unplaced.into_iter())
            .map(|(key, (part, i))| async move {
                match self.store.filters(&part.path, &part.entries[*i]).await {
                    Ok(filters) => Some((key, filters)),
                    Err(e) => {
                        let left = self.note_damage(&part.path, &e);
                        log::warn!(
                            "a row group's index filters unusable ({e}), it is read whole{left}"
                        );
                        None
                    }
                }
            })
            .collect();
        located.filters = futures::stream::iter(reads)
            .buffer_unordered(FILTER_READS)
            .filter_map(std::future::ready)
            .collect()
            .await;
    }

    /// Makes the next [`Self::loaded`] list the table's indexes again, in every view: this
    /// process has just created, dropped or added to one.
    pub async fn changed(&self, table_uuid: &str) {
        let views: Vec<_> = (self.tables.lock().unwrap_or_else(|e| e.into_inner()).iter())
            .filter(|((uuid, _), _)| uuid == table_uuid)
            .map(|(_, (_, view))| view.clone())
            .collect();
        for view in views {
            view.lock().await.listed = None;
        }
    }

    /// The table's indexes as listed now, only the entries of the files `share` owns if given
    /// (what `old` holds is of the same share); None if they are what `old` holds.
    async fn list(
        &self,
        table_uuid: &str,
        share: Option<&Share>,
        old: &Loaded,
    ) -> Result<Option<Loaded>> {
        let defs = self.store.definitions(table_uuid).await?;
        let mut parts = HashMap::new();
        for def in &defs {
            let parts_of_def = self.store.parts(def).await?;
            let damaged = self.damaged(&parts_of_def, None);
            for path in parts_of_def
                .iter()
                .filter(|p| !damaged.contains(p))
                .cloned()
            {
                if let Some(kept) = old.parts.get(&path) {
                    parts.insert(path, kept.clone());
                    continue;
                }
                let owns = share.map(|share| move |file: &str| share.owns(file));
                let keep = KeptEntries {
                    files: (owns.as_ref()).map(|owns| owns as &(dyn Fn(&str) -> bool + Sync)),
                    maps: self.maps || share.is_some(),
                };
                match self.store.read_part(&path, keep).await {
                    Ok(part) => {
                        parts.insert(path, Arc::new(part));
                    }
                    Err(e) => {
                        let left = self.note_damage(&path, &e);
                        log::warn!("index part {path} unusable ({e}), its files are read{left}");
                    }
                }
            }
        }
        let unchanged = defs == old.defs
            && parts.len() == old.parts.len()
            && parts.keys().all(|p| old.parts.contains_key(p));
        Ok((!unchanged).then(|| Loaded::new(defs, parts)))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use datafusion::arrow::array::{Int64Array, RecordBatch};
    use datafusion::datasource::listing::PartitionedFile;
    use datafusion::datasource::physical_plan::ParquetFileReaderFactory;
    use datafusion::execution::cache::cache_manager::FileMetadataCache;
    use datafusion::execution::object_store::ObjectStoreUrl;
    use datafusion::execution::runtime_env::RuntimeEnv;
    use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
    use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
    use object_store::memory::InMemory;
    use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
    use sieve_index::SliceMap;
    use sieve_index::locator::block_keys;
    use sieve_index::retrieval::Scratch;
    use sieve_index::{ColumnHashes, ColumnIndex, FilterKind, Sidecar, sidecar};
    use sieve_storage::versions::ATTACHED_INDEX_PART_FORMAT;
    use sieve_storage::{FiltersAt, IndexedFile, PartKeys, Storage};

    use super::super::indexed_pages::IndexedPagesFactory;
    use super::super::page_walk::column_pages;
    use super::super::snapshot_files::Considered;
    use super::*;
    use crate::test_files::written;

    fn share(workers: usize) -> Share {
        let names = (0..workers).map(|i| format!("http://w{i}/")).collect();
        Share {
            placement: Arc::new(Placement::new(names)),
            worker: 0,
        }
    }

    /// An index of column `k` of table `u`.
    fn def() -> AttachedIndexDef {
        AttachedIndexDef {
            name: "ix".into(),
            id: "1".into(),
            catalog: "lake".into(),
            namespace: "ns".into(),
            table: "t".into(),
            table_uuid: "u".into(),
            columns: vec!["k".into()],
            field_ids: vec![1],
            filter: FilterKind::Xor8,
            created_ms: 0,
        }
    }

    #[tokio::test]
    async fn a_worker_keeps_its_views_under_its_last_placements_only() {
        let indexes = FileIndexes::new(AttachedIndexes::new(Storage::in_memory()));
        indexes.loaded("t", None).await;
        for workers in 1..=3 {
            indexes.loaded("t", Some(&share(workers))).await;
        }
        indexes.loaded("u", Some(&share(1))).await;
        let views: HashSet<ViewKey> = (indexes.tables.lock().unwrap().keys().cloned()).collect();
        let view = |t: &str, share| (t.to_string(), share);
        let expected = [
            view("t", None),
            view("t", Some(share(2))),
            view("t", Some(share(3))),
            view("u", Some(share(1))),
        ];
        assert_eq!(views, expected.into_iter().collect());
        // A change made here is seen by every view of the table at its next lookup.
        indexes.changed("t").await;
        for (key, (_, view)) in indexes.tables.lock().unwrap().iter() {
            assert_eq!(view.try_lock().unwrap().listed.is_none(), key.0 == "t");
        }
    }

    /// A part's locator reads the slice of every key present (a key in one slice, in several
    /// slices of a row group, in row groups of two files), which its filters and maps read too,
    /// and fewer rows for absent keys: one probe of the part's locator against a filter per row
    /// group. A worker's share of the part's entries asks the same locator.
    #[tokio::test]
    async fn a_part_locator_reads_what_the_filters_read_and_fewer_absent_keys() {
        let hash = |i: u64| xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes());
        let (groups, rows, slice_rows) = (5u64, 4_000u64, 1_000u64);
        // Row groups 0-2 are file a's, 3-4 file b's; key i is in row i / rows, slice by row,
        // except key 7 (also in b's last row group) and key 8 (also in its group's last slice).
        let keys_of = |g: u64| {
            let mut keys: Vec<(u64, u32)> = (g * rows..(g + 1) * rows)
                .map(|i| (hash(i), ((i % rows) / slice_rows) as u32))
                .collect();
            match g {
                0 => keys.push((hash(8), 3)),
                4 => keys.push((hash(7), 2)),
                _ => {}
            }
            keys
        };
        let file_of = |g: u64| if g < 3 { ("a", 0) } else { ("b", 3) };
        let mut files = Vec::new();
        let mut part_keys = PartKeys::new(&["k".to_string()], (groups * rows) as usize + 2);
        let mut scratch = Scratch::default();
        for g in 0..groups {
            let keyed = keys_of(g);
            let hashes = ColumnHashes {
                hashes: keyed.iter().map(|(h, _)| *h).collect(),
                has_null: false,
            };
            let (hashes_only, slices): (Vec<u64>, Vec<u32>) = keyed.iter().copied().unzip();
            part_keys
                .add_entry(vec![block_keys(&hashes_only, &slices, 1)], 4)
                .unwrap();
            let filter = ColumnIndex::build("k", FilterKind::Xor8, hashes);
            let (path, first) = file_of(g);
            let record_count = if path == "a" { 3 * rows } else { 2 * rows };
            files.push(IndexedFile {
                path: path.into(),
                record_count,
                file_size: 1,
                first_row: (g - first) * rows,
                rows,
                sidecar: sidecar::encode(&[filter]).unwrap(),
                map: Some(RowGroupMap {
                    slice_starts: (0..4).map(|s| s * slice_rows).collect(),
                    keys: vec![SliceMap::build(keyed, 4, &mut scratch).unwrap()],
                    pages: vec![],
                }),
            });
        }
        let locator = part_keys.build(1).unwrap();
        let store = AttachedIndexes::new(Storage::in_memory());
        let def = def();
        let (mut views, mut paths) = (Vec::new(), Vec::new());
        for locator in [Some(locator.as_slice()), None] {
            let path = store.write_part(&def, &files, locator).await.unwrap();
            let part = store.read_part(&path, KeptEntries::ALL).await.unwrap();
            assert_eq!(part.locator.is_some(), locator.is_some());
            views.push(Loaded::new(
                vec![],
                HashMap::from([(path.clone(), Arc::new(part))]),
            ));
            paths.push(path);
        }
        // A worker owning file b: its share of the entries, with the part's locator.
        let owns_b = |p: &str| p == "b";
        let keep = KeptEntries {
            files: Some(&owns_b),
            maps: true,
        };
        let part = store.read_part(&paths[0], keep).await.unwrap();
        assert!(part.locator.is_some() && part.entries.len() == 2);
        let share = Loaded::new(vec![], HashMap::from([(paths[0].clone(), Arc::new(part))]));
        let indexes = FileIndexes::new(store);
        let data_file = |path: &str, record_count| DataFile {
            path: Path::from(path),
            record_count,
            file_size: 1,
            deleted: None,
            bounds: Default::default(),
            equality_deletes: None,
        };
        let data_files = [data_file("a", 3 * rows), data_file("b", 2 * rows)];
        // Each file's ranges for `keys`, as a lookup chooses them.
        async fn read(
            indexes: &FileIndexes,
            loaded: &Loaded,
            files: &[DataFile],
            keys: &[u64],
        ) -> Vec<Vec<Range<u64>>> {
            let probe = Probe {
                column: "k".into(),
                table_column: "k".into(),
                hashes: keys
                    .iter()
                    .map(|i| xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes()))
                    .collect(),
            };
            let probes = std::slice::from_ref(&probe);
            let all: Vec<&DataFile> = files.iter().collect();
            let located = indexes.locate(loaded, &all, probes).await;
            (files.iter())
                .map(|f| loaded.matching_rows(f, probes, &located).unwrap().ranges)
                .collect()
        }
        let (with, without) = (&views[0], &views[1]);
        // Each file's ranges: one each, or none.
        let one = |range: Range<u64>| Vec::from([range]);
        assert_eq!(
            read(&indexes, with, &data_files, &[7]).await,
            [one(0..1000), one(6000..7000)]
        );
        assert_eq!(
            read(&indexes, with, &data_files, &[8]).await,
            [one(0..4000), vec![]]
        );
        let two = read(&indexes, with, &data_files, &[4001, 17_999]).await;
        assert_eq!(two, [one(4000..5000), one(5000..6000)]);
        // Every other key: its own slice, which the filters read too (with their false
        // positives in other row groups).
        for key in (0..groups * rows)
            .filter(|k| ![7, 8].contains(k))
            .step_by(13)
        {
            let (g, slice) = (key / rows, (key % rows) / slice_rows);
            let start = (g - file_of(g).1) * rows + slice * slice_rows;
            let mut own = [vec![], vec![]];
            own[usize::from(g >= 3)] = one(start..start + slice_rows);
            assert_eq!(
                read(&indexes, with, &data_files, &[key]).await,
                own,
                "key {key}"
            );
            let filters = read(&indexes, without, &data_files, &[key]).await;
            assert!((own.iter().zip(&filters)).all(|(o, f)| o.iter().all(|r| f.contains(r))));
        }
        // The worker finds b's keys through the locator (a's are another worker's).
        let b_only = [data_file("b", 2 * rows)];
        for key in [12_000, 13_999, 16_001, 19_999] {
            let (with, share) = (&views[0], &share);
            let whole = read(&indexes, with, &data_files, &[key]).await;
            let mine = read(&indexes, share, &b_only, &[key]).await;
            assert_eq!(mine, whole[1..], "key {key}");
        }
        let (mut with_read, mut without_read, mut share_read) = (0, 0, 0);
        for key in 1_000_000..1_020_000 {
            let any =
                |ranges: Vec<Vec<Range<u64>>>| usize::from(ranges.iter().any(|r| !r.is_empty()));
            with_read += any(read(&indexes, with, &data_files, &[key]).await);
            without_read += any(read(&indexes, without, &data_files, &[key]).await);
            share_read += any(read(&indexes, &share, &b_only, &[key]).await);
        }
        // ~60 against ~290: a false positive of the part's one locator, against one of five
        // row groups' filters (each then ruled out by its map in 2 of 8).
        assert!(
            with_read * 2 < without_read && share_read <= with_read,
            "absent keys read: {with_read} with, {without_read} without, {share_read} by a share"
        );
    }

    /// A lookup of a snapshot's files considers only those its keys' locators name, every live
    /// file of a part whose locator placed a key in several, and the files no locator covers;
    /// and chooses what a walk of every file chooses: the same rows of the same files, with
    /// the same counts.
    #[tokio::test]
    async fn a_lookup_considers_the_files_its_keys_locators_name_and_chooses_as_a_walk() {
        let hash = |i: u64| xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes());
        let rows = 1_000u64;
        // File f's row group g holds keys 2000 f + 1000 g onwards; key 1 is in file 4 too.
        let keys_of = |f: u64, g: u64| {
            let first = 2 * rows * f + rows * g;
            let mut keys: Vec<u64> = (first..first + rows).collect();
            if (f, g) == (4, 1) {
                keys.push(1);
            }
            keys
        };
        let store = AttachedIndexes::new(Storage::in_memory());
        let mut parts = HashMap::new();
        // Files 0-5, 9 and 10 in a part with a locator, 6 and 7 in one without; 8 in none.
        for (files, locates) in [(vec![0, 1, 2, 3, 4, 5, 9, 10], true), (vec![6, 7], false)] {
            let mut part_keys = PartKeys::new(&["k".to_string()], 20 * rows as usize);
            let mut indexed = Vec::new();
            for f in files {
                for g in 0..2 {
                    let hashes: Vec<u64> = keys_of(f, g).into_iter().map(hash).collect();
                    let slices = vec![0; hashes.len()];
                    (part_keys.add_entry(vec![block_keys(&hashes, &slices, 1)], 1)).unwrap();
                    let hashes = ColumnHashes {
                        hashes,
                        has_null: false,
                    };
                    indexed.push(IndexedFile {
                        path: format!("f{f}"),
                        record_count: 2 * rows,
                        file_size: 1,
                        first_row: g * rows,
                        rows,
                        sidecar: sidecar::encode(&[ColumnIndex::build(
                            "k",
                            FilterKind::Xor8,
                            hashes,
                        )])
                        .unwrap(),
                        map: None,
                    });
                }
            }
            let locator = part_keys.build(1).unwrap();
            let locator = locates.then_some(locator.as_slice());
            let path = store.write_part(&def(), &indexed, locator).await.unwrap();
            let part = store.read_part(&path, KeptEntries::ALL).await.unwrap();
            parts.insert(path, Arc::new(part));
        }
        let loaded = Loaded::new(vec![def()], parts);
        let indexes = FileIndexes::new(store);
        // File 9's rows are all deleted; file 10 is not the file its index was built from.
        let data_files: Vec<DataFile> = (0..11u64)
            .map(|f| DataFile {
                path: Path::from(format!("f{f}")),
                record_count: 2 * rows + u64::from(f == 10),
                file_size: 1,
                deleted: (f == 9).then(|| (0..2 * rows as u32).collect()),
                bounds: Default::default(),
                equality_deletes: None,
            })
            .collect();
        let snapshot = SnapshotFiles::of(&loaded, &data_files);
        // The files read, each with its rows (None: all); the files fully deleted, not
        // indexed and pruned by the index; the files considered.
        type Chosen = (Vec<(String, Option<Vec<Range<u64>>>)>, [usize; 3], usize);
        let chosen = |considered: Considered, located: Located, probes: &[Probe]| -> Chosen {
            let mut pruned = considered.ruled_out;
            let mut read = Vec::new();
            for file in &considered.files {
                match loaded.matching_rows(file, probes, &located) {
                    Some(matching) if matching.ranges.is_empty() => pruned += 1,
                    matching => read.push((file.path.to_string(), matching.map(|m| m.ranges))),
                }
            }
            let counts = [considered.fully_deleted, considered.not_indexed, pruned];
            (read, counts, considered.files.len())
        };
        // What a walk and what the snapshot's files choose for `keys`, checked to be the same.
        let both = async |indexes: &FileIndexes, keys: &[u64]| {
            let probe = Probe {
                column: "k".into(),
                table_column: "k".into(),
                hashes: keys.iter().copied().map(hash).collect(),
            };
            let probes = std::slice::from_ref(&probe);
            let walked = Considered::walk(&data_files, Some(&loaded));
            let located = indexes.locate(&loaded, &walked.files, probes).await;
            let walked = chosen(walked, located, probes);
            let (considered, located) = (indexes)
                .considered(&loaded, (&snapshot, &data_files), probes)
                .await;
            let chosen = chosen(considered, located, probes);
            assert_eq!(
                (&chosen.0, chosen.1),
                (&walked.0, walked.1),
                "keys {keys:?}"
            );
            (walked.2, chosen.2)
        };
        let mut lookups: Vec<Vec<u64>> = (0..22 * rows).step_by(7).map(|k| vec![k]).collect();
        lookups.extend((100_000..100_300).map(|k| vec![k]));
        lookups.extend([vec![1], vec![3, 2_500, 100_001], vec![1, 13_000, 21_000]]);
        let mut false_positives = 0;
        for keys in &lookups {
            let (walked, considered) = both(&indexes, keys).await;
            // Walked: the 10 live files. Considered: files 6, 7, 8 and 10 (no locator covers
            // them), each key's file among 0-5 (for key 1, all of them: it is in two), and a
            // false positive's for a key the locator has not (one of files 6-8's, or absent).
            assert_eq!(walked, 10);
            let of = |k: u64| (k / (2 * rows)) as usize;
            let named: HashSet<usize> = (keys.iter())
                .flat_map(|&k| match k {
                    1 => (0..6).collect(),
                    k if of(k) < 6 => vec![of(k)],
                    _ => vec![],
                })
                .collect();
            let unknown = (keys.iter())
                .filter(|&&k| (6..9).contains(&of(k)) || k >= 100_000)
                .count();
            let extra = considered - 4 - named.len();
            assert!(extra <= unknown, "keys {keys:?}: {considered} considered");
            false_positives += extra;
        }
        assert!(false_positives < 20, "{false_positives} false positives");
        // Where the parts cannot be read (here a store without them), every locator read fails:
        // every live file of the part is considered, and read whole, as the walk reads them.
        let unread = FileIndexes::new(AttachedIndexes::new(Storage::in_memory()));
        for keys in [vec![5], vec![2_005, 100_005]] {
            assert_eq!(both(&unread, &keys).await, (10, 10), "keys {keys:?}");
        }
    }

    /// A file in two parts (a merge's new part, written before its old ones are removed) is
    /// covered by the larger alone, whatever order the parts are listed in: all of its row
    /// groups from one part, whose locator places its keys.
    #[tokio::test]
    async fn a_file_in_two_parts_is_covered_by_the_larger() {
        let hash = |i: u64| xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes());
        let store = AttachedIndexes::new(Storage::in_memory());
        // A part of files `files`, each of two row groups of 100 keys.
        let part_of = async |files: &[u64]| {
            let mut part_keys = PartKeys::new(&["k".to_string()], 400);
            let mut indexed = Vec::new();
            for &f in files {
                for g in 0..2u64 {
                    let hashes: Vec<u64> =
                        (0..100).map(|k| hash(1_000 * f + 100 * g + k)).collect();
                    let slices = vec![0; hashes.len()];
                    (part_keys.add_entry(vec![block_keys(&hashes, &slices, 1)], 1)).unwrap();
                    let hashes = ColumnHashes {
                        hashes,
                        has_null: false,
                    };
                    let index = ColumnIndex::build("k", FilterKind::Xor8, hashes);
                    indexed.push(IndexedFile {
                        path: format!("f{f}"),
                        record_count: 200,
                        file_size: 1,
                        first_row: g * 100,
                        rows: 100,
                        sidecar: sidecar::encode(&[index]).unwrap(),
                        map: None,
                    });
                }
            }
            let locator = part_keys.build(1).unwrap();
            let path = store
                .write_part(&def(), &indexed, Some(&locator))
                .await
                .unwrap();
            let part = store.read_part(&path, KeptEntries::ALL).await.unwrap();
            (path, Arc::new(part))
        };
        let (small, large) = (part_of(&[0]).await, part_of(&[1, 0]).await);
        for _ in 0..16 {
            // A new map each time: its order of iteration is another.
            let parts = HashMap::from([small.clone(), large.clone()]);
            let loaded = Loaded::new(vec![def()], parts);
            let coverage = &loaded.files["f0"].coverage;
            let locator = coverage[0]
                .locator
                .as_ref()
                .expect("its row groups in one part");
            assert!(Arc::ptr_eq(&locator.part, &large.1));
            assert_eq!(coverage[0].row_groups.len(), 2);
        }
    }

    /// A key its row group's filter admits but whose map value names no slice is not read (the
    /// map is a second filter for the filter's false positives); every key the row group holds
    /// is still given its own slice. The part has no locator, so every lookup reads the row
    /// group's filters and map from storage (kept after the first).
    #[tokio::test]
    async fn a_map_value_naming_no_slice_rules_a_key_out() {
        let hash = |i: u64| xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes());
        let (rows, slice_rows) = (20_000u64, 4_000u64);
        let keyed: Vec<(u64, u32)> = (0..rows)
            .map(|i| (hash(i), (i / slice_rows) as u32))
            .collect();
        let hashes = ColumnHashes {
            hashes: keyed.iter().map(|(h, _)| *h).collect(),
            has_null: false,
        };
        let filter = ColumnIndex::build("k", FilterKind::Xor8, hashes);
        let sidecar = sidecar::encode(&[filter]).unwrap();
        let opened = Sidecar::open(sidecar.clone().into()).unwrap();
        let admits = |h: u64| opened.columns()[0].may_contain(h);
        // Five slices: values 0-4 name one, 7 is "several", 5 and 6 name none.
        let map = SliceMap::build(keyed, 5, &mut Scratch::default()).unwrap();
        let path = Path::from("data/f.parquet");
        let indexed = IndexedFile {
            path: path.to_string(),
            record_count: rows,
            file_size: 1,
            first_row: 0,
            rows,
            sidecar,
            map: Some(RowGroupMap {
                slice_starts: (0..5).map(|s| s * slice_rows).collect(),
                keys: vec![map],
                pages: vec![],
            }),
        };
        let store = AttachedIndexes::new(Storage::in_memory());
        let part = store.write_part(&def(), &[indexed], None).await.unwrap();
        let read = store.read_part(&part, KeptEntries::ALL).await.unwrap();
        let loaded = Loaded::new(vec![], HashMap::from([(part, Arc::new(read))]));
        let indexes = FileIndexes::new(store);
        let absent: Vec<u64> = (rows..rows + 200_000)
            .map(hash)
            .filter(|&h| admits(h))
            .collect();
        let file = DataFile {
            path,
            record_count: rows,
            file_size: 1,
            deleted: None,
            bounds: Default::default(),
            equality_deletes: None,
        };
        let ranges = async |h: u64| {
            let probe = Probe {
                column: "k".into(),
                table_column: "k".into(),
                hashes: vec![h],
            };
            let probes = std::slice::from_ref(&probe);
            let located = indexes.locate(&loaded, &[&file], probes).await;
            let matching = loaded.matching_rows(&file, probes, &located).unwrap();
            matching.ranges
        };
        for i in (0..rows).step_by(7) {
            let slice = i / slice_rows * slice_rows;
            let own: Vec<_> = std::iter::once(slice..slice + slice_rows).collect();
            assert_eq!(ranges(hash(i)).await, own, "key {i}");
        }
        let mut read = 0;
        for &h in &absent {
            read += usize::from(!ranges(h).await.is_empty());
        }
        // About 6 in 8 of the filter's false positives are read, not all.
        let admitted = absent.len();
        assert!(admitted > 400, "{admitted} false positives of 200,000");
        assert!(
            read * 8 < admitted * 7 && read * 2 > admitted,
            "{read} of {admitted} read"
        );
    }

    /// A column's entries cover a file as its manifest describes it only where their row
    /// groups follow each other from its first row to its last: an entry indexed twice counts
    /// once, a gap or an entry of another version of the file (another record count or size)
    /// leaves the file uncovered.
    #[test]
    fn entries_cover_a_file_only_from_its_first_row_to_its_last() {
        let entry = |path: &str, (record_count, file_size), (first_row, rows)| IndexedFileEntry {
            path: path.into(),
            record_count,
            file_size,
            first_row,
            rows,
            columns: vec!["k".to_string()].into(),
            filters: FiltersAt::default(),
            map: None,
            bytes: 0,
            block: 0,
        };
        let now = (100, 9);
        let part = vec![
            entry("a", now, (0, 60)),
            entry("a", now, (60, 40)),
            entry("a", now, (0, 60)), // indexed again by a racing pass
            entry("b", now, (0, 60)), // its last 40 rows not indexed
            entry("c", now, (0, 50)),
            entry("c", (50, 8), (50, 50)), // an older version's row group
        ];
        let part = Part {
            path: "p".into(),
            format: ATTACHED_INDEX_PART_FORMAT,
            entries: part,
            locator: None,
        };
        let loaded = Loaded::new(vec![], HashMap::from([(Path::from("p"), Arc::new(part))]));
        let file = |path: &str, (record_count, file_size)| DataFile {
            path: Path::from(path),
            record_count,
            file_size,
            deleted: None,
            bounds: Default::default(),
            equality_deletes: None,
        };
        let rows = |f: &DataFile, column: &str| {
            (loaded.coverage(f, column)).map(|(c, _)| {
                c.row_groups
                    .iter()
                    .map(|g| g.rows.clone())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(rows(&file("a", now), "k"), Some(vec![0..60, 60..100]));
        assert_eq!(rows(&file("a", now), "j"), None);
        assert_eq!(rows(&file("a", (100, 10)), "k"), None);
        assert_eq!(rows(&file("b", now), "k"), None);
        assert_eq!(rows(&file("c", now), "k"), None);
        assert_eq!(rows(&file("d", now), "k"), None);
    }

    /// A file of 5,000 rows in pages of 1,000, written without a page index (as PyArrow writes
    /// them), in a store of its own, and its index as [`Loaded`] with the pages `walked` makes
    /// of the file's own walk: the factory opening it through a footer cache of its own, that
    /// cache, and the file's path and size.
    async fn walked_file(
        walked: impl FnOnce(Vec<PageLocation>, u64) -> Vec<PageLocation>,
    ) -> (IndexedPagesFactory, Arc<FileMetadataCache>, Path, u64) {
        let rows = 5_000i64;
        let properties = WriterProperties::builder()
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_offset_index_disabled(true)
            .set_data_page_row_count_limit(1000)
            .set_write_batch_size(100)
            .build();
        let (store, path, size, footer) = stored(rows, properties).await;
        assert!(footer.offset_index().is_none());
        let column = footer.row_group(0).column(0).clone();
        let pages = column_pages(store.clone(), path.clone(), column, rows as u64)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(pages.len(), 5);
        let entry = IndexedFileEntry {
            path: path.to_string(),
            record_count: rows as u64,
            file_size: size,
            first_row: 0,
            rows: rows as u64,
            columns: Arc::new([]),
            filters: FiltersAt::default(),
            map: Some(RowGroupMap {
                slice_starts: vec![0],
                keys: vec![],
                pages: vec![walked(pages, size)],
            }),
            bytes: 0,
            block: 0,
        };
        let loaded = Loaded::new(
            vec![],
            HashMap::from([(
                path.clone(),
                Arc::new(Part {
                    path: path.clone(),
                    format: ATTACHED_INDEX_PART_FORMAT,
                    entries: vec![entry],
                    locator: None,
                }),
            )]),
        );
        assert!(loaded.walked(path.as_ref()));
        let footers = RuntimeEnv::default()
            .cache_manager
            .get_file_metadata_cache();
        let url = ObjectStoreUrl::parse("memory://").unwrap();
        let factory =
            IndexedPagesFactory::new((store, &url), footers.clone(), None, Arc::new(loaded), 8192);
        (factory, footers, path, size)
    }

    /// A Parquet file of one column `k` holding `0..rows`, written with `properties` into an
    /// in-memory store: the store, its path and size, and its footer.
    async fn stored(
        rows: i64,
        properties: WriterProperties,
    ) -> (Arc<dyn ObjectStore>, Path, u64, Arc<ParquetMetaData>) {
        let batch = RecordBatch::try_from_iter([(
            "k",
            Arc::new(Int64Array::from_iter_values(0..rows)) as _,
        )])
        .unwrap();
        let (bytes, footer) = written(&batch, properties);
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = Path::from("data/f.parquet");
        let size = bytes.len() as u64;
        store.put(&path, PutPayload::from(bytes)).await.unwrap();
        (store, path, size, footer)
    }

    /// The footer a reader of the file at `path`, `size` bytes, made by `factory` is given.
    async fn opened(factory: &IndexedPagesFactory, path: &Path, size: u64) -> Arc<ParquetMetaData> {
        let file = PartitionedFile::new(path.to_string(), size);
        let metrics = ExecutionPlanMetricsSet::new();
        let mut reader = factory.create_reader(0, file, None, &metrics).unwrap();
        reader.get_metadata(None).await.unwrap()
    }

    /// A file whose pages its index walked is opened through DataFusion's footer cache with
    /// the walked pages, and the cache keeps the footer it stored first: asked for a page
    /// index the file does not have, DataFusion 55's cache copies its footer and stores the
    /// copy on every read.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_walked_file_is_opened_without_storing_its_footer_again() {
        let (factory, footers, path, size) = walked_file(|pages, _| pages).await;
        let first = opened(&factory, &path, size).await;
        assert_eq!(
            first.offset_index().map(|i| i[0][0].page_locations.len()),
            Some(5)
        );
        let stored = || footers.get(&path).unwrap().file_metadata;
        let kept = stored();
        let again = opened(&factory, &path, size).await;
        assert!(
            Arc::ptr_eq(&first, &again),
            "the footer with the walked pages is kept"
        );
        assert!(
            Arc::ptr_eq(&kept, &stored()),
            "the footer cache stored its footer again"
        );
    }

    /// An index whose walked page lies outside its column chunk (damaged, or another file's by
    /// the same path) never sends the reader there: the file is opened with its own footer,
    /// on every open, since only a footer about to be built checks its pages.
    #[tokio::test(flavor = "multi_thread")]
    async fn walked_pages_outside_their_chunk_are_never_given_to_the_reader() {
        let (factory, _, path, size) = walked_file(|mut pages, size| {
            pages[3].offset = size;
            pages
        })
        .await;
        for _ in 0..2 {
            let footer = opened(&factory, &path, size).await;
            assert!(
                footer.offset_index().is_none(),
                "the walked pages were given"
            );
        }
    }

    /// The walked pages of a file of several row groups are each row group's own, found in one
    /// pass over the file's entries in row order, whatever order the parts held them in and
    /// with a row group indexed twice (by passes that raced).
    #[tokio::test(flavor = "multi_thread")]
    async fn each_row_group_gets_its_own_walked_pages() {
        let properties = WriterProperties::builder()
            .set_offset_index_disabled(true)
            .set_max_row_group_row_count(Some(2_000))
            .set_data_page_row_count_limit(500)
            .set_write_batch_size(100)
            .build();
        let (store, path, size, footer) = stored(5_000, properties).await;
        assert_eq!(footer.num_row_groups(), 3);
        let (mut entries, mut first_row) = (Vec::new(), 0);
        for group in footer.row_groups() {
            let rows = group.num_rows() as u64;
            let pages = column_pages(store.clone(), path.clone(), group.column(0).clone(), rows)
                .await
                .unwrap()
                .unwrap();
            let entry = IndexedFileEntry {
                path: path.to_string(),
                record_count: 5_000,
                file_size: size,
                first_row,
                rows,
                columns: Arc::new([]),
                filters: FiltersAt::default(),
                map: Some(RowGroupMap {
                    slice_starts: vec![0],
                    keys: vec![],
                    pages: vec![pages],
                }),
                bytes: 0,
                block: 0,
            };
            entries.extend([entry.clone(), entry]);
            first_row += rows;
        }
        entries.reverse();
        let part = Part {
            path: path.clone(),
            format: ATTACHED_INDEX_PART_FORMAT,
            entries,
            locator: None,
        };
        let parts = HashMap::from([(path.clone(), Arc::new(part))]);
        let loaded = Loaded::new(vec![], parts);
        let walked = loaded.walked_pages(path.as_ref(), &footer).unwrap();
        assert_eq!(walked.len(), 3);
        for (group, pages) in footer.row_groups().iter().zip(&walked) {
            let pages = &pages[0];
            assert_eq!(pages.len() as u64, (group.num_rows() as u64).div_ceil(500));
            let (start, length) = group.column(0).byte_range();
            assert!((pages.iter()).all(|p| p.offset >= start && p.offset < start + length));
            assert_eq!(pages[0].first_row, 0, "rows counted within the row group");
        }
    }
}
