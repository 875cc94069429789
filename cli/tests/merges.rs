//! A server killed with SIGKILL while it merges a commit's locator groups in the background
//! leaves the table as it was or as the merge committed it: every row there, and every lookup
//! answering as with pruning off.

mod common;

use std::time::{Duration, Instant};

use common::{Server, must, number, stderr};

/// Locator files in the storage directory, committed or not.
fn locator_files(storage: &str) -> usize {
    let tables = std::path::Path::new(storage).join("tables");
    std::fs::read_dir(tables)
        .unwrap()
        .map(|table| table.unwrap().path().join("locators"))
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .map(|files| files.count())
        .sum()
}

#[test]
fn a_merge_killed_with_sigkill_leaves_the_table_whole() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().to_str().unwrap();
    must(
        storage,
        "create table t (k bigint, s varchar) \
         with (block_rows = 1000, locator_group_rows = 1000, index_columns = 'k,s')",
    );
    let server = Server::start_on(storage, "");
    let insert = server.mysql(&[
        "-e",
        "insert into t select number, concat('v', cast((number * 7919) % 100003 as varchar)) \
         from numbers(64000)",
    ]);
    assert!(insert.status.success(), "{}", stderr(&insert));
    assert!(locator_files(storage) >= 64);
    // The merge uploads its group's file before it commits: kill the server once one is there.
    let deadline = Instant::now() + Duration::from_secs(120);
    while locator_files(storage) == 64 {
        assert!(Instant::now() < deadline, "no merge started");
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(server); // SIGKILL
    let groups = number(
        storage,
        "select groups from sieve_index_stats('t') where kind = 'locator' and column_name = 's'",
    );
    eprintln!("killed with {groups} locator groups committed (64 before the merge)");
    // 64 groups as written, or the merge's one commit: every run of sixteen merged, 4 groups.
    assert!(groups == 64 || groups == 4, "{groups} groups");
    assert_eq!(number(storage, "select count(*) from t"), 64000);
    for k in (0..64_000u64).step_by(997) {
        let s = (k * 7919) % 100_003;
        let lookup = format!("select k from t where s = 'v{s}' or s = 'v{s}x'");
        let unpruned = must(storage, &format!("set sieve.pruning = false; {lookup}"));
        let pruned = must(storage, &lookup);
        let rows = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|l| l.starts_with('|'))
                .map(|l| l.trim_matches(['|', ' ']).to_string())
                .filter(|cell| cell != "k")
                .collect()
        };
        assert_eq!(rows(&pruned), rows(&unpruned), "{lookup}");
        assert!(rows(&pruned).contains(&k.to_string()), "{lookup}: {pruned}");
    }
}
