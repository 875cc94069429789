//! Builds a write's locator groups as its blocks finish: every [`blocks_per_group`] consecutive
//! blocks of the write (and its last, partial run) get one locator file
//! (`tables/<id>/locators/<name>.loc`, see `sieve_index::locator`), built off the async runtime
//! and uploaded before the commit that names it.
//!
//! A group's keys go into [`GroupKeys`] as its blocks arrive in order, which keeps them in
//! memory while they are few and spills them to local files once they are many, so a group may
//! be as large as a merge of sixteen would make it ([`LOCATOR_GROUP_ROWS`]): a load builds each
//! key's locator entry once, instead of once as written and again per merge. At most one group
//! per core builds at once, and a spilled one (which builds on several cores) alone: a write
//! whose blocks arrive faster than their groups build waits for one to finish before taking
//! more rows.

use std::collections::BTreeMap;

use arrow_array::ArrayRef;
use sieve_index::locator::{SLICE_ROWS, fingerprint_bits};
use tokio::task::JoinSet;

use crate::error::Result;
use crate::meta::block::BlockColumn;
use crate::read::table::Table;
use crate::write::group_keys::GroupKeys;

/// Rows per locator group a write builds, unless the table says otherwise: about sixteen groups
/// of the 8Mi rows a group held while its keys had to fit in memory, as merging them made them,
/// and a whole number of 1M-row blocks (128), so a load of a billion rows writes 8 groups and
/// merges none. Larger groups cost a locator entry a slot bit per doubling; fewer groups let
/// each carry fewer fingerprint bits.
pub const LOCATOR_GROUP_ROWS: usize = 128_000_000;

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
    /// Time spent building the file, summed over the threads that built it.
    pub build_time: std::time::Duration,
}

pub struct LocatorBuilder {
    table: Table,
    per_group: usize,
    /// Finished blocks' keys waiting for a block before them, by their place in the write.
    waiting: BTreeMap<usize, Vec<BlockColumn>>,
    /// The next block of the write to go into a group.
    next_block: usize,
    open: Option<OpenGroup>,
    /// Per index column: whether its blocks stopped ascending apart in this write, after which
    /// every group of the write locates it (see [`OpenGroup::continues`]).
    always_located: Vec<bool>,
    /// Groups the table had before this write; read when the first group is built.
    groups_before: Option<u64>,
    /// Whether uploads spend the merge I/O budget (a compaction's do).
    merge_io: bool,
    started: u64,
    /// Groups building, each with whether it spilled.
    tasks: JoinSet<(bool, Result<Option<BuiltGroup>>)>,
    /// Groups building at once, at most.
    max_building: usize,
    /// Whether a spilled group is building.
    spilled_building: bool,
    built: Vec<BuiltGroup>,
}

/// The group taking the write's blocks.
struct OpenGroup {
    first_block: usize,
    blocks: usize,
    /// Per index column: its last block's max while its blocks ascend apart (then min/max and
    /// the page index find a key's block and page, and the column needs no locator: its keys are
    /// not kept), or None when the group locates it.
    ascending: Vec<Option<ArrayRef>>,
    /// The located columns' keys.
    keys: GroupKeys,
}

impl OpenGroup {
    /// Opens a group at `block`, the write's `first_block`-th: a column ascending in it
    /// starts unlocated unless the write has already seen it stop.
    fn new(
        first_block: usize,
        block: &[BlockColumn],
        columns: &[String],
        always_located: &[bool],
        upper_keys: usize,
    ) -> Self {
        let ascending: Vec<Option<ArrayRef>> = (block.iter().zip(always_located))
            .map(|(b, &located)| {
                (!located)
                    .then(|| b.ascending.as_ref().map(|(_, max)| max.clone()))
                    .flatten()
            })
            .collect();
        let located = (columns.iter().zip(&ascending))
            .filter(|(_, ascending)| ascending.is_none())
            .map(|(c, _)| (c.clone(), upper_keys));
        Self {
            first_block,
            blocks: 0,
            keys: GroupKeys::new(located),
            ascending,
        }
    }

    /// Which of the columns the group leaves unlocated `block` does not continue: a block whose
    /// values do not ascend, or start at or below the last block's max. (A key of such a column
    /// is then in one block of the group at most, which min/max finds, and in one page of it,
    /// which the Parquet page index finds: c1 of t10b, a load's row number. Skipping it saves
    /// its locator entries, most of what a locator costs a load.)
    fn breaks(&self, block: &[BlockColumn]) -> Vec<usize> {
        (self.ascending.iter().zip(block).enumerate())
            .filter(|(_, (max, b))| {
                max.as_ref().is_some_and(|max| {
                    !b.ascending.as_ref().is_some_and(|(min, _)| {
                        arrow_ord::cmp::lt(max, min).is_ok_and(|lt| lt.len() == 1 && lt.value(0))
                    })
                })
            })
            .map(|(k, _)| k)
            .collect()
    }

    /// Adds a block that [`Self::breaks`] nothing of. Blocking once the group has spilled.
    fn add(&mut self, block: Vec<BlockColumn>) -> Result<()> {
        let mut located = Vec::with_capacity(block.len());
        for (max, b) in self.ascending.iter_mut().zip(block) {
            match max {
                Some(max) => *max = b.ascending.expect("checked by breaks").1,
                None => located.push(b.keys.into_keys()?),
            }
        }
        self.blocks += 1;
        self.keys.add_block(located)
    }
}

impl LocatorBuilder {
    pub fn new(table: Table) -> Self {
        let options = &table.def().options;
        let per_group = blocks_per_group(options.locator_group_rows, options.block_rows);
        let columns = options.index_columns.len();
        Self {
            table,
            per_group,
            waiting: BTreeMap::new(),
            next_block: 0,
            open: None,
            always_located: vec![false; columns],
            groups_before: None,
            merge_io: false,
            started: 0,
            tasks: JoinSet::new(),
            max_building: crate::write::writer::parallelism(),
            spilled_building: false,
            built: Vec::new(),
        }
    }

    /// The same builder, its uploads paced and counted as merge I/O.
    pub(crate) fn paced_as_merge(self) -> Self {
        Self {
            merge_io: true,
            ..self
        }
    }

    /// Takes a finished block's keys; its group takes it once every block before it is in.
    pub async fn add(&mut self, block: usize, keys: Vec<BlockColumn>) -> Result<()> {
        self.waiting.insert(block, keys);
        while let Some(keys) = self.waiting.remove(&self.next_block) {
            self.take(keys).await?;
            self.next_block += 1;
        }
        Ok(())
    }

    /// Adds the write's next block to the open group, first closing it if the block ends a run
    /// of ascending blocks the group relies on.
    async fn take(&mut self, block: Vec<BlockColumn>) -> Result<()> {
        if let Some(open) = &self.open {
            let breaks = open.breaks(&block);
            if !breaks.is_empty() {
                for k in breaks {
                    self.always_located[k] = true;
                }
                self.close().await?;
            }
        }
        let mut open = match self.open.take() {
            Some(open) => open,
            None => {
                let options = &self.table.def().options;
                let upper_keys = self.per_group * options.block_rows;
                OpenGroup::new(
                    self.next_block,
                    &block,
                    &options.index_columns,
                    &self.always_located,
                    upper_keys,
                )
            }
        };
        let (open, added) = tokio::task::spawn_blocking(move || {
            let added = open.add(block);
            (open, added)
        })
        .await?;
        if let Err(e) = added {
            // Keys that cannot be spilled (a full temp dir) cost the group its locator, as a
            // build that fails does, not the write: its blocks keep their sidecars.
            log::warn!(
                "no locator for blocks {}..={} of this write: {e}",
                open.first_block,
                self.next_block
            );
            return Ok(());
        }
        let full = open.blocks == self.per_group;
        self.open = Some(open);
        if full {
            self.close().await?;
        }
        Ok(())
    }

    /// Builds the last, partial group of a write and waits for every group.
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
        if self.next_block != blocks || !self.waiting.is_empty() {
            return Err(crate::error::StorageError::Invalid(format!(
                "{} of the write's {blocks} blocks reached their locator groups",
                self.next_block
            )));
        }
        self.close().await?;
        while let Some(group) = self.tasks.join_next().await {
            self.joined(group)?;
        }
        Ok(())
    }

    fn joined(
        &mut self,
        group: std::result::Result<(bool, Result<Option<BuiltGroup>>), tokio::task::JoinError>,
    ) -> Result<()> {
        let (spilled, built) = group?;
        self.spilled_building &= !spilled;
        self.built.extend(built?);
        Ok(())
    }

    /// Waits for the groups still building, keeping none (see [`TableWriter::abandon`]).
    ///
    /// [`TableWriter::abandon`]: crate::write::writer::TableWriter::abandon
    pub async fn abandon(mut self) {
        while self.tasks.join_next().await.is_some() {}
    }

    /// Starts building the open group, if any, once fewer than `max_building` build.
    async fn close(&mut self) -> Result<()> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let OpenGroup {
            first_block,
            blocks,
            keys,
            ..
        } = open;
        if keys.is_empty() {
            return Ok(());
        }
        let spilled = keys.spilled();
        while (self.tasks.len() >= self.max_building
            || self.spilled_building
            || (spilled && !self.tasks.is_empty()))
            && let Some(group) = self.tasks.join_next().await
        {
            self.joined(group)?;
        }
        self.spilled_building = spilled;
        let groups_before = match self.groups_before {
            Some(n) => n,
            None => {
                let snapshot = self.table.snapshot().await?;
                let n = self.table.blocks(&snapshot).await?.locator_groups().len() as u64;
                *self.groups_before.insert(n)
            }
        };
        self.started += 1;
        let ordinal = groups_before + self.started;
        let (table, merge_io) = (self.table.clone(), self.merge_io);
        self.tasks.spawn(async move {
            let options = &table.def().options;
            let slices = options.block_rows.div_ceil(SLICE_ROWS as usize) as u32;
            let bits = fingerprint_bits(ordinal, options.max_false_reads);
            let built =
                match tokio::task::spawn_blocking(move || keys.build(SLICE_ROWS, slices, bits))
                    .await
                {
                    Ok(built) => built,
                    Err(panicked) => return (spilled, Err(panicked.into())),
                };
            // A group that cannot have a locator (values wider than 64 bits, no Ribbon layout
            // found, a full temp dir) keeps its blocks' sidecars: the write still commits.
            let file = match built {
                Ok(file) => file,
                Err(e) => {
                    log::warn!("no locator for {blocks} blocks of this write: {e}");
                    return (spilled, Ok(None));
                }
            };
            let name = uuid::Uuid::new_v4().simple().to_string();
            let uploaded = table.upload_locator(&name, &file, merge_io).await;
            let built = uploaded.map(|()| {
                Some(BuiltGroup {
                    first_block,
                    blocks,
                    name,
                    header: file.header,
                    build_time: file.build_time,
                })
            });
            (spilled, built)
        });
        Ok(())
    }
}
