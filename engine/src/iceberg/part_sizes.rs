//! How many data files an attached index's part holds. A lookup asks every part's locator (a
//! cached page read each, a ranged GET each when cold), so parts should be few; a part is
//! rebuilt from its data files to grow, so they should not be rebuilt often. A pass cuts the
//! files it indexes into parts of [`PART_FILES`] files and [`PART_ROWS`] rows, or
//! [`MOST_PART_FILES`] files ([`parts_of`]). The indexer following a table writes a smaller
//! part per pass: those are merged [`MERGE_PARTS`] at a time among parts of about the same rows
//! ([`merges`]), as a size-tiered LSM tree merges its runs, so a table appended to every pass
//! keeps fewer than [`MERGE_PARTS`] small parts per tier (a tier spans rows by a factor of
//! [`MERGE_PARTS`]) and each row is indexed again once per tier it climbs. Parts of an older
//! format are built again, whatever their size.

use std::collections::BTreeMap;

use sieve_iceberg::DataFile;

/// A part is written (and survives a failure later in the pass) once it holds this many data
/// files and [`PART_ROWS`] rows, or [`MOST_PART_FILES`] files. Parts of small files hold more
/// of them: cut every 256 files, 10M rows in files of 1,000 made 40 parts.
const PART_FILES: usize = 256;
/// The rows a part holds before it is written, from [`PART_FILES`] files on.
const PART_ROWS: u64 = 16 << 20;
/// The most files a part holds: its header, which a process keeps, has a record per row group.
const MOST_PART_FILES: usize = 8192;
/// How many small parts of one tier are merged into one. Fewer would merge more often (each
/// row indexed again once per tier, with tiers of rows growing by this factor); more would
/// leave more parts for every lookup to ask.
const MERGE_PARTS: usize = 8;

/// Whether a part of `files` files and `rows` rows is as large as a pass makes them.
fn full(files: usize, rows: u64) -> bool {
    (files >= PART_FILES && rows >= PART_ROWS) || files >= MOST_PART_FILES
}

/// `files` in the parts they are indexed into, in order.
pub fn parts_of<'a, 'f>(files: &'a [&'f DataFile]) -> Vec<&'a [&'f DataFile]> {
    let (mut parts, mut first, mut rows) = (Vec::new(), 0, 0);
    for (i, file) in files.iter().enumerate() {
        rows += file.record_count;
        if full(i + 1 - first, rows) {
            parts.push(&files[first..=i]);
            (first, rows) = (i + 1, 0);
        }
    }
    if first < files.len() {
        parts.push(&files[first..]);
    }
    parts
}

/// A part's size as written, how many of its files are live (the table's current snapshot
/// still has them), and whether it was written in an older format than this build writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartSize {
    pub files: usize,
    pub rows: u64,
    pub live: usize,
    pub old: bool,
}

/// What to do with an index's parts: which to remove (no live file: compaction or an overwrite
/// removed them all, so no lookup of a newer snapshot asks them), and which to merge, each
/// group into new parts: all of a tier's small parts once it has [`MERGE_PARTS`], and first
/// all the parts of an older format (before format 4 a part has no locator, so a lookup asks
/// every row group's filter; before 5 a process loads it whole). Parts are sized as written,
/// dead files included: a full part that lost a file to a compaction stays full rather than
/// join a tier of parts whose merge would index its rows again.
pub fn merges<P: Copy + Ord>(parts: &[(P, PartSize)]) -> (Vec<P>, Vec<Vec<P>>) {
    let mut removed = Vec::new();
    let mut old = Vec::new();
    let mut tiers: BTreeMap<u32, Vec<P>> = BTreeMap::new();
    for &(part, size) in parts {
        if size.live == 0 {
            removed.push(part);
        } else if size.old {
            old.push(part);
        } else if !full(size.files, size.rows) {
            let tier = size.rows.max(1).ilog(MERGE_PARTS as u64);
            tiers.entry(tier).or_default().push(part);
        }
    }
    let merged = (tiers.into_values())
        .filter(|parts| parts.len() >= MERGE_PARTS)
        .chain((!old.is_empty()).then_some(old))
        .map(|mut parts| {
            parts.sort_unstable();
            parts
        })
        .collect();
    removed.sort_unstable();
    (removed, merged)
}

#[cfg(test)]
mod tests {
    use object_store::path::Path;

    use super::*;

    /// The parts' sizes in files, for `n` files of `rows` rows each.
    fn parts(n: usize, rows: u64) -> Vec<usize> {
        let files: Vec<DataFile> = (0..n)
            .map(|i| DataFile {
                path: Path::from(format!("f{i}")),
                record_count: rows,
                file_size: 1,
                deleted: None,
                bounds: Default::default(),
                equality_deletes: None,
            })
            .collect();
        let files: Vec<&DataFile> = files.iter().collect();
        parts_of(&files).iter().map(|part| part.len()).collect()
    }

    /// Files of a million rows are cut every 256 files; smaller ones gather until a part holds
    /// 16M rows, or 8192 files.
    #[test]
    fn a_part_of_small_files_holds_more_of_them() {
        assert_eq!(parts(600, 1 << 20), [256, 256, 88]);
        assert_eq!(parts(1_200, 30_000), [560, 560, 80]);
        assert_eq!(parts(10_095, 1_000), [8192, 1903]);
        assert_eq!(parts(3, 1), [3]);
        assert!(parts(0, 1).is_empty());
    }

    /// Parts of `files` files of `rows` rows in all, every file live.
    fn sized(parts: impl IntoIterator<Item = (u32, usize, u64)>) -> Vec<(u32, PartSize)> {
        (parts.into_iter())
            .map(|(p, files, rows)| {
                (
                    p,
                    PartSize {
                        files,
                        rows,
                        live: files,
                        old: false,
                    },
                )
            })
            .collect()
    }

    /// Eight small parts of about the same rows are merged; fewer, or parts of other sizes, or
    /// full ones, are left; parts without a live file are removed.
    #[test]
    fn small_parts_of_a_tier_are_merged_eight_at_a_time() {
        // Tiers of 8: 64-511 rows is tier 2, 512-4095 tier 3.
        let mut parts = sized((0..7).map(|p| (p, 1, 100)));
        parts.extend(sized([(10, 1, 600), (11, 2, 4_000), (13, 300, 20 << 20)]));
        parts.extend(sized([(14, 8_192, 8_192_000)]));
        let dead = PartSize {
            files: 2,
            rows: 200,
            live: 0,
            old: false,
        };
        parts.push((12, dead));
        assert_eq!(merges(&parts), (vec![12], vec![]));
        parts.extend(sized([(7, 1, 511)]));
        assert_eq!(merges(&parts), (vec![12], vec![(0..8).collect()]));
        // A part without rows (its files empty) is in the first tier.
        parts.extend(sized((20..28).map(|p| (p, 1, 0))));
        let (_, merged) = merges(&parts);
        assert_eq!(merged, [(20..28).collect(), (0..8).collect::<Vec<_>>()]);
        // A full part is never merged, however many there are, nor when it lost files.
        let mut full = sized((0..20).map(|p| (p, 256, 16 << 20)));
        full.iter_mut().for_each(|(_, size)| size.live = 1);
        assert_eq!(merges(&full), (vec![], vec![]));
    }

    /// Parts of an older format are built again, all in one group whatever their sizes (the
    /// pass cuts their files into parts as any); one without a live file is removed.
    #[test]
    fn parts_of_an_older_format_are_built_again() {
        let mut parts = sized([(0, 1, 100), (1, 256, 16 << 20), (2, 8_192, 8_192_000)]);
        parts.extend(sized((3..10).map(|p| (p, 1, 100))));
        for p in [1, 2, 4] {
            parts[p].1.old = true;
        }
        parts[5].1 = PartSize {
            live: 0,
            ..parts[5].1
        };
        parts[6].1 = PartSize {
            live: 0,
            old: true,
            ..parts[6].1
        };
        assert_eq!(merges(&parts), (vec![5, 6], vec![vec![1, 2, 4]]));
        // With the tier of small parts full again (0, 3, 7, 8, 9 and three more).
        parts.extend(sized((10..13).map(|p| (p, 1, 100))));
        let tier = vec![0, 3, 7, 8, 9, 10, 11, 12];
        assert_eq!(merges(&parts), (vec![5, 6], vec![tier, vec![1, 2, 4]]));
    }

    /// A table appended to every pass keeps fewer than eight small parts per tier: after 1,000
    /// passes that each indexed a file of 1,000 rows, 13 parts (1,000 is 1750 in base 8: a
    /// part of 512 files, 7 of 64, 5 of 8), each file indexed at most 4 times.
    #[test]
    fn a_table_appended_to_every_pass_keeps_few_parts() {
        // Each part: its files (file i holds 1,000 rows) and how often each was indexed.
        let mut parts: Vec<Vec<usize>> = Vec::new();
        let mut indexed = vec![0; 1_000];
        for file in 0..1_000 {
            parts.push(vec![file]);
            indexed[file] += 1;
            let sizes: Vec<(usize, PartSize)> = (parts.iter().enumerate())
                .map(|(p, files)| {
                    let (files, rows) = (files.len(), 1_000 * files.len() as u64);
                    let live = files;
                    let old = false;
                    (
                        p,
                        PartSize {
                            files,
                            rows,
                            live,
                            old,
                        },
                    )
                })
                .collect();
            let (removed, merged) = merges(&sizes);
            assert!(removed.is_empty());
            let mut kept: Vec<Option<Vec<usize>>> = parts.drain(..).map(Some).collect();
            for group in &merged {
                let files: Vec<usize> = group
                    .iter()
                    .flat_map(|&p| kept[p].take().unwrap())
                    .collect();
                files.iter().for_each(|&f| indexed[f] += 1);
                parts.push(files);
            }
            parts.extend(kept.into_iter().flatten());
        }
        let mut sizes: Vec<usize> = parts.iter().map(Vec::len).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, [vec![8; 5], vec![64; 7], vec![512]].concat());
        assert!(indexed.iter().all(|&n| n <= 4), "{indexed:?}");
    }
}
