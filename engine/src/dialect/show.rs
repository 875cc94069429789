//! The SHOW statements tools send that are not about Sieve's own objects, or that the SQL
//! parser does not know, answered as queries over [`crate::dialect::information_schema`] and small
//! fixed lists: SHOW [FULL] TABLES, SHOW INDEX, SHOW TABLE STATUS, SHOW VARIABLES, SHOW STATUS,
//! SHOW COLLATION, SHOW CHARSET, SHOW WARNINGS, SHOW CREATE DATABASE, SHOW PROCESSLIST.
//!
//! Each becomes SQL text: an inner query whose columns are the headings in lower case (which
//! unquoted names in a `WHERE` normalize to), filtered by the statement's `LIKE` or `WHERE`, and
//! an outer one naming them as MySQL does. Names and patterns enter that text only as quoted
//! literals ([`string`]), so no name can change what it means.

use datafusion::common::plan_err;
use datafusion::error::Result;
use datafusion::sql::sqlparser::ast::ShowStatementFilter;
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::dialect::information_schema::NAME as SCHEMA;
use crate::dialect::system_variables::{ServerLimits, VARIABLES, value};
use crate::dialect::tokens::Tokens;
use crate::processes::Process;

/// `text` as a MySQL string literal: quotes doubled, backslashes escaped.
fn string(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

/// The filter of a SHOW statement, as the text after its inner query.
enum Filter {
    None,
    /// LIKE 'pattern' on the first heading.
    Like(String),
    /// WHERE expr, as SQL text.
    Where(String),
}

impl From<Option<ShowStatementFilter>> for Filter {
    fn from(filter: Option<ShowStatementFilter>) -> Self {
        match filter {
            None => Self::None,
            Some(
                ShowStatementFilter::Like(p)
                | ShowStatementFilter::ILike(p)
                | ShowStatementFilter::NoKeyword(p),
            ) => Self::Like(p),
            Some(ShowStatementFilter::Where(e)) => Self::Where(e.to_string()),
        }
    }
}

/// `select <column> as <heading>, …` over `from` (the rest of the inner query), filtered.
fn shown(columns: &[(&str, &str)], from: &str, filter: Filter) -> String {
    let inner: Vec<String> = columns
        .iter()
        .map(|(expr, heading)| format!("{expr} as `{}`", heading.to_ascii_lowercase()))
        .collect();
    let outer: Vec<String> = columns
        .iter()
        .map(|(_, heading)| format!("`{}` as `{heading}`", heading.to_ascii_lowercase()))
        .collect();
    let condition = match filter {
        Filter::None => String::new(),
        Filter::Like(pattern) => format!(
            " where `{}` like {} escape '\\\\'",
            columns[0].1.to_ascii_lowercase(),
            string(&pattern)
        ),
        Filter::Where(expr) => format!(" where {expr}"),
    };
    format!(
        "select {} from (select {} {from}) as shown{condition}",
        outer.join(", "),
        inner.join(", ")
    )
}

/// A fixed list of rows as an inner query's source, its columns named `c0`, `c1`, ….
fn rows(rows: &[Vec<String>]) -> String {
    let values: Vec<String> = rows
        .iter()
        .map(|row| format!("({})", row.join(", ")))
        .collect();
    let names: Vec<String> = (0..rows.first().map_or(0, Vec::len))
        .map(|i| format!("c{i}"))
        .collect();
    format!(
        "from (values {}) as listed({})",
        values.join(", "),
        names.join(", ")
    )
}

pub(crate) fn tables(database: &str, full: bool, filter: Option<ShowStatementFilter>) -> String {
    let heading = format!("Tables_in_{database}");
    let mut columns = vec![("table_name", heading.as_str())];
    if full {
        columns.push(("table_type", "Table_type"));
    }
    let from = format!(
        "from {SCHEMA}.tables where table_schema = {} order by table_name",
        string(database)
    );
    shown(&columns, &from, filter.into())
}

pub(crate) fn variables(limits: &ServerLimits, filter: Option<ShowStatementFilter>) -> String {
    let list: Vec<Vec<String>> = VARIABLES
        .iter()
        .map(|name| {
            let shown = value(name, limits)
                .filter(|v| !v.is_null())
                .map_or(String::new(), |v| v.to_string());
            vec![string(name), string(&shown)]
        })
        .collect();
    shown(
        &[("c0", "Variable_name"), ("c1", "Value")],
        &format!("{} order by c0", rows(&list)),
        filter.into(),
    )
}

/// The engine keeps no server counters (the MySQL server's COM_STATISTICS has them): the
/// headings, no rows.
pub(crate) fn status(filter: Option<ShowStatementFilter>) -> String {
    shown(
        &[("c0", "Variable_name"), ("c1", "Value")],
        "from (values ('', '')) as nothing(c0, c1) where false",
        filter.into(),
    )
}

/// The collations Sieve answers in: text is UTF-8, compared byte by byte.
pub(crate) fn collations(filter: Option<ShowStatementFilter>) -> String {
    let list = [
        ["utf8mb4_general_ci", "utf8mb4", "45", "Yes"],
        ["utf8mb4_bin", "utf8mb4", "46", ""],
        ["binary", "binary", "63", "Yes"],
    ]
    .map(|[name, charset, id, default]| {
        vec![
            string(name),
            string(charset),
            id.to_string(),
            string(default),
            string("Yes"),
            "1".to_string(),
            string("PAD SPACE"),
        ]
    });
    shown(
        &[
            ("c0", "Collation"),
            ("c1", "Charset"),
            ("c2", "Id"),
            ("c3", "Default"),
            ("c4", "Compiled"),
            ("c5", "Sortlen"),
            ("c6", "Pad_attribute"),
        ],
        &rows(&list),
        filter.into(),
    )
}

pub(crate) fn charsets(filter: Option<ShowStatementFilter>) -> String {
    let list = [
        ["utf8mb4", "UTF-8 Unicode", "utf8mb4_general_ci", "4"],
        ["binary", "Binary pseudo charset", "binary", "1"],
    ]
    .map(|[name, description, collation, len]| {
        vec![
            string(name),
            string(description),
            string(collation),
            len.to_string(),
        ]
    });
    shown(
        &[
            ("c0", "Charset"),
            ("c1", "Description"),
            ("c2", "Default collation"),
            ("c3", "Maxlen"),
        ],
        &rows(&list),
        filter.into(),
    )
}

/// The server's connections, by id; `full` shows whole statements (else their first 100
/// characters, as MySQL does).
pub(crate) fn processlist(processes: &[Process], full: bool) -> String {
    let mut processes = processes.to_vec();
    processes.sort_by_key(|p| p.id);
    let listed: Vec<Vec<String>> = processes
        .iter()
        .map(|p| {
            let info = p
                .info
                .as_ref()
                .map_or("cast(null as varchar)".to_string(), |i| {
                    let shown: String = if full {
                        i.clone()
                    } else {
                        i.chars().take(100).collect()
                    };
                    string(&shown)
                });
            vec![
                p.id.to_string(),
                string(&p.user),
                string(&p.host),
                string(&p.db),
                string(&p.command),
                p.time.to_string(),
                string(&p.state),
                info,
            ]
        })
        .collect();
    shown(
        &[
            ("c0", "Id"),
            ("c1", "User"),
            ("c2", "Host"),
            ("c3", "db"),
            ("c4", "Command"),
            ("c5", "Time"),
            ("c6", "State"),
            ("c7", "Info"),
        ],
        &rows(&listed),
        Filter::None,
    )
}

fn keyword(token: &Token, word: &str) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

fn name(token: &Token) -> Option<String> {
    match token {
        Token::Word(w) => Some(w.value.clone()),
        _ => None,
    }
}

/// `name`, `db.name` or an attached catalog's `catalog.namespace.name` (`catalog.a.b.name` in
/// a nested namespace) at the front of `tokens`, and what follows it: the database is every
/// level before the name, joined by dots, as SHOW DATABASES lists it.
fn object(tokens: &[Token]) -> Option<(Option<String>, String, &[Token])> {
    let (first, mut rest) = tokens.split_first()?;
    let mut levels = vec![name(first)?];
    while let [Token::Period, next, after @ ..] = rest {
        levels.push(name(next)?);
        rest = after;
    }
    let table = levels.pop()?;
    Some(((!levels.is_empty()).then(|| levels.join(".")), table, rest))
}

/// `FROM db` or `IN db` at the front of `tokens`, and what follows it.
fn from_database(tokens: &[Token]) -> (Option<String>, &[Token]) {
    match tokens {
        [from, db, rest @ ..] if keyword(from, "from") || keyword(from, "in") => match name(db) {
            Some(db) => (Some(db), rest),
            None => (None, tokens),
        },
        _ => (None, tokens),
    }
}

/// What follows a SHOW statement's names (`tokens`, the last of the statement's, which start
/// in `sql` at `starts`): `LIKE 'pattern'`, `WHERE …` (the rest of the text), or nothing.
fn trailing_filter(sql: &str, starts: &[usize], tokens: &[Token]) -> Result<Filter> {
    match tokens {
        [] => Ok(Filter::None),
        [like, Token::SingleQuotedString(p)] if keyword(like, "like") => {
            Ok(Filter::Like(p.clone()))
        }
        [r#where, _, ..] if keyword(r#where, "where") => {
            // The condition's text as written, from its first token on.
            let at = starts[starts.len() - tokens.len() + 1];
            Ok(Filter::Where(
                sql[at..].trim().trim_end_matches(';').to_string(),
            ))
        }
        _ => plan_err!("unexpected text after the names in {sql}"),
    }
}

/// SHOW statements the SQL parser does not know, as the query that answers them; None for any
/// other statement.
pub(crate) fn rewrite(statement: &Tokens, database: &str) -> Option<Result<String>> {
    if !statement.starts_with("show") {
        return None;
    }
    let sql = statement.text();
    let (tokens, starts): (Vec<Token>, Vec<usize>) = (statement.words_at().into_iter())
        .map(|(token, at)| (token.clone(), at))
        .unzip();
    let rest = &tokens[1..];
    match rest {
        [index, from, rest @ ..]
            if ["index", "indexes", "keys"]
                .iter()
                .any(|k| keyword(index, k))
                && (keyword(from, "from") || keyword(from, "in")) =>
        {
            Some(show_index(sql, &starts, rest, database))
        }
        [table, status, rest @ ..] if keyword(table, "table") && keyword(status, "status") => {
            let (db, rest) = from_database(rest);
            let db = db.unwrap_or_else(|| database.to_string());
            Some(trailing_filter(sql, &starts, rest).map(|filter| table_status(&db, filter)))
        }
        [warnings, ..] if keyword(warnings, "warnings") || keyword(warnings, "errors") => {
            Some(Ok(shown(
                &[("c0", "Level"), ("c1", "Code"), ("c2", "Message")],
                "from (values ('', 0, '')) as nothing(c0, c1, c2) where false",
                Filter::None,
            )))
        }
        [create, database_word, rest @ ..]
            if keyword(create, "create")
                && (keyword(database_word, "database") || keyword(database_word, "schema")) =>
        {
            let rest = match rest {
                [i, n, e, rest @ ..]
                    if keyword(i, "if") && keyword(n, "not") && keyword(e, "exists") =>
                {
                    rest
                }
                rest => rest,
            };
            let [db] = rest else {
                return Some(plan_err!("SHOW CREATE DATABASE takes one database name"));
            };
            let db = name(db)?;
            let from = format!("from {SCHEMA}.schemata where schema_name = {}", string(&db));
            Some(Ok(shown(
                &[
                    ("schema_name", "Database"),
                    (
                        "concat('CREATE DATABASE `', replace(schema_name, '`', '``'), '` /*!40100 DEFAULT CHARACTER SET utf8mb4 */')",
                        "Create Database",
                    ),
                ],
                &from,
                Filter::None,
            )))
        }
        _ => None,
    }
}

fn show_index(sql: &str, starts: &[usize], rest: &[Token], database: &str) -> Result<String> {
    let Some((db, table, rest)) = object(rest) else {
        return plan_err!("SHOW INDEX needs FROM table");
    };
    let (from_db, rest) = from_database(rest);
    let db = from_db.or(db).unwrap_or_else(|| database.to_string());
    let filter = trailing_filter(sql, starts, rest)?;
    let from = format!(
        "from {SCHEMA}.statistics where table_schema = {} and table_name = {} order by index_name",
        string(&db),
        string(&table)
    );
    Ok(shown(
        &[
            ("table_name", "Table"),
            ("non_unique", "Non_unique"),
            ("index_name", "Key_name"),
            ("seq_in_index", "Seq_in_index"),
            ("column_name", "Column_name"),
            ("'A'", "Collation"),
            ("cardinality", "Cardinality"),
            ("sub_part", "Sub_part"),
            ("packed", "Packed"),
            ("nullable", "Null"),
            ("index_type", "Index_type"),
            ("comment", "Comment"),
            ("index_comment", "Index_comment"),
            ("'YES'", "Visible"),
            ("cast(null as varchar)", "Expression"),
        ],
        &from,
        filter,
    ))
}

fn table_status(database: &str, filter: Filter) -> String {
    let from = format!(
        "from {SCHEMA}.tables where table_schema = {} order by table_name",
        string(database)
    );
    let null_number = "cast(null as bigint unsigned)";
    shown(
        &[
            ("table_name", "Name"),
            ("engine", "Engine"),
            ("10", "Version"),
            ("'Dynamic'", "Row_format"),
            ("table_rows", "Rows"),
            (null_number, "Avg_row_length"),
            (null_number, "Data_length"),
            (null_number, "Max_data_length"),
            (null_number, "Index_length"),
            (null_number, "Data_free"),
            (null_number, "Auto_increment"),
            ("cast(null as timestamp)", "Create_time"),
            ("cast(null as timestamp)", "Update_time"),
            ("cast(null as timestamp)", "Check_time"),
            ("table_collation", "Collation"),
            (null_number, "Checksum"),
            ("create_options", "Create_options"),
            ("table_comment", "Comment"),
        ],
        &from,
        filter,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(sql: &str, database: &str) -> Option<Result<String>> {
        super::rewrite(&Tokens::new(sql).unwrap(), database)
    }

    #[test]
    fn statements_the_parser_does_not_know_are_rewritten() {
        let sql = rewrite("SHOW INDEX FROM `t` FROM `db`", "other")
            .unwrap()
            .unwrap();
        assert!(
            sql.contains("table_schema = 'db' and table_name = 't'"),
            "{sql}"
        );
        let sql = rewrite("show keys in db.t where Comment = ' where x'", "x")
            .unwrap()
            .unwrap();
        assert!(sql.ends_with("where Comment = ' where x'"), "{sql}");
        let sql = rewrite("show keys in db.t where Key_name = 'c1'", "x")
            .unwrap()
            .unwrap();
        assert!(sql.ends_with("where Key_name = 'c1'"), "{sql}");
        let sql = rewrite("show table status like 't\\_%'", "db")
            .unwrap()
            .unwrap();
        assert!(sql.contains("like 't\\\\_%'"), "{sql}");
        assert!(rewrite("show tables", "db").is_none());
        assert!(rewrite("select 1", "db").is_none());
        // A name cannot leave its literal.
        let sql = rewrite("show index from `a'b`", "db").unwrap().unwrap();
        assert!(sql.contains("table_name = 'a''b'"), "{sql}");
        let sql = rewrite("show index from lake.ns.t", "db").unwrap().unwrap();
        assert!(
            sql.contains("table_schema = 'lake.ns' and table_name = 't'"),
            "{sql}"
        );
    }
}
