//! Iceberg's SQL catalog: the SQLite file PyIceberg's `SqlCatalog` and Java's `JdbcCatalog`
//! keep, one row per table in `iceberg_tables` naming its current metadata file. Sieve only
//! reads it, opening the file read-only per question so a writer's commit is seen by the next
//! statement; a writer holding the file locked is waited for up to five seconds.
//!
//! Two schema versions exist: V1 (PyIceberg ≥ 0.12, Java with `jdbc.schema-version=V1`) adds
//! an `iceberg_type` column telling tables from views; V0 has no such column and only tables.

use std::path::PathBuf;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::error::{IcebergError, Result};

#[derive(Debug, Clone)]
pub struct SqlCatalog {
    /// The name writers gave the catalog: rows of other catalogs in the same file are not its.
    name: String,
    file: PathBuf,
}

impl SqlCatalog {
    /// `uri` as PyIceberg takes it, `sqlite:///abs/path.db` (or `sqlite:////abs/path.db`).
    pub fn new(name: &str, uri: &str) -> Result<Self> {
        let file = uri.strip_prefix("sqlite://").filter(|p| p.starts_with('/'));
        let Some(file) = file else {
            return Err(IcebergError::Catalog {
                catalog: name.to_string(),
                why: format!(
                    "uri {uri:?}: a SQL catalog is sqlite:///absolute/path.db, a REST catalog \
                     http(s)://…"
                ),
            });
        };
        Ok(Self {
            name: name.to_string(),
            file: PathBuf::from(file),
        })
    }

    /// The metadata file `namespace.table` is at now; None if the catalog has no such table.
    pub async fn metadata_location(&self, namespace: &str, table: &str) -> Result<Option<String>> {
        let (namespace, table) = (namespace.to_string(), table.to_string());
        self.query(move |conn, name, v1| {
            let sql = format!(
                "SELECT metadata_location FROM iceberg_tables \
                 WHERE catalog_name = ?1 AND table_namespace = ?2 AND table_name = ?3{}",
                tables_only(v1)
            );
            conn.query_row(&sql, [name, &namespace, &table], |row| {
                row.get::<_, Option<String>>(0)
            })
            .optional()
            .map(Option::flatten)
        })
        .await
    }

    /// Every namespace: those with properties and those holding tables.
    pub async fn namespaces(&self) -> Result<Vec<String>> {
        self.query(|conn, name, _| {
            let mut statement = conn.prepare(
                "SELECT namespace FROM iceberg_namespace_properties WHERE catalog_name = ?1 \
                 UNION SELECT table_namespace FROM iceberg_tables WHERE catalog_name = ?1 \
                 ORDER BY 1",
            )?;
            statement
                .query_map([name], |row| row.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .await
    }

    /// The tables of `namespace`, by name.
    pub async fn tables(&self, namespace: &str) -> Result<Vec<String>> {
        let namespace = namespace.to_string();
        self.query(move |conn, name, v1| {
            let sql = format!(
                "SELECT table_name FROM iceberg_tables \
                 WHERE catalog_name = ?1 AND table_namespace = ?2{} ORDER BY 1",
                tables_only(v1)
            );
            let mut statement = conn.prepare(&sql)?;
            statement
                .query_map([name, &namespace], |row| row.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .await
    }

    /// Runs `ask` over the opened file, off the async threads (SQLite blocks).
    async fn query<T: Send + 'static>(
        &self,
        ask: impl FnOnce(&Connection, &str, bool) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let failed =
                |e| IcebergError::Sqlite(format!("{} ({})", this.name, this.file.display()), e);
            if !this.file.is_file() {
                return Err(IcebergError::Catalog {
                    catalog: this.name.clone(),
                    why: format!("no SQLite file at {}", this.file.display()),
                });
            }
            let conn = Connection::open_with_flags(
                &this.file,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(failed)?;
            conn.busy_timeout(Duration::from_secs(5)).map_err(failed)?;
            let v1 = conn
                .prepare("SELECT iceberg_type FROM iceberg_tables LIMIT 0")
                .is_ok();
            ask(&conn, &this.name, v1).map_err(failed)
        })
        .await?
    }
}

/// V1 catalogs keep views in the same table; a NULL type is a table an older writer added.
fn tables_only(v1: bool) -> &'static str {
    match v1 {
        true => " AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)",
        false => "",
    }
}
