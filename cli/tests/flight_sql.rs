//! Arrow Flight SQL (`sieve serve --flight-port`) through ADBC's Flight SQL driver and pandas,
//! in pytest (scripts/test.sh installs adbc-driver-flightsql and pyarrow).

mod common;

use std::process::Command;

use common::{Server, free_port};

#[test]
fn adbc_flight_sql() {
    let flight_port = free_port();
    let server = Server::start_with(&format!("flight_port = {flight_port}"), None);
    let mut pytest = Command::new("python3");
    pytest
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/flight"),
        ])
        .env("SIEVE_FLIGHT_PORT", flight_port.to_string());
    let out = server.run_client(pytest);
    assert!(out.contains("5 passed"), "{out}");
}
