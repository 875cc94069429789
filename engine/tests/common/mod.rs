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
