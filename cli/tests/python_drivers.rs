//! PyMySQL and mysql-connector-python (with server-side prepared statements) against
//! `sieve serve`, through pytest.

mod common;

use std::process::Command;

use common::{PASSWORD, Server, stderr, stdout};

#[test]
fn pymysql_and_mysql_connector() {
    let server = Server::start();
    let tests = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python");
    let out = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", tests])
        .env("SIEVE_PORT", server.port.to_string())
        .env("SIEVE_PASSWORD", PASSWORD)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "pytest failed:\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).contains("passed"), "{}", stdout(&out));
}
