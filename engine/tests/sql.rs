//! The SQL surface end to end on memory and local storage: DDL, CTAS from numbers(), INSERT,
//! point queries with and without pruning, errors, EXPLAIN ANALYZE.

use datafusion::arrow::util::display::array_value_to_string;
use datafusion::arrow::util::pretty::pretty_format_batches;
use sieve_engine::{Engine, QueryOutput};

mod common;

use common::{memory_session, run};

fn text(output: &QueryOutput) -> String {
    pretty_format_batches(&output.batches).unwrap().to_string()
}

/// The first row's value of a column, as text.
fn value(output: &QueryOutput, column: usize) -> String {
    array_value_to_string(output.batches[0].column(column), 0).unwrap()
}

fn single_u64(output: &QueryOutput) -> u64 {
    value(output, 0).parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn databend_t10b_statement_runs_verbatim_and_point_queries_read_one_block() {
    let session = memory_session().await;
    let created = run(
        &session,
        "create table t10b with (block_rows = 20000) as select number as c1, cast(rand() as string) as c2 from numbers(100000)",
    )
    .await;
    assert_eq!(created.affected_rows, Some(100_000));
    let count = run(&session, "select count(*), count(distinct c1) from t10b").await;
    assert_eq!(
        text(&count).matches("100000").count(),
        2,
        "{}",
        text(&count)
    );

    let probe = run(&session, "select c1, c2 from t10b where c1 = 54321").await;
    assert_eq!(probe.row_count(), 1);
    assert_eq!(probe.stats.blocks_total, 5);
    assert_eq!(
        probe.stats.blocks_read, 1,
        "min/max prunes the other blocks"
    );
    let c2 = value(&probe, 1);
    let point = run(&session, &format!("select c1 from t10b where c2 = '{c2}'")).await;
    assert_eq!(single_u64(&point), 54321);

    // rand() makes each run's keys differ, and a block's filter may answer "maybe" for a key it
    // lacks; on the same shape of table with fixed keys the blocks read are exact.
    run(
        &session,
        "create table fixed with (block_rows = 20000) as select number as c1, cast(number * 2654435761 % 1000000007 as string) as c2 from numbers(100000)",
    )
    .await;
    let key = 54321u64 * 2654435761 % 1000000007;
    let fixed = run(
        &session,
        &format!("select c1 from fixed where c2 = '{key}'"),
    )
    .await;
    assert_eq!(single_u64(&fixed), 54321);
    assert_eq!(
        (fixed.stats.blocks_total, fixed.stats.blocks_read),
        (5, 1),
        "the filters prune the other four blocks"
    );
    let absent = run(&session, "select c1 from fixed where c2 = 'not a number'").await;
    assert_eq!(absent.row_count(), 0);
    assert_eq!(absent.stats.blocks_read, 0);

    run(&session, "set sieve.pruning = false").await;
    let unpruned = run(&session, &format!("select c1 from t10b where c2 = '{c2}'")).await;
    assert_eq!(single_u64(&unpruned), 54321);
    assert_eq!(unpruned.stats.blocks_read, 5);
}

#[tokio::test]
async fn ddl_insert_and_catalog_statements() {
    let session = memory_session().await;
    run(&session, "create database shop").await;
    run(&session, "use shop").await;
    run(&session, "create table items (id bigint not null, name varchar, price double) with (filter = 'xor16', block_rows = 2)").await;
    let inserted = run(
        &session,
        "insert into items values (1, 'apple', 0.5), (2, 'pear', 0.75), (3, null, 1.0)",
    )
    .await;
    assert_eq!(inserted.affected_rows, Some(3));
    let rows = run(
        &session,
        "select id, name from items where name = 'pear' or id = 3 order by id",
    )
    .await;
    assert_eq!(rows.row_count(), 2);
    assert_eq!(
        text(&run(&session, "show tables").await)
            .matches("items")
            .count(),
        1
    );
    assert!(text(&run(&session, "show databases").await).contains("shop"));
    let described = text(&run(&session, "describe items").await);
    assert!(
        described.contains("price") && described.contains("double"),
        "{described}"
    );
    let qualified = run(&session, "select count(*) from shop.items").await;
    assert_eq!(single_u64(&qualified) as usize, 3);
    run(&session, "drop table items").await;
    let gone = session.execute("select * from items").await.unwrap_err();
    assert!(
        gone.to_string()
            .contains("table 'sieve.shop.items' not found"),
        "{gone}"
    );
    run(&session, "drop table if exists items").await;
    run(&session, "use default").await;
    run(&session, "drop database shop").await;
}

/// SHOW CREATE TABLE's statement makes the same table again: columns, types, NULLs, options.
#[tokio::test]
async fn show_create_table_recreates_the_table() {
    let session = memory_session().await;
    run(
        &session,
        "create table original (a bigint unsigned not null, b varchar, c decimal(10,2), \
         d boolean, e timestamp, f date, g double, h int, i smallint unsigned) \
         with (index_columns = 'a,b', filter = 'xor16', block_rows = 1000, locator = false, \
         max_false_reads = 0.5, parquet_bloom_filters = true, stale_rebuild_fraction = 0.3)",
    )
    .await;
    let shown = value(&run(&session, "show create table original").await, 1);
    assert!(shown.starts_with("CREATE TABLE `original` ("), "{shown}");
    run(&session, &shown.replace("`original`", "`copy`")).await;
    let copied = value(&run(&session, "show create table copy").await, 1);
    assert_eq!(copied.replace("`copy`", "`original`"), shown);
    assert_eq!(
        text(&run(&session, "describe copy").await),
        text(&run(&session, "describe original").await)
    );
    assert!(shown.contains("locator = false") && shown.contains("filter = 'xor16'"));
    assert!(shown.contains("stale_rebuild_fraction = 0.3"), "{shown}");
}

/// A prepared statement reads the tables of the database it was prepared in, as in MySQL, and
/// binds typed values.
#[tokio::test]
async fn prepared_statements_resolve_names_where_they_were_prepared() {
    let session = memory_session().await;
    run(&session, "create database other").await;
    run(
        &session,
        "create table t as select number as a from numbers(10)",
    )
    .await;
    run(
        &session,
        "create table other.t as select number as a from numbers(3)",
    )
    .await;
    let prepared = session
        .prepare("select count(*) from t where a < ? limit ?")
        .await
        .unwrap();
    assert_eq!(prepared.params(), 2);
    run(&session, "use other").await;
    let count = |values| async {
        let output = session
            .execute_prepared(&prepared, values)
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        single_u64(&output)
    };
    use datafusion::common::ScalarValue::{Int64, Utf8};
    assert_eq!(count(vec![Int64(Some(5)), Int64(Some(1))]).await, 5);
    // A string where a number is expected is data, compared as the column's type would be.
    assert_eq!(count(vec![Utf8(Some("7".into())), Int64(Some(1))]).await, 7);
    let wrong = session
        .execute_prepared(&prepared, vec![Int64(Some(1))])
        .await;
    let wrong = wrong
        .err()
        .expect("one value for two parameters is refused");
    assert!(
        wrong
            .to_string()
            .contains("the statement has 2 parameters, 1 given"),
        "{wrong}"
    );
}

/// Cassandra's ALLOW FILTERING: a filter that can skip no block of a table of more
/// than `sieve.full_scan_blocks` blocks is refused, saying how to narrow it or run it anyway;
/// point lookups on indexed columns and filters that skip blocks run.
#[tokio::test]
async fn filtered_full_scans_of_large_tables_are_refused() {
    let session = memory_session().await;
    run(
        &session,
        "create table big with (block_rows = 100, index_columns = 'k') as \
         select number as n, number % 7 as k, concat('v', cast(number as string)) as s \
         from numbers(2000)",
    )
    .await;
    let refused = session
        .execute("select count(*) from big where s like '%77%'")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("all 20 blocks")
            && refused.contains("(k)")
            && refused.contains("ALLOW FILTERING")
            && refused.contains("sieve.allow_full_scan"),
        "{refused}"
    );
    let allowed = run(
        &session,
        "select count(*) from big where s like '%77%' allow filtering",
    )
    .await;
    assert_eq!(single_u64(&allowed), 38);
    // Every block holds k = 3, so nothing is skipped; still a point lookup on an indexed column.
    assert_eq!(
        single_u64(&run(&session, "select count(*) from big where k = 3").await),
        286
    );
    // Min/max skips blocks of the ordered column n: a range runs.
    assert_eq!(
        single_u64(&run(&session, "select count(*) from big where n >= 1500").await),
        500
    );
    // No filter at all, and metadata answers: not a filtered scan.
    assert_eq!(
        single_u64(&run(&session, "select count(*) from big").await),
        2000
    );
    run(&session, "set sieve.allow_full_scan = true").await;
    assert_eq!(
        single_u64(&run(&session, "select count(*) from big where s like '%77%'").await),
        38
    );
    run(&session, "set sieve.allow_full_scan = false").await;
    run(&session, "set sieve.full_scan_blocks = 20").await;
    assert_eq!(
        single_u64(&run(&session, "select count(*) from big where s like '%77%'").await),
        38
    );
}

#[tokio::test]
async fn bad_input_gets_clear_errors() {
    let session = memory_session().await;
    let err = |sql: &'static str| {
        let session = &session;
        async move { session.execute(sql).await.unwrap_err().to_string() }
    };
    assert!(err("selec 1").await.to_lowercase().contains("expected"));
    assert!(err("select * from nope").await.contains("nope"));
    assert!(
        err("use nowhere")
            .await
            .contains("unknown database 'nowhere'")
    );
    run(&session, "create table t (a int)").await;
    assert!(
        err("create table t (a int)")
            .await
            .contains("already exists")
    );
    run(&session, "create table if not exists t (a int)").await;
    assert!(
        err("create table u (a int) with (filter = 'xor9')")
            .await
            .contains("xor9")
    );
    assert!(
        err("create table u (a int) with (colour = 'red')")
            .await
            .contains("unknown table option")
    );
    assert!(
        err("create table u (a int) with (index_columns = 'b')")
            .await
            .contains("'b'")
    );
}

#[tokio::test]
async fn a_failing_ctas_leaves_no_table() {
    let session = memory_session().await;
    let failed = session
        .execute("create table broken with (block_rows = 1000) as select cast(case when number = 5000 then 'x' else '1' end as int) as v from numbers(10000)")
        .await;
    // The cast's own error, and no table left behind.
    let failed = failed.unwrap_err().to_string();
    assert!(
        failed.contains("Cannot cast string 'x' to value of Int32 type"),
        "{failed}"
    );
    let missing = session.execute("select * from broken").await.unwrap_err();
    assert!(
        missing
            .to_string()
            .contains("table 'sieve.default.broken' not found"),
        "{missing}"
    );
    let tables = run(&session, "show tables").await;
    assert_eq!(tables.row_count(), 0);
}

#[tokio::test]
async fn explain_analyze_shows_block_pruning() {
    let session = memory_session().await;
    run(&session, "create table t with (block_rows = 100) as select number as n, cast(number as string) as s from numbers(1000)").await;
    let plan = text(&run(&session, "explain analyze select * from t where s = '555'").await);
    for metric in [
        "blocks_total=10",
        "blocks_pruned_by_filter=",
        "blocks_read=",
        "sidecar_bytes_fetched=",
        "sidecar_cache_hits=",
    ] {
        assert!(plan.contains(metric), "{metric} missing from\n{plan}");
    }
}

#[tokio::test]
async fn a_second_process_sees_tables_and_rows() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let first = Engine::open(location).await.unwrap().session().unwrap();
    run(
        &first,
        "create table shared as select number as n from numbers(10)",
    )
    .await;
    let second = Engine::open(location).await.unwrap().session().unwrap();
    assert_eq!(
        single_u64(&run(&second, "select count(*) from shared").await),
        10
    );
    run(&second, "insert into shared select number from numbers(5)").await;
    assert_eq!(
        single_u64(&run(&first, "select count(*) from shared").await),
        15
    );
    let nulls = run(&first, "select count(*) from shared where n is null").await;
    assert_eq!(single_u64(&nulls), 0);
}

/// A text lookup is recognised once and its text kept for the engine's sessions: run again, it
/// binds the table as it is now. A table dropped and created again with another column type,
/// whose comparison the full path must coerce, is answered by the full path; another session
/// with identifier normalisation off does not take the entry of a session with it on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recognised_text_lookup_follows_the_table() {
    let engine = Engine::open("memory://").await.unwrap();
    let s = engine.session().unwrap();
    run(
        &s,
        "create table t as select number as c1, cast(number * 7 as string) as c2 from numbers(100)",
    )
    .await;
    let sql = "select c1 from t where c2 = '35'";
    for _ in 0..2 {
        let found = run(&s, sql).await;
        assert!(found.short_path);
        assert_eq!(value(&found, 0), "5");
    }
    let other = engine.session().unwrap();
    let found = run(&other, sql).await;
    assert!(found.short_path);
    assert_eq!(value(&found, 0), "5");

    run(&s, "drop table t").await;
    run(
        &s,
        "create table t as select number as c1, number * 7 as c2 from numbers(100)",
    )
    .await;
    for _ in 0..2 {
        let found = run(&s, sql).await;
        assert!(!found.short_path);
        assert_eq!(value(&found, 0), "5");
    }

    run(&s, "create table \"Upper\" as select number as c1, cast(number as string) as c2 from numbers(3)").await;
    let exact = engine.session().unwrap();
    run(
        &exact,
        "set datafusion.sql_parser.enable_ident_normalization = false",
    )
    .await;
    let upper = "select c1 from Upper where c2 = '2'";
    let found = run(&exact, upper).await;
    assert!(found.short_path);
    assert_eq!(value(&found, 0), "2");
    let error = s.execute(upper).await.unwrap_err().to_string();
    assert!(error.contains("upper"), "{error}");
}

/// An INSERT's ORDER BY decides which rows share a block, even through a projection that drops
/// the sort key: DataFusion would scatter the sorted rows round-robin for the projection and
/// gather them in whatever order the partitions finish (the sink requires no order).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insert_writes_its_rows_in_order_by_order() {
    let session = memory_session().await;
    run(&session, "set datafusion.execution.target_partitions = 4").await;
    run(
        &session,
        "create table t (k bigint, s varchar) with (block_rows = 1000)",
    )
    .await;
    // k is the row number, through a CASE that DataFusion cannot tell keeps the order.
    let insert = "insert into t \
                  select case when number % 2 = 0 then number else number end, \
                         concat('v', cast(number as varchar)) \
                  from numbers(9000) order by number";
    let plan = text(&run(&session, &format!("explain {insert}")).await);
    let above_the_sort = &plan[..plan.find("SortExec").unwrap()];
    assert!(
        !above_the_sort.contains("RoundRobinBatch")
            && !above_the_sort.contains("CoalescePartitionsExec"),
        "the sorted rows are scattered and gathered again:\n{plan}"
    );
    run(&session, insert).await;
    for block in 0..9 {
        let (low, high) = (block * 1000, block * 1000 + 999);
        let query = format!("select count(*) from t where k between {low} and {high}");
        assert_eq!(single_u64(&run(&session, &query).await), 1000);
        let plan = text(&run(&session, &format!("explain analyze {query}")).await);
        assert!(
            plan.contains("blocks_read=1,") || plan.contains("blocks_read=1 "),
            "k {low}..={high} is not one block's rows:\n{plan}"
        );
    }
}

/// `string_agg` and `array_agg` run as one aggregate stage, whose state is reserved in the
/// statement's budget where it is built (issue 53: DataFusion's partial stage emits it to the final
/// stage instead, copying it outside every budget). They answer as the two stages do, grouped or
/// not, with ORDER BY, DISTINCT and NULLs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collecting_aggregates_answer_in_one_stage_as_in_two() {
    let session = memory_session().await;
    let rows = "with c as (select number % 7 as g, cast(number as varchar) as s, number as n \
                from numbers(2000))";
    for (query, stages) in [
        (
            "select g, string_agg(s, ',' order by n), count(*) from c group by g order by g",
            "mode=SinglePartitioned",
        ),
        (
            "select g, array_agg(n order by n desc) from c where n % 3 = 0 group by g order by g",
            "mode=SinglePartitioned",
        ),
        (
            "select g, sum(n), length(string_agg(s, '')), array_agg(distinct g) from c group by g \
             order by g",
            "mode=SinglePartitioned",
        ),
        (
            "select g, array_agg(case when n > 1900 then n end order by n) from c group by g order by g",
            "mode=SinglePartitioned",
        ),
        (
            "select array_agg(n order by n), length(string_agg(s, '')), max(n) from c",
            "mode=Single,",
        ),
    ] {
        let sql = format!("{rows} {query}");
        let plan = text(&run(&session, &format!("explain {sql}")).await);
        assert!(plan.contains(stages), "{query}:\n{plan}");
        let one_stage = text(&run(&session, &sql).await);
        run(&session, "set sieve.one_stage_collect = false").await;
        let plan = text(&run(&session, &format!("explain {sql}")).await);
        assert!(plan.contains("mode=Partial"), "{query}:\n{plan}");
        assert_eq!(text(&run(&session, &sql).await), one_stage, "{query}");
        run(&session, "set sieve.one_stage_collect = true").await;
    }
}

/// numbers() streams in the session's target partitions: one gives its rows strictly in order
/// (merged partitions come only nearly in order, and under load one can run a chunk ahead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_streams_in_the_sessions_partitions() {
    let session = memory_session().await;
    for partitions in [1, 3] {
        run(
            &session,
            &format!("set datafusion.execution.target_partitions = {partitions}"),
        )
        .await;
        let plan = text(&run(&session, "explain select number from numbers(300000)").await);
        assert!(
            plan.contains(&format!("partition_sizes={partitions}")),
            "{plan}"
        );
    }
    run(&session, "set datafusion.execution.target_partitions = 1").await;
    let output = run(&session, "select number from numbers(300000)").await;
    let mut next = 0u64;
    for batch in &output.batches {
        for i in 0..batch.num_rows() {
            assert_eq!(
                array_value_to_string(batch.column(0), i).unwrap(),
                next.to_string()
            );
            next += 1;
        }
    }
    assert_eq!(next, 300000);
}
