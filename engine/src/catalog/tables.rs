//! Tables by name, for tools beside the engine (the loader, the baselines) that read and write a
//! table's blocks directly: the one place a `name` or `database.name` becomes a storage handle.

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::plan_err;
use datafusion::error::Result;
use sieve_storage::{Catalog, StorageError, Table, TableDef, TableOptions};

use crate::catalog::table_name::TableName;
use crate::catalog::table_options::table_options;
use crate::error::to_df;

/// The table `name` (in the default database) or `database.name`.
pub(crate) async fn open_named(catalog: &Catalog, name: &str) -> Result<Table> {
    let name = TableName::parse(name, sieve_storage::DEFAULT_DATABASE)?;
    catalog
        .open_table(&name.database, &name.table)
        .await
        .map_err(to_df)
}

/// Opens `name`, creating it with `schema` and the table options `options` (as in
/// `CREATE TABLE … WITH (…)`) if it does not exist. An existing table must have exactly these
/// columns, and the options given must agree with its own: a tool that writes rows of one shape
/// never appends them to a table of another.
pub(crate) async fn ensure_named(
    catalog: &Catalog,
    name: &str,
    schema: SchemaRef,
    options: &[(String, String)],
) -> Result<Table> {
    let TableName {
        database: db,
        table: bare,
    } = TableName::parse(name, sieve_storage::DEFAULT_DATABASE)?;
    match catalog.open_table(&db, &bare).await {
        Ok(table) => {
            let def = table.def();
            let same_columns = def.schema.fields().len() == schema.fields().len()
                && def
                    .schema
                    .fields()
                    .iter()
                    .zip(schema.fields())
                    .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
            if !same_columns {
                return plan_err!(
                    "table '{db}.{bare}' exists with other columns than ({})",
                    schema
                        .fields()
                        .iter()
                        .map(|f| format!("{} {}", f.name(), f.data_type()))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            let wanted = table_options(def.options.clone(), options)?;
            if def.options != wanted {
                return plan_err!(
                    "table '{db}.{bare}' exists with options {:?}; drop it to load with {:?}",
                    def.options,
                    wanted
                );
            }
            Ok(table)
        }
        Err(StorageError::UnknownTable(..)) => {
            let options = table_options(TableOptions::defaults_for(&schema), options)?;
            let def = TableDef::new(&db, &bare, schema, options).map_err(to_df)?;
            catalog.create_table(&def).await.map_err(to_df)?;
            Ok(Table::new(catalog.storage().clone(), def))
        }
        Err(e) => Err(to_df(e)),
    }
}
