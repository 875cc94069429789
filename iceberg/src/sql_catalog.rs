//! Iceberg's SQL catalog: the SQLite file PyIceberg's `SqlCatalog` and Java's `JdbcCatalog`
//! keep, one row per table in `iceberg_tables` naming its current metadata file. Sieve only
//! reads it, read-only; each question is its own read transaction, so a writer's commit is seen
//! by the next statement; a writer holding the file locked is waited for up to five seconds.
//!
//! Every point lookup on an attached table asks the catalog for the table's metadata file, so
//! connections are kept open between questions ([`Connections`]) and their statements prepared
//! once: opening the file per question (reading its schema, preparing each statement) was a
//! tenth of an attached lookup's CPU. A question is asked first on the asking task, without
//! waiting for a lock: a local SQLite file answers from the OS's page cache in microseconds,
//! less than handing it to Tokio's blocking pool costs (4% of a lookup's CPU). Only when a
//! writer holds the file locked (`SQLITE_BUSY`), or no connection is idle (opening one reads
//! the file's schema), is it asked on the blocking pool, where the lock is waited for.
//!
//! Two schema versions exist: V1 (PyIceberg ≥ 0.12, Java with `jdbc.schema-version=V1`) adds
//! an `iceberg_type` column telling tables from views; V0 has no such column and only tables.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::{IcebergError, Result};

#[derive(Debug, Clone)]
pub struct SqlCatalog {
    /// Sieve's name for the catalog, which its errors give.
    name: String,
    /// The name writers gave the catalog: rows of other catalogs in the same file are not its.
    writers_name: String,
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

/// How long a question on the blocking pool waits for a writer's lock on the file.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// Whether `e` is SQLite's answer that the file is locked.
fn busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
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
    /// `uri` as PyIceberg takes it, `sqlite:///abs/path.db` (or `sqlite:////abs/path.db`); the
    /// rows of the catalog its writers named `writers_name`, which Sieve names `name`.
    pub fn new(name: &str, writers_name: &str, uri: &str) -> Result<Self> {
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
            writers_name: writers_name.to_string(),
            file: PathBuf::from(file),
            connections: Arc::default(),
        })
    }

    /// The metadata file `namespace.table` is at now; None if the catalog has no such table.
    pub async fn metadata_location(&self, namespace: &str, table: &str) -> Result<Option<String>> {
        let (namespace, table) = (namespace.to_string(), table.to_string());
        self.query(move |kept, name| {
            let ask = |kept: &Kept, v1| {
                let sql = format!(
                    "SELECT (SELECT schema_version FROM pragma_schema_version), \
                     (SELECT metadata_location FROM iceberg_tables \
                     WHERE catalog_name = ?1 AND table_namespace = ?2 AND table_name = ?3{})",
                    tables_only(v1)
                );
                let mut statement = kept.conn.prepare_cached(&sql)?;
                statement.query_row([name, &namespace, &table], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, Option<String>>(1)?))
                })
            };
            // Asked first under the schema the connection last saw, reading the schema's
            // version in the same statement (one read transaction, not two: the PRAGMA of
            // its own was half of a question's cost); again if the schema changed (where the
            // statement may even fail: a column it names gone).
            if let Some(v1) = kept.seen() {
                match ask(kept, v1) {
                    Ok((version, location)) if version == kept.schema_version => {
                        return Ok(location);
                    }
                    Err(e) if busy(&e) => return Err(e),
                    _ => {}
                }
            }
            let v1 = kept.current()?;
            Ok(ask(kept, v1)?.1)
        })
        .await
    }

    /// Every namespace: those with properties and those holding tables.
    pub async fn namespaces(&self) -> Result<Vec<String>> {
        self.query(|kept, name| {
            let mut statement = kept.conn.prepare_cached(
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
        self.query(move |kept, name| {
            let sql = format!(
                "SELECT table_name FROM iceberg_tables \
                 WHERE catalog_name = ?1 AND table_namespace = ?2{} ORDER BY 1",
                tables_only(kept.current()?)
            );
            let mut statement = kept.conn.prepare_cached(&sql)?;
            statement
                .query_map([name, &namespace], |row| row.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .await
    }

    /// Runs `ask` over a connection to the file: on this task if an idle connection answers
    /// without waiting for a lock, else on the blocking pool (SQLite blocks).
    async fn query<T: Send + 'static>(
        &self,
        ask: impl Fn(&mut Kept, &str) -> rusqlite::Result<T> + Send + Sync + 'static,
    ) -> Result<T> {
        if let Some(answered) = self.ask(&ask, false) {
            return answered;
        }
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            this.ask(&ask, true)
                .expect("a question that may wait is answered")
        })
        .await?
    }

    /// `ask` answered over a connection to the file; None, without `wait`, where it would
    /// have waited: no connection was idle, or a writer holds the file locked.
    fn ask<T>(
        &self,
        ask: &impl Fn(&mut Kept, &str) -> rusqlite::Result<T>,
        wait: bool,
    ) -> Option<Result<T>> {
        let failed =
            |e| IcebergError::Sqlite(format!("{} ({})", self.name, self.file.display()), e);
        let file = match std::fs::metadata(&self.file) {
            Ok(meta) if meta.is_file() => (meta.dev(), meta.ino()),
            _ => {
                return Some(Err(IcebergError::Catalog {
                    catalog: self.name.clone(),
                    why: format!("no SQLite file at {}", self.file.display()),
                }));
            }
        };
        let mut kept = match self.take(file, wait) {
            Ok(Some(kept)) => kept,
            Ok(None) => return None,
            Err(e) => return Some(Err(failed(e))),
        };
        let waited = if wait { LOCK_WAIT } else { Duration::ZERO };
        let asked =
            (kept.conn.busy_timeout(waited)).and_then(|()| ask(&mut kept, &self.writers_name));
        match asked {
            Err(e) if !wait && busy(&e) => {
                self.keep(kept);
                None
            }
            // A connection whose question failed is closed: the failure may be the file's.
            Err(e) => Some(Err(failed(e))),
            Ok(answer) => {
                self.keep(kept);
                Some(Ok(answer))
            }
        }
    }

    /// An idle connection to `file` (device, inode), or, if `open`, a new one; idle
    /// connections to a file since replaced are closed.
    fn take(&self, file: (u64, u64), open: bool) -> rusqlite::Result<Option<Kept>> {
        let idle = {
            let mut idle = self
                .connections
                .idle
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            idle.retain(|kept| kept.file == file);
            idle.pop()
        };
        if idle.is_some() || !open {
            return Ok(idle);
        }
        let conn = Connection::open_with_flags(
            &self.file,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        Ok(Some(Kept {
            conn,
            file,
            schema_version: -1,
            v1: false,
        }))
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
    /// Whether the catalog's schema was V1 when this connection last read its version; None
    /// before it did.
    fn seen(&self) -> Option<bool> {
        (self.schema_version >= 0).then_some(self.v1)
    }

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
        let catalog =
            SqlCatalog::new("lake", "lake", &format!("sqlite://{}", file.display())).unwrap();
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
        // Asked first under the schema before, which its answer says is gone.
        assert_eq!(catalog.metadata_location("ns", "v").await.unwrap(), None);
        assert_eq!(catalog.tables("ns").await.unwrap(), ["t"]);
        // Back to V0, the column gone: the statement naming it fails, and is asked again under
        // the schema now.
        writer
            .execute_batch(
                "DELETE FROM iceberg_tables WHERE table_name = 'v'; \
                 ALTER TABLE iceberg_tables DROP COLUMN iceberg_type",
            )
            .unwrap();
        assert_eq!(at().await.unwrap().as_deref(), Some("s3://b/m2.json"));
        assert_eq!(catalog.tables("ns").await.unwrap(), ["t"]);
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

    /// A question asked while a writer holds the file locked waits for the writer's commit
    /// (on the blocking pool) and sees it, instead of failing at once as a question asked on
    /// the task without waiting would.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_question_waits_for_a_writers_lock() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("catalog.db");
        write_catalog(&file, "s3://b/m1.json");
        let catalog =
            SqlCatalog::new("lake", "lake", &format!("sqlite://{}", file.display())).unwrap();
        // An idle connection, so the question is first asked on the task.
        assert!(
            catalog
                .metadata_location("ns", "t")
                .await
                .unwrap()
                .is_some()
        );
        let writer = Connection::open(&file).unwrap();
        writer
            .execute_batch(
                "BEGIN EXCLUSIVE;                  UPDATE iceberg_tables SET metadata_location = 's3://b/m2.json'",
            )
            .unwrap();
        let asking = tokio::spawn({
            let catalog = catalog.clone();
            async move { catalog.metadata_location("ns", "t").await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !asking.is_finished(),
            "the question did not wait for the lock"
        );
        writer.execute_batch("COMMIT").unwrap();
        let asked = asking.await.unwrap().unwrap();
        assert_eq!(asked.as_deref(), Some("s3://b/m2.json"));
    }
}
