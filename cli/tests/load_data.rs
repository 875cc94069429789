//! LOAD DATA LOCAL INFILE from the stock mysql client, mariadb-import and a client at the packet
//! level: the file's rows arrive typed, a bad row or a client gone mid-file commits nothing, and
//! the server asks for a file only when both sides allow it.

mod common;

use common::wire::{COM_QUERY, Wire, command, error_code, packet};
use common::{PASSWORD, Server, stderr, stdout};

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn table(server: &Server) {
    let out = server.mysql(&[
        "-e",
        "create database shop; create table shop.t (id bigint not null, name varchar, day date)",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn rows(server: &Server) -> String {
    let out = server.mysql(&["-e", "select id, name, day from shop.t order by id"]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn the_stock_client_loads_tab_and_comma_separated_files() {
    let server = Server::start();
    table(&server);
    let dir = tempfile::tempdir().unwrap();
    let tsv = write(
        &dir,
        "a.tsv",
        "1\tone\t2024-01-02\n2\t\\N\t\\N\n3\ttab\\there\t2024-03-04\n",
    );
    let csv = write(
        &dir,
        "b.csv",
        "id,ignored,name,day\r\n4,x,\"four, quoted\",2024-05-06\r\n5,y,\"say \"\"hi\"\"\",NULL\r\n",
    );
    let out = server.mysql(&[
        "--local-infile=1",
        "-vv",
        "-e",
        &format!(
            "load data local infile '{tsv}' into table shop.t; \
             load data local infile '{csv}' into table shop.t fields terminated by ',' \
             optionally enclosed by '\"' lines terminated by '\\r\\n' ignore 1 lines \
             (id, @skip, name, day)"
        ),
    ]);
    assert!(out.status.success(), "{}\n{}", stderr(&out), server.log());
    let said = stdout(&out);
    assert!(said.contains("Query OK, 3 rows affected"), "{said}");
    assert!(
        said.contains("Records: 2  Deleted: 0  Skipped: 0  Warnings: 0"),
        "{said}"
    );
    assert_eq!(
        rows(&server),
        "1\tone\t2024-01-02\n2\tNULL\tNULL\n3\ttab\\there\t2024-03-04\n\
         4\tfour, quoted\t2024-05-06\n5\tsay \"hi\"\tNULL\n"
    );
}

#[test]
fn many_packets_and_batches_arrive_whole() {
    let server = Server::start();
    table(&server);
    let dir = tempfile::tempdir().unwrap();
    let n = 200_000u64;
    let text: String = (0..n)
        .map(|i| format!("{i}\tname {i}\t2024-01-01\n"))
        .collect();
    let file = write(&dir, "big.tsv", &text);
    let out = server.mysql(&[
        "--local-infile=1",
        "-e",
        &format!("load data local infile '{file}' into table shop.t"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = server.mysql(&[
        "-e",
        "select count(*), sum(id), count(distinct name), max(length(name)) from shop.t",
    ]);
    assert_eq!(stdout(&out), format!("{n}\t{}\t{n}\t11\n", n * (n - 1) / 2));
}

#[test]
fn a_bad_row_names_its_line_and_commits_nothing_unless_ignored() {
    let server = Server::start();
    table(&server);
    let dir = tempfile::tempdir().unwrap();
    let good: String = (0..100_000)
        .map(|i| format!("{i}\tok\t2024-01-01\n"))
        .collect();
    let file = write(
        &dir,
        "bad.tsv",
        &format!("{good}oops\tbad\t2024-01-01\n7\tshort\n"),
    );
    let out = server.mysql_script(
        &["--local-infile=1", "--force"],
        &format!("load data local infile '{file}' into table shop.t;\nselect 'still connected';\n"),
    );
    assert!(
        stderr(&out).contains("Incorrect bigint value: 'oops' for column 'id' at line 100001"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("still connected"), "{}", stdout(&out));
    assert_eq!(rows(&server), "", "a failed load commits nothing");

    let out = server.mysql(&[
        "--local-infile=1",
        "-vv",
        "-e",
        &format!("load data local infile '{file}' ignore into table shop.t"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Records: 100002  Deleted: 0  Skipped: 2  Warnings: 0"),
        "{}",
        stdout(&out)
    );
    let out = server.mysql(&["-e", "select count(*) from shop.t"]);
    assert_eq!(stdout(&out), "100000\n");
}

#[test]
fn mariadb_import_loads_a_file_into_the_table_it_is_named_for() {
    let server = Server::start();
    table(&server);
    let dir = tempfile::tempdir().unwrap();
    let file = write(&dir, "t.csv", "1,\"a\",2024-01-01\n2,\"b\",2024-01-02\n");
    let out = std::process::Command::new("mariadb-import")
        .args([
            "--local",
            "-h127.0.0.1",
            &format!("-P{}", server.port),
            "-uroot",
            &format!("-p{PASSWORD}"),
            "--fields-terminated-by=,",
            "--fields-optionally-enclosed-by=\"",
            "shop",
            &file,
        ])
        .output()
        .expect("mariadb-import runs (mariadb-client; scripts/test.sh installs it)");
    assert!(out.status.success(), "{}\n{}", stderr(&out), server.log());
    assert!(
        stdout(&out).contains("shop.t: Records: 2"),
        "{}",
        stdout(&out)
    );
    assert_eq!(rows(&server), "1\ta\t2024-01-01\n2\tb\t2024-01-02\n");
}

#[test]
fn a_file_is_asked_for_only_where_both_sides_allow_it() {
    let server = Server::start_with("local_infile = false", None);
    table(&server);
    let out = server.mysql(&[
        "--local-infile=1",
        "-e",
        "load data local infile '/etc/hostname' into table shop.t",
    ]);
    assert!(stderr(&out).contains("ERROR 3948"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the server's local_infile is off"),
        "{}",
        stderr(&out)
    );

    let server = Server::start();
    table(&server);
    let out = server.mysql(&[
        "--local-infile=0",
        "-e",
        "load data local infile '/etc/hostname' into table shop.t",
    ]);
    assert!(
        stderr(&out).contains("the client did not enable it"),
        "{}",
        stderr(&out)
    );
    let out = server.mysql(&["-e", "load data infile '/etc/passwd' into table shop.t"]);
    assert!(
        stderr(&out).contains("reads a file of the server's host, which Sieve never does"),
        "{}",
        stderr(&out)
    );
    let out = server.mysql(&[
        "--local-infile=1",
        "-e",
        "load data local infile '/etc/hostname' into table shop.nope",
    ]);
    assert!(stderr(&out).contains("ERROR 1146"), "{}", stderr(&out));
    let out = server.mysql(&[
        "--local-infile=1",
        "-e",
        "load data local infile '/etc/hostname' into table shop.t (id, nope)",
    ]);
    assert!(
        stderr(&out).contains("Unknown column 'nope' in 'field list'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_client_gone_mid_file_commits_nothing() {
    let server = Server::start();
    table(&server);
    let mut wire = Wire::connect(server.port);
    let (_, ok) = wire.login("root", PASSWORD);
    assert_eq!(ok[0], 0, "logged in");
    let sql = "load data local infile 'rows.tsv' into table shop.t";
    wire.send(&command(COM_QUERY, sql.as_bytes())).unwrap();
    let (sequence, request) = wire.read().expect("the file request");
    assert_eq!((request[0], &request[1..]), (0xfb, &b"rows.tsv"[..]));
    let chunk: String = (0..1000).map(|i| format!("{i}\tx\t2024-01-01\n")).collect();
    for i in 0..3 {
        wire.send(&packet(sequence + 1 + i, chunk.as_bytes()))
            .unwrap();
    }
    drop(wire);
    // Gone from the server's connections: its statement ended, whatever it did.
    let mut connections = 0;
    for _ in 0..600 {
        let out = server.mysql(&["-e", "show processlist"]);
        connections = stdout(&out).lines().count();
        if connections == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(connections, 1, "only the asking connection is left");
    assert_eq!(rows(&server), "");

    // The same file, whole, commits.
    let mut wire = Wire::connect(server.port);
    wire.login("root", PASSWORD);
    wire.send(&command(COM_QUERY, sql.as_bytes())).unwrap();
    let (sequence, _) = wire.read().expect("the file request");
    wire.send(&packet(sequence + 1, chunk.as_bytes())).unwrap();
    wire.send(&packet(sequence + 2, b"")).unwrap();
    let (_, reply) = wire.read().expect("the load's answer");
    assert_eq!((reply[0], error_code(&reply)), (0, None), "{reply:?}");
    assert_eq!(
        reply[1], 0xfc,
        "affected rows as a two-byte length-encoded integer"
    );
    assert_eq!(u16::from_le_bytes([reply[2], reply[3]]), 1000);
}

/// COPY INTO through the server, from MinIO (fails unless SIEVE_TEST_S3_URL and the AWS_*
/// variables are set, as scripts/test.sh sets them): the Parquet blocks of a table Sieve wrote
/// there, read back through the location the server's configuration names.
#[test]
fn copy_into_reads_parquet_files_from_a_configured_location() {
    let source = format!("{}/copy-source-{}", common::s3_base(), std::process::id());
    common::must(
        &source,
        "create table t10b with (block_rows = 1000) as \
         select number as c1, cast(rand() as string) as c2 from numbers(5000)",
    );
    let config = format!("[[external_locations]]\nurl = \"{source}\"\n");
    let server = Server::start_with(&config, None);
    let out = server.mysql(&[
        "-e",
        &format!(
            "create table copied (c1 bigint, c2 varchar); \
             copy into copied from '{source}/' pattern = '[.]parquet$' \
             file_format = (type = parquet); \
             select count(*), count(distinct c1), sum(c1) from copied"
        ),
    ]);
    assert!(out.status.success(), "{}\n{}", stderr(&out), server.log());
    let said = stdout(&out);
    assert_eq!(
        said.lines().filter(|l| l.contains(".parquet\t")).count(),
        5,
        "{said}"
    );
    assert!(said.ends_with("5000\t5000\t12497500\n"), "{said}");

    let out = server.mysql(&[
        "-e",
        "copy into copied from 's3://elsewhere/' file_format = (type = parquet)",
    ]);
    assert!(
        stderr(&out).contains("not under any of the server's external_locations"),
        "{}",
        stderr(&out)
    );
}

/// Every `.parquet` file under `dir`.
fn parquet_files(dir: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                parquet_files(&path)
            } else {
                usize::from(path.extension().is_some_and(|x| x == "parquet"))
            }
        })
        .sum()
}

/// `kill -9` of the server while a COPY has written some of its blocks and not committed: the
/// table is as it was (MinIO as for the test above).
#[test]
fn a_copy_killed_mid_way_leaves_the_table_as_it_was() {
    let source = format!("{}/copy-killed-{}", common::s3_base(), std::process::id());
    common::must(
        &source,
        "create table t10b with (block_rows = 20000) as \
         select number as c1, cast(rand() as string) as c2 from numbers(2000000)",
    );
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().join("data");
    let storage = storage.to_str().unwrap();
    let config = format!("[[external_locations]]\nurl = \"{source}\"\n");
    let server = Server::start_on(storage, &config);
    let out = server.mysql(&[
        "-e",
        "create table copied (c1 bigint, c2 varchar) with (block_rows = 20000); \
         insert into copied values (1, 'before')",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let before = parquet_files(dir.path());
    let mut copy = std::process::Command::new("mysql")
        .args([
            "-h127.0.0.1",
            &format!("-P{}", server.port),
            "-uroot",
            &format!("-p{PASSWORD}"),
            "-e",
            &format!(
                "copy into copied from '{source}/' pattern = '[.]parquet$' \
                 file_format = (type = parquet)"
            ),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Some of the COPY's blocks are written: it has read files and not committed yet (a
    // hundred blocks to go).
    for _ in 0..6000 {
        if parquet_files(dir.path()) > before {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(
        parquet_files(dir.path()) > before,
        "the COPY wrote no block"
    );
    let killed = std::process::Command::new("kill")
        .args(["-9", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    copy.wait().unwrap();
    drop(server);

    let server = Server::start_on(storage, &config);
    let out = server.mysql(&["-e", "select count(*) from copied"]);
    assert_eq!(stdout(&out), "1\n", "{}", stderr(&out));
    // Run again, the COPY loads every file: the killed one recorded none.
    let out = server.mysql(&[
        "-e",
        &format!(
            "copy into copied from '{source}/' pattern = '[.]parquet$' \
             file_format = (type = parquet); select count(*) from copied"
        ),
    ]);
    assert!(
        stdout(&out).ends_with("2000001\n"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}
