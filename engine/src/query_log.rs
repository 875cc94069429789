//! What ran: one entry per statement when it ends (time, user, statement, duration, rows
//! returned, bytes and blocks read, outcome and error), appended as a JSON line to the file
//! `query_log` names, and kept in memory for the last [`RECENT`] statements, which the table
//! function `sieve_query_log()` lists. Statements that took `long_query_time` or more are marked
//! slow (MySQL's slow query log, whose default of 10 s this keeps). A prepared statement is
//! logged with its `?` placeholders; its values only when `query_log_parameters` asks, as they
//! may be personal data.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
    UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::catalog::{MemTable, TableFunctionImpl, TableProvider};
use datafusion::common::plan_err;
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use serde::Serialize;

use crate::access::principal::CurrentPrincipal;

/// Entries `sieve_query_log()` can list.
pub const RECENT: usize = 1000;
/// Bytes of a statement's text kept in memory (the file has it whole): a dump's multi-MB
/// INSERTs would otherwise hold gigabytes.
const RECENT_TEXT: usize = 4096;

#[derive(Debug, Clone)]
pub struct QueryLogSettings {
    /// The JSON-lines file entries are appended to; None keeps them in memory only.
    pub path: Option<PathBuf>,
    pub long_query_time: Duration,
    /// Log prepared statements' parameter values.
    pub parameters: bool,
}

impl Default for QueryLogSettings {
    fn default() -> Self {
        Self {
            path: None,
            long_query_time: Duration::from_secs(10),
            parameters: false,
        }
    }
}

/// One statement that ended.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// When it started, in microseconds since the Unix epoch (UTC).
    #[serde(skip)]
    pub started_micros: i64,
    /// The same, as RFC 3339 for people and log shippers.
    pub time: String,
    pub user: String,
    pub connection_id: u64,
    pub database: String,
    pub kind: &'static str,
    pub statement: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Vec<String>>,
    pub duration_ms: f64,
    pub rows: u64,
    pub bytes_read: u64,
    pub blocks_read: u64,
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub slow: bool,
}

#[derive(Debug, Default)]
pub struct QueryLog {
    settings: QueryLogSettings,
    /// Appended a line at a time: one write per entry, whole lines even when the process dies.
    file: Option<Mutex<File>>,
    recent: Mutex<VecDeque<Arc<Entry>>>,
}

impl QueryLog {
    /// Opens (creating, appending to) the log's file, if it has one.
    pub fn open(settings: QueryLogSettings) -> std::io::Result<Self> {
        let file = match &settings.path {
            Some(path) => Some(Mutex::new(
                OpenOptions::new().create(true).append(true).open(path)?,
            )),
            None => None,
        };
        Ok(Self {
            settings,
            file,
            recent: Mutex::default(),
        })
    }

    pub(crate) fn logs_parameters(&self) -> bool {
        self.settings.parameters
    }

    pub(crate) fn is_slow(&self, duration: Duration) -> bool {
        duration >= self.settings.long_query_time
    }

    pub(crate) fn record(&self, mut entry: Entry) {
        if let Some(file) = &self.file {
            let mut line = serde_json::to_vec(&entry).expect("an entry serializes");
            line.push(b'\n');
            let mut file = file.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = file.write_all(&line) {
                log::warn!("cannot append to the query log: {e}");
            }
        }
        if entry.statement.len() > RECENT_TEXT {
            let mut cut = RECENT_TEXT;
            while !entry.statement.is_char_boundary(cut) {
                cut -= 1;
            }
            entry.statement.truncate(cut);
            entry.statement.push('…');
        }
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        if recent.len() == RECENT {
            recent.pop_front();
        }
        recent.push_back(Arc::new(entry));
    }

    fn recent(&self) -> Vec<Arc<Entry>> {
        let recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        recent.iter().cloned().collect()
    }
}

/// `sieve_query_log()`: the recent entries, oldest first; a user's own unless it holds ALL on
/// every database.
#[derive(Debug)]
pub(crate) struct QueryLogFunction {
    pub log: Arc<QueryLog>,
    pub viewer: CurrentPrincipal,
}

impl TableFunctionImpl for QueryLogFunction {
    fn call(&self, args: &[Expr]) -> Result<Arc<dyn TableProvider>> {
        if !args.is_empty() {
            return plan_err!("sieve_query_log() takes no arguments");
        }
        let mut entries = self.log.recent();
        // Entries name `user@host`.
        entries.retain(|e| {
            let user = e
                .user
                .rsplit_once('@')
                .map_or(e.user.as_str(), |(user, _)| user);
            self.viewer.sees_statements_of(user)
        });
        let text = |f: fn(&Entry) -> Option<String>| -> ArrayRef {
            Arc::new(StringArray::from(
                entries.iter().map(|e| f(e)).collect::<Vec<_>>(),
            ))
        };
        let number = |f: fn(&Entry) -> u64| -> ArrayRef {
            Arc::new(UInt64Array::from_iter_values(entries.iter().map(|e| f(e))))
        };
        let utc: Arc<str> = "UTC".into();
        let columns: Vec<(Field, ArrayRef)> = vec![
            (
                Field::new(
                    "time",
                    DataType::Timestamp(TimeUnit::Microsecond, Some(utc.clone())),
                    false,
                ),
                Arc::new(
                    TimestampMicrosecondArray::from_iter_values(
                        entries.iter().map(|e| e.started_micros),
                    )
                    .with_timezone(utc),
                ),
            ),
            (
                Field::new("user", DataType::Utf8, false),
                text(|e| Some(e.user.clone())),
            ),
            (
                Field::new("connection_id", DataType::UInt64, false),
                number(|e| e.connection_id),
            ),
            (
                Field::new("database", DataType::Utf8, false),
                text(|e| Some(e.database.clone())),
            ),
            (
                Field::new("kind", DataType::Utf8, false),
                text(|e| Some(e.kind.to_string())),
            ),
            (
                Field::new("statement", DataType::Utf8, false),
                text(|e| Some(e.statement.clone())),
            ),
            (
                Field::new("parameters", DataType::Utf8, true),
                text(|e| e.parameters.as_ref().map(|p| p.join(", "))),
            ),
            (
                Field::new("duration_ms", DataType::Float64, false),
                Arc::new(Float64Array::from_iter_values(
                    entries.iter().map(|e| e.duration_ms),
                )),
            ),
            (
                Field::new("rows", DataType::UInt64, false),
                number(|e| e.rows),
            ),
            (
                Field::new("bytes_read", DataType::UInt64, false),
                number(|e| e.bytes_read),
            ),
            (
                Field::new("blocks_read", DataType::UInt64, false),
                number(|e| e.blocks_read),
            ),
            (
                Field::new("outcome", DataType::Utf8, false),
                text(|e| Some(e.outcome.to_string())),
            ),
            (
                Field::new("error", DataType::Utf8, true),
                text(|e| e.error.clone()),
            ),
            (
                Field::new("slow", DataType::Boolean, false),
                Arc::new(BooleanArray::from_iter(
                    entries.iter().map(|e| Some(e.slow)),
                )),
            ),
        ];
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = columns.into_iter().unzip();
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(schema.clone(), arrays)?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}
