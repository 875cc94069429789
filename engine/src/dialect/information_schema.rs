//! MySQL's `information_schema` (SCHEMATA, TABLES, COLUMNS, STATISTICS, PROCESSLIST; FILES,
//! PARTITIONS and TRIGGERS, empty: Sieve has none of them, and `mariadb-dump` asks), answered from the Sieve
//! catalog when a query names one: what JDBC's `DatabaseMetaData`, SQLAlchemy's inspector and
//! GUI tools read to list databases, tables, columns and indexes. Types are MySQL's
//! ([`crate::dialect::types`]); each indexed column is an index named after it, of its filter kind.
//!
//! A user sees the databases and tables it holds a privilege on, as in MySQL (root, all).
//! Attached Iceberg catalogs' namespaces are databases `catalog.namespace` here as in SHOW
//! DATABASES, their tables listed with engine `Iceberg` and their columns as their current
//! schema types them (a table Sieve cannot read yet is listed without its columns).
//!
//! Column names are lower case: DataFusion folds unquoted names to lower case, so that is what
//! `SELECT TABLE_NAME FROM information_schema.TABLES` finds.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::{MemTable, SchemaProvider, TableProvider};
use datafusion::error::Result;
use sieve_iceberg::{IcebergCatalog, IcebergError, TableScan};
use sieve_storage::{Catalog, StorageError, TableDef};

use crate::access::principal::Principal;
use crate::access::privileges::Object;
use crate::dialect::types::mysql_type;
use crate::error::to_df;
use crate::iceberg::catalog as iceberg_catalog;

use crate::iceberg::file_indexes::FileIndexes;
use crate::iceberg::index_build::column_dropped;
use crate::processes::{Process, ProcessList};

pub const NAME: &str = "information_schema";
const TABLES: [&str; 8] = [
    "processlist",
    "schemata",
    "tables",
    "columns",
    "statistics",
    "files",
    "partitions",
    "triggers",
];
/// What MySQL calls its only catalog.
const CATALOG: &str = "def";

#[derive(Debug)]
pub struct InformationSchema {
    catalog: Catalog,
    /// The attached Iceberg catalogs, and their tables' indexes.
    attached: Arc<[Arc<IcebergCatalog>]>,
    indexes: Arc<FileIndexes>,
    /// The server's connections, for PROCESSLIST; None in a session no server serves.
    processes: Option<Arc<dyn ProcessList>>,
    /// Whose listings these are.
    viewer: Arc<Principal>,
}

impl InformationSchema {
    pub fn new(
        catalog: Catalog,
        (attached, indexes): (Arc<[Arc<IcebergCatalog>]>, Arc<FileIndexes>),
        processes: Option<Arc<dyn ProcessList>>,
        viewer: Arc<Principal>,
    ) -> Self {
        Self {
            catalog,
            attached,
            indexes,
            processes,
            viewer,
        }
    }

    /// The databases the viewer sees.
    async fn databases(&self) -> Result<Vec<String>> {
        let mut names = self.catalog.list_databases().await.map_err(to_df)?;
        names.retain(|db| self.viewer.sees(&Object::database(db)));
        Ok(names)
    }

    /// Every table's definition the viewer sees, by database; tables dropped while listing are
    /// skipped.
    async fn definitions(&self) -> Result<Vec<TableDef>> {
        let mut defs = Vec::new();
        for db in self.databases().await? {
            for name in self.catalog.list_tables(&db).await.map_err(to_df)? {
                if !self.viewer.sees(&Object::table(&db, &name)) {
                    continue;
                }
                match self.catalog.table(&db, &name).await {
                    Ok(def) => defs.push(def),
                    Err(StorageError::UnknownTable(..)) => {}
                    Err(e) => return Err(to_df(e)),
                }
            }
        }
        Ok(defs)
    }

    /// Every attached table the viewer sees, with its catalog and namespace.
    async fn attached_tables(&self) -> Result<Vec<(TableName, &IcebergCatalog, String)>> {
        let mut tables = Vec::new();
        for catalog in self.attached.iter() {
            if !self.viewer.sees(&Object::database(catalog.name())) {
                continue;
            }
            for namespace in iceberg_catalog::listed(catalog, catalog.namespaces().await) {
                for table in iceberg_catalog::listed(catalog, catalog.tables(&namespace).await) {
                    let object = iceberg_catalog::object(catalog.name(), &namespace, &table);
                    if self.viewer.sees(&object) {
                        let schema = format!("{}.{namespace}", catalog.name());
                        let name = TableName {
                            schema,
                            name: table,
                        };
                        tables.push((name, catalog.as_ref(), namespace.clone()));
                    }
                }
            }
        }
        Ok(tables)
    }
}

/// The current snapshot's scan of an attached table; None for one Sieve does not read yet
/// (nested columns, equality deletes…), one dropped meanwhile, or one it cannot read now (its
/// metadata outside the warehouse, a file gone, storage unreachable): left out with a warning
/// in the log, as a catalog that cannot answer is ([`iceberg_catalog::listed`]), so that one
/// table does not fail a listing of every table. A statement naming it still says why.
async fn readable(
    catalog: &IcebergCatalog,
    namespace: &str,
    table: &str,
) -> Option<Arc<TableScan>> {
    match catalog.scan(namespace, table).await {
        Ok(scan) => scan,
        Err(IcebergError::Unsupported(..)) => None,
        Err(e) => {
            let name = catalog.name();
            log::warn!("left attached table {name}.{namespace}.{table} out of a listing: {e}");
            None
        }
    }
}

/// Where a row of TABLES or COLUMNS is: TABLE_SCHEMA and TABLE_NAME.
struct TableName {
    schema: String,
    name: String,
}

impl From<&TableDef> for TableName {
    fn from(def: &TableDef) -> Self {
        Self {
            schema: def.database.clone(),
            name: def.name.clone(),
        }
    }
}

/// Builds a batch column by column: text (nullable) and unsigned integer columns.
#[derive(Default)]
struct Columns {
    fields: Vec<Field>,
    arrays: Vec<ArrayRef>,
}

impl Columns {
    fn text(mut self, name: &str, values: Vec<Option<String>>) -> Self {
        self.fields.push(Field::new(name, DataType::Utf8, true));
        self.arrays.push(Arc::new(StringArray::from(values)));
        self
    }

    fn number(mut self, name: &str, values: Vec<Option<u64>>) -> Self {
        self.fields.push(Field::new(name, DataType::UInt64, true));
        self.arrays.push(Arc::new(UInt64Array::from(values)));
        self
    }

    /// TABLE_CATALOG, TABLE_SCHEMA and TABLE_NAME: the table each row is about.
    fn tables_of<'a>(self, tables: impl Iterator<Item = &'a TableName> + Clone) -> Self {
        let n = tables.clone().count();
        self.text("table_catalog", same(CATALOG, n))
            .text(
                "table_schema",
                texts(tables.clone().map(|t| t.schema.as_str())),
            )
            .text("table_name", texts(tables.map(|t| t.name.as_str())))
    }

    fn table(self) -> Result<Arc<dyn TableProvider>> {
        let schema = Arc::new(Schema::new(self.fields));
        let batch = RecordBatch::try_new(schema.clone(), self.arrays)?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}

/// The columns tools read of FILES (MySQL's tablespace files) and PARTITIONS.
const FILES_TEXT: &[&str] = &[
    "file_id",
    "file_name",
    "file_type",
    "tablespace_name",
    "logfile_group_name",
    "engine",
    "extra",
];
const FILES_NUMBERS: &[&str] = &["total_extents", "initial_size", "extent_size"];
const PARTITIONS_TEXT: &[&str] = &[
    "table_catalog",
    "table_schema",
    "table_name",
    "partition_name",
    "partition_method",
    "partition_expression",
    "tablespace_name",
];

const TRIGGERS_TEXT: &[&str] = &[
    "trigger_catalog",
    "trigger_schema",
    "trigger_name",
    "event_manipulation",
    "event_object_schema",
    "event_object_table",
    "action_statement",
    "action_timing",
];

/// A table of these columns with no rows.
fn empty(text: &[&str], numbers: &[&str]) -> Result<Arc<dyn TableProvider>> {
    let mut columns = Columns::default();
    for name in text {
        columns = columns.text(name, Vec::new());
    }
    for name in numbers {
        columns = columns.number(name, Vec::new());
    }
    columns.table()
}

fn same(value: &str, n: usize) -> Vec<Option<String>> {
    vec![Some(value.to_string()); n]
}

fn texts<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<Option<String>> {
    values.into_iter().map(|v| Some(v.to_string())).collect()
}

impl InformationSchema {
    async fn schemata(&self) -> Result<Arc<dyn TableProvider>> {
        let mut names = self.databases().await?;
        names.extend(iceberg_catalog::visible_namespaces(&self.attached, &self.viewer).await?);
        names.push(NAME.to_string());
        let n = names.len();
        Columns::default()
            .text("catalog_name", same(CATALOG, n))
            .text("schema_name", texts(names.iter().map(String::as_str)))
            .text("default_character_set_name", same("utf8mb4", n))
            .text("default_collation_name", same("utf8mb4_general_ci", n))
            .text("sql_path", vec![None; n])
            .table()
    }

    async fn tables(&self) -> Result<Arc<dyn TableProvider>> {
        let defs = self.definitions().await?;
        let mut names: Vec<TableName> = defs.iter().map(TableName::from).collect();
        let mut engines = vec!["Sieve"; defs.len()];
        let mut options: Vec<Option<String>> = defs
            .iter()
            .map(|d| {
                let o = &d.options;
                Some(format!(
                    "index_columns='{}' filter='{}' block_rows={} locator={}",
                    o.index_columns.join(","),
                    o.filter,
                    o.block_rows,
                    o.locator
                ))
            })
            .collect();
        for (name, ..) in self.attached_tables().await? {
            names.push(name);
            engines.push("Iceberg");
            options.push(Some(String::new()));
        }
        let n = names.len();
        Columns::default()
            .tables_of(names.iter())
            .text("table_type", same("BASE TABLE", n))
            .text("engine", texts(engines))
            .number("table_rows", vec![None; n])
            .text("table_collation", same("utf8mb4_general_ci", n))
            .text("create_options", options)
            .text("table_comment", same("", n))
            .table()
    }

    async fn columns(&self) -> Result<Arc<dyn TableProvider>> {
        let defs = self.definitions().await?;
        let mut scans = Vec::new();
        for (name, catalog, namespace) in self.attached_tables().await? {
            if let Some(scan) = readable(catalog, &namespace, &name.name).await {
                scans.push((name, scan));
            }
        }
        // Per table: where it is, its schema, and its indexed columns (an attached table's
        // indexes are listed by STATISTICS alone).
        let names: Vec<TableName> = defs.iter().map(TableName::from).collect();
        let mut tables: Vec<(&TableName, &Schema, &[String])> = (names.iter().zip(&defs))
            .map(|(n, d)| (n, d.schema.as_ref(), &d.options.index_columns[..]))
            .collect();
        for (name, scan) in &scans {
            tables.push((name, scan.schema.as_ref(), &[]));
        }
        let mut rows: Vec<(&TableName, usize, &Field, bool)> = Vec::new();
        for (name, schema, keys) in &tables {
            for (i, field) in schema.fields().iter().enumerate() {
                rows.push((name, i + 1, field, keys.contains(field.name())));
            }
        }
        let types: Vec<_> = rows.iter().map(|r| mysql_type(r.2.data_type())).collect();
        let n = rows.len();
        Columns::default()
            .tables_of(rows.iter().map(|r| r.0))
            .text(
                "column_name",
                texts(rows.iter().map(|r| r.2.name().as_str())),
            )
            .number(
                "ordinal_position",
                rows.iter().map(|r| Some(r.1 as u64)).collect(),
            )
            .text("column_default", vec![None; n])
            .text(
                "is_nullable",
                texts(
                    rows.iter()
                        .map(|r| if r.2.is_nullable() { "YES" } else { "NO" }),
                ),
            )
            .text(
                "data_type",
                texts(types.iter().map(|t| t.data_type.as_str())),
            )
            .number(
                "character_maximum_length",
                types.iter().map(|t| t.max_length).collect(),
            )
            .number(
                "numeric_precision",
                types.iter().map(|t| t.precision).collect(),
            )
            .number("numeric_scale", types.iter().map(|t| t.scale).collect())
            .number(
                "character_octet_length",
                types.iter().map(|t| t.octet_length()).collect(),
            )
            .number(
                "datetime_precision",
                types.iter().map(|t| t.datetime_precision()).collect(),
            )
            .text(
                "character_set_name",
                types
                    .iter()
                    .map(|t| t.charset().map(|c| c.0.to_string()))
                    .collect(),
            )
            .text(
                "collation_name",
                types
                    .iter()
                    .map(|t| t.charset().map(|c| c.1.to_string()))
                    .collect(),
            )
            .text("privileges", same("select,insert", n))
            .text(
                "column_type",
                texts(types.iter().map(|t| t.column_type.as_str())),
            )
            .text(
                "column_key",
                texts(rows.iter().map(|r| if r.3 { "MUL" } else { "" })),
            )
            .text("extra", same("", n))
            .text("column_comment", same("", n))
            .text("generation_expression", same("", n))
            .table()
    }

    async fn statistics(&self) -> Result<Arc<dyn TableProvider>> {
        let mut rows = Vec::new();
        for def in self.definitions().await? {
            for column in &def.options.index_columns {
                if let Ok(field) = def.schema.field_with_name(column) {
                    rows.push(IndexRow {
                        schema: def.database.clone(),
                        table: def.name.clone(),
                        index: column.clone(),
                        seq: 1,
                        column: column.clone(),
                        nullable: Some(field.is_nullable()),
                        kind: def.options.filter.to_string(),
                        disabled: String::new(),
                    });
                }
            }
        }
        rows.extend(self.attached_indexes().await?);
        let n = rows.len();
        let text = |f: fn(&IndexRow) -> &str| texts(rows.iter().map(f));
        Columns::default()
            .text("table_catalog", same(CATALOG, n))
            .text("table_schema", text(|r| &r.schema))
            .text("table_name", text(|r| &r.table))
            .number("non_unique", vec![Some(1); n])
            .text("index_schema", text(|r| &r.schema))
            .text("index_name", text(|r| &r.index))
            .number("seq_in_index", rows.iter().map(|r| Some(r.seq)).collect())
            .text("column_name", text(|r| &r.column))
            .text("collation", vec![None; n])
            .number("cardinality", vec![None; n])
            .number("sub_part", vec![None; n])
            .text("packed", vec![None; n])
            .text(
                "nullable",
                (rows.iter())
                    .map(|r| r.nullable.map(|n| if n { "YES" } else { "" }.to_string()))
                    .collect(),
            )
            .text("index_type", text(|r| &r.kind))
            .text(
                "comment",
                texts(rows.iter().map(|r| match r.disabled.is_empty() {
                    true => "",
                    false => "disabled",
                })),
            )
            .text("index_comment", text(|r| &r.disabled))
            .table()
    }

    /// The indexes over attached tables the viewer sees: a row per column, the table's schema
    /// `catalog.namespace` as SHOW DATABASES lists it, each column by the name its field id has
    /// now (an index made before a rename follows it) and as nullable as the table says.
    async fn attached_indexes(&self) -> Result<Vec<IndexRow>> {
        if self.attached.is_empty() {
            return Ok(Vec::new());
        }
        let defs = self
            .indexes
            .store()
            .all_definitions()
            .await
            .map_err(to_df)?;
        let mut rows = Vec::new();
        for def in defs {
            let Some(catalog) = self.attached.iter().find(|c| c.name() == def.catalog) else {
                continue;
            };
            let object = iceberg_catalog::object(&def.catalog, &def.namespace, &def.table);
            if !self.viewer.sees(&object) {
                continue;
            }
            let scan = readable(catalog, &def.namespace, &def.table).await;
            // A column dropped since (its name perhaps given to a new column, of another
            // field id): the indexer cannot index the table's new files, and says so.
            let dropped = (def.columns.iter().zip(&def.field_ids)).find(|(_, id)| {
                (scan.as_ref())
                    .is_some_and(|s| sieve_iceberg::field_with_id(&s.schema, **id).is_none())
            });
            let disabled =
                dropped.map_or_else(String::new, |(column, id)| column_dropped(column, *id));
            for (i, (column, id)) in def.columns.iter().zip(&def.field_ids).enumerate() {
                let now =
                    (scan.as_ref()).and_then(|s| sieve_iceberg::field_with_id(&s.schema, *id));
                rows.push(IndexRow {
                    schema: format!("{}.{}", def.catalog, def.namespace),
                    table: def.table.clone(),
                    index: def.name.clone(),
                    seq: i as u64 + 1,
                    column: now.map_or_else(|| column.clone(), |f| f.name().clone()),
                    nullable: now.map(|f| f.is_nullable()),
                    kind: def.filter.to_string(),
                    disabled: disabled.clone(),
                });
            }
        }
        Ok(rows)
    }
}

/// One row of STATISTICS: a column of an index.
struct IndexRow {
    schema: String,
    table: String,
    index: String,
    seq: u64,
    column: String,
    nullable: Option<bool>,
    kind: String,
    /// Why the index is not used, for SHOW INDEX's Index_comment (its Comment then says
    /// "disabled", as MySQL's does for a disabled index); empty when it is.
    disabled: String,
}

impl InformationSchema {
    /// SHOW FULL PROCESSLIST's rows as a table (MySQL's columns, whole statements).
    fn processlist(&self) -> Result<Arc<dyn TableProvider>> {
        let all = self
            .processes
            .as_ref()
            .map(|list| list.processes())
            .unwrap_or_default();
        let text = |f: fn(&Process) -> &str| texts(all.iter().map(f));
        Columns::default()
            .number("id", all.iter().map(|p| Some(p.id)).collect())
            .text("user", text(|p| &p.user))
            .text("host", text(|p| &p.host))
            .text("db", text(|p| &p.db))
            .text("command", text(|p| &p.command))
            .number("time", all.iter().map(|p| Some(p.time)).collect())
            .text("state", text(|p| &p.state))
            .text("info", all.iter().map(|p| p.info.clone()).collect())
            .table()
    }
}

#[async_trait]
impl SchemaProvider for InformationSchema {
    fn table_names(&self) -> Vec<String> {
        TABLES.iter().map(|t| t.to_string()).collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        Ok(Some(match name.to_ascii_lowercase().as_str() {
            "schemata" => self.schemata().await?,
            "tables" => self.tables().await?,
            "columns" => self.columns().await?,
            "statistics" => self.statistics().await?,
            "files" => empty(FILES_TEXT, FILES_NUMBERS)?,
            "partitions" => empty(PARTITIONS_TEXT, &[])?,
            "triggers" => empty(TRIGGERS_TEXT, &[])?,
            "processlist" => self.processlist()?,
            _ => return Ok(None),
        }))
    }

    fn table_exist(&self, name: &str) -> bool {
        TABLES.contains(&name.to_ascii_lowercase().as_str())
    }
}
