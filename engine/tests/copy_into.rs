//! COPY INTO from MinIO: CSV, NDJSON and Parquet files loaded in one commit; a bad file (a value
//! of the wrong type, a truncated Parquet file, a column the table lacks) aborts the COPY and
//! leaves the table as it was; ON_ERROR = CONTINUE skips and reports; only configured locations
//! are read. Fails unless SIEVE_TEST_S3_URL (and the AWS_* variables) are set, as
//! scripts/test.sh sets them.

mod common;

use std::sync::Arc;

use common::{rows, run, s3_base};
use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::parquet::arrow::ArrowWriter;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rand::Rng;
use sieve_engine::{Engine, Session};
use sieve_storage::{ExternalLocation, ExternalStores};

/// A session over fresh storage whose COPY may read `landing` (a fresh prefix), and a store to
/// put files there.
async fn setup() -> (Session, String, Arc<dyn ObjectStore>, String) {
    let base = s3_base();
    let id = format!("{:x}", rand::rng().random::<u64>());
    let landing = format!("{base}/landing-{id}");
    let bucket_and_prefix = landing.trim_start_matches("s3://");
    let (bucket, prefix) = bucket_and_prefix.split_once('/').unwrap();
    let prefix = prefix.to_string();
    let store: Arc<dyn ObjectStore> = Arc::new(
        AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .build()
            .unwrap(),
    );
    let external = ExternalStores::open(&[ExternalLocation {
        url: landing.clone(),
        ..ExternalLocation::default()
    }])
    .unwrap();
    let engine = Engine::open(&format!("{base}/copy-{id}"))
        .await
        .unwrap()
        .with_external_locations(external);
    let session = engine.session().unwrap();
    run(
        &session,
        "create table t (id bigint not null, name varchar, day date)",
    )
    .await;
    (session, landing, store, prefix)
}

async fn put(store: &Arc<dyn ObjectStore>, prefix: &str, name: &str, bytes: Vec<u8>) {
    let path = Path::from(format!("{prefix}/{name}"));
    store.put(&path, PutPayload::from(bytes)).await.unwrap();
}

fn parquet(columns: Vec<(&str, Arc<dyn datafusion::arrow::array::Array>)>) -> Vec<u8> {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    out
}

/// The first half of a Parquet file: its footer is missing.
fn truncated_parquet() -> Vec<u8> {
    let whole = parquet(vec![(
        "id",
        Arc::new(Int64Array::from((0..5000).collect::<Vec<i64>>())),
    )]);
    whole[..whole.len() / 2].to_vec()
}

async fn table(session: &Session) -> Vec<String> {
    rows(&run(session, "select id, name, day from t order by id").await)
}

async fn fails(session: &Session, sql: &str) -> String {
    match session.execute(sql).await {
        Ok(_) => panic!("{sql} succeeded"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_ndjson_and_parquet_files_load_in_one_commit_each() {
    let (session, landing, store, prefix) = setup().await;
    put(
        &store,
        &prefix,
        "csv/a.csv",
        b"id,name,day\n1,one,2024-01-01\n2,,2024-01-02\n".to_vec(),
    )
    .await;
    put(
        &store,
        &prefix,
        "csv/b.csv",
        b"id,name,day\n3,\"th,ree\",2024-01-03\n".to_vec(),
    )
    .await;
    put(&store, &prefix, "csv/readme.txt", b"not data".to_vec()).await;
    let copied = run(
        &session,
        &format!(
            "copy into t from '{landing}/csv/' pattern = '.*[.]csv' \
             file_format = (type = csv, skip_header = 1)"
        ),
    )
    .await;
    assert_eq!(
        rows(&copied),
        vec![
            format!("{landing}/csv/a.csv|2|0|"),
            format!("{landing}/csv/b.csv|1|0|"),
        ]
    );

    put(
        &store,
        &prefix,
        "x.ndjson",
        b"{\"id\": 4, \"name\": \"four\", \"day\": \"2024-01-04\"}\n{\"id\": 5}\n".to_vec(),
    )
    .await;
    let file = parquet(vec![
        ("id", Arc::new(Int64Array::from(vec![6, 7]))),
        ("NAME", Arc::new(StringArray::from(vec![Some("six"), None]))),
    ]);
    put(&store, &prefix, "y.parquet", file).await;
    run(
        &session,
        &format!("copy into t from '{landing}/x.ndjson' file_format = (type = ndjson)"),
    )
    .await;
    run(
        &session,
        &format!("copy into t from '{landing}/y.parquet' file_format = (type = parquet)"),
    )
    .await;
    assert_eq!(
        table(&session).await,
        vec![
            "1|one|2024-01-01",
            "2||2024-01-02",
            "3|th,ree|2024-01-03",
            "4|four|2024-01-04",
            "5||",
            "6|six|",
            "7||",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_file_aborts_the_copy_and_leaves_the_table_as_it_was() {
    let (session, landing, store, prefix) = setup().await;
    run(&session, "insert into t values (100, 'before', null)").await;
    let good: String = (0..1000).map(|i| format!("{i},ok,2024-01-01\n")).collect();
    put(&store, &prefix, "a/1-good.csv", good.into_bytes()).await;
    put(
        &store,
        &prefix,
        "a/2-bad.csv",
        b"1,x,2024-01-01\noops,y,2024-01-01\n".to_vec(),
    )
    .await;
    let e = fails(
        &session,
        &format!("copy into t from '{landing}/a/' file_format = (type = csv)"),
    )
    .await;
    assert!(
        e.contains(&format!("{landing}/a/2-bad.csv: "))
            && e.contains("Incorrect bigint value: 'oops' for column 'id' at line 2"),
        "{e}"
    );

    put(&store, &prefix, "truncated.parquet", truncated_parquet()).await;
    let e = fails(
        &session,
        &format!("copy into t from '{landing}/truncated.parquet' file_format = (type = parquet)"),
    )
    .await;
    assert!(e.contains("truncated.parquet: "), "{e}");

    let extra = parquet(vec![
        ("id", Arc::new(Int64Array::from(vec![1]))),
        ("zz", Arc::new(Int64Array::from(vec![2]))),
    ]);
    put(&store, &prefix, "extra.parquet", extra).await;
    let e = fails(
        &session,
        &format!("copy into t from '{landing}/extra.parquet' file_format = (type = parquet)"),
    )
    .await;
    assert!(
        e.contains("the file's column 'zz' is not in the table"),
        "{e}"
    );

    let text = parquet(vec![(
        "id",
        Arc::new(StringArray::from(vec!["7", "seven"])),
    )]);
    put(&store, &prefix, "text.parquet", text).await;
    let e = fails(
        &session,
        &format!("copy into t from '{landing}/text.parquet' file_format = (type = parquet)"),
    )
    .await;
    assert!(
        e.contains("Incorrect bigint value: 'seven' for column 'id' at row 2"),
        "{e}"
    );

    put(
        &store,
        &prefix,
        "z.ndjson",
        b"{\"id\": 1, \"color\": \"red\"}\n".to_vec(),
    )
    .await;
    let e = fails(
        &session,
        &format!("copy into t from '{landing}/z.ndjson' file_format = (type = ndjson)"),
    )
    .await;
    assert!(e.contains("z.ndjson: ") && e.contains("color"), "{e}");

    put(
        &store,
        &prefix,
        "n.ndjson",
        b"{\"name\": \"no id\"}\n".to_vec(),
    )
    .await;
    let e = fails(
        &session,
        &format!("copy into t from '{landing}/n.ndjson' file_format = (type = ndjson)"),
    )
    .await;
    assert!(
        e.contains("Column 'id' cannot be null (NOT NULL) at object 1"),
        "{e}"
    );

    assert_eq!(table(&session).await, vec!["100|before|"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_error_continue_skips_what_does_not_fit_and_reports_it() {
    let (session, landing, store, prefix) = setup().await;
    put(
        &store,
        &prefix,
        "c/1.csv",
        b"1,a,2024-01-01\nbad,b,2024-01-01\n3,c,2024-01-01\n".to_vec(),
    )
    .await;
    let whole = parquet(vec![("id", Arc::new(Int64Array::from(vec![9])))]);
    put(&store, &prefix, "c/2.parquet", whole[..20].to_vec()).await;
    let copied = run(
        &session,
        &format!("copy into t from '{landing}/c/' pattern = 'csv$' file_format = (type = csv) on_error = continue"),
    )
    .await;
    assert_eq!(rows(&copied), vec![format!("{landing}/c/1.csv|2|1|")]);
    let copied = run(
        &session,
        &format!("copy into t from '{landing}/c/2.parquet' file_format = (type = parquet) on_error = continue"),
    )
    .await;
    let report = rows(&copied);
    assert!(
        report[0].starts_with(&format!("{landing}/c/2.parquet|0|0|"))
            && report[0].len() > landing.len() + 20,
        "{report:?}"
    );
    assert_eq!(
        table(&session).await,
        vec!["1|a|2024-01-01", "3|c|2024-01-01"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_configured_locations_are_read() {
    let (session, landing, _store, _prefix) = setup().await;
    let base = s3_base();
    for (from, why) in [
        ("file:///etc/", "never from the server's host"),
        ("/etc/passwd", "never from the server's host"),
        (
            &format!("{base}/elsewhere/") as &str,
            "not under any of the server's external_locations",
        ),
        (
            &format!("{landing}-sibling/") as &str,
            "not under any of the server's external_locations",
        ),
    ] {
        let e = fails(
            &session,
            &format!("copy into t from '{from}' file_format = (type = csv)"),
        )
        .await;
        assert!(e.contains(why), "{from}: {e}");
    }
    let e = fails(
        &session,
        &format!("copy into t from '{landing}/nothing/' file_format = (type = csv)"),
    )
    .await;
    assert!(e.contains("no files at"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_copy_of_the_same_files_loads_nothing_unless_forced_or_changed() {
    let (session, landing, store, prefix) = setup().await;
    put(&store, &prefix, "r/1.csv", b"1,a,2024-01-01\n".to_vec()).await;
    put(&store, &prefix, "r/2.csv", b"2,b,2024-01-01\n".to_vec()).await;
    let copy = format!("copy into t from '{landing}/r/' file_format = (type = csv)");
    assert_eq!(rows(&run(&session, &copy).await).len(), 2);
    assert!(
        rows(&run(&session, &copy).await).is_empty(),
        "loaded before"
    );
    // An INSERT between COPYs keeps the record.
    run(&session, "insert into t values (10, 'x', null)").await;
    assert!(rows(&run(&session, &copy).await).is_empty());
    // A file written again is a new file; a new file is loaded alone.
    put(
        &store,
        &prefix,
        "r/2.csv",
        b"2,b,2024-01-01\n3,c,2024-01-01\n".to_vec(),
    )
    .await;
    put(&store, &prefix, "r/3.csv", b"4,d,2024-01-01\n".to_vec()).await;
    assert_eq!(
        rows(&run(&session, &copy).await),
        vec![
            format!("{landing}/r/2.csv|2|0|"),
            format!("{landing}/r/3.csv|1|0|")
        ]
    );
    let forced = run(&session, &format!("{copy} force = true")).await;
    assert_eq!(rows(&forced).len(), 3);
    let out = run(&session, "select count(*), count(distinct id) from t").await;
    assert_eq!(rows(&out), vec!["10|5"]);
    // A failed COPY records nothing: its files load when it is run again.
    put(
        &store,
        &prefix,
        "s/1.csv",
        b"5,e,2024-01-01\nbad,f,2024-01-01\n".to_vec(),
    )
    .await;
    let bad = format!("copy into t from '{landing}/s/' file_format = (type = csv)");
    fails(&session, &bad).await;
    put(&store, &prefix, "s/1.csv", b"5,e,2024-01-01\n".to_vec()).await;
    assert_eq!(
        rows(&run(&session, &bad).await),
        vec![format!("{landing}/s/1.csv|1|0|")]
    );
}

/// `read_parquet()`: the same locations as COPY INTO, as a table to select from, insert from and
/// create a table from (its columns inferred from the files); a bad file fails the statement
/// naming it, and the table it was writing is as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_parquet_selects_inserts_and_creates_tables_from_allowed_files() {
    let (session, landing, store, prefix) = setup().await;
    for (name, ids) in [("pq/a.parquet", 0..3000i64), ("pq/b.parquet", 3000..5000)] {
        let names: Vec<String> = ids.clone().map(|i| format!("n{i}")).collect();
        let file = parquet(vec![
            ("id", Arc::new(Int64Array::from_iter_values(ids))),
            ("name", Arc::new(StringArray::from(names))),
        ]);
        put(&store, &prefix, name, file).await;
    }
    put(&store, &prefix, "pq/readme.txt", b"not parquet".to_vec()).await;
    let files = format!("read_parquet('{landing}/pq/', '.*[.]parquet')");

    let counted = run(
        &session,
        &format!("select count(*), sum(id), max(name) from {files}"),
    )
    .await;
    assert_eq!(rows(&counted), ["5000|12497500|n999"]);
    let one = run(
        &session,
        &format!("select name from read_parquet('{landing}/pq/b.parquet') where id = 4321"),
    )
    .await;
    assert_eq!(rows(&one), ["n4321"]);
    // An empty marker beside the files, as Spark leaves, is no file to read.
    let spark = format!("{prefix}/spark");
    put(&store, &spark, "_SUCCESS", Vec::new()).await;
    let part = parquet(vec![("id", Arc::new(Int64Array::from(vec![7, 8])))]);
    put(&store, &spark, "part-00000.parquet", part).await;
    let counted = run(
        &session,
        &format!("select count(*) from read_parquet('{landing}/spark/')"),
    )
    .await;
    assert_eq!(rows(&counted), ["2"]);

    let created = run(
        &session,
        &format!("create table copied with (block_rows = 1000) as select * from {files}"),
    )
    .await;
    assert_eq!(created.affected_rows, Some(5000));
    let columns = run(&session, "describe copied").await;
    let columns: Vec<String> = rows(&columns)
        .iter()
        .map(|r| r.split('|').take(2).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(columns, ["id bigint", "name varchar(65535)"]);
    let found = run(&session, "select id from copied where name = 'n4321'").await;
    assert_eq!(rows(&found), ["4321"]);
    assert_eq!(found.stats.blocks_read, 1, "the new table's filters prune");

    let inserted = run(
        &session,
        &format!("insert into t (id, name) select id, name from {files} where id < 10"),
    )
    .await;
    assert_eq!(inserted.affected_rows, Some(10));
    assert_eq!(table(&session).await.len(), 10);

    // A bad file fails the insert, naming it; nothing of it is committed.
    put(&store, &prefix, "bad/cut.parquet", truncated_parquet()).await;
    let e = fails(
        &session,
        &format!("insert into t (id) select id from read_parquet('{landing}/bad/')"),
    )
    .await;
    assert!(e.contains(&format!("{landing}/bad/")), "{e}");
    assert_eq!(table(&session).await.len(), 10);

    let base = s3_base();
    for (call, why) in [
        (
            "read_parquet('file:///etc/')".to_string(),
            "never from the server's host",
        ),
        (
            "read_parquet('/etc/passwd')".to_string(),
            "never from the server's host",
        ),
        (
            format!("read_parquet('{base}/elsewhere/')"),
            "not under any of the server's external_locations",
        ),
        (format!("read_parquet('{landing}/nothing/')"), "no files at"),
        (
            format!("read_parquet('{landing}/pq/', '(')"),
            "not a regular expression",
        ),
        (
            format!("read_parquet(concat('{landing}', '/pq/'))"),
            "read_parquet takes the files' location",
        ),
    ] {
        let e = fails(&session, &format!("select * from {call}")).await;
        assert!(e.contains(why), "{call}: {e}");
    }
}
