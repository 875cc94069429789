//! The query log (`query_log`, `long_query_time`, `query_log_parameters`) and
//! `sieve_query_log()`: every statement once, when it ends, with its outcome, error and figures;
//! slow ones marked; prepared statements' values only when asked.

mod common;

use common::wire::{COM_QUERY, COM_STMT_PREPARE, Wire, command, execute_with_bigint};
use common::{PASSWORD, Server, stderr, stdout};
use serde_json::Value;

/// Runs three text statements and one prepared execution on a new connection.
fn run_statements(server: &Server) {
    let mut wire = Wire::connect(server.port);
    assert_eq!(wire.login("root", PASSWORD).1[0], 0);
    for sql in ["select 1", "select sleep(2.1)", "select nope"] {
        wire.send(&command(COM_QUERY, sql.as_bytes())).unwrap();
        wire.reply();
    }
    wire.send(&command(COM_STMT_PREPARE, b"select ? + 1"))
        .unwrap();
    let (id, _) = wire.prepare_ok();
    wire.send(&execute_with_bigint(id, 987_654_321)).unwrap();
    assert_eq!(wire.binary_bigint(), 987_654_322);
}

fn entries(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn each_statement_is_logged_once_when_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("queries.jsonl");
    let config = format!(
        "query_log = {:?}\nlong_query_time = 2",
        log.display().to_string()
    );
    let server = Server::start_with(&config, None);
    run_statements(&server);
    let logged = entries(&log);
    let statements: Vec<&str> = logged
        .iter()
        .map(|e| e["statement"].as_str().unwrap())
        .collect();
    assert_eq!(
        statements,
        [
            "select 1",
            "select sleep(2.1)",
            "select nope",
            "select ? + 1"
        ]
    );
    let field = |i: usize, name: &str| logged[i][name].clone();
    assert_eq!(field(0, "outcome"), "ok");
    assert_eq!(field(0, "rows"), 1);
    assert_eq!(field(0, "user"), "root@127.0.0.1");
    assert_eq!(field(0, "slow"), false);
    assert_eq!(field(1, "slow"), true, "2.1 s is past long_query_time");
    assert!(field(1, "duration_ms").as_f64().unwrap() >= 2100.0);
    assert_eq!(field(2, "outcome"), "error");
    assert!(
        field(2, "error").as_str().unwrap().contains("nope"),
        "{}",
        logged[2]
    );
    // A prepared statement's values are not logged unless asked.
    assert_eq!(field(3, "parameters"), Value::Null);
    assert!(!std::fs::read_to_string(&log).unwrap().contains("987654321"));

    // The same entries in sieve_query_log(), from another connection.
    let out = server.mysql(&[
        "-e",
        "select statement, outcome, slow from sieve_query_log() where kind = 'select' \
         and statement not like '%sieve_query_log%'",
    ]);
    assert_eq!(
        stdout(&out),
        "select 1\tok\t0\nselect sleep(2.1)\tok\t1\nselect nope\terror\t0\nselect ? + 1\tok\t0\n",
        "{}",
        stderr(&out)
    );
    let out = server.mysql(&["-e", "select * from sieve_query_log(1)"]);
    assert!(
        stderr(&out).contains("takes no arguments"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn prepared_values_are_logged_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("queries.jsonl");
    let config = format!(
        "query_log = {:?}\nquery_log_parameters = true",
        log.display().to_string()
    );
    let server = Server::start_with(&config, None);
    run_statements(&server);
    let logged = entries(&log);
    assert_eq!(logged[3]["statement"], "select ? + 1");
    assert_eq!(logged[3]["parameters"], serde_json::json!(["987654321"]));
    // An unwritable log refuses to start, naming it.
    let said = common::serve_refused("query_log = \"/nonexistent/dir/q.jsonl\"");
    assert!(
        said.contains("cannot open the query log /nonexistent/dir/q.jsonl"),
        "{said}"
    );
}
