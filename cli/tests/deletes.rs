//! DELETE across processes: a `sieve sql` killed with SIGKILL mid-DELETE leaves the table as it
//! was or as the whole statement left it, and a deleting process racing an appending one loses
//! no append and deletes every row it chose.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{must, number, sieve, stderr, stdout};

fn count(storage: &str, filter: &str) -> u64 {
    number(
        storage,
        &format!("select count(*) from t {filter} allow filtering"),
    )
}

#[test]
fn a_delete_killed_with_sigkill_leaves_the_table_as_it_was_or_as_it_finished() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().to_str().unwrap();
    must(
        storage,
        "create table t (k bigint, v varchar) with (block_rows = 100000)",
    );
    must(
        storage,
        "insert into t select number, cast(number * 7 as varchar) from numbers(3000000)",
    );
    let mut total = 3_000_000;
    let (mut killed_before, mut finished) = (0, 0);
    for (round, delay_ms) in [20u64, 100, 200, 400, 5000].into_iter().enumerate() {
        let modulus = [3, 5, 7, 11, 13][round];
        let doomed = count(storage, &format!("where k % {modulus} = 0"));
        let mut child = sieve()
            .args([
                "--storage",
                storage,
                "sql",
                "-e",
                &format!("delete from t where k % {modulus} = 0"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        child.wait().unwrap();
        let left = count(storage, "");
        if left == total {
            killed_before += 1;
        } else {
            assert_eq!(
                left,
                total - doomed,
                "round {round}: a partial DELETE is visible"
            );
            finished += 1;
        }
        // Run to completion, the same DELETE removes exactly what the killed one did not.
        let again = must(storage, &format!("delete from t where k % {modulus} = 0"));
        let rest = if left == total { doomed } else { 0 };
        assert!(
            again.contains(&format!("Query OK, {rest} row")),
            "round {round}: {again}"
        );
        total -= doomed;
        assert_eq!(count(storage, ""), total);
    }
    assert!(killed_before > 0, "no DELETE was killed before its commit");
    assert!(finished > 0, "no DELETE finished before its kill");
}

#[test]
fn a_deleting_process_and_an_appending_process_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().to_str().unwrap();
    must(storage, "create table t (k bigint) with (block_rows = 500)");
    must(storage, "insert into t select number from numbers(10000)");
    let deletes: String = (0..20)
        .map(|i| {
            format!(
                "delete from t where k >= {} and k < {};\n",
                i * 500,
                i * 500 + 250
            )
        })
        .collect();
    let appends: String = (0..20)
        .map(|i| {
            format!(
                "insert into t select number + {} from numbers(50);\n",
                100_000 + i * 50
            )
        })
        .collect();
    let spawn = |script: String| {
        let mut child = sieve()
            .args(["--storage", storage, "sql"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            use std::io::Write;
            stdin.write_all(script.as_bytes()).unwrap();
        });
        child
    };
    let (deleter, appender) = (spawn(deletes), spawn(appends));
    let (deleted, appended) = (
        deleter.wait_with_output().unwrap(),
        appender.wait_with_output().unwrap(),
    );
    assert!(deleted.status.success(), "{}", stderr(&deleted));
    assert!(appended.status.success(), "{}", stderr(&appended));
    let report = stdout(&deleted);
    let affected: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("Query OK"))
        .map(|l| l.split([',', '(']).nth(1).unwrap().trim())
        .collect();
    assert_eq!(affected, vec!["250 rows affected"; 20]);
    assert_eq!(count(storage, "where k < 10000"), 5000);
    assert_eq!(count(storage, "where k >= 100000"), 1000);
    assert_eq!(count(storage, "where k < 10000 and k % 500 < 250"), 0);
}
