//! What no statement may do to the server or to its answers: overflow a query thread's stack,
//! touch the server's files, hold more memory than its budget, run past its deadline, wrap an
//! integer, lose a NaN row to pruning, pretend a misspelt SET worked, or report rows that a
//! racing DROP TABLE took away.

use std::future::Future;
use std::time::Duration;

use datafusion::arrow::util::display::array_value_to_string;
use sieve_engine::Engine;
use sieve_engine::{
    ErrorClass, MAX_OPERATORS, MemoryLimits, QUERY_THREAD_STACK, QueryOutput, Session,
    SpillSettings, classify,
};

/// Runs a test on a runtime whose threads have the stacks `sieve` gives its own.
fn on_query_threads<F: Future<Output = ()> + Send + 'static>(test: F) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(QUERY_THREAD_STACK)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async { tokio::spawn(test).await.unwrap() });
}

mod common;

use common::{memory_session as session, run};

async fn fails(session: &Session, sql: &str) -> (ErrorClass, String) {
    match session.execute(sql).await {
        Ok(_) => panic!("{sql} should fail"),
        Err(e) => (classify(&e), e.to_string()),
    }
}

fn first(output: &QueryOutput) -> String {
    array_value_to_string(output.batches[0].column(0), 0).unwrap()
}

/// `select count(*) from t where a = 0 or a = 1 or …`
fn or_chain(terms: usize) -> String {
    let terms: Vec<String> = (0..terms).map(|i| format!("a = {i}")).collect();
    format!("select count(*) from t where {}", terms.join(" or "))
}

#[test]
fn the_deepest_accepted_statements_answer_and_deeper_ones_get_an_error() {
    on_query_threads(async {
        let s = session().await;
        run(
            &s,
            "create table t as select number as a from numbers(50000)",
        )
        .await;
        // Each term is two operators; the statement's own keywords take a few more.
        let deepest = MAX_OPERATORS / 2 - 8;
        let count = run(&s, &or_chain(deepest)).await;
        assert_eq!(first(&count), deepest.to_string());
        let (class, message) = fails(&s, &or_chain(MAX_OPERATORS)).await;
        assert_eq!(class, ErrorClass::Other);
        assert!(message.contains("statement too complex"), "{message}");
        let (_, message) = fails(&s, &or_chain(1_000_000)).await;
        assert!(message.contains("statement too complex"), "{message}");

        let sum: Vec<&str> = vec!["1"; MAX_OPERATORS - 8];
        let total = run(&s, &format!("select {}", sum.join(" + "))).await;
        assert_eq!(first(&total), (MAX_OPERATORS - 8).to_string());
        // A column chain is one checked_arithmetic call, not a call per operator (whose planning
        // took most of an hour at 1,000 terms).
        let sum: Vec<&str> = vec!["a"; MAX_OPERATORS - 8];
        let sql = format!("select {} from t where a = 3", sum.join(" + "));
        assert_eq!(
            first(&run(&s, &sql).await),
            (3 * (MAX_OPERATORS - 8)).to_string()
        );

        // Four operators a term (select, as, union, all), four for the outer query.
        let unions = vec!["select 1 as x"; MAX_OPERATORS / 4 - 4];
        let union = format!("select count(*) from ({})", unions.join(" union all "));
        let count = run(&s, &union).await;
        assert_eq!(first(&count), (MAX_OPERATORS / 4 - 4).to_string());
        let unions = vec!["select 1 as x"; MAX_OPERATORS];
        fails(&s, &unions.join(" union all ")).await;
    });
}

/// Deep parentheses are refused by the parser's nesting limit, and finding that out is linear
/// in the statement: 150,000 pairs on one line took 25 s (a walk from the line's start per
/// token, to find where each token begins), and held a server thread meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_parentheses_are_refused_without_stalling() {
    let s = session().await;
    let n = 150_000;
    let sql = format!("select {}1{}", "(".repeat(n), ")".repeat(n));
    let (_, message) = fails(&s, &sql).await;
    assert!(message.contains("RecursionLimitExceeded"), "{message}");
    let sql = format!("show tables; select {}1{}", "(".repeat(n), ")".repeat(n));
    assert_eq!(Session::split_statements(&sql).unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_that_reach_the_servers_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("victim.csv");
    std::fs::write(&target, "precious").unwrap();
    let s = session().await;
    for sql in [
        format!(
            "copy (select 'x' as a) to '{}' stored as csv",
            target.display()
        ),
        format!(
            "explain analyze copy (select 'x' as a) to '{}' stored as csv",
            target.display()
        ),
        format!(
            "create external table leak (a varchar) stored as csv location '{}'",
            target.display()
        ),
        "set datafusion.runtime.temp_directory = '/etc'".to_string(),
    ] {
        let (class, message) = fails(&s, &sql).await;
        assert_eq!(class, ErrorClass::NotSupported, "{sql}: {message}");
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_over_its_memory_budget_fails_and_results_stream() {
    let engine = Engine::open("memory://")
        .await
        .unwrap()
        .with_memory_limits(MemoryLimits {
            server: 64 << 20,
            query: 16 << 20,
        })
        .unwrap();
    let s = engine.session().unwrap();
    let cross = "select a.number, b.number from numbers(100000) a, numbers(100000) b";
    let (class, message) = fails(&s, cross).await;
    assert_eq!(class, ErrorClass::OutOfMemory, "{message}");
    assert!(
        message.contains("query exceeded its memory limit of 16 MiB"),
        "{message}"
    );
    let (class, _) = fails(
        &s,
        "select number from numbers(10000000) order by number desc",
    )
    .await;
    assert_eq!(class, ErrorClass::OutOfMemory);
    // A batch of strings each under max_allowed_packet but together over the budget (8192 rows
    // of 500 KB) is refused before it is built: this took the server to 15.9 GB.
    let (class, message) = fails(
        &s,
        "select count(distinct repeat(cast(number as varchar), 100000)) from numbers(20000)",
    )
    .await;
    assert_eq!(class, ErrorClass::OutOfMemory, "{message}");
    assert!(message.contains("more asked by repeat"), "{message}");
    // regexp_replace cannot be sized before it is built (it depends on the matches): 5-byte
    // inputs, each character replaced by 5,000 bytes, are 200 MB a batch. It is built a slice
    // of rows at a time and each slice reserved, so the batch fails past the budget instead of
    // being built outside it.
    let (class, message) = fails(
        &s,
        "select max(length(regexp_replace(cast(number + 10000 as varchar), '.', \
         repeat('x', 5000), 'g'))) from numbers(20000)",
    )
    .await;
    assert_eq!(class, ErrorClass::OutOfMemory, "{message}");
    assert!(
        message.contains("more asked by regexp_replace"),
        "{message}"
    );
    // Streamed, the same ten billion rows cost one batch: the first arrives, the rest never run.
    let mut rows = s.query(cross).await.unwrap();
    let batch = rows.next().await.unwrap().unwrap();
    assert!(batch.num_rows() > 0);
    drop(rows);
    // The budget is free again for the next statement.
    assert_eq!(
        first(&run(&s, "select count(*) from numbers(1000)").await),
        "1000"
    );
}

/// A sort over its memory spills into the engine's own directory (with its lock file beside
/// it), up to the spill limit; past it the statement fails naming the server's setting, and
/// the directory is gone with the engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spills_stay_in_their_directory_and_under_their_limit() {
    let root = tempfile::tempdir().unwrap();
    let spill = SpillSettings {
        dir: root.path().to_path_buf(),
        limit: 1 << 20,
    };
    let limits = MemoryLimits {
        server: 256 << 20,
        query: 64 << 20,
    };
    // The window sorts 8M rows (64 MB of keys) before numbering them, all from the first of
    // numbers()' partitions (partition i holds the 65,536-row chunks i, i + p, …), so one sorter
    // holds the memory and spills: with two, the other's reservation for merging can fail
    // first, and the error then names the pool instead of the spill limit.
    let p = std::thread::available_parallelism().map_or(2, |n| n.get());
    let sort = format!(
        "select max(r) from (select row_number() over (order by number desc) as r \
         from numbers({}) where floor(number / 65536) % {p} = 0)",
        8_000_000 * p
    );
    let engine = Engine::open("memory://")
        .await
        .unwrap()
        .with_memory_limits(limits)
        .unwrap()
        .with_spill(&spill)
        .unwrap();
    let s = engine.session().unwrap();
    let (class, message) = fails(&s, &sort).await;
    assert_eq!(class, ErrorClass::OutOfMemory, "{message}");
    assert!(message.contains("spill_limit_gib"), "{message}");
    // Its directory is there while the engine is, and gone with it.
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 2);
    drop((s, engine));
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
}

/// Functions that build strings stay under `max_allowed_packet` (here the engine's 64 MiB),
/// NULL beyond it as in MySQL: `repeat('x', 1500000000)` took 5.8 GiB past every budget. The
/// bound is on each function's result, so strings under it, and NULLs, are as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_strings_are_null_beyond_max_allowed_packet() {
    let s = session().await;
    run(
        &s,
        "create table w as select number as n, repeat('ab', 1000) as t from numbers(3)",
    )
    .await;
    for (sql, expected) in [
        ("length(repeat('x', 1500000000))", "NULL"),
        ("length(repeat('x', 1000000))", "1000000"),
        ("length(lpad('x', 1500000000, 'y'))", "NULL"),
        ("length(rpad('x', 1000, 'y'))", "1000"),
        (
            "length(concat(repeat('x', 40000000), repeat('y', 40000000)))",
            "NULL",
        ),
        ("concat('a', null, 'b')", "ab"),
        (
            "length(concat_ws(repeat(',', 30000000), 'a', 'b', 'c'))",
            "NULL",
        ),
        (
            "length(replace(repeat('a', 100000), 'a', repeat('b', 1000)))",
            "NULL",
        ),
        ("replace('banana', 'a', 'o')", "bonono"),
        (
            "length(regexp_replace(repeat('a', 10000000), 'a', 'bbbbbbbbbb', 'g'))",
            "NULL",
        ),
        (
            "regexp_replace('banana', 'a(.)', '<${1}>', 'g')",
            "b<n><n>a",
        ),
        // Column values, row by row: only the rows over the bound are NULL.
    ] {
        let sql = format!("select coalesce(cast({sql} as varchar), 'NULL')");
        assert_eq!(first(&run(&s, &sql).await), expected, "{sql}");
    }
    // Column values, row by row: only the rows over the bound are NULL.
    let rows = "select string_agg(coalesce(cast(length(repeat(t, cast(20000 * n + 1 as bigint))) as varchar), \
                'NULL'), ',' order by n) from w";
    assert_eq!(first(&run(&s, rows).await), "2000,40002000,NULL");
    // regexp_replace built a slice of rows at a time (about 4 MB of input a batch here) answers
    // as replace does over the same rows.
    let sliced = "select sum(length(regexp_replace(repeat(cast(number as varchar), 100), '1', \
                  'ab', 'g'))) = sum(length(repeat(replace(cast(number as varchar), '1', 'ab'), \
                  100))) from numbers(20000)";
    assert_eq!(first(&run(&s, sliced).await), "true");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_execution_time_stops_a_query_and_spares_writes() {
    let s = session().await;
    // Ten billion rows: minutes of work in batches, each short enough for the deadline to
    // interrupt between them.
    let cross = "select count(*) from numbers(10000000000) where number % 7 = 3";
    for set in [
        "SET max_execution_time = 300",
        "SET SESSION sieve.max_execution_time = 300",
    ] {
        run(&s, set).await;
        let (class, message) = fails(&s, cross).await;
        assert_eq!(class, ErrorClass::Timeout, "{message}");
        assert!(
            message.contains("maximum statement execution time exceeded"),
            "{message}"
        );
        run(&s, "set max_execution_time = 0").await;
    }
    run(&s, "SET max_execution_time = 1").await;
    let created = run(&s, "create table w as select number from numbers(200000)").await;
    assert_eq!(created.affected_rows, Some(200_000));
}

/// A nested loop join works through its whole build side per probe batch: one poll of it can
/// compute for minutes, with every query thread busy. The deadline is kept on the caller's
/// runtime, so it still answers; and the join stops at its next build row, not minutes later
/// (it went on computing after its client had the error), so the engine's statement tasks all
/// end.
#[test]
fn the_deadline_answers_while_a_join_keeps_every_query_thread_busy() {
    let runtime = |threads| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
            .unwrap()
    };
    let (queries, clients) = (runtime(2), runtime(1));
    let executor = queries.handle().clone();
    clients.block_on(async {
        let engine = Engine::open("memory://").await.unwrap();
        let engine = engine.with_executor(executor);
        let s = engine.session().unwrap();
        run(&s, "SET max_execution_time = 200").await;
        // 40 billion pairs: hours of work if nothing stops it.
        let join = "select count(*) from numbers(200000) a, numbers(200000) b \
                    where a.number + b.number = 5";
        let (class, message) = fails(&s, join).await;
        assert_eq!(class, ErrorClass::Timeout, "{message}");
        // Waits on the count of running tasks; a minute only bounds a failing run.
        tokio::time::timeout(Duration::from_secs(60), engine.statements_stopped())
            .await
            .expect("the join still runs a minute after its statement ended");
    });
    queries.shutdown_background();
}

/// A long statement text is read (tokenized, checked, parsed) on the executor, not on the
/// thread that serves connections: three clients sending 150,000-item IN lists held the serving
/// threads between them and another client's `select 1` waited up to 3 s. Counted without a
/// clock: with the executor's only thread held, a short text is still read in the first poll
/// on the caller's thread, and a long one is not read until the executor is let go.
#[test]
fn long_statement_texts_are_read_on_the_executor() {
    let queries = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let clients = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let executor = queries.handle().clone();
    clients.block_on(async {
        let engine = Engine::open("memory://").await.unwrap();
        let s = engine.with_executor(executor.clone()).session().unwrap();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (holding, hold) = tokio::sync::oneshot::channel();
        executor.spawn(async move {
            holding.send(()).unwrap();
            held.recv().unwrap();
        });
        hold.await.unwrap();
        let items: Vec<String> = (0..5000).map(|i| i.to_string()).collect();
        let long = format!("select 1 where 4999 in ({})", items.join(", "));
        assert!(long.len() > 16 << 10);
        assert!(
            futures::FutureExt::now_or_never(s.read("select 1 where 4999 in (1, 4999)")).is_some(),
            "a short text is read where it arrives"
        );
        let mut reading = std::pin::pin!(s.read(&long));
        for _ in 0..100 {
            assert!(futures::poll!(&mut reading).is_pending());
            tokio::task::yield_now().await;
        }
        release.send(()).unwrap();
        let read = reading.await;
        let output = s.run(read).await.unwrap().collect().await.unwrap();
        assert_eq!(first(&output), "1");
    });
    queries.shutdown_background();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integer_overflow_is_an_error_and_sums_do_not_wrap() {
    let s = session().await;
    for sql in [
        "select 9223372036854775807 + 1",
        "select -9223372036854775807 - 2",
        "select 4611686018427387904 * 2",
        "select cast(18446744073709551615 as bigint unsigned) + cast(1 as bigint unsigned)",
    ] {
        let (class, message) = fails(&s, sql).await;
        assert_eq!(class, ErrorClass::OutOfRange, "{sql}: {message}");
        assert!(message.contains("value is out of range"), "{message}");
    }
    run(&s, "create table big (v bigint)").await;
    run(
        &s,
        "insert into big values (9223372036854775807), (9223372036854775807)",
    )
    .await;
    assert_eq!(
        first(&run(&s, "select sum(v) from big").await),
        "18446744073709551614"
    );
    let (class, _) = fails(&s, "select v + 1 from big").await;
    assert_eq!(class, ErrorClass::OutOfRange);
    assert_eq!(
        first(&run(&s, "select v - 1 as x from big").await),
        "9223372036854775806"
    );
    let named = run(&s, "select 1 + 2").await;
    // Named by its text, as MySQL names it.
    assert_eq!(named.schema.field(0).name(), "1 + 2");
    assert_eq!(first(&named), "3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nan_rows_are_found_with_pruning_on_and_off() {
    let s = session().await;
    run(
        &s,
        "create table f (k bigint, d double) with (index_columns = 'k,d', block_rows = 2)",
    )
    .await;
    run(
        &s,
        "insert into f values (1, 1.5), (2, cast('NaN' as double)), (3, 2.5), (4, 3.5), (5, -1.0), (6, 0.0)",
    )
    .await;
    for pruning in ["true", "false"] {
        run(&s, &format!("set sieve.pruning = {pruning}")).await;
        for (sql, expected) in [
            ("select count(*) from f where d = 'NaN'", "1"),
            (
                "select count(*) from f where d = cast('NaN' as double)",
                "1",
            ),
            ("select count(*) from f where d > 3", "2"),
            (
                "select count(*) from f where d in (2.5, cast('NaN' as double))",
                "2",
            ),
        ] {
            assert_eq!(
                first(&run(&s, sql).await),
                expected,
                "pruning {pruning}: {sql}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_of_an_unknown_variable_fails_and_scopes_agree() {
    let s = session().await;
    // Blocks read tell the setting apart only if each lookup reads the table.
    run(&s, "set sieve.lookup_cache = false").await;
    run(
        &s,
        "create table p with (block_rows = 10) as select number as a from numbers(100)",
    )
    .await;
    for (sql, blocks_read) in [
        ("SET SESSION sieve.pruning = false", 10),
        ("set sieve.pruning = true", 1),
        ("SET @@session.sieve.pruning = false", 10),
        ("SET LOCAL sieve.pruning = true", 1),
    ] {
        run(&s, sql).await;
        let point = run(&s, "select a from p where a = 42").await;
        assert_eq!(point.stats.blocks_read, blocks_read, "after {sql}");
    }
    for sql in [
        "set sieve_pruning = false",
        "SET sieve.prunning = 0",
        "set bogus = 1",
    ] {
        let (class, message) = fails(&s, sql).await;
        assert!(
            class == ErrorClass::UnknownVariable || message.contains("sieve.prunning"),
            "{sql}: {class:?} {message}"
        );
    }
    for sql in [
        "SET NAMES utf8mb4",
        "SET autocommit = 1",
        "set sql_mode = ''",
    ] {
        run(&s, sql).await;
    }
}

/// A DROP TABLE commits the table's last version, so an INSERT still writing when it lands
/// cannot commit after it: it fails, and says nothing was committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insert_whose_table_is_dropped_meanwhile_reports_it() {
    let engine = Engine::open("memory://").await.unwrap();
    let writer = engine.session().unwrap();
    run(&writer, "create table r (a bigint unsigned)").await;
    let progress = writer.progress();
    let insert = tokio::spawn(async move {
        writer
            .execute("insert into r select number from numbers(20000000)")
            .await
            .map(|o| o.affected_rows)
    });
    while progress.rows() == 0 && !insert.is_finished() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let dropper = engine.session().unwrap();
    run(&dropper, "drop table r").await;
    let outcome = insert.await.unwrap();
    let message = outcome
        .expect_err("the rows went into a dropped table")
        .to_string();
    assert!(
        message.contains("was dropped while this INSERT ran; nothing was committed"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_with_any_characters_are_listed_as_written_and_usable() {
    let dir = tempfile::tempdir().unwrap();
    let s = Engine::open(dir.path().to_str().unwrap())
        .await
        .unwrap()
        .session()
        .unwrap();
    run(&s, "create database `données`").await;
    run(&s, "create database `a/b`").await;
    run(&s, "create table `x/y` as select 1 as a").await;
    run(&s, "create table `données`.`été` as select 2 as a").await;
    let databases = run(&s, "show databases").await;
    let names: Vec<String> = (0..databases.row_count())
        .map(|i| array_value_to_string(databases.batches[0].column(0), i).unwrap())
        .collect();
    assert_eq!(names, ["a/b", "default", "données", "information_schema"]);
    assert_eq!(first(&run(&s, "show tables").await), "x/y");
    assert_eq!(first(&run(&s, "select a from `x/y`").await), "1");
    assert_eq!(first(&run(&s, "show tables from `données`").await), "été");
    assert_eq!(first(&run(&s, "select a from `données`.`été`").await), "2");
}

/// Issue 53.5: writers and readers of one table, through SQL, never fail because of each other,
/// and a statement sees every commit that completed before it started. Two engines on one
/// location stand for two server processes; each serves 8 writer connections (5-row INSERTs)
/// and 8 reader connections (a lookup of the newest key some writer has committed, and counts).
/// `SIEVE_RACE_STATEMENTS` sets the total (1,000 by default: a debug build takes about 45 s per 1,000, and more as the table grows).
async fn writers_and_readers_never_fail_each_other(location: String) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    const WRITERS: usize = 16;
    const READERS: usize = 16;
    let statements: usize = std::env::var("SIEVE_RACE_STATEMENTS")
        .map(|n| n.parse().expect("SIEVE_RACE_STATEMENTS is a number"))
        .unwrap_or(1000);
    let per_connection = statements / (WRITERS + READERS);
    let engines = [
        Engine::open(&location).await.unwrap(),
        Engine::open(&location).await.unwrap(),
    ];
    run(
        &engines[0].session().unwrap(),
        "create table t (k bigint, w int, v varchar) with (index_columns = 'k')",
    )
    .await;
    // Inserts each writer has seen committed.
    let committed: Arc<Vec<AtomicU64>> =
        Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let mut connections = tokio::task::JoinSet::new();
    for w in 0..WRITERS {
        let session = engines[w % 2].session().unwrap();
        let committed = committed.clone();
        connections.spawn(async move {
            for i in 0..per_connection as u64 {
                let rows: Vec<String> = (0..5)
                    .map(|j| format!("({}, {w}, 'w{w}i{i}')", (w as u64) << 32 | i * 5 + j))
                    .collect();
                let sql = format!("insert into t values {}", rows.join(", "));
                session
                    .execute(&sql)
                    .await
                    .unwrap_or_else(|e| panic!("writer {w}, insert {i}: {e}"));
                committed[w].store(i + 1, Ordering::SeqCst);
            }
        });
    }
    for r in 0..READERS {
        let session = engines[r % 2].session().unwrap();
        let committed = committed.clone();
        connections.spawn(async move {
            for i in 0..per_connection {
                let seen: Vec<u64> = committed.iter().map(|c| c.load(Ordering::SeqCst)).collect();
                if i % 4 == 3 {
                    let sql = "select count(*) from t";
                    let out = session
                        .execute(sql)
                        .await
                        .unwrap_or_else(|e| panic!("reader {r}, {sql}: {e}"));
                    let count: u64 = first(&out).parse().unwrap();
                    let before: u64 = seen.iter().sum::<u64>() * 5;
                    assert!(
                        count >= before && count % 5 == 0,
                        "reader {r} counted {count} rows after {before} were committed"
                    );
                    continue;
                }
                let w = (r + i) % WRITERS;
                let Some(newest) = seen[w].checked_sub(1) else {
                    continue;
                };
                let k = (w as u64) << 32 | newest * 5 + 4;
                let sql = format!("select v from t where k = {k}");
                let out = session
                    .execute(&sql)
                    .await
                    .unwrap_or_else(|e| panic!("reader {r}, {sql}: {e}"));
                assert_eq!(
                    common::rows(&out),
                    [format!("w{w}i{newest}")],
                    "reader {r}: {sql} after writer {w} committed it"
                );
            }
        });
    }
    while let Some(done) = connections.join_next().await {
        done.unwrap();
    }
    let total: u64 = committed.iter().map(|c| c.load(Ordering::SeqCst)).sum();
    for engine in &engines {
        let out = run(
            &engine.session().unwrap(),
            "select count(*), count(distinct k) from t",
        )
        .await;
        assert_eq!(common::rows(&out), [format!("{}|{}", total * 5, total * 5)]);
    }
}

#[test]
fn writers_and_readers_never_fail_each_other_on_local_files() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_string();
    on_query_threads(writers_and_readers_never_fail_each_other(location));
}

#[test]
fn writers_and_readers_never_fail_each_other_on_s3() {
    let location = format!("{}/race-{:x}", common::s3_base(), rand::random::<u64>());
    on_query_threads(writers_and_readers_never_fail_each_other(location));
}
