//! `sieve sql --host …`: the same shell over the MySQL protocol, to a `sieve serve` (or any
//! MySQL-compatible server). Results print as the embedded shell prints them, minus the read
//! statistics the protocol has no place for.

use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::util::pretty::pretty_format_batches;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, OptsBuilder, Row, Value};

/// Where to connect and as whom.
pub struct Remote {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::NULL => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::Int(i) => Some(i.to_string()),
        Value::UInt(u) => Some(u.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Double(d) => Some(d.to_string()),
        other => Some(other.as_sql(true).trim_matches('\'').to_string()),
    }
}

/// The rows of a result as text, in the bordered table the embedded shell prints.
fn table(columns: &[String], rows: &[Row]) -> Result<String, String> {
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|c| Field::new(c, DataType::Utf8, true))
            .collect::<Vec<_>>(),
    ));
    let arrays = (0..columns.len())
        .map(|i| {
            Arc::new(StringArray::from_iter(
                rows.iter().map(|r| r.as_ref(i).and_then(text)),
            )) as _
        })
        .collect();
    let batch = RecordBatch::try_new(schema, arrays).map_err(|e| e.to_string())?;
    Ok(pretty_format_batches(&[batch])
        .map_err(|e| e.to_string())?
        .to_string())
}

pub struct Client {
    conn: Conn,
}

impl Client {
    pub async fn connect(remote: &Remote) -> Result<Self, String> {
        let opts = OptsBuilder::default()
            .ip_or_hostname(remote.host.clone())
            .tcp_port(remote.port)
            .user(Some(remote.user.clone()))
            .pass(Some(remote.password.clone()));
        let conn = Conn::new(opts)
            .await
            .map_err(|e| format!("cannot connect to {}:{}: {e}", remote.host, remote.port))?;
        Ok(Self { conn })
    }

    /// Runs one statement and renders its result like the embedded shell.
    pub async fn run(&mut self, statement: &str) -> Result<String, String> {
        let started = Instant::now();
        let mut result = self
            .conn
            .query_iter(statement)
            .await
            .map_err(|e| e.to_string())?;
        let columns: Vec<String> = result
            .columns_ref()
            .iter()
            .map(|c| c.name_str().into_owned())
            .collect();
        let affected = result.affected_rows();
        let rows: Vec<Row> = result.collect().await.map_err(|e| e.to_string())?;
        let secs = started.elapsed().as_secs_f64();
        if columns.is_empty() {
            return Ok(format!(
                "Query OK, {affected} rows affected ({secs:.3} sec)"
            ));
        }
        if rows.is_empty() {
            return Ok(format!("Empty set ({secs:.3} sec)"));
        }
        let noun = if rows.len() == 1 { "row" } else { "rows" };
        Ok(format!(
            "{}\n{} {noun} in set ({secs:.3} sec)",
            table(&columns, &rows)?,
            rows.len()
        ))
    }
}
