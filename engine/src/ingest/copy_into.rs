//! The COPY INTO statement (Databend's and Snowflake's, for files on object storage):
//!
//! ```text
//! COPY INTO [db.]t FROM 's3://bucket/prefix/'
//!   [PATTERN = 'regex']
//!   FILE_FORMAT = (TYPE = PARQUET | CSV | NDJSON
//!                  [FIELD_DELIMITER = ','] [RECORD_DELIMITER = '\n'] [QUOTE = '"']
//!                  [ESCAPE = ''] [SKIP_HEADER = n])
//!   [ON_ERROR = ABORT | CONTINUE]
//!   [FORCE = TRUE | FALSE]
//! ```
//!
//! `FROM` names one file or a prefix (every file under it); `PATTERN` keeps the files whose path
//! after that prefix it matches. CSV fields go to the table's columns in order (an unquoted empty
//! field is NULL); Parquet and NDJSON columns go by name. Files the table's record says were
//! loaded before (same URL, size, ETag and modification time) are skipped unless `FORCE = TRUE`.

use datafusion::common::plan_err;
use datafusion::error::Result;
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::catalog::table_name::TableName;
use crate::dialect::tokens::Tokens;
use crate::ingest::delimited::Delimiters;
use crate::ingest::words::{Words, starts_with};

#[derive(Debug, Clone)]
pub struct CopyInto {
    pub table: TableName,
    pub from: String,
    pub pattern: Option<regex::Regex>,
    pub format: FileFormat,
    /// `ON_ERROR = CONTINUE`: rows that do not fit are skipped, a file that cannot be read ends
    /// there; both are reported, the rest is loaded.
    pub go_on: bool,
    /// `FORCE = TRUE`: load files the table's record says were loaded before.
    pub force: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileFormat {
    Parquet,
    Csv {
        delimiters: Delimiters,
        skip_header: u64,
    },
    Ndjson,
}

/// Whether `statement` is a COPY INTO statement; if so, the statement or why it cannot run.
pub fn parse(statement: &Tokens, default_database: &str) -> Option<Result<CopyInto>> {
    starts_with(statement, "copy", "into").then(|| read(statement, default_database))
}

fn read(statement: &Tokens, default_database: &str) -> Result<CopyInto> {
    let mut s = Words::new(statement, "COPY INTO");
    s.expect("COPY")?;
    s.expect("INTO")?;
    let table = s.table_name(default_database)?;
    s.expect("FROM")?;
    let from = s.string("the files' location")?;
    let (mut pattern, mut format, mut go_on, mut force) = (None, None, false, false);
    loop {
        if s.word("PATTERN") {
            equals(&mut s)?;
            let text = s.string("a regular expression")?;
            pattern = Some(
                regex::Regex::new(&text)
                    .or_else(|e| plan_err!("PATTERN '{text}' is not a regular expression: {e}"))?,
            );
        } else if s.word("FILE_FORMAT") {
            equals(&mut s)?;
            format = Some(file_format(&mut s)?);
        } else if s.word("ON_ERROR") {
            equals(&mut s)?;
            go_on = if s.word("CONTINUE") {
                true
            } else if s.word("ABORT") || s.word("ABORT_STATEMENT") {
                false
            } else {
                return s.expected("ABORT or CONTINUE after ON_ERROR =");
            };
        } else if s.word("FORCE") {
            equals(&mut s)?;
            force = if s.word("TRUE") {
                true
            } else if s.word("FALSE") {
                false
            } else {
                return s.expected("TRUE or FALSE after FORCE =");
            };
        } else {
            break;
        }
    }
    s.end()?;
    let Some(format) = format else {
        return plan_err!("COPY INTO needs FILE_FORMAT = (TYPE = PARQUET | CSV | NDJSON)");
    };
    Ok(CopyInto {
        table,
        from,
        pattern,
        format,
        go_on,
        force,
    })
}

fn equals(s: &mut Words) -> Result<()> {
    if s.parser.consume_token(&Token::Eq) {
        return Ok(());
    }
    s.expected("=")
}

/// `(TYPE = … [option = value] …)`, options separated by commas or spaces.
fn file_format(s: &mut Words) -> Result<FileFormat> {
    if !s.parser.consume_token(&Token::LParen) {
        return s.expected("( after FILE_FORMAT =");
    }
    let mut kind = None;
    let mut delimiters = Delimiters {
        field_end: b",".to_vec(),
        enclosure: Some(b'"'),
        escape: None,
        empty_is_null: true,
        ..Delimiters::default()
    };
    let mut skip_header = 0;
    let mut csv_options = Vec::new();
    loop {
        if s.parser.consume_token(&Token::RParen) {
            break;
        }
        let _comma_between_options_is_optional = s.parser.consume_token(&Token::Comma);
        let option = s.name("a file format option")?.to_ascii_uppercase();
        equals(s)?;
        match option.as_str() {
            "TYPE" => {
                kind = Some(s.name("PARQUET, CSV or NDJSON")?.to_ascii_uppercase());
                continue;
            }
            "FIELD_DELIMITER" => delimiters.field_end = s.string(&option)?.into_bytes(),
            "RECORD_DELIMITER" => delimiters.line_end = s.string(&option)?.into_bytes(),
            "QUOTE" => delimiters.enclosure = s.character(&option)?,
            "ESCAPE" => delimiters.escape = s.character(&option)?,
            "SKIP_HEADER" => skip_header = s.parser.parse_literal_uint()?,
            other => {
                return plan_err!(
                    "unknown file format option {other}; CSV takes FIELD_DELIMITER, \
                     RECORD_DELIMITER, QUOTE, ESCAPE and SKIP_HEADER"
                );
            }
        }
        csv_options.push(option);
    }
    let format = match kind.as_deref() {
        Some("PARQUET") => FileFormat::Parquet,
        Some("NDJSON") => FileFormat::Ndjson,
        Some("CSV") => {
            delimiters.check()?;
            return Ok(FileFormat::Csv {
                delimiters,
                skip_header,
            });
        }
        Some(other) => return plan_err!("file format TYPE = {other}: use PARQUET, CSV or NDJSON"),
        None => return plan_err!("FILE_FORMAT needs TYPE = PARQUET | CSV | NDJSON"),
    };
    if let Some(option) = csv_options.first() {
        return plan_err!("{option} is an option of CSV files");
    }
    Ok(format)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(sql: &str) -> CopyInto {
        parse(&Tokens::new(sql).unwrap(), "db")
            .expect("a COPY INTO")
            .unwrap()
    }

    fn refused(sql: &str) -> String {
        parse(&Tokens::new(sql).unwrap(), "db")
            .expect("a COPY INTO")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn every_option_is_read() {
        let c = copy(
            "COPY INTO shop.t FROM 's3://in/2026/' PATTERN = '.*[.]csv' \
             FILE_FORMAT = (TYPE = CSV, FIELD_DELIMITER = '|' SKIP_HEADER = 1 QUOTE = '') \
             ON_ERROR = CONTINUE FORCE = TRUE;",
        );
        assert_eq!(
            (c.table.database.as_str(), c.table.table.as_str()),
            ("shop", "t")
        );
        assert_eq!(c.from, "s3://in/2026/");
        assert!(c.pattern.unwrap().is_match("a/b.csv"));
        assert!(c.go_on && c.force);
        let FileFormat::Csv {
            delimiters,
            skip_header,
        } = c.format
        else {
            panic!("CSV")
        };
        assert_eq!(
            (&delimiters.field_end[..], delimiters.enclosure),
            (&b"|"[..], None)
        );
        assert_eq!(skip_header, 1);
        let p = copy("copy into t from 's3://in/x.parquet' file_format = (type = parquet)");
        assert_eq!(
            (p.format, p.go_on, p.table.database.as_str()),
            (FileFormat::Parquet, false, "db")
        );
    }

    #[test]
    fn mistakes_are_refused_by_name() {
        assert!(refused("copy into t from 's3://in/'").contains("needs FILE_FORMAT"));
        assert!(
            refused("copy into t from 's3://in/' file_format = (type = xml)")
                .contains("TYPE = XML")
        );
        assert!(
            refused("copy into t from 's3://in/' file_format = (type = parquet, skip_header = 1)")
                .contains("SKIP_HEADER is an option of CSV")
        );
        assert!(
            refused("copy into t from 's3://in/' pattern = '(' file_format = (type = csv)")
                .contains("not a regular expression")
        );
        assert!(
            refused("copy into t from 's3://in/' file_format = (type = csv) force = 1")
                .contains("TRUE or FALSE")
        );
        assert!(
            refused("copy into t from 's3://in/' file_format = (type = csv) on_error = skip")
                .contains("ABORT or CONTINUE")
        );
        assert!(parse(&Tokens::new("copy t to 'x'").unwrap(), "db").is_none());
    }
}
