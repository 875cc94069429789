//! Tiered merging of locator groups: every [`MERGE_FAN_IN`] consecutive groups of one tier
//! become one group of the next, so the groups a lookup probes grow with the logarithm of the
//! table, not with it (a table written a block at a time has a thousand groups at a billion rows
//! of 1M-row blocks; merged, 3 of 256M rows, 14 of 16M and 8 not merged yet). A tier is a
//! sixteenfold of rows over one block: 0 is a block at most, 1 up to 16 blocks, 2 up to 256, so
//! a write's groups (128 blocks by default) are tier 2 and merge only in sixteens of those.
//! Seed 003 sizes one error budget over an array
//! of filters; here the merged group's fingerprints are also sized for its place in the table,
//! which is earlier than its last input's, so merging makes the locator smaller per key too.
//!
//! Only locator files and the segments naming them change: blocks, sidecars and rows stay. A
//! group's locator does not keep its keys, so a merge reads its blocks' indexed columns again
//! (each block whole, checked against its checksums) into [`GroupKeys`], which bounds the memory
//! whatever the group's size.
//!
//! The commit re-encodes the segments holding the merged blocks with the new group's name and
//! header. It lands beside appends and DELETEs (neither touches a group); a merge whose groups
//! an OPTIMIZE rewrote meanwhile is dropped, its file left for VACUUM.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use object_store::ObjectStoreExt;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use sieve_index::locator::{self, BlockKeys, SLICE_ROWS, fingerprint_bits};
use sieve_index::{ColumnHashes, LocatorHeader};

use crate::error::{Result, StorageError};
use crate::meta::block_list::{BlockList, LocatorGroup};
use crate::meta::snapshot::{self, SegmentRef, Snapshot};
use crate::read::table::Table;
use crate::write::group_keys::GroupKeys;

/// Groups of one tier merged into one of the next.
pub const MERGE_FAN_IN: usize = 16;
/// Rows of a merged group at most: sixteen of a write's default groups.
pub const MAX_GROUP_ROWS: u64 = 1 << 31;
/// Attempts before a merge's commit gives up under sustained contention.
const MAX_ATTEMPTS: usize = 100;

/// A group's tier: 0 up to `base` rows (a block's), then one more per [`MERGE_FAN_IN`]-fold.
/// (Compaction's classes of small units are tiers over a base of sixteen rows.)
pub(crate) fn tier(rows: u64, base: u64) -> u32 {
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
    /// block list, with usable headers and not small, as ranges of [`Self::locator_groups`].
    pub fn group_merges(&self, block_rows: usize) -> Vec<Range<usize>> {
        let groups = self.locator_groups();
        let mut merges = Vec::new();
        let mut run: Option<(usize, u32)> = None;
        for (i, group) in groups.iter().enumerate() {
            let rows = self.group_rows(group);
            // Small appends' groups are compacted instead (operations::compaction): merged,
            // sixteen of them would become one unit that compaction no longer counts as sixteen.
            if group.header.is_err() || self.small_unit(&group.blocks, block_rows as u64) {
                run = None;
                continue;
            }
            let tier = tier(rows, block_rows as u64);
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

impl Table {
    /// Merges what [`BlockList::group_merges`] chooses on the newest version, one group at a
    /// time, and commits them all at once; returns how many groups the merged ones replaced.
    pub async fn merge_locator_groups(&self) -> Result<u64> {
        let base = self.snapshot().await?;
        let blocks = self.blocks(&base).await?;
        let runs = blocks.group_merges(self.def().options.block_rows);
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
        // A block spills an entry per distinct key of its own, so up to one per row (a
        // group's distinct keys would undercount keys repeated across its blocks).
        let rows: u64 = groups.iter().map(|g| blocks.group_rows(g)).sum();
        let mut keys = GroupKeys::new(columns.iter().map(|c| (c.clone(), rows as usize)));
        // A few blocks read and hashed at once, added in order.
        let mut read = futures::stream::iter(block_range.clone())
            .map(|i| self.block_keys(blocks, i, &columns, slice_rows))
            .buffered(crate::write::writer::parallelism());
        while let Some(block) = read.next().await {
            let block = block?;
            keys =
                tokio::task::spawn_blocking(move || keys.add_block(block).map(|()| keys)).await??;
        }
        drop(read);
        let bits = fingerprint_bits(ordinal, self.def().options.max_false_reads);
        let file =
            tokio::task::spawn_blocking(move || keys.build(slice_rows, slices, bits)).await??;
        let name = uuid::Uuid::new_v4().simple().to_string();
        self.upload_locator(&name, &file, true).await?;
        Ok(MergedGroup {
            name,
            header: file.header,
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
        let bytes = self.whole_block_for_merge(blocks, i).await?;
        let columns = columns.to_vec();
        tokio::task::spawn_blocking(move || keys_of(bytes, &columns, slice_rows)).await?
    }

    /// Block `i`'s file, whole and checked against its checksums, its bytes counted against
    /// the merge I/O rate: what background merges and compactions read.
    pub(crate) async fn whole_block_for_merge(
        &self,
        blocks: &BlockList,
        i: usize,
    ) -> Result<Bytes> {
        let path = self.block_path(blocks.block_id(i));
        let checksums = blocks.checksums(i);
        self.storage()
            .merge_rate()
            .spend(checksums.file_len())
            .await;
        let bytes = self.storage().store().get(&path).await?.bytes().await?;
        let whole = 0..checksums.file_len();
        checksums.check(path.as_ref(), &whole, bytes)
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
