//! `SET`: Sieve's settings (`sieve.pruning`, `sieve.max_execution_time`), DataFusion's
//! (`datafusion.…`), MySQL's `max_execution_time`, and the MySQL session variables drivers set on
//! connect, which change nothing here. Anything else is an error, as in MySQL: a misspelt
//! setting that silently did nothing would let a user believe, say, that pruning is off.

use datafusion::common::{not_impl_err, plan_err};
use datafusion::config::ConfigOptions;
use datafusion::error::Result;

use datafusion::sql::sqlparser::ast::{ContextModifier, Expr, ObjectName, Set, Value};
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::dialect::tokens::{Tokens, is_keyword};
use crate::error::{Classified, ErrorClass, external};

/// The error of a variable Sieve does not have; MySQL's text (error 1193).
#[derive(Debug, thiserror::Error)]
#[error("Unknown system variable '{0}'")]
pub struct UnknownVariable(pub String);

impl Classified for UnknownVariable {
    fn class(&self) -> ErrorClass {
        ErrorClass::UnknownVariable
    }
}

/// MySQL session variables that drivers and tools set and Sieve accepts with no effect: its
/// character set is always utf8mb4, every statement commits on its own, there is one time zone
/// (UTC) and one SQL mode. (mariadb-import sets `character_set_database = binary` before its
/// LOAD DATA; Sieve reads loaded files as UTF-8 whatever it says.)
const ACCEPTED_MYSQL: &[&str] = &[
    "autocommit",
    "character_set_client",
    "character_set_connection",
    "character_set_database",
    "character_set_results",
    "collation_connection",
    "foreign_key_checks",
    "interactive_timeout",
    "net_read_timeout",
    "net_write_timeout",
    "session_track_schema",
    "session_track_state_change",
    "session_track_system_variables",
    "session_track_transaction_info",
    "sql_mode",
    "sql_notes",
    "sql_quote_show_create",
    "sql_safe_updates",
    "time_zone",
    "transaction_isolation",
    "transaction_read_only",
    "tx_isolation",
    "tx_read_only",
    "unique_checks",
    "wait_timeout",
];

/// Takes `NAMES charset [COLLATE collation]` out of a SET's list when other assignments are
/// in it (MariaDB Connector/J sends `SET autocommit=1, …, NAMES utf8mb4`, which the parser only
/// takes alone). Sieve's character set is always utf8mb4, so the item changes nothing.
pub fn without_names(statement: &mut Tokens) {
    if !statement.starts_with("set") {
        return;
    }
    let all = statement.all();
    let word = |i: usize, w: &str| is_keyword(Some(&all[i].token), w);
    let meaningful: Vec<usize> = (0..all.len())
        .filter(|&i| !matches!(all[i].token, Token::Whitespace(_)))
        .collect();
    if meaningful.len() < 4 || !word(meaningful[0], "set") {
        return;
    }
    // Items of the list, as meaningful tokens between top-level commas; commas[k] precedes
    // items[k + 1].
    let (mut items, mut commas): (Vec<Vec<usize>>, Vec<usize>) = (vec![Vec::new()], Vec::new());
    let mut depth = 0i32;
    for &i in &meaningful[1..] {
        match &all[i].token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Comma if depth == 0 => {
                commas.push(i);
                items.push(Vec::new());
                continue;
            }
            _ => {}
        }
        items.last_mut().expect("one item").push(i);
    }
    let is_names = |item: &Vec<usize>| item.first().is_some_and(|&i| word(i, "names"));
    if items.len() < 2 || !items.iter().any(is_names) {
        return;
    }
    // Each NAMES item goes with the comma before it (the first item, with the one after it).
    let mut dropped = vec![false; all.len()];
    for (k, item) in items.iter().enumerate().filter(|(_, item)| is_names(item)) {
        for &i in item {
            dropped[i] = true;
        }
        dropped[commas[k.saturating_sub(1)]] = true;
    }
    statement.remove(|i| dropped[i]);
}

/// Takes the assignments to MySQL user variables (`@name`, not `@@name`) out of a SET: their
/// names and values, and what is left of the statement, if anything.
pub fn take_user_assignments(set: Set) -> (Vec<(String, Expr)>, Option<Set>) {
    let is_user = |name: &ObjectName| {
        let written = name.to_string();
        written.starts_with('@') && !written.starts_with("@@")
    };
    match set {
        Set::SingleAssignment {
            variable, values, ..
        } if is_user(&variable) && values.len() == 1 => {
            let value = values.into_iter().next().expect("one value");
            (vec![(variable.to_string(), value)], None)
        }
        Set::MultipleAssignments { assignments } => {
            let (user, system): (Vec<_>, Vec<_>) =
                assignments.into_iter().partition(|a| is_user(&a.name));
            let user = user
                .into_iter()
                .map(|a| (a.name.to_string(), a.value))
                .collect();
            let rest = (!system.is_empty()).then_some(Set::MultipleAssignments {
                assignments: system,
            });
            (user, rest)
        }
        other => (Vec::new(), Some(other)),
    }
}

/// Applies a SET statement to a session's options; all of it or, on an error, none of it.
pub fn apply(options: &mut ConfigOptions, set: Set) -> Result<()> {
    let assignments = match set {
        Set::SingleAssignment {
            scope,
            variable,
            values,
            ..
        } => match <[Expr; 1]>::try_from(values) {
            Ok([value]) => vec![(scope, variable, value)],
            Err(_) => return plan_err!("SET {variable} takes one value"),
        },
        Set::MultipleAssignments { assignments } => assignments
            .into_iter()
            .map(|a| (a.scope, a.name, a.value))
            .collect(),
        // Character sets, names and transaction characteristics: see ACCEPTED_MYSQL.
        Set::SetNames { .. } | Set::SetNamesDefault {} | Set::SetTransaction { .. } => {
            return Ok(());
        }
        other => return plan_err!("{other} is not supported"),
    };
    let mut staged = options.clone();
    for (scope, name, value) in assignments {
        let (key, value) = setting(options, scope, &name, &value)?;
        if let Some(key) = key {
            staged.set(&key, &value)?;
        }
    }
    *options = staged;
    Ok(())
}

/// The option key a variable sets (None: accepted, no effect) and its value as text.
fn setting(
    options: &ConfigOptions,
    scope: Option<ContextModifier>,
    name: &ObjectName,
    value: &Expr,
) -> Result<(Option<String>, String)> {
    let written = name.to_string();
    let mut variable = written.to_ascii_lowercase();
    let mut global = matches!(scope, Some(ContextModifier::Global));
    for prefix in ["@@", "session.", "local.", "global."] {
        if let Some(rest) = variable.strip_prefix(prefix) {
            global |= prefix == "global.";
            variable = rest.to_string();
        }
    }
    if global {
        return plan_err!(
            "SET GLOBAL {variable} is not supported; server settings live in its configuration"
        );
    }
    if variable.starts_with("datafusion.runtime.") {
        return not_impl_err!(
            "{written} is a server setting; set memory limits in the server's configuration"
        );
    }
    let text = value_text(value);
    let key = match variable.as_str() {
        "max_execution_time" => Some("sieve.max_execution_time".to_string()),
        v if is_setting(options, v) => Some(variable.clone()),
        v if ACCEPTED_MYSQL.contains(&v) => None,
        _ => {
            return Err(external(UnknownVariable(written)));
        }
    };
    Ok((key, text))
}

/// Whether `variable` names one of DataFusion's settings or Sieve's (whose entries are listed
/// without their `sieve.` prefix).
fn is_setting(options: &ConfigOptions, variable: &str) -> bool {
    let sieve = variable.strip_prefix("sieve.");
    options.entries().iter().any(|e| {
        if e.key.starts_with("datafusion.") {
            e.key == variable
        } else {
            sieve == Some(e.key.as_str())
        }
    })
}

fn value_text(value: &Expr) -> String {
    match value {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
            Value::Number(n, _) => n.clone(),
            other => other.to_string(),
        },
        Expr::Identifier(ident) => ident.value.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::parser::Statement as DFStatement;
    use datafusion::sql::sqlparser::ast::Statement;

    use super::*;
    use crate::options::SieveOptions;

    /// The SET `sql` holds, without NAMES among others.
    fn parsed(sql: &str) -> Set {
        let mut tokens = Tokens::new(sql).unwrap();
        without_names(&mut tokens);
        match tokens.parse_one().unwrap() {
            DFStatement::Statement(s) => match *s {
                Statement::Set(set) => set,
                other => panic!("{other} is not a SET"),
            },
            other => panic!("{other} is not a SET"),
        }
    }

    fn set(options: &mut ConfigOptions, sql: &str) -> Result<()> {
        apply(options, parsed(sql))
    }

    fn sieve(options: &ConfigOptions) -> &SieveOptions {
        options.extensions.get::<SieveOptions>().unwrap()
    }

    #[test]
    fn scopes_agree_and_unknown_names_fail() {
        let mut options = ConfigOptions::new().with_extensions({
            let mut e = datafusion::config::Extensions::new();
            e.insert(SieveOptions::default());
            e
        });
        set(&mut options, "SET SESSION sieve.pruning = false").unwrap();
        assert!(!sieve(&options).pruning);
        set(&mut options, "set sieve.pruning = true").unwrap();
        assert!(sieve(&options).pruning);
        set(&mut options, "SET @@session.max_execution_time = 1500").unwrap();
        assert_eq!(sieve(&options).max_execution_time, 1500);
        set(&mut options, "SET autocommit = 1, wait_timeout = 60").unwrap();
        set(&mut options, "SET NAMES utf8mb4").unwrap();
        set(&mut options, "SET sql_mode = 'STRICT_TRANS_TABLES'").unwrap();
        let typo = set(&mut options, "set sieve_pruning = false").unwrap_err();
        assert_eq!(
            typo.find_root().to_string(),
            "External error: Unknown system variable 'sieve_pruning'"
        );
        set(&mut options, "set sieve.prunning = false").unwrap_err();
        set(&mut options, "SET GLOBAL max_execution_time = 5").unwrap_err();
        let names = "set autocommit=1, sql_mode = concat(@@sql_mode,',X'), NAMES utf8mb4 COLLATE utf8mb4_unicode_ci";
        assert_eq!(
            parsed(names).to_string(),
            "SET autocommit = 1, sql_mode = concat(@@sql_mode, ',X')"
        );
        set(&mut options, names).unwrap();
        let first = "SET NAMES utf8mb4, autocommit = 1";
        assert_eq!(parsed(first).to_string(), "SET autocommit = 1");
        assert_eq!(parsed("SET NAMES utf8mb4").to_string(), "SET NAMES utf8mb4");
        // A failing assignment leaves the others of its statement unapplied.
        set(&mut options, "SET sieve.pruning = false, bogus = 1").unwrap_err();
        assert!(sieve(&options).pruning);
    }
}
