//! OPTIMIZE TABLE: small blocks are merged, blocks thinned out by DELETEs are written again
//! without their deleted rows, stale xor/fuse entries are rebuilt, and none of it changes an
//! answer, even while DELETEs and appends land beside it. Counts, not timings: blocks, rows and
//! blocks read per lookup. (The model test in `deletes.rs` runs OPTIMIZE between its random
//! statements too.)

mod common;

use common::{rows, run};
use sieve_engine::{Engine, Session};

async fn optimize(session: &Session) -> String {
    rows(&run(session, "optimize table t").await).join("")
}

/// Blocks read by a lookup of `k` that must find nothing.
async fn blocks_read_for_deleted(session: &Session, k: u64) -> u64 {
    let found = run(session, &format!("select * from t where k = {k}")).await;
    assert_eq!(found.row_count(), 0, "k = {k} was deleted");
    found.stats.blocks_read
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_inserts_are_merged_into_full_blocks_once() {
    let session = common::memory_session().await;
    // Not compacted in the background meanwhile: OPTIMIZE is to find all 20.
    run(&session, "set sieve.merge_on_commit = false").await;
    run(
        &session,
        "create table t (k bigint, v varchar) with (block_rows = 100)",
    )
    .await;
    for i in 0..20 {
        run(
            &session,
            &format!(
                "insert into t select number + {}, cast(number as varchar) from numbers(30)",
                i * 30
            ),
        )
        .await;
    }
    let before = run(&session, "select count(k) from t").await;
    assert_eq!(before.stats.blocks_total, 20);
    // blocks_removed | blocks_written | rows_written | rows_purged | sidecars_rebuilt |
    // groups_merged
    assert_eq!(optimize(&session).await, "20|6|600|0|0|0");
    let after = run(&session, "select count(*), sum(k) from t").await;
    assert_eq!(rows(&after), ["600|179700"]);
    assert_eq!(after.stats.blocks_total, 6);
    let lookup = run(&session, "select v from t where k = 123").await;
    assert_eq!(rows(&lookup), ["3"]);
    assert_eq!(lookup.stats.blocks_read, 1);
    assert_eq!(
        optimize(&session).await,
        "0|0|0|0|0|0",
        "nothing is left to do"
    );
}

/// Small INSERTs are compacted in the background as they land, with no OPTIMIZE: once sixteen
/// blocks of a size wait, they are written again as one. After 40 INSERTs of 5 rows, fewer
/// than sixteen 5-row blocks are left beside at most two compacted ones (how the 40 split
/// between rounds depends on timing). A DELETE between them is carried, and every answer equals
/// the same query with pruning off, before and after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_inserts_are_compacted_in_the_background() {
    let engine = Engine::open("memory://").await.unwrap();
    let session = engine.session().unwrap();
    let unpruned = engine.session().unwrap();
    run(&unpruned, "set sieve.pruning = false").await;
    run(
        &session,
        "create table t (k bigint, v varchar) with (block_rows = 1000)",
    )
    .await;
    let compare = |step: u64| {
        let (session, unpruned) = (&session, &unpruned);
        async move {
            for sql in [
                "select k, v from t order by k".to_string(),
                format!("select v from t where k = {}", step * 5 + 2),
                format!(
                    "select k, v from t where k in ({}, 3, 1000000) order by k",
                    step * 3
                ),
            ] {
                let (a, b) = (run(session, &sql).await, run(unpruned, &sql).await);
                assert_eq!(rows(&a), rows(&b), "step {step}: {sql}");
            }
        }
    };
    for i in 0..40u64 {
        run(
            &session,
            &format!(
                "insert into t select number + {}, cast(number as varchar) from numbers(5)",
                i * 5
            ),
        )
        .await;
        if i == 20 {
            run(&session, "delete from t where k % 10 = 3").await;
        }
        compare(i).await;
    }
    engine.merges_settled().await;
    let all = run(&session, "select count(k), sum(k) from t").await;
    // 0..200, less the 11 keys k % 10 = 3 of the first 21 INSERTs (3, 13, …, 103).
    let deleted: u64 = (0..105).filter(|k| k % 10 == 3).sum();
    assert_eq!(rows(&all), [format!("189|{}", 19_900 - deleted)]);
    let blocks = all.stats.blocks_total;
    assert!((1..=17).contains(&blocks), "{:?}", all.stats);
    let lookup = run(&session, "select v from t where k = 123").await;
    assert_eq!(rows(&lookup), ["3"]);
    assert_eq!(lookup.stats.blocks_read, 1, "{:?}", lookup.stats);
    compare(40).await;
    // An OPTIMIZE still merges the small blocks left into one. (Whether a compacted block
    // holds deleted rows depends on when it was compacted.)
    let optimized = optimize(&session).await;
    if blocks > 1 {
        assert!(
            optimized.starts_with(&format!("{blocks}|1|189|")),
            "{optimized}"
        );
    }
}

/// A quarter of a block deleted: its locator group is written again without those rows, and a
/// lookup of a deleted key reads no block (the new fuse entries never held it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_thinned_by_deletes_are_written_again_without_them() {
    let session = common::memory_session().await;
    run(
        &session,
        "create table t (k bigint, h bigint) with (block_rows = 1000)",
    )
    .await;
    // `k` ascends block after block and needs no locator; `h` makes the blocks one group.
    run(
        &session,
        "insert into t select number, (number * 7919) % 10007 from numbers(10000) order by number",
    )
    .await;
    let deleted = run(&session, "delete from t where k < 1000 and k % 4 = 0").await;
    assert_eq!(deleted.affected_rows, Some(250));
    assert_eq!(optimize(&session).await, "10|10|9750|250|0|0");
    let mut reads = 0;
    for k in [8, 96, 500, 996] {
        reads += blocks_read_for_deleted(&session, k).await;
    }
    assert_eq!(reads, 0, "fuse8's 0.4% false positives aside");
    let all = run(&session, "select count(*), sum(k) from t").await;
    assert_eq!(rows(&all), [format!("9750|{}", 49_995_000 - 124_500)]);
    assert_eq!((all.stats.blocks_total, all.stats.blocks_read), (10, 10));
    let plan = rows(&run(&session, "explain analyze select * from t").await).join("\n");
    assert!(plan.contains("0 fully deleted"), "{plan}");
}

/// A tenth of every block deleted: no block is worth writing again, but each fuse entry is
/// rebuilt from its live keys, so lookups of deleted keys read no block, with the locator (which
/// still names their blocks) or without.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_fuse_entries_are_rebuilt_without_rewriting_blocks() {
    for locator in ["true", "false"] {
        let session = common::memory_session().await;
        run(
            &session,
            &format!("create table t (k bigint) with (block_rows = 1000, locator = {locator})"),
        )
        .await;
        // Shuffled, so that `k` has a locator (ascending blocks would not need one).
        run(
            &session,
            "insert into t select number from numbers(10000) order by (number * 7919) % 10009",
        )
        .await;
        run(&session, "delete from t where k % 10 = 0").await;
        let keys = [50, 1150, 2350, 9990];
        let mut reads = 0;
        for k in keys {
            reads += blocks_read_for_deleted(&session, k).await;
        }
        assert_eq!(
            reads, 4,
            "locator {locator}: 10% stale is below the threshold"
        );
        assert_eq!(
            optimize(&session).await,
            "0|0|0|0|10|0",
            "locator {locator}"
        );
        let mut reads = 0;
        for k in keys {
            reads += blocks_read_for_deleted(&session, k).await;
        }
        assert_eq!(reads, 0, "locator {locator}");
        let live = run(
            &session,
            "select count(*) from t where k in (51, 1151, 9999)",
        )
        .await;
        assert_eq!(rows(&live), ["3"]);
        assert_eq!(
            rows(&run(&session, "select count(*) from t").await),
            ["9000"]
        );
        assert_eq!(optimize(&session).await, "0|0|0|0|0|0", "locator {locator}");
    }
}

/// Three processes ([`common::three_processes`]): OPTIMIZEs race DELETEs (whose rows
/// are in the blocks being rewritten) and appends. Every row deleted stays deleted, every append
/// stays, each row is counted by one DELETE; then VACUUM removes the rewritten blocks and no
/// answer changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimize_beside_deletes_and_appends_loses_nothing() {
    let (_dir, [deleter, optimizer, appender]) = common::three_processes().await;
    let mut affected = 0;
    for round in 0..8 {
        let (delete, append) = common::race_round(round, 3);
        let (d, o, a) = tokio::join!(
            deleter.execute(&delete),
            optimizer.execute("optimize table t"),
            appender.execute(&append)
        );
        affected += d.unwrap().affected_rows.unwrap();
        o.unwrap();
        a.unwrap();
    }
    assert_eq!(affected, 800, "each deleted row counted once");
    let want: Vec<String> = (0..3000u64)
        .filter(|k| !(k < &2400 && k % 3 == 0))
        .chain(100_000..100_080)
        .map(|k| k.to_string())
        .collect();
    let all = "select k from t order by k";
    assert_eq!(rows(&run(&optimizer, all).await), want);
    run(&optimizer, "optimize table t").await;
    assert_eq!(rows(&run(&deleter, all).await), want);

    run(&deleter, "set sieve.vacuum_retention_check = false").await;
    let vacuumed = rows(&run(&deleter, "vacuum table t retain 0 hours").await);
    let removed: u64 = vacuumed[0].split('|').next().unwrap().parse().unwrap();
    assert!(removed > 0, "the rewritten blocks are gone: {vacuumed:?}");
    assert_eq!(rows(&run(&appender, all).await), want);
    let lookup = run(&appender, "select k from t where k = 1001").await;
    assert_eq!(rows(&lookup), ["1001"]);
}
