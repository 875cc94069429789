//! Measures a table's filters directly: probes keys known to be absent against one column's filter
//! in every block's sidecar. A query sees a false positive only as one more block read; probing
//! thousands of keys per block gives a rate precise enough to compare filter kinds. The same for
//! the locator, per group.

use std::sync::Arc;

use datafusion::arrow::array::StringArray;
use datafusion::error::{DataFusionError, Result};
use sieve_engine::{Engine, to_df};
use sieve_index::{ColumnHashes, EntryKind, Location};
use sieve_storage::{BlockList, Table};

/// Probes and hits over the blocks whose sidecar holds a filter for the column.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FalsePositives {
    pub probes: u64,
    pub hits: u64,
}

impl FalsePositives {
    /// None when no block has a filter for the column.
    pub fn rate(&self) -> Option<f64> {
        (self.probes > 0).then(|| self.hits as f64 / self.probes as f64)
    }
}

/// The table, its current blocks, and the keys' hashes.
async fn open(
    engine: &Engine,
    table: &str,
    keys: &[String],
) -> Result<(Table, Arc<BlockList>, Vec<u64>)> {
    let table = engine.open_table(table).await?;
    let snapshot = table.snapshot().await.map_err(to_df)?;
    let blocks = table.blocks(&snapshot).await.map_err(to_df)?;
    let hashes = ColumnHashes::from_array(&StringArray::from_iter_values(keys))
        .map_err(|e| DataFusionError::External(Box::new(e)))?
        .hashes;
    Ok((table, blocks, hashes))
}

/// Probes `absent` (text keys the column does not hold) against `column`'s filter in every
/// block of `table`.
pub async fn false_positives(
    engine: &Engine,
    table: &str,
    column: &str,
    absent: &[String],
) -> Result<FalsePositives> {
    let (table, blocks, hashes) = open(engine, table, absent).await?;
    let all: Vec<usize> = (0..blocks.len()).collect();
    let mut counts = FalsePositives::default();
    for entry in table.sidecar_entries(&blocks, &all, column).await.entries {
        if let Some(filter) = entry.filter(|c| matches!(c.kind, EntryKind::Filter(_))) {
            counts.probes += hashes.len() as u64;
            counts.hits += hashes.iter().filter(|&&h| filter.may_contain(h)).count() as u64;
        }
    }
    Ok(counts)
}

/// Probes `absent` against `column` in every locator group of `table` (each group's file read
/// once): a hit is a group that would send the query to a block. Probes count keys × groups, so
/// the rate is per group, as [`false_positives`]' is per block.
pub async fn locator_false_reads(
    engine: &Engine,
    table: &str,
    column: &str,
    absent: &[String],
) -> Result<FalsePositives> {
    let (table, blocks, hashes) = open(engine, table, absent).await?;
    let mut counts = FalsePositives::default();
    for group in blocks.locator_groups() {
        let Ok(header) = &group.header else { continue };
        let Some(locator) = header.column(column) else {
            continue;
        };
        let file = table.read_locator(group).await.map_err(to_df)?;
        counts.probes += hashes.len() as u64;
        for &hash in &hashes {
            let range = header.lookup_range(locator, hash);
            let pages = file
                .get(range.start as usize..range.end as usize)
                .ok_or_else(|| {
                    DataFusionError::Execution(format!(
                        "locator {} is shorter than its header says",
                        group.name
                    ))
                })?;
            let location = header
                .locate(locator, hash, pages)
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            counts.hits += u64::from(location != Location::Absent);
        }
    }
    Ok(counts)
}
