//! What the engine's test files share: sessions, running a statement, rows as text.

#![allow(dead_code)] // each test file uses its own part of the helpers

pub mod request_log;

use datafusion::arrow::util::display::array_value_to_string;
use sieve_engine::{Engine, QueryOutput, Session};

pub async fn memory_session() -> Session {
    Engine::open("memory://").await.unwrap().session().unwrap()
}

/// Runs a statement that must succeed.
pub async fn run(session: &Session, sql: &str) -> QueryOutput {
    session
        .execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Each row as its cells joined by `|`, in result order.
pub fn rows(output: &QueryOutput) -> Vec<String> {
    let mut rows = Vec::new();
    for batch in &output.batches {
        for r in 0..batch.num_rows() {
            let cells: Vec<String> = batch
                .columns()
                .iter()
                .map(|c| array_value_to_string(c, r).unwrap())
                .collect();
            rows.push(cells.join("|"));
        }
    }
    rows
}

/// Every file under `dir`, sorted.
pub fn files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Three engines on one directory, standing for three processes: each has its own caches and
/// learns of the others' commits only from storage. Table `t (k bigint)`, 100-row blocks, holds
/// 0..3000.
pub async fn three_processes() -> (tempfile::TempDir, [Session; 3]) {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_string();
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(Engine::open(&location).await.unwrap().session().unwrap());
    }
    run(
        &sessions[0],
        "create table t (k bigint) with (block_rows = 100)",
    )
    .await;
    run(
        &sessions[0],
        "insert into t select number from numbers(3000)",
    )
    .await;
    (dir, sessions.try_into().unwrap_or_else(|_| unreachable!()))
}

/// Round `round` of a race on [`three_processes`]' table: a DELETE of the multiples of
/// `modulus` among the round's 300 keys, and an append of 10 new keys from 100,000 up.
pub fn race_round(round: u64, modulus: u64) -> (String, String) {
    let lo = round * 300;
    let delete = format!(
        "delete from t where k >= {lo} and k < {} and k % {modulus} = 0",
        lo + 300
    );
    let append = format!(
        "insert into t select number + {} from numbers(10)",
        100_000 + round * 10
    );
    (delete, append)
}

/// The MinIO bucket URL the S3 tests write under. A test that needs it fails without it, saying
/// so, rather than passing without having run.
pub fn s3_base() -> String {
    std::env::var("SIEVE_TEST_S3_URL")
        .expect("SIEVE_TEST_S3_URL is not set: this test needs MinIO; run scripts/test.sh")
}
