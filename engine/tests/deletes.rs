//! DELETE differentially: random deletes interleaved with appends and OPTIMIZEs, every statement
//! replayed on an in-memory model of the table. After each one, the affected row count and the answers of scans
//! and point lookups (with pruning, with the locator off, with pruning off) must equal the
//! model's. Then the counts that do not depend on timing: blocks whose rows are all deleted are
//! not read.

mod common;

use common::{rows, run};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sieve_engine::{Engine, Session};

#[derive(Clone, Debug)]
struct Row {
    k: i64,
    v: String,
    n: Option<i32>,
}

impl Row {
    /// As the engine's rows print it (NULL as nothing).
    fn text(&self) -> String {
        let n = self.n.map_or(String::new(), |n| n.to_string());
        format!("{}|{}|{n}", self.k, self.v)
    }
}

/// A WHERE clause and what it means for one row (SQL's: NULL is not true).
struct Predicate {
    sql: String,
    holds: Box<dyn Fn(&Row) -> bool>,
}

fn predicate(rng: &mut StdRng) -> Predicate {
    let k = rng.random_range(0..400i64);
    let n = rng.random_range(0..100);
    let v = format!("v{}", rng.random_range(0..13));
    match rng.random_range(0..7) {
        0 => Predicate {
            sql: format!("k = {k}"),
            holds: Box::new(move |r| r.k == k),
        },
        1 => {
            let keys: Vec<i64> = (0..rng.random_range(1..20))
                .map(|_| rng.random_range(0..400))
                .collect();
            let list: Vec<String> = keys.iter().map(i64::to_string).collect();
            Predicate {
                sql: format!("k IN ({})", list.join(", ")),
                holds: Box::new(move |r| keys.contains(&r.k)),
            }
        }
        2 => Predicate {
            sql: format!("k BETWEEN {k} AND {}", k + 30),
            holds: Box::new(move |r| (k..=k + 30).contains(&r.k)),
        },
        3 => Predicate {
            sql: format!("v = '{v}'"),
            holds: Box::new(move |r| r.v == v),
        },
        4 => Predicate {
            sql: format!("n < {}", n / 4),
            holds: Box::new(move |r| r.n.is_some_and(|x| x < n / 4)),
        },
        5 => Predicate {
            sql: format!("k = {k} AND n > {n}"),
            holds: Box::new(move |r| r.k == k && r.n.is_some_and(|x| x > n)),
        },
        _ => Predicate {
            sql: "n IS NULL".into(),
            holds: Box::new(|r| r.n.is_none()),
        },
    }
}

fn random_rows(rng: &mut StdRng) -> Vec<Row> {
    (0..rng.random_range(1..150))
        .map(|_| {
            let k = rng.random_range(0..400i64);
            Row {
                k,
                v: format!("v{}", k % 13),
                n: (!rng.random_ratio(1, 10)).then(|| rng.random_range(0..100)),
            }
        })
        .collect()
}

fn values(rows: &[Row]) -> String {
    let tuples: Vec<String> = rows
        .iter()
        .map(|r| {
            let n = r.n.map_or("NULL".to_string(), |n| n.to_string());
            format!("({}, '{}', {n})", r.k, r.v)
        })
        .collect();
    tuples.join(", ")
}

/// The model's answer to `select * from t where <holds>`, sorted as the engine's is.
fn expected(model: &[Row], holds: impl Fn(&Row) -> bool) -> Vec<String> {
    let mut found: Vec<String> = model.iter().filter(|r| holds(r)).map(Row::text).collect();
    found.sort();
    found
}

async fn answers(session: &Session, sql: &str) -> Vec<String> {
    let mut found = rows(&run(session, sql).await);
    found.sort();
    found
}

async fn check(sessions: &[(&str, &Session)], model: &[Row], rng: &mut StdRng, step: usize) {
    let k = rng.random_range(0..400i64);
    let v = format!("v{}", rng.random_range(0..13));
    let queries: Vec<(String, Vec<String>)> = vec![
        ("select * from t".into(), expected(model, |_| true)),
        (
            format!("select * from t where k = {k}"),
            expected(model, |r| r.k == k),
        ),
        (
            format!("select * from t where k in ({k}, {})", k + 1),
            expected(model, |r| r.k == k || r.k == k + 1),
        ),
        (
            format!("select * from t where v = '{v}' allow filtering"),
            expected(model, |r| r.v == v),
        ),
        (
            "select count(*) from t".into(),
            vec![model.len().to_string()],
        ),
    ];
    for (sql, want) in &queries {
        for (name, session) in sessions {
            assert_eq!(
                &answers(session, sql).await,
                want,
                "step {step}: {sql} ({name}) differs from the model"
            );
        }
    }
}

async fn deletes_match_the_model(location: &str, seed: u64, filter: &str) {
    let engine = Engine::open(location).await.unwrap();
    let pruned = engine.session().unwrap();
    let sidecars_only = engine.session().unwrap();
    run(&sidecars_only, "set sieve.locator = false").await;
    let unpruned = engine.session().unwrap();
    run(&unpruned, "set sieve.pruning = false").await;
    let sessions = [
        ("pruning", &pruned),
        ("sidecars only", &sidecars_only),
        ("pruning off", &unpruned),
    ];
    run(
        &pruned,
        &format!("create table t (k bigint, v varchar, n int) with (block_rows = 50, filter = '{filter}')"),
    )
    .await;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut model: Vec<Row> = Vec::new();
    let (mut deleted, mut deletes, mut optimizes) = (0, 0, 0);
    for step in 0..80 {
        if model.is_empty() || rng.random_ratio(2, 5) {
            let rows = random_rows(&mut rng);
            run(&pruned, &format!("insert into t values {}", values(&rows))).await;
            model.extend(rows);
        } else if rng.random_ratio(1, 6) {
            // Moves rows, never changes them: the checks below hold as before.
            let session = sessions[rng.random_range(0..sessions.len())].1;
            run(session, "optimize table t").await;
            optimizes += 1;
        } else {
            let p = predicate(&mut rng);
            // One in 40 deletes has no WHERE clause.
            let (sql, all) = if rng.random_ratio(1, 40) {
                ("delete from t".to_string(), true)
            } else {
                (format!("delete from t where {}", p.sql), false)
            };
            let session = sessions[rng.random_range(0..sessions.len())].1;
            let affected = run(session, &sql).await.affected_rows;
            let before = model.len();
            model.retain(|r| !all && !(p.holds)(r));
            assert_eq!(
                affected,
                Some((before - model.len()) as u64),
                "step {step}: {sql}"
            );
            deleted += before - model.len();
            deletes += 1;
        }
        check(&sessions, &model, &mut rng, step).await;
    }
    assert!(deletes > 25, "only {deletes} deletes ran");
    assert!(optimizes > 3, "only {optimizes} OPTIMIZEs ran");
    assert!(deleted > 500, "only {deleted} rows were deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_match_the_model_on_memory() {
    deletes_match_the_model("memory://", 11, "binary_fuse8").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_match_the_model_on_local_files() {
    let dir = tempfile::tempdir().unwrap();
    deletes_match_the_model(dir.path().to_str().unwrap(), 12, "binary_fuse8").await;
}

/// Against MinIO: fails unless SIEVE_TEST_S3_URL (and the AWS_* variables) are set, as
/// scripts/test.sh sets them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_match_the_model_on_s3() {
    let base = common::s3_base();
    let prefix = format!("{base}/deletes-{:x}", rand::rng().random::<u64>());
    deletes_match_the_model(&prefix, 13, "cuckoo").await;
}

/// Cuckoo entries forget deleted keys: the model test again, where a lookup may now skip a
/// block because of a DELETE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_on_a_cuckoo_table_match_the_model() {
    deletes_match_the_model("memory://", 14, "cuckoo").await;
    deletes_match_the_model("memory://", 15, "cuckoo16").await;
}

/// Seed 000's point: once a key's last row in a block is deleted, a lookup of it reads no block,
/// with the locator (which still names the block) or without; a key with a row left in the
/// block is still found, and xor-family tables still read the block (they cannot forget).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_key_on_a_cuckoo_table_reads_no_block() {
    for (filter, forgets) in [
        ("cuckoo", true),
        ("cuckoo16", true),
        ("binary_fuse8", false),
    ] {
        let session = common::memory_session().await;
        run(
            &session,
            &format!(
                "create table t (k bigint, v varchar) with (block_rows = 1000, filter = '{filter}')"
            ),
        )
        .await;
        // 10 blocks; k = 7 twice in the first block (rows 7 and 999), every other key once.
        run(
            &session,
            "insert into t select case when number = 999 then 7 else cast(number as bigint) end, \
             case when number = 999 then 'again' else cast(number as varchar) end \
             from numbers(10000)",
        )
        .await;
        let deleted = run(
            &session,
            "delete from t where k in (5, 1500, 7) and v <> 'again'",
        )
        .await;
        assert_eq!(deleted.affected_rows, Some(3));
        for locator in ["true", "false"] {
            run(&session, &format!("set sieve.locator = {locator}")).await;
            for key in [5, 1500] {
                let lookup = run(&session, &format!("select * from t where k = {key}")).await;
                assert_eq!(lookup.row_count(), 0);
                let read = lookup.stats.blocks_read;
                assert_eq!(
                    read == 0,
                    forgets,
                    "{filter}, locator {locator}: k = {key} read {read} blocks"
                );
            }
            let string = run(&session, "select k from t where v = '1500'").await;
            assert_eq!(string.row_count(), 0);
            assert_eq!(
                string.stats.blocks_read == 0,
                forgets,
                "{filter}: v = '1500'"
            );
            let kept = run(&session, "select v from t where k = 7").await;
            assert_eq!(rows(&kept), ["again"], "{filter}, locator {locator}");
            let live = run(&session, "select v from t where k in (6, 1501)").await;
            assert_eq!(live.row_count(), 2);
        }
    }
}

/// Seed 003's lazy policy: a fuse entry cannot forget, so it keeps answering "maybe" for deleted
/// keys until a fifth of its keys are stale (the default `stale_rebuild_fraction`); then the
/// DELETE builds it again from the live keys and those lookups read no block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fuse_entry_is_rebuilt_once_enough_of_its_keys_are_stale() {
    let session = common::memory_session().await;
    run(
        &session,
        "create table t (k bigint) with (block_rows = 1000, locator = false)",
    )
    .await;
    run(&session, "insert into t select number from numbers(1000)").await;
    let blocks_read = |key: u64| {
        let session = &session;
        async move {
            let found = run(session, &format!("select k from t where k = {key}")).await;
            assert_eq!(found.row_count(), 0);
            found.stats.blocks_read
        }
    };
    // 10% stale: the entry is kept, a deleted key still reads the block.
    run(&session, "delete from t where k < 100").await;
    assert_eq!(blocks_read(50).await, 1);
    // 25% stale: rebuilt from the 750 live keys.
    run(&session, "delete from t where k >= 100 and k < 250").await;
    let still = [50, 150, 200, 249];
    let mut reads = 0;
    for key in still {
        reads += blocks_read(key).await;
    }
    assert_eq!(
        reads, 0,
        "a rebuilt entry holds only live keys (fuse8's 0.4% false positives aside)"
    );
    let live = run(&session, "select count(*) from t where k in (250, 999)").await;
    assert_eq!(rows(&live), ["2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_whose_rows_are_all_deleted_are_not_read() {
    let session = common::memory_session().await;
    run(&session, "create table t (k bigint) with (block_rows = 10)").await;
    run(&session, "insert into t select number from numbers(100)").await;
    let deleted = run(&session, "delete from t where k < 30").await;
    assert_eq!(deleted.affected_rows, Some(30));
    // count(k) reads the blocks (count(*) is answered from the block list, reading none).
    let all = run(&session, "select count(k) from t").await;
    assert_eq!(rows(&all), ["70"]);
    assert_eq!((all.stats.blocks_total, all.stats.blocks_read), (10, 7));
    assert_eq!(rows(&run(&session, "select count(*) from t").await), ["70"]);
    let plan = rows(&run(&session, "explain analyze select * from t").await).join("\n");
    assert!(plan.contains("3 fully deleted"), "{plan}");
    // A lookup of a deleted key finds nothing, and a key deleted twice is counted once.
    assert!(rows(&run(&session, "select * from t where k = 5").await).is_empty());
    let again = run(&session, "delete from t where k <= 30").await;
    assert_eq!(again.affected_rows, Some(1));
    assert_eq!(rows(&run(&session, "select min(k) from t").await), ["31"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_with_a_subquery_is_refused_and_deletes_nothing() {
    let session = common::memory_session().await;
    run(&session, "create table t (k bigint)").await;
    run(&session, "create table u (k bigint)").await;
    run(&session, "insert into t select number from numbers(10)").await;
    run(&session, "insert into u values (1)").await;
    for sql in [
        "delete from t where k in (select k from u)",
        "delete from t where exists (select 1 from u where u.k = t.k)",
        "delete from t where k = (select max(k) from u)",
    ] {
        let e = session.execute(sql).await.unwrap_err().to_string();
        assert!(e.contains("subquery"), "{sql}: {e}");
    }
    assert_eq!(rows(&run(&session, "select count(*) from t").await), ["10"]);
}

/// Three processes ([`common::three_processes`]): two deleters on overlapping rows and an
/// appender.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_deleters_never_count_a_row_twice_nor_lose_an_append() {
    let (_dir, [first, second, appender]) = common::three_processes().await;
    let (mut affected, mut appended) = (0, 0);
    for round in 0..10 {
        let (a, append) = common::race_round(round, 2);
        let (b, _) = common::race_round(round, 3);
        let (a, b, c) = tokio::join!(
            first.execute(&a),
            second.execute(&b),
            appender.execute(&append)
        );
        affected += a.unwrap().affected_rows.unwrap() + b.unwrap().affected_rows.unwrap();
        appended += c.unwrap().affected_rows.unwrap();
    }
    // Of 0..3000, 1500 are even and 1000 multiples of 3, 500 of them both.
    assert_eq!(
        affected, 2000,
        "a row was deleted by both statements, or by neither"
    );
    assert_eq!(appended, 100);
    let left = run(&first, "select count(*) from t where k < 3000").await;
    assert_eq!(rows(&left), ["1000"]);
    let chosen = "select count(*) from t where k < 3000 and (k % 2 = 0 or k % 3 = 0)";
    assert_eq!(rows(&run(&second, chosen).await), ["0"]);
    assert_eq!(
        rows(&run(&second, "select count(*) from t where k >= 100000").await),
        ["100"]
    );
}
