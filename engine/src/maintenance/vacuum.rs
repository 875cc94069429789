//! `VACUUM [TABLE] t [RETAIN n HOURS]`: removes the files of `t` no version within the retention
//! references ([`sieve_storage::Table::vacuum`]). Recognised before parsing
//! ([`crate::maintenance::table_statement`]).

use std::time::Duration;

use datafusion::common::plan_err;
use datafusion::error::{DataFusionError, Result};
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::dialect::tokens::{Tokens, is_keyword};
use crate::maintenance::table_statement::{after_keyword, table_name};

/// Delta Lake's default: a week covers any query or write that is still running.
pub const DEFAULT_RETAIN: Duration = Duration::from_secs(7 * 24 * 3600);

/// Below this a write still uploading blocks could lose them, unless
/// `SET sieve.vacuum_retention_check = false` says none runs.
pub const MIN_RETAIN: Duration = Duration::from_secs(3600);

const SYNTAX: &str = "VACUUM [TABLE] <table> [RETAIN <hours> HOURS]";

#[derive(Debug, PartialEq)]
pub struct Vacuum {
    /// `table` or `database.table`.
    pub table: Vec<String>,
    pub retain: Duration,
}

/// The VACUUM statement `statement` holds; None if it is another statement.
pub fn parse(statement: &Tokens) -> Option<Result<Vacuum>> {
    Some(parse_rest(after_keyword(statement, "vacuum")?))
}

fn parse_rest(tokens: Vec<Token>) -> Result<Vacuum> {
    let bad = || DataFusionError::Plan(format!("VACUUM syntax: {SYNTAX}"));
    let mut rest = tokens.as_slice();
    if is_keyword(rest.first(), "table") {
        rest = &rest[1..];
    }
    // Sieve's own tables only: an attached table's files are its writers' to remove.
    let table = (table_name(&mut rest).filter(|t| t.len() <= 2)).ok_or_else(bad)?;
    let retain = match rest {
        [] => DEFAULT_RETAIN,
        [retain, Token::Number(hours, _), unit]
            if is_keyword(Some(retain), "retain")
                && (is_keyword(Some(unit), "hours") || is_keyword(Some(unit), "hour")) =>
        {
            match hours.parse::<f64>() {
                Ok(h) if h >= 0.0 && h.is_finite() => Duration::from_secs_f64(h * 3600.0),
                _ => return plan_err!("VACUUM RETAIN takes a number of hours, got {hours}"),
            }
        }
        _ => return Err(bad()),
    };
    Ok(Vacuum { table, retain })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(sql: &str) -> Option<Result<Vacuum>> {
        super::parse(&Tokens::new(sql).unwrap())
    }

    #[test]
    fn parses_vacuum_and_nothing_else() {
        let v = parse("VACUUM TABLE db.t RETAIN 2 HOURS;").unwrap().unwrap();
        assert_eq!(v.table, ["db", "t"]);
        assert_eq!(v.retain, Duration::from_secs(7200));
        let v = parse("vacuum t").unwrap().unwrap();
        assert_eq!((v.table, v.retain), (vec!["t".to_string()], DEFAULT_RETAIN));
        let v = parse("vacuum `table` retain 0 hours").unwrap().unwrap();
        assert_eq!(
            (v.table, v.retain),
            (vec!["table".to_string()], Duration::ZERO)
        );
        for bad in [
            "vacuum",
            "vacuum table",
            "vacuum t retain",
            "vacuum t retain -1 hours",
            "vacuum a.b.c",
        ] {
            assert!(parse(bad).unwrap().is_err(), "{bad}");
        }
        assert!(parse("select 1").is_none());
        assert!(parse("select vacuum from t").is_none());
    }
}
