//! The point-query scale benchmark: loads Databend's `t10b` (default 10M rows) with its CTAS
//! verbatim, then times point queries on c2 for present and absent keys: pruning on with a warm
//! cache, pruning on with a cold cache (a fresh engine per query: catalog, snapshot, segment,
//! sidecar and data all fetched again), and pruning off in the same run as the baseline.
//!
//! `bash scripts/bench-point.sh` runs it against a fresh MinIO; SIEVE_BENCH_URL (default: a temp
//! directory) and SIEVE_BENCH_ROWS (default 10,000,000) choose the storage and size. Under
//! `cargo test` it runs a 20k-row smoke version in a temp directory.

use std::time::{Duration, Instant};

use datafusion::arrow::util::display::array_value_to_string;
use sieve_engine::{Engine, QueryOutput, Session};

const QUERIES: usize = 25;

struct Measured {
    latencies: Vec<Duration>,
    blocks_read: Vec<u64>,
    rows: usize,
}

fn median<T: Copy + Ord>(values: &[T]) -> T {
    let mut v = values.to_vec();
    v.sort();
    v[v.len() / 2]
}

fn p95<T: Copy + Ord>(values: &[T]) -> T {
    let mut v = values.to_vec();
    v.sort();
    v[(v.len() * 95 / 100).min(v.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

async fn run(session: &Session, sql: &str) -> QueryOutput {
    session
        .execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

async fn measure(keys: &[String], mut session_for: impl AsyncFnMut() -> Session) -> Measured {
    let mut m = Measured {
        latencies: Vec::new(),
        blocks_read: Vec::new(),
        rows: 0,
    };
    for key in keys {
        let session = session_for().await;
        let sql = format!("select c1, c2 from t10b where c2 = '{key}'");
        let start = Instant::now();
        let out = run(&session, &sql).await;
        m.latencies.push(start.elapsed());
        m.blocks_read.push(out.stats.blocks_read);
        m.rows += out.row_count();
    }
    m
}

#[tokio::main]
async fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let rows: u64 = match std::env::var("SIEVE_BENCH_ROWS") {
        Ok(v) => v.parse().expect("SIEVE_BENCH_ROWS is a number"),
        Err(_) if bench => 10_000_000,
        Err(_) => 20_000,
    };
    let dir = tempfile::tempdir().expect("temp dir");
    // Not memory://: a cold engine must find the same data through storage.
    let url = std::env::var("SIEVE_BENCH_URL")
        .unwrap_or_else(|_| dir.path().to_str().expect("utf-8 path").to_string());
    let block_rows = if bench { 1_000_000 } else { 5_000 };
    let engine = Engine::open(&url).await.expect("storage opens");
    let session = engine.session().expect("session");

    let start = Instant::now();
    run(&session, "drop table if exists t10b").await;
    let sql = format!(
        "create table t10b with (block_rows = {block_rows}) as select number as c1, cast(rand() as string) as c2 from numbers({rows})"
    );
    run(&session, &sql).await;
    let load = start.elapsed();
    let sizes = run(&session, "select count(*) from t10b").await;
    assert_eq!(
        array_value_to_string(sizes.batches[0].column(0), 0).unwrap(),
        rows.to_string()
    );

    // Present keys spread over the table; absent keys shaped like the values (within every
    // block's min/max, so only the filters can rule them out), with 1e-17-odd odds of a clash.
    let step = rows / QUERIES as u64;
    let ids: Vec<String> = (0..QUERIES as u64)
        .map(|i| (i * step + step / 2).to_string())
        .collect();
    let picked = run(
        &session,
        &format!("select c2 from t10b where c1 in ({})", ids.join(",")),
    )
    .await;
    let mut present = Vec::new();
    for batch in &picked.batches {
        for r in 0..batch.num_rows() {
            present.push(array_value_to_string(batch.column(0), r).unwrap());
        }
    }
    assert_eq!(present.len(), QUERIES);
    let absent: Vec<String> = (0..QUERIES)
        .map(|i| format!("0.{:02}12345678901234567", i * 4))
        .collect();

    // Fill the warm cache once.
    measure(&present, async || engine.session().expect("session")).await;

    let mut table = Vec::new();
    for (name, keys) in [("present", &present), ("absent", &absent)] {
        let warm = measure(keys, async || engine.session().expect("session")).await;
        let cold = measure(keys, async || {
            Engine::open(&url)
                .await
                .expect("storage opens")
                .session()
                .expect("session")
        })
        .await;
        let off = measure(keys, async || {
            let s = engine.session().expect("session");
            run(&s, "set sieve.pruning = false").await;
            s
        })
        .await;
        let expected_rows = if name == "present" { keys.len() } else { 0 };
        for (mode, m) in [
            ("on, warm cache", &warm),
            ("on, cold cache", &cold),
            ("off (baseline)", &off),
        ] {
            assert_eq!(m.rows, expected_rows, "{name} keys, pruning {mode}");
            table.push((
                name,
                mode,
                median(&m.blocks_read),
                median(&m.latencies),
                p95(&m.latencies),
            ));
        }
        println!(
            "{name} keys: pruned+warm median is {:.1}x faster than unpruned in the same run",
            median(&off.latencies).as_secs_f64() / median(&warm.latencies).as_secs_f64()
        );
    }
    println!(
        "\nt10b: {rows} rows in blocks of {block_rows} on {url}; CTAS took {:.1} s ({:.0} rows/s)",
        load.as_secs_f64(),
        rows as f64 / load.as_secs_f64()
    );
    println!(
        "\n| keys | pruning | blocks read (median) | latency median | p95 |\n|---|---|---|---|---|"
    );
    for (keys, mode, blocks, med, p) in table {
        println!("| {keys} | {mode} | {blocks} | {} | {} |", ms(med), ms(p));
    }
}
