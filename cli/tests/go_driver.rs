//! go-sql-driver/mysql against `sieve serve`: prepared statements in a loop on one connection,
//! with and without `interpolateParams` (`tests/go/main.go`, run with the machine's Go).

mod common;

use std::process::Command;

use common::Server;

#[test]
fn go_sql_driver_prepared_statements_in_a_loop() {
    let server = Server::start();
    let mut go = Command::new("go");
    go.args(["run", "."])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/go"))
        // The toolchain installed, never one downloaded because go.mod names another.
        .env("GOTOOLCHAIN", "local");
    assert_eq!(server.run_client(go).trim(), "ok");
}
