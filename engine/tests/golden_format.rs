//! Storage written by this format's first release, checked in under `tests/fixtures/format-v1`
//! (`docs/format.md` describes it): table `t` (12 rows in 4 blocks over two commits, exact
//! sidecar entries) and table `f` (2,000 rows in 2 blocks, binary_fuse8 sidecars). A change to
//! any on-disk format that would stop this build reading them, or change what it reads, fails
//! here first.
//!
//! Made with `sieve sql --storage DIR -e "create table t with (block_rows = 4) as select number
//! as c1, cast(number * 7 as string) as c2 from numbers(10); insert into t values (10, '70'),
//! (11, '77'); create table f with (block_rows = 1000) as select number as c1, cast(number * 7 as
//! string) as c2 from numbers(2000)"`.
//!
//! `tests/fixtures/slices-8192` holds locators of 8192-row slices and page tables of version 1,
//! as Sieve wrote them before 4096-row slices and page checksums (6ab3b89): table `s`, made with
//! `sieve sql --storage DIR -e "create table s with (block_rows = 12000, locator_group_rows =
//! 12000) as select number as c1, cast((47999 - number) * 7 as string) as c2, cast(number % 5000
//! as string) as c3 from numbers(48000)"`: four blocks of 12,000 rows, a group each; c1 is the
//! row's position, c2 unique and never ascending (so every group locates it), c3 repeated.

mod common;

use std::path::{Path, PathBuf};

use common::{rows, run};
use sieve_engine::Engine;
use sieve_index::Sidecar;

fn fixture() -> PathBuf {
    fixture_named("format-v1")
}

fn fixture_named(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// A copy of the fixture, so that nothing a query does can change the checked-in files.
fn copy() -> tempfile::TempDir {
    copy_of(&fixture())
}

fn copy_of(from: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in files(from) {
        let to = dir.path().join(file.strip_prefix(from).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&file, to).unwrap();
    }
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn format_v1_tables_read_the_same_with_pruning_on_and_off() {
    let dir = copy();
    let s = Engine::open(dir.path().to_str().unwrap())
        .await
        .unwrap()
        .session()
        .unwrap();
    assert_eq!(rows(&run(&s, "show tables").await), ["f", "t"]);
    for pruning in ["true", "false"] {
        run(&s, &format!("set sieve.pruning = {pruning}")).await;
        let whole = run(&s, "select count(*), sum(c1), min(c2), max(c2) from t").await;
        assert_eq!(rows(&whole), ["12|66|0|77"]);
        let point = run(&s, "select c1 from t where c2 = '49'").await;
        assert_eq!(rows(&point), ["7"]);
        let point = run(&s, "select c2 from f where c1 = 1234").await;
        assert_eq!(rows(&point), ["8638"]);
        let filtered = run(&s, "select c1 from f where c2 = '13986'").await;
        assert_eq!(rows(&filtered), ["1998"]);
        let (read, total) = (filtered.stats.blocks_read, filtered.stats.blocks_total);
        match pruning {
            "true" => assert_eq!((read, total), (1, 2), "the binary_fuse8 sidecars prune"),
            _ => assert_eq!((read, total), (2, 2)),
        }
        let absent = run(&s, "select c1 from t where c2 = 'absent'").await;
        assert_eq!((absent.row_count(), absent.stats.blocks_total), (0, 4));
    }
}

#[test]
fn format_v1_sidecars_open() {
    let sidecars: Vec<PathBuf> = files(&fixture())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sidecar"))
        .collect();
    assert_eq!(sidecars.len(), 6);
    for path in sidecars {
        let sidecar = Sidecar::open(std::fs::read(&path).unwrap().into()).unwrap();
        let names: Vec<&str> = sidecar
            .columns()
            .iter()
            .map(|c| c.column.as_str())
            .collect();
        assert_eq!(names, ["c1", "c2"], "{}", path.display());
    }
}

/// Lookups of `s`'s first `upto` rows at the ends of 8192- and 4096-row slices, by unique
/// keys (`c2`) and keys repeated across slices and blocks (`c3`), with pruning on and off: the
/// same rows, and with pruning a unique key's lookup reads one block, through a locator.
/// Returns the rows with pruning on.
async fn lookups_agree(s: &sieve_engine::Session, upto: u64) -> Vec<String> {
    // Row n's c2: the fixture's rows, then those `groups_of_8192…` appends.
    let c2 = |n: u64| if n < 48_000 { 47_999 - n } else { 239_999 - n } * 7;
    let mut queries = Vec::new();
    for n in [
        0, 1, 4095, 4096, 8191, 8192, 8193, 11_999, 12_000, 20_191, 20_192, 47_999,
    ] {
        for n in [n, n + 48_000, n + 144_000]
            .into_iter()
            .filter(|&n| n < upto)
        {
            queries.push((format!("select c1 from s where c2 = '{}'", c2(n)), Some(n)));
        }
    }
    for k in ["0", "191", "3192", "4096", "4999", "absent"] {
        let sql = format!("select count(*), min(c1), max(c1) from s where c3 = '{k}'");
        queries.push((sql, None));
    }
    let both = "select c1 from s where c2 in ('56', '57344', '335993', '1679993') order by c1";
    queries.push((both.to_string(), None));
    let mut found = Vec::new();
    for (sql, unique) in queries {
        run(s, "set sieve.pruning = false").await;
        let unpruned = rows(&run(s, &sql).await);
        run(s, "set sieve.pruning = true").await;
        let pruned = run(s, &sql).await;
        assert_eq!(rows(&pruned), unpruned, "{sql}");
        if let Some(n) = unique {
            assert_eq!(rows(&pruned), [n.to_string()], "{sql}");
            assert_eq!(pruned.stats.blocks_read, 1, "{sql}");
            assert!(pruned.stats.locator_groups_probed >= 1, "{sql}");
        }
        found.extend(rows(&pruned));
    }
    found
}

/// Groups of 8192-row slices are read as written, beside groups of 4096-row slices appended
/// now, and a merge of both kinds (into 4096-row slices) finds every key where it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_of_8192_row_slices_read_and_merge_with_new_ones() {
    let from = fixture_named("slices-8192");
    let old_headers: Vec<_> = files(&from)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "loc"))
        .map(|p| sieve_index::LocatorHeader::parse(&std::fs::read(&p).unwrap()).unwrap())
        .collect();
    assert_eq!(old_headers.len(), 4);
    assert!(old_headers.iter().all(|h| h.slice_rows == 8192));
    assert_ne!(sieve_index::locator::SLICE_ROWS, 8192);

    let dir = copy_of(&from);
    let s = Engine::open(dir.path().to_str().unwrap())
        .await
        .unwrap()
        .session()
        .unwrap();
    run(&s, "set sieve.routing = false").await;
    run(&s, "set sieve.merge_on_commit = false").await;
    // Every lookup probes the locators, none answers from kept results.
    run(&s, "set sieve.lookup_cache = false").await;
    let before = lookups_agree(&s, 48_000).await;

    // Twelve groups of this build's slices: sixteen of one tier, which OPTIMIZE merges. c2
    // descends, so every group locates it (a group whose column ascends leaves it to min/max).
    run(&s, "insert into s select number + 48000, cast((191999 - number) * 7 as string), cast(number % 5000 as string) from numbers(144000)").await;
    let appended = lookups_agree(&s, 192_000).await;
    assert_ne!(before, appended);
    let groups = |sql: &str| {
        let sql = sql.to_string();
        let s = &s;
        async move { run(s, &sql).await.stats.locator_groups_probed }
    };
    let absent = "select c1 from s where c3 = '00'";
    assert_eq!(groups(absent).await, 16);
    run(&s, "optimize table s").await;
    assert_eq!(groups(absent).await, 1);
    assert_eq!(lookups_agree(&s, 192_000).await, appended);
}
