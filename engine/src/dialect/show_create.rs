//! SHOW CREATE TABLE: the statement that makes the table again, columns and Sieve's table
//! options (`WITH (…)`) included, as `mariadb-dump --no-data` and GUI tools read it.

use sieve_storage::TableDef;

use crate::dialect::types::ddl_type;

/// `name` quoted with backticks, as MySQL quotes identifiers.
pub fn quoted(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

pub(crate) fn create_table_sql(def: &TableDef) -> String {
    let columns: Vec<String> = def
        .schema
        .fields()
        .iter()
        .map(|f| {
            let null = if f.is_nullable() { "" } else { " NOT NULL" };
            format!("  {} {}{null}", quoted(f.name()), ddl_type(f.data_type()))
        })
        .collect();
    let o = &def.options;
    // Each indexed column as MySQL's KEY, which tools read for a table's indexes (SQLAlchemy's
    // inspector parses this statement) and CREATE TABLE takes back as an indexed column.
    let keys = o.index_columns.iter().map(|c| {
        let c = quoted(c);
        format!("  KEY {c} ({c}) COMMENT '{}'", o.filter)
    });
    let columns: Vec<String> = columns.into_iter().chain(keys).collect();
    format!(
        "CREATE TABLE {} (\n{}\n) WITH (index_columns = '{}', filter = '{}', block_rows = {}, \
         locator = {}, max_false_reads = {}, parquet_bloom_filters = {}, \
         stale_rebuild_fraction = {}, locator_group_rows = {})",
        quoted(&def.name),
        columns.join(",\n"),
        o.index_columns.join(",").replace('\'', "''"),
        o.filter,
        o.block_rows,
        o.locator,
        o.max_false_reads,
        o.parquet_bloom_filters,
        o.stale_rebuild_fraction,
        o.locator_group_rows,
    )
}
