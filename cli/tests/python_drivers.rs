//! PyMySQL and mysql-connector-python (with server-side prepared statements) against
//! `sieve serve`, through pytest.

mod common;

use std::process::Command;

use common::Server;

#[test]
fn pymysql_and_mysql_connector() {
    let server = Server::start();
    let mut pytest = Command::new("python3");
    pytest.args([
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python"),
    ]);
    let out = server.run_client(pytest);
    assert!(out.contains("passed"), "{out}");
}
