//! The accounts a server knows: the configured root (`--user`, `--password`: every privilege,
//! never stored) and the users made with CREATE USER, kept in the catalog
//! ([`sieve_storage::Users`]) so every process on the storage shares them.
//!
//! A process reads the stored users when a client logs in and when a user's statement checks a
//! privilege (at most once a second, the check not waiting for it; if the storage cannot be
//! read it keeps the list it has, and root logs in without it) and after its own changes. So a
//! GRANT or REVOKE made here applies to this process's next statement; one made by another
//! process, here within about a second.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use datafusion::common::DataFusionError;
use sieve_storage::{Catalog, StorageError, StoredGrant, StoredUser, UserList, Users};

use super::password::{AuthPlugin, Credential};
use super::privileges::{Object, Privilege, allows, reaches_any};
use crate::access::login_throttle::LoginThrottle;
use crate::error::to_df;

/// How long a process trusts the users it read before a login reads them again.
const REFRESH_AFTER: Duration = Duration::from_secs(1);

/// An account a client can log in as.
#[derive(Debug)]
pub struct Account {
    pub user: String,
    /// The host pattern it was created with (`%` for root).
    pub host: String,
    pub plugin: AuthPlugin,
    pub credential: Credential,
    pub root: bool,
    /// SHA256(SHA256(password)) once a full `caching_sha2_password` login has succeeded: what
    /// lets the next logins take the fast path. MySQL keeps it in memory only, as here, so the
    /// first login after a start (or a password change) proves the password itself.
    sha2_digest: Mutex<Option<[u8; 32]>>,
}

impl Account {
    pub fn new(user: String, host: String, plugin: AuthPlugin, credential: Credential) -> Self {
        Self {
            user,
            host,
            plugin,
            credential,
            root: false,
            sha2_digest: Mutex::new(None),
        }
    }

    fn stored(user: &StoredUser) -> Option<Self> {
        let plugin = AuthPlugin::named(&user.plugin)?;
        let credential = Credential::stored(plugin, &user.authentication_string)?;
        Some(Self::new(
            user.user.clone(),
            user.host.clone(),
            plugin,
            credential,
        ))
    }

    pub fn sha2_digest(&self) -> Option<[u8; 32]> {
        *self.sha2_digest.lock().expect("digest lock")
    }

    pub fn remember_sha2_digest(&self, digest: [u8; 32]) {
        *self.sha2_digest.lock().expect("digest lock") = Some(digest);
    }
}

/// `'user'@'host'` as MySQL's messages print an account.
pub fn account_name(user: &str, host: &str) -> String {
    format!("'{user}'@'{host}'")
}

/// Whether a client at `peer` may use an account created for `pattern`: `%` and `_` are
/// wildcards, `localhost` is any loopback address.
pub fn host_matches(pattern: &str, peer: IpAddr) -> bool {
    // A dual-stack listener sees IPv4 clients as `::ffff:a.b.c.d`.
    let peer = peer.to_canonical();
    if pattern.eq_ignore_ascii_case("localhost") {
        return peer.is_loopback();
    }
    let peer = peer.to_string();
    like(pattern.as_bytes(), peer.as_bytes())
}

fn like(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'%', rest)) => (0..=text.len()).any(|i| like(rest, &text[i..])),
        Some((b'_', rest)) => !text.is_empty() && like(rest, &text[1..]),
        Some((c, rest)) => {
            text.first().is_some_and(|t| t.eq_ignore_ascii_case(c)) && like(rest, &text[1..])
        }
    }
}

/// How specific a host pattern is, for choosing among the accounts a login matches as MySQL
/// does: exact hosts first, then patterns by the length of their fixed start, `%` last.
fn specificity(pattern: &str) -> (bool, usize) {
    let fixed = pattern.find(['%', '_']).unwrap_or(pattern.len());
    (fixed == pattern.len(), fixed)
}

/// The stored users as this process last read them, with their accounts.
#[derive(Debug, Default)]
struct Known {
    users: Users,
    accounts: Vec<Arc<Account>>,
}

#[derive(Debug)]
pub struct Access {
    catalog: Catalog,
    root: RwLock<Arc<Account>>,
    known: RwLock<Arc<Known>>,
    read_at: tokio::sync::Mutex<Option<Instant>>,
    throttle: LoginThrottle,
}

impl Access {
    /// Root without a password until [`Access::set_root`]; no stored users read yet.
    pub fn new(catalog: Catalog) -> Self {
        Self {
            catalog,
            root: RwLock::new(Arc::new(root_account(
                "root".into(),
                AuthPlugin::CachingSha2,
                "",
            ))),
            known: RwLock::default(),
            read_at: tokio::sync::Mutex::new(None),
            throttle: LoginThrottle::default(),
        }
    }

    /// What every login's password check goes through, whichever port it came in on.
    pub fn throttle(&self) -> &LoginThrottle {
        &self.throttle
    }

    /// The configured root account.
    pub fn set_root(&self, user: String, plugin: AuthPlugin, password: &str) {
        *self.root.write().expect("root lock") = Arc::new(root_account(user, plugin, password));
    }

    pub fn root(&self) -> Arc<Account> {
        self.root.read().expect("root lock").clone()
    }

    /// The account `user` logs in as from `peer`; None if there is none.
    pub async fn account(&self, user: &str, peer: IpAddr) -> Option<Arc<Account>> {
        let root = self.root();
        if user == root.user {
            return Some(root);
        }
        self.refresh().await;
        let known = self.known();
        known
            .accounts
            .iter()
            .filter(|a| a.user == user && host_matches(&a.host, peer))
            .max_by_key(|a| specificity(&a.host))
            .cloned()
    }

    /// Reads the stored users again in the background if they were read more than
    /// [`REFRESH_AFTER`] ago and no read is under way; a check never waits for it.
    pub fn refresh_soon(self: &Arc<Self>) {
        let stale = match self.read_at.try_lock() {
            Ok(read_at) => read_at.is_none_or(|at| at.elapsed() >= REFRESH_AFTER),
            Err(_) => false,
        };
        if stale && let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let access = self.clone();
            runtime.spawn(async move { access.refresh().await });
        }
    }

    /// Reads the stored users again unless they were read within [`REFRESH_AFTER`].
    async fn refresh(&self) {
        let mut read_at = self.read_at.lock().await;
        if read_at.is_some_and(|at| at.elapsed() < REFRESH_AFTER) {
            return;
        }
        match self.catalog.users().await {
            Ok(users) => {
                self.install(users);
                *read_at = Some(Instant::now());
            }
            Err(e) => log::warn!("cannot read the stored users, keeping those known: {e}"),
        }
    }

    fn known(&self) -> Arc<Known> {
        self.known.read().expect("users lock").clone()
    }

    /// Makes `users` the known ones, keeping the accounts (and their cached digests) of users
    /// whose password did not change.
    fn install(&self, users: Users) {
        let mut known = self.known.write().expect("users lock");
        if users.version < known.users.version {
            return;
        }
        let accounts = users
            .list
            .users
            .iter()
            .filter_map(|stored| {
                let kept = known.accounts.iter().find(|a| {
                    a.user == stored.user
                        && a.host == stored.host
                        && a.plugin.name() == stored.plugin
                        && a.credential.authentication_string() == stored.authentication_string
                });
                match kept {
                    Some(account) => Some(account.clone()),
                    None => Account::stored(stored).map(Arc::new).or_else(|| {
                        log::warn!(
                            "user {} has an unreadable password hash; it cannot log in",
                            account_name(&stored.user, &stored.host)
                        );
                        None
                    }),
                }
            })
            .collect();
        *known = Arc::new(Known { users, accounts });
    }

    /// Whether `account` holds `wanted` on `object` now.
    pub fn allows(&self, account: &Account, wanted: Privilege, object: &Object) -> bool {
        self.granted(account, |grants| allows(grants, wanted, object))
    }

    /// Whether `account` holds any privilege reaching `object` now: whether it may see it.
    pub fn reaches(&self, account: &Account, object: &Object) -> bool {
        self.granted(account, |grants| reaches_any(grants, object))
    }

    /// `test` of the account's grants; root passes every test.
    fn granted(&self, account: &Account, test: impl FnOnce(&[StoredGrant]) -> bool) -> bool {
        if account.root {
            return true;
        }
        let known = self.known();
        known
            .users
            .list
            .users
            .iter()
            .find(|u| u.user == account.user && u.host == account.host)
            .is_some_and(|u| test(&u.grants))
    }

    /// The stored users as this process knows them, read again first.
    pub async fn users(&self) -> Result<Vec<StoredUser>, StorageError> {
        let users = self.catalog.users().await?;
        self.install(users);
        Ok(self.known().users.list.users.clone())
    }

    /// Changes the stored users (see [`Catalog::change_users`]) and knows the result at once;
    /// nothing is stored when `change` refuses.
    pub async fn change(
        &self,
        mut change: impl FnMut(&mut UserList) -> datafusion::error::Result<()>,
    ) -> datafusion::error::Result<()> {
        enum Failed {
            Storage(StorageError),
            Refused(DataFusionError),
        }
        impl From<StorageError> for Failed {
            fn from(e: StorageError) -> Self {
                Self::Storage(e)
            }
        }
        let users = self
            .catalog
            .change_users(|list| change(list).map_err(Failed::Refused))
            .await
            .map_err(|e| match e {
                Failed::Storage(e) => to_df(e),
                Failed::Refused(e) => e,
            })?;
        self.install(users);
        Ok(())
    }
}

fn root_account(user: String, plugin: AuthPlugin, password: &str) -> Account {
    let mut account = Account::new(user, "%".into(), plugin, Credential::hash(plugin, password));
    account.root = true;
    account
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_patterns() {
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let lan: IpAddr = "10.1.2.3".parse().unwrap();
        assert!(host_matches("%", lan));
        assert!(host_matches("localhost", local));
        assert!(!host_matches("localhost", lan));
        assert!(host_matches("10.1.%", lan));
        assert!(host_matches("10.1.2._", lan));
        assert!(!host_matches("10.1.2._", "10.1.2.33".parse().unwrap()));
        assert!(!host_matches("10.2.%", lan));
        assert!(host_matches("10.1.2.3", lan));
        assert!(host_matches("10.1.%", "::ffff:10.1.2.3".parse().unwrap()));
        assert!(host_matches("localhost", "::1".parse().unwrap()));
        assert!(specificity("10.1.2.3") > specificity("10.1.%"));
        assert!(specificity("10.1.%") > specificity("%"));
    }
}
