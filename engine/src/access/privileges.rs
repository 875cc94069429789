//! What a user may do, MySQL's way: privileges granted on every database (`*.*`), on one
//! (`db.*`) or on one table (`db.t`), each adding to the others. Sieve knows SELECT, INSERT and
//! DELETE; everything else (CREATE, DROP, OPTIMIZE, VACUUM, managing users, killing another
//! user's statement) needs ALL on the object it changes.

use std::fmt;

use sieve_storage::StoredGrant;

use crate::dialect::show_create::quoted;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Privilege {
    Select,
    Insert,
    Delete,
    All,
}

impl Privilege {
    /// MySQL's name, as GRANT takes it and SHOW GRANTS prints it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Select => "SELECT",
            Self::Insert => "INSERT",
            Self::Delete => "DELETE",
            Self::All => "ALL PRIVILEGES",
        }
    }

    /// The privilege a GRANT names (`ALL` or `ALL PRIVILEGES` both give [`Self::All`]).
    pub fn named(name: &str) -> Option<Self> {
        match name.to_ascii_uppercase().as_str() {
            "SELECT" => Some(Self::Select),
            "INSERT" => Some(Self::Insert),
            "DELETE" => Some(Self::Delete),
            "ALL" | "ALL PRIVILEGES" => Some(Self::All),
            _ => None,
        }
    }

    /// Whether holding `self` gives `wanted`.
    fn covers(self, wanted: Privilege) -> bool {
        self == Self::All || self == wanted
    }
}

impl fmt::Display for Privilege {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a privilege is granted on; `None` stands for MySQL's `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub db: Option<String>,
    pub table: Option<String>,
}

impl Object {
    pub fn global() -> Self {
        Self {
            db: None,
            table: None,
        }
    }

    pub fn database(db: &str) -> Self {
        Self {
            db: Some(db.to_string()),
            table: None,
        }
    }

    pub fn table(db: &str, table: &str) -> Self {
        Self {
            db: Some(db.to_string()),
            table: Some(table.to_string()),
        }
    }

    /// What a stored grant is on.
    pub fn granted(grant: &StoredGrant) -> Self {
        Self {
            db: (grant.db != "*").then(|| grant.db.clone()),
            table: (grant.table != "*").then(|| grant.table.clone()),
        }
    }

    fn stored(&self) -> (String, String) {
        let star = |part: &Option<String>| part.clone().unwrap_or_else(|| "*".to_string());
        (star(&self.db), star(&self.table))
    }

    /// Whether a grant on `self` reaches `wanted` (a grant on `db.*` reaches `db.t`).
    /// Database and table names compare exactly, as MySQL's do on Linux.
    fn contains(&self, wanted: &Object) -> bool {
        let part = |mine: &Option<String>, theirs: &Option<String>| match (mine, theirs) {
            (None, _) => true,
            (Some(m), Some(t)) => m == t,
            (Some(_), None) => false,
        };
        part(&self.db, &wanted.db) && (self.db.is_none() || part(&self.table, &wanted.table))
    }
}

impl fmt::Display for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.db, &self.table) {
            (None, _) => f.write_str("*.*"),
            (Some(db), None) => write!(f, "{}.*", quoted(db)),
            (Some(db), Some(table)) => write!(f, "{}.{}", quoted(db), quoted(table)),
        }
    }
}

/// The privileges a stored grant names.
fn held(grant: &StoredGrant) -> impl Iterator<Item = Privilege> + '_ {
    grant.privileges.iter().filter_map(|p| Privilege::named(p))
}

/// Whether `grants` give `wanted` on `object`.
pub fn allows(grants: &[StoredGrant], wanted: Privilege, object: &Object) -> bool {
    grants.iter().any(|grant| {
        Object::granted(grant).contains(object) && held(grant).any(|p| p.covers(wanted))
    })
}

/// Whether `grants` give any privilege reaching `object`, MySQL's test for showing it: a table
/// is seen with a grant on it, its database or every database; a database also with a grant on
/// any table in it.
pub fn reaches_any(grants: &[StoredGrant], object: &Object) -> bool {
    grants.iter().any(|grant| {
        let on = Object::granted(grant);
        let within = object.table.is_none() && on.db.is_some() && on.db == object.db;
        held(grant).next().is_some() && (on.contains(object) || within)
    })
}

/// Adds `privileges` on `object` to `grants` (one entry per object, as MySQL keeps one row).
pub fn grant(grants: &mut Vec<StoredGrant>, privileges: &[Privilege], object: &Object) {
    let (db, table) = object.stored();
    let entry = match grants.iter_mut().find(|g| g.db == db && g.table == table) {
        Some(entry) => entry,
        None => {
            grants.push(StoredGrant {
                privileges: Vec::new(),
                db,
                table,
            });
            grants.last_mut().expect("just pushed")
        }
    };
    let mut held: Vec<Privilege> = held(entry).chain(privileges.iter().copied()).collect();
    held.sort();
    held.dedup();
    if held.contains(&Privilege::All) {
        held = vec![Privilege::All];
    }
    entry.privileges = held.iter().map(|p| p.name().to_string()).collect();
}

/// Takes `privileges` on `object` away (REVOKE ALL takes every one); other objects' grants
/// stay, as in MySQL, where revoking on `db.t` does not touch a grant on `db.*`.
pub fn revoke(grants: &mut Vec<StoredGrant>, privileges: &[Privilege], object: &Object) {
    let (db, table) = object.stored();
    for entry in grants.iter_mut().filter(|g| g.db == db && g.table == table) {
        let held: Vec<Privilege> = held(entry).collect();
        let kept: Vec<Privilege> = if privileges.contains(&Privilege::All) {
            Vec::new()
        } else if held.contains(&Privilege::All) {
            [Privilege::Select, Privilege::Insert, Privilege::Delete]
                .into_iter()
                .filter(|p| !privileges.contains(p))
                .collect()
        } else {
            held.into_iter()
                .filter(|p| !privileges.contains(p))
                .collect()
        };
        entry.privileges = kept.iter().map(|p| p.name().to_string()).collect();
    }
    grants.retain(|g| !g.privileges.is_empty());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_reach_what_they_name_and_nothing_else() {
        let mut grants = Vec::new();
        grant(&mut grants, &[Privilege::Select], &Object::database("app"));
        grant(
            &mut grants,
            &[Privilege::Insert],
            &Object::table("app", "t"),
        );
        let t = Object::table("app", "t");
        let u = Object::table("app", "u");
        assert!(allows(&grants, Privilege::Select, &t));
        assert!(allows(&grants, Privilege::Select, &u));
        assert!(allows(&grants, Privilege::Insert, &t));
        assert!(!allows(&grants, Privilege::Insert, &u));
        assert!(!allows(&grants, Privilege::Delete, &t));
        assert!(!allows(
            &grants,
            Privilege::Select,
            &Object::table("other", "t")
        ));
        assert!(!allows(&grants, Privilege::All, &Object::database("app")));
        assert!(!allows(&grants, Privilege::Select, &Object::global()));

        grant(&mut grants, &[Privilege::All], &Object::global());
        assert!(allows(
            &grants,
            Privilege::Delete,
            &Object::table("other", "x")
        ));
        assert!(allows(&grants, Privilege::All, &Object::global()));
        revoke(&mut grants, &[Privilege::All], &Object::global());
        revoke(&mut grants, &[Privilege::Select], &Object::database("app"));
        assert!(!allows(&grants, Privilege::Select, &u));
        assert!(allows(&grants, Privilege::Insert, &t));
        assert_eq!(grants.len(), 1);
    }

    #[test]
    fn revoking_one_privilege_of_all_keeps_the_others() {
        let mut grants = Vec::new();
        let t = Object::table("d", "t");
        grant(&mut grants, &[Privilege::All], &t);
        revoke(&mut grants, &[Privilege::Delete], &t);
        assert!(allows(&grants, Privilege::Select, &t));
        assert!(!allows(&grants, Privilege::Delete, &t));
        assert!(!allows(&grants, Privilege::All, &t));
    }
}
