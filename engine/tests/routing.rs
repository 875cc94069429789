//! Routing filters and merges on commit, by counts and differentially: on a table written as 100
//! locator groups, once the filters have loaded, an absent key reads no locator page and a
//! present key one group's, before and after the commit's background merges settle; with keys
//! repeated across groups and commits, merges racing appends, and after a DELETE, every lookup
//! answers the same with routing on, routing off, the locator off and pruning off.

mod common;

use common::{rows, run};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sieve_engine::{Engine, QueryOutput, Session};

fn sorted(output: &QueryOutput) -> Vec<String> {
    let mut rows = rows(output);
    rows.sort();
    rows
}

struct Sessions {
    engine: Engine,
    routed: Session,
    unrouted: Session,
    sidecars: Session,
    unpruned: Session,
}

async fn sessions(location: &str) -> Sessions {
    let engine = Engine::open(location).await.unwrap();
    let session = |setting: &'static str| {
        let engine = engine.clone();
        async move {
            let session = engine.session().unwrap();
            // Each lookup probes the groups itself: the counts are the subject.
            run(&session, "set sieve.lookup_cache = false").await;
            if !setting.is_empty() {
                run(&session, setting).await;
            }
            session
        }
    };
    Sessions {
        routed: session("").await,
        unrouted: session("set sieve.routing = false").await,
        sidecars: session("set sieve.locator = false").await,
        unpruned: session("set sieve.pruning = false").await,
        engine,
    }
}

/// 100,000 rows in 1,000-row blocks, each block its own locator group as written: `s` unique
/// (`v` and a number below 100,003), `k` every 50,000 rows again (another group), shuffled so
/// that no block ascends (an ascending column gets no locator), `v` the row number.
async fn load(session: &Session) {
    run(
        session,
        "create table t (k bigint, s varchar, v bigint) \
         with (block_rows = 1000, locator_group_rows = 1000, index_columns = 'k,s')",
    )
    .await;
    run(
        session,
        "insert into t select (number * 7919) % 50000, \
           concat('v', cast((number * 7919) % 100003 as varchar)), number \
         from numbers(100000)",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_reads_only_the_groups_that_may_hold_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let s = sessions(dir.path().to_str().unwrap()).await;
    run(&s.routed, "set sieve.merge_on_commit = false").await;
    load(&s.routed).await;
    assert_eq!(locator_groups(&s.routed).await, 100);
    // 'v5x' sorts inside every block's min/max of `s`: only an index rules it out.
    let absent = "select v from t where s = 'v5x'";
    let present = "select v from t where s = 'v7919'"; // row 1
    // The first lookup starts the filters' loads; until they land it probes as without them.
    let first = run(&s.routed, absent).await;
    assert_eq!(rows(&first), Vec::<String>::new());
    s.engine.routing_settled().await;
    assert!(s.engine.routing_bytes() > 0);

    let routed = run(&s.routed, absent).await;
    assert_eq!(rows(&routed), Vec::<String>::new());
    assert_eq!(routed.stats.locator_groups_probed, 0, "{:?}", routed.stats);
    assert_eq!(routed.stats.locator_groups_routed_out, 100);
    assert_eq!(routed.stats.index_bytes, 0);
    assert_eq!(routed.stats.blocks_read, 0);
    let unrouted = run(&s.unrouted, absent).await;
    assert_eq!(unrouted.stats.locator_groups_probed, 100);
    assert_eq!(unrouted.stats.locator_groups_routed_out, 0);

    let found = run(&s.routed, present).await;
    assert_eq!(rows(&found), ["1"]);
    assert_eq!(found.stats.locator_groups_probed, 1, "{:?}", found.stats);
    assert_eq!(found.stats.locator_groups_routed_out, 99);
    assert_eq!(found.stats.blocks_read, 1);
    // A key in two groups (rows n and n + 50,000) probes both, and only them.
    let n = (0..50_000u64).find(|n| n * 7919 % 50_000 == 42).unwrap();
    let twice = run(&s.routed, "select v from t where k = 42").await;
    let mut want = [n.to_string(), (n + 50_000).to_string()];
    want.sort();
    assert_eq!(sorted(&twice), want);
    assert_eq!(twice.stats.locator_groups_probed, 2, "{:?}", twice.stats);
}

fn query(rng: &mut StdRng) -> String {
    let key = |rng: &mut StdRng| match rng.random_range(0..3) {
        0 => format!("k = {}", rng.random_range(-10..50_010)),
        1 => format!("s = 'v{}'", rng.random_range(0..100_010)),
        _ => format!("s = 'v{}x'", rng.random_range(0..10)),
    };
    match rng.random_range(0..5) {
        // A condition on a column no filter indexes: min/max still narrows by it.
        4 => format!("{} and v < {}", key(rng), rng.random_range(0..120_000)),
        0 => format!(
            "k in ({}, {}, {})",
            rng.random_range(0..50_000),
            rng.random_range(0..60_000),
            rng.random_range(0..50_000)
        ),
        1 => format!("{} or {}", key(rng), key(rng)),
        2 => format!("{} and {}", key(rng), key(rng)),
        _ => key(rng),
    }
}

async fn compare(s: &Sessions, seed: u64, queries: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    for _ in 0..queries {
        let sql = format!("select k, s, v from t where {}", query(&mut rng));
        let all = sorted(&run(&s.unpruned, &sql).await);
        for (session, what) in [
            (&s.routed, "routing"),
            (&s.unrouted, "the locator"),
            (&s.sidecars, "the sidecars"),
        ] {
            assert_eq!(
                sorted(&run(session, &sql).await),
                all,
                "{what} changed {sql}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routing_never_changes_an_answer() {
    let s = sessions("memory://").await;
    load(&s.routed).await;
    for session in [&s.routed, &s.unrouted, &s.sidecars] {
        run(session, "set sieve.allow_full_scan = true").await;
    }
    // Once while the filters load, once after.
    compare(&s, 1, 60).await;
    s.engine.routing_settled().await;
    compare(&s, 2, 120).await;
    // A second commit repeats keys of the first in new groups; a DELETE removes some of both.
    run(
        &s.routed,
        "insert into t select number % 50000 + 25000, \
           concat('v', cast((number * 7919) % 100003 as varchar)), number + 100000 \
         from numbers(20000)",
    )
    .await;
    run(&s.routed, "delete from t where v % 7 = 0").await;
    compare(&s, 3, 60).await;
    s.engine.routing_settled().await;
    compare(&s, 4, 120).await;
}

/// The locator groups of `t`'s column `s`.
async fn locator_groups(session: &Session) -> u64 {
    let stats = run(
        session,
        "select groups from sieve_index_stats('t') where kind = 'locator' and column_name = 's'",
    )
    .await;
    rows(&stats)[0].parse().unwrap()
}

/// A commit's 100 groups merge in the background, sixteen of a tier into one of the next: 6 of
/// 16,000 rows and the 4 left over. Then an absent key still reads no locator page and a present
/// key one group's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_merges_its_groups_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let s = sessions(dir.path().to_str().unwrap()).await;
    load(&s.routed).await;
    s.engine.merges_settled().await;
    assert_eq!(locator_groups(&s.routed).await, 10);
    let absent = "select v from t where s = 'v5x'";
    run(&s.routed, absent).await;
    s.engine.routing_settled().await;
    let routed = run(&s.routed, absent).await;
    assert_eq!(
        (routed.stats.locator_groups_probed, routed.stats.index_bytes),
        (0, 0),
        "{:?}",
        routed.stats
    );
    assert_eq!(routed.stats.locator_groups_routed_out, 10);
    let found = run(&s.routed, "select v from t where s = 'v7919'").await;
    assert_eq!(rows(&found), ["1"]);
    assert_eq!(found.stats.locator_groups_probed, 1, "{:?}", found.stats);
    for session in [&s.routed, &s.unrouted, &s.sidecars] {
        run(session, "set sieve.allow_full_scan = true").await;
    }
    compare(&s, 5, 60).await;
}

/// Merges race appends: commits land while the groups of the ones before merge; every lookup
/// agrees with pruning off throughout, and once it all settles the groups are merged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merges_racing_appends_change_no_answer() {
    let s = sessions("memory://").await;
    run(
        &s.routed,
        "create table t (k bigint, s varchar, v bigint) \
         with (block_rows = 500, locator_group_rows = 500, index_columns = 'k,s')",
    )
    .await;
    for session in [&s.routed, &s.unrouted, &s.sidecars] {
        run(session, "set sieve.allow_full_scan = true").await;
    }
    for commit in 0..6u64 {
        let (from, to) = (commit * 8000, commit * 8000 + 8000);
        run(
            &s.routed,
            &format!(
                "insert into t select number % 50000, \
                   concat('v', cast((number * 7919) % 100003 as varchar)), number \
                 from numbers({to}) where number >= {from}"
            ),
        )
        .await;
        compare(&s, 10 + commit, 15).await;
    }
    s.engine.merges_settled().await;
    // 96 groups of 500 rows: 6 of 8,000 once merged.
    assert_eq!(locator_groups(&s.routed).await, 6);
    compare(&s, 20, 60).await;
}
