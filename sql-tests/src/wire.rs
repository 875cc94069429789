//! The files run through a MySQL client (mysql_async, text protocol) against `sieve serve`.
//!
//! A value arrives as text with its column's MySQL type; it is spelled as the embedded runner
//! spells the Arrow value it came from, the way drivers map MySQL's types back: a TINYINT(1) is a
//! boolean (Connector/J's `tinyInt1isBit`), a DATETIME's date and time are joined by `T` as
//! Arrow prints timestamps, a FLOAT or DOUBLE is the number it reads as, printed as Arrow prints
//! it (ryu: `1.0` where MySQL sends `1`). Everything else must match as sent.

use async_trait::async_trait;
use mysql_async::consts::ColumnType;
use mysql_async::prelude::Queryable;
use mysql_async::{Column, Conn, OptsBuilder, Row, Value};
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};

pub struct WireDb {
    conn: Conn,
}

impl WireDb {
    /// A connection to the server on loopback `port` as `user`.
    pub async fn connect(
        port: u16,
        user: &str,
        password: &str,
    ) -> Result<Self, mysql_async::Error> {
        let opts = OptsBuilder::default()
            .ip_or_hostname("127.0.0.1")
            .tcp_port(port)
            .user(Some(user))
            .pass(Some(password));
        Ok(Self {
            conn: Conn::new(opts).await?,
        })
    }
}

fn is_boolean(column: &Column) -> bool {
    column.column_type() == ColumnType::MYSQL_TYPE_TINY && column.column_length() == 1
}

fn column_type(column: &Column) -> DefaultColumnType {
    use ColumnType::*;
    match column.column_type() {
        _ if is_boolean(column) => DefaultColumnType::Text,
        MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_INT24 | MYSQL_TYPE_LONG
        | MYSQL_TYPE_LONGLONG | MYSQL_TYPE_YEAR => DefaultColumnType::Integer,
        MYSQL_TYPE_FLOAT | MYSQL_TYPE_DOUBLE | MYSQL_TYPE_DECIMAL | MYSQL_TYPE_NEWDECIMAL => {
            DefaultColumnType::FloatingPoint
        }
        _ => DefaultColumnType::Text,
    }
}

fn cell(column: &Column, value: Option<&Value>) -> String {
    let text = match value {
        None | Some(Value::NULL) => None,
        Some(Value::Bytes(bytes)) => Some(String::from_utf8_lossy(bytes).into_owned()),
        // The text protocol sends every value as bytes; anything else is a client change.
        Some(other) => panic!("a text-protocol value that is not bytes: {other:?}"),
    };
    let text = text.map(|t| match column.column_type() {
        _ if is_boolean(column) => match t.as_str() {
            "0" => "false".to_string(),
            "1" => "true".to_string(),
            _ => t,
        },
        ColumnType::MYSQL_TYPE_DOUBLE => match t.parse::<f64>() {
            Ok(v) => ryu::Buffer::new().format(v).to_string(),
            Err(_) => t,
        },
        ColumnType::MYSQL_TYPE_FLOAT => match t.parse::<f32>() {
            Ok(v) => ryu::Buffer::new().format(v).to_string(),
            Err(_) => t,
        },
        ColumnType::MYSQL_TYPE_DATETIME | ColumnType::MYSQL_TYPE_TIMESTAMP => {
            t.replacen(' ', "T", 1)
        }
        _ => t,
    });
    crate::spelled(text)
}

#[async_trait]
impl AsyncDB for WireDb {
    type Error = mysql_async::Error;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, mysql_async::Error> {
        let mut result = self.conn.query_iter(sql).await?;
        let columns = result.columns();
        let affected = result.affected_rows();
        let rows: Vec<Row> = result.collect().await?;
        let Some(columns) = columns.filter(|c| !c.is_empty()) else {
            return Ok(DBOutput::StatementComplete(affected));
        };
        Ok(DBOutput::Rows {
            types: columns.iter().map(column_type).collect(),
            rows: rows
                .iter()
                .map(|row| {
                    columns
                        .iter()
                        .enumerate()
                        .map(|(i, c)| cell(c, row.as_ref(i)))
                        .collect()
                })
                .collect(),
        })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "mysql"
    }
}
