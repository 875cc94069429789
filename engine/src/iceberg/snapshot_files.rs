//! Which of a snapshot's data files a lookup of keys considers. Walking every file per lookup
//! (its coverage by the index, its locator's answer, its deletes) cost ~0.6 µs a file: 6.4 ms
//! of CPU per lookup at 10,000 files, where reading the key's rows costs a tenth of that. So
//! what the walk learns that does not depend on the keys is worked out once per snapshot and
//! loaded index ([`SnapshotFiles`], kept by [`super::file_indexes::Loaded`]): which files are
//! live, which no index covers, and, per indexed column, which files each part's locator
//! covers and by which of its blocks. A lookup then considers only the files the locators name
//! for its keys, the files of a part whose locator could not place a key in one block, and the
//! files no locator covers; every other live file is ruled out by the index, as the walk would
//! have found ([`Considered::ruled_out`]). A worker given the few files its coordinator chose
//! walks those ([`Considered::walk`]).

use std::collections::HashMap;
use std::sync::Arc;

use sieve_iceberg::DataFile;
use sieve_index::locator::Location;
use sieve_storage::Part;

use super::file_indexes::{Loaded, Located, Probe};

/// Whether position deletes remove every row of `file`.
pub fn fully_deleted(file: &DataFile) -> bool {
    let rows = u32::try_from(file.record_count).unwrap_or(u32::MAX);
    (file.deleted.as_ref()).is_some_and(|d| d.range_cardinality(..rows) >= file.record_count)
}

/// The files a lookup or scan considers, and how many of those it was given it did not.
#[derive(Debug, Default)]
pub struct Considered<'a> {
    /// Live files, in the snapshot's order.
    pub files: Vec<&'a DataFile>,
    /// Files position deletes left no row of.
    pub fully_deleted: usize,
    /// Live files no index covers (all of them, considered or not).
    pub not_indexed: usize,
    /// Live files left out because the index rules the lookup's keys out of them.
    pub ruled_out: usize,
}

impl<'a> Considered<'a> {
    /// Every live file of `files`, and how many of them `loaded` does not cover.
    pub fn walk(files: impl IntoIterator<Item = &'a DataFile>, loaded: Option<&Loaded>) -> Self {
        let mut considered = Self::default();
        for file in files {
            if fully_deleted(file) {
                considered.fully_deleted += 1;
                continue;
            }
            considered.not_indexed += usize::from(loaded.is_some_and(|l| !l.covers(file)));
            considered.files.push(file);
        }
        considered
    }
}

/// What a snapshot's files are to the indexes as loaded: see the module's doc.
#[derive(Debug)]
pub struct SnapshotFiles {
    /// Live files, as places in the snapshot's files.
    live: Vec<u32>,
    fully_deleted: usize,
    not_indexed: usize,
    /// By indexed column, as its index names it.
    columns: HashMap<String, ColumnFiles>,
}

/// One indexed column's live files: those a part's locator covers, and the rest.
#[derive(Debug, Default)]
struct ColumnFiles {
    parts: Vec<PartFiles>,
    /// Live files no locator covers, considered by every lookup: their filters answer where a
    /// part without a locator of the column (or several parts) covers them, and they are read
    /// whole where none covers them as the manifest describes them (not indexed yet).
    unlocated: Vec<u32>,
}

/// The live files whose row groups are all in one part that locates the column.
#[derive(Debug)]
struct PartFiles {
    part: Arc<Part>,
    /// The column's place in the part's locator.
    column: usize,
    /// Each row group's block in the locator, with its file's place in the scan, by block.
    blocks: Vec<(u32, u32)>,
    /// The files' places, sorted.
    files: Vec<u32>,
}

impl SnapshotFiles {
    /// Walks a snapshot's `files` once against `loaded`.
    pub fn of(loaded: &Loaded, files: &[DataFile]) -> Self {
        let file = |at: u32| &files[at as usize];
        let live: Vec<u32> = (0..files.len() as u32)
            .filter(|&at| !fully_deleted(file(at)))
            .collect();
        let not_indexed = live.iter().filter(|&&at| !loaded.covers(file(at))).count();
        let mut columns: HashMap<String, ColumnFiles> = HashMap::new();
        for column in loaded.defs.iter().flat_map(|d| &d.columns) {
            if columns.contains_key(column) {
                continue;
            }
            let mut of_column = ColumnFiles::default();
            let mut parts: HashMap<usize, PartFiles> = HashMap::new();
            for &at in &live {
                let Some((part, in_locator, blocks)) = loaded.located_blocks(file(at), column)
                else {
                    of_column.unlocated.push(at);
                    continue;
                };
                let of_part =
                    (parts.entry(Arc::as_ptr(part) as usize)).or_insert_with(|| PartFiles {
                        part: part.clone(),
                        column: in_locator,
                        blocks: Vec::new(),
                        files: Vec::new(),
                    });
                of_part.blocks.extend(blocks.map(|block| (block, at)));
                of_part.files.push(at);
            }
            of_column.parts = parts.into_values().collect();
            for part in &mut of_column.parts {
                part.blocks.sort_unstable();
            }
            columns.insert(column.clone(), of_column);
        }
        Self {
            fully_deleted: files.len() - live.len(),
            live,
            not_indexed,
            columns,
        }
    }

    /// Each probe's column's locators: a part, the column's place in its locator, the probe's
    /// place in `probes`.
    pub fn locators(&self, probes: &[Probe]) -> impl Iterator<Item = (&Arc<Part>, usize, usize)> {
        (probes.iter().enumerate())
            .filter_map(|(p, probe)| Some((self.columns.get(&probe.column)?, p)))
            .flat_map(|(files, p)| (files.parts.iter()).map(move |f| (&f.part, f.column, p)))
    }

    /// The live files of `files` (the snapshot's this was worked out for) a lookup of `probes`
    /// must consider, given what the locators said of their keys: those of the probe that
    /// leaves the fewest to consider whatever its keys (a file ruled out by one probe is ruled
    /// out).
    pub fn considered<'s>(
        &self,
        files: &'s [DataFile],
        probes: &[Probe],
        located: &Located,
    ) -> Considered<'s> {
        let asked = (probes.iter())
            .filter_map(|probe| Some((self.columns.get(&probe.column)?, probe)))
            .min_by_key(|(files, _)| files.unlocated.len());
        let places: Vec<u32> = match asked {
            None => self.live.clone(),
            Some((files, probe)) => {
                let mut places = files.unlocated.clone();
                for part in &files.parts {
                    part.named(probe, located, &mut places);
                }
                places.sort_unstable();
                places.dedup();
                places
            }
        };
        Considered {
            ruled_out: self.live.len() - places.len(),
            files: (places.iter()).map(|&at| &files[at as usize]).collect(),
            fully_deleted: self.fully_deleted,
            not_indexed: self.not_indexed,
        }
    }
}

impl PartFiles {
    /// Appends the files the part's locator names for `probe`'s keys: each key's block's file,
    /// or every file where it named several blocks or could not be read.
    fn named(&self, probe: &Probe, located: &Located, places: &mut Vec<u32>) {
        for &hash in &probe.hashes {
            let block = match located.answer(&self.part, self.column, hash) {
                Some(Location::Absent) => continue,
                Some(Location::Slice { block, .. } | Location::Block(block)) => block,
                Some(Location::Blocks) | None => {
                    places.extend_from_slice(&self.files);
                    return;
                }
            };
            // A block of a file this snapshot no longer has, or has no live row of, names none.
            let first = self.blocks.partition_point(|&(b, _)| b < block);
            let of_block = self.blocks[first..]
                .iter()
                .take_while(|&&(b, _)| b == block);
            places.extend(of_block.map(|&(_, at)| at));
        }
    }
}
