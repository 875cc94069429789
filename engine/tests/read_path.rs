//! What a statement fetches from storage, counted request by request: planning (EXPLAIN) reads
//! no block, segment or sidecar; pruning happens when the scan runs. Runs on local files, and on
//! MinIO when SIEVE_TEST_S3_URL is set (scripts/test.sh sets it).

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use common::request_log::RequestLog;
use common::{rows, run};
use sieve_engine::{Engine, QueryOutput, Session};
use sieve_storage::{DEFAULT_DATA_CACHE_BYTES, DEFAULT_SIDECAR_CACHE_BYTES, Storage};

/// A session on `location` whose every storage request is logged, and its storage. It sends
/// only its statements' own requests: routing filters load whole locator files, and commits
/// merge locator groups, in the background (tests/routing.rs counts what those do).
async fn logged_session(location: &str) -> (Session, Arc<RequestLog>, Storage) {
    logged_session_caching(location, DEFAULT_DATA_CACHE_BYTES).await
}

/// The same, keeping up to `data_bytes` of blocks' bytes in memory.
async fn logged_session_caching(
    location: &str,
    data_bytes: u64,
) -> (Session, Arc<RequestLog>, Storage) {
    let (engine, log, storage) = logged_engine(location, data_bytes, None).await;
    let session = engine.session().unwrap();
    run(&session, "set sieve.routing = false").await;
    run(&session, "set sieve.merge_on_commit = false").await;
    (session, log, storage)
}

/// Table `default.t` of `storage`, opened directly (not through a session).
async fn table_t(storage: &Storage) -> sieve_storage::Table {
    sieve_storage::Catalog::open(storage.clone())
        .await
        .unwrap()
        .open_table("default", "t")
        .await
        .unwrap()
}

/// An engine on `location` whose every storage request is logged, keeping up to `data_bytes` of
/// blocks' bytes in memory, and bytes on disk in `disk`.
async fn logged_engine(
    location: &str,
    data_bytes: u64,
    disk: Option<&std::path::Path>,
) -> (Engine, Arc<RequestLog>, Storage) {
    let mut log = None;
    let storage = Storage::open_wrapped(location, |store| {
        let logged = RequestLog::new(store);
        log = Some(logged.clone());
        logged as _
    })
    .unwrap()
    .with_caches(DEFAULT_SIDECAR_CACHE_BYTES, data_bytes);
    let storage = match disk {
        Some(dir) => storage.with_disk_cache(dir, 1 << 30).unwrap(),
        None => storage,
    };
    let engine = Engine::with_storage(storage.clone()).await.unwrap();
    (engine, log.unwrap(), storage)
}

fn fetched<'a>(requests: &'a [String], suffix: &str) -> Vec<&'a String> {
    requests.iter().filter(|r| r.contains(suffix)).collect()
}

async fn explain_fetches_nothing_and_the_query_prunes_when_it_runs(location: &str) {
    let (s, log, _) = logged_session(location).await;
    // What each pruning path fetches, not a kept result (see lookups_answer_from_kept_results).
    run(&s, "set sieve.lookup_cache = false").await;
    // In order: c1's blocks then ascend apart and the table has one locator group (blocks of
    // interleaved partitions would break the run and close the group: two groups, two reads).
    run(&s, "create table t with (block_rows = 100) as select number as c1, cast(number * 7 as string) as c2 from numbers(1000) order by number").await;
    log.take();

    let sql = "select c1 from t where c2 = '3500'";
    for explain in ["explain", "explain verbose"] {
        let plan = rows(&run(&s, &format!("{explain} {sql}")).await).join("\n");
        assert!(plan.contains("SieveScanExec: table=default.t"), "{plan}");
        let requests = log.take();
        for kind in [
            ".sidecar",
            ".parquet",
            "/segments/",
            "/snapshots/",
            "latest.json",
        ] {
            assert!(
                fetched(&requests, kind).is_empty(),
                "{explain} fetched {kind}: {requests:#?}"
            );
        }
    }

    let answer = run(&s, sql).await;
    assert_eq!(rows(&answer), ["500"]);
    assert_eq!(
        (answer.stats.blocks_total, answer.stats.blocks_read),
        (10, 1)
    );
    let first = log.take();
    // The table's one locator group says where '3500' is: one ranged read, no sidecar.
    assert_eq!(fetched(&first, ".loc").len(), 1, "{first:#?}");
    assert!(fetched(&first, ".sidecar").is_empty(), "{first:#?}");
    assert!(!fetched(&first, ".parquet").is_empty(), "{first:#?}");

    // Without the locator, the segment says where each block's c2 entry lies: one exact read
    // per sidecar probed (the 3 blocks whose c2 min/max admit '3500').
    run(&s, "set sieve.locator = false").await;
    log.take();
    assert_eq!(rows(&run(&s, sql).await), ["500"]);
    let without = log.take();
    let sidecars = fetched(&without, ".sidecar");
    let distinct: HashSet<&&String> = sidecars.iter().collect();
    assert_eq!(sidecars.len(), 3, "{without:#?}");
    assert_eq!(sidecars.len(), distinct.len(), "{without:#?}");
    assert!(fetched(&without, ".loc").is_empty(), "{without:#?}");

    // Again: the snapshot is confirmed with two small requests; segments, sidecar entries, the
    // block's footer and its pages come from the caches.
    assert_eq!(rows(&run(&s, sql).await), ["500"]);
    let again = log.take();
    assert_eq!(fetched(&again, "latest.json").len(), 1, "{again:#?}");
    assert_eq!(fetched(&again, "HEAD ").len(), 1, "{again:#?}");
    for kind in ["LIST", "/segments/", ".sidecar"] {
        assert!(
            fetched(&again, kind).is_empty(),
            "fetched {kind} again: {again:#?}"
        );
    }
    assert!(fetched(&again, ".parquet").is_empty(), "{again:#?}");

    // A commit: the next query lists the history once and fetches only the new segment.
    run(&s, "insert into t values (5000, 'new')").await;
    log.take();
    assert_eq!(
        rows(&run(&s, "select c1 from t where c2 = 'new'").await),
        ["5000"]
    );
    let after_commit = log.take();
    assert_eq!(
        fetched(&after_commit, "/segments/").len(),
        1,
        "{after_commit:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_fetches_nothing_on_local_files() {
    let dir = tempfile::tempdir().unwrap();
    explain_fetches_nothing_and_the_query_prunes_when_it_runs(dir.path().to_str().unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_fetches_nothing_on_s3() {
    let base = common::s3_base();
    let prefix = format!("{base}/read-path-{:x}", rand::random::<u64>());
    explain_fetches_nothing_and_the_query_prunes_when_it_runs(&prefix).await;
}

/// A lookup repeated reads its block's pages from the data cache: no request for the block and
/// no byte of it fetched; with the cache off (`data_cache_mib = 0`, or `SET sieve.data_cache =
/// false` in the session) it fetches them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_lookups_read_pages_from_the_data_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (DEFAULT_DATA_CACHE_BYTES, true, true),
        (0, true, false),
        (DEFAULT_DATA_CACHE_BYTES, false, false),
    ];
    for (i, (data_bytes, session_cache, cached)) in cases.into_iter().enumerate() {
        let location = dir.path().join(format!("case-{i}"));
        let (s, log, _) = logged_session_caching(location.to_str().unwrap(), data_bytes).await;
        run(&s, &format!("set sieve.data_cache = {session_cache}")).await;
        // The lookup's result itself is not to be kept (see lookups_answer_from_kept_results).
        run(&s, "set sieve.lookup_cache = false").await;
        run(&s, "create table t with (block_rows = 100) as select number as c1, cast(number * 7 as string) as c2 from numbers(1000) order by number").await;
        let sql = "select c1 from t where c2 = '3500'";
        let first = run(&s, sql).await;
        assert_eq!(rows(&first), ["500"]);
        assert!(first.stats.bytes_read > 0);
        log.take();
        let again = run(&s, sql).await;
        assert_eq!(rows(&again), ["500"]);
        let requests = log.take();
        if cached {
            assert_eq!(again.stats.bytes_read, 0);
            assert!(fetched(&requests, ".parquet").is_empty(), "{requests:#?}");
        } else {
            assert!(again.stats.bytes_read > 0);
            assert!(!fetched(&requests, ".parquet").is_empty(), "{requests:#?}");
        }
    }
}

/// A query's rows in order, for queries without ORDER BY.
fn sorted(output: &QueryOutput) -> Vec<String> {
    let mut r = rows(output);
    r.sort();
    r
}

/// A short-path lookup the locator sent to a block's slices decodes their pages on its own task
/// (`sieve.direct_reads`), not through DataFusion's Parquet scan: the same rows, blocks and pages
/// as that scan, deleted rows left out, a LIMIT kept, and no more bytes or requests (the scan
/// asks for a whole column chunk where a selection takes all of a small block's rows, which no
/// page sum checks, so it fetches the block's checksum stride).
/// Run on a table whose c2 is located and whose c1 ascends (min/max alone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_located_lookup_decodes_its_pages_without_the_parquet_scan() {
    let dir = tempfile::tempdir().unwrap();
    let (s, log, _) = logged_session(dir.path().to_str().unwrap()).await;
    run(&s, "set sieve.lookup_cache = false").await;
    run(&s, "set sieve.data_cache = false").await;
    run(&s, "create table t with (block_rows = 100) as select number as c1, cast(number * 7 as string) as c2, cast(number % 3 as bigint) as c3 from numbers(1000) order by number").await;
    run(&s, "delete from t where c1 = 501").await;
    // Whether the lookup is located (c1 ascends: min/max find its block, no locator names a
    // slice, and DataFusion's scan reads it).
    let lookups = [
        ("select c1 from t where c2 = '3500'", true),
        (
            "select c2, c3 from t where c2 in ('7', '3507', '6993')",
            true,
        ),
        ("select c1 from t where c2 = '3507'", true),
        ("select c1 from t where c2 = 'absent'", true),
        (
            "select * from t where c2 = '3500' or c2 = '3514' limit 1",
            true,
        ),
        ("select c2 as k from t where c2 = '3500' and c3 = 2", true),
        ("select c3 from t where c2 = '3500' and c3 = 0", true),
        ("select c2 from t where c1 = 500", false),
    ];
    let mut direct_blocks = 0;
    for (sql, located) in lookups {
        run(&s, "set sieve.direct_reads = true").await;
        // The index it needs (segment, locator page) cached for both, the blocks for neither.
        run(&s, sql).await;
        log.take();
        let direct = run(&s, sql).await;
        let direct_requests = log.take();
        run(&s, "set sieve.direct_reads = false").await;
        let scanned = run(&s, sql).await;
        let scan_requests = log.take();
        assert!(direct.short_path && scanned.short_path, "{sql}");
        // Without ORDER BY, in any order: the scan merges its partitions as they finish.
        assert_eq!(sorted(&direct), sorted(&scanned), "{sql}");
        assert_eq!(direct.schema, scanned.schema, "{sql}");
        let expected = if located { direct.stats.blocks_read } else { 0 };
        assert_eq!(direct.stats.blocks_read_directly, expected, "{sql}");
        direct_blocks += expected;
        assert_eq!(scanned.stats.blocks_read_directly, 0, "{sql}");
        let read = |o: &QueryOutput| (o.stats.blocks_read, o.stats.pages_read);
        assert_eq!(read(&direct), read(&scanned), "{sql}");
        assert!(direct.stats.bytes_read <= scanned.stats.bytes_read, "{sql}");
        assert!(direct.stats.requests <= scanned.stats.requests, "{sql}");
        // GETs of the same blocks, no more of them, in whichever order the blocks were read.
        let gets = |requests: &[String]| {
            let mut gets = fetched(requests, ".parquet");
            gets.sort();
            gets.into_iter().cloned().collect::<Vec<_>>()
        };
        let (mut direct_blocks_got, mut scan_blocks_got) =
            (gets(&direct_requests), gets(&scan_requests));
        assert!(direct_blocks_got.len() <= scan_blocks_got.len(), "{sql}");
        direct_blocks_got.dedup();
        scan_blocks_got.dedup();
        assert_eq!(direct_blocks_got, scan_blocks_got, "{sql}");
    }
    assert!(direct_blocks >= 5, "{direct_blocks} blocks read directly");
    // A deleted row is not read back, and the limit holds.
    run(&s, "set sieve.direct_reads = true").await;
    let deleted = run(&s, "select c1 from t where c2 = '3507'").await;
    assert!(rows(&deleted).is_empty());
    let limited = run(&s, "select c1 from t where c2 in ('7', '14', '21') limit 2").await;
    assert_eq!(limited.row_count(), 2);
}

/// A located read whose selection is full of holes (every other row of two slices deleted) is
/// one parquet-rs decodes as a mask, every row from a batch's first selected row to its last:
/// the slice between the two, which no key is in, is read too, and the rows are the scan's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_located_read_full_of_deleted_rows_reads_the_pages_between_its_slices() {
    let dir = tempfile::tempdir().unwrap();
    let (s, _, _) = logged_session(dir.path().to_str().unwrap()).await;
    run(&s, "set sieve.lookup_cache = false").await;
    run(&s, "create table t as select number as c1, cast(number * 7 as string) as c2 from numbers(20000)").await;
    run(
        &s,
        "delete from t where c1 % 2 = 1 and (c1 < 4096 or (c1 >= 8192 and c1 < 12288))",
    )
    .await;
    let sql = "select c1 from t where c2 in ('0', '28', '57344', '57351', '57358')";
    let direct = run(&s, sql).await;
    assert_eq!(direct.stats.blocks_read_directly, 1);
    run(&s, "set sieve.direct_reads = false").await;
    let scanned = run(&s, sql).await;
    assert_eq!(sorted(&direct), sorted(&scanned));
    assert_eq!(direct.row_count(), 4, "{:?}", rows(&direct));
}

/// `count(*)` of a whole table is the live rows its block list holds at the snapshot read:
/// answered without reading a block, and equal to a count that reads them all, deleted rows
/// left out, after each commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_table_count_reads_no_block() {
    let dir = tempfile::tempdir().unwrap();
    let (s, log, _) = logged_session(dir.path().to_str().unwrap()).await;
    run(
        &s,
        "create table t with (block_rows = 100) as select number as c1 from numbers(1000)",
    )
    .await;
    let counted = "select count(*) from t";
    let scanned = "select count(*) from t where c1 + 0 = c1 allow filtering";
    for (commit, want) in [
        ("select 1", "1000"),
        ("delete from t where c1 % 10 = 3", "900"),
        ("insert into t select number from numbers(5)", "905"),
    ] {
        run(&s, commit).await;
        log.take();
        let count = run(&s, counted).await;
        assert_eq!(rows(&count), [want], "after {commit}");
        assert_eq!(count.stats.blocks_read, 0, "after {commit}");
        assert!(
            fetched(&log.take(), ".parquet").is_empty(),
            "after {commit}"
        );
        let read = run(&s, scanned).await;
        assert_eq!(rows(&read), [want], "after {commit}");
        assert!(read.stats.blocks_read >= 10, "after {commit}");
    }
    // A scan of no column under a LIMIT returns that many rows, not the table's.
    let limited = "select count(*) from (select 1 from t limit 5) s";
    assert_eq!(rows(&run(&s, limited).await), ["5"]);
}

/// A lookup repeated in the same table version is answered from its kept result: no block, no
/// locator page, no sidecar is read, only the version confirmed. A commit (INSERT, DELETE) makes
/// a new version, whose lookups read the table again and see it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_answer_from_kept_results() {
    let dir = tempfile::tempdir().unwrap();
    let (s, log, _) = logged_session(dir.path().to_str().unwrap()).await;
    run(&s, "create table t with (block_rows = 100) as select number as c1, cast(number * 7 as string) as c2 from numbers(1000) order by number").await;
    let sql = "select c1 from t where c2 = '3500'";
    let first = run(&s, sql).await;
    assert_eq!(
        (rows(&first), first.stats.blocks_read),
        (vec!["500".to_string()], 1)
    );
    log.take();
    let again = run(&s, sql).await;
    assert_eq!(
        (rows(&again), again.stats.blocks_read),
        (vec!["500".to_string()], 0)
    );
    assert!(again.short_path);
    let requests = log.take();
    for kind in [".parquet", ".loc", ".sidecar", "/segments/"] {
        assert!(fetched(&requests, kind).is_empty(), "{kind}: {requests:#?}");
    }
    assert_eq!(fetched(&requests, "latest.json").len(), 1, "{requests:#?}");
    // Prepared, the same lookup is the same key.
    let prepared = s.prepare("select c1 from t where c2 = ?").await.unwrap();
    let bound = vec![datafusion::common::ScalarValue::Utf8(Some("3500".into()))];
    let answer = s.execute_prepared(&prepared, bound.clone()).await.unwrap();
    let answer = answer.collect().await.unwrap();
    assert_eq!(
        (rows(&answer), answer.stats.blocks_read),
        (vec!["500".to_string()], 0)
    );
    // A new version: read again, and the appended row is in the answer.
    run(&s, "insert into t values (9999, '3500')").await;
    let after_insert = run(&s, sql).await;
    assert_eq!(rows(&after_insert), ["500", "9999"]);
    assert!(after_insert.stats.blocks_read > 0);
    run(&s, "delete from t where c1 = 500").await;
    let answer = s.execute_prepared(&prepared, bound).await.unwrap();
    assert_eq!(rows(&answer.collect().await.unwrap()), ["9999"]);
    // Off, the table is read every time.
    run(&s, "set sieve.lookup_cache = false").await;
    run(&s, sql).await;
    assert!(run(&s, sql).await.stats.blocks_read > 0);
}

/// A lookup of a table this process knows checks only the table's newest version: `latest.json`
/// and a HEAD of the next version, side by side, and not the name's definition, which is written
/// once. Another process's DROP commits a version of its own, which that check finds: the lookup
/// then fetches what the name is now, and reports the table unknown, or answers from the table
/// made since, never the dropped one. One thread, so that both checks are sent before either is
/// answered, as over a network (a local directory answers at once).
#[tokio::test]
async fn a_known_tables_lookup_checks_only_its_version() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let (s, log, _) = logged_session(location).await;
    let create = |first: u64| {
        format!(
            "create table t as select number + {first} as c1, cast(number * 7 as string) as c2 \
             from numbers(1000)"
        )
    };
    run(&s, &create(0)).await;
    let sql = "select c1 from t where c2 = '3500'";
    assert_eq!(rows(&run(&s, sql).await), ["500"]);
    log.take();
    let again = run(&s, sql).await;
    assert_eq!(rows(&again), ["500"]);
    assert!(again.short_path);
    let requests = log.take();
    for check in ["latest.json", "HEAD "] {
        assert_eq!(fetched(&requests, check).len(), 1, "{check}: {requests:#?}");
    }
    assert_eq!(
        (again.stats.requests, again.stats.sequential_requests),
        (2, 1),
        "{requests:#?}"
    );

    let (other, _, _) = logged_session(location).await;
    run(&other, "drop table t").await;
    let error = s
        .execute(sql)
        .await
        .err()
        .expect("a dropped table answered");
    assert_eq!(
        sieve_engine::classify(&error),
        sieve_engine::ErrorClass::UnknownTable,
        "{error}"
    );
    run(&other, &create(5000)).await;
    log.take();
    let after = run(&s, sql).await;
    assert_eq!(rows(&after), ["5500"]);
    assert!(after.short_path);
    let requests = log.take();
    assert_eq!(
        fetched(&requests, "tables/t.json").len(),
        1,
        "{requests:#?}"
    );
}

/// Concurrent queries share freshness checks: 50 snapshot lookups arriving together cost two
/// checks (the one the first sent, and the one the other 49 wait for, sent after they arrived),
/// not 50. One thread, so that all 50 arrive before any check answers.
#[tokio::test]
async fn concurrent_queries_share_freshness_checks() {
    let dir = tempfile::tempdir().unwrap();
    let (session, log, storage) = logged_session(dir.path().to_str().unwrap()).await;
    run(
        &session,
        "create table t as select number as c1 from numbers(10)",
    )
    .await;
    run(&session, "insert into t values (10)").await;
    let table = table_t(&storage).await;
    table.snapshot().await.unwrap();
    log.take();
    let snapshots = futures::future::join_all((0..50).map(|_| table.snapshot())).await;
    assert!(snapshots.iter().all(|s| s.as_ref().unwrap().version == 2));
    let requests = log.take();
    assert_eq!(fetched(&requests, "latest.json").len(), 2, "{requests:#?}");
    assert_eq!(fetched(&requests, "HEAD ").len(), 2, "{requests:#?}");
    // Table definitions too: 50 sessions opening the table together fetch it twice.
    let catalog = sieve_storage::Catalog::open(storage.clone()).await.unwrap();
    let defs = futures::future::join_all((0..50).map(|_| catalog.table("default", "t"))).await;
    assert!(defs.iter().all(|d| d.as_ref().unwrap().name == "t"));
    let requests = log.take();
    assert_eq!(
        fetched(&requests, "tables/t.json").len(),
        2,
        "{requests:#?}"
    );
    // A caller naming the table's id (a worker its coordinator asks) gets the definition
    // fetched before, without a request of its own; a caller naming another id, a fresh fetch.
    let id = defs[0].as_ref().unwrap().id.clone();
    let known = catalog.table_known("default", "t", &id).await.unwrap();
    assert_eq!(known.id, id);
    assert!(log.take().is_empty());
    catalog
        .table_known("default", "t", "another")
        .await
        .unwrap();
    assert_eq!(fetched(&log.take(), "tables/t.json").len(), 1);
    // A DROP made before a lookup of the definition starts is seen by it.
    run(&session, "drop table t").await;
    assert!(matches!(
        catalog.table("default", "t").await,
        Err(sieve_storage::StorageError::UnknownTable(..))
    ));
    run(
        &session,
        "create table t as select number as c1 from numbers(10)",
    )
    .await;
    run(&session, "insert into t values (10)").await;
    let table = catalog.open_table("default", "t").await.unwrap();
    // A commit made before a lookup starts is seen by it.
    run(&session, "insert into t values (11)").await;
    assert_eq!(table.snapshot().await.unwrap().version, 3);
    // Under a bounded staleness a read right after a check sends no request of its own.
    run(&session, "set sieve.max_staleness_ms = 3600000").await;
    assert_eq!(
        rows(&run(&session, "select c1 from t where c1 = 11").await),
        ["11"]
    );
    log.take();
    assert_eq!(
        rows(&run(&session, "select c1 from t where c1 = 11").await),
        ["11"]
    );
    let requests = log.take();
    assert!(
        fetched(&requests, "latest.json").is_empty(),
        "{requests:#?}"
    );
    assert!(fetched(&requests, "HEAD ").is_empty(), "{requests:#?}");
}

/// A process's first lookup of a table waits for few round trips, each a small request: the
/// definition with the table's named pointer; the segment that pointer's snapshot names, with
/// `latest.json` and the listing that check it; the locator page; then, for a present key, every
/// column's page in one round trip (pushdown would fetch the key's column first), placed by the
/// page table in the segment: no footer is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_lookup_waits_for_few_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    {
        let (s, _, _) = logged_session(location).await;
        // One partition, so c1's blocks ascend apart and the write makes one locator group:
        // interleaved partitions give a block that breaks the run, which closes the group and
        // starts a second (then a lookup reads two locator pages, as many as there are groups).
        run(&s, "set datafusion.execution.target_partitions = 1").await;
        run(&s, "create table t with (block_rows = 100000) as select number as c1, cast(number * 7 as string) as c2 from numbers(1000000)").await;
    }
    for (sql, found, round_trips) in [
        ("select c1 from t where c2 = '3500'", vec!["500"], 4),
        ("select c1 from t where c2 = '3501'", vec![], 3),
    ] {
        // A new process: nothing cached.
        let (s, log, storage) = logged_session(location).await;
        log.take();
        let output = run(&s, sql).await;
        assert_eq!(rows(&output), found, "{sql}");
        let requests = log.take();
        assert_eq!(
            output.stats.requests,
            requests.len() as u64,
            "{requests:#?}"
        );
        assert_eq!(
            output.stats.sequential_requests, round_trips,
            "{sql}: {requests:#?}"
        );
        assert!(
            fetched(&requests, "/snapshots/0").is_empty(),
            "{requests:#?}"
        );
        // One group, so one locator page. (A CI run under load once found the table in two:
        // numbers() then kept one partition per core whatever the session set, and one ran a
        // chunk ahead of the other, breaking c1's run.)
        let table = table_t(&storage).await;
        let snapshot = table.snapshot().await.unwrap();
        let groups = table
            .blocks(&snapshot)
            .await
            .unwrap()
            .locator_groups()
            .len();
        assert_eq!(groups, 1);
        assert_eq!(fetched(&requests, ".loc").len(), 1, "{requests:#?}");
        assert_eq!(
            fetched(&requests, "/pointers/t.json").len(),
            1,
            "{requests:#?}"
        );
        let block_reads = fetched(&requests, ".parquet");
        assert_eq!(
            block_reads.len(),
            if found.is_empty() { 0 } else { 2 },
            "{requests:#?}"
        );
        if let Some(read) = block_reads.first() {
            // Exactly the two pages holding the row (c1 = 500), checked by their own sums, not
            // the 64 KiB strides around them.
            let block = read.trim_start_matches("GET ");
            let pages = pages_holding_c1(&storage, block, 500).await;
            assert_eq!(output.stats.bytes_read, pages, "{sql}");
        }
    }
}

/// With a disk cache, the blocks' pages a lookup read are kept on disk, and loading a group's
/// routing filter keeps its locator's pages there, where a lookup then reads its page instead of
/// sending a request. A restarted process reads both from there, and loads its filters from
/// there too. A damaged file is a miss, read from storage again: never a wrong or missing row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_process_reads_pages_from_the_disk_cache() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("tables");
    let location = location.to_str().unwrap();
    let cache = dir.path().join("cache");
    // s unique and shuffled (so it gets a locator), two groups of ten 1000-row blocks.
    let create = "create table t (n bigint, s varchar) \
                  with (block_rows = 1000, locator_group_rows = 10000, index_columns = 's') \
                  as select number, concat('v', cast((number * 7919) % 20011 as varchar)) \
                  from numbers(20000)";
    let present = |i: u64| format!("select n from t where s = 'v{}'", i * 7919 % 20011);
    let damage = || {
        // Every page of both locators' kept files zeroed, their length kept.
        for file in std::fs::read_dir(&cache).unwrap() {
            let path = file.unwrap().path();
            let len = std::fs::metadata(&path).unwrap().len();
            if len > 4096 {
                let mut bytes = std::fs::read(&path).unwrap();
                bytes[1024..].fill(0);
                std::fs::write(&path, bytes).unwrap();
            }
        }
    };
    for process in [
        "first",
        "restarted",
        "damaged",
        "damaged before its filters load",
    ] {
        let (engine, log, _) = logged_engine(location, 0, Some(&cache)).await;
        let s = engine.session().unwrap();
        run(&s, "set sieve.merge_on_commit = false").await;
        run(&s, "set sieve.lookup_cache = false").await;
        match process {
            "first" => {
                run(&s, create).await;
            }
            "damaged" => {
                damage();
                // Without routing no filter loads: each group's page is read from its damaged
                // file, found damaged, and read from storage.
                run(&s, "set sieve.routing = false").await;
                log.take();
                let found = run(&s, &present(2)).await;
                assert_eq!(rows(&found), ["2"]);
                assert_eq!(found.stats.locator_groups_probed, 2);
                assert_eq!(fetched(&log.take(), ".loc").len(), 2);
                run(&s, "set sieve.routing = true").await;
            }
            "damaged before its filters load" => damage(),
            _ => {}
        }
        // The first lookup starts the filters' loads.
        log.take();
        assert_eq!(rows(&run(&s, &present(1)).await), ["1"]);
        engine.routing_settled().await;
        assert!(engine.routing_bytes() > 0, "{process}");
        let loads = log.take();
        let locator_reads = fetched(&loads, ".loc").len();
        match process {
            "restarted" => {
                assert_eq!(locator_reads, 0, "{loads:#?}");
                assert!(fetched(&loads, ".parquet").is_empty(), "{loads:#?}");
            }
            _ => assert!(locator_reads > 0, "{process}: {loads:#?}"),
        }
        for i in [3, 9_999, 10_000, 19_998] {
            let found = run(&s, &present(i)).await;
            assert_eq!(rows(&found), [i.to_string()], "{process}");
            // The filters loaded, damaged files or not, and kept the locators' pages again.
            assert_eq!(found.stats.locator_groups_probed, 1, "{process}");
            let requests = log.take();
            assert_eq!(
                fetched(&requests, ".loc").len(),
                0,
                "{process} {i}: {requests:#?}"
            );
            assert_eq!(found.stats.index_bytes, 0, "{process} {i}");
            if process == "restarted" {
                assert!(fetched(&requests, ".parquet").is_empty(), "{requests:#?}");
            }
        }
        let absent = run(&s, "select n from t where s = 'v20011'").await;
        assert!(rows(&absent).is_empty());
    }
}

/// The bytes of the pages holding the row whose c1 is `c1` in every column of `block`, from its
/// footer.
async fn pages_holding_c1(storage: &Storage, block: &str, c1: u64) -> u64 {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::compute::cast;
    use datafusion::arrow::datatypes::{DataType, Int64Type};
    use datafusion::parquet::arrow::ProjectionMask;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use datafusion::parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};
    use object_store::ObjectStoreExt;
    let path = object_store::path::Path::from(block);
    let file = storage
        .store()
        .get(&path)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(file.clone()).unwrap();
    let mask = ProjectionMask::roots(builder.parquet_schema(), [0]);
    let mut row = None;
    let mut seen = 0i64;
    for batch in builder.with_projection(mask).build().unwrap() {
        let batch = batch.unwrap();
        let values = cast(batch.column(0), &DataType::Int64).unwrap();
        let values = values.as_primitive::<Int64Type>();
        if let Some(k) = (0..values.len()).find(|&k| values.value(k) == c1 as i64) {
            row = Some(seen + k as i64);
        }
        seen += batch.num_rows() as i64;
    }
    let row = row.expect("the block holds the row");
    let metadata = ParquetMetaDataReader::new()
        .with_page_index_policy(PageIndexPolicy::Required)
        .parse_and_finish(&file)
        .unwrap();
    let columns = &metadata.offset_index().unwrap()[0];
    let page =
        |locations: &[datafusion::parquet::file::page_index::offset_index::PageLocation]| {
            let k = locations.partition_point(|p| p.first_row_index <= row) - 1;
            locations[k].compressed_page_size as u64
        };
    columns.iter().map(|c| page(c.page_locations())).sum()
}
