//! Tiered merging of locator groups: every [`MERGE_FAN_IN`] consecutive groups of one tier
//! become one group of the next, so the groups a lookup probes grow with the logarithm of the
//! table, not with it (a table written 8M rows at a time has 125 groups at a billion rows; merged,
//! 7 of 128M rows and the 13 not yet merged). Seed 003 sizes one error budget over an array
//! of filters; here the merged group's fingerprints are also sized for its place in the table,
//! which is earlier than its last input's, so merging makes the locator smaller per key too.
//!
//! Only locator files and the segments naming them change: blocks, sidecars and rows stay. A
//! group's locator does not keep its keys, so a merge reads its blocks' indexed columns again
//! (each block whole, checked against its checksums). Memory is bounded whatever the group's
//! size: a block's keys at a time are spilled to local files by their hash's top bits, and each
//! file (at most [`PART_KEYS`] keys) is built into its shards and written out before the next.
//!
//! The commit re-encodes the segments holding the merged blocks with the new group's name and
//! header. It lands beside appends and DELETEs (neither touches a group); a merge whose groups
//! an OPTIMIZE rewrote meanwhile is dropped, its file left for VACUUM.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use object_store::{ObjectStoreExt, WriteMultipart};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use sieve_index::locator::{
    self, BlockKeys, ColumnBuilder, ColumnLocator, PageWriter, SHARD_KEYS, SLICE_ROWS,
    fingerprint_bits,
};
use sieve_index::{ColumnHashes, LocatorHeader};

use crate::error::{Result, StorageError};
use crate::meta::block_list::{BlockList, LocatorGroup};
use crate::meta::snapshot::{self, SegmentRef, Snapshot};
use crate::read::table::Table;

/// Groups of one tier merged into one of the next.
pub const MERGE_FAN_IN: usize = 16;
/// Rows of a merged group at most: two tiers above 8M-row groups.
pub const MAX_GROUP_ROWS: u64 = 1 << 31;
/// Keys (16 bytes each) a merge holds in memory at once, per spill file.
const PART_KEYS: usize = 1 << 22;
/// Bytes per part of the merged file's upload.
const UPLOAD_PART: usize = 16 << 20;
/// Attempts before a merge's commit gives up under sustained contention.
const MAX_ATTEMPTS: usize = 100;

/// A group's tier: 0 up to `base` rows, then one more per [`MERGE_FAN_IN`]-fold.
fn tier(rows: u64, base: u64) -> u32 {
    let (mut tier, mut cap) = (0, base.max(1));
    while rows > cap {
        cap = cap.saturating_mul(MERGE_FAN_IN as u64);
        tier += 1;
    }
    tier
}

impl BlockList {
    fn group_rows(&self, group: &LocatorGroup) -> u64 {
        group.blocks.clone().map(|i| self.rows().value(i)).sum()
    }

    /// Which groups to merge: runs of [`MERGE_FAN_IN`] groups of one tier, adjacent in the
    /// block list and with usable headers, as ranges of [`Self::locator_groups`].
    pub fn group_merges(&self, group_rows: usize) -> Vec<Range<usize>> {
        let groups = self.locator_groups();
        let mut merges = Vec::new();
        let mut run: Option<(usize, u32)> = None;
        for (i, group) in groups.iter().enumerate() {
            let rows = self.group_rows(group);
            if group.header.is_err() {
                run = None;
                continue;
            }
            let tier = tier(rows, group_rows as u64);
            run = match run {
                Some((start, t)) if t == tier && groups[i - 1].blocks.end == group.blocks.start => {
                    Some((start, t))
                }
                _ => Some((i, tier)),
            };
            let (start, _) = run.expect("set above");
            if i + 1 - start == MERGE_FAN_IN {
                let total: u64 = groups[start..=i].iter().map(|g| self.group_rows(g)).sum();
                if total <= MAX_GROUP_ROWS {
                    merges.push(start..i + 1);
                }
                run = None;
            }
        }
        merges
    }
}

/// A merged group's file, uploaded, and what it replaces.
pub struct MergedGroup {
    pub name: String,
    pub header: Vec<u8>,
    /// The groups it replaces, and their blocks in order.
    pub replaces: Vec<String>,
    pub blocks: Vec<String>,
}

/// Where a column's spilled keys go: one file per hash range.
struct Spill {
    shard_count: usize,
    files: Vec<BufWriter<File>>,
}

impl Spill {
    fn new(dir: &std::path::Path, column: usize, upper_keys: usize) -> Result<Self> {
        let parts = upper_keys.div_ceil(PART_KEYS).max(1);
        let shards_per_part = upper_keys.div_ceil(SHARD_KEYS).div_ceil(parts).max(1);
        let files = (0..parts)
            .map(|p| {
                Ok(BufWriter::new(File::create(
                    dir.join(format!("{column}-{p}")),
                )?))
            })
            .collect::<std::io::Result<_>>()?;
        Ok(Self {
            shard_count: parts * shards_per_part,
            files,
        })
    }

    fn add(&mut self, block: u32, keys: &BlockKeys) -> Result<()> {
        let parts = self.files.len() as u128;
        for &(hash, slice) in keys {
            let part = ((u128::from(hash) * parts) >> 64) as usize;
            let file = &mut self.files[part];
            file.write_all(&hash.to_le_bytes())?;
            file.write_all(&block.to_le_bytes())?;
            file.write_all(&slice.to_le_bytes())?;
        }
        Ok(())
    }
}

impl Table {
    /// Merges what [`BlockList::group_merges`] chooses on the newest version, one group at a
    /// time, and commits them all at once; returns how many groups the merged ones replaced.
    pub async fn merge_locator_groups(&self) -> Result<u64> {
        let base = self.snapshot().await?;
        let blocks = self.blocks(&base).await?;
        let runs = blocks.group_merges(self.def().options.locator_group_rows);
        let mut merged = Vec::with_capacity(runs.len());
        for (k, run) in runs.into_iter().enumerate() {
            // Its place in the table once merged, the k runs before it each one group by then:
            // the budget's series term it must meet, as a group appended there would. (Groups
            // only ever move forward: appends land after it, OPTIMIZE takes groups out.)
            let ordinal = (run.start - k * (MERGE_FAN_IN - 1) + 1) as u64;
            merged.push(self.build_merged_group(&blocks, run, ordinal).await?);
        }
        if merged.is_empty() {
            return Ok(0);
        }
        self.commit_group_merges(&merged).await
    }

    async fn build_merged_group(
        &self,
        blocks: &BlockList,
        run: Range<usize>,
        ordinal: u64,
    ) -> Result<MergedGroup> {
        let groups = &blocks.locator_groups()[run];
        let headers: Vec<&Arc<LocatorHeader>> = groups
            .iter()
            .map(|g| g.header.as_ref().expect("merges have usable headers"))
            .collect();
        // Every column some input locates. An input that left one out (its blocks ascended, see
        // locator_builder) has that column's keys read like the others': were the column left
        // out of the merged group, lookups of it in the other inputs' blocks would go back to
        // their sidecars.
        let columns: Vec<String> = (self.def().options.index_columns.iter())
            .filter(|c| headers.iter().any(|h| h.column(c).is_some()))
            .cloned()
            .collect();
        let block_range = groups[0].blocks.start..groups[groups.len() - 1].blocks.end;
        // Groups written before slices were 4096 rows merge into the smallest slices of their
        // inputs: a smaller slice of an older block reads its larger page, whole and right.
        let slice_rows = headers
            .iter()
            .map(|h| h.slice_rows)
            .min()
            .unwrap_or(SLICE_ROWS);
        let slices = headers
            .iter()
            .map(|h| h.slices_per_block * (h.slice_rows / slice_rows))
            .max()
            .unwrap_or(1);
        let dir = tempfile::tempdir()?;
        let mut spills = columns
            .iter()
            .enumerate()
            .map(|(k, c)| {
                // An input without the column holds at most a key per row of it.
                let upper: u64 = (groups.iter().zip(&headers))
                    .map(|(g, h)| h.column(c).map_or_else(|| blocks.group_rows(g), |l| l.keys))
                    .sum();
                Spill::new(dir.path(), k, upper as usize)
            })
            .collect::<Result<Vec<_>>>()?;
        // A few blocks read and hashed at once, spilled in order.
        let mut read = futures::stream::iter(block_range.clone())
            .map(|i| self.block_keys(blocks, i, &columns, slice_rows))
            .buffered(crate::write::writer::parallelism());
        let mut n = 0u32;
        while let Some(keys) = read.next().await {
            for (spill, keys) in spills.iter_mut().zip(&keys?) {
                spill.add(n, keys)?;
            }
            n += 1;
        }
        drop(read);
        let block_count = block_range.len() as u32;
        let bits = fingerprint_bits(ordinal, self.def().options.max_false_reads);
        let pages_path = dir.path().join("pages");
        let (locators, page_count) = tokio::task::spawn_blocking({
            let (dir, pages_path) = (dir.path().to_path_buf(), pages_path.clone());
            move || {
                build_from_spills(
                    &dir,
                    &pages_path,
                    &columns,
                    spills,
                    block_count,
                    slices,
                    bits,
                )
            }
        })
        .await??;
        let header =
            locator::encode_header(block_count, slice_rows, slices, page_count, &locators)?;
        let name = uuid::Uuid::new_v4().simple().to_string();
        self.upload_locator(&name, &header, &pages_path).await?;
        Ok(MergedGroup {
            name,
            header,
            replaces: groups.iter().map(|g| g.name.clone()).collect(),
            blocks: block_range
                .map(|i| blocks.block_id(i).to_string())
                .collect(),
        })
    }

    /// Block `i`'s keys per column of `columns`, in slices of `slice_rows`, by physical row
    /// (deleted rows too, as when it was written: a locator may name keys a DELETE removed,
    /// never miss one).
    async fn block_keys(
        &self,
        blocks: &BlockList,
        i: usize,
        columns: &[String],
        slice_rows: u32,
    ) -> Result<Vec<BlockKeys>> {
        let path = self.block_path(blocks.block_id(i));
        let checksums = blocks.checksums(i);
        if let Some(rate) = self.storage().merge_rate() {
            rate.spend(checksums.file_len()).await;
        }
        let bytes = self.storage().store().get(&path).await?.bytes().await?;
        let whole = 0..checksums.file_len();
        let bytes = checksums.check(path.as_ref(), &whole, bytes)?;
        let columns = columns.to_vec();
        tokio::task::spawn_blocking(move || keys_of(bytes, &columns, slice_rows)).await?
    }

    async fn upload_locator(
        &self,
        name: &str,
        header: &[u8],
        pages: &std::path::Path,
    ) -> Result<()> {
        let upload = self
            .storage()
            .store()
            .put_multipart(&self.locator_path(name))
            .await?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, UPLOAD_PART);
        let rate = self.storage().merge_rate();
        if let Some(rate) = rate {
            rate.spend(header.len() as u64).await;
        }
        writer.write(header);
        let mut file = BufReader::new(File::open(pages)?);
        let mut chunk = vec![0u8; UPLOAD_PART];
        loop {
            let n = file.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            if let Some(rate) = rate {
                rate.spend(n as u64).await;
            }
            writer.wait_for_capacity(2).await?;
            writer.write(&chunk[..n]);
        }
        writer.finish().await?;
        Ok(())
    }

    /// Commits `merged` on the newest version: each whose groups are all still there, on the
    /// same blocks, replaces them. Returns the groups replaced.
    async fn commit_group_merges(&self, merged: &[MergedGroup]) -> Result<u64> {
        // Segments written again, reused by a retry that applies the same merges.
        let mut reencoded: HashMap<String, SegmentRef> = HashMap::new();
        let mut applied_before = 0;
        for _ in 0..MAX_ATTEMPTS {
            let newest = self.snapshot().await?;
            let blocks = self.blocks(&newest).await?;
            let by_name: HashMap<&str, &LocatorGroup> = blocks
                .locator_groups()
                .iter()
                .map(|g| (g.name.as_str(), g))
                .collect();
            // Block index → its new group, and the header on the group's first block.
            let mut relabel: HashMap<usize, (String, Option<Vec<u8>>)> = HashMap::new();
            let (mut replaced, mut applied) = (0, 0);
            for m in merged {
                // The merges after a dropped one would land later than their fingerprints
                // were sized for: they wait for the next OPTIMIZE.
                let Some(first) = still_there(&blocks, &by_name, m) else {
                    break;
                };
                for k in 0..m.blocks.len() {
                    let header = (k == 0).then(|| m.header.clone());
                    relabel.insert(first + k, (m.name.clone(), header));
                }
                replaced += m.replaces.len() as u64;
                applied += 1;
            }
            if relabel.is_empty() {
                return Ok(0);
            }
            if applied != applied_before {
                reencoded.clear();
                applied_before = applied;
            }
            let mut segments = Vec::with_capacity(newest.segments.len());
            for (k, segment) in newest.segments.iter().enumerate() {
                let touched = blocks
                    .segment_blocks(k)
                    .filter(|range| range.clone().any(|i| relabel.contains_key(&i)));
                let Some(range) = touched else {
                    segments.push(segment.clone());
                    continue;
                };
                if !reencoded.contains_key(&segment.name) {
                    let bytes = blocks.encode_relocated(range, &relabel)?;
                    reencoded.insert(segment.name.clone(), self.put_segment(bytes).await?);
                }
                segments.push(reencoded[&segment.name].clone());
            }
            let next = Snapshot {
                version: newest.version + 1,
                segments,
                ..newest
            };
            if self.try_put(next).await?.is_some() {
                return Ok(replaced);
            }
        }
        Err(snapshot::too_contended())
    }
}

/// The index of the first block of `m`'s groups if they are all still in `blocks`, adjacent and
/// in order, on exactly the blocks the merge read.
fn still_there(
    blocks: &BlockList,
    by_name: &HashMap<&str, &LocatorGroup>,
    m: &MergedGroup,
) -> Option<usize> {
    let groups: Vec<&LocatorGroup> = m
        .replaces
        .iter()
        .map(|name| by_name.get(name.as_str()).copied())
        .collect::<Option<_>>()?;
    let first = groups.first()?.blocks.start;
    let adjacent = groups
        .windows(2)
        .all(|p| p[0].blocks.end == p[1].blocks.start);
    let end = groups.last()?.blocks.end;
    let same = end - first == m.blocks.len()
        && (first..end)
            .zip(&m.blocks)
            .all(|(i, id)| blocks.block_id(i) == id);
    (adjacent && same).then_some(first)
}

/// The keys of `columns` in a block's Parquet file, per column, in slices of `slice_rows`.
fn keys_of(file: Bytes, columns: &[String], slice_rows: u32) -> Result<Vec<BlockKeys>> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
    let schema = builder.schema().clone();
    let indices = columns
        .iter()
        .map(|c| schema.index_of(c))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), indices.iter().copied());
    let reader = builder
        .with_projection(mask)
        .with_batch_size(65536)
        .build()?;
    let mut hashes: Vec<(ColumnHashes, Vec<u32>)> =
        columns.iter().map(|_| Default::default()).collect();
    let mut first_row = 0u32;
    for batch in reader {
        let batch = batch?;
        for (k, column) in columns.iter().enumerate() {
            let array = batch
                .column_by_name(column)
                .ok_or_else(|| StorageError::Invalid(format!("block has no column {column}")))?;
            let (hashes, rows) = &mut hashes[k];
            hashes.extend_with_rows(array.as_ref(), first_row, rows)?;
        }
        first_row += batch.num_rows() as u32;
    }
    Ok(hashes
        .iter()
        .map(|(hashes, rows)| locator::block_keys(&hashes.hashes, rows, slice_rows))
        .collect())
}

/// Builds every column's shards from its spill files, in hash order, into one pages file.
fn build_from_spills(
    dir: &std::path::Path,
    pages_path: &std::path::Path,
    columns: &[String],
    spills: Vec<Spill>,
    blocks: u32,
    slices: u32,
    bits: u8,
) -> Result<(Vec<ColumnLocator>, u64)> {
    let mut pages = PageWriter::new(BufWriter::new(File::create(pages_path)?));
    let mut locators = Vec::with_capacity(columns.len());
    for (k, (column, spill)) in columns.iter().zip(spills).enumerate() {
        let parts = spill.files.len();
        for mut file in spill.files {
            file.flush()?;
        }
        let mut builder = ColumnBuilder::new(column, blocks, slices, bits, spill.shard_count);
        for p in 0..parts {
            let mut bytes = Vec::new();
            File::open(dir.join(format!("{k}-{p}")))?.read_to_end(&mut bytes)?;
            std::fs::remove_file(dir.join(format!("{k}-{p}")))?;
            let entries: Vec<(u64, u32, u32)> = bytes
                .chunks_exact(16)
                .map(|e| {
                    let u32_at = |at: usize| u32::from_le_bytes(e[at..at + 4].try_into().unwrap());
                    (
                        u64::from_le_bytes(e[..8].try_into().unwrap()),
                        u32_at(8),
                        u32_at(12),
                    )
                })
                .collect();
            drop(bytes);
            builder.add_part(entries, p, parts, &mut pages)?;
        }
        locators.push(builder.finish()?);
    }
    let (_, count) = pages.finish()?;
    Ok((locators, count))
}
