//! `/metrics` (`metrics_port`): Prometheus text that parses line by line, whose counters rise by
//! exactly what the statements run did.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use common::wire::{COM_QUERY, Wire, command, error_code};
use common::{PASSWORD, Server, free_port};
use prometheus_parse::{LineInfo, Scrape, Value};

/// `GET path` over HTTP/1.0: the status line and the body.
fn get(port: u16, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    (head.lines().next().unwrap().to_string(), body.to_string())
}

/// The samples of a scrape by name and labels (`name{a="x",b="y"}`, labels sorted); fails on
/// any line Prometheus's text format would not take.
fn scrape(port: u16) -> HashMap<String, f64> {
    let (status, body) = get(port, "/metrics");
    assert!(status.contains("200"), "{status}");
    assert_eq!(
        body.lines().last(),
        Some("# EOF"),
        "OpenMetrics ends with # EOF"
    );
    for line in body
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        match LineInfo::parse(line) {
            LineInfo::Sample { value, .. } => {
                assert!(value.parse::<f64>().is_ok(), "a sample's value: {line}")
            }
            _ => panic!("not a sample line: {line}"),
        }
    }
    let parsed = Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap();
    let mut samples = HashMap::new();
    for sample in parsed.samples {
        let value = match sample.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
            Value::Histogram(_) | Value::Summary(_) => continue,
        };
        let mut labels: Vec<String> = sample
            .labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{v}\""))
            .collect();
        labels.sort();
        let key = if labels.is_empty() {
            sample.metric
        } else {
            format!("{}{{{}}}", sample.metric, labels.join(","))
        };
        samples.insert(key, value);
    }
    samples
}

/// How much `key` rose between two scrapes (absent counts as 0).
fn rise(before: &HashMap<String, f64>, after: &HashMap<String, f64>, key: &str) -> f64 {
    after.get(key).copied().unwrap_or(0.0) - before.get(key).copied().unwrap_or(0.0)
}

fn statements(samples: &HashMap<String, f64>) -> f64 {
    samples
        .iter()
        .filter(|(k, _)| k.starts_with("sieve_statements_total{"))
        .map(|(_, v)| v)
        .sum()
}

#[test]
fn counters_rise_by_exactly_what_statements_did() {
    let metrics = free_port();
    let server = Server::start_with(&format!("metrics_port = {metrics}"), None);
    let before = scrape(metrics);
    let mut wire = Wire::connect(server.port);
    let (_, ok) = wire.login("root", PASSWORD);
    assert_eq!(ok[0], 0);
    let mut run = |sql: &str| {
        wire.send(&command(COM_QUERY, sql.as_bytes())).unwrap();
        wire.reply().last().unwrap().1.clone()
    };
    run("create table t (c1 bigint, c2 varchar) with (index_columns = 'c2')");
    run("insert into t values (1, 'a'), (2, 'b'), (3, 'c')");
    run("select c1 from t where c2 = 'b'");
    let failed = run("select nope from t");
    assert_eq!(error_code(&failed), Some(1105));
    run("show tables");
    let after = scrape(metrics);

    assert_eq!(statements(&after) - statements(&before), 5.0);
    for (kind, outcome) in [
        ("create", "ok"),
        ("insert", "ok"),
        ("select", "ok"),
        ("select", "error"),
        ("show", "ok"),
    ] {
        let key = format!("sieve_statements_total{{kind=\"{kind}\",outcome=\"{outcome}\"}}");
        assert_eq!(rise(&before, &after, &key), 1.0, "{key}");
    }
    // One row selected and one table shown; the lookup read the table's one block.
    assert_eq!(rise(&before, &after, "sieve_rows_returned_total"), 2.0);
    assert_eq!(rise(&before, &after, "sieve_blocks_read_total"), 1.0);
    assert_eq!(rise(&before, &after, "sieve_rows_read_total"), 3.0);
    assert!(rise(&before, &after, "sieve_data_read_bytes_total") > 0.0);
    assert_eq!(
        rise(&before, &after, "sieve_mysql_logins_total{outcome=\"ok\"}"),
        1.0
    );
    assert_eq!(after["sieve_mysql_connections"], 1.0);
    // The commits wrote objects; the lookup read some.
    for operation in ["put", "get"] {
        let key = format!("sieve_object_store_requests_total{{operation=\"{operation}\"}}");
        assert!(rise(&before, &after, &key) > 0.0, "{key}");
    }
    assert!(
        rise(
            &before,
            &after,
            "sieve_object_store_transferred_bytes_total{operation=\"put\"}"
        ) > 0.0
    );
    assert!(after.contains_key("sieve_cache_hits_total{cache=\"sidecar\"}"));
    assert!(after.contains_key("sieve_memory_pool_reserved_bytes"));

    // A wrong password counts as denied; other paths are not found.
    let mut stranger = Wire::connect(server.port);
    let (_, denied) = stranger.login("root", "wrong");
    assert_eq!(error_code(&denied), Some(1045));
    let later = scrape(metrics);
    assert_eq!(
        rise(
            &after,
            &later,
            "sieve_mysql_logins_total{outcome=\"denied\"}"
        ),
        1.0
    );
    let (status, _) = get(metrics, "/");
    assert!(status.contains("404"), "{status}");
}
