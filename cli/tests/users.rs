//! Users besides root: CREATE USER, GRANT and REVOKE through the stock mysql client, kept in the
//! catalog across a restart, each statement refused with MySQL's error when the account lacks
//! the privilege, and the table left as it was.

mod common;

use std::process::Output;

use common::{Server, stderr, stdout};

/// Runs `sql` as `user` with `password` through the stock client.
fn as_user(server: &Server, user: &str, password: &str, sql: &str) -> Output {
    server.mysql(&[&format!("-u{user}"), &format!("-p{password}"), "-e", sql])
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// MySQL's error `code` for the statement, and nothing done.
fn refused(out: Output, code: u16) {
    assert!(
        !out.status.success(),
        "expected error {code}: {}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains(&format!("ERROR {code} (")),
        "expected error {code}: {}",
        stderr(&out)
    );
}

fn root(server: &Server, sql: &str) -> String {
    ok(server.mysql(&["-e", sql]))
}

#[test]
fn a_read_only_user_reads_and_changes_nothing() {
    let mut server = Server::start();
    root(
        &server,
        "create database app; create table app.t (c1 bigint, c2 varchar) with (index_columns = 'c2'); \
         insert into app.t values (1, 'a'), (2, 'b'); \
         create user 'reader'@'%' identified by 'r-pw'; grant select on app.* to 'reader'@'%'",
    );
    let count = "select count(*) from app.t";
    assert_eq!(ok(as_user(&server, "reader", "r-pw", count)).trim(), "2");
    // A point lookup takes the short path, which checks too.
    let lookup = "select c1 from app.t where c2 = 'b'";
    assert_eq!(ok(as_user(&server, "reader", "r-pw", lookup)).trim(), "2");
    for statement in [
        "insert into app.t values (3, 'c')",
        "delete from app.t where c1 = 1",
        "optimize table app.t",
        "drop table app.t",
        "create table app.u (x int)",
        "create table app.u as select * from app.t",
    ] {
        refused(as_user(&server, "reader", "r-pw", statement), 1142);
    }
    refused(
        as_user(&server, "reader", "r-pw", "create database other"),
        1044,
    );
    refused(
        as_user(&server, "reader", "r-pw", "drop database app"),
        1044,
    );
    refused(
        as_user(
            &server,
            "reader",
            "r-pw",
            "create user 'x'@'%' identified by 'y'",
        ),
        1227,
    );
    refused(
        as_user(
            &server,
            "reader",
            "r-pw",
            "grant all on *.* to 'reader'@'%'",
        ),
        1227,
    );
    // Files beside Sieve's storage are read for accounts holding everything (MySQL's FILE),
    // refused before the location is looked at.
    refused(
        as_user(
            &server,
            "reader",
            "r-pw",
            "select * from read_parquet('s3://anywhere/x.parquet')",
        ),
        1227,
    );
    assert_eq!(root(&server, "select count(*) from app.t").trim(), "2");
    assert_eq!(root(&server, "show tables from app").trim(), "t");

    // Wrong passwords and unknown users are denied as MySQL denies them.
    refused(as_user(&server, "reader", "wrong", "select 1"), 1045);
    refused(as_user(&server, "nobody", "r-pw", "select 1"), 1045);

    let grants = ok(as_user(&server, "reader", "r-pw", "show grants"));
    assert_eq!(
        grants.lines().collect::<Vec<_>>(),
        [
            "GRANT USAGE ON *.* TO `reader`@`%`",
            "GRANT SELECT ON `app`.* TO `reader`@`%`"
        ],
        "{grants}"
    );
    refused(
        as_user(&server, "reader", "r-pw", "show grants for root"),
        1227,
    );

    // A GRANT and a REVOKE apply to the next statement.
    root(&server, "grant insert on app.t to 'reader'@'%'");
    ok(as_user(
        &server,
        "reader",
        "r-pw",
        "insert into app.t values (3, 'c')",
    ));
    root(&server, "revoke select on app.* from 'reader'@'%'");
    refused(as_user(&server, "reader", "r-pw", count), 1142);
    refused(as_user(&server, "reader", "r-pw", lookup), 1142);
    // Reading the rows it inserts needs SELECT too.
    refused(
        as_user(
            &server,
            "reader",
            "r-pw",
            "insert into app.t select * from app.t",
        ),
        1142,
    );

    // Users are stored with the tables: a restarted server knows them (the first login after it
    // is a full one again, the cached digest forgotten).
    server.restart();
    ok(as_user(
        &server,
        "reader",
        "r-pw",
        "insert into app.t values (4, 'd')",
    ));
    refused(as_user(&server, "reader", "r-pw", count), 1142);
    assert_eq!(root(&server, "select count(*) from app.t").trim(), "4");
    // DELETE … WHERE reads the rows it chooses: it needs SELECT too, as in MySQL.
    root(&server, "grant delete on app.t to 'reader'@'%'");
    refused(
        as_user(&server, "reader", "r-pw", "delete from app.t where c1 = 1"),
        1142,
    );
    // A user's view of what ran holds its own statements only.
    let seen = ok(as_user(
        &server,
        "reader",
        "r-pw",
        "select distinct user from sieve_query_log()",
    ));
    assert!(!seen.trim().is_empty());
    assert!(seen.lines().all(|u| u.starts_with("reader@")), "{seen}");
    assert_eq!(root(&server, "select count(*) from app.t").trim(), "4");
}

#[test]
fn accounts_are_made_changed_and_dropped() {
    let server = Server::start();
    root(
        &server,
        "create user 'old'@'%' identified with mysql_native_password by 'o-pw'; \
         create user 'far'@'10.%' identified by 'f-pw'; \
         create user 'lan'@'localhost' identified by 'l-pw'",
    );
    // mysql_native_password accounts log in with its scramble.
    assert_eq!(
        ok(as_user(&server, "old", "o-pw", "select 42")).trim(),
        "42"
    );
    // A host pattern the client's address does not match is no account for it.
    refused(as_user(&server, "far", "f-pw", "select 1"), 1045);
    assert_eq!(ok(as_user(&server, "lan", "l-pw", "select 7")).trim(), "7");

    refused(
        server.mysql(&["-e", "create user 'old'@'%' identified by 'x'"]),
        1396,
    );
    root(
        &server,
        "create user if not exists 'old'@'%' identified by 'x'",
    );
    assert_eq!(ok(as_user(&server, "old", "o-pw", "select 1")).trim(), "1");
    refused(
        server.mysql(&["-e", "create user root identified by 'x'"]),
        1396,
    );

    root(&server, "alter user 'old'@'%' identified by 'new-pw'");
    refused(as_user(&server, "old", "o-pw", "select 1"), 1045);
    assert_eq!(
        ok(as_user(&server, "old", "new-pw", "select 1")).trim(),
        "1"
    );

    root(&server, "drop user 'old'@'%', 'lan'@'localhost'");
    refused(as_user(&server, "old", "new-pw", "select 1"), 1045);
    refused(server.mysql(&["-e", "drop user 'old'@'%'"]), 1396);
    root(&server, "drop user if exists 'old'@'%'");
    refused(server.mysql(&["-e", "show grants for 'old'@'%'"]), 1141);
    refused(
        server.mysql(&["-e", "grant select on *.* to 'old'@'%'"]),
        1410,
    );
    refused(
        server.mysql(&["-e", "revoke select on *.* from 'old'@'%'"]),
        1141,
    );
    refused(server.mysql(&["-e", "grant select on db.* to"]), 1064);

    // Neither the query log nor the stored users hold a password.
    let log = root(
        &server,
        "select statement from sieve_query_log() where statement like '%identified%'",
    );
    assert!(log.contains("<secret>"), "{log}");
    for password in ["o-pw", "f-pw", "l-pw", "new-pw"] {
        assert!(!log.contains(password), "{log}");
    }
    let stored = std::fs::read_dir(server.storage_dir().join("catalog/users"))
        .unwrap()
        .map(|f| std::fs::read_to_string(f.unwrap().path()).unwrap())
        .collect::<String>();
    assert!(stored.contains("\"far\""), "{stored}");
    for password in ["f-pw", "new-pw"] {
        assert!(!stored.contains(password), "{stored}");
    }
}

#[test]
fn only_all_privileges_kill_another_users_statement() {
    let server = Server::start();
    root(
        &server,
        "create user 'sleeper'@'%' identified by 's-pw'; \
         create user 'other'@'%' identified by 'o-pw'",
    );
    let client = std::process::Command::new("mysql")
        .args([
            "-h127.0.0.1",
            &format!("-P{}", server.port),
            "-usleeper",
            "-ps-pw",
            "-e",
            "select sleep(600)",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its connection, once the processlist shows the statement running.
    let find = "select id from information_schema.processlist where info = 'select sleep(600)'";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let id = loop {
        let id = root(&server, find);
        if !id.trim().is_empty() {
            break id.trim().to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the statement never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    refused(
        as_user(&server, "other", "o-pw", &format!("kill query {id}")),
        1095,
    );
    // Nor does it see the statement: the processlist shows a user its own connections.
    let listed = ok(as_user(&server, "other", "o-pw", "show full processlist"));
    assert!(!listed.contains("sleep(600)"), "{listed}");
    let listed = ok(as_user(&server, "other", "o-pw", find));
    assert!(listed.trim().is_empty(), "{listed}");
    assert_eq!(root(&server, find).trim(), id, "still running");
    root(&server, &format!("kill query {id}"));
    let out = client.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("1317"), "{}", stderr(&out));
}

#[test]
fn a_user_sees_only_the_tables_it_holds_a_privilege_on() {
    let server = Server::start();
    root(
        &server,
        "create database app; create database hidden; \
         create table app.t (c1 bigint, c2 varchar) with (index_columns = 'c2'); \
         insert into app.t values (1, 'a'); \
         create table app.secret (pin varchar); create table hidden.h (x int); \
         create user 'viewer'@'%' identified by 'v-pw'; grant select on app.t to 'viewer'@'%'",
    );
    let viewer = |sql: &str| as_user(&server, "viewer", "v-pw", sql);
    assert_eq!(ok(viewer("show databases")), "app\ninformation_schema\n");
    assert_eq!(ok(viewer("show tables from app")), "t\n");
    refused(viewer("show tables from hidden"), 1044);
    refused(viewer("show tables from nowhere"), 1044);
    assert_eq!(
        ok(viewer(
            "select table_schema, table_name from information_schema.tables \
             order by table_schema, table_name"
        )),
        "app\tt\n"
    );
    assert_eq!(
        ok(viewer(
            "select distinct table_name from information_schema.columns \
             where table_schema <> 'information_schema'"
        )),
        "t\n"
    );
    assert_eq!(
        ok(viewer(
            "select schema_name from information_schema.schemata order by 1"
        )),
        "app\ninformation_schema\n"
    );
    assert!(ok(viewer("describe app.t")).contains("c2"));
    assert!(ok(viewer("show create table app.t")).contains("CREATE TABLE"));
    let kinds = ok(viewer("select count(*) from sieve_index_stats('app.t')"));
    assert!(kinds.trim().parse::<u64>().is_ok_and(|n| n > 0), "{kinds}");
    // A table it holds nothing on, existing or not, is refused alike: 1142 says nothing of
    // whether it exists.
    for table in ["app.secret", "hidden.h", "app.nope"] {
        for statement in [
            format!("describe {table}"),
            format!("show columns from {table}"),
            format!("show create table {table}"),
            format!("select * from sieve_index_stats('{table}')"),
        ] {
            let out = viewer(&statement);
            refused(out, 1142);
        }
    }
    // Nor does a plan that never reads it show its columns (`LIMIT 0` is optimized to no
    // scan), nor USE of a database it holds nothing in.
    refused(viewer("select * from app.secret limit 0"), 1142);
    refused(viewer("select * from hidden.h where 1 = 0"), 1142);
    refused(viewer("use hidden"), 1044);
    refused(viewer("use nowhere"), 1044);
    assert_eq!(ok(viewer("use app; select count(*) from t")), "1\n");
    // Root still sees everything.
    assert_eq!(root(&server, "show tables from app"), "secret\nt\n");
}
