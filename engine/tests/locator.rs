//! The locator, differentially: blocks of several 4096-row slices, keys unique, repeated inside a
//! slice, across slices of a block and across blocks and commits, NULLs; every query run with the
//! locator, with sidecars only and with pruning off must agree. A damaged or missing locator
//! changes nothing but the cost. Counts, not timings: index bytes and data bytes read.

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

/// 200,000 rows in 60,000-row blocks (15 slices each), in two commits, in a fixed order (so
/// every run writes the same blocks, where parallel partitions interleave by chance): runs of
/// 8192 ascending rows, the even runs first, so that no column ascends through a commit's
/// blocks (one that did would be left out of the locator). `k`: unique, except that
/// rows 135,000.. repeat the keys of rows 0.. (another block, and another commit); NULL every
/// 13th row. `g`: the same value for 3 consecutive rows (so sometimes across a slice boundary).
/// `s`: every 27,000 rows again (several slices and blocks).
async fn load(session: &Session) {
    run(
        session,
        "create table t (k bigint, g bigint, s varchar, v bigint) \
         with (block_rows = 60000, index_columns = 'k,g,s')",
    )
    .await;
    for (from, to) in [(0, 150_000), (150_000, 200_000)] {
        run(
            session,
            &format!(
                "insert into t select \
                   case when number % 13 = 0 then null else (number * 7919) % 135000 end, \
                   number / 3, concat('v', cast(number % 27000 as varchar)), number \
                 from numbers({to}) where number >= {from} \
                 order by (number / 8192) % 2, number"
            ),
        )
        .await;
    }
}

fn query(rng: &mut StdRng) -> String {
    let key = |rng: &mut StdRng| match rng.random_range(0..3) {
        0 => format!("k = {}", rng.random_range(-10..140_000)),
        1 => format!("g = {}", rng.random_range(0..67_000)),
        _ => format!("s = 'v{}'", rng.random_range(0..27_500)),
    };
    match rng.random_range(0..5) {
        0 => format!(
            "k in ({}, {}, {})",
            rng.random_range(0..136_000),
            rng.random_range(0..136_000),
            rng.random_range(0..136_000)
        ),
        1 => format!("{} and {}", key(rng), key(rng)),
        2 => format!("{} or {}", key(rng), key(rng)),
        _ => key(rng),
    }
}

struct Sessions {
    located: Session,
    sidecars: Session,
    unpruned: Session,
}

async fn sessions(location: &str) -> Sessions {
    let engine = Engine::open(location).await.unwrap();
    // Each path's own reads are compared: none answers from pages or results another kept.
    let session = async || {
        let s = engine.session().unwrap();
        run(&s, "set sieve.data_cache = false").await;
        run(&s, "set sieve.lookup_cache = false").await;
        s
    };
    let sidecars = session().await;
    run(&sidecars, "set sieve.locator = false").await;
    let unpruned = session().await;
    run(&unpruned, "set sieve.pruning = false").await;
    Sessions {
        located: session().await,
        sidecars,
        unpruned,
    }
}

/// Runs random queries three ways; returns how many the locator answered with fewer data bytes.
async fn compare(s: &Sessions, seed: u64, queries: usize) -> usize {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut cheaper = 0;
    for _ in 0..queries {
        let sql = format!("select * from t where {}", query(&mut rng));
        let located = run(&s.located, &sql).await;
        let by_sidecars = run(&s.sidecars, &sql).await;
        let all = run(&s.unpruned, &sql).await;
        assert_eq!(sorted(&located), sorted(&all), "the locator changed {sql}");
        assert_eq!(sorted(&by_sidecars), sorted(&all), "sidecars changed {sql}");
        cheaper += usize::from(located.stats.bytes_read < by_sidecars.stats.bytes_read);
    }
    cheaper
}

async fn locator_agrees(location: &str, seed: u64) {
    let s = sessions(location).await;
    load(&s.located).await;
    let cheaper = compare(&s, seed, 150).await;
    assert!(
        cheaper > 0,
        "the locator read fewer bytes in only {cheaper} queries"
    );

    // A key in one slice of one block in each commit, found with at most two pages of each
    // commit's locator.
    let sql = "select v from t where k = 25000";
    let located = run(&s.located, sql).await;
    assert_eq!(sorted(&located), ["155000", "20000"]);
    assert_eq!(located.stats.blocks_read, 2);
    assert!(
        located.stats.index_bytes <= 2 * 2 * 2 * 1024,
        "{:?}",
        located.stats
    );
    // Not always less: reads are widened to the blocks' 64 KiB checksum strides, which can
    // cover the whole column chunk at this block size whatever slice is asked. At most two
    // strides more per block: a located page is read with every column at once (one round
    // trip), where pushdown reads `v` only for the matching row, whose page can sit in fewer
    // strides than the slice's (when the rows' order varied from run to run, one stride more
    // per block failed 1 run in 10, and a CI run read 1.5 strides more per block).
    // Compared warm, so that the footers and page indexes, read either way, are not counted by
    // whichever query happened to read them first.
    let (located, by_sidecars) = (run(&s.located, sql).await, run(&s.sidecars, sql).await);
    let two_strides_per_block = located.stats.blocks_read * 2 * (64 << 10);
    if located.stats.bytes_read > by_sidecars.stats.bytes_read + two_strides_per_block {
        // Say why: the scan node's metrics (locators probed, unreadable, pages read).
        let plan = run(&s.located, &format!("explain analyze {sql}")).await;
        panic!(
            "one slice: {:?}, the block: {:?}, plan: {:?}",
            located.stats,
            by_sidecars.stats,
            rows(&plan)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locator_agrees_on_memory() {
    locator_agrees("memory://", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locator_agrees_on_local_files() {
    let dir = tempfile::tempdir().unwrap();
    locator_agrees(dir.path().to_str().unwrap(), 2).await;
}

/// Against MinIO: fails unless SIEVE_TEST_S3_URL (and the AWS_* variables) are set, as
/// scripts/test.sh sets them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locator_agrees_on_s3() {
    let base = common::s3_base();
    let prefix = format!("{base}/locator-{:x}", rand::random::<u64>());
    locator_agrees(&prefix, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_or_missing_locator_falls_back_to_the_sidecars() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    load(&sessions(location).await.located).await;
    let files: Vec<_> = common::files(dir.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "loc"))
        .collect();
    assert_eq!(files.len(), 2, "one group per commit");
    // Every page damaged in the first group, the second group's file gone. A fresh engine, so
    // nothing is cached.
    let bytes = std::fs::read(&files[0]).unwrap();
    let damaged: Vec<u8> = bytes.iter().map(|b| b ^ 0x55).collect();
    std::fs::write(&files[0], damaged).unwrap();
    std::fs::remove_file(&files[1]).unwrap();
    let s = sessions(location).await;
    // The fallback ran: both groups' locators counted unreadable, the sidecars pruned blocks.
    let sql = "select v from t where k = 25000";
    let plan = rows(&run(&s.located, &format!("explain analyze {sql}")).await).join("\n");
    let metric = |name: &str| -> u64 {
        let at = plan
            .find(&format!("{name}="))
            .unwrap_or_else(|| panic!("{name}: {plan}"));
        let digits: String = plan[at + name.len() + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap()
    };
    assert_eq!(metric("locators_unreadable"), 2, "{plan}");
    assert_eq!(metric("locator_groups_probed"), 0, "{plan}");
    assert!(metric("blocks_pruned_by_filter") > 0, "{plan}");
    compare(&s, 4, 60).await;
    let found = run(&s.located, "select v from t where k = 25000").await;
    assert_eq!(sorted(&found), ["155000", "20000"]);
}

/// A cold absent-key query on a 1000-block table reads a few pages of index, not a filter per
/// block; the same query warm reads none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_query_on_a_thousand_blocks_reads_little_index() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let s = sessions(location).await;
    run(
        &s.located,
        "create table t with (block_rows = 100) as \
         select number as c1, cast((number * 7919) % 100003 as string) as c2 \
         from numbers(100000)",
    )
    .await;
    for (sql, want) in [
        ("select c1 from t where c2 = '91879x'", vec![]),
        ("select c1 from t where c2 = '91879'", vec!["100"]),
    ] {
        let cold = sessions(location).await;
        let located = run(&cold.located, sql).await;
        assert_eq!(rows(&located), want);
        assert_eq!(located.stats.blocks_total, 1000);
        assert!(located.stats.index_bytes <= 1 << 20, "{:?}", located.stats);
        assert!(located.stats.index_bytes <= 4096, "{:?}", located.stats);
        // Warm: the verified pages are cached.
        let again = run(&cold.located, sql).await;
        assert_eq!(rows(&again), want);
        assert_eq!(again.stats.index_bytes, 0, "{:?}", again.stats);
        let by_sidecars = run(&cold.sidecars, sql).await;
        assert_eq!(rows(&by_sidecars), want);
        assert!(
            by_sidecars.stats.index_bytes > 100 * located.stats.index_bytes,
            "{:?} vs {:?}",
            by_sidecars.stats,
            located.stats
        );
    }
}

/// `sieve_index_stats` lists the locator beside the sidecars: per column, the blocks its groups
/// cover and the distinct keys of each group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_stats_list_the_locator() {
    let s = sessions("memory://").await;
    load(&s.located).await;
    let stats = run(
        &s.located,
        "select column_name, blocks, keys, bits_per_key from sieve_index_stats('t') \
         where kind = 'locator' order by column_name",
    )
    .await;
    let stats = rows(&stats);
    assert_eq!(stats.len(), 3, "{stats:?}");
    // g = number / 3: 50,000 distinct keys in the first commit's group, 16,667 in the second's.
    let g: Vec<&str> = stats[0].split('|').collect();
    assert_eq!(g[..3], ["g", "4", "66667"], "{stats:?}");
    let bits: f64 = g[3].parse().unwrap();
    assert!((8.0..=32.0).contains(&bits), "{bits} bits/key");
}

/// A column whose blocks ascend, each above the one before (a row number, a load's `c1`), gets
/// no locator: min/max finds its block and the Parquet page index its page. Its lookups agree
/// with pruning off and read about as much data as a located key's one slice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ascending_column_needs_no_locator() {
    let s = sessions("memory://").await;
    run(
        &s.located,
        "create table t (k bigint, s varchar) \
         with (block_rows = 262144, index_columns = 'k,s')",
    )
    .await;
    run(
        &s.located,
        "insert into t select number, concat('v', cast((number * 7919) % 600011 as varchar)) \
         from numbers(600000) order by number",
    )
    .await;
    let stats = run(
        &s.located,
        "select column_name, blocks from sieve_index_stats('t') where kind = 'locator'",
    )
    .await;
    assert_eq!(rows(&stats), ["s|3"]);
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..40 {
        let k = rng.random_range(-5..600_005);
        let sql = format!("select k, s from t where k = {k} or k = {}", k + 270_000);
        let located = run(&s.located, &sql).await;
        assert_eq!(
            sorted(&located),
            sorted(&run(&s.unpruned, &sql).await),
            "{sql}"
        );
    }
    // Warm (footers and page indexes cached), one key each way.
    let by_page_index = "select s from t where k = 200000";
    let by_locator = "select k from t where s = 'v370971'"; // 200000 * 7919 % 600011
    for sql in [by_page_index, by_locator] {
        run(&s.located, sql).await;
    }
    let (k, v) = (
        run(&s.located, by_page_index).await,
        run(&s.located, by_locator).await,
    );
    assert_eq!(
        (rows(&k), rows(&v)),
        (vec!["v370971".to_string()], vec!["200000".to_string()])
    );
    assert_eq!((k.stats.blocks_read, v.stats.blocks_read), (1, 1));
    let whole = run(&s.sidecars, by_locator).await;
    assert!(
        k.stats.bytes_read <= 2 * v.stats.bytes_read
            && 2 * k.stats.bytes_read < whole.stats.bytes_read,
        "page index: {:?}, locator: {:?}, the block: {:?}",
        k.stats,
        v.stats,
        whole.stats
    );
}

/// Table `t` written in one INSERT as 9 blocks of 1000 rows, locator groups of up to 4 blocks:
/// `k` = `k_of_number` over `numbers(9000)` in order, `s` a permutation of strings. Returns the
/// sessions and, per column, its locator's groups and blocks (`column|groups|blocks`).
async fn nine_blocks_in_groups_of_four(k_of_number: &str) -> (Sessions, Vec<String>) {
    let s = sessions("memory://").await;
    run(
        &s.located,
        "create table t (k bigint, s varchar) \
         with (block_rows = 1000, locator_group_rows = 4000, index_columns = 'k,s')",
    )
    .await;
    run(
        &s.located,
        &format!(
            "insert into t select {k_of_number}, \
               concat('v', cast((number * 7919) % 9001 as varchar)) \
             from numbers(9000) order by number"
        ),
    )
    .await;
    let groups = run(
        &s.located,
        "select column_name, groups, blocks from sieve_index_stats('t') \
         where kind = 'locator' order by column_name",
    )
    .await;
    (s, rows(&groups))
}

/// A write leaves a column out of its group while the column's blocks ascend apart, and cuts the
/// group where they stop: the blocks before keep their group without it, and every group after
/// in the write locates it. Lookups of both agree with pruning off, and each probes only the
/// groups that locate its column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cuts_its_group_where_a_column_stops_ascending() {
    // k: the row number for 3 blocks, then a permutation of 3000..9000 (no block ascends); s
    // ascends in no block.
    let (s, groups) = nine_blocks_in_groups_of_four(
        "case when number < 3000 then number else 3000 + (number * 7919) % 6000 end",
    )
    .await;
    // Blocks 0-2 (k left out), 3-6 and 7-8 (both located).
    assert_eq!(groups, ["k|2|6", "s|3|9"]);
    for k in (0..9000).step_by(37).chain([2999, 3000, 8999, 9000, -1]) {
        for sql in [
            format!("select s from t where k = {k}"),
            format!("select k from t where s = 'v{}'", k * 7919 % 9001),
        ] {
            let located = run(&s.located, &sql).await;
            assert_eq!(
                sorted(&located),
                sorted(&run(&s.unpruned, &sql).await),
                "{sql}"
            );
            if sql.contains("k =") && (0..3000).contains(&k) {
                // Min/max finds the block; no group locates k there.
                assert_eq!(located.stats.locator_groups_probed, 0, "{sql}");
                assert_eq!(located.stats.blocks_read, 1, "{sql}");
            }
        }
    }
}

/// A block holding every integer between its min and max gets no filter for that column (min/max
/// decides: kind `minmax`), and its keys, hashed only once a group locates the column, are all
/// found. k: each block a run of the row number, each run below the one before, so the write
/// locates k from its second block on.
#[tokio::test]
async fn dense_blocks_need_no_filter_and_are_located_when_they_do_not_ascend_apart() {
    let (s, groups) =
        nine_blocks_in_groups_of_four("8000 - (number - number % 1000) + number % 1000").await;
    // Block 0 (k left out), blocks 1-4 and 5-8 (both located).
    assert_eq!(groups, ["k|2|8", "s|3|9"]);
    let stats = run(
        &s.located,
        "select column_name, kind, blocks, bytes from sieve_index_stats('t') \
         where kind <> 'locator' order by column_name",
    )
    .await;
    let stats = rows(&stats);
    assert_eq!(stats[0], "k|minmax|9|0", "{stats:?}");
    assert!(stats[1].starts_with("s|binary_fuse8|9|"), "{stats:?}");
    for k in (0..9000).step_by(37).chain([999, 1000, 8999, 9000, -1]) {
        let sql = format!("select s from t where k = {k}");
        let located = run(&s.located, &sql).await;
        assert_eq!(
            sorted(&located),
            sorted(&run(&s.unpruned, &sql).await),
            "{sql}"
        );
        let present = (0..9000).contains(&k);
        assert_eq!(located.stats.blocks_read, u64::from(present), "{sql}");
        // Min/max finds the block, and only in blocks 1-8 a group locates k.
        let probed = u64::from((0..8000).contains(&k));
        assert_eq!(located.stats.locator_groups_probed, probed, "{sql}");
    }
}

/// OPTIMIZE merges sixteen adjacent groups of one tier into one (`locator_group_rows` makes
/// them small here): every query agrees with pruning off before and after, a lookup probes
/// fewer groups, and the merged group's keys (repeated across blocks and commits, NULLs) are
/// all found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimize_merges_locator_groups_by_tiers() {
    let dir = tempfile::tempdir().unwrap();
    let s = sessions(dir.path().to_str().unwrap()).await;
    // Only OPTIMIZE merges here (commits would too, in the background).
    run(&s.located, "set sieve.merge_on_commit = false").await;
    run(
        &s.located,
        "create table t (k bigint, g bigint, s varchar, v bigint) \
         with (block_rows = 16384, locator_group_rows = 16384, index_columns = 'k,g,s')",
    )
    .await;
    // 19 full blocks and 2 partial ones, each its own group, in two commits.
    for (from, to) in [(0, 150_000), (150_000, 320_000)] {
        run(
            &s.located,
            &format!(
                "insert into t select \
                   case when number % 13 = 0 then null else (number * 7919) % 135000 end, \
                   number / 3, concat('v', cast(number % 27000 as varchar)), number \
                 from numbers({to}) where number >= {from} \
                 order by (number / 8192) % 2, number"
            ),
        )
        .await;
    }
    // ORs across columns may skip no block of these 21.
    for session in [&s.located, &s.sidecars] {
        run(session, "set sieve.allow_full_scan = true").await;
    }
    assert_eq!(locator_groups(&s.located).await, 21);
    compare(&s, 11, 60).await;
    let optimized = run(&s.located, "optimize table t").await;
    // The two partial blocks are rewritten as one (a small unit), then 16 groups merge.
    assert_eq!(rows(&optimized), ["2|1|8704|0|0|16"]);
    assert_eq!(locator_groups(&s.located).await, 20 - 16 + 1);
    compare(&s, 12, 150).await;
    for k in 0..135_000 {
        if k % 997 != 0 {
            continue;
        }
        let sql = format!("select v from t where k = {k}");
        assert_eq!(
            sorted(&run(&s.located, &sql).await),
            sorted(&run(&s.unpruned, &sql).await),
            "{sql}"
        );
    }
    // Merged again, nothing changes.
    let again = run(&s.located, "optimize table t").await;
    assert_eq!(rows(&again), ["0|0|0|0|0|0"]);
}

/// A merge keeps locating a column some of its inputs left to min/max (their blocks ascended):
/// the merged group names every block's keys of it, so a lookup of a key in a block whose own
/// group located the column still reads the locator, not the sidecars.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merged_group_locates_a_column_some_inputs_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let s = sessions(dir.path().to_str().unwrap()).await;
    run(&s.located, "set sieve.merge_on_commit = false").await;
    run(
        &s.located,
        "create table t (k bigint, s varchar) \
         with (block_rows = 1000, locator_group_rows = 1000, index_columns = 'k,s')",
    )
    .await;
    // Sixteen one-block groups; s ascends in the even ones, descends in the odd ones; k never
    // ascends, so every group has a locator.
    for g in 0..16 {
        let order = if g % 2 == 0 { "" } else { " desc" };
        run(
            &s.located,
            &format!(
                "insert into t select (number * 7919) % 16001, concat('s', lpad(cast(number as \
                 varchar), 8, '0')) from numbers({}) where number >= {} order by number{order}",
                (g + 1) * 1000,
                g * 1000
            ),
        )
        .await;
    }
    let probed = |sql: String| {
        let s = &s;
        async move {
            let located = run(&s.located, &sql).await;
            assert_eq!(
                sorted(&located),
                sorted(&run(&s.unpruned, &sql).await),
                "{sql}"
            );
            assert_eq!(located.row_count(), 1, "{sql}");
            located.stats.locator_groups_probed
        }
    };
    let lookups = [0, 999, 1000, 1999, 7500, 15_999];
    let sql = |n: i32| format!("select k from t where s = 's{n:08}'");
    for n in lookups {
        // Min/max finds the block; only the odd blocks' groups locate s.
        let odd = (n / 1000) % 2 == 1;
        assert_eq!(probed(sql(n)).await, u64::from(odd), "{}", sql(n));
    }
    let optimized = run(&s.located, "optimize table t").await;
    assert_eq!(rows(&optimized), ["0|0|0|0|0|16"]);
    for n in lookups {
        assert_eq!(probed(sql(n)).await, 1, "{}", sql(n));
    }
}

/// The locator groups of `t`'s column `k`.
async fn locator_groups(session: &Session) -> u64 {
    let stats = run(
        session,
        "select groups from sieve_index_stats('t') where kind = 'locator' and column_name = 'k'",
    )
    .await;
    rows(&stats)[0].parse().unwrap()
}

/// A segment OPTIMIZE writes again holds its own blocks' statistics only: string min/max are
/// view arrays, and one cut from the whole block list once carried every block's strings into
/// every segment (62 MB each at 10,000 blocks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segments_written_again_hold_only_their_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let s = sessions(dir.path().to_str().unwrap()).await;
    run(&s.located, "set sieve.merge_on_commit = false").await;
    run(
        &s.located,
        "create table t (k bigint, s varchar) with (block_rows = 1000, locator_group_rows = 1000)",
    )
    .await;
    for commit in 0..40 {
        let (from, to) = (commit * 3000, commit * 3000 + 3000);
        run(
            &s.located,
            &format!(
                "insert into t select number, concat('a string longer than a view ', \
                 cast(number * 7919 % 120000 as varchar)) from numbers({to}) where number >= {from}"
            ),
        )
        .await;
    }
    let before = segment_files(dir.path());
    let optimized = run(&s.located, "optimize table t").await;
    assert_eq!(rows(&optimized), ["0|0|0|0|0|112"]);
    let largest_before = before.values().max().copied().unwrap();
    let written: Vec<u64> = segment_files(dir.path())
        .into_iter()
        .filter(|(path, _)| !before.contains_key(path))
        .map(|(_, bytes)| bytes)
        .collect();
    // The 38 of 40 segments whose blocks changed group, each still 3 blocks.
    assert_eq!(written.len(), 38);
    assert!(
        written.iter().all(|&bytes| bytes <= largest_before),
        "written again: {written:?}, largest before: {largest_before}"
    );
    for k in (0..120_000).step_by(7919) {
        let value = format!("a string longer than a view {}", k * 7919 % 120_000);
        for sql in [
            format!("select s from t where k = {k}"),
            format!("select k from t where s = '{value}'"),
        ] {
            let found = sorted(&run(&s.located, &sql).await);
            assert_eq!(found.len(), 1, "{sql}");
            assert_eq!(found, sorted(&run(&s.unpruned, &sql).await), "{sql}");
        }
    }
}

/// Every segment file under `dir`, with its size.
fn segment_files(dir: &std::path::Path) -> std::collections::HashMap<std::path::PathBuf, u64> {
    let mut files = std::collections::HashMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(segment_files(&path));
        } else if path.parent().is_some_and(|p| p.ends_with("segments")) {
            files.insert(path.clone(), std::fs::metadata(&path).unwrap().len());
        }
    }
    files
}
