//! VACUUM removes what a failed write left behind and nothing a version may still be read by:
//! every answer is the same after it, including a query's that was running while it ran.

mod common;

use common::{files, rows, run};
use sieve_engine::Engine;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vacuum_removes_a_failed_writes_files_and_nothing_a_query_reads() {
    let dir = tempfile::tempdir().unwrap();
    let session = Engine::open(dir.path().to_str().unwrap())
        .await
        .unwrap()
        .session()
        .unwrap();
    run(
        &session,
        "create table t (k bigint, v bigint) with (block_rows = 1000)",
    )
    .await;
    run(
        &session,
        "insert into t select number, number * 3 from numbers(20000)",
    )
    .await;
    run(&session, "delete from t where k % 10 = 0").await;
    let committed = files(dir.path());
    // A write that fails after uploading blocks: they are in no version.
    let failed = session
        .execute("insert into t select number, 10 / (number - 15000) from numbers(20000)")
        .await;
    let error = failed.expect_err("the insert divides by zero").to_string();
    assert!(error.contains("Divide by zero"), "{error}");
    // The failed insert waited for its uploads in flight: what it left is all there, none of
    // it half written (local files are written under a temporary name, then renamed).
    let after_failure = files(dir.path());
    assert!(
        !after_failure
            .iter()
            .any(|f| f.to_string_lossy().contains('#')),
        "{after_failure:?}"
    );
    let orphans: Vec<_> = after_failure
        .iter()
        .filter(|f| !committed.contains(f))
        .collect();
    assert!(
        orphans
            .iter()
            .any(|f| f.to_string_lossy().ends_with(".parquet")),
        "the failed insert uploaded no block: {orphans:?}"
    );
    let queries = [
        "select count(*), sum(v) from t",
        "select * from t where k = 4321",
        "select * from t where k = 4320",
    ];
    let mut answers = Vec::new();
    for q in queries {
        answers.push(rows(&run(&session, q).await));
    }

    // The default retention (a week) keeps files this fresh, and under an hour is refused.
    let kept = run(&session, "vacuum table t").await;
    assert_eq!(rows(&kept), ["0|0|2"]);
    let refused = session
        .execute("vacuum t retain 0 hours")
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("sieve.vacuum_retention_check"),
        "{refused}"
    );
    assert_eq!(files(dir.path()), after_failure);

    // A query that has started reading keeps reading while VACUUM runs.
    let mut running = session.query("select k from t").await.unwrap();
    let first = running.next().await.unwrap().unwrap();
    run(&session, "set sieve.vacuum_retention_check = false").await;
    let vacuumed = run(&session, "vacuum table default.t retain 0 hours").await;
    let removed = rows(&vacuumed)[0]
        .split('|')
        .next()
        .unwrap()
        .parse::<usize>();
    assert_eq!(removed.unwrap(), orphans.len(), "{:?}", rows(&vacuumed));
    let mut read = first.num_rows();
    while let Some(batch) = running.next().await {
        read += batch.unwrap().num_rows();
    }
    assert_eq!(read, 18000);
    assert_eq!(files(dir.path()), committed);
    for (q, answer) in queries.iter().zip(&answers) {
        assert_eq!(&rows(&run(&session, q).await), answer, "{q}");
    }
    // Nothing left to remove.
    let again = run(&session, "vacuum t retain 0 hours").await;
    assert!(rows(&again)[0].starts_with("0|0|"), "{:?}", rows(&again));
    let e = session
        .execute("vacuum t retain two hours")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("VACUUM syntax"), "{e}");
    let e = session.execute("vacuum no_such_table").await.unwrap_err();
    assert!(e.to_string().contains("no_such_table"), "{e}");
}
