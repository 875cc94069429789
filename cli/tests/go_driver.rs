//! go-sql-driver/mysql against `sieve serve`: prepared statements in a loop on one connection,
//! with and without `interpolateParams` (`tests/go/main.go`, run with the machine's Go).

mod common;

use std::process::Command;

use common::{PASSWORD, Server, stderr, stdout};

#[test]
fn go_sql_driver_prepared_statements_in_a_loop() {
    let server = Server::start();
    let program = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/go");
    let out = Command::new("go")
        .args(["run", "."])
        .current_dir(program)
        // The toolchain installed, never one downloaded because go.mod names another.
        .env("GOTOOLCHAIN", "local")
        .env("SIEVE_PORT", server.port.to_string())
        .env("SIEVE_PASSWORD", PASSWORD)
        .output()
        .expect("go runs");
    assert!(
        out.status.success(),
        "the Go program failed:\n{}\n{}\nserver log:\n{}",
        stdout(&out),
        stderr(&out),
        server.log()
    );
    assert_eq!(stdout(&out).trim(), "ok");
}
