//! The account statements run: CREATE/DROP/ALTER USER, GRANT and REVOKE change the stored
//! users (root's ALL on every database needed), SHOW GRANTS lists an account's privileges.

use datafusion::common::DataFusionError;
use datafusion::error::Result;
use sieve_storage::{StoredUser, UserList};

use super::Session;
use super::query_stream::QueryStream;
use crate::access::accounts::account_name;
use crate::access::password::{AuthPlugin, Credential};
use crate::access::principal::Principal;
use crate::access::privileges::{self, Object, Privilege};
use crate::access::user_statements::{UserName, UserStatement};
use crate::dialect::show_create::quoted;
use crate::error::{Classified, ErrorClass, external, to_df};

/// MySQL's errors for account statements.
#[derive(Debug)]
pub struct AccountError {
    kind: AccountErrorKind,
    message: String,
}

impl Classified for AccountError {
    fn class(&self) -> ErrorClass {
        match self.kind {
            AccountErrorKind::CannotUser => ErrorClass::CannotUser,
            AccountErrorKind::NoSuchGrant => ErrorClass::NoSuchGrant,
            AccountErrorKind::GrantCreates => ErrorClass::GrantCreates,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountErrorKind {
    /// 1396: CREATE USER of an account that exists; DROP or ALTER of one that does not.
    CannotUser,
    /// 1141: SHOW GRANTS for, or REVOKE from, an account that does not exist.
    NoSuchGrant,
    /// 1410: GRANT to an account that does not exist (MySQL 8 makes none with GRANT).
    GrantCreates,
}

impl std::fmt::Display for AccountError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AccountError {}

fn account_error(kind: AccountErrorKind, message: String) -> DataFusionError {
    external(AccountError { kind, message })
}

fn failed(operation: &str, users: &[&UserName]) -> DataFusionError {
    let names: Vec<String> = users
        .iter()
        .map(|u| account_name(&u.user, &u.host))
        .collect();
    let message = format!("Operation {operation} failed for {}", names.join(","));
    account_error(AccountErrorKind::CannotUser, message)
}

fn no_such_grant(name: &UserName) -> DataFusionError {
    let message = format!(
        "There is no such grant defined for user '{}' on host '{}'",
        name.user, name.host
    );
    account_error(AccountErrorKind::NoSuchGrant, message)
}

/// Whether `stored` is the account `name`.
fn is(stored: &StoredUser, name: &UserName) -> bool {
    stored.user == name.user && stored.host == name.host
}

fn find<'a>(list: &'a mut UserList, name: &UserName) -> Option<&'a mut StoredUser> {
    list.users.iter_mut().find(|u| is(u, name))
}

pub(super) async fn run_user_statement(
    session: &Session,
    statement: UserStatement,
) -> Result<QueryStream> {
    let principal = session.principal();
    let access = principal.access.clone();
    let root = access.root();
    if let UserStatement::ShowGrants { user } = statement {
        return show_grants(session, &principal, user).await;
    }
    principal.require(Privilege::All, &Object::global())?;
    let is_root = |name: &UserName| name.user == root.user;
    let default_plugin = root.plugin;
    let database = session.database();
    match statement {
        UserStatement::Create {
            if_not_exists,
            users,
        } => {
            if let Some((name, _)) = users.iter().find(|(name, _)| is_root(name)) {
                return Err(failed("CREATE USER", &[name]));
            }
            access
                .change(|list| {
                    let existing: Vec<&UserName> = users
                        .iter()
                        .map(|(name, _)| name)
                        .filter(|name| list.users.iter().any(|u| is(u, name)))
                        .collect();
                    if !existing.is_empty() && !if_not_exists {
                        return Err(failed("CREATE USER", &existing));
                    }
                    for (name, identified) in &users {
                        if find(list, name).is_some() {
                            continue;
                        }
                        let identified = identified.clone().unwrap_or_default();
                        let plugin = identified.plugin.unwrap_or(default_plugin);
                        let credential = Credential::hash(plugin, &identified.password);
                        list.users.push(StoredUser {
                            user: name.user.clone(),
                            host: name.host.clone(),
                            plugin: plugin.name().to_string(),
                            authentication_string: credential.authentication_string(),
                            grants: Vec::new(),
                        });
                    }
                    Ok(())
                })
                .await?;
        }
        UserStatement::Drop { if_exists, users } => {
            access
                .change(|list| {
                    let missing: Vec<&UserName> = users
                        .iter()
                        .filter(|name| find(list, name).is_none())
                        .collect();
                    if !missing.is_empty() && !if_exists {
                        return Err(failed("DROP USER", &missing));
                    }
                    list.users.retain(|u| !users.iter().any(|name| is(u, name)));
                    Ok(())
                })
                .await?;
        }
        UserStatement::Alter {
            if_exists,
            user,
            identified,
        } => {
            if is_root(&user) {
                return Err(DataFusionError::Plan(format!(
                    "{} is configured, not stored: change its password in the server's configuration",
                    account_name(&user.user, &user.host)
                )));
            }
            access
                .change(|list| {
                    let Some(stored) = find(list, &user) else {
                        return if if_exists {
                            Ok(())
                        } else {
                            Err(failed("ALTER USER", &[&user]))
                        };
                    };
                    let plugin = identified
                        .plugin
                        .or_else(|| AuthPlugin::named(&stored.plugin))
                        .unwrap_or(default_plugin);
                    stored.plugin = plugin.name().to_string();
                    stored.authentication_string =
                        Credential::hash(plugin, &identified.password).authentication_string();
                    Ok(())
                })
                .await?;
        }
        UserStatement::Privileges { users, .. } if users.iter().any(is_root) => {
            return Err(DataFusionError::Plan(format!(
                "{} holds every privilege, from the server's configuration",
                account_name(&root.user, &root.host)
            )));
        }
        UserStatement::Privileges {
            grant,
            privileges,
            on,
            users,
        } => {
            let object = on.object(&database);
            access
                .change(|list| {
                    let missing = users.iter().find(|name| find(list, name).is_none());
                    match missing {
                        Some(_) if grant => {
                            return Err(account_error(
                                AccountErrorKind::GrantCreates,
                                "You are not allowed to create a user with GRANT".into(),
                            ));
                        }
                        Some(name) => return Err(no_such_grant(name)),
                        None => {}
                    }
                    for name in &users {
                        let stored = find(list, name).expect("checked above");
                        if grant {
                            privileges::grant(&mut stored.grants, &privileges, &object);
                        } else {
                            privileges::revoke(&mut stored.grants, &privileges, &object);
                        }
                    }
                    Ok(())
                })
                .await?;
        }
        UserStatement::ShowGrants { .. } => unreachable!("answered above"),
    }
    Ok(session.affected(0))
}

/// MySQL's `SHOW GRANTS`: `GRANT USAGE ON *.*` and a line per object granted on. Another
/// account's grants need ALL on every database.
async fn show_grants(
    session: &Session,
    principal: &Principal,
    user: Option<UserName>,
) -> Result<QueryStream> {
    let own = UserName {
        user: principal.account.user.clone(),
        host: principal.account.host.clone(),
    };
    let name = user.unwrap_or_else(|| own.clone());
    if name != own {
        principal.require(Privilege::All, &Object::global())?;
    }
    let who = format!("{}@{}", quoted(&name.user), quoted(&name.host));
    let root = principal.access.root();
    let lines = if name.user == root.user {
        vec![format!("GRANT ALL PRIVILEGES ON *.* TO {who}")]
    } else {
        let users = principal.access.users().await.map_err(to_df)?;
        let Some(stored) = users
            .iter()
            .find(|u| u.user == name.user && u.host == name.host)
        else {
            return Err(no_such_grant(&name));
        };
        let mut lines = vec![format!("GRANT USAGE ON *.* TO {who}")];
        for grant in &stored.grants {
            let on = Object::granted(grant);
            lines.push(format!(
                "GRANT {} ON {on} TO {who}",
                grant.privileges.join(", ")
            ));
        }
        lines
    };
    let column = format!("Grants for {}@{}", name.user, name.host);
    QueryStream::table(
        &[column.as_str()],
        lines.into_iter().map(|l| vec![l]).collect(),
        session.pool(),
    )
}
