//! Iceberg tables written by PyIceberg (as a user's other engines write them: appends, a
//! copy-on-write delete, a position delete file, a commit while Sieve serves), on a local
//! warehouse and on MinIO, read through an attached SQL catalog, every answer compared with
//! PyIceberg's own scan of the same snapshot.

mod common;

use std::path::Path;
use std::process::Command;

use common::{Server, output_within, stderr, stdout};

/// Runs cli/tests/iceberg/tables.py, its catalog in `dir` and its files there or under `s3`;
/// what PyIceberg reads from each table.
fn pyiceberg_at(dir: &Path, step: &str, s3: Option<&str>) -> serde_json::Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/iceberg/tables.py");
    let mut command = Command::new("python3");
    command.args([script, dir.to_str().unwrap(), step]);
    command.args(s3);
    let out = output_within(command, None, String::new);
    assert!(
        out.status.success(),
        "PyIceberg did not write the tables (scripts/test.sh installs pyiceberg[sql-sqlite] \
         0.12.0): {}",
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn pyiceberg(warehouse: &Path, step: &str) -> serde_json::Value {
    pyiceberg_at(warehouse, step, None)
}

/// A catalog named lake over `dir`'s catalog.db, its files in `warehouse`.
fn config_at(dir: &Path, warehouse: &str) -> String {
    let dir = dir.display();
    format!(
        "[[iceberg_catalogs]]\nname = \"lake\"\nuri = \"sqlite://{dir}/catalog.db\"\n\
         catalog_name = \"writers\"\nwarehouse = \"{warehouse}\"\n"
    )
}

fn config(warehouse: &Path) -> String {
    config_at(warehouse, &format!("file://{}", warehouse.display()))
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
        "empty\nfloats\npeople\nrenamed\n"
    );
    assert_eq!(
        ok(&server, "show tables from lake.ns like 'p%'"),
        "people\n"
    );
    let databases = ok(&server, "show databases");
    assert!(databases.contains("\nlake.ns\nlake.other\n"), "{databases}");
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

    refused(&server, "select * from lake.ns.renamed", "renamed");
    refused(&server, "select * from lake.other.nested", "nested");
    refused(&server, "select * from lake.ns.missing", "not found");

    // Another writer commits: the next statement reads the new snapshot.
    let read = pyiceberg(warehouse.path(), "append");
    assert_eq!(
        ok(&server, "select count(*) from lake.ns.people"),
        format!("{}\n", read["ns.people"]["count"])
    );
    assert_eq!(
        ok(&server, "select name from lake.ns.people where id = 20000"),
        "new\n"
    );
}

#[test]
fn a_warehouse_on_minio_is_read_as_pyiceberg_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("{}/iceberg-{}", common::s3_base(), std::process::id());
    let read = pyiceberg_at(dir.path(), "make", Some(&prefix));
    // S3 settings from the environment, as scripts/minio.sh exports them.
    let server = Server::start_with(&config_at(dir.path(), &prefix), None);
    assert_eq!(
        ok(&server, "select id from lake.ns.people order by id"),
        ids(&read, "ns.people")
    );
    assert_eq!(
        ok(&server, "select name from lake.ns.people where id = 10001"),
        ""
    );
    assert_eq!(
        ok(&server, "select name from lake.ns.people where id = 10002"),
        "p10002\n"
    );
    let read = pyiceberg_at(dir.path(), "append", Some(&prefix));
    assert_eq!(
        ok(&server, "select count(*) from lake.ns.people"),
        format!("{}\n", read["ns.people"]["count"])
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
    let out = as_reader("show tables from lake.ns");
    assert!(stderr(&out).contains("1044"), "{}", stderr(&out));
    assert!(!stdout(&as_reader("show databases")).contains("lake."));
    // One table granted: only it is listed and read.
    ok(&server, "grant select on lake.`ns.people` to reader");
    assert_eq!(stdout(&as_reader("show tables from lake.ns")), "people\n");
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

#[test]
fn a_coordinator_refuses_iceberg_reads_by_name() {
    let warehouse = tempfile::tempdir().unwrap();
    pyiceberg(warehouse.path(), "make");
    // Refused when planned, before any worker is called: none listens at this address.
    let worker = format!("http://127.0.0.1:{}", common::free_port());
    // Top-level keys before the catalog's table.
    let config = format!(
        "workers = [\"{worker}\"]\ncluster_secret = \"test-cluster-secret-0123\"\n{}",
        config(warehouse.path())
    );
    let server = Server::start_with(&config, None);
    refused(
        &server,
        "select count(*) from lake.ns.people",
        "Iceberg tables are not read through workers yet",
    );
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
