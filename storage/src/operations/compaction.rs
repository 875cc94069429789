//! Compaction of small appends as they arrive. An application's 5-row INSERTs each leave a
//! block, with its sidecar, page table and locator group, and a segment that every later
//! snapshot names. Every scan that reads the whole table then pays per block (about 36 KB of
//! DataFusion state each while it runs, see docs/benchmarks.md), and every commit writes a
//! snapshot that grows with them. OPTIMIZE merges them, but only when someone runs it.
//!
//! Size-tiered, as LSM trees compact: OPTIMIZE's small units (a locator group or a block
//! outside any, whose live rows are under half what its blocks hold when full) are put in
//! classes by their live rows, class c holding up to 16^(c+1). Once [`MERGE_FAN_IN`] units
//! share a class, they are written again together (all of them, up to sixteen full blocks'
//! rows, so a table that took INSERTs faster than a round catches up at once), into a unit of
//! a higher class. So a row is written again at most once per class (log16 of the block size:
//! five times for 1M-row blocks), and a table keeps fewer than sixteen small units per class
//! however many INSERTs it takes.
//!
//! The rewrite commits as an OPTIMIZE's does ([`Table::commit_rewrite`]): beside appends,
//! carrying rows a DELETE removed meanwhile to their new places, and dropped if an OPTIMIZE
//! rewrote the same blocks first. Rows never change, only where they are stored, and a crash
//! mid-compaction leaves the table as it was (the uploaded files are left for VACUUM).

use std::collections::BTreeMap;
use std::collections::HashMap;

use arrow_array::{BooleanArray, RecordBatch};
use arrow_select::filter::filter_record_batch;
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use roaring::RoaringBitmap;

use crate::error::Result;
use crate::meta::block_list::BlockList;
use crate::meta::table_def::TableDef;
use crate::operations::group_merge::MERGE_FAN_IN;
use crate::operations::optimize::{Optimized, Rewrite};
use crate::read::table::Table;
use crate::write::writer::TableWriter;

/// Full blocks' worth of rows a compaction writes at most (past its first sixteen units): a
/// table that took INSERTs faster than compactions ran catches up in one round, and a round
/// stays as long as a small OPTIMIZE.
const MAX_ROUND_BLOCKS: u64 = MERGE_FAN_IN as u64;

/// A small unit's class: 0 up to 16 live rows, then one more per [`MERGE_FAN_IN`]-fold.
fn class(live_rows: u64) -> u32 {
    let (mut class, mut cap) = (0, MERGE_FAN_IN as u64);
    while live_rows > cap {
        cap = cap.saturating_mul(MERGE_FAN_IN as u64);
        class += 1;
    }
    class
}

impl BlockList {
    /// The blocks the next compaction writes again, in order: the small units of the lowest
    /// class that has [`MERGE_FAN_IN`] of them, as many as [`MAX_ROUND_BLOCKS`] full blocks
    /// hold past the first sixteen; empty when no class has sixteen.
    pub fn compaction_plan(&self, def: &TableDef) -> Vec<usize> {
        let block_rows = def.options.block_rows as u64;
        let most_rows = MAX_ROUND_BLOCKS.saturating_mul(block_rows);
        let mut classes: BTreeMap<u32, Vec<std::ops::Range<usize>>> = BTreeMap::new();
        for unit in self.rewrite_units() {
            if self.small_unit(&unit, block_rows) {
                let class = class(self.unit_live_rows(&unit));
                classes.entry(class).or_default().push(unit);
            }
        }
        let Some(units) = classes.into_values().find(|u| u.len() >= MERGE_FAN_IN) else {
            return Vec::new();
        };
        let mut rows = 0;
        let taken = units.into_iter().enumerate().take_while(|(k, unit)| {
            rows += self.unit_live_rows(unit);
            *k < MERGE_FAN_IN || rows <= most_rows
        });
        taken.flat_map(|(_, unit)| unit).collect()
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
        let mut writer = TableWriter::new(self.clone());
        for &i in &rewritten {
            let read = async {
                let bytes = self.whole_block_for_merge(&blocks, i).await?;
                let deleted = blocks.deleted(i).cloned();
                tokio::task::spawn_blocking(move || live_batches(bytes, deleted.as_ref())).await?
            };
            let written = async {
                for batch in read.await? {
                    writer.write(batch).await?;
                }
                Ok(())
            };
            if let Err(e) = written.await {
                writer.abandon().await;
                return Err(e);
            }
        }
        let (written, _) = writer.upload().await?;
        self.commit_rewrite(Rewrite {
            base,
            rewritten,
            written,
            sidecars: HashMap::new(),
        })
        .await
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
