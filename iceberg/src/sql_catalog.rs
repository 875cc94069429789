//! Iceberg's SQL catalog: the SQLite file PyIceberg's `SqlCatalog` and Java's `JdbcCatalog`
//! keep, one row per table in `iceberg_tables` naming its current metadata file. Sieve only
//! reads it, read-only; each question is its own read transaction, so a writer's commit is seen
//! by the next statement; a writer holding the file locked is waited for up to five seconds.
//!
//! Every point lookup on an attached table asks the catalog for the table's metadata file, so
//! connections are kept open between questions ([`Connections`]) and their statements prepared
//! once: opening the file per question (reading its schema, preparing each statement) was a
//! tenth of an attached lookup's CPU.
//!
//! Two schema versions exist: V1 (PyIceberg ≥ 0.12, Java with `jdbc.schema-version=V1`) adds
//! an `iceberg_type` column telling tables from views; V0 has no such column and only tables.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::error::{IcebergError, Result};

#[derive(Debug, Clone)]
pub struct SqlCatalog {
    /// The name writers gave the catalog: rows of other catalogs in the same file are not its.
    name: String,
    file: PathBuf,
    connections: Arc<Connections>,
}

/// The catalog file's connections not in use. A hand-kept stack, not a pool crate: rusqlite's
/// pools (`r2d2_sqlite`, `deadpool-sqlite`) each pin their own rusqlite release and bring a
/// runtime of their own, for what is a `Vec` behind a lock here.
#[derive(Debug, Default)]
struct Connections {
    idle: Mutex<Vec<Kept>>,
}

/// At most this many connections are kept idle; more are opened while lookups crowd in, and
/// closed after.
const IDLE_CONNECTIONS: usize = 4;

/// An open connection to the catalog file.
#[derive(Debug)]
struct Kept {
    conn: Connection,
    /// The file it opened (device, inode): a file replaced since is opened anew.
    file: (u64, u64),
    /// The schema cookie when [`Self::v1`] was read: any schema change moves it.
    schema_version: i64,
    /// Whether the catalog's tables have an `iceberg_type` column (schema V1).
    v1: bool,
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
            connections: Arc::default(),
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
            let mut statement = conn.prepare_cached(&sql)?;
            (statement.query_row([name, &namespace, &table], |row| {
                row.get::<_, Option<String>>(0)
            }))
            .optional()
            .map(Option::flatten)
        })
        .await
    }

    /// Every namespace: those with properties and those holding tables.
    pub async fn namespaces(&self) -> Result<Vec<String>> {
        self.query(|conn, name, _| {
            let mut statement = conn.prepare_cached(
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
            let mut statement = conn.prepare_cached(&sql)?;
            statement
                .query_map([name, &namespace], |row| row.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .await
    }

    /// Runs `ask` over a connection to the file, off the async threads (SQLite blocks).
    async fn query<T: Send + 'static>(
        &self,
        ask: impl FnOnce(&Connection, &str, bool) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let failed =
                |e| IcebergError::Sqlite(format!("{} ({})", this.name, this.file.display()), e);
            let file = match std::fs::metadata(&this.file) {
                Ok(meta) if meta.is_file() => (meta.dev(), meta.ino()),
                _ => {
                    return Err(IcebergError::Catalog {
                        catalog: this.name.clone(),
                        why: format!("no SQLite file at {}", this.file.display()),
                    });
                }
            };
            let mut kept = this.take(file).map_err(failed)?;
            let asked = kept
                .current()
                .and_then(|v1| ask(&kept.conn, &this.name, v1));
            // A connection whose question failed is closed: the failure may be the file's.
            if asked.is_ok() {
                this.keep(kept);
            }
            asked.map_err(failed)
        })
        .await?
    }

    /// An idle connection to `file` (device, inode), or a new one; idle connections to a file
    /// since replaced are closed.
    fn take(&self, file: (u64, u64)) -> rusqlite::Result<Kept> {
        let idle = {
            let mut idle = self
                .connections
                .idle
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            idle.retain(|kept| kept.file == file);
            idle.pop()
        };
        if let Some(kept) = idle {
            return Ok(kept);
        }
        let conn = Connection::open_with_flags(
            &self.file,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(Duration::from_secs(5))?;
        Ok(Kept {
            conn,
            file,
            schema_version: -1,
            v1: false,
        })
    }

    fn keep(&self, kept: Kept) {
        let mut idle = self
            .connections
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if idle.len() < IDLE_CONNECTIONS {
            idle.push(kept);
        }
    }
}

impl Kept {
    /// Whether the catalog's schema is V1 now: read again only when the schema changed.
    fn current(&mut self) -> rusqlite::Result<bool> {
        let version = (self.conn.prepare_cached("PRAGMA schema_version")?)
            .query_row([], |row| row.get::<_, i64>(0))?;
        if version != self.schema_version {
            self.v1 = (self.conn)
                .prepare("SELECT iceberg_type FROM iceberg_tables LIMIT 0")
                .is_ok();
            self.schema_version = version;
        }
        Ok(self.v1)
    }
}

/// V1 catalogs keep views in the same table; a NULL type is a table an older writer added.
fn tables_only(v1: bool) -> &'static str {
    match v1 {
        true => " AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)",
        false => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A V0 catalog file at `path` naming `ns.t`'s metadata `location`.
    fn write_catalog(path: &std::path::Path, location: &str) {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(
            "CREATE TABLE iceberg_tables (catalog_name TEXT, table_namespace TEXT, \
             table_name TEXT, metadata_location TEXT, previous_metadata_location TEXT)",
        )
        .unwrap();
        conn.execute(
            "INSERT INTO iceberg_tables VALUES ('lake', 'ns', 't', ?1, NULL)",
            [location],
        )
        .unwrap();
    }

    /// Kept connections see every commit, a file replaced and a schema upgraded by the next
    /// question, as a connection opened per question did.
    #[tokio::test]
    async fn kept_connections_see_what_writers_did_since() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("catalog.db");
        write_catalog(&file, "s3://b/m1.json");
        let catalog = SqlCatalog::new("lake", &format!("sqlite://{}", file.display())).unwrap();
        let at = || catalog.metadata_location("ns", "t");
        assert_eq!(at().await.unwrap().as_deref(), Some("s3://b/m1.json"));
        assert_eq!(catalog.connections.idle.lock().unwrap().len(), 1);
        // A commit by a writer.
        let writer = Connection::open(&file).unwrap();
        writer
            .execute(
                "UPDATE iceberg_tables SET metadata_location = 's3://b/m2.json'",
                [],
            )
            .unwrap();
        assert_eq!(at().await.unwrap().as_deref(), Some("s3://b/m2.json"));
        // V1: views in the same table, told apart by a column added since.
        writer
            .execute_batch(
                "ALTER TABLE iceberg_tables ADD COLUMN iceberg_type TEXT; \
                 INSERT INTO iceberg_tables VALUES ('lake', 'ns', 'v', 's3://b/v.json', NULL, 'VIEW')",
            )
            .unwrap();
        assert_eq!(catalog.tables("ns").await.unwrap(), ["t"]);
        assert_eq!(catalog.metadata_location("ns", "v").await.unwrap(), None);
        // The file replaced by another (a restore from a copy): its rows, not the old file's.
        let copy = dir.path().join("copy.db");
        write_catalog(&copy, "s3://b/restored.json");
        std::fs::rename(&copy, &file).unwrap();
        assert_eq!(at().await.unwrap().as_deref(), Some("s3://b/restored.json"));
        assert_eq!(catalog.connections.idle.lock().unwrap().len(), 1);
        // Gone: a clear error, as before.
        std::fs::remove_file(&file).unwrap();
        let gone = at().await.unwrap_err().to_string();
        assert!(gone.contains("no SQLite file"), "{gone}");
    }
}
