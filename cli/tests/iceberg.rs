//! Iceberg tables written by PyIceberg (as a user's other engines write them: appends, a
//! copy-on-write delete, position and equality delete files, a commit while Sieve serves), on a local
//! warehouse and on MinIO, read through an attached SQL or REST catalog, every answer compared with
//! PyIceberg's own scan of the same snapshot.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::pyiceberg::{config, config_at, pyiceberg, pyiceberg_at};
use common::worker::{SECRET, Worker};
use common::{Server, output_within, stderr, stdout};

/// [`config`] with the indexer looking for new snapshots every `seconds`.
fn config_indexing_every(warehouse: &Path, seconds: u64) -> String {
    format!("{}index_interval_s = {seconds}\n", config(warehouse))
}

/// A counter of the attached table's scan in EXPLAIN ANALYZE.
fn metric(server: &Server, query: &str, name: &str) -> u64 {
    metric_of(server, query, "IcebergScanExec", name)
}

/// A counter of the first `node` of `query`'s plan in EXPLAIN ANALYZE.
fn metric_of(server: &Server, query: &str, node: &str, name: &str) -> u64 {
    let plan = ok(server, &format!("explain analyze {query}"));
    let at = plan.find(node).unwrap_or_else(|| panic!("{plan}"));
    common::plan_counter(&plan[at..], name)
}

fn ok(server: &Server, sql: &str) -> String {
    let out = server.mysql(&["-e", sql]);
    assert!(
        out.status.success(),
        "{sql}: {}\n{}",
        stderr(&out),
        server.log()
    );
    stdout(&out)
}

fn refused(server: &Server, sql: &str, needle: &str) {
    let out = server.mysql(&["-e", sql]);
    assert!(!out.status.success(), "{sql} answered {}", stdout(&out));
    assert!(stderr(&out).contains(needle), "{sql}: {}", stderr(&out));
}

/// The ids PyIceberg read from `table`, as the client prints them one per line.
fn ids(read: &serde_json::Value, table: &str) -> String {
    read[table]["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| format!("{id}\n"))
        .collect()
}

#[test]
fn attached_tables_read_as_pyiceberg_reads_them_and_follow_commits() {
    let warehouse = tempfile::tempdir().unwrap();
    let read = pyiceberg(warehouse.path(), "make");
    let server = Server::start_with(&config(warehouse.path()), None);

    assert_eq!(
        ok(&server, "select id from lake.ns.people order by id"),
        ids(&read, "ns.people")
    );
    assert_eq!(read["ns.people"]["count"], 10096);
    assert_eq!(
        ok(&server, "select count(*) from lake.ns.people"),
        "10096\n"
    );
    // A point lookup prunes by Parquet's statistics; rows deleted by the copy-on-write rewrite
    // (id 5) and by position (10000, 10001, 10099) are gone, their neighbours are not.
    for (id, want) in [
        (5, ""),
        (6, "p6\n"),
        (10000, ""),
        (10001, ""),
        (10002, "p10002\n"),
        (10099, ""),
    ] {
        let sql = format!("select name from lake.ns.people where id = {id}");
        assert_eq!(ok(&server, &sql), want, "{sql}");
    }
    // No index: the manifest's bounds of id leave out the file that cannot hold the key
    // (ids 10000 … 10099) before it is opened; an expression over id leaves nothing out.
    let lookup = "select name from lake.ns.people where id = 6";
    assert_eq!(metric(&server, lookup, "blocks_pruned_by_minmax"), 1);
    assert_eq!(metric(&server, lookup, "blocks_read"), 1);
    let unpruned = "select name from lake.ns.people where id + 0 = 6";
    assert_eq!(metric(&server, unpruned, "blocks_pruned_by_minmax"), 0);
    assert_eq!(ok(&server, unpruned), "p6\n");
    let in_range = read["ns.people"]["ids"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|id| (9990..=10010).contains(&id.as_i64().unwrap()))
        .count();
    assert_eq!(in_range, 19);
    assert_eq!(
        ok(
            &server,
            "select count(*), min(id), max(id) from lake.ns.people where id between 9990 and 10010"
        ),
        format!("{in_range}\t9990\t10010\n")
    );
    assert_eq!(ok(&server, "select count(*) from lake.ns.empty"), "0\n");
    // A float filter is not pruned by Parquet's statistics, which leave NaN out: the same
    // count as without a filter to push.
    let unfiltered = "select sum(case when d > 5 then 1 else 0 end) from lake.ns.floats";
    assert_eq!(ok(&server, unfiltered), "1\n");
    assert_eq!(
        ok(&server, "select count(*) from lake.ns.floats where d > 5"),
        "1\n"
    );
    // Joined with a Sieve table like any other table.
    let joined = ok(
        &server,
        "create table picks as select number * 1000 as id from numbers(12); \
         select count(*) from picks join lake.ns.people p on p.id = picks.id",
    );
    assert_eq!(
        joined, "10\n",
        "0, 1000, …, 9000: 10000 is deleted, 11000 never written"
    );

    // Listed as MySQL lists databases and tables: a namespace is `catalog.namespace`.
    assert_eq!(
        ok(&server, "show tables from lake.ns"),
        "empty\nfloats\npeople\nrenamed\nreplaced\n"
    );
    assert_eq!(
        ok(&server, "show tables from lake.ns like 'p%'"),
        "people\n"
    );
    let databases = ok(&server, "show databases");
    assert!(databases.contains("\nlake.ns\nlake.other\n"), "{databases}");
    // The database `lake.ns` as SHOW DATABASES lists it, quoted back as one name.
    assert_eq!(
        ok(&server, "use `lake.ns`; select count(*) from people"),
        "10096\n"
    );
    assert_eq!(
        ok(&server, "show full tables from `lake.ns` like 'p%'"),
        "people\tBASE TABLE\n"
    );
    assert_eq!(
        ok(&server, "select name from `lake.ns`.people where id = 6"),
        "p6\n"
    );
    assert!(ok(&server, "describe `lake.ns`.people").starts_with("id\tbigint"));
    refused(&server, "use `lake.nope`", "unknown database");
    refused(
        &server,
        "create database `lake.mine`",
        "hidden by the attached",
    );
    refused(&server, "create database lake", "hidden by the attached");
    // information_schema, which JDBC's and SQLAlchemy's metadata calls read: every attached
    // table, and the columns of those Sieve reads (not the nested one's).
    assert_eq!(
        ok(
            &server,
            "select schema_name from information_schema.schemata \
             where schema_name like 'lake.%' order by 1"
        ),
        "lake.ns\nlake.other\n"
    );
    assert_eq!(
        ok(
            &server,
            "select table_schema, table_name, engine from information_schema.tables \
             where table_schema like 'lake.%' order by 1, 2"
        ),
        "lake.ns\tempty\tIceberg\nlake.ns\tfloats\tIceberg\nlake.ns\tpeople\tIceberg\n\
         lake.ns\trenamed\tIceberg\nlake.ns\treplaced\tIceberg\nlake.other\tnested\tIceberg\n"
    );
    assert_eq!(
        ok(
            &server,
            "select column_name, ordinal_position, data_type, is_nullable \
             from information_schema.columns \
             where table_schema = 'lake.ns' and table_name = 'people' order by 2"
        ),
        "id\t1\tbigint\tYES\nname\t2\tvarchar\tYES\n"
    );
    assert_eq!(
        ok(
            &server,
            "select column_name, data_type from information_schema.columns \
             where table_schema = 'lake.other' order by ordinal_position"
        ),
        "id\tbigint\ntags\tjson\npoint\tjson\nattrs\tjson\n"
    );
    refused(
        &server,
        "show tables from lake.nope",
        "unknown database 'lake.nope'",
    );
    assert_eq!(
        ok(&server, "describe lake.ns.people"),
        "id\tbigint\tYES\t\tNULL\t\nname\tvarchar(65535)\tYES\t\tNULL\t\n"
    );
    assert_eq!(
        ok(&server, "show columns from lake.ns.people like 'n%'")
            .lines()
            .count(),
        1
    );

    // Nested columns (a list, a struct, a map) read as PyIceberg wrote them, sent as JSON: in
    // a full read, filters on them, and a lookup by id. The struct's z, added after the first
    // file was written, is null in its rows.
    assert_eq!(
        ok(&server, "select * from lake.other.nested order by id"),
        "1\t[\"a\",\"b\"]\t{\"x\":1.5,\"y\":-2.0,\"z\":null}\t{\"k\":1,\"l\":2}\n\
         2\t[]\tNULL\t{}\n\
         3\tNULL\t{\"x\":0.0,\"y\":null,\"z\":null}\tNULL\n\
         4\t[\"c\"]\t{\"x\":1.0,\"y\":2.0,\"z\":3.0}\t{\"m\":9}\n"
    );
    assert_eq!(
        ok(
            &server,
            "select id from lake.other.nested where point.z is null order by id"
        ),
        "1\n2\n3\n"
    );
    assert_eq!(
        ok(
            &server,
            "select id from lake.other.nested where point is null"
        ),
        "2\n"
    );
    assert_eq!(
        ok(
            &server,
            "select point, tags from lake.other.nested where id = 1"
        ),
        "{\"x\":1.5,\"y\":-2.0,\"z\":null}\t[\"a\",\"b\"]\n"
    );
    assert!(
        ok(&server, "describe lake.other.nested").contains("\npoint\tjson\t"),
        "DESCRIBE gives a nested column MySQL's json"
    );
    refused(
        &server,
        "create index ix on lake.other.nested (tags)",
        "which Sieve's filters do not index",
    );
    refused(&server, "select * from lake.ns.missing", "not found");

    // A lookup's result is kept for the snapshot it read: asked again, it is answered from
    // there, and a commit by another writer (a new snapshot) is never answered from it.
    let new_key = "select name from lake.ns.people where id = 20000";
    assert_eq!(ok(&server, new_key), "");
    assert_eq!(ok(&server, new_key), "");

    // Another writer commits: the next statement reads the new snapshot.
    let read = pyiceberg(warehouse.path(), "append");
    assert_eq!(
        ok(&server, "select count(*) from lake.ns.people"),
        format!("{}\n", read["ns.people"]["count"])
    );
    assert_eq!(ok(&server, new_key), "new\n");
    assert_eq!(ok(&server, new_key), "new\n");

    // A table Sieve cannot read (its files outside the warehouse) is left out of
    // information_schema's columns, with a warning, not an error for every table's; a
    // statement naming it says why.
    pyiceberg(warehouse.path(), "stray");
    let columns = "select table_name, column_name from information_schema.columns \
                   where table_schema = 'lake.ns' and column_name = 'name' order by 1";
    assert_eq!(
        ok(&server, columns),
        "empty\tname\npeople\tname\nreplaced\tname\n"
    );
    assert!(
        (server.log()).contains("left attached table lake.ns.stray out of a listing"),
        "{}",
        server.log()
    );
    refused(&server, "select * from lake.ns.stray", "warehouse");
    let stray = format!("{}-stray", warehouse.path().display());
    std::fs::remove_dir_all(stray).unwrap();

    // Names PyIceberg kept in mixed case: unquoted, DataFusion lowercases them, and the one
    // table spelled so but for case is found, in every statement as in those Sieve parses.
    pyiceberg(warehouse.path(), "mixed");
    for table in [
        "lake.Mixed.Orders",
        "lake.mixed.orders",
        "`lake.Mixed`.`Orders`",
    ] {
        let lookup = format!("select k from {table} where k = 2");
        assert_eq!(ok(&server, &lookup), "2\n", "{lookup}");
        let off = format!("set sieve.short_path = false; {lookup}");
        assert_eq!(ok(&server, &off), "2\n", "{off}");
        let all = format!("select count(*) from {table}");
        assert_eq!(ok(&server, &all), "3\n", "{all}");
    }
    ok(&server, "create index ix_k on lake.Mixed.Orders (k)");
    let lookup = "select k from lake.mixed.orders where k = 3";
    assert_eq!(metric(&server, lookup, "files_not_indexed"), 0);
    assert_eq!(ok(&server, lookup), "3\n");
    refused(&server, "select * from lake.mixed.nope", "not found");
}

/// A new snapshot's plan reads its metadata file, manifest list and the manifest its commit
/// added (PyIceberg appends one), not the manifests and delete file the last plan read: Iceberg
/// never rewrites a file in place. The server holds no Sieve table, so no background work of
/// its own sends requests while they are counted.
#[test]
fn a_new_snapshot_is_planned_from_what_its_commit_added() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "make");
    let metrics = common::free_port();
    let settings = format!("metrics_port = {metrics}\n{}", config(warehouse.path()));
    let server = Server::start_with(&settings, None);
    let planning = "select name from lake.ns.people where id = -1";
    let before = gets(metrics);
    assert_eq!(ok(&server, planning), "");
    let first = gets(metrics);
    let read = pyiceberg(warehouse.path(), "append");
    let manifests = read["ns.people"]["manifests"].as_u64().unwrap();
    assert!(manifests >= 4, "{manifests} manifests");
    // The first plan read the metadata file, the manifest list, every manifest of the last
    // snapshot and its delete file.
    assert!(first - before >= (2 + manifests) as f64);
    let before = gets(metrics);
    assert_eq!(ok(&server, planning), "");
    assert_eq!(gets(metrics) - before, 3.0);
}

/// The GET requests (ranged or whole) the server whose metrics are on port `metrics` has sent.
fn gets(metrics: u16) -> f64 {
    let scraped = common::prometheus::scrape(metrics);
    // Absent until the first GET.
    let get = "sieve_object_store_requests_total{operation=\"get\"}";
    scraped.get(get).copied().unwrap_or(0.0)
}

/// CREATE INDEX reads each small data file in one request (its footer, pages and key column
/// from those bytes), where by range it took four or more.
#[test]
fn an_index_build_reads_each_small_file_in_one_request() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "keys");
    let metrics = common::free_port();
    let settings = format!("metrics_port = {metrics}\n{}", config(warehouse.path()));
    let server = Server::start_with(&settings, None);
    // Planned once (the table's metadata, manifest list and manifests), then kept.
    assert_eq!(ok(&server, "select count(*) from lake.ns.keys"), "8000\n");
    let before = gets(metrics);
    let made = ok(&server, "create index ix_id on lake.ns.keys (id)");
    assert!(made.starts_with("8\t8000\t"), "{made}");
    assert_eq!(gets(metrics) - before, 8.0);
}

/// A file's columns are its table's by field id, as PyIceberg reads them: ns.renamed's first
/// file holds `label` as `name`; ns.replaced's first file holds a `name` that is not the
/// table's (dropped, then another added under its name), which reads as null. An index made
/// over the renamed column covers the old file and outlives another rename.
#[test]
fn renamed_and_replaced_columns_are_read_by_field_id() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "make");
    // The indexer's first pass an hour after the start: the file committed after the index
    // stays unindexed however slowly the test runs.
    let config = config_indexing_every(warehouse.path(), 3600);
    let server = Server::start_with(&config, None);
    assert_eq!(
        ok(&server, "select id, label from lake.ns.renamed order by id"),
        "1\ta\n2\tb\n11\ta2\n12\tb2\n"
    );
    // Pushed down to the old file by the name it has there, statistics included.
    assert_eq!(
        ok(&server, "select id from lake.ns.renamed where label = 'a'"),
        "1\n"
    );
    assert_eq!(
        ok(&server, "select id, name from lake.ns.replaced order by id"),
        "1\tNULL\n2\tb\n"
    );
    assert_eq!(
        ok(&server, "select id from lake.ns.replaced where name = 'a'"),
        ""
    );
    assert_eq!(
        ok(
            &server,
            "select id from lake.ns.replaced where name is null"
        ),
        "1\n"
    );

    ok(&server, "create index ix on lake.ns.renamed (label)");
    let lookup = "select id from lake.ns.renamed where label = 'a'";
    assert_eq!(ok(&server, lookup), "1\n");
    assert_eq!(metric(&server, lookup, "blocks_pruned_by_filter"), 1);
    assert_eq!(metric(&server, lookup, "blocks_read"), 1);

    // Renamed again, and a file written under the new name that no index covers yet.
    pyiceberg(warehouse.path(), "rename_again");
    for (key, id) in [("a", "1\n"), ("b", "2\n"), ("c", "3\n"), ("d", "")] {
        let lookup = format!("select id from lake.ns.renamed where tag = '{key}'");
        assert_eq!(ok(&server, &lookup), id, "{lookup}");
    }
    let shown = ok(&server, "show index from lake.ns.renamed");
    assert!(shown.contains("\tix\t1\ttag\t"), "{shown}");
    // The new file, not indexed yet, is left out by its manifest's bounds (c … c2).
    let lookup = "select id from lake.ns.renamed where tag = 'a'";
    assert_eq!(metric(&server, lookup, "blocks_pruned_by_filter"), 1);
    assert_eq!(metric(&server, lookup, "files_not_indexed"), 1);
    assert_eq!(metric(&server, lookup, "blocks_pruned_by_minmax"), 1);
    assert_eq!(metric(&server, lookup, "blocks_read"), 1);
}

#[test]
fn a_warehouse_on_minio_is_read_as_pyiceberg_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("{}/iceberg-{}", common::s3_base(), std::process::id());
    let read = pyiceberg_at(dir.path(), "make", Some(&prefix), None);
    // S3 settings from the environment, as scripts/minio.sh exports them.
    let server = Server::start_with(&config_at(dir.path(), &prefix), None);
    assert_eq!(
        ok(&server, "select id from lake.ns.people order by id"),
        ids(&read, "ns.people")
    );
    // Indexed from MinIO: a lookup reads the one file that holds its key.
    let made = ok(&server, "create index ix on lake.ns.people (id)");
    assert!(made.starts_with("2\t10099\t"), "{made}");
    assert_eq!(
        ok(&server, "select name from lake.ns.people where id = 10001"),
        ""
    );
    let lookup = "select name from lake.ns.people where id = 10002";
    assert_eq!(ok(&server, lookup), "p10002\n");
    assert_eq!(metric(&server, lookup, "blocks_read"), 1);
    let read = pyiceberg_at(dir.path(), "append", Some(&prefix), None);
    assert_eq!(
        ok(&server, "select count(*) from lake.ns.people"),
        format!("{}\n", read["ns.people"]["count"])
    );
}

/// Iceberg's own REST catalog server (`RESTCatalogServer` from iceberg-open-api's test
/// fixtures, what the apache/iceberg-rest-fixture image runs): its tables kept by Java's
/// JdbcCatalog in a SQLite file in `dir`, their files under `warehouse` in MinIO. Stopped when
/// dropped.
struct RestCatalogServer {
    child: Child,
    uri: String,
}

/// Keys of a MinIO session (STS AssumeRole as the tests' root user, an hour long): keys a
/// server given only other keys can read with only if they are vended to it.
fn minio_session_keys() -> [String; 3] {
    let script = "import boto3, os\n\
        sts = boto3.client('sts', endpoint_url=os.environ['AWS_ENDPOINT'], region_name=os.environ['AWS_REGION'])\n\
        c = sts.assume_role(RoleArn='arn:minio:iam:::role/sieve', RoleSessionName='sieve-tests', DurationSeconds=3600)['Credentials']\n\
        print(c['AccessKeyId'], c['SecretAccessKey'], c['SessionToken'])";
    let mut python = Command::new("python3");
    python.args(["-c", script]);
    let out = output_within(python, None, String::new);
    assert!(
        out.status.success(),
        "MinIO's STS gave no session keys (scripts/test.sh installs boto3): {}",
        stderr(&out)
    );
    let said = stdout(&out);
    let keys: Vec<String> = said.split_whitespace().map(str::to_string).collect();
    keys.try_into()
        .unwrap_or_else(|_| panic!("not three keys: {said}"))
}

impl RestCatalogServer {
    /// `keys` (a MinIO session's) are the server's own S3 keys, which it vends with every
    /// table it loads (the fixture's `include-credentials`).
    fn start(dir: &Path, warehouse: &str, keys: &[String; 3]) -> Self {
        let [key, secret, token] = keys;
        let classpath = std::env::var("SIEVE_ICEBERG_REST_CLASSPATH").expect(
            "SIEVE_ICEBERG_REST_CLASSPATH is the class path of Iceberg's REST catalog server \
             (scripts/test.sh resolves it with Maven from cli/tests/iceberg/rest/pom.xml)",
        );
        let log = dir.join("rest-catalog.log");
        let file = std::fs::File::create(&log).unwrap();
        let mut child = Command::new("java")
            .args([
                "-cp",
                &classpath,
                "org.apache.iceberg.rest.RESTCatalogServer",
            ])
            // Its settings, as the fixture image takes them: CATALOG_A__B_C is a-b.c.
            .env(
                "CATALOG_URI",
                format!("jdbc:sqlite:file:{}/rest.db", dir.display()),
            )
            .env("CATALOG_JDBC_SCHEMA__VERSION", "V1")
            .env("CATALOG_WAREHOUSE", warehouse)
            .env("CATALOG_IO__IMPL", "org.apache.iceberg.aws.s3.S3FileIO")
            .env(
                "CATALOG_S3_ENDPOINT",
                std::env::var("AWS_ENDPOINT").unwrap(),
            )
            .env("CATALOG_S3_PATH__STYLE__ACCESS", "true")
            .env("CATALOG_REST_PORT", "0")
            .env("CATALOG_S3_ACCESS__KEY__ID", key)
            .env("CATALOG_S3_SECRET__ACCESS__KEY", secret)
            .env("CATALOG_S3_SESSION__TOKEN", token)
            .env("CATALOG_INCLUDE__CREDENTIALS", "true")
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .expect("java runs Iceberg's REST catalog server (scripts/test.sh installs a JDK)");
        let port = common::listening_port(&mut child, &log, "(http/1.1)}{");
        Self {
            child,
            uri: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for RestCatalogServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The catalog vends the keys of a MinIO session with each table, and Sieve is configured
/// with keys MinIO refuses: every read below (metadata, manifests, data files, the index
/// build) goes out with the vended keys.
#[test]
fn a_rest_catalog_is_read_as_pyiceberg_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("{}/rest-{}", common::s3_base(), std::process::id());
    let rest = RestCatalogServer::start(dir.path(), &prefix, &minio_session_keys());
    let read = pyiceberg_at(dir.path(), "make", Some(&prefix), Some(&rest.uri));
    let nested = pyiceberg_at(dir.path(), "nested", Some(&prefix), Some(&rest.uri));
    let metadata = nested["ns.deep.t"]["metadata"].as_str().unwrap();
    assert!(metadata.ends_with(".gz.metadata.json"), "{metadata}");
    // The token route is asked for a token once, which every question then carries; a second
    // catalog whose server is down does not keep the server from starting.
    let config = format!(
        "[[iceberg_catalogs]]\nname = \"lake\"\nuri = \"{}\"\nwarehouse = \"{prefix}\"\n\
         credential = \"sieve:secret\"\n\
         access_key_id = \"nobody\"\nsecret_access_key = \"refused\"\n\
         [[iceberg_catalogs]]\nname = \"down\"\nuri = \"http://127.0.0.1:1\"\n\
         warehouse = \"{prefix}\"\n",
        rest.uri
    );
    let server = Server::start_with(&config, None);
    assert_eq!(
        ok(&server, "show tables from lake.ns"),
        "empty\nfloats\npeople\nrenamed\nreplaced\n"
    );
    let databases = ok(&server, "show databases");
    assert!(
        databases.contains("\nlake.ns\nlake.ns.deep\nlake.other\n"),
        "{databases}"
    );
    assert_eq!(
        ok(&server, "select id from lake.ns.people order by id"),
        ids(&read, "ns.people")
    );
    // A namespace of two levels (ns, deep), its metadata gzipped: the database `lake.ns.deep`,
    // its levels joined by dots as SHOW DATABASES lists it.
    assert_eq!(ok(&server, "show tables from `lake.ns.deep`"), "t\n");
    assert_eq!(
        ok(&server, "select id, name from `lake.ns.deep`.t order by id"),
        "1\td1\n2\td2\n"
    );
    assert_eq!(
        ok(&server, "select name from lake.`ns.deep`.t where id = 2"),
        "d2\n"
    );
    // Or by its levels, in four parts: the catalog, the namespace's two levels, the table.
    assert_eq!(ok(&server, "show tables from lake.ns.deep"), "t\n");
    assert_eq!(
        ok(&server, "select name from lake.ns.deep.t where id = 2"),
        "d2\n"
    );
    assert_eq!(
        ok(
            &server,
            "select count(*) from lake.ns.deep.t a join lake.ns.deep.t b on a.id = b.id"
        ),
        "2\n"
    );
    assert!(
        ok(&server, "describe lake.ns.deep.t").starts_with("id\t"),
        "DESCRIBE by four parts"
    );
    // Index statements and SHOW INDEX take the same names: four parts, the database quoted as
    // one, a bare name after USE.
    ok(&server, "create index ix_deep on `lake.ns.deep`.t (id)");
    for shown in ["lake.ns.deep.t", "`lake.ns.deep`.t", "lake.`ns.deep`.t"] {
        let shown = ok(&server, &format!("show index from {shown}"));
        assert!(shown.starts_with("t\t1\tix_deep\t1\tid\t"), "{shown}");
    }
    ok(&server, "use `lake.ns.deep`; drop index ix_deep on t");
    assert_eq!(ok(&server, "show index from lake.ns.deep.t"), "");
    refused(&server, "select * from lake.ns.nope", "lake.ns.nope");
    refused(
        &server,
        "show tables from lake.nope",
        "unknown database 'lake.nope'",
    );
    refused(
        &server,
        "select * from down.ns.t",
        "iceberg catalog down: GET http://127.0.0.1:1/v1/config",
    );
    // Indexed through the REST catalog: a lookup reads the one file that holds its key, and
    // a deleted key none.
    let lookup = "select name from lake.ns.people where id = 10002";
    ok(&server, "create index ix on lake.ns.people (id)");
    assert_eq!(ok(&server, lookup), "p10002\n");
    assert_eq!(metric(&server, lookup, "blocks_read"), 1);
    assert_eq!(
        ok(
            &server,
            "select name from lake.ns.people where id in (5, 10001)"
        ),
        ""
    );
    // Through a coordinator, the worker owning the key's file reads it: it plans the
    // coordinator's snapshot from its metadata file, with the keys the catalog vends it.
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &config).unwrap();
    let worker = Worker::start_with(
        server.storage_dir().to_str().unwrap(),
        0,
        &["--config", file.path().to_str().unwrap()],
    );
    let coordinator = Server::start_on(
        server.storage_dir().to_str().unwrap(),
        &format!(
            "workers = [\"{}\"]\ncluster_secret = \"{SECRET}\"\n{config}",
            worker.url()
        ),
    );
    assert_eq!(ok(&coordinator, lookup), "p10002\n");
    assert_eq!(
        ok(
            &coordinator,
            "select name from lake.ns.people where id in (5, 10001, 10003)"
        ),
        "p10003\n"
    );
    // A commit through the catalog is seen by the next statement.
    let read = pyiceberg_at(dir.path(), "append", Some(&prefix), Some(&rest.uri));
    assert_eq!(
        ok(&server, "select count(*) from lake.ns.people"),
        format!("{}\n", read["ns.people"]["count"])
    );
    assert_eq!(
        ok(&server, "select name from lake.ns.people where id = 20000"),
        "new\n"
    );
    assert_eq!(
        ok(
            &coordinator,
            "select name from lake.ns.people where id = 20000"
        ),
        "new\n"
    );
}

#[test]
fn a_user_reads_an_attached_catalog_only_when_granted() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "make");
    let server = Server::start_with(&config(warehouse.path()), None);
    ok(&server, "create user reader identified by 'pw'");
    let as_reader = |sql: &str| server.mysql(&["-ureader", "-ppw", "-e", sql]);
    let out = as_reader("select count(*) from lake.ns.people");
    assert!(stderr(&out).contains("1142"), "{}", stderr(&out));
    // A lookup's result kept for root is not the reader's either.
    let lookup = "select name from lake.ns.people where id = 6";
    assert_eq!(ok(&server, lookup), "p6\n");
    let out = as_reader(lookup);
    assert!(stderr(&out).contains("1142"), "{}", stderr(&out));
    let out = as_reader("show tables from lake.ns");
    assert!(stderr(&out).contains("1044"), "{}", stderr(&out));
    assert!(!stdout(&as_reader("show databases")).contains("lake."));
    let listed = as_reader(
        "select count(*) from information_schema.tables where table_schema like 'lake.%'",
    );
    assert_eq!(stdout(&listed), "0\n", "{}", stderr(&listed));
    // One table granted: only it is listed and read.
    ok(&server, "grant select on lake.`ns.people` to reader");
    assert_eq!(stdout(&as_reader("show tables from lake.ns")), "people\n");
    let listed = as_reader(
        "select table_schema, table_name from information_schema.tables \
         where table_schema like 'lake.%'",
    );
    assert_eq!(stdout(&listed), "lake.ns\tpeople\n", "{}", stderr(&listed));
    let out = as_reader("select count(*) from lake.ns.people");
    assert_eq!(stdout(&out), "10096\n", "{}", stderr(&out));
    let out = as_reader("select count(*) from lake.ns.empty");
    assert!(stderr(&out).contains("1142"), "{}", stderr(&out));
    ok(&server, "grant select on lake.* to reader");
    assert_eq!(
        stdout(&as_reader("select count(*) from lake.ns.empty")),
        "0\n"
    );
}

/// What DBeaver or DataGrip shows of an attached namespace: MySQL's and MariaDB's Connector/J
/// connect to the database `lake.ns` as SHOW DATABASES lists it, list its tables and columns
/// through DatabaseMetaData (SHOW FULL TABLES / COLUMNS FROM `lake.ns`, or
/// information_schema), and read a table by its bare name (tests/java/DriverTest.java).
#[test]
fn jdbc_drivers_list_and_read_an_attached_namespace() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "make");
    let server = Server::start_with(&config(warehouse.path()), None);
    for driver in ["mysql", "mariadb"] {
        let java = common::driver_test(&[driver, "lake.ns"]);
        assert_eq!(server.run_client(java).trim(), "ok", "{driver}");
    }
}

/// On a coordinator, statements that read an attached table run on the workers as those over
/// Sieve's tables do (cli/tests/workers.rs), point lookups included: with no worker reachable,
/// each fails saying so, and names the workers it tried, instead of running in the coordinator.
#[test]
fn a_coordinator_without_a_live_worker_says_so() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "make");
    let worker = format!("http://127.0.0.1:{}", common::free_port());
    // Top-level keys before the catalog's table.
    let config = format!(
        "workers = [\"{worker}\"]\ncluster_secret = \"test-cluster-secret-0123\"\n{}",
        config(warehouse.path())
    );
    let server = Server::start_with(&config, None);
    for query in [
        "select id from lake.ns.people order by id",
        "select count(*) from numbers(12) n join lake.ns.people p on p.id = n.number * 1000",
        "select name from lake.ns.people where id = 6",
        "set sieve.short_path = false; select name from lake.ns.people where id = 6",
    ] {
        let out = server.mysql(&["-e", query]);
        let said = stderr(&out);
        assert!(
            said.contains(&format!("no worker is reachable ({worker}/)")),
            "{query}: {said}"
        );
    }
}

#[test]
fn a_catalog_that_cannot_be_attached_stops_the_server_saying_why() {
    let said = common::serve_refused(
        "[[iceberg_catalogs]]\nname = \"lake\"\nuri = \"postgres://x\"\nwarehouse = \"file:///tmp\"\n",
    );
    assert!(said.contains("sqlite:///absolute/path.db"), "{said}");
    let said = common::serve_refused(
        "[[iceberg_catalogs]]\nname = \"sieve\"\nuri = \"sqlite:///x.db\"\nwarehouse = \"file:///tmp\"\n",
    );
    assert!(said.contains("is taken"), "{said}");
    let said = common::serve_refused(
        "[[iceberg_catalogs]]\nname = \"Lake\"\nuri = \"sqlite:///x.db\"\nwarehouse = \"file:///tmp\"\n",
    );
    assert!(said.contains("lower-case identifier"), "{said}");
}

#[test]
fn an_index_leaves_out_the_row_groups_that_cannot_hold_a_key() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "grouped");
    let server = Server::start_with(&config_indexing_every(warehouse.path(), 3600), None);
    let lookup = "select name from lake.ns.grouped where id = 4242";
    // Each row group's bounds are the whole range: before the index, all 8 are read.
    let unindexed = metric_of(&server, lookup, "DataSourceExec", "bytes_scanned");
    let made = ok(&server, "create index ix on lake.ns.grouped (id)");
    assert!(made.starts_with("1	8000	"), "{made}");
    assert_eq!(
        ok(&server, lookup),
        "g4242
"
    );
    assert_eq!(metric(&server, lookup, "blocks_read"), 1);
    assert_eq!(metric(&server, lookup, "row_groups_pruned_by_filter"), 7);
    let indexed = metric_of(&server, lookup, "DataSourceExec", "bytes_scanned");
    assert!(
        indexed * 4 < unindexed,
        "{indexed} bytes scanned with the index, {unindexed} without"
    );
    let two = "select name from lake.ns.grouped where id in (17, 7999)";
    assert!(metric(&server, two, "row_groups_pruned_by_filter") >= 6);
    let absent = "select name from lake.ns.grouped where id = 8000";
    assert_eq!(metric(&server, absent, "blocks_pruned_by_filter"), 1);
    for key in [0, 17, 999, 4242, 7999, 8000, -1] {
        let want = match (0..8000).contains(&key) {
            true => format!("g{key}\n"),
            false => String::new(),
        };
        for sql in [
            format!("select name from lake.ns.grouped where id = {key}"),
            format!("select name from lake.ns.grouped where id + 0 = {key}"),
        ] {
            assert_eq!(ok(&server, &sql), want, "{sql}");
        }
    }
}

#[test]
fn a_lookup_reads_the_pages_of_its_key_not_its_row_group() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "paged");
    let metrics = common::free_port();
    let config = config_indexing_every(warehouse.path(), 3600);
    let server = Server::start_with(&format!("metrics_port = {metrics}\n{config}"), None);
    let lookup = |key: i64| format!("select name from lake.ns.paged where id = {key}");
    // Bytes fetched from storage and data cache hits of a lookup, past the data cache or not.
    let read = |key, cache: bool| {
        let sql = format!(
            "set sieve.data_cache = {cache}; explain analyze {}",
            lookup(key)
        );
        let plan = ok(&server, &sql);
        let scan = &plan[plan
            .find("DataSourceExec")
            .unwrap_or_else(|| panic!("{plan}"))..];
        let count = |name| common::plan_counter(scan, name);
        (count("bytes_scanned"), count("data_cache_hits"))
    };
    let scanned = |key| read(key, false).0;
    // A key of the file PyIceberg wrote (no page index), of the one PyArrow wrote with one, of
    // the gzip one without, and of the LZ4 and Brotli ones; each file's bounds hold its key, and
    // its row group is read whole.
    let keys = [4242, 154_242, 254_242, 1_004_242, 1_154_242];
    let present = |key| (0..300_000).contains(&key) || (1_000_000..1_200_000).contains(&key);
    let unindexed = keys.map(scanned);
    let made = ok(&server, "create index ix on lake.ns.paged (id)");
    assert!(made.starts_with("5\t500000\t"), "{made}");
    for (key, unindexed) in keys.into_iter().zip(unindexed) {
        assert_eq!(ok(&server, &lookup(key)), format!("p{key}\n"));
        let indexed = scanned(key);
        assert!(
            indexed * 10 < unindexed,
            "key {key}: {indexed} bytes scanned with the index, {unindexed} without"
        );
    }
    // The pages read are kept in the data cache: a hot key's second lookup fetches nothing.
    let (fetched, hits) = read(77_777, true);
    assert!(
        fetched > 0 && hits == 0,
        "{fetched} bytes fetched, {hits} hits"
    );
    let (fetched, hits) = read(77_777, true);
    assert!(
        fetched == 0 && hits > 0,
        "{fetched} bytes fetched, {hits} hits"
    );
    assert!(read(77_777, false).0 > 0);
    // Every answer is the one the same query gets without the index (`id + 0` names no key).
    for key in [
        0, 1, 4242, 99_999, 100_000, 154_242, 199_999, 200_000, 254_242, 299_999, 300_000, -1,
        999_999, 1_000_000, 1_099_999, 1_100_000, 1_199_999, 1_200_000,
    ] {
        let want = match present(key) {
            true => format!("p{key}\n"),
            false => String::new(),
        };
        assert_eq!(ok(&server, &lookup(key)), want, "id = {key}");
        let unpruned = format!("select name from lake.ns.paged where id + 0 = {key}");
        assert_eq!(ok(&server, &unpruned), want, "{unpruned}");
        // The short path's answer is the full path's.
        let full = format!("set sieve.short_path = false; {}", lookup(key));
        assert_eq!(ok(&server, &full), want, "{full}");
    }
    // A key of each file is decoded on the lookup's own task, whatever its codec (zstd, snappy,
    // gzip, LZ4, Brotli), and by DataFusion's scan with direct reads off.
    let directly = |sql: &str| {
        let read = || common::prometheus::scrape(metrics)["sieve_blocks_read_directly_total"];
        let before = read();
        let rows = ok(&server, sql);
        (rows, read() - before)
    };
    for key in [4243, 154_243, 254_243, 1_004_243, 1_154_243] {
        let want = format!("p{key}\n");
        assert_eq!(directly(&lookup(key)), (want.clone(), 1.0), "id = {key}");
        let scanned = format!("set sieve.direct_reads = false; {}", lookup(key + 1));
        assert_eq!(
            directly(&scanned),
            (format!("p{}\n", key + 1), 0.0),
            "{scanned}"
        );
    }
    // The first rows of a row group are dictionary-encoded (PyIceberg's dictionary pages are
    // 4 KB here): each read twice, the second time through the dictionary kept decompressed.
    let first = ok(&server, "select id from lake.ns.paged limit 20");
    for key in first.lines() {
        let sql = format!(
            "set sieve.lookup_cache = false; {}",
            lookup(key.parse().unwrap())
        );
        for _ in 0..2 {
            assert_eq!(ok(&server, &sql), format!("p{key}\n"), "{sql}");
        }
    }
    for lookup in [
        "select * from lake.ns.paged where id in (5, 150005, 250005, 300000, 1000005, 1150005)",
        "select p.name as n, id from lake.ns.paged p where id = 7 or id = 100007",
        "select id from lake.ns.paged where id = 8 and name = 'p8'",
        "select id from lake.ns.paged where id = 9 and name = 'nope'",
        "select name from lake.ns.paged where id in (10, 11, 12) limit 2",
    ] {
        // Rows in any order: neither path promises one without ORDER BY.
        let sorted = |rows: String| {
            let mut rows: Vec<String> = rows.lines().map(str::to_string).collect();
            rows.sort();
            rows
        };
        let short = sorted(ok(&server, lookup));
        let full = sorted(ok(
            &server,
            &format!("set sieve.short_path = false; {lookup}"),
        ));
        match lookup.split_once(" limit ") {
            // Any rows of the unlimited answer, as many: which ones neither path promises.
            Some((unlimited, _)) => {
                let all = sorted(ok(&server, unlimited));
                assert_eq!(short.len(), full.len(), "{lookup}");
                for row in short.iter().chain(&full) {
                    assert!(all.contains(row), "{lookup}: {row} not in {all:?}");
                }
            }
            None => assert_eq!(short, full, "{lookup}"),
        }
    }
    // Named in the database `lake.ns`, as SHOW DATABASES lists it, or by a bare name in it.
    for (sql, want) in [
        ("select name from `lake.ns`.paged where id = 13", "p13\n"),
        (
            "use `lake.ns`; select name from paged where id = 100013",
            "p100013\n",
        ),
        (
            "use `lake.ns`; select name from paged where id = 300013",
            "",
        ),
    ] {
        assert_eq!(ok(&server, sql), want, "{sql}");
        let full = format!("set sieve.short_path = false; {sql}");
        assert_eq!(ok(&server, &full), want, "{full}");
    }
    // A lookup asked again is answered from its kept result: not a page is looked for in the
    // data cache; with kept results off it reads them again. By a bare name too.
    let data_cache = |m: &std::collections::HashMap<String, f64>| {
        m["sieve_cache_hits_total{cache=\"data\"}"] + m["sieve_cache_misses_total{cache=\"data\"}"]
    };
    let hot = lookup(88_888);
    assert_eq!(ok(&server, &hot), "p88888\n");
    let before = common::prometheus::scrape(metrics);
    assert_eq!(ok(&server, &hot), "p88888\n");
    let kept = common::prometheus::scrape(metrics);
    assert_eq!(data_cache(&kept) - data_cache(&before), 0.0);
    let uncached = format!("set sieve.lookup_cache = false; {hot}");
    assert_eq!(ok(&server, &uncached), "p88888\n");
    let again = common::prometheus::scrape(metrics);
    assert!(data_cache(&again) > data_cache(&kept));
    let bare = "use `lake.ns`; select name from paged where id = 99998";
    assert_eq!(ok(&server, bare), "p99998\n");
    let before = common::prometheus::scrape(metrics);
    assert_eq!(ok(&server, bare), "p99998\n");
    let kept = common::prometheus::scrape(metrics);
    assert_eq!(data_cache(&kept) - data_cache(&before), 0.0);
    let some =
        "select id, name from lake.ns.paged where id in (3, 70001, 100003, 188888) order by id";
    assert_eq!(
        ok(&server, some),
        "3\tp3\n70001\tp70001\n100003\tp100003\n188888\tp188888\n"
    );
}

/// Every file of a key's lookup, by id and by name, as PyIceberg wrote it; `id + 0` names no
/// key, so it reads every file: the same query without the index.
fn lookups_match_unpruned(server: &Server, keys: impl IntoIterator<Item = i64>) {
    for key in keys {
        let want = match (0..8000).contains(&key) || (9000..9100).contains(&key) {
            true => format!("{key}\tk{key}\n"),
            false => String::new(),
        };
        let by_id = format!("select id, name from lake.ns.keys where id = {key}");
        assert_eq!(ok(server, &by_id), want, "{by_id}");
        let unpruned = format!("select id, name from lake.ns.keys where id + 0 = {key}");
        assert_eq!(ok(server, &unpruned), want, "{unpruned}");
        let by_name = format!("select id, name from lake.ns.keys where name = 'k{key}'");
        assert_eq!(ok(server, &by_name), want, "{by_name}");
    }
}

#[test]
fn an_index_leaves_out_the_files_that_cannot_hold_a_key() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "make");
    pyiceberg(warehouse.path(), "keys");
    // The indexer does not run during the test: only CREATE INDEX indexes.
    let mut server = Server::start_with(&config_indexing_every(warehouse.path(), 3600), None);
    let made = ok(&server, "create index ix_id on lake.ns.keys (id)");
    assert!(made.starts_with("8\t8000\t"), "{made}");
    let made = ok(
        &server,
        "create index ix_name on lake.ns.keys (name) using xor8",
    );
    assert!(made.starts_with("8\t8000\t"), "{made}");
    let shown = ok(&server, "show index from lake.ns.keys");
    assert_eq!(
        shown,
        "keys\t1\tix_id\t1\tid\tA\tNULL\tNULL\tNULL\tYES\tbinary_fuse16\t\t\tYES\tNULL\n\
         keys\t1\tix_name\t1\tname\tA\tNULL\tNULL\tNULL\tYES\txor8\t\t\tYES\tNULL\n"
    );
    let listed = "select index_name, column_name from information_schema.statistics \
                  where table_schema = 'lake.ns' order by index_name";
    assert_eq!(ok(&server, listed), "ix_id\tid\nix_name\tname\n");

    let lookup = "select name from lake.ns.keys where id = 4242";
    assert_eq!(metric(&server, lookup, "blocks_total"), 8);
    assert_eq!(metric(&server, lookup, "blocks_pruned_by_filter"), 7);
    assert_eq!(metric(&server, lookup, "blocks_read"), 1);
    assert_eq!(metric(&server, lookup, "files_not_indexed"), 0);
    let both = "select name from lake.ns.keys where id in (17, 7999)";
    assert_eq!(metric(&server, both, "blocks_read"), 2);
    let by_name = "select id from lake.ns.keys where name = 'k4242' or name = 'k5000'";
    assert_eq!(metric(&server, by_name, "blocks_read"), 2);
    let absent = "select name from lake.ns.keys where id = 123456";
    assert_eq!(metric(&server, absent, "blocks_read"), 0);
    // Present and absent keys, each file's first and last, as the unpruned query answers.
    lookups_match_unpruned(&server, [0, 999, 1000, 4242, 7999, 8000, -1, 123456]);

    // Rows a position delete removed stay removed in the files an index keeps.
    ok(&server, "create index ix on lake.ns.people (id)");
    for (id, want) in [
        (10000, ""),
        (10001, ""),
        (10002, "p10002\n"),
        (5, ""),
        (6, "p6\n"),
    ] {
        let sql = format!("select name from lake.ns.people where id = {id}");
        assert_eq!(ok(&server, &sql), want, "{sql}");
    }

    // Another writer commits a file the index does not cover yet: it is read, never skipped.
    pyiceberg(warehouse.path(), "more_keys");
    let new_key = "select name from lake.ns.keys where id = 9050";
    assert_eq!(ok(&server, new_key), "k9050\n");
    assert_eq!(metric(&server, new_key, "files_not_indexed"), 1);
    assert_eq!(metric(&server, new_key, "blocks_read"), 1);
    lookups_match_unpruned(&server, [9000, 9099, 4242, 8999]);

    // The index is in Sieve's storage, not the table's location, and outlives the server.
    for path in files_under(warehouse.path(), "") {
        let name = path.display().to_string();
        assert!(
            !name.contains("attached") && !name.ends_with(".part"),
            "{name}"
        );
    }
    // Restarted, the 8 files indexed are pruned as before; the one committed since is not
    // indexed until the indexer's first pass, an interval (an hour here) after the start, and
    // is left out by its manifest's bounds instead.
    server.restart();
    assert_eq!(metric(&server, lookup, "blocks_pruned_by_filter"), 7);
    assert_eq!(metric(&server, lookup, "files_not_indexed"), 1);
    assert_eq!(metric(&server, lookup, "blocks_pruned_by_minmax"), 1);
    assert_eq!(metric(&server, lookup, "blocks_read"), 1);

    // Dropped, it prunes nothing; its name is free again. The manifests' bounds of name still
    // leave out the files whose range of names cannot hold the key: all but k4000 … k4999 and
    // k0 … k999 (in text order).
    ok(&server, "drop index ix_name on lake.ns.keys");
    let by_name = "select id from lake.ns.keys where name = 'k4242'";
    assert_eq!(metric(&server, by_name, "blocks_pruned_by_filter"), 0);
    assert_eq!(metric(&server, by_name, "blocks_pruned_by_minmax"), 7);
    assert_eq!(metric(&server, by_name, "blocks_read"), 2);
    assert_eq!(ok(&server, by_name), "4242\n");
    refused(
        &server,
        "drop index ix_name on lake.ns.keys",
        "1091 (42000) at line 1: Can't DROP 'ix_name'",
    );
    refused(
        &server,
        "create index ix_id on lake.ns.keys (name)",
        "1061 (42000) at line 1: Duplicate key name 'ix_id'",
    );
    refused(
        &server,
        "create index ix_x on lake.ns.keys (nope)",
        "1072 (42000) at line 1: Key column 'nope' doesn't exist",
    );
    refused(
        &server,
        "create index ix_x on lake.ns.nope (id)",
        "unknown table",
    );
    refused(
        &server,
        "create index ix_x on nocat.ns.keys (id)",
        "1049 (42000) at line 1: Unknown database 'nocat': no catalog of that name is attached \
         (attached: lake)",
    );
    ok(&server, "create table t (a int)");
    refused(&server, "create index ix_x on t (a)", "index_columns");
    ok(&server, "create user reader identified by 'pw'");
    ok(&server, "grant select on lake.* to reader");
    let out = server.mysql(&[
        "-ureader",
        "-ppw",
        "-e",
        "create index ix_r on lake.ns.keys (id)",
    ]);
    assert!(stderr(&out).contains("1142"), "{}", stderr(&out));

    // A damaged index costs speed, never a row, and heals. The server holds the parts'
    // directories and reads their locators' pages and row groups' filters when a lookup asks:
    // with those bytes zeroed under it, a key not asked before is read from every file the
    // manifests' bounds keep, and the part is left out from then on (its files not indexed,
    // its bytes not read again) until a pass of the indexer indexes them again and removes
    // it. With the parts gone, the same; at a restart, its files are not indexed.
    // One part each for keys' index and people's. First their locators' pages alone are
    // damaged (their headers, loaded at a restart, and the row groups' filters are not).
    let parts = files_under(&server.storage_dir(), ".part");
    assert_eq!(parts.len(), 2, "{parts:?}");
    let u64_at =
        |bytes: &[u8], at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    for part in &parts {
        let mut bytes = std::fs::read(part).unwrap();
        // The preamble: the locator's offset and length, and its header's length.
        let (at, len) = (u64_at(&bytes, 16) as usize, u64_at(&bytes, 24) as usize);
        let header = u32::from_le_bytes(bytes[40..44].try_into().unwrap()) as usize;
        bytes[at + header..at + len].fill(0);
        std::fs::write(part, bytes).unwrap();
    }
    server.restart();
    let lookup = |key: i64| format!("select name from lake.ns.keys where id = {key}");
    assert_eq!(ok(&server, &lookup(5141)), "k5141\n");
    assert_eq!(metric(&server, &lookup(5142), "files_not_indexed"), 9);
    lookups_match_unpruned(&server, [1, 2998, 6001, 9001, 123457]);
    let healed = ok(&server, "optimize table lake.ns.keys");
    assert!(healed.starts_with("9\t8100\t0\t0\t1\t1\n"), "{healed}");
    assert_eq!(metric(&server, &lookup(5143), "blocks_pruned_by_filter"), 8);

    // Then everything past their headers.
    let parts = files_under(&server.storage_dir(), ".part");
    assert_eq!(parts.len(), 2, "{parts:?}");
    for part in &parts {
        let mut bytes = std::fs::read(part).unwrap();
        // The first directory record's sidecar offset: where the header ends.
        let header_end = u64_at(&bytes, 64) as usize;
        bytes[header_end..].fill(0);
        std::fs::write(part, bytes).unwrap();
    }
    assert_eq!(ok(&server, &lookup(5151)), "k5151\n");
    assert_eq!(metric(&server, &lookup(5152), "blocks_pruned_by_filter"), 0);
    assert_eq!(metric(&server, &lookup(5153), "files_not_indexed"), 9);
    assert_eq!(metric(&server, &lookup(5153), "blocks_pruned_by_minmax"), 8);
    assert_eq!(metric(&server, &lookup(5154), "blocks_read"), 1);
    lookups_match_unpruned(&server, [1, 2998, 6001, 9001, 123457]);
    let damaged = server.log().matches("left out until the indexer").count();
    assert!(damaged >= 1, "{}", server.log());
    // Keys' part only: no lookup read people's.
    let healed = ok(&server, "use `lake.ns`; optimize table keys");
    assert!(healed.starts_with("9\t8100\t0\t0\t1\t1\n"), "{healed}");
    let now = files_under(&server.storage_dir(), ".part");
    let removed: Vec<_> = parts.iter().filter(|p| !now.contains(p)).collect();
    assert_eq!((now.len(), removed.len()), (2, 1), "{parts:?} {now:?}");
    assert_eq!(metric(&server, &lookup(5155), "files_not_indexed"), 0);
    assert_eq!(metric(&server, &lookup(5155), "blocks_pruned_by_filter"), 8);
    assert_eq!(ok(&server, &lookup(5155)), "k5155\n");
    lookups_match_unpruned(&server, [2, 2999, 6002, 9004]);
    let parts = now;
    for part in &parts {
        std::fs::remove_file(part).unwrap();
    }
    assert_eq!(ok(&server, &lookup(5156)), "k5156\n");
    assert_eq!(metric(&server, &lookup(5156), "blocks_read"), 1);
    lookups_match_unpruned(&server, [3, 3998, 7001, 9002, 123458]);
    server.restart();
    assert_eq!(metric(&server, &lookup(5157), "files_not_indexed"), 9);
    assert_eq!(metric(&server, &lookup(5158), "blocks_read"), 1);
    lookups_match_unpruned(&server, [4, 4998, 7002, 9003]);
}

/// The files under `dir` whose names end with `suffix`.
fn files_under(dir: &Path, suffix: &str) -> Vec<std::path::PathBuf> {
    let (mut dirs, mut found) = (vec![dir.to_path_buf()], Vec::new());
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.display().to_string().ends_with(suffix) {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn an_index_build_over_its_memory_budget_fails_and_leaves_no_index() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "big");
    // 200,000 values' hashes and their sorted copy: 3.2 MB against a 1 MiB statement budget.
    let config = format!("query_memory_limit_mib = 1\n{}", config(warehouse.path()));
    let server = Server::start_with(&config, None);
    for _ in 0..2 {
        refused(&server, "create index ix on lake.ns.big (id)", "1041");
    }
    let lookup = "select id from lake.ns.big where id = 7";
    assert_eq!(metric(&server, lookup, "files_not_indexed"), 1);
    assert_eq!(ok(&server, lookup), "7\n");
}

#[test]
fn the_indexer_indexes_the_files_new_snapshots_add() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "keys");
    let server = Server::start_with(&config_indexing_every(warehouse.path(), 1), None);
    ok(&server, "create index ix_id on lake.ns.keys (id)");
    pyiceberg(warehouse.path(), "more_keys");
    let new_key = "select name from lake.ns.keys where id = 9050";
    let deadline = Instant::now() + Duration::from_secs(60);
    while metric(&server, new_key, "files_not_indexed") != 0 {
        assert!(
            Instant::now() < deadline,
            "the new file was not indexed in 60 s: {}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(metric(&server, new_key, "blocks_read"), 1);
    assert_eq!(metric(&server, new_key, "blocks_pruned_by_filter"), 8);
    assert_eq!(ok(&server, new_key), "k9050\n");
    assert!(server.log().contains("1 new data files indexed (100 rows)"));
}

/// OPTIMIZE TABLE runs the indexer's pass at once: each appended file is indexed into a part
/// of its own, the eighth small part of about the same rows is merged with the other seven into
/// one, and after a compaction the parts of the files it removed are removed. Throughout, every
/// lookup answers as PyIceberg's scan and the unpruned query do, and reads only its key's file.
#[test]
fn optimize_merges_an_attached_indexs_small_parts() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "keys");
    // The indexer does not run during the test: only CREATE INDEX and OPTIMIZE index.
    let server = Server::start_with(&config_indexing_every(warehouse.path(), 3600), None);
    ok(&server, "create index ix_id on lake.ns.keys (id)");
    let optimize = "optimize table lake.ns.keys";
    let parts = || files_under(&server.storage_dir(), ".part").len();
    // PyIceberg's ids, and Sieve's for keys in and around each file, pruned and not.
    let answers_as_pyiceberg = |read: &serde_json::Value| {
        let ids = ids(read, "ns.keys");
        let held: std::collections::HashSet<&str> = ids.lines().collect();
        for key in [
            0, 4242, 7999, 8000, 19999, 20000, 20099, 20100, 20450, 20799, 20800,
        ] {
            let want = match held.contains(key.to_string().as_str()) {
                true => format!("{key}\tk{key}\n"),
                false => String::new(),
            };
            for filter in ["id", "id + 0"] {
                let sql = format!("select id, name from lake.ns.keys where {filter} = {key}");
                assert_eq!(ok(&server, &sql), want, "{sql}");
            }
        }
    };
    assert_eq!(ok(&server, optimize), "0\t0\t0\t0\t0\t1\n");
    for n in 1..=8 {
        let read = pyiceberg(warehouse.path(), "key_file");
        let done = ok(&server, optimize);
        if n < 8 {
            assert_eq!(done, format!("1\t100\t0\t0\t0\t{}\n", n + 1));
            assert_eq!(parts(), n + 1);
        } else {
            // The 8 parts of one file each merged into one; the first (8,000 rows) left.
            assert_eq!(done, "1\t100\t8\t8\t0\t2\n");
            assert_eq!(parts(), 2);
        }
        answers_as_pyiceberg(&read);
    }
    for key in [20000, 20450, 20799, 4242] {
        let lookup = format!("select name from lake.ns.keys where id = {key}");
        assert_eq!(metric(&server, &lookup, "blocks_total"), 16);
        assert_eq!(metric(&server, &lookup, "blocks_read"), 1);
        assert_eq!(metric(&server, &lookup, "blocks_pruned_by_filter"), 15);
        assert_eq!(metric(&server, &lookup, "files_not_indexed"), 0);
    }
    // A compaction leaves one file: indexed into a part of its own, the two parts of the files
    // it removed removed.
    let read = pyiceberg(warehouse.path(), "compact_keys");
    assert_eq!(ok(&server, optimize), "1\t8800\t0\t0\t2\t1\n");
    assert_eq!(parts(), 1);
    answers_as_pyiceberg(&read);
    assert_eq!(ok(&server, optimize), "0\t0\t0\t0\t0\t1\n");
    let lookup = "select name from lake.ns.keys where id = 20450";
    assert_eq!(metric(&server, lookup, "blocks_total"), 1);
    assert_eq!(metric(&server, lookup, "files_not_indexed"), 0);
    assert!(
        server
            .log()
            .contains("8 small parts merged (8 data files indexed again)")
    );
}

#[test]
fn equality_deletes_remove_rows_of_older_files_only() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "upserts");
    let server = Server::start_with(&config_indexing_every(warehouse.path(), 3600), None);
    // PyIceberg 0.12 refuses to scan equality deletes, so the rows are as tables.py wrote
    // them: ids 0-999, 3 and 500 upserted, 999 deleted, 500's upsert deleted by id and name,
    // id 1000 (a null name) deleted by its null.
    let name = |id: i64| match id {
        3 => "v2-3".to_string(),
        _ => format!("v1-{id}"),
    };
    let live: Vec<i64> = (0..999).filter(|id| *id != 500).collect();
    let all: String = live
        .iter()
        .map(|id| format!("{id}\t{}\n", name(*id)))
        .collect();
    let upserts = "lake.ns.upserts";
    let check = |server: &Server| {
        let read = |sql: &str| ok(server, &sql.replace("T", upserts));
        assert_eq!(read("select id, name from T order by id"), all);
        assert_eq!(read("select count(*) from T"), "998\n");
        assert_eq!(
            read("select count(*) from (select name from T limit 1000) l"),
            "998\n"
        );
        assert_eq!(read("select count(*) from T where name is null"), "0\n");
        for id in [0, 3, 7, 42, 499, 500, 501, 998, 999, 1000, 5000] {
            let want = match live.contains(&id) {
                true => format!("{}\n", name(id)),
                false => String::new(),
            };
            for sql in [
                format!("select name from T where id = {id}"),
                format!("select name from T where id + 0 = {id}"),
                format!("select name from T where name = 'v1-{id}' or id = {id} order by name"),
            ] {
                let got = read(&sql);
                // By name, a deleted row's old name never comes back either.
                assert_eq!(got, want, "{sql}");
            }
        }
        assert_eq!(
            read("select id from T where id in (3, 500, 999, 1000, 7) order by id"),
            "3\n7\n"
        );
        assert_eq!(read("select id from T where name = 'v2-500'"), "");
    };
    check(&server);
    let scan = "select count(*) from lake.ns.upserts";
    let plan = ok(&server, &format!("explain analyze {scan}"));
    let node = plan.find("IcebergEqualityDeleteExec").expect(&plan);
    // 3, 500 and 999 of the first file; the upsert of 500; the null name.
    assert_eq!(
        common::plan_counter(&plan[node..], "rows_deleted_by_equality"),
        5
    );

    // An index says the first file holds 999; its delete still removes it.
    ok(&server, "create index ix on lake.ns.upserts (id)");
    ok(&server, "create index ix_name on lake.ns.upserts (name)");
    check(&server);

    // A delete in partition region=a leaves region b's row of the same id.
    assert_eq!(
        ok(
            &server,
            "select id, region from lake.ns.regions order by id, region"
        ),
        "1\tb\n2\ta\n2\tb\n"
    );
    assert_eq!(
        ok(&server, "select region from lake.ns.regions where id = 1"),
        "b\n"
    );

    // The name column dropped: the deletes over (id, name) and over a null name still apply
    // (the spec: a dropped delete column "must still be used"), read from the files by its id.
    pyiceberg(warehouse.path(), "drop_name");
    let ids: String = live.iter().map(|id| format!("{id}\n")).collect();
    assert_eq!(
        ok(&server, "select * from lake.ns.upserts order by id"),
        ids
    );
    assert_eq!(
        ok(
            &server,
            "select id from lake.ns.upserts where id in (3, 500, 999, 1000, 7) order by id"
        ),
        "3\n7\n"
    );
    for sql in [
        "select id from lake.ns.upserts where id = 500",
        "select id from lake.ns.upserts where id = 1000",
    ] {
        assert_eq!(ok(&server, sql), "", "{sql}");
        let full = format!("set sieve.short_path = false; {sql}");
        assert_eq!(ok(&server, &full), "", "{full}");
    }
    // The index over name can follow the table no more: SHOW INDEX says so, and OPTIMIZE
    // brings the other up to date with the file appended since and fails naming it.
    pyiceberg(warehouse.path(), "upsert_more");
    let dropped = "column name (field id 2) is no longer in the table: drop the index";
    assert_eq!(
        ok(&server, "show index from lake.ns.upserts"),
        format!(
            "upserts\t1\tix\t1\tid\tA\tNULL\tNULL\tNULL\tYES\tbinary_fuse16\t\t\tYES\tNULL\n\
             upserts\t1\tix_name\t1\tname\tA\tNULL\tNULL\tNULL\tNULL\tbinary_fuse16\tdisabled\t\
             {dropped}\tYES\tNULL\n"
        )
    );
    let optimize = "optimize table lake.ns.upserts";
    refused(&server, optimize, dropped);
    refused(
        &server,
        optimize,
        "index ix_name was not brought up to date (the table's other indexes were brought up \
         to date)",
    );
    let new_key = "select id from lake.ns.upserts where id = 2000";
    assert_eq!(metric(&server, new_key, "files_not_indexed"), 0);
    assert_eq!(ok(&server, new_key), "2000\n");
    ok(&server, "drop index ix_name on lake.ns.upserts");
    assert!(ok(&server, "optimize table lake.ns.upserts").starts_with("0\t0\t"));
}

/// Columns added with an initial default (c = 7, s = 'x') read as it in the file written
/// before they were added, as PyIceberg reads them: in rows, filters (the file's statistics do
/// not prune it as if the column were null), lookups and an index over the column.
#[test]
fn a_column_added_with_a_default_reads_as_it_in_older_files() {
    let warehouse = tempfile::tempdir().unwrap();
    let read = pyiceberg(warehouse.path(), "defaults");
    let server = Server::start_with(&config_indexing_every(warehouse.path(), 3600), None);
    let want: String = (read["ns.defaults"]["rows"].as_array().unwrap().iter())
        .map(|row| {
            format!(
                "{}\t{}\t{}\n",
                row["id"],
                row["c"],
                row["s"].as_str().unwrap()
            )
        })
        .collect();
    assert!(want.starts_with("1\t7\tx\n"), "{want}");
    assert_eq!(
        ok(&server, "select id, c, s from lake.ns.defaults order by id"),
        want
    );
    let old = "1\n2\n3\n";
    for (filter, want) in [
        ("c = 7", old),
        ("c + 0 = 7", old),
        ("s = 'x'", old),
        ("c in (7, 11)", "1\n2\n3\n12\n"),
        ("c is null", ""),
        ("c = 11", "12\n"),
        ("c = 8", ""),
    ] {
        let sql = format!("select id from lake.ns.defaults where {filter} order by id");
        assert_eq!(ok(&server, &sql), want, "{sql}");
    }
    ok(&server, "create index ix on lake.ns.defaults (c)");
    for (filter, want) in [("c = 7", old), ("c = 11", "12\n"), ("c = 8", "")] {
        let sql = format!("select id from lake.ns.defaults where {filter} order by id");
        assert_eq!(ok(&server, &sql), want, "{sql}");
        let full = format!("set sieve.short_path = false; {sql}");
        assert_eq!(ok(&server, &full), want, "{full}");
    }
}

/// A migrated table: its first file has no field ids (PyArrow wrote it, `add_files` registered
/// it and set the table's name mapping), and its column `name` was renamed `label` since. The
/// file's `name` is read as `label` through the mapping, as PyIceberg reads it, in rows,
/// filters and an index.
#[test]
fn a_file_without_field_ids_is_read_through_the_name_mapping() {
    let warehouse = tempfile::tempdir().unwrap();
    let read = pyiceberg(warehouse.path(), "migrated");
    let server = Server::start_with(&config_indexing_every(warehouse.path(), 3600), None);
    let want: String = (read["ns.migrated"]["rows"].as_array().unwrap().iter())
        .map(|row| format!("{}\t{}\n", row["id"], row["label"].as_str().unwrap()))
        .collect();
    assert!(want.starts_with("1\tm1\n"), "{want}");
    assert_eq!(
        ok(
            &server,
            "select id, label from lake.ns.migrated order by id"
        ),
        want
    );
    let lookups = [("m2", "2\n"), ("m4", "4\n"), ("m9", "")];
    for (label, want) in lookups {
        let sql = format!("select id from lake.ns.migrated where label = '{label}'");
        assert_eq!(ok(&server, &sql), want, "{sql}");
    }
    ok(&server, "create index ix on lake.ns.migrated (label)");
    for (label, want) in lookups {
        let sql = format!("select id from lake.ns.migrated where label = '{label}'");
        assert_eq!(ok(&server, &sql), want, "{sql}");
        let full = format!("set sieve.short_path = false; {sql}");
        assert_eq!(ok(&server, &full), want, "{full}");
    }
    // The index kept the file's key: a lookup of m2 reads that one file.
    let lookup = "select id from lake.ns.migrated where label = 'm2'";
    assert_eq!(metric(&server, lookup, "blocks_read"), 1);
}

/// A v3 table's `geometry` and `geography` columns (cli/tests/iceberg/tables.py, `shapes`) read
/// as their WKB bytes, in a scan, a point lookup by id and a filter on the shape itself, which
/// no bound prunes.
#[test]
fn geometry_and_geography_columns_read_as_their_wkb() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "shapes");
    let server = Server::start_with(&config(warehouse.path()), None);
    // POINT(x y) as little-endian WKB: byte order 1, type 1, then x and y as doubles.
    let point = |x: f64, y: f64| {
        let mut wkb = vec![1u8, 1, 0, 0, 0];
        wkb.extend(x.to_le_bytes());
        wkb.extend(y.to_le_bytes());
        let hex: String = wkb.iter().map(|b| format!("{b:02x}")).collect();
        format!("X'{hex}'")
    };
    let shapes = format!(
        "select id, g is null, g = {}, h = {} from lake.ns.shapes order by id",
        point(1.0, 2.0),
        point(5.0, 6.0)
    );
    assert_eq!(
        ok(&server, &shapes),
        "1\t0\t1\t1\n2\t0\t0\tNULL\n3\t1\tNULL\t0\n"
    );
    let described = ok(&server, "describe lake.ns.shapes");
    assert!(described.contains("g\tlongblob"), "{described}");
    let lookup = format!(
        "select id from lake.ns.shapes where id = 2 and g = {}",
        point(3.0, 4.0)
    );
    assert_eq!(ok(&server, &lookup), "2\n");
    let filtered = format!(
        "select id from lake.ns.shapes where h = {}",
        point(7.0, 8.0)
    );
    assert_eq!(ok(&server, &filtered), "3\n");
}

/// A v3 variant column (DuckDB 1.5 wrote it, shredding the objects' fields and leaving values
/// of other shapes whole) reads as its values' JSON, as DuckDB reads them; a predicate compares
/// the text; it cannot be indexed.
#[test]
fn variant_columns_read_as_their_json() {
    let warehouse = tempfile::tempdir().unwrap();
    let written = pyiceberg(warehouse.path(), "variants");
    let server = Server::start_with(&config(warehouse.path()), None);
    let json = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
    let expected: Vec<(i64, serde_json::Value)> = (written["variants"].as_array().unwrap().iter())
        .map(|row| (row[0].as_i64().unwrap(), json(row[1].as_str().unwrap())))
        .collect();
    assert_eq!(expected.len(), 8);
    let read: Vec<(i64, serde_json::Value)> =
        (ok(&server, "select id, v from lake.ns.variants order by id").lines())
            .map(|line| {
                let (id, v) = line.split_once('\t').unwrap();
                (id.parse().unwrap(), json(v))
            })
            .collect();
    assert_eq!(read, expected);
    let described = ok(&server, "describe lake.ns.variants");
    assert!(described.contains("v\tvarchar"), "{described}");
    // A lookup by id takes the short path; the scan reads the variant group.
    assert_eq!(
        json(&ok(&server, "select v from lake.ns.variants where id = 7")),
        expected[6].1
    );
    assert_eq!(
        ok(
            &server,
            "select id from lake.ns.variants where v = '{\"a\":2}'"
        ),
        "2\n"
    );
    refused(
        &server,
        "create index ix on lake.ns.variants (v)",
        "column v is a variant",
    );
}

#[test]
fn an_index_made_before_a_column_was_widened_still_finds_its_keys() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "promoted");
    let server = Server::start_with(&config_indexing_every(warehouse.path(), 3600), None);
    // Hashed as int: Sieve's canonical forms hash an integer the same whatever its width, so
    // lookups of the long the column becomes still find the int files' keys.
    ok(&server, "create index ix on lake.ns.promoted (id)");
    let read = pyiceberg(warehouse.path(), "promote");
    assert_eq!(
        ok(&server, "select id from lake.ns.promoted order by id"),
        ids(&read, "ns.promoted")
    );
    for (id, want) in [
        (1, "p1\n"),
        (4, "p4\n"),
        (5, "p5\n"),
        (1_i64 << 40, "big\n"),
        (6, ""),
    ] {
        for sql in [
            format!("select name from lake.ns.promoted where id = {id}"),
            format!("select name from lake.ns.promoted where id + 0 = {id}"),
        ] {
            assert_eq!(ok(&server, &sql), want, "{sql}");
        }
    }
    // The index still leaves out the int file without the key; the long file is not indexed.
    let lookup = "select name from lake.ns.promoted where id = 1";
    assert_eq!(metric(&server, lookup, "blocks_pruned_by_filter"), 1);
    assert_eq!(metric(&server, lookup, "files_not_indexed"), 1);
}

/// Rows Spark read back (arrays of strings) as the client prints them: a line each, tab-separated.
fn lines(rows: &serde_json::Value) -> Vec<String> {
    (rows.as_array().unwrap().iter())
        .map(|row| {
            let values: Vec<&str> = (row.as_array().unwrap().iter())
                .map(|v| v.as_str().unwrap())
                .collect();
            format!("{}\n", values.join("\t"))
        })
        .collect()
}

/// Runs cli/tests/iceberg/spark.py: Spark writes `sp.orders` into `dir`; what Spark reads back.
fn spark(dir: &Path) -> serde_json::Value {
    let jars = std::env::var("SIEVE_SPARK_JARS").expect(
        "SIEVE_SPARK_JARS names Iceberg's Spark runtime and sqlite-jdbc (scripts/test.sh fetches \
         them)",
    );
    let mut command = Command::new("python3");
    command
        .args([
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/iceberg/spark.py"),
            dir.to_str().unwrap(),
        ])
        .env("SIEVE_SPARK_JARS", jars);
    let out = output_within(command, None, String::new);
    assert!(
        out.status.success(),
        "Spark did not write the table (scripts/test.sh installs PySpark 4.0.1): {}",
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn merge_on_read_tables_spark_wrote_are_read_as_spark_reads_them() {
    let warehouse = tempfile::tempdir().unwrap();
    let read = spark(warehouse.path());
    // Spark's catalog is named writers too, its files under the same directory.
    let server = Server::start_with(&config_indexing_every(warehouse.path(), 3600), None);
    // sp.orders: v2, position delete files; sp.vectors: v3, deletion vectors that took in the
    // position deletes written before the upgrade.
    for (table, columns) in [
        ("orders", "id, customer, amount"),
        ("vectors", "id, customer"),
    ] {
        let spark = &read[table];
        let rows: String = lines(&spark["rows"]).concat();
        let all = format!("select {columns} from lake.sp.{table} order by id");
        same_rows(&ok(&server, &all), &rows, table);
        let check = |server: &Server| {
            for (key, customers) in spark["lookups"].as_object().unwrap() {
                let want: String = (customers.as_array().unwrap().iter())
                    .map(|c| format!("{}\n", c.as_str().unwrap()))
                    .collect();
                for sql in [
                    format!("select customer from lake.sp.{table} where id = {key}"),
                    format!("select customer from lake.sp.{table} where id + 0 = {key}"),
                ] {
                    assert_eq!(ok(server, &sql), want, "{sql}");
                }
            }
        };
        check(&server);
        ok(&server, &format!("create index ix on lake.sp.{table} (id)"));
        check(&server);
        same_rows(&ok(&server, &all), &rows, table);
    }
    // sp.nested: Spark's list, struct and map columns, sent as the JSON Spark's to_json gives.
    let rows = lines(&read["nested"]);
    assert_eq!(
        ok(
            &server,
            "select id, tags, point, attrs from lake.sp.nested order by id"
        ),
        rows.concat()
    );
    let one = rows[0].split_once('\t').unwrap().1;
    assert_eq!(
        ok(
            &server,
            "select tags, point, attrs from lake.sp.nested where id = 1"
        ),
        one
    );
}

/// Rows as the client prints them, one per line, against those wanted: the first line that
/// differs, not thousands of rows.
fn same_rows(got: &str, want: &str, what: &str) {
    let (got, want): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
    let first = got.iter().zip(&want).position(|(g, w)| g != w);
    assert!(
        first.is_none() && got.len() == want.len(),
        "{what}: {} rows, {} wanted; first difference at row {first:?}: {:?} against {:?}",
        got.len(),
        want.len(),
        first.map(|i| got[i]),
        first.map(|i| want[i])
    );
}
