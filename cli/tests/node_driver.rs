//! node mysql2 against `sieve serve`: `execute` (server-side prepared statements) with
//! `LIMIT ?` and typed values (`tests/node/main.js`, run with the machine's Node).

mod common;

use std::process::Command;

use common::{PASSWORD, Server, stderr, stdout};

#[test]
fn node_mysql2_execute_binds_limit_and_values() {
    let server = Server::start();
    let program = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/node");
    let out = Command::new("node")
        .arg("main.js")
        .current_dir(program)
        .env("SIEVE_PORT", server.port.to_string())
        .env("SIEVE_PASSWORD", PASSWORD)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "the node program failed:\n{}\n{}\nserver log:\n{}",
        stdout(&out),
        stderr(&out),
        server.log()
    );
    assert_eq!(stdout(&out).trim(), "ok");
}
