//! Damage on disk is noticed: a seeded fuzz flips bits in each kind of stored object (catalog
//! entries, snapshots, the pointers, segments, Parquet blocks, sidecars, locators) and checks that
//! every query then either fails or returns exactly the undamaged answer. A sidecar's damage may
//! only cost pruning (the block is read); every other object's must be caught by a checksum.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sieve_engine::Engine;

const QUERIES: &[&str] = &[
    "select count(*), sum(c1), min(c2), max(c2) from t",
    "select c1, c2 from t where c1 = 4321",
    "select c1 from t where c2 = 'v1234'",
    "select count(*) from t where c1 between 2000 and 2999",
    "select c2 from t where c1 in (7, 3999, 5999) order by c2",
];

mod common;

/// Each query's answer, or its error.
async fn answers(dir: &Path) -> Vec<Result<Vec<String>, String>> {
    let engine = match Engine::open(dir.to_str().unwrap()).await {
        Ok(engine) => engine,
        Err(e) => return vec![Err(e.to_string()); QUERIES.len()],
    };
    let session = engine.session().unwrap();
    let mut out = Vec::new();
    for sql in QUERIES {
        out.push(
            session
                .execute(sql)
                .await
                .map(|o| common::rows(&o))
                .map_err(|e| e.to_string()),
        );
    }
    out
}

/// What kind of object a stored file is.
fn kind(path: &Path) -> &'static str {
    let name = path.to_string_lossy();
    match () {
        _ if name.ends_with("database.json") => "database marker",
        _ if name.contains("/pointers/") => "named pointer",
        _ if name.contains("/catalog/") => "table definition",
        _ if name.ends_with("latest.json") => "latest pointer",
        _ if name.contains("/snapshots/") => "snapshot",
        _ if name.ends_with(".arrow") => "segment",
        _ if name.ends_with(".parquet") => "block",
        _ if name.ends_with(".sidecar") => "sidecar",
        _ if name.ends_with(".loc") => "locator",
        _ => panic!("unexpected file {name}"),
    }
}

async fn table(dir: &Path) {
    let engine = Engine::open(dir.to_str().unwrap()).await.unwrap();
    let s = engine.session().unwrap();
    s.execute(
        "create table t (c1 bigint unsigned, c2 varchar) with (index_columns = 'c1,c2', block_rows = 1000)",
    )
    .await
    .unwrap();
    for part in 0..3 {
        let (from, to) = (part * 2000, part * 2000 + 2000);
        s.execute(&format!(
            "insert into t select number as c1, concat('v', cast(number as varchar)) as c2 \
             from numbers({to}) where number >= {from}"
        ))
        .await
        .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flipped_bits_in_any_object_give_an_error_or_the_right_answer() {
    let dir = tempfile::tempdir().unwrap();
    table(dir.path()).await;
    let truth = answers(dir.path()).await;
    for answer in &truth {
        assert!(answer.is_ok(), "{answer:?}");
    }
    let mut by_kind: BTreeMap<&str, Vec<PathBuf>> = BTreeMap::new();
    for path in common::files(dir.path()) {
        by_kind.entry(kind(&path)).or_default().push(path);
    }
    // Queries read only the newest snapshot; older ones are history.
    let mut snapshots = by_kind.remove("snapshot").unwrap();
    by_kind.insert("snapshot", vec![snapshots.pop().unwrap()]);
    by_kind.insert("older snapshot", snapshots);
    assert_eq!(by_kind.len(), 10, "{:?}", by_kind.keys());

    let mut rng = StdRng::seed_from_u64(0x51e7e);
    let mut caught: BTreeMap<&str, usize> = BTreeMap::new();
    for (kind, paths) in &by_kind {
        for trial in 0..24 {
            let path = &paths[rng.random_range(0..paths.len())];
            let original = std::fs::read(path).unwrap();
            let mut damaged = original.clone();
            // Single bits, and now and then a burst of random bytes.
            let flips = if trial % 4 == 3 { 8 } else { 1 };
            for _ in 0..flips {
                let at = rng.random_range(0..damaged.len());
                damaged[at] ^= 1 << rng.random_range(0..8);
            }
            std::fs::write(path, &damaged).unwrap();
            let got = answers(dir.path()).await;
            std::fs::write(path, &original).unwrap();
            let mut errored = false;
            for ((sql, want), got) in QUERIES.iter().zip(&truth).zip(&got) {
                match got {
                    Ok(rows) => assert_eq!(
                        Ok(rows),
                        want.as_ref(),
                        "{kind} {} damaged, `{sql}` answered differently",
                        path.display()
                    ),
                    Err(message) => {
                        errored = true;
                        // Damage is reported, and the report says where.
                        assert!(
                            message.contains("cannot use") || message.contains(".json"),
                            "{kind} {}: `{sql}` failed without naming the damage: {message}",
                            path.display()
                        );
                    }
                }
            }
            *caught.entry(kind).or_default() += usize::from(errored);
        }
    }
    // The objects whose every byte matters are always caught; the marker's content and the
    // snapshots are never read (the pointer carries a copy of the newest, which a reader uses
    // when the listing finds nothing newer), a sidecar's damage only means reading its block, a
    // locator's only means asking the sidecars, the named pointer's only means not fetching
    // segments early.
    for kind in ["table definition", "latest pointer", "segment"] {
        assert_eq!(caught.get(kind), Some(&24), "{kind}: {caught:?}");
    }
    // Every stride of every block is read by the first query.
    assert_eq!(caught.get("block"), Some(&24), "{caught:?}");
    for kind in [
        "sidecar",
        "locator",
        "named pointer",
        "database marker",
        "snapshot",
        "older snapshot",
    ] {
        assert_eq!(caught.get(kind), Some(&0), "{kind}: {caught:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_snapshot_is_reported_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    table(dir.path()).await;
    let snapshots: Vec<PathBuf> = common::files(dir.path())
        .into_iter()
        .filter(|p| kind(p) == "snapshot")
        .collect();
    assert_eq!(snapshots.len(), 3);
    for (missing, name) in [
        (2, "00000000000000000003.json"),
        (1, "00000000000000000002.json"),
    ] {
        let path = &snapshots[missing];
        let kept = std::fs::read(path).unwrap();
        std::fs::remove_file(path).unwrap();
        for answer in answers(dir.path()).await {
            let message = answer.expect_err("a table with a snapshot missing answered");
            assert!(
                message.contains(name) && message.contains("missing"),
                "{message}"
            );
        }
        std::fs::write(path, kept).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_without_a_checksum_names_its_file() {
    let dir = tempfile::tempdir().unwrap();
    table(dir.path()).await;
    let definition = common::files(dir.path())
        .into_iter()
        .find(|p| kind(p) == "table definition")
        .unwrap();
    std::fs::write(&definition, b"{\"name\": \"t\"}").unwrap();
    let message = answers(dir.path()).await.remove(0).unwrap_err();
    assert!(
        message.contains("catalog/default/tables/t.json"),
        "{message}"
    );
    assert!(message.contains("not a Sieve metadata file"), "{message}");
}
