//! Who a session acts for, kept in its config's extensions so the places that touch a table
//! (the table provider's scan, insert and delete, the short path, DDL and maintenance) check
//! the privilege they need where they act, whatever shape the statement had.

use std::net::IpAddr;
use std::sync::{Arc, RwLock};

use datafusion::common::DataFusionError;
use datafusion::error::Result;

use super::accounts::{Access, Account, account_name};
use super::privileges::{Object, Privilege};
use crate::error::{Classified, ErrorClass};

#[derive(Debug, Clone)]
pub struct Principal {
    pub access: Arc<Access>,
    pub account: Arc<Account>,
    /// Where the client is, for messages (MySQL names the client's host in them).
    pub host: String,
}

impl Principal {
    /// The configured root, for sessions no client logged into (`sieve sql`, loads, merges).
    pub fn root(access: Arc<Access>) -> Self {
        let account = access.root();
        Self {
            access,
            account,
            host: "localhost".into(),
        }
    }

    pub fn logged_in(access: Arc<Access>, account: Arc<Account>, peer: IpAddr) -> Self {
        let peer = peer.to_canonical();
        let host = if peer.is_loopback() {
            "localhost".to_string()
        } else {
            peer.to_string()
        };
        Self {
            access,
            account,
            host,
        }
    }

    pub fn user(&self) -> &str {
        &self.account.user
    }

    pub fn holds(&self, wanted: Privilege, object: &Object) -> bool {
        if !self.account.root {
            // Another process's GRANT, REVOKE or DROP USER applies here within about a second.
            self.access.refresh_soon();
        }
        self.access.allows(&self.account, wanted, object)
    }

    /// Whether the account may see `object` (a table, a database) in listings, DESCRIBE and
    /// SHOW CREATE: whether it holds any privilege reaching it, as in MySQL.
    pub fn sees(&self, object: &Object) -> bool {
        if !self.account.root {
            self.access.refresh_soon();
        }
        self.access.reaches(&self.account, object)
    }

    /// Ok if the account may see `table` ([`Principal::sees`]); else MySQL's 1142 for SELECT,
    /// which is what MySQL answers a DESCRIBE of a table the user holds nothing on.
    pub fn require_visible(&self, table: &Object) -> Result<()> {
        match self.sees(table) {
            true => Ok(()),
            false => self.require(Privilege::Select, table),
        }
    }

    /// Ok if the account holds `wanted` on `object`; else MySQL's error for it.
    pub fn require(&self, wanted: Privilege, object: &Object) -> Result<()> {
        self.require_for(command(wanted), wanted, object)
    }

    /// [`Principal::require`] for a statement MySQL's 1142 names as `command` (CREATE, DROP).
    pub fn require_for(&self, command: &str, wanted: Privilege, object: &Object) -> Result<()> {
        if self.holds(wanted, object) {
            return Ok(());
        }
        let who = account_name(&self.account.user, &self.host);
        let denied = match (&object.db, &object.table) {
            (Some(_), Some(table)) => AccessDenied {
                kind: Denied::Table,
                message: format!("{command} command denied to user {who} for table '{table}'"),
            },
            (Some(db), None) => AccessDenied {
                kind: Denied::Database,
                message: format!("Access denied for user {who} to database '{db}'"),
            },
            (None, _) => AccessDenied {
                kind: Denied::Global,
                message: "Access denied; you need (at least one of) the ALL PRIVILEGES \
                          privilege(s) for this operation"
                    .into(),
            },
        };
        Err(crate::error::external(denied))
    }
}

/// The command word MySQL's 1142 names: the privilege, or for ALL the work it guards.
fn command(wanted: Privilege) -> &'static str {
    match wanted {
        Privilege::All => "ALL PRIVILEGES",
        other => other.name(),
    }
}

/// Which of MySQL's access errors a refusal is: 1142 (a table), 1044 (a database), 1227 (the
/// server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    Table,
    Database,
    Global,
}

#[derive(Debug)]
pub struct AccessDenied {
    kind: Denied,
    message: String,
}

impl Classified for AccessDenied {
    fn class(&self) -> ErrorClass {
        match self.kind {
            Denied::Table => ErrorClass::TableAccessDenied,
            Denied::Database => ErrorClass::DatabaseAccessDenied,
            Denied::Global => ErrorClass::GlobalAccessDenied,
        }
    }
}

impl std::fmt::Display for AccessDenied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AccessDenied {}

/// A session's principal, replaced when a client logs in; in the session's config (where the
/// table provider finds it) and with the views that show other sessions' statements.
#[derive(Debug, Clone)]
pub struct CurrentPrincipal(Arc<RwLock<Arc<Principal>>>);

impl CurrentPrincipal {
    pub fn new(principal: Principal) -> Self {
        Self(Arc::new(RwLock::new(Arc::new(principal))))
    }

    pub fn get(&self) -> Arc<Principal> {
        self.0.read().expect("principal lock").clone()
    }

    pub fn set(&self, principal: Principal) {
        *self.0.write().expect("principal lock") = Arc::new(principal);
    }

    /// Whether statements of `user` are shown to this session: its own, or every user's with
    /// ALL on every database (MySQL's PROCESS privilege).
    pub fn sees_statements_of(&self, user: &str) -> bool {
        let principal = self.get();
        principal.user() == user || principal.holds(Privilege::All, &Object::global())
    }
}

/// The principal of the session whose config is `config` (a session without one is refused:
/// every session is given one when it is made).
fn principal_of(config: &datafusion::prelude::SessionConfig) -> Result<Arc<Principal>> {
    match config.get_extension::<CurrentPrincipal>() {
        Some(current) => Ok(current.get()),
        None => Err(DataFusionError::Internal(
            "a session without a principal".into(),
        )),
    }
}

/// Checks `wanted` on `object` for the session whose config is `config`.
pub fn require(
    config: &datafusion::prelude::SessionConfig,
    wanted: Privilege,
    object: &Object,
) -> Result<()> {
    principal_of(config)?.require(wanted, object)
}

/// Checks that the session whose config is `config` may see `table` ([`Principal::sees`]).
pub fn require_visible(config: &datafusion::prelude::SessionConfig, table: &Object) -> Result<()> {
    principal_of(config)?.require_visible(table)
}
