//! What statements this process ran and what they read, for Prometheus (`sieve serve
//! --metrics-port`): statements by kind and outcome with their latency, rows returned, and the
//! blocks, pages and bytes their scans read, recorded once per statement when its result is
//! done with (`session::statement_end`), whichever front end ran it (MySQL, Flight SQL,
//! `sieve sql`); and,
//! read when scraped, the memory pool's use and the routing filters held. Also the seconds the
//! login throttle held failed logins back, on any port.

use std::sync::LazyLock;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::Engine;
use crate::session::query_stream::ScanStats;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByKindAndOutcome {
    kind: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByKind {
    kind: &'static str,
}

struct StatementCounters {
    statements: Family<ByKindAndOutcome, Counter>,
    duration: Family<ByKind, Histogram>,
    rows_returned: Counter,
    blocks_considered: Counter,
    blocks_read: Counter,
    blocks_read_directly: Counter,
    pages_read: Counter,
    rows_read: Counter,
    bytes_read: Counter,
    index_bytes_read: Counter,
    locator_groups_probed: Counter,
}

static STATEMENTS: LazyLock<StatementCounters> = LazyLock::new(|| StatementCounters {
    statements: Family::default(),
    // 0.25 ms to about 66 s: a warm point lookup to a long scan.
    duration: Family::new_with_constructor(|| {
        Histogram::new(exponential_buckets(0.00025, 2.0, 19))
    }),
    rows_returned: Counter::default(),
    blocks_considered: Counter::default(),
    blocks_read: Counter::default(),
    blocks_read_directly: Counter::default(),
    pages_read: Counter::default(),
    rows_read: Counter::default(),
    bytes_read: Counter::default(),
    index_bytes_read: Counter::default(),
    locator_groups_probed: Counter::default(),
});

static LOGIN_DELAY: LazyLock<Counter<f64, AtomicU64>> = LazyLock::new(Counter::default);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByWorker {
    worker: String,
}

/// A coordinator's point lookups sent to workers, by worker (as `--workers` names them).
static WORKER_LOOKUPS: LazyLock<Family<ByWorker, Counter>> = LazyLock::new(Family::default);

/// Counts a point lookup a coordinator sent the worker named `worker`.
pub(crate) fn worker_lookup_sent(worker: &str) {
    WORKER_LOOKUPS
        .get_or_create(&ByWorker {
            worker: worker.to_string(),
        })
        .inc();
}

/// Counts the time the login throttle held a failed login's answer back.
pub(crate) fn login_delayed(delay: Duration) {
    LOGIN_DELAY.inc_by(delay.as_secs_f64());
}

/// How a statement ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Error,
    /// Its result was dropped before its end: the client left, or stopped reading.
    Cancelled,
}

impl Outcome {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
        }
    }
}

/// Counts a statement that ended: its outcome, latency, the rows it returned and what it read.
pub(crate) fn statement_ended(
    kind: &'static str,
    outcome: Outcome,
    duration: Duration,
    rows_returned: u64,
    stats: &ScanStats,
) {
    let counters = &*STATEMENTS;
    counters
        .statements
        .get_or_create(&ByKindAndOutcome {
            kind,
            outcome: outcome.label(),
        })
        .inc();
    counters
        .duration
        .get_or_create(&ByKind { kind })
        .observe(duration.as_secs_f64());
    counters.rows_returned.inc_by(rows_returned);
    counters.blocks_considered.inc_by(stats.blocks_total);
    counters.blocks_read.inc_by(stats.blocks_read);
    (counters.blocks_read_directly).inc_by(stats.blocks_read_directly);
    counters.pages_read.inc_by(stats.pages_read);
    counters.rows_read.inc_by(stats.rows_read);
    counters.bytes_read.inc_by(stats.bytes_read);
    counters.index_bytes_read.inc_by(stats.index_bytes);
    counters
        .locator_groups_probed
        .inc_by(stats.locator_groups_probed);
}

/// The kind of statement `sql` is, from its first word (after comments): select, insert, …;
/// "other" for words outside the list, so the label's values stay few.
pub fn statement_kind(sql: &str) -> &'static str {
    let mut rest = sql.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r).trim_start();
        } else if rest.starts_with("--") || rest.starts_with('#') {
            rest = rest.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else {
            break;
        }
    }
    let word: String = rest
        .trim_start_matches('(')
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    const KINDS: [&str; 20] = [
        "select", "insert", "delete", "update", "replace", "create", "drop", "alter", "truncate",
        "show", "describe", "explain", "set", "use", "optimize", "vacuum", "copy", "load", "kill",
        "prepare",
    ];
    match word.as_str() {
        "with" | "values" | "table" => "select",
        "desc" => "describe",
        "begin" | "start" | "commit" | "rollback" | "savepoint" | "release" | "lock" | "unlock" => {
            "transaction"
        }
        w => KINDS.into_iter().find(|k| *k == w).unwrap_or("other"),
    }
}

/// Registers the statement counters, and `engine`'s memory pool and routing filters (with its
/// storage's object-store counters and caches).
pub fn register(registry: &mut Registry, engine: &Engine) {
    registry.register_with_unit(
        "login_delay",
        "Time the login throttle held failed logins' answers back (it doubles with an address's failures)",
        Unit::Seconds,
        LOGIN_DELAY.clone(),
    );
    registry.register(
        "worker_lookups",
        "Point lookups a coordinator sent to workers (to each owner that may hold the key), by worker",
        WORKER_LOOKUPS.clone(),
    );
    let counters = &*STATEMENTS;
    registry.register(
        "statements",
        "Statements run, by kind and outcome (ok, error, cancelled)",
        counters.statements.clone(),
    );
    registry.register_with_unit(
        "statement_duration",
        "Time from a statement's start to the end of its result, by kind",
        Unit::Seconds,
        counters.duration.clone(),
    );
    for (name, help, counter) in [
        (
            "rows_returned",
            "Rows statements returned",
            &counters.rows_returned,
        ),
        (
            "blocks_considered",
            "Blocks statements' scans considered before pruning",
            &counters.blocks_considered,
        ),
        (
            "blocks_read",
            "Blocks statements' scans read after pruning",
            &counters.blocks_read,
        ),
        (
            "blocks_read_directly",
            "Blocks (or an attached table's files) whose pages point lookups decoded on their \
             own task, without DataFusion's Parquet scan",
            &counters.blocks_read_directly,
        ),
        (
            "pages_read",
            "Pages (a locator slice of rows each) statements' scans asked for",
            &counters.pages_read,
        ),
        (
            "rows_read",
            "Rows in the blocks statements' scans read",
            &counters.rows_read,
        ),
        (
            "locator_groups_probed",
            "Locator groups whose pages lookups read or found cached",
            &counters.locator_groups_probed,
        ),
    ] {
        registry.register(name, help, counter.clone());
    }
    registry.register_with_unit(
        "data_read",
        "Bytes of blocks statements' scans fetched",
        Unit::Bytes,
        counters.bytes_read.clone(),
    );
    registry.register_with_unit(
        "index_read",
        "Bytes of locator pages and sidecars fetched to prune blocks",
        Unit::Bytes,
        counters.index_bytes_read.clone(),
    );
    registry.register_collector(Box::new(EngineCollector(engine.clone())));
    sieve_storage::metrics::register(registry, engine.storage());
}

#[derive(Debug)]
struct EngineCollector(Engine);

impl Collector for EngineCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for (name, help, bytes) in [
            (
                "memory_pool_reserved",
                "Bytes statements hold in the memory pool (memory_limit_mib bounds it)",
                self.0.memory_reserved(),
            ),
            (
                "routing_filters",
                "Bytes of routing filters held (node_filter_mib bounds them)",
                self.0.routing_bytes(),
            ),
        ] {
            let gauge = ConstGauge::new(bytes as i64);
            let metric =
                encoder.encode_descriptor(name, help, Some(&Unit::Bytes), gauge.metric_type())?;
            gauge.encode(metric)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_the_first_word_after_comments() {
        for (sql, kind) in [
            ("select 1", "select"),
            ("  SELECT 1", "select"),
            ("/* mysql-connector-j */ select @@version", "select"),
            ("-- note\n# more\ninsert into t values (1)", "insert"),
            ("(select 1) union (select 2)", "select"),
            ("with x as (select 1) select * from x", "select"),
            ("desc t", "describe"),
            ("COMMIT", "transaction"),
            ("grant all on *.* to x", "other"),
            ("", "other"),
            ("/* unterminated", "other"),
        ] {
            assert_eq!(statement_kind(sql), kind, "{sql}");
        }
    }
}
