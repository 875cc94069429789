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

mod common;

use std::path::{Path, PathBuf};

use common::{rows, run};
use sieve_engine::Engine;
use sieve_index::Sidecar;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-v1")
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
    let dir = tempfile::tempdir().unwrap();
    let from = fixture();
    for file in files(&from) {
        let to = dir.path().join(file.strip_prefix(&from).unwrap());
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
