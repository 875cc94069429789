//! Databases and table definitions, kept in the object store next to the data, so a restarted
//! process or a second process on the same storage sees the same tables.
//!
//! `catalog/<db>/database.json` marks a database; `catalog/<db>/tables/<name>.json` holds a
//! [`TableDef`]. Both are created with a conditional put, so two concurrent CREATEs of one name
//! cannot both succeed. Both are checksummed JSON ([`crate::meta::checked_json`]). Names may hold any
//! character: object_store percent-encodes what a path part cannot hold, and listings decode it.

use std::time::Duration;

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{GetOptions, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use crate::error::{Result, StorageError};
use crate::location::Storage;
use crate::meta::checked_json;
use crate::meta::snapshot::{Snapshot, named_pointer_snapshot};
use crate::meta::table_def::TableDef;
use crate::read::table::Table;

pub const DEFAULT_DATABASE: &str = "default";

#[derive(Debug, Clone)]
pub struct Catalog {
    storage: Storage,
}

#[derive(Serialize, Deserialize)]
struct DatabaseMarker {
    name: String,
}

fn database_dir(db: &str) -> Path {
    Path::from("catalog").join(db)
}

fn marker_path(db: &str) -> Path {
    database_dir(db).join("database.json")
}

fn tables_dir(db: &str) -> Path {
    database_dir(db).join("tables")
}

fn table_path(db: &str, name: &str) -> Path {
    tables_dir(db).join(format!("{name}.json"))
}

/// The table's named pointer ([`crate::meta::snapshot::named_pointer_snapshot`]).
pub(crate) fn pointer_path(db: &str, name: &str) -> Path {
    database_dir(db)
        .join("pointers")
        .join(format!("{name}.json"))
}

fn file_stem(path: &Path) -> Option<String> {
    decode_part(path.filename()?.strip_suffix(".json")?)
}

/// A name as it was before object_store percent-encoded it into a path part.
fn decode_part(part: &str) -> Option<String> {
    let decoded = percent_encoding::percent_decode_str(part)
        .decode_utf8()
        .ok()?;
    Some(decoded.into_owned())
}

impl Catalog {
    /// Opens the catalog, creating the `default` database on first use.
    pub async fn open(storage: Storage) -> Result<Self> {
        let catalog = Self { storage };
        match catalog.create_database(DEFAULT_DATABASE).await {
            Ok(()) | Err(StorageError::DatabaseExists(_)) => Ok(catalog),
            Err(e) => Err(e),
        }
    }

    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    async fn create_once(&self, path: &Path, body: Vec<u8>) -> Result<bool> {
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match self
            .storage
            .store()
            .put_opts(path, PutPayload::from(body), opts)
            .await
        {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn create_database(&self, name: &str) -> Result<()> {
        let body = checked_json::encode(&DatabaseMarker {
            name: name.to_string(),
        })?;
        if self.create_once(&marker_path(name), body).await? {
            Ok(())
        } else {
            Err(StorageError::DatabaseExists(name.to_string()))
        }
    }

    pub async fn database_exists(&self, name: &str) -> Result<bool> {
        match self.storage.store().head(&marker_path(name)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    async fn require_database(&self, name: &str) -> Result<()> {
        if self.database_exists(name).await? {
            Ok(())
        } else {
            Err(StorageError::UnknownDatabase(name.to_string()))
        }
    }

    pub async fn list_databases(&self) -> Result<Vec<String>> {
        let listing = self
            .storage
            .store()
            .list_with_delimiter(Some(&Path::from("catalog")))
            .await?;
        let mut names = Vec::new();
        for dir in listing.common_prefixes {
            if let Some(name) = dir.filename().and_then(decode_part)
                && self.database_exists(&name).await?
            {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Drops a database that holds no tables.
    pub async fn drop_database(&self, name: &str) -> Result<()> {
        self.require_database(name).await?;
        if !self.list_tables(name).await?.is_empty() {
            return Err(StorageError::DatabaseNotEmpty(name.to_string()));
        }
        self.storage.store().delete(&marker_path(name)).await?;
        Ok(())
    }

    pub async fn create_table(&self, def: &TableDef) -> Result<()> {
        self.require_database(&def.database).await?;
        let body = checked_json::encode(def)?;
        if self
            .create_once(&table_path(&def.database, &def.name), body)
            .await?
        {
            Ok(())
        } else {
            Err(StorageError::TableExists(
                def.database.clone(),
                def.name.clone(),
            ))
        }
    }

    /// The table `db.name`, ready to read and write: the one way to open a table by name.
    pub async fn open_table(&self, db: &str, name: &str) -> Result<Table> {
        Ok(Table::new(
            self.storage.clone(),
            self.table(db, name).await?,
        ))
    }

    /// The table `db.name` and its newest snapshot, or one a check found at most
    /// `max_staleness` ago ([`Table::snapshot_within`]): what a read by name needs first.
    ///
    /// Each is a check sent after this call began, so a DROP, CREATE or commit made before is
    /// seen. When this process has fetched the name's definition before, only the snapshot of
    /// the table it knew is checked: a definition is written once, and a DROP commits a version
    /// of its own that the check finds ([`crate::meta::snapshot::commit_drop`]). That saves a
    /// third of a kept lookup's requests (docs/benchmarks.md, "A hot lookup at one
    /// connection"). When the known table was dropped, what the name is now is fetched after.
    pub async fn open_table_at_newest(
        &self,
        db: &str,
        name: &str,
        max_staleness: Duration,
    ) -> Result<(Table, Snapshot)> {
        let path = table_path(db, name);
        if let Some((known, _)) =
            (self.storage.caches().definitions_fetched.get(path.as_ref())).flatten()
        {
            let known = Table::new(self.storage.clone(), known);
            match known.snapshot_within(max_staleness).await {
                Err(StorageError::UnknownTable(..)) => {}
                checked => return Ok((known, checked?)),
            }
        }
        let table = self.open_table(db, name).await?;
        let snapshot = table.snapshot_within(max_staleness).await?;
        Ok((table, snapshot))
    }

    /// The definition of `db.name`, as a fetch sent after this call began finds it (so a CREATE
    /// or DROP made before is seen); concurrent callers share fetches ([`crate::read::freshness`]).
    /// A process's first fetch of it also fetches the table's named pointer, in the same round
    /// trip, and leaves the snapshot it carries to [`Table::snapshot`] as a hint.
    pub async fn table(&self, db: &str, name: &str) -> Result<TableDef> {
        let path = table_path(db, name);
        let pointer = pointer_path(db, name);
        let (key, storage) = (path.to_string(), self.storage.clone());
        let fetched = self
            .storage
            .definitions()
            .latest(&key, move || {
                let (storage, path, pointer) = (storage.clone(), path.clone(), pointer.clone());
                async move {
                    let fetched = &storage.caches().definitions_fetched;
                    let known = fetched.get(path.as_ref());
                    let first = known.is_none();
                    if first {
                        fetched.insert(path.to_string(), None);
                    }
                    let known = known.flatten();
                    // Unchanged since it was last fetched: "not modified", and no body.
                    let options = GetOptions {
                        if_none_match: known.as_ref().and_then(|(_, etag)| etag.clone()),
                        ..Default::default()
                    };
                    let store = storage.store();
                    let (def, hint) = futures::join!(store.get_opts(&path, options), async {
                        if first {
                            Some(store.get(&pointer).await)
                        } else {
                            None
                        }
                    });
                    let (def, etag): (TableDef, _) = match (def, known) {
                        (Ok(found), _) => {
                            let etag = found.meta.e_tag.clone();
                            let bytes = found.bytes().await?;
                            (checked_json::decode(path.as_ref(), &bytes)?, etag)
                        }
                        (Err(object_store::Error::NotModified { .. }), Some((def, _))) => {
                            return Ok(Some(def));
                        }
                        (Err(object_store::Error::NotFound { .. }), _) => {
                            fetched.insert(path.to_string(), None);
                            return Ok(None);
                        }
                        (Err(e), _) => return Err(e.into()),
                    };
                    fetched.insert(path.to_string(), Some((def.clone(), etag)));
                    if let Some(Ok(found)) = hint {
                        let hinted = async {
                            let bytes = found.bytes().await?;
                            named_pointer_snapshot(pointer.as_ref(), &bytes, &def.id)
                        };
                        match hinted.await {
                            Ok(Some(snapshot)) => Table::new(storage.clone(), def.clone())
                                .leave_pointer_hint(snapshot),
                            Ok(None) => {}
                            Err(e) => log::debug!("ignoring the pointer hint {pointer}: {e}"),
                        }
                    }
                    Ok(Some(def))
                }
            })
            .await?;
        match fetched {
            Some(def) => Ok(def),
            None => {
                self.require_database(db).await?;
                Err(StorageError::UnknownTable(db.to_string(), name.to_string()))
            }
        }
    }

    /// The definition of `db.name` whose id is `id`, as this process last fetched it, without a
    /// request: a definition is written once, when its table is made, so one fetched before is
    /// still that table's. Otherwise (never fetched, or another table of the name since) a
    /// fresh fetch, as [`Self::table`]; the caller compares the id it gets. For a worker asked
    /// about a table its coordinator has just resolved: the coordinator checked that the table
    /// exists; a check per call on the worker would only cost each lookup a request.
    pub async fn table_known(&self, db: &str, name: &str, id: &str) -> Result<TableDef> {
        let path = table_path(db, name);
        let known = self.storage.caches().definitions_fetched.get(path.as_ref());
        match known.flatten() {
            Some((def, _)) if def.id == id => Ok(def),
            _ => self.table(db, name).await,
        }
    }

    /// [`Self::table_known`] as a table.
    pub async fn open_table_known(&self, db: &str, name: &str, id: &str) -> Result<Table> {
        Ok(Table::new(
            self.storage.clone(),
            self.table_known(db, name, id).await?,
        ))
    }

    pub async fn list_tables(&self, db: &str) -> Result<Vec<String>> {
        self.require_database(db).await?;
        let mut names: Vec<String> = self
            .storage
            .store()
            .list(Some(&tables_dir(db)))
            .map_ok(|meta| file_stem(&meta.location))
            .try_filter_map(|name| async move { Ok(name) })
            .try_collect()
            .await?;
        names.sort();
        Ok(names)
    }

    /// Commits the table's last version, marked dropped, then removes the definition; the data
    /// under the table's id becomes unreachable (and is left for a later cleanup, like any
    /// orphaned file). A DROP that stops between the two has dropped the table for every reader
    /// already, and a DROP again removes the definition. A table whose history is damaged is
    /// dropped without its last version: the name is freed all the same.
    pub async fn drop_table(&self, db: &str, name: &str) -> Result<()> {
        let table = self.open_table(db, name).await?;
        match table.commit_drop().await {
            Ok(()) => {}
            Err(e @ StorageError::Damaged(..)) => {
                log::warn!(
                    "dropping {db}.{name} without marking its history, which is damaged: {e}"
                );
            }
            Err(e) => return Err(e),
        }
        self.storage.store().delete(&table_path(db, name)).await?;
        // Only a hint, which names the dropped table's id: one left behind is ignored.
        if let Err(e) = self.storage.store().delete(&pointer_path(db, name)).await {
            log::debug!("the named pointer of {db}.{name} stays: {e}");
        }
        Ok(())
    }
}
