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
    assert!(!out.status.success());
    // opensrv-mysql answers a failed handshake with 1698 (SQLSTATE 28000, access denied).
    assert!(
        stderr(&out).contains("ERROR 1698 (28000)"),
        "{}",
        stderr(&out)
    );
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
