//! A statement's end, recorded once, whichever front end ran it: in the Prometheus counters
//! ([`crate::metrics`]) and the query log ([`crate::query_log`]). A statement that fails before
//! its result is recorded at once; one with a result when the result is dropped, read to its
//! end or not ([`super::query_stream::QueryStream`]); one dropped before either (KILL QUERY, a
//! timeout or a lost client while it plans or writes) as cancelled.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use datafusion::common::ScalarValue;

use super::Session;
use super::query_stream::ScanStats;
use crate::metrics::{Outcome, statement_ended};
use crate::query_log::{Entry, QueryLog};

/// A statement not recorded yet; recorded as cancelled if dropped so.
#[derive(Debug)]
pub(crate) struct Finished(Option<Running>);

#[derive(Debug)]
struct Running {
    kind: &'static str,
    started: Instant,
    /// When it ended, if it is recorded later (see [`Finished::stop_clock`]).
    ended: Option<Instant>,
    started_at: SystemTime,
    log: Arc<QueryLog>,
    user: String,
    connection_id: u64,
    database: String,
    statement: String,
    parameters: Option<Vec<String>>,
}

impl Finished {
    /// A statement of `kind` `session` starts now; `parameters` are a prepared statement's
    /// values.
    pub(crate) fn start(
        session: &Session,
        kind: &'static str,
        statement: String,
        parameters: Option<&[ScalarValue]>,
    ) -> Finished {
        let log = session.query_log.clone();
        let parameters = parameters
            .filter(|_| log.logs_parameters())
            .map(|values| values.iter().map(ToString::to_string).collect());
        let client = session.server().1.clone();
        Finished(Some(Running {
            kind,
            started: Instant::now(),
            ended: None,
            started_at: SystemTime::now(),
            log,
            user: client.user,
            connection_id: client.connection_id,
            database: session.database(),
            statement,
            parameters,
        }))
    }
}

impl Finished {
    /// The statement ends now, though what it read is known later (the workers' counts of a
    /// distributed plan's scans): its duration stops here.
    pub(crate) fn stop_clock(&mut self) {
        if let Some(running) = &mut self.0 {
            running.ended = Some(Instant::now());
        }
    }

    pub(crate) fn record(
        mut self,
        outcome: Outcome,
        rows: u64,
        stats: &ScanStats,
        error: Option<String>,
    ) {
        if let Some(running) = self.0.take() {
            running.record(outcome, rows, stats, error);
        }
    }
}

impl Drop for Finished {
    fn drop(&mut self) {
        if let Some(running) = self.0.take() {
            running.record(Outcome::Cancelled, 0, &ScanStats::default(), None);
        }
    }
}

impl Running {
    fn record(self, outcome: Outcome, rows: u64, stats: &ScanStats, error: Option<String>) {
        let duration = self.ended.unwrap_or_else(Instant::now) - self.started;
        statement_ended(self.kind, outcome, duration, rows, stats);
        let since_epoch = self
            .started_at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let time = chrono::DateTime::<chrono::Utc>::from(self.started_at)
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        self.log.record(Entry {
            started_micros: since_epoch.as_micros() as i64,
            time,
            user: self.user,
            connection_id: self.connection_id,
            database: self.database,
            kind: self.kind,
            statement: self.statement,
            parameters: self.parameters,
            duration_ms: duration.as_secs_f64() * 1000.0,
            rows,
            bytes_read: stats.bytes_read,
            blocks_read: stats.blocks_read,
            outcome: outcome.label(),
            error,
            slow: self.log.is_slow(duration),
        });
    }
}
