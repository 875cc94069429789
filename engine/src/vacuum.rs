//! `VACUUM [TABLE] t [RETAIN n HOURS]`: removes the files of `t` no version within the retention
//! references ([`sieve_storage::Table::vacuum`]). Recognised before parsing, as the SQL parser
//! knows only Redshift's VACUUM.

use std::time::Duration;

use datafusion::common::plan_err;
use datafusion::error::{DataFusionError, Result};
use datafusion::sql::sqlparser::dialect::MySqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

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

/// The VACUUM statement `sql` holds; None if it is another statement.
pub fn parse(sql: &str) -> Option<Result<Vacuum>> {
    let tokens = Tokenizer::new(&MySqlDialect {}, sql).tokenize().ok()?;
    let mut words = tokens
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon));
    match words.next() {
        Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("vacuum") => {}
        _ => return None,
    }
    Some(parse_rest(words.collect()))
}

fn parse_rest(tokens: Vec<Token>) -> Result<Vacuum> {
    let bad = || DataFusionError::Plan(format!("VACUUM syntax: {SYNTAX}"));
    let keyword = |t: Option<&Token>, k: &str| matches!(t, Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k));
    let mut rest = tokens.as_slice();
    if keyword(rest.first(), "table") {
        rest = &rest[1..];
    }
    let mut table = Vec::new();
    loop {
        match rest.first() {
            Some(Token::Word(w)) => table.push(w.value.clone()),
            _ => return Err(bad()),
        }
        rest = &rest[1..];
        match rest.first() {
            Some(Token::Period) => rest = &rest[1..],
            _ => break,
        }
    }
    if table.len() > 2 {
        return Err(bad());
    }
    let retain = match rest {
        [] => DEFAULT_RETAIN,
        [retain, Token::Number(hours, _), unit]
            if keyword(Some(retain), "retain")
                && (keyword(Some(unit), "hours") || keyword(Some(unit), "hour")) =>
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
