//! Builds a write's locator groups as its blocks finish: every [`blocks_per_group`] consecutive
//! blocks of the write (and its last, partial run) get one locator file
//! (`tables/<id>/locators/<name>.loc`, see `sieve_index::locator`), built off the async runtime
//! and uploaded before the commit that names it.
//!
//! Memory is bounded by the group, not the table: a block's keys (16 bytes per distinct key) are
//! held only until its group is built, a group holds at most [`LOCATOR_GROUP_ROWS`] rows, and at
//! most one group per core builds at once: a write whose blocks arrive faster than their groups
//! build waits for one to finish before taking more rows, rather than queueing groups' keys.

use std::collections::BTreeMap;

use object_store::{ObjectStoreExt, PutPayload};
use sieve_index::LocatorHeader;
use sieve_index::locator::{self, SLICE_ROWS};
use tokio::task::JoinSet;

use crate::error::Result;
use crate::meta::block::BlockColumn;
use crate::read::table::Table;

/// Rows per locator group at most: 8M keys per column hold 128 MB of keys while the group
/// waits for its blocks, and a table of a billion rows has about 120 groups.
pub const LOCATOR_GROUP_ROWS: usize = 8 << 20;

/// Blocks a write puts in one group, for a table's `locator_group_rows` and `block_rows`.
pub fn blocks_per_group(group_rows: usize, block_rows: usize) -> usize {
    (group_rows / block_rows.max(1)).max(1)
}

/// A built group: its file name and header, and the write's blocks it covers.
pub struct BuiltGroup {
    pub first_block: usize,
    pub blocks: usize,
    pub name: String,
    pub header: Vec<u8>,
    /// Time spent building the file (on one blocking thread), for the load's report.
    pub build_time: std::time::Duration,
}

pub struct LocatorBuilder {
    table: Table,
    per_group: usize,
    /// Keys of finished blocks whose group is not built yet, by the block's place in the write.
    waiting: BTreeMap<usize, Vec<BlockColumn>>,
    /// The first block of the next group to build.
    next_block: usize,
    /// Groups the table had before this write; read when the first group is built.
    groups_before: Option<u64>,
    started: u64,
    tasks: JoinSet<Result<Option<BuiltGroup>>>,
    /// Groups building at once, at most.
    max_building: usize,
    built: Vec<BuiltGroup>,
}

impl LocatorBuilder {
    pub fn new(table: Table) -> Self {
        let options = &table.def().options;
        let per_group = blocks_per_group(options.locator_group_rows, options.block_rows);
        Self {
            table,
            per_group,
            waiting: BTreeMap::new(),
            next_block: 0,
            groups_before: None,
            started: 0,
            tasks: JoinSet::new(),
            max_building: crate::write::writer::parallelism(),
            built: Vec::new(),
        }
    }

    /// Takes a finished block's keys; starts building its group once every block of it is in.
    pub async fn add(&mut self, block: usize, keys: Vec<BlockColumn>) -> Result<()> {
        self.waiting.insert(block, keys);
        while (self.next_block..self.next_block + self.per_group)
            .all(|b| self.waiting.contains_key(&b))
        {
            self.start(self.per_group).await?;
        }
        Ok(())
    }

    /// Builds the last, partial group of a write of `blocks` blocks and waits for every group.
    pub async fn finish(mut self, blocks: usize) -> Result<Vec<BuiltGroup>> {
        match self.build_rest(blocks).await {
            Ok(()) => {
                self.built.sort_by_key(|g| g.first_block);
                Ok(self.built)
            }
            Err(e) => {
                self.abandon().await;
                Err(e)
            }
        }
    }

    async fn build_rest(&mut self, blocks: usize) -> Result<()> {
        if self.next_block < blocks {
            self.start(blocks - self.next_block).await?;
        }
        while let Some(group) = self.tasks.join_next().await {
            self.built.extend(group??);
        }
        Ok(())
    }

    /// Waits for the groups still building, keeping none (see [`TableWriter::abandon`]).
    ///
    /// [`TableWriter::abandon`]: crate::write::writer::TableWriter::abandon
    pub async fn abandon(mut self) {
        while self.tasks.join_next().await.is_some() {}
    }

    async fn start(&mut self, blocks: usize) -> Result<()> {
        while self.tasks.len() >= self.max_building
            && let Some(group) = self.tasks.join_next().await
        {
            self.built.extend(group??);
        }
        let groups_before = match self.groups_before {
            Some(n) => n,
            None => {
                let snapshot = self.table.snapshot().await?;
                let n = self.table.blocks(&snapshot).await?.locator_groups().len() as u64;
                *self.groups_before.insert(n)
            }
        };
        let first_block = self.next_block;
        let keys: Vec<Vec<BlockColumn>> = (first_block..first_block + blocks)
            .map(|b| {
                self.waiting
                    .remove(&b)
                    .expect("every block of the group is in")
            })
            .collect();
        self.next_block += blocks;
        self.started += 1;
        let ordinal = groups_before + self.started;
        let table = self.table.clone();
        self.tasks.spawn(async move {
            let options = &table.def().options;
            let columns: Vec<String> = options.index_columns.clone();
            let slices = options.block_rows.div_ceil(SLICE_ROWS as usize) as u32;
            let budget = options.max_false_reads;
            let (built, build_time) = tokio::task::spawn_blocking(move || {
                let started = std::time::Instant::now();
                // Per column, the blocks' keys: transpose the per-block lists.
                let mut per_column: Vec<(&str, Vec<BlockColumn>)> =
                    columns.iter().map(|c| (c.as_str(), Vec::new())).collect();
                for block in keys {
                    for (column, block_column) in per_column.iter_mut().zip(block) {
                        column.1.push(block_column);
                    }
                }
                let per_column: Vec<(&str, Vec<_>)> = per_column
                    .into_iter()
                    .filter(|(_, blocks)| !ascending_apart(blocks))
                    .map(|(c, blocks)| (c, blocks.into_iter().map(|b| b.keys).collect()))
                    .collect();
                if per_column.is_empty() {
                    return (Ok(None), started.elapsed());
                }
                let built =
                    locator::build(&per_column, SLICE_ROWS, slices, ordinal, budget).map(Some);
                (built, started.elapsed())
            })
            .await?;
            // A group that cannot have a locator (values wider than 64 bits, no Ribbon layout
            // found) keeps its blocks' sidecars: the write still commits.
            let file = match built {
                Ok(Some(file)) => file,
                Ok(None) => return Ok(None),
                Err(e) => {
                    log::warn!("no locator for {blocks} blocks of this write: {e}");
                    return Ok(None);
                }
            };
            let header_len = LocatorHeader::parse(&file)?.len;
            let header = file[..header_len].to_vec();
            let name = uuid::Uuid::new_v4().simple().to_string();
            table
                .storage()
                .store()
                .put(&table.locator_path(&name), PutPayload::from(file))
                .await?;
            Ok(Some(BuiltGroup {
                first_block,
                blocks,
                name,
                header,
                build_time,
            }))
        });
        Ok(())
    }
}

/// Whether each block's values of a column ascend and every block's are above the one's before:
/// then a key is in one block of the group at most, which min/max finds, and in one page of it,
/// which the Parquet page index finds, so the column needs no locator (as `c1` of t10b, a load's
/// row number). Skipping it saves its Ribbon build, most of what a locator costs a load.
fn ascending_apart(blocks: &[BlockColumn]) -> bool {
    let bounds: Option<Vec<_>> = blocks.iter().map(|b| b.ascending.as_ref()).collect();
    bounds.is_some_and(|bounds| {
        bounds.windows(2).all(|pair| {
            let (max, next_min) = (&pair[0].1, &pair[1].0);
            arrow_ord::cmp::lt(max, next_min).is_ok_and(|lt| lt.len() == 1 && lt.value(0))
        })
    })
}
