//! MySQL Connector/J and MariaDB Connector/J against `sieve serve` (`tests/java/DriverTest.java`,
//! run by the machine's Java as a single-file program): default options and server-side
//! prepared statements, typed results and their metadata, DatabaseMetaData, Statement.cancel().
//! `scripts/test.sh` fetches the drivers' jars (pinned, checked) and names them in
//! `SIEVE_JDBC_JARS`.

mod common;

use std::process::Command;

use common::Server;

fn run(driver: &str) {
    let jars = std::env::var("SIEVE_JDBC_JARS")
        .expect("SIEVE_JDBC_JARS names the JDBC drivers' jars (scripts/test.sh fetches them)");
    let server = Server::start();
    let mut java = Command::new("java");
    java.args([
        "-cp",
        &jars,
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/java/DriverTest.java"),
        driver,
    ]);
    assert_eq!(server.run_client(java).trim(), "ok");
}

#[test]
fn mysql_connector_j() {
    run("mysql");
}

#[test]
fn mariadb_connector_j() {
    run("mariadb");
}
