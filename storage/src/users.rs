//! The server's users and what they were granted, kept in the object store beside the tables,
//! so every process serving the storage knows the same accounts and a restart keeps them.
//!
//! Each change writes a whole new list as `catalog/users/<n>.json` (n counts changes, 20 digits)
//! with a conditional put: two processes that change users at once cannot both write `n + 1`,
//! so the loser reads the winner's list and applies its change again. The newest list is the
//! highest `n`. Older lists stay: a number once written is never free again, which is what
//! makes the create-if-absent put a compare-and-swap (a list is a few hundred bytes per user,
//! and accounts change rarely). Lists are checksummed JSON ([`crate::meta::checked_json`]) and
//! hold passwords only as MySQL's hashes (`docs/format.md`).

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use crate::catalog::Catalog;
use crate::error::{Result, StorageError};
use crate::meta::checked_json;
use crate::meta::versions::USERS_FORMAT;

/// An account as stored: MySQL's `mysql.user` row, reduced to what Sieve uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredUser {
    pub user: String,
    /// Where it may log in from: a host name, an address, or a pattern with `%` and `_`.
    pub host: String,
    /// `caching_sha2_password` or `mysql_native_password`.
    pub plugin: String,
    /// The plugin's hash of the password, in MySQL's layout; empty for no password.
    pub authentication_string: String,
    pub grants: Vec<StoredGrant>,
}

/// Privileges on `db.table`, where `*` stands for every database or table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredGrant {
    /// MySQL's names: `SELECT`, `INSERT`, `DELETE`, `ALL PRIVILEGES`.
    pub privileges: Vec<String>,
    pub db: String,
    pub table: String,
}

/// One version of the list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserList {
    pub format: u32,
    pub users: Vec<StoredUser>,
}

/// The list and the change number it was read at (0: none written yet).
#[derive(Debug, Clone, Default)]
pub struct Users {
    pub list: UserList,
    pub version: u64,
}

fn users_dir() -> Path {
    Path::from("catalog").join("users")
}

fn users_path(version: u64) -> Path {
    users_dir().join(format!("{version:020}.json"))
}

/// How many times a change is applied again after losing a race with another writer.
const CHANGE_ATTEMPTS: usize = 16;

impl Catalog {
    /// The newest list of users (empty before the first CREATE USER).
    pub async fn users(&self) -> Result<Users> {
        let store = self.storage().store();
        let versions: Vec<u64> = store
            .list(Some(&users_dir()))
            .map_ok(|meta| {
                let name = meta.location.filename().unwrap_or_default().to_string();
                name.strip_suffix(".json")
                    .and_then(|n| n.parse::<u64>().ok())
            })
            .try_filter_map(|v| async move { Ok(v) })
            .try_collect()
            .await?;
        let Some(version) = versions.into_iter().max() else {
            return Ok(Users::default());
        };
        let path = users_path(version);
        let bytes = store.get(&path).await?.bytes().await?;
        let list: UserList = checked_json::decode(path.as_ref(), &bytes)?;
        if list.format > USERS_FORMAT {
            return Err(StorageError::Damaged(
                path.to_string(),
                format!(
                    "users format {} is newer than this build reads ({USERS_FORMAT})",
                    list.format
                ),
            ));
        }
        Ok(Users { list, version })
    }

    /// Applies `change` to the newest list and writes the result as the next one; `change`
    /// runs again on a newer list if another process wrote one first. Nothing is written when
    /// `change` fails.
    pub async fn change_users<E: From<StorageError>>(
        &self,
        mut change: impl FnMut(&mut UserList) -> Result<(), E>,
    ) -> Result<Users, E> {
        let store = self.storage().store();
        for _ in 0..CHANGE_ATTEMPTS {
            let Users { mut list, version } = self.users().await?;
            change(&mut list)?;
            list.format = USERS_FORMAT;
            let next = version + 1;
            let opts = PutOptions {
                mode: PutMode::Create,
                ..Default::default()
            };
            let body = PutPayload::from(checked_json::encode(&list)?);
            let put = store.put_opts(&users_path(next), body, opts).await;
            match put {
                Ok(_) => {
                    return Ok(Users {
                        list,
                        version: next,
                    });
                }
                Err(object_store::Error::AlreadyExists { .. }) => continue,
                Err(e) => return Err(StorageError::from(e).into()),
            }
        }
        Err(StorageError::Invalid(format!(
            "users changed by others {CHANGE_ATTEMPTS} times while this change was made; run it again"
        ))
        .into())
    }
}
