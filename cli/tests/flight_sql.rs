//! Arrow Flight SQL (`sieve serve --flight-port`) through ADBC's Flight SQL driver and pandas,
//! in pytest (scripts/test.sh installs adbc-driver-flightsql and pyarrow), plain and over TLS.

mod common;

use std::process::Command;

use common::{Server, free_port};

/// Runs the pytest files of `tests/<folder>` against a server whose Flight SQL port is
/// `flight_port` (with `config` besides), with `env` set; pytest's summary.
fn pytest(folder: &str, flight_port: u16, config: &str, env: &[(&str, String)]) -> String {
    let server = Server::start_with(&format!("flight_port = {flight_port}\n{config}"), None);
    let mut pytest = Command::new("python3");
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(format!("{}/tests/{folder}", env!("CARGO_MANIFEST_DIR")))
        .env("SIEVE_FLIGHT_PORT", flight_port.to_string())
        .envs(env.iter().map(|(k, v)| (k, v)));
    server.run_client(pytest)
}

#[test]
fn adbc_flight_sql() {
    let metrics_port = free_port();
    let out = pytest(
        "flight",
        free_port(),
        &format!("metrics_port = {metrics_port}"),
        &[("SIEVE_METRICS_PORT", metrics_port.to_string())],
    );
    assert!(out.contains("7 passed"), "{out}");
}

#[test]
fn adbc_flight_sql_over_tls() {
    let out = pytest("flight_tls", free_port(), "flight_tls = true", &[]);
    assert!(out.contains("3 passed"), "{out}");
}
