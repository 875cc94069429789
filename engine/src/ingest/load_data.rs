//! MySQL's `LOAD DATA` statement, read into what a load needs: the file the client is to send,
//! the table and the columns its fields go to, and how fields and lines are delimited.
//!
//! ```text
//! LOAD DATA LOCAL INFILE 'file' [IGNORE] INTO TABLE t [CHARACTER SET utf8mb4]
//!   [{FIELDS | COLUMNS} [TERMINATED BY 's'] [[OPTIONALLY] ENCLOSED BY 'c'] [ESCAPED BY 'c']]
//!   [LINES [STARTING BY 's'] [TERMINATED BY 's']]
//!   [IGNORE n {LINES | ROWS}]
//!   [(column_or_@variable, ...)]
//! ```
//!
//! sqlparser reads only Hive's `LOAD DATA … INPATH`, so the grammar is walked here over its
//! tokens ([`Words`]). What Sieve cannot honour is refused by name rather than ignored:
//! `REPLACE` (no unique keys to replace by), `SET` (no
//! expressions on the way in), `LOW_PRIORITY`/`CONCURRENT`, `PARTITION`, other character sets,
//! and `LOAD DATA INFILE` without `LOCAL`, which would read a file of the server's host.

use datafusion::common::plan_err;
use datafusion::error::Result;
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::catalog::table_name::TableName;
use crate::dialect::tokens::Tokens;
use crate::ingest::delimited::Delimiters;
use crate::ingest::words::{Words, starts_with};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadData {
    /// The name the client is asked to send (a path on the client's side).
    pub file: String,
    pub table: TableName,
    /// The table column each field goes to, in order; None for a field read into a `@variable`
    /// (skipped). Empty means the table's columns in order.
    pub columns: Vec<Option<String>>,
    pub delimiters: Delimiters,
    /// Lines skipped at the start of the file (a header).
    pub skip_lines: u64,
    /// `IGNORE`: rows whose values do not fit the table are skipped and counted, not an error.
    pub skip_bad_rows: bool,
}

/// Whether `statement` is a LOAD DATA statement; if so, the statement or why it cannot run.
pub fn parse(statement: &Tokens, default_database: &str) -> Option<Result<LoadData>> {
    starts_with(statement, "load", "data").then(|| read(statement, default_database))
}

fn read(statement: &Tokens, default_database: &str) -> Result<LoadData> {
    let mut s = Words::new(statement, "LOAD DATA");
    s.expect("LOAD")?;
    s.expect("DATA")?;
    for refused in ["LOW_PRIORITY", "CONCURRENT"] {
        if s.word(refused) {
            return plan_err!("LOAD DATA {refused} is not supported: loads never wait");
        }
    }
    if !s.word("LOCAL") {
        return plan_err!(
            "LOAD DATA INFILE reads a file of the server's host, which Sieve never does; \
                 use LOAD DATA LOCAL INFILE (the client sends the file)"
        );
    }
    s.expect("INFILE")?;
    let file = s.string("the file's name")?;
    if s.word("REPLACE") {
        return plan_err!("LOAD DATA … REPLACE needs unique keys, which Sieve tables have not");
    }
    let skip_bad_rows = s.word("IGNORE");
    s.expect("INTO")?;
    s.expect("TABLE")?;
    let table = s.table_name(default_database)?;
    if s.word("PARTITION") {
        return plan_err!("LOAD DATA … PARTITION is not supported: Sieve tables have none");
    }
    if s.word("CHARACTER") {
        s.expect("SET")?;
        let charset = s.name("a character set")?;
        if !["utf8mb4", "utf8", "utf8mb3", "ascii", "binary"]
            .iter()
            .any(|c| charset.eq_ignore_ascii_case(c))
        {
            return plan_err!("LOAD DATA reads UTF-8; CHARACTER SET {charset} is not supported");
        }
    }
    let mut delimiters = Delimiters::default();
    if s.word("FIELDS") || s.word("COLUMNS") {
        let mut any = false;
        loop {
            if s.word("TERMINATED") {
                s.expect("BY")?;
                delimiters.field_end = s.string("a field terminator")?.into_bytes();
            } else if s.word("ENCLOSED") || (s.word("OPTIONALLY") && s.word("ENCLOSED")) {
                // OPTIONALLY only matters when writing a file.
                s.expect("BY")?;
                delimiters.enclosure = s.character("ENCLOSED BY")?;
            } else if s.word("ESCAPED") {
                s.expect("BY")?;
                delimiters.escape = s.character("ESCAPED BY")?;
            } else {
                break;
            }
            any = true;
        }
        if !any {
            return s.expected("TERMINATED BY, ENCLOSED BY or ESCAPED BY after FIELDS");
        }
    }
    if s.word("LINES") {
        let mut any = false;
        loop {
            if s.word("STARTING") {
                s.expect("BY")?;
                delimiters.line_start = s.string("a line prefix")?.into_bytes();
            } else if s.word("TERMINATED") {
                s.expect("BY")?;
                delimiters.line_end = s.string("a line terminator")?.into_bytes();
            } else {
                break;
            }
            any = true;
        }
        if !any {
            return s.expected("STARTING BY or TERMINATED BY after LINES");
        }
    }
    let mut skip_lines = 0;
    if s.word("IGNORE") {
        skip_lines = s.parser.parse_literal_uint()?;
        if !(s.word("LINES") || s.word("ROWS")) {
            return s.expected("LINES or ROWS after IGNORE n");
        }
    }
    let mut columns = Vec::new();
    if s.parser.consume_token(&Token::LParen) {
        loop {
            let name = s.name("a column or @variable")?;
            columns.push((!name.starts_with('@')).then_some(name));
            if s.parser.consume_token(&Token::RParen) {
                break;
            }
            if !s.parser.consume_token(&Token::Comma) {
                return s.expected(", or ) in the column list");
            }
        }
    }
    if s.word("SET") {
        return plan_err!("LOAD DATA … SET is not supported: load the fields as they are");
    }
    s.end()?;
    delimiters.check()?;
    Ok(LoadData {
        file,
        table,
        columns,
        delimiters,
        skip_lines,
        skip_bad_rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(sql: &str) -> LoadData {
        parse(&Tokens::new(sql).unwrap(), "db")
            .expect("a LOAD DATA")
            .unwrap()
    }

    fn refused(sql: &str) -> String {
        parse(&Tokens::new(sql).unwrap(), "db")
            .expect("a LOAD DATA")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn every_clause_is_read() {
        let l = load(
            "LOAD DATA LOCAL INFILE '/tmp/x.csv' IGNORE INTO TABLE shop.t CHARACTER SET utf8mb4 \
             FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' \
             LINES STARTING BY '>' TERMINATED BY '\\r\\n' IGNORE 1 LINES (a, @skip, `b c`);",
        );
        assert_eq!(l.file, "/tmp/x.csv");
        assert_eq!(
            (l.table.database.as_str(), l.table.table.as_str()),
            ("shop", "t")
        );
        assert!(l.skip_bad_rows);
        assert_eq!(l.skip_lines, 1);
        assert_eq!(l.columns, vec![Some("a".into()), None, Some("b c".into())]);
        let d = &l.delimiters;
        assert_eq!(
            (
                &d.field_end[..],
                d.enclosure,
                d.escape,
                &d.line_end[..],
                &d.line_start[..]
            ),
            (&b","[..], Some(b'"'), None, &b"\r\n"[..], &b">"[..])
        );
        let defaults = load("load data local infile 'f' into table t");
        assert_eq!(defaults.delimiters, Delimiters::default());
        assert_eq!(
            (defaults.table.database.as_str(), defaults.columns.len()),
            ("db", 0)
        );
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_by_name() {
        assert!(
            refused("LOAD DATA INFILE '/etc/passwd' INTO TABLE t")
                .contains("use LOAD DATA LOCAL INFILE")
        );
        assert!(refused("load data local infile 'f' replace into table t").contains("REPLACE"));
        assert!(refused("load data local infile 'f' into table t set a = 1").contains("SET"));
        assert!(
            refused("load data local infile 'f' into table t character set latin1")
                .contains("latin1")
        );
        assert!(
            refused("load data local infile 'f' into table t fields enclosed by 'ab'")
                .contains("one character")
        );
        assert!(
            refused("load data local infile 'f' into table t fields terminated by ''")
                .contains("fixed-width")
        );
        assert!(refused("load data local infile f into table t").contains("quoted string"));
        assert!(
            refused("load data local infile 'f' into table t lines")
                .contains("STARTING BY or TERMINATED BY")
        );
        assert!(parse(&Tokens::new("select 'load data'").unwrap(), "db").is_none());
    }
}
