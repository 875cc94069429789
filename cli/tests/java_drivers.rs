//! MySQL Connector/J and MariaDB Connector/J against `sieve serve` (`tests/java/DriverTest.java`,
//! run by the machine's Java as a single-file program): default options and server-side
//! prepared statements, typed results and their metadata, DatabaseMetaData, Statement.cancel().
//! And Apache Arrow's Flight SQL JDBC driver against its Flight SQL port
//! (`tests/java/FlightSqlTest.java`). `scripts/test.sh` fetches the drivers' jars (pinned,
//! checked) and names them in `SIEVE_JDBC_JARS`.

mod common;

use std::process::Command;

use common::{Server, free_port};

fn run(driver: &str) {
    let server = Server::start();
    assert_eq!(
        server.run_client(common::driver_test(&[driver])).trim(),
        "ok"
    );
}

#[test]
fn mysql_connector_j() {
    run("mysql");
}

#[test]
fn mariadb_connector_j() {
    run("mariadb");
}

#[test]
fn arrow_flight_sql_jdbc() {
    let flight_port = free_port();
    let server = Server::start_with(&format!("flight_port = {flight_port}"), None);
    let mut java = Command::new("java");
    java.args([
        // Arrow's memory needs java.nio opened to it on Java 17.
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "-cp",
        &common::jdbc_jars(),
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/java/FlightSqlTest.java"),
    ])
    .env("SIEVE_FLIGHT_PORT", flight_port.to_string());
    assert_eq!(server.run_client(java).trim(), "ok");
}
