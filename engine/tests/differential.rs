//! Differential test of every pruning path: random data of several types, random `=`, `IN`, `OR`
//! and `AND` queries (including literals of other types than the column), each run with pruning on
//! (locators, then sidecars), with the locator off (sidecars only) and with pruning off; the
//! results must be equal. A filter or a locator must never cause a missing row.

mod common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sieve_engine::{Engine, QueryOutput, Session};

const ROWS: usize = 600;

/// Sorted rows as text, so results compare regardless of order.
fn rows(output: &QueryOutput) -> Vec<String> {
    let mut rows = common::rows(output);
    rows.sort();
    rows
}

fn int_literal(rng: &mut StdRng) -> i64 {
    rng.random_range(-40..40)
}

fn text_literal(rng: &mut StdRng) -> String {
    format!("'k{}'", rng.random_range(0..120))
}

/// A random literal for `column`, sometimes of another type than the column's.
fn literal(rng: &mut StdRng, column: &str) -> String {
    match column {
        "i32" | "i64" => match rng.random_range(0..6) {
            0 => format!("'{}'", int_literal(rng)),
            1 => format!("{}.0", int_literal(rng)),
            2 => format!("{}.5", int_literal(rng)),
            _ => int_literal(rng).to_string(),
        },
        "u64" => match rng.random_range(0..5) {
            0 => format!("{}.0", rng.random_range(0..200)),
            1 => "-1".into(),
            _ => rng.random_range(0..200).to_string(),
        },
        "s" if rng.random_ratio(1, 6) => rng.random_range(0..50).to_string(),
        other => value(rng, other, 0),
    }
}

/// A stored value of `column` for row `row`: small domains, so queries find rows and blocks
/// share values.
fn value(rng: &mut StdRng, column: &str, row: usize) -> String {
    match column {
        "i32" => int_literal(rng).to_string(),
        "i64" => (row as i64 - 300).to_string(),
        "u64" => rng.random_range(0..200).to_string(),
        "f64" => format!("{}", rng.random_range(-20..20) as f64 / 4.0),
        "s" => text_literal(rng),
        "d" => format!("DATE '2024-01-{:02}'", rng.random_range(1..29)),
        "b" => if rng.random_bool(0.5) {
            "true"
        } else {
            "false"
        }
        .into(),
        "dec" => format!(
            "{}.{:02}",
            rng.random_range(0..30),
            [0, 25, 50][rng.random_range(0..3)]
        ),
        other => unreachable!("{other}"),
    }
}

const COLUMNS: [&str; 8] = ["i32", "i64", "u64", "f64", "s", "d", "b", "dec"];

fn condition(rng: &mut StdRng) -> String {
    let column = COLUMNS[rng.random_range(0..COLUMNS.len())];
    match rng.random_range(0..4) {
        0 => format!("{column} = {}", literal(rng, column)),
        1 => {
            let n = rng.random_range(1..40);
            let list: Vec<String> = (0..n).map(|_| literal(rng, column)).collect();
            format!("{column} IN ({})", list.join(", "))
        }
        2 => format!(
            "({column} = {} OR {column} = {})",
            literal(rng, column),
            literal(rng, column)
        ),
        _ => format!(
            "{column} IS NOT NULL AND {column} = {}",
            literal(rng, column)
        ),
    }
}

fn query(rng: &mut StdRng) -> String {
    let predicate = match rng.random_range(0..4) {
        0 => format!("{} AND {}", condition(rng), condition(rng)),
        1 => format!("{} OR {}", condition(rng), condition(rng)),
        _ => condition(rng),
    };
    format!("select * from t where {predicate}")
}

async fn load(session: &Session, rng: &mut StdRng) {
    session
        .execute(
            "create table t (i32 int, i64 bigint, u64 bigint unsigned, f64 double, s varchar, d date, b boolean, dec decimal(12, 2)) with (block_rows = 40)",
        )
        .await
        .unwrap();
    for chunk in 0..ROWS / 100 {
        let values: Vec<String> = (0..100)
            .map(|i| {
                let row = chunk * 100 + i;
                let cells: Vec<String> = COLUMNS
                    .iter()
                    .map(|c| {
                        let v = value(rng, c, row);
                        if rng.random_ratio(1, 12) {
                            "NULL".into()
                        } else {
                            v
                        }
                    })
                    .collect();
                format!("({})", cells.join(", "))
            })
            .collect();
        session
            .execute(&format!("insert into t values {}", values.join(", ")))
            .await
            .unwrap();
    }
}

async fn differential(location: &str, seed: u64) {
    let engine = Engine::open(location).await.unwrap();
    let pruned = engine.session().unwrap();
    let unpruned = engine.session().unwrap();
    unpruned.execute("set sieve.pruning = false").await.unwrap();
    let sidecars_only = engine.session().unwrap();
    sidecars_only
        .execute("set sieve.locator = false")
        .await
        .unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    load(&pruned, &mut rng).await;

    let (mut queries, mut pruned_some, mut matched_some, mut refused) = (0, 0, 0, 0);
    for _ in 0..200 {
        let sql = query(&mut rng);
        let mut with = pruned.execute(&sql).await;
        // The full-scan guard may refuse a filter that skips no block; with ALLOW FILTERING the
        // same query must then indeed have skipped none.
        if let Err(e) = &with
            && e.to_string().contains("refusing to read all")
        {
            let allowed = pruned.execute(&format!("{sql} allow filtering")).await;
            if let Ok(allowed) = &allowed {
                assert_eq!(
                    allowed.stats.blocks_read, allowed.stats.blocks_total,
                    "{sql}: {e}"
                );
            }
            refused += 1;
            with = allowed;
        }
        let without = unpruned.execute(&sql).await;
        let by_sidecars = sidecars_only
            .execute(&format!("{sql} allow filtering"))
            .await;
        match (with, without) {
            (Ok(with), Ok(without)) => {
                assert_eq!(
                    rows(&with),
                    rows(&without),
                    "pruning changed the result of {sql}"
                );
                assert_eq!(
                    rows(&by_sidecars.unwrap()),
                    rows(&without),
                    "pruning without the locator changed the result of {sql}"
                );
                assert_eq!(without.stats.blocks_read, without.stats.blocks_total);
                queries += 1;
                pruned_some += usize::from(with.stats.blocks_read < with.stats.blocks_total);
                matched_some += usize::from(with.row_count() > 0);
            }
            // e.g. comparing a text column with an integer: a cast error either way (the failing
            // row, and so the message, may differ).
            (Err(_), Err(_)) => {}
            (a, b) => panic!("{sql}: pruned {:?} vs unpruned {:?}", a.err(), b.err()),
        }
    }
    assert!(queries > 120, "only {queries} queries ran");
    assert!(
        refused > 0,
        "the full-scan guard refused none of {queries} queries"
    );
    assert!(
        pruned_some > queries / 3,
        "pruning skipped blocks in only {pruned_some} of {queries} queries"
    );
    assert!(
        matched_some > queries / 4,
        "only {matched_some} of {queries} queries found rows"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruned_equals_unpruned_on_memory() {
    differential("memory://", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruned_equals_unpruned_on_local_files() {
    let dir = tempfile::tempdir().unwrap();
    differential(dir.path().to_str().unwrap(), 2).await;
}

/// Against MinIO: fails unless SIEVE_TEST_S3_URL (and the AWS_* variables) are set, as
/// scripts/test.sh sets them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruned_equals_unpruned_on_s3() {
    let base = common::s3_base();
    differential(&format!("{base}/differential-{}", uuid_like()), 3).await;
}

fn uuid_like() -> String {
    format!("{:x}", rand::rng().random::<u64>())
}
