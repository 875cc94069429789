//! MySQL's functions of no arguments that tools call to learn where they are: `version()`,
//! `database()` / `schema()`, `user()` and its synonyms, `connection_id()`, `last_insert_id()`,
//! `curdate()`, `row_count()`. Their values come from the session (its database, the client it serves), so
//! each session registers its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use crate::dialect::system_variables::MYSQL_VERSION;

/// Who a session serves, as MySQL's functions report it.
#[derive(Debug, Clone)]
pub struct Client {
    /// `user@host`, as `user()` shows it.
    pub user: String,
    pub connection_id: u64,
}

impl Default for Client {
    /// `sieve sql` and embedded sessions: the local user, connection 0.
    fn default() -> Self {
        Self {
            user: "root@localhost".into(),
            connection_id: 0,
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
enum Value {
    Fixed(ScalarValue),
    /// The session's current database, which `USE` changes.
    Database,
    /// Rows the session's previous statement wrote (-1 after a query), as MySQL counts them.
    RowCount(Arc<RowCount>),
}

/// What `row_count()` reports, kept by the session as its statements finish.
#[derive(Debug, Default)]
pub struct RowCount(AtomicI64);

impl RowCount {
    pub fn set(&self, affected_rows: Option<u64>) {
        let n = affected_rows.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        self.0.store(n, Ordering::Relaxed);
    }
}

impl PartialEq for RowCount {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for RowCount {}

impl std::hash::Hash for RowCount {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(self, state);
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SessionFunction {
    name: &'static str,
    aliases: Vec<String>,
    signature: Signature,
    value: Value,
}

impl ScalarUDFImpl for SessionFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match &self.value {
            Value::Fixed(v) => v.data_type(),
            Value::Database => DataType::Utf8,
            Value::RowCount(_) => DataType::Int64,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Scalar(match &self.value {
            Value::Fixed(v) => v.clone(),
            Value::Database => {
                ScalarValue::Utf8(Some(args.config_options.catalog.default_schema.clone()))
            }
            Value::RowCount(count) => ScalarValue::Int64(Some(count.0.load(Ordering::Relaxed))),
        }))
    }
}

fn function(name: &'static str, aliases: &[&str], value: Value) -> ScalarUDF {
    // Stable: the same within a statement, never folded into a plan another session reuses.
    ScalarUDF::new_from_impl(SessionFunction {
        name,
        aliases: aliases.iter().map(|a| a.to_string()).collect(),
        signature: Signature::nullary(Volatility::Stable),
        value,
    })
}

/// Registers the functions for a session serving `client` (again, when the client changes).
pub fn register(ctx: &SessionContext, client: &Client, row_count: &Arc<RowCount>) {
    let text = |s: &str| Value::Fixed(ScalarValue::Utf8(Some(s.to_string())));
    let number = |n: u64| Value::Fixed(ScalarValue::UInt64(Some(n)));
    for udf in [
        function("version", &[], text(MYSQL_VERSION)),
        function("database", &["schema"], Value::Database),
        function(
            "user",
            &["current_user", "session_user", "system_user"],
            text(&client.user),
        ),
        function("connection_id", &[], number(client.connection_id)),
        // Sieve has no AUTO_INCREMENT columns: no statement ever generated an id.
        function("last_insert_id", &[], number(0)),
        function("row_count", &[], Value::RowCount(row_count.clone())),
    ] {
        ctx.register_udf(udf);
    }
    let curdate = datafusion::functions::datetime::current_date()
        .as_ref()
        .clone()
        .with_aliases(["curdate"]);
    ctx.register_udf(curdate);
}
