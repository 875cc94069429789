//! `/metrics` as Prometheus reads it: fetched over HTTP and parsed by its text format's rules.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use prometheus_parse::{LineInfo, Scrape, Value};

/// `GET path` over HTTP/1.0: the status line and the body.
pub fn get(port: u16, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    // An endpoint that stops answering fails the test rather than stalling the suite.
    let limit = Some(std::time::Duration::from_secs(60));
    stream.set_read_timeout(limit).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    (head.lines().next().unwrap().to_string(), body.to_string())
}

/// The samples of a scrape by name and labels (`name{a="x",b="y"}`, labels sorted); fails on
/// any line Prometheus's text format would not take.
pub fn scrape(port: u16) -> HashMap<String, f64> {
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
pub fn rise(before: &HashMap<String, f64>, after: &HashMap<String, f64>, key: &str) -> f64 {
    after.get(key).copied().unwrap_or(0.0) - before.get(key).copied().unwrap_or(0.0)
}
