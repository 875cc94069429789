//! The table format end to end on memory and local storage: write, list blocks, statistics,
//! sidecars, concurrent appends, and atomicity when a write fails.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use object_store::{ObjectStoreExt, PutPayload};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use sieve_index::{ColumnHashes, Sidecar};
use sieve_storage::{
    BlockDeletes, BlockList, Catalog, Deletes, Rewrite, RoaringBitmap, Storage, StorageError,
    Table, TableDef, TableOptions, TableWriter,
};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("c1", DataType::UInt64, false),
        Field::new("c2", DataType::Utf8, true),
    ]))
}

fn batch(start: u64, n: u64) -> RecordBatch {
    let c1 = UInt64Array::from_iter_values(start..start + n);
    let c2 =
        StringArray::from_iter((start..start + n).map(|i| (i % 7 != 0).then(|| format!("v{i}"))));
    RecordBatch::try_new(schema(), vec![Arc::new(c1), Arc::new(c2)]).unwrap()
}

async fn new_table(storage: &Storage, block_rows: usize) -> Table {
    let catalog = Catalog::open(storage.clone()).await.unwrap();
    let mut options = TableOptions::defaults_for(&schema());
    options.block_rows = block_rows;
    let def = TableDef::new("default", "t", schema(), options).unwrap();
    catalog.create_table(&def).await.unwrap();
    Table::new(
        storage.clone(),
        catalog.table("default", "t").await.unwrap(),
    )
}

async fn append(table: &Table, start: u64, rows: u64, batch_rows: u64) -> u64 {
    let mut writer = TableWriter::new(table.clone());
    let mut at = start;
    while at < start + rows {
        let n = batch_rows.min(start + rows - at);
        writer.write(batch(at, n)).await.unwrap();
        at += n;
    }
    writer.finish().await.unwrap().rows
}

/// Every c1 value of the table's live rows (committed, not deleted), read back from the Parquet
/// files.
async fn committed_c1(table: &Table) -> Vec<u64> {
    let snapshot = table.snapshot().await.unwrap();
    let blocks = table.blocks(&snapshot).await.unwrap();
    let mut values = Vec::new();
    for i in 0..blocks.len() {
        let path = table.block_path(blocks.block_id(i));
        let bytes = table
            .storage()
            .store()
            .get(&path)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let mut row = 0u32;
        for b in ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap()
        {
            let b = b.unwrap();
            for &c1 in b.column(0).as_primitive::<UInt64Type>().values() {
                if !blocks.deleted(i).is_some_and(|d| d.contains(row)) {
                    values.push(c1);
                }
                row += 1;
            }
        }
    }
    values
}

/// An in-memory table after one append of `rows`, and its blocks.
async fn appended_in_memory(block_rows: usize, rows: u64) -> (Storage, Table, Arc<BlockList>) {
    let storage = Storage::in_memory();
    let table = new_table(&storage, block_rows).await;
    append(&table, 0, rows, block_rows as u64).await;
    let blocks = table
        .blocks(&table.snapshot().await.unwrap())
        .await
        .unwrap();
    (storage, table, blocks)
}

/// The bytes of `column`'s sidecar payloads over every block.
fn payload_bytes(blocks: &BlockList, column: &str) -> u64 {
    blocks
        .index_stats(column)
        .unwrap()
        .bytes
        .values()
        .iter()
        .sum()
}

/// Memory, a local directory and a fresh prefix in the bucket SIEVE_TEST_S3_URL names
/// (scripts/test.sh starts MinIO and sets it; without it these tests fail, saying so).
async fn storages() -> Vec<(Storage, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let local = Storage::open(dir.path().to_str().unwrap()).unwrap();
    let mut all = vec![(Storage::in_memory(), None), (local, Some(dir))];
    let base = std::env::var("SIEVE_TEST_S3_URL")
        .expect("SIEVE_TEST_S3_URL is not set: these tests need MinIO; run scripts/test.sh");
    let prefix = uuid::Uuid::new_v4().simple().to_string();
    all.push((Storage::open(&format!("{base}/{prefix}")).unwrap(), None));
    all
}

#[tokio::test]
async fn blocks_carry_statistics_and_sidecars() {
    for (storage, _dir) in storages().await {
        let table = new_table(&storage, 1000).await;
        assert_eq!(append(&table, 0, 3500, 700).await, 3500);
        let snapshot = table.snapshot().await.unwrap();
        assert_eq!(
            (snapshot.version, snapshot.rows, snapshot.blocks),
            (1, 3500, 4)
        );

        let blocks = table.blocks(&snapshot).await.unwrap();
        assert_eq!(blocks.rows().values().to_vec(), vec![1000, 1000, 1000, 500]);
        let mins = blocks
            .mins("c1")
            .unwrap()
            .as_primitive::<UInt64Type>()
            .values()
            .to_vec();
        let maxes = blocks
            .maxes("c1")
            .unwrap()
            .as_primitive::<UInt64Type>()
            .values()
            .to_vec();
        assert_eq!(mins, vec![0, 1000, 2000, 3000]);
        assert_eq!(maxes, vec![999, 1999, 2999, 3499]);
        assert!(
            blocks
                .null_counts("c2")
                .unwrap()
                .values()
                .iter()
                .all(|&n| n > 0)
        );
        let index = blocks.index_stats("c2").unwrap();
        assert!(index.kinds.iter().all(|k| k == Some("binary_fuse8")));
        assert!(index.ndv.values().iter().all(|&n| n > 400));

        let all: Vec<usize> = (0..blocks.len()).collect();
        let fetch = table.sidecar_entries(&blocks, &all, "c2").await;
        assert_eq!((fetch.unreadable, fetch.cache_hits), (0, 0));
        // The segment says where each entry lies: exactly its payload is read.
        assert_eq!(fetch.bytes_fetched, payload_bytes(&blocks, "c2"));
        let key = ColumnHashes::from_array(&StringArray::from(vec!["v2500"]))
            .unwrap()
            .hashes[0];
        let holders: Vec<bool> = fetch
            .entries
            .iter()
            .map(|e| e.as_ref().unwrap().may_contain(key))
            .collect();
        assert!(holders[2], "the block holding v2500 must say maybe");
        let again = table.sidecar_entries(&blocks, &all, "c2").await;
        assert_eq!((again.cache_hits, again.bytes_fetched), (4, 0));
        let other = table.sidecar_entries(&blocks, &all, "c1").await;
        assert_eq!(
            (other.cache_hits, other.bytes_fetched),
            (0, payload_bytes(&blocks, "c1"))
        );
        assert!(
            table
                .sidecar_entries(&blocks, &all, "nope")
                .await
                .entries
                .iter()
                .all(Option::is_none)
        );

        let mut c1 = committed_c1(&table).await;
        c1.sort_unstable();
        assert_eq!(c1, (0..3500).collect::<Vec<_>>());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_both_land_without_loss_or_duplicates() {
    for (storage, _dir) in storages().await {
        let table = new_table(&storage, 500).await;
        // Two independent handles, as two processes would have.
        let other = Table::new(storage.clone(), table.def().clone());
        let writers: Vec<_> = (0..4u64)
            .map(|w| {
                let t = if w % 2 == 0 {
                    table.clone()
                } else {
                    other.clone()
                };
                tokio::spawn(async move { append(&t, w * 10_000, 2_200, 300).await })
            })
            .collect();
        for w in writers {
            assert_eq!(w.await.unwrap(), 2_200);
        }
        let snapshot = table.snapshot().await.unwrap();
        assert_eq!(snapshot.rows, 8_800);
        // A version per append, or fewer: appends of one storage that wait while its commit is
        // in flight land together (storage/src/write/group_commit.rs).
        assert!((1..=4).contains(&snapshot.version), "{}", snapshot.version);
        assert_eq!(snapshot.segments.len(), 4, "a segment per append");
        let c1 = committed_c1(&table).await;
        assert_eq!(c1.len(), 8_800);
        assert_eq!(
            c1.iter().collect::<HashSet<_>>().len(),
            8_800,
            "a row was written twice"
        );
    }
}

#[tokio::test]
async fn a_failed_or_abandoned_write_leaves_the_table_as_it_was() {
    for (storage, _dir) in storages().await {
        let table = new_table(&storage, 1000).await;
        append(&table, 0, 1500, 500).await;
        let before = table.snapshot().await.unwrap();

        // Abandoned mid-way (a crash, a cancelled statement): blocks were uploaded, nothing committed.
        let mut writer = TableWriter::new(table.clone());
        writer.write(batch(10_000, 2_500)).await.unwrap();
        drop(writer);
        assert_eq!(table.snapshot().await.unwrap(), before);

        // A bad batch in the middle of a stream fails the write and commits nothing.
        let mut writer = TableWriter::new(table.clone());
        writer.write(batch(20_000, 1_200)).await.unwrap();
        let wrong = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("x", DataType::UInt64, false)])),
            vec![Arc::new(UInt64Array::from(vec![1]))],
        )
        .unwrap();
        let err = writer.write(wrong).await.unwrap_err();
        assert!(
            err.to_string().contains("do not match the columns"),
            "{err}"
        );
        assert_eq!(table.snapshot().await.unwrap(), before);

        // The table still takes writes, and only committed rows are visible.
        append(&table, 1500, 500, 500).await;
        let mut c1 = committed_c1(&table).await;
        c1.sort_unstable();
        assert_eq!(c1, (0..2000).collect::<Vec<_>>());
    }
}

#[tokio::test]
async fn a_corrupt_or_missing_sidecar_means_cannot_prune() {
    let (storage, table, blocks) = appended_in_memory(100, 300).await;
    let ids: Vec<&str> = (0..blocks.len()).map(|i| blocks.block_id(i)).collect();
    let store = storage.store();
    store
        .put(
            &table.sidecar_path(ids[0]),
            PutPayload::from_static(b"garbage"),
        )
        .await
        .unwrap();
    store.delete(&table.sidecar_path(ids[1])).await.unwrap();
    let fetch = table.sidecar_entries(&blocks, &[0, 1, 2], "c2").await;
    assert!(fetch.entries[0].is_none() && fetch.entries[1].is_none() && fetch.entries[2].is_some());
    assert_eq!(fetch.unreadable, 2);
}

#[tokio::test]
async fn one_column_of_a_large_sidecar_is_read_alone_and_agrees_with_the_whole_file() {
    for (storage, _dir) in storages().await {
        let table = new_table(&storage, 20_000).await;
        // Each block's c1 has a gap (rows 0.. and 20,000.., then 10,000.. and 30,000..), so c1
        // gets a filter as large as c2's (a block holding every integer of its range gets none).
        let mut writer = TableWriter::new(table.clone());
        for start in [0, 20_000, 10_000, 30_000] {
            writer.write(batch(start, 10_000)).await.unwrap();
        }
        writer.finish().await.unwrap();
        let snapshot = table.snapshot().await.unwrap();
        let blocks = table.blocks(&snapshot).await.unwrap();
        let ids: Vec<&str> = (0..blocks.len()).map(|i| blocks.block_id(i)).collect();
        let fetch = table.sidecar_entries(&blocks, &[0, 1], "c2").await;
        assert_eq!(fetch.unreadable, 0);
        // One of two similar payloads, and nothing else: about half the whole sidecars.
        assert_eq!(fetch.bytes_fetched, payload_bytes(&blocks, "c2"));
        assert!(
            fetch.bytes_fetched * 10 < snapshot.sidecar_bytes * 6,
            "{} of {}",
            fetch.bytes_fetched,
            snapshot.sidecar_bytes
        );
        let keys = ColumnHashes::from_array(&StringArray::from_iter_values(
            (0..50_000).map(|i| format!("v{i}")),
        ))
        .unwrap()
        .hashes;
        for (id, entry) in ids.iter().zip(&fetch.entries) {
            let bytes = storage
                .store()
                .get(&table.sidecar_path(id))
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            let whole = Sidecar::open(bytes).unwrap();
            let (alone, within) = (entry.as_ref().unwrap(), whole.column("c2").unwrap());
            assert_eq!(alone.key_count, within.key_count);
            assert!(
                keys.iter()
                    .all(|&k| alone.may_contain(k) == within.may_contain(k))
            );
        }
    }
}

#[tokio::test]
async fn a_damaged_entry_is_unreadable_but_the_other_column_still_prunes() {
    let (storage, table, blocks) = appended_in_memory(20_000, 20_000).await;
    let path = table.sidecar_path(blocks.block_id(0));
    let store = storage.store();
    let mut bytes = store
        .get(&path)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec();
    // Entries are in column order: the last byte of the file is in c2's payload (or its padding,
    // so flip a byte 8 from the end).
    let at = bytes.len() - 8;
    bytes[at] ^= 0x5a;
    store.put(&path, PutPayload::from(bytes)).await.unwrap();
    let c2 = table.sidecar_entries(&blocks, &[0], "c2").await;
    assert_eq!((c2.unreadable, c2.entries[0].is_none()), (1, true));
    let c1 = table.sidecar_entries(&blocks, &[0], "c1").await;
    assert_eq!((c1.unreadable, c1.entries[0].is_some()), (0, true));
}

#[tokio::test]
async fn empty_writes_commit_nothing() {
    let storage = Storage::in_memory();
    let table = new_table(&storage, 100).await;
    let committed = TableWriter::new(table.clone()).finish().await.unwrap();
    assert!(committed.snapshot.is_none());
    assert_eq!(table.snapshot().await.unwrap().version, 0);
    assert!(
        table
            .blocks(&table.snapshot().await.unwrap())
            .await
            .unwrap()
            .is_empty()
    );
}

/// Deletes the rows of `blocks` (a version's list) whose c1 `holds`, given that block `b` was
/// written with c1 values `b * block_rows ..`.
async fn delete_where(table: &Table, blocks: &BlockList, holds: impl Fn(u64) -> bool) -> u64 {
    let block_rows = table.def().options.block_rows as u64;
    let mut rows = Deletes::new();
    for i in 0..blocks.len() {
        let chosen: RoaringBitmap = (0..blocks.rows().value(i))
            .filter(|r| holds(i as u64 * block_rows + r))
            .map(|r| r as u32)
            .collect();
        let block = blocks.block_id(i).to_string();
        rows.insert(
            block,
            BlockDeletes {
                rows: chosen,
                sidecar: None,
            },
        );
    }
    table.delete_rows(rows).await.unwrap().rows
}

/// An OPTIMIZE commits beside a DELETE and an append that landed while it rewrote: the rows the
/// DELETE removed from blocks it rewrote stay deleted in the new blocks (at the places the
/// write order gives them), the appended rows stay, and a DELETE chosen on the old blocks is
/// told to choose again.
#[tokio::test]
async fn an_optimize_keeps_what_landed_while_it_ran() {
    let (_storage, table, blocks) = appended_in_memory(100, 1000).await;
    // 40% of the first block: its locator group, all ten blocks, is rewritten.
    assert_eq!(delete_where(&table, &blocks, |c1| c1 < 40).await, 40);
    let base = table.snapshot().await.unwrap();
    let planned = table.blocks(&base).await.unwrap();
    let plan = planned.optimize_plan(table.def());
    assert_eq!(plan.rewrite, (0..10).collect::<Vec<_>>());
    let mut writer = TableWriter::new(table.clone());
    for start in (40..1000).step_by(300) {
        writer
            .write(batch(start, 300.min(1000 - start)))
            .await
            .unwrap();
    }
    let (written, _) = writer.upload().await.unwrap();

    // Meanwhile: a DELETE of every fifth row (the first 40 are gone already), and an append.
    assert_eq!(delete_where(&table, &planned, |c1| c1 % 5 == 0).await, 192);
    append(&table, 1000, 50, 50).await;
    let rewrite = Rewrite {
        base,
        rewritten: plan.rewrite,
        written,
        sidecars: Default::default(),
    };
    let done = table.commit_rewrite(rewrite).await.unwrap();
    assert_eq!(
        (
            done.blocks_removed,
            done.blocks_written,
            done.rows_written,
            done.rows_purged
        ),
        (10, 10, 960, 40)
    );
    let want: Vec<u64> = (40..1000)
        .filter(|c1| c1 % 5 != 0)
        .chain(1000..1050)
        .collect();
    let mut live = committed_c1(&table).await;
    live.sort_unstable();
    assert_eq!(live, want);
    let snapshot = table.snapshot().await.unwrap();
    assert_eq!((snapshot.rows, snapshot.blocks), (want.len() as u64, 11));
    // The carried deletes are a fifth of the new blocks (listed after the appended one, whose
    // segment OPTIMIZE kept): the next OPTIMIZE purges them. The appended block is half full,
    // not small: it stays.
    let now = table.blocks(&snapshot).await.unwrap();
    assert_eq!(
        now.optimize_plan(table.def()).rewrite,
        (1..11).collect::<Vec<_>>()
    );

    // A DELETE chosen on the old blocks finds them gone.
    let mut stale = Deletes::new();
    let rows = RoaringBitmap::from_iter([1u32]);
    stale.insert(
        planned.block_id(3).to_string(),
        BlockDeletes {
            rows,
            sidecar: None,
        },
    );
    let refused = table.delete_rows(stale).await.unwrap_err();
    assert!(matches!(refused, StorageError::Rewritten(_)), "{refused}");
}

/// Decoded segments are weighed in the metadata cache by what they hold, not by the buffer
/// their IPC file was read into, which every column of a segment shares: counted that way, a
/// segment would weigh its file once per column, and the budget would keep far fewer segments
/// than it has room for (a table past the budget fetches its evicted segments on every new
/// version).
#[tokio::test]
async fn cached_segments_weigh_about_their_files() {
    let storage = Storage::in_memory();
    let table = new_table(&storage, 100).await;
    for i in 0..20 {
        append(&table, i * 1_000, 1_000, 1_000).await;
    }
    let snapshot = table.snapshot().await.unwrap();
    let blocks = table.blocks(&snapshot).await.unwrap();
    assert_eq!(blocks.len(), 200);
    let files: u64 = snapshot.segments.iter().map(|s| s.bytes).sum();
    let weighed = storage.caches().segments.weight();
    assert!(
        weighed > files / 4 && weighed < files * 4,
        "segment files of {files} bytes weigh {weighed} in the cache"
    );
    let list = storage.caches().block_lists.weight();
    assert!(list >= blocks.memory_size(), "{list}");
}

/// Small appends compact once sixteen share a size, all of that size at once, their deleted
/// rows left out, and a full block is never written again: after a full block, 15 appends of 5
/// rows are left alone; 40 are written again as one block (a size up), and 15 more are left.
/// Every live row stays, on every storage.
#[tokio::test]
async fn small_appends_compact_once_sixteen_share_a_size() {
    for (storage, _dir) in storages().await {
        let table = new_table(&storage, 1000).await;
        append(&table, 0, 1000, 1000).await;
        let five_rows_each = |from: u64, to: u64| {
            let table = table.clone();
            async move {
                for i in from..to {
                    append(&table, 1000 + i * 5, 5, 5).await;
                }
            }
        };
        five_rows_each(0, 15).await;
        let none = table.compact_small_appends().await.unwrap();
        assert_eq!(none.blocks_removed, 0, "15 of one size are left alone");
        five_rows_each(15, 40).await;
        let blocks = table
            .blocks(&table.snapshot().await.unwrap())
            .await
            .unwrap();
        let full = blocks.block_id(0).to_string();
        let mut deletes = Deletes::new();
        for i in 1..blocks.len() {
            // c1 % 10 == 3: the 4th row of every other small block.
            if (1000 + (i as u64 - 1) * 5) % 10 == 0 {
                let rows = RoaringBitmap::from_iter([3u32]);
                let sidecar = None;
                deletes.insert(
                    blocks.block_id(i).to_string(),
                    BlockDeletes { rows, sidecar },
                );
            }
        }
        assert_eq!(table.delete_rows(deletes).await.unwrap().rows, 20);

        let spent_before = storage.merge_io_bytes();
        let done = table.compact_small_appends().await.unwrap();
        let done = (done.blocks_removed, done.blocks_written, done.rows_written);
        assert_eq!(done, (40, 1, 180));
        // Its reads and writes are merge I/O: the 40 blocks read, the block, sidecar and
        // locator written.
        let after = table
            .blocks(&table.snapshot().await.unwrap())
            .await
            .unwrap();
        let read: u64 = (1..blocks.len())
            .map(|i| blocks.data_bytes().value(i))
            .sum();
        let [group] = &after.locator_groups()[1..] else {
            panic!("one group is written: {:?}", after.locator_groups());
        };
        let locator = table.locator_path(&group.name);
        let locator = storage.store().head(&locator).await.unwrap();
        let new = group.blocks.start;
        let written =
            after.data_bytes().value(new) + after.sidecar_bytes().value(new) + locator.size;
        assert_eq!(storage.merge_io_bytes() - spent_before, read + written);
        five_rows_each(40, 55).await;
        let again = table.compact_small_appends().await.unwrap();
        assert_eq!(
            again.blocks_removed, 0,
            "15 of 5 rows and 1 of 180 are left"
        );

        let want: Vec<u64> = (0..1275)
            .filter(|c1| *c1 < 1000 || *c1 >= 1200 || c1 % 10 != 3)
            .collect();
        let mut live = committed_c1(&table).await;
        live.sort_unstable();
        assert_eq!(live, want);
        let snapshot = table.snapshot().await.unwrap();
        assert_eq!((snapshot.rows, snapshot.blocks), (want.len() as u64, 17));
        let blocks = table.blocks(&snapshot).await.unwrap();
        assert_eq!(blocks.block_id(0), full);
        assert!(blocks.compaction_plan(table.def()).is_empty());
    }
}
