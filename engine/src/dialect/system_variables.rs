//! MySQL's system variables (`@@version`, `@@session.auto_increment_increment`, …) as DataFusion
//! variables, typed, so the queries drivers send on connect are planned like any other: behind
//! a leading comment (Connector/J's `/* mysql-connector-j … */`), mixed with functions, in
//! prepared statements. Sieve has one value for each: its character set is always utf8mb4, every
//! statement commits on its own, there is one time zone (UTC) and one SQL mode.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::var_provider::VarProvider;

use crate::dialect::set_variable::UnknownVariable;

/// What Sieve says it is, to MySQL clients: a MySQL 8.0 version (drivers pick their protocol
/// features by it) marked as Sieve.
pub const MYSQL_VERSION: &str = concat!("8.0.36-sieve-", env!("CARGO_PKG_VERSION"));

/// The limits a server enforces, which clients read to stay inside them (Connector/J sizes its
/// packets by `max_allowed_packet`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    pub max_allowed_packet: u64,
    /// Seconds a client may stay silent (`wait_timeout`, `interactive_timeout`).
    pub wait_timeout: u64,
}

impl Default for ServerLimits {
    /// MySQL's defaults, for sessions no server configured.
    fn default() -> Self {
        Self {
            max_allowed_packet: 64 << 20,
            wait_timeout: 28800,
        }
    }
}

#[derive(Debug, Default)]
pub struct SystemVariables {
    pub limits: ServerLimits,
}

/// `@@session.x`, `@@global.x` and `@@x` are one variable here: `x`, lower-cased.
fn name(var_names: &[String]) -> String {
    let last = var_names.last().map_or("", String::as_str);
    let bare = last.trim_start_matches("@@");
    let bare = match var_names {
        [_scope, _] => bare,
        _ => bare
            .strip_prefix("session.")
            .or_else(|| bare.strip_prefix("global."))
            .unwrap_or(bare),
    };
    bare.to_ascii_lowercase()
}

/// Every variable [`value`] knows, for SHOW VARIABLES.
pub(crate) const VARIABLES: &[&str] = &[
    "version",
    "version_comment",
    "max_allowed_packet",
    "autocommit",
    "auto_increment_increment",
    "auto_increment_offset",
    "transaction_isolation",
    "tx_isolation",
    "transaction_read_only",
    "tx_read_only",
    "lower_case_table_names",
    "character_set_client",
    "character_set_connection",
    "character_set_results",
    "character_set_server",
    "character_set_database",
    "collation_connection",
    "collation_server",
    "collation_database",
    "sql_mode",
    "init_connect",
    "license",
    "time_zone",
    "system_time_zone",
    "wait_timeout",
    "interactive_timeout",
    "net_write_timeout",
    "net_buffer_length",
    "query_cache_size",
    "query_cache_type",
    "performance_schema",
    "have_ssl",
    "have_openssl",
    "socket",
    "unique_checks",
    "foreign_key_checks",
    "sql_notes",
    "sql_quote_show_create",
];

pub(crate) fn value(name: &str, limits: &ServerLimits) -> Option<ScalarValue> {
    let text = |s: &str| ScalarValue::Utf8(Some(s.to_string()));
    let number = |n: i64| ScalarValue::Int64(Some(n));
    Some(match name {
        "version" => text(MYSQL_VERSION),
        "version_comment" => text("Sieve"),
        "max_allowed_packet" => number(limits.max_allowed_packet as i64),
        "autocommit"
        | "auto_increment_increment"
        | "auto_increment_offset"
        | "unique_checks"
        | "foreign_key_checks"
        | "sql_notes"
        | "sql_quote_show_create" => number(1),
        "transaction_isolation" | "tx_isolation" => text("REPEATABLE-READ"),
        "transaction_read_only" | "tx_read_only" | "lower_case_table_names" => number(0),
        "character_set_client"
        | "character_set_connection"
        | "character_set_results"
        | "character_set_server"
        | "character_set_database" => text("utf8mb4"),
        "collation_connection" | "collation_server" | "collation_database" => {
            text("utf8mb4_general_ci")
        }
        "sql_mode" | "init_connect" | "license" => text(""),
        "time_zone" | "system_time_zone" => text("UTC"),
        "wait_timeout" | "interactive_timeout" => number(limits.wait_timeout as i64),
        "net_write_timeout" => number(60),
        "net_buffer_length" => number(16384),
        "query_cache_size" | "query_cache_type" | "performance_schema" => number(0),
        "have_ssl" | "have_openssl" => text("DISABLED"),
        // No Unix socket: clients that would prefer one (mysql_async) stay on TCP.
        "socket" => ScalarValue::Utf8(None),
        _ => return None,
    })
}

impl VarProvider for SystemVariables {
    fn get_value(&self, var_names: Vec<String>) -> Result<ScalarValue> {
        let name = name(&var_names);
        value(&name, &self.limits).ok_or_else(|| crate::error::external(UnknownVariable(name)))
    }

    /// Unknown names get a type too, so that the error is MySQL's "unknown system variable"
    /// (from [`Self::get_value`]) rather than DataFusion's "no type information".
    fn get_type(&self, var_names: &[String]) -> Option<DataType> {
        Some(value(&name(var_names), &self.limits).map_or(DataType::Utf8, |v| v.data_type()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_name_one_variable() {
        for names in [
            vec!["@@version".to_string()],
            vec!["@@session".to_string(), "version".to_string()],
            vec!["@@global.VERSION".to_string()],
        ] {
            assert_eq!(
                SystemVariables::default().get_value(names).unwrap(),
                ScalarValue::Utf8(Some(MYSQL_VERSION.into()))
            );
        }
        let auto = vec!["@@session".into(), "auto_increment_increment".into()];
        assert_eq!(
            SystemVariables::default().get_type(&auto),
            Some(DataType::Int64)
        );
        assert!(
            SystemVariables::default()
                .get_value(vec!["@@nope".into()])
                .is_err()
        );
        for name in VARIABLES {
            assert!(value(name, &ServerLimits::default()).is_some(), "{name}");
        }
    }
}
