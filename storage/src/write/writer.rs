//! Streams batches into a table: cuts them into blocks of `block_rows` rows, encodes blocks in
//! parallel (one per core in flight, which also bounds memory whatever the row count), uploads each
//! block's Parquet file and sidecar concurrently, builds the blocks' locator groups
//! ([`crate::write::locator_builder`]), then commits one snapshot.
//!
//! Nothing is visible until [`TableWriter::finish`] commits; dropping the writer, or an error,
//! leaves the table exactly as it was (uploaded blocks become harmless orphans).

use std::sync::Arc;

use arrow_array::RecordBatch;
use object_store::{ObjectStoreExt, PutPayload};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::error::{Result, StorageError};
use crate::meta::block::{BlockColumn, BlockStats, encode_block};
use crate::meta::segment::encode_segment;
use crate::meta::snapshot::{CopiesChange, Delta, SegmentRef, Snapshot};
use crate::read::table::Table;
use crate::write::group_commit;
use crate::write::locator_builder::LocatorBuilder;

pub struct TableWriter {
    table: Table,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    in_flight: Arc<Semaphore>,
    tasks: JoinSet<Result<(usize, BlockStats, Vec<BlockColumn>)>>,
    /// Blocks uploaded so far, with their position in the stream.
    done: Vec<(usize, BlockStats)>,
    /// None when the table has no locator.
    locators: Option<LocatorBuilder>,
    blocks_started: usize,
    rows_written: u64,
    /// A COPY's new list of copied files, committed with its rows.
    copies: Option<CopiesChange>,
    /// Whether uploads spend the merge I/O budget (a compaction's do).
    merge_io: bool,
}

/// What a finished write committed.
#[derive(Debug, Clone)]
pub struct Committed {
    pub rows: u64,
    pub blocks: u64,
    /// None when there was nothing to commit.
    pub snapshot: Option<Snapshot>,
    /// Time spent building this write's locator groups, summed over the threads that built them.
    pub locator_build: std::time::Duration,
}

/// The cores there are (2 if unknown): how many blocks a write encodes at once, and how many
/// files a COPY reads at once.
pub fn parallelism() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

impl TableWriter {
    pub fn new(table: Table) -> Self {
        let has_locator =
            table.def().options.locator && !table.def().options.index_columns.is_empty();
        Self {
            locators: has_locator.then(|| LocatorBuilder::new(table.clone())),
            table,
            pending: Vec::new(),
            pending_rows: 0,
            in_flight: Arc::new(Semaphore::new(parallelism())),
            tasks: JoinSet::new(),
            done: Vec::new(),
            blocks_started: 0,
            rows_written: 0,
            copies: None,
            merge_io: false,
        }
    }

    /// The same writer, its uploads paced and counted as merge I/O
    /// ([`crate::operations::merge_rate`]): a compaction is background work like a merge.
    pub(crate) fn paced_as_merge(self) -> Self {
        Self {
            locators: self.locators.map(LocatorBuilder::paced_as_merge),
            merge_io: true,
            ..self
        }
    }

    /// The same writer, committing `copies` (a COPY's list of the files it loaded) with its
    /// rows: the commit fails if another commit changed the list since `copies.from`.
    pub fn recording_copies(self, copies: Option<CopiesChange>) -> Self {
        Self { copies, ..self }
    }

    /// Rows handed to the writer so far (committed or not), for progress reports.
    pub fn rows_written(&self) -> u64 {
        self.rows_written
    }

    /// Takes rows whose columns have the table's names and types; nullability may differ (a NULL
    /// in a NOT NULL column is an error), and blocks are written with the table's own schema.
    pub async fn write(&mut self, batch: RecordBatch) -> Result<()> {
        let def = self.table.def();
        let same_columns = batch.schema().fields().len() == def.schema.fields().len()
            && batch
                .schema()
                .fields()
                .iter()
                .zip(def.schema.fields())
                .all(|(got, want)| {
                    got.name() == want.name() && got.data_type() == want.data_type()
                });
        if !same_columns {
            return Err(StorageError::Invalid(format!(
                "rows do not match the columns of '{}': expected {:?}, got {:?}",
                def.name,
                def.schema.fields(),
                batch.schema().fields()
            )));
        }
        let batch = RecordBatch::try_new(def.schema.clone(), batch.columns().to_vec())?;
        self.rows_written += batch.num_rows() as u64;
        let block_rows = self.table.def().options.block_rows;
        let mut offset = 0;
        while offset < batch.num_rows() {
            let take = (block_rows - self.pending_rows).min(batch.num_rows() - offset);
            self.pending.push(batch.slice(offset, take));
            self.pending_rows += take;
            offset += take;
            if self.pending_rows == block_rows {
                self.dispatch().await?;
            }
        }
        Ok(())
    }

    /// Hands the pending rows to an encoder once a slot is free; surfaces the first failure.
    async fn dispatch(&mut self) -> Result<()> {
        let permit = self
            .in_flight
            .clone()
            .acquire_owned()
            .await
            .expect("semaphore is never closed");
        while let Some(finished) = self.tasks.try_join_next() {
            self.finished(finished??).await?;
        }
        let batches = std::mem::take(&mut self.pending);
        self.pending_rows = 0;
        let table = self.table.clone();
        let sequence = self.blocks_started;
        self.blocks_started += 1;
        let merge_io = self.merge_io;
        self.tasks.spawn(async move {
            let def = table.def().clone();
            let id = uuid::Uuid::new_v4().simple().to_string();
            let encoded =
                tokio::task::spawn_blocking(move || encode_block(&def, id, &batches)).await??;
            if merge_io {
                let bytes = encoded.parquet.len() + encoded.sidecar.len();
                table.storage().merge_rate().spend(bytes as u64).await;
            }
            let store = table.storage().store();
            let (block_path, sidecar_path) = (
                table.block_path(&encoded.stats.id),
                table.sidecar_path(&encoded.stats.id),
            );
            futures::try_join!(
                store.put(&block_path, PutPayload::from(encoded.parquet)),
                store.put(&sidecar_path, PutPayload::from(encoded.sidecar)),
            )?;
            drop(permit);
            Ok((sequence, encoded.stats, encoded.locator_keys))
        });
        Ok(())
    }

    /// Keeps an uploaded block's statistics and hands its keys to its locator group.
    async fn finished(
        &mut self,
        (sequence, stats, keys): (usize, BlockStats, Vec<BlockColumn>),
    ) -> Result<()> {
        self.done.push((sequence, stats));
        match &mut self.locators {
            Some(locators) => locators.add(sequence, keys).await,
            None => Ok(()),
        }
    }

    /// Writes the last partial block, waits for every block, writes the segment and commits.
    pub async fn finish(mut self) -> Result<Committed> {
        let table = self.table.clone();
        let copies = self.copies.take();
        let (written, locator_build) = self.upload().await?;
        let Some(written) = written else {
            return Ok(Committed {
                rows: 0,
                blocks: 0,
                snapshot: None,
                locator_build,
            });
        };
        let delta = Delta {
            copies,
            ..written.delta()
        };
        let (rows, blocks) = (delta.rows, delta.blocks);
        let committed = group_commit::commit(
            table.storage(),
            &table.dir(),
            &table.named_pointer_path(),
            delta,
        )
        .await?;
        Ok(Committed {
            rows,
            blocks,
            snapshot: Some(committed),
            locator_build,
        })
    }

    /// Dispatches the last partial block and waits for every block.
    async fn upload_blocks(&mut self) -> Result<()> {
        if self.pending_rows > 0 {
            self.dispatch().await?;
        }
        while let Some(finished) = self.tasks.join_next().await {
            self.finished(finished??).await?;
        }
        Ok(())
    }

    /// Waits for the blocks and locator groups still uploading, keeping none: a write that
    /// failed returns once nothing more of it can land (a dropped task stops awaiting its upload,
    /// but a local file's write runs on to its end on a blocking thread), so what it left behind
    /// is complete when the caller hears of the failure, for VACUUM to find.
    pub async fn abandon(mut self) {
        while self.tasks.join_next().await.is_some() {}
        if let Some(locators) = self.locators.take() {
            locators.abandon().await;
        }
    }

    /// Writes the last partial block, waits for every block and writes their segment, without
    /// committing it (an OPTIMIZE commits it in place of the blocks it rewrote). None when no
    /// row was written; with the time spent building locator groups.
    pub async fn upload(mut self) -> Result<(Option<Written>, std::time::Duration)> {
        if let Err(e) = self.upload_blocks().await {
            self.abandon().await;
            return Err(e);
        }
        let mut blocks = std::mem::take(&mut self.done);
        blocks.sort_by_key(|(sequence, _)| *sequence);
        let mut locator_build = std::time::Duration::ZERO;
        if let Some(locators) = self.locators.take() {
            for group in locators.finish(blocks.len()).await? {
                locator_build += group.build_time;
                let run = &mut blocks[group.first_block..group.first_block + group.blocks];
                for (i, (_, stats)) in run.iter_mut().enumerate() {
                    let header = (i == 0).then(|| group.header.clone());
                    stats.locator = Some((group.name.clone(), header));
                }
            }
        }
        if blocks.is_empty() {
            return Ok((None, locator_build));
        }
        let blocks: Vec<BlockStats> = blocks.into_iter().map(|(_, b)| b).collect();
        let segment = self
            .table
            .put_segment(encode_segment(self.table.def(), &blocks)?)
            .await?;
        Ok((Some(Written { segment, blocks }), locator_build))
    }
}

/// Blocks uploaded with their segment, not yet named by any snapshot.
#[derive(Debug, Clone)]
pub struct Written {
    pub segment: SegmentRef,
    /// In the order their rows were written.
    pub blocks: Vec<BlockStats>,
}

impl Written {
    /// What committing the blocks adds to a table.
    pub fn delta(&self) -> Delta {
        Delta {
            segment: self.segment.clone(),
            rows: self.blocks.iter().map(|b| b.rows).sum(),
            blocks: self.blocks.len() as u64,
            data_bytes: self.blocks.iter().map(|b| b.data_bytes).sum(),
            sidecar_bytes: self.blocks.iter().map(|b| b.sidecar_bytes).sum(),
            ..Default::default()
        }
    }
}
