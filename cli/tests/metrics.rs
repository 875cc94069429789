//! `/metrics` (`metrics_port`): Prometheus text that parses line by line, whose counters rise by
//! exactly what the statements run did.

mod common;

use std::collections::HashMap;

use common::prometheus::{get, rise, scrape};
use common::wire::{COM_QUERY, Wire, command, error_code};
use common::{PASSWORD, Server, free_port};

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
    // One small insert is neither compacted nor merged in the background.
    assert_eq!(rise(&before, &after, "sieve_merge_io_bytes_total"), 0.0);
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

/// With a disk cache, `/metrics` reports it like the memory caches: the lookup's pages were
/// kept there, and looking for them counted.
#[test]
fn the_disk_cache_is_reported() {
    let metrics = free_port();
    let cache = tempfile::tempdir().unwrap();
    let config = format!(
        "metrics_port = {metrics}\ndisk_cache = \"{}\"",
        cache.path().display()
    );
    let server = Server::start_with(&config, None);
    let mut wire = Wire::connect(server.port);
    let (_, ok) = wire.login("root", PASSWORD);
    assert_eq!(ok[0], 0);
    for sql in [
        "create table t (c1 bigint, c2 varchar) with (index_columns = 'c2')",
        "insert into t values (1, 'a'), (2, 'b'), (3, 'c')",
        "select c1 from t where c2 = 'b'",
    ] {
        wire.send(&command(COM_QUERY, sql.as_bytes())).unwrap();
        let reply = wire.reply();
        assert_eq!(error_code(&reply.last().unwrap().1), None, "{sql}");
    }
    let after = scrape(metrics);
    assert!(
        after["sieve_cache_bytes{cache=\"disk\"}"] > 0.0,
        "{after:#?}"
    );
    let looked = after["sieve_cache_hits_total{cache=\"disk\"}"]
        + after["sieve_cache_misses_total{cache=\"disk\"}"];
    assert!(looked > 0.0, "{after:#?}");
}
