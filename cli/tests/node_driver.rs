//! node mysql2 against `sieve serve`: `execute` (server-side prepared statements) with
//! `LIMIT ?` and typed values (`tests/node/main.js`, run with the machine's Node).

mod common;

use std::process::Command;

use common::Server;

#[test]
fn node_mysql2_execute_binds_limit_and_values() {
    let server = Server::start();
    let mut node = Command::new("node");
    node.arg("main.js")
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/node"));
    assert_eq!(server.run_client(node).trim(), "ok");
}
