//! The stock `mysql` command-line client against `sieve serve`.

mod common;

use common::{Server, stderr, stdout};

#[test]
fn ddl_ctas_and_point_queries() {
    let server = Server::start();
    let out = server.mysql(&["-e", "create database shop; use shop; create table t with (block_rows = 1000) as select number as c1, cast(rand() as string) as c2 from numbers(5000); select count(*), count(distinct c1) from t;"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "5000\t5000");

    let out = server.mysql(&["-D", "shop", "-e", "select c2 from t where c1 = 4321"]);
    let c2 = stdout(&out).trim().to_string();
    let out = server.mysql(&[
        "-D",
        "shop",
        "-e",
        &format!("select c1 from t where c2 = '{c2}'"),
    ]);
    assert_eq!(stdout(&out).trim(), "4321");

    let out = server.mysql(&["-e", "show databases"]);
    assert!(stdout(&out).contains("shop"), "{}", stdout(&out));
    let out = server.mysql(&["-D", "shop", "-e", "show tables"]);
    assert_eq!(stdout(&out).trim(), "t");
    let out = server.mysql(&["-e", "select @@version_comment limit 1"]);
    assert_eq!(stdout(&out).trim(), "Sieve");
}

#[test]
fn types_reach_the_client() {
    let server = Server::start();
    let out = server.mysql(&["-e", "select cast(1 as bigint unsigned) as u, -2 as i, 1.5 as d, cast('2024-02-03' as date) as day, cast('2024-02-03 04:05:06' as timestamp) as ts, cast(12.34 as decimal(10,2)) as dec, 'x' as s, null as n"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        "1\t-2\t1.5\t2024-02-03\t2024-02-03 04:05:06\t12.34\tx\tNULL"
    );
}

#[test]
fn errors_carry_mysql_codes_and_the_connection_survives() {
    let server = Server::start();
    let out = server.mysql_script(&["--force"], "select * from nope;\nselec 1;\nselect 42;\n");
    let err = stderr(&out);
    assert!(err.contains("ERROR 1146"), "{err}");
    assert!(err.contains("ERROR 1064"), "{err}");
    assert_eq!(
        stdout(&out).trim(),
        "42",
        "the connection stays usable after errors"
    );

    let out = server.mysql(&["-D", "nowhere", "-e", "select 1"]);
    assert!(stderr(&out).contains("ERROR 1049"), "{}", stderr(&out));

    let out = std::process::Command::new("mysql")
        .args([
            "-h127.0.0.1",
            &format!("-P{}", server.port),
            "-uroot",
            "-pwrong",
            "-e",
            "select 1",
        ])
        .output()
        .unwrap();
    common::assert_fails_with(&out, "ERROR 1045 (28000)");
}

/// `mariadb-dump --no-data` writes a script that makes the tables again; `mariadb-admin status`
/// reads the server's counters (COM_STATISTICS).
#[test]
fn dump_schema_and_admin_status() {
    let server = Server::start();
    let out = server.mysql(&["-e", "create database shop; create table shop.t (c1 bigint not null, c2 varchar, d decimal(10,2)) with (index_columns = 'c1,c2', filter = 'xor8'); insert into shop.t values (1, 'a', 1.5)"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let port = format!("-P{}", server.port);
    let password = format!("-p{}", common::PASSWORD);
    let login = ["-h127.0.0.1", port.as_str(), "-uroot", password.as_str()];
    let dump = std::process::Command::new("mariadb-dump")
        .args(login)
        .args(["--no-data", "shop"])
        .output()
        .expect("mariadb-dump is installed with mariadb-client");
    assert!(dump.status.success(), "{}\n{}", stderr(&dump), server.log());
    let script = stdout(&dump);
    assert!(script.contains("CREATE TABLE"), "{script}");
    // The dump, replayed into a new database, makes the same table.
    let out = server.mysql(&["-e", "create database copy"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = server.mysql_script(&["copy"], &script);
    assert!(out.status.success(), "{}\n{script}", stderr(&out));
    let out = server.mysql(&["-e", "show create table copy.t"]);
    let original = server.mysql(&["-e", "show create table shop.t"]);
    assert_eq!(stdout(&out), stdout(&original));

    let status = std::process::Command::new("mariadb-admin")
        .args(login)
        .arg("status")
        .output()
        .expect("mariadb-admin is installed with mariadb-client");
    assert!(status.status.success(), "{}", stderr(&status));
    let line = stdout(&status);
    assert!(
        line.starts_with("Uptime: ") && line.contains("Threads: 1"),
        "{line}"
    );
    assert!(line.contains("Questions: "), "{line}");
}

#[test]
fn concurrent_clients() {
    let server = Server::start();
    server.mysql(&[
        "-e",
        "create table t with (block_rows = 100) as select number as n from numbers(1000)",
    ]);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let server = &server;
                scope.spawn(move || {
                    let out = server
                        .mysql(&["-e", &format!("select n from t where n = {}", i * 100 + 7)]);
                    assert!(out.status.success(), "{}", stderr(&out));
                    assert_eq!(stdout(&out).trim(), (i * 100 + 7).to_string());
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
}

#[test]
fn a_slow_statement_blocks_no_one_and_is_cancelled_when_its_client_leaves() {
    let server = Server::start();
    let mut client = std::process::Command::new("mysql")
        .args([
            "-h127.0.0.1",
            &format!("-P{}", server.port),
            "-uroot",
            &format!("-p{}", common::PASSWORD),
        ])
        .args(["-e", "select count(*) from numbers(1000000000000)"])
        .spawn()
        .unwrap();
    // Running once SHOW PROCESSLIST lists it.
    let slow = "numbers(1000000000000)";
    let listed = || stdout(&server.mysql(&["-e", "show full processlist"])).contains(slow);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !listed() {
        assert!(
            std::time::Instant::now() < deadline,
            "the slow statement never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The slow statement does not hold up other connections: another is answered while it is
    // still running (it runs for hours).
    let out = server.mysql(&["-e", "select 6"]);
    assert_eq!(stdout(&out).trim(), "6", "{}", stderr(&out));
    assert!(
        listed(),
        "the slow statement ended before `select 6` was answered"
    );
    client.kill().unwrap();
    client.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !server.log().contains("went away; cancelled") {
        assert!(
            std::time::Instant::now() < deadline,
            "no cancellation logged:\n{}",
            server.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = server.mysql(&["-e", "select 7"]);
    assert_eq!(stdout(&out).trim(), "7", "the server keeps serving");
}

#[test]
fn sigterm_shuts_down_cleanly() {
    let mut server = Server::start();
    assert!(server.mysql(&["-e", "select 1"]).status.success());
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
    assert!(server.log().contains("shutting down"), "{}", server.log());
}

#[test]
fn the_shell_talks_to_a_server() {
    let server = Server::start();
    let out = common::sieve()
        .args(["sql", "--host", "127.0.0.1", "--port", &server.port.to_string(), "-e"])
        .arg("create table r as select number as n from numbers(3); select n from r where n = 2; select * from r where n = 9")
        .env("SIEVE_PASSWORD", common::PASSWORD)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Query OK, 3 rows affected"), "{text}");
    assert!(
        text.contains("| 2 |") && text.contains("1 row in set"),
        "{text}"
    );
    assert!(text.contains("Empty set"), "{text}");
}
