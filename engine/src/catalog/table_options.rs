//! `CREATE TABLE … WITH (index_columns = 'c1,c2', filter = 'xor8', block_rows = 100000,
//! locator = true, max_false_reads = 0.01)`.
//! The same keys are accepted after OPTIONS(…) and as plain `key = value` pairs.

use datafusion::common::plan_err;
use datafusion::error::Result;
use datafusion::sql::sqlparser::ast::{
    CreateTableOptions, Expr, SqlOption, TableConstraint, Value,
};
use sieve_index::FilterKind;
use sieve_storage::TableOptions;

const KEYS: &str = "index_columns, filter, block_rows, parquet_bloom_filters, locator, max_false_reads, \
     stale_rebuild_fraction, locator_group_rows";

fn literal(value: &Expr) -> Option<String> {
    match value {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s.clone()),
            Value::Number(n, _) => Some(n.clone()),
            Value::Boolean(b) => Some(b.to_string()),
            _ => None,
        },
        Expr::Identifier(ident) => Some(ident.value.clone()),
        _ => None,
    }
}

fn boolean(key: &str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => plan_err!("{key} must be true or false, got {value:?}"),
    }
}

/// Takes the options out of the statement (DataFusion does not know them).
pub fn take_table_options(options: &mut CreateTableOptions) -> Result<Vec<(String, String)>> {
    let list = match std::mem::take(options) {
        CreateTableOptions::None => return Ok(Vec::new()),
        CreateTableOptions::With(list)
        | CreateTableOptions::Options(list)
        | CreateTableOptions::Plain(list)
        | CreateTableOptions::TableProperties(list) => list,
    };
    let mut pairs = Vec::new();
    for option in list {
        match &option {
            SqlOption::KeyValue { key, value } => match literal(value) {
                Some(v) => pairs.push((key.value.to_ascii_lowercase(), v)),
                None => return plan_err!("table option {key} needs a literal value, got {value}"),
            },
            other => return plan_err!("unsupported table option {other}; supported: {KEYS}"),
        }
    }
    Ok(pairs)
}

/// Takes MySQL's `KEY [name] (column)` definitions out of a CREATE TABLE (DataFusion has no
/// indexes) as an `index_columns` option: a MySQL `KEY` is a Sieve indexed column, which is how
/// SHOW CREATE TABLE writes them, so a dump (`mariadb-dump --no-data`) makes the same table.
/// Explicit `index_columns` add to them.
pub fn take_key_constraints(
    constraints: &mut Vec<TableConstraint>,
    pairs: &mut Vec<(String, String)>,
) -> Result<()> {
    let mut keys = Vec::new();
    let mut kept = Vec::new();
    for constraint in std::mem::take(constraints) {
        let TableConstraint::Index(index) = constraint else {
            kept.push(constraint);
            continue;
        };
        for column in &index.columns {
            match &column.column.expr {
                Expr::Identifier(ident) => keys.push(ident.value.clone()),
                other => return plan_err!("an index is on columns, not on {other}"),
            }
        }
    }
    *constraints = kept;
    if keys.is_empty() {
        return Ok(());
    }
    for (key, value) in pairs.iter_mut() {
        if key == "index_columns" || key == "index" {
            keys.extend(value.split(',').map(|c| c.trim().to_string()));
            keys.retain(|c| !c.is_empty());
            let mut unique = Vec::new();
            for k in keys {
                if !unique.contains(&k) {
                    unique.push(k);
                }
            }
            *value = unique.join(",");
            return Ok(());
        }
    }
    pairs.push(("index_columns".into(), keys.join(",")));
    Ok(())
}

/// Applies `pairs` over `options` (a new table's defaults, or an existing table's options when a
/// load asks whether they agree with its own).
pub fn table_options(
    mut options: TableOptions,
    pairs: &[(String, String)],
) -> Result<TableOptions> {
    for (key, value) in pairs {
        match key.as_str() {
            "index_columns" | "index" => {
                options.index_columns = value
                    .split(',')
                    .map(|c| c.trim().to_string())
                    .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("none"))
                    .collect();
            }
            "filter" | "filter_kind" => {
                options.filter = value
                    .parse::<FilterKind>()
                    .map_err(|e| datafusion::error::DataFusionError::Plan(e.to_string()))?;
            }
            "block_rows" => match value.parse::<usize>() {
                Ok(n) if n > 0 => options.block_rows = n,
                _ => return plan_err!("block_rows must be a positive integer, got {value:?}"),
            },
            "parquet_bloom_filters" => options.parquet_bloom_filters = boolean(key, value)?,
            "locator" => options.locator = boolean(key, value)?,
            "max_false_reads" => match value.parse::<f64>() {
                Ok(n) if n > 0.0 && n <= 1.0 => options.max_false_reads = n,
                _ => return plan_err!("max_false_reads must be a number in (0, 1], got {value:?}"),
            },
            "stale_rebuild_fraction" => match value.parse::<f64>() {
                Ok(n) if n > 0.0 && n <= 1.0 => options.stale_rebuild_fraction = n,
                _ => {
                    return plan_err!(
                        "stale_rebuild_fraction must be a number in (0, 1], got {value:?}"
                    );
                }
            },
            "locator_group_rows" => match value.parse::<usize>() {
                Ok(n) if n > 0 => options.locator_group_rows = n,
                _ => {
                    return plan_err!(
                        "locator_group_rows must be a positive integer, got {value:?}"
                    );
                }
            },
            other => return plan_err!("unknown table option {other:?}; supported: {KEYS}"),
        }
    }
    Ok(options)
}
