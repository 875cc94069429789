//! Compaction of small appends as they arrive. An application's 5-row INSERTs each leave a
//! block, with its sidecar, page table and locator group, and a segment that every later
//! snapshot names. Every scan that reads the whole table then pays per block (about 36 KB of
//! DataFusion state each while it runs, see docs/benchmarks.md), and every commit writes a
//! snapshot that grows with them. OPTIMIZE merges them, but only when someone runs it.
//!
//! Size-tiered, as LSM trees compact: OPTIMIZE's small units (a locator group or a block
//! outside any, whose live rows are under half what its blocks hold when full) are put in
//! classes by their live rows, class c holding up to 16^(c+1). Once [`MERGE_FAN_IN`] units
//! share a class, they are written again together, into a unit of a higher class. A round
//! takes every such class, all of its units (up to sixteen full blocks' rows), so a table that
//! takes INSERTs faster than rounds run catches up at once, and a busy table's larger classes
//! are not starved by its smallest, which always has sixteen. So a row is written again at most once per class (log16 of the block size:
//! five times for 1M-row blocks), and a table keeps fewer than sixteen small units per class
//! however many INSERTs it takes.
//!
//! The rewrite commits as an OPTIMIZE's does ([`Table::commit_rewrite`]): beside appends,
//! carrying rows a DELETE removed meanwhile to their new places, and dropped if an OPTIMIZE
//! rewrote the same blocks first. Rows never change, only where they are stored, and a crash
//! mid-compaction leaves the table as it was (the uploaded files are left for VACUUM).

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use arrow_array::{BooleanArray, RecordBatch};
use arrow_select::filter::filter_record_batch;
use bytes::Bytes;
use futures::StreamExt;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use roaring::RoaringBitmap;

use crate::error::{Result, StorageError};
use crate::meta::block_list::BlockList;
use crate::meta::table_def::TableDef;
use crate::operations::group_merge::{MERGE_FAN_IN, tier};
use crate::operations::optimize::{Optimized, Rewrite};
use crate::read::table::Table;
use crate::write::writer::TableWriter;

/// Full blocks' worth of rows a compaction writes at most (past its first sixteen units): a
/// table that took INSERTs faster than compactions ran catches up in one round, and a round
/// stays as long as a small OPTIMIZE.
const MAX_ROUND_BLOCKS: u64 = MERGE_FAN_IN as u64;

/// Bytes of block files a compaction reads ahead of what it writes.
const READ_AHEAD_BYTES: u64 = 64 << 20;

/// A small unit's class: 0 up to 16 live rows, then one more per [`MERGE_FAN_IN`]-fold.
fn class(live_rows: u64) -> u32 {
    tier(live_rows, MERGE_FAN_IN as u64)
}

impl BlockList {
    /// The blocks the next compaction writes again, in order: the small units of every class
    /// that has [`MERGE_FAN_IN`] of them, lowest class first, as many as [`MAX_ROUND_BLOCKS`]
    /// full blocks hold past the first sixteen; a class is taken only if sixteen of its units
    /// fit, so each unit taken moves up a class. Empty when no class has sixteen.
    pub fn compaction_plan(&self, def: &TableDef) -> Vec<usize> {
        let block_rows = def.options.block_rows as u64;
        let most_rows = MAX_ROUND_BLOCKS.saturating_mul(block_rows);
        let mut classes: BTreeMap<u32, Vec<(Range<usize>, u64)>> = BTreeMap::new();
        for unit in self.rewrite_units() {
            if self.small_unit(&unit, block_rows) {
                let live = self.unit_live_rows(&unit);
                classes.entry(class(live)).or_default().push((unit, live));
            }
        }
        let (mut taken, mut rows) = (Vec::new(), 0);
        for units in classes.into_values().filter(|u| u.len() >= MERGE_FAN_IN) {
            let sixteen: u64 = units[..MERGE_FAN_IN].iter().map(|(_, live)| live).sum();
            if !taken.is_empty() && rows + sixteen > most_rows {
                break;
            }
            for (k, (unit, live)) in units.into_iter().enumerate() {
                if k >= MERGE_FAN_IN && rows + live > most_rows {
                    break;
                }
                rows += live;
                taken.push(unit);
            }
        }
        taken.sort_by_key(|unit| unit.start);
        taken.into_iter().flatten().collect()
    }
}

impl Table {
    /// Compacts the newest version's small units once, if [`BlockList::compaction_plan`]
    /// chooses any (see the module's documentation); `blocks_removed` is 0 when it did not.
    pub async fn compact_small_appends(&self) -> Result<Optimized> {
        let base = self.snapshot().await?;
        let blocks = self.blocks(&base).await?;
        let rewritten = blocks.compaction_plan(self.def());
        if rewritten.is_empty() {
            return Ok(Optimized::default());
        }
        // Small blocks are read a few at once (each a round trip, on S3), in order, as many as
        // READ_AHEAD_BYTES of the largest allow.
        let largest = rewritten
            .iter()
            .map(|&i| blocks.data_bytes().value(i))
            .max();
        let in_flight = (READ_AHEAD_BYTES / largest.unwrap_or(1).max(1)).clamp(1, 16) as usize;
        let mut reads = futures::stream::iter(rewritten.iter().copied())
            .map(|i| {
                let blocks = &blocks;
                async move {
                    let bytes = self.whole_block_for_merge(blocks, i).await?;
                    let deleted = blocks.deleted(i).cloned();
                    let live = move || live_batches(bytes, deleted.as_ref());
                    tokio::task::spawn_blocking(live).await?
                }
            })
            .buffered(in_flight);
        let mut writer = TableWriter::new(self.clone()).paced_as_merge();
        let written = async {
            while let Some(batches) = reads.next().await {
                for batch in batches? {
                    writer.write(batch).await?;
                }
            }
            Ok(())
        };
        if let Err(e) = written.await {
            writer.abandon().await;
            return Err(e);
        }
        drop(reads);
        let (written, _) = writer.upload().await?;
        let rewrite = Rewrite {
            base,
            rewritten,
            written,
            sidecars: HashMap::new(),
        };
        match self.commit_rewrite(rewrite).await {
            // Another process's compaction, or an OPTIMIZE, rewrote these blocks first: nothing
            // is left to do here (what this one uploaded is left for VACUUM).
            Err(StorageError::Rewritten(block)) => {
                log::debug!(
                    "{}: a compaction lost to another rewrite of {block}",
                    self.def().name
                );
                Ok(Optimized::default())
            }
            done => done,
        }
    }
}

/// A block file's rows, without the `deleted` ones (positions in the file).
fn live_batches(file: Bytes, deleted: Option<&RoaringBitmap>) -> Result<Vec<RecordBatch>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)?
        .with_batch_size(65536)
        .build()?;
    let mut first_row = 0u32;
    let mut live = Vec::new();
    for batch in reader {
        let batch = batch?;
        let rows = first_row..first_row + batch.num_rows() as u32;
        first_row = rows.end;
        let batch = match deleted {
            Some(deleted) if deleted.range_cardinality(rows.clone()) > 0 => {
                let keep: BooleanArray = rows.map(|r| Some(!deleted.contains(r))).collect();
                filter_record_batch(&batch, &keep)?
            }
            _ => batch,
        };
        if batch.num_rows() > 0 {
            live.push(batch);
        }
    }
    Ok(live)
}

#[cfg(test)]
mod tests {
    use super::class;

    #[test]
    fn classes_are_sixteenfolds_of_live_rows() {
        for (rows, want) in [
            (0, 0),
            (1, 0),
            (16, 0),
            (17, 1),
            (256, 1),
            (257, 2),
            (65_536, 3),
            (1 << 20, 4),
            (u64::MAX, 15),
        ] {
            assert_eq!(class(rows), want, "{rows}");
        }
    }
}
