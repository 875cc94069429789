//! The front door: a statement's text read once, into the statement it is. The text is
//! tokenized once ([`Tokens`]); the statements DataFusion's parser does not know in MySQL's form
//! are recognised over those tokens, and every other statement is parsed from them and
//! rewritten for MySQL. The MySQL server, Flight SQL and `sieve sql` all take their statements
//! from here (through [`crate::Session::read`]); no other module scans a statement's text.

use datafusion::error::Result;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::access::user_statements::{self, UserStatement};
use crate::dialect::connection_statements::{self, ConnectionStatement};
use crate::dialect::tokens::{Tokens, is_keyword};
use crate::dialect::{rewrites, set_variable, show};
use crate::guard::statement::check_complexity;
use crate::iceberg::index_statement::{self, IndexStatement};
use crate::ingest::copy_into::{self, CopyInto};
use crate::ingest::load_data::{self, LoadData};
use crate::maintenance::optimize::{self, Optimize};
use crate::maintenance::vacuum::{self, Vacuum};

/// What one statement's text says.
#[derive(Debug)]
pub enum Statement {
    /// KILL and the transaction statements, which the front end answers itself.
    Connection(ConnectionStatement),
    /// LOAD DATA LOCAL INFILE, which needs the client to send its file.
    LoadData(LoadData),
    Account(UserStatement),
    /// A SHOW statement the parser does not know, as the query that answers it.
    Show(String),
    Vacuum(Vacuum),
    Optimize(Optimize),
    /// CREATE INDEX and DROP INDEX over an attached table.
    Index(IndexStatement),
    Copy(CopyInto),
    /// Any other statement, parsed and rewritten for MySQL; `allow_filtering` when it ended
    /// with `ALLOW FILTERING`.
    Sql {
        statement: DFStatement,
        allow_filtering: bool,
    },
}

/// The statement `text` holds, names resolved against `database` where a recognised statement
/// needs one; or why it is not one Sieve can run (bad SQL, too complex, a malformed COPY).
pub fn read(text: &str, database: &str) -> Result<Statement> {
    let mut tokens = Tokens::new(text)?;
    check_complexity(&tokens)?;
    if let Some(statement) = connection_statements::recognise(&tokens) {
        return Ok(Statement::Connection(statement));
    }
    let allow_filtering = take_allow_filtering(&mut tokens);
    set_variable::without_names(&mut tokens);
    if let Some(statement) = user_statements::parse(&tokens) {
        return statement.map(Statement::Account);
    }
    if let Some(query) = show::rewrite(&tokens, database) {
        return query.map(Statement::Show);
    }
    if let Some(vacuum) = vacuum::parse(&tokens) {
        return vacuum.map(Statement::Vacuum);
    }
    if let Some(optimize) = optimize::parse(&tokens) {
        return optimize.map(Statement::Optimize);
    }
    if let Some(index) = index_statement::parse(&tokens) {
        return index.map(Statement::Index);
    }
    if let Some(copy) = copy_into::parse(&tokens, database) {
        return copy.map(Statement::Copy);
    }
    if let Some(load) = load_data::parse(&tokens, database) {
        return load.map(Statement::LoadData);
    }
    let mut statement = tokens.parse_one()?;
    rewrites::rewrite(&mut statement);
    Ok(Statement::Sql {
        statement,
        allow_filtering,
    })
}

/// Takes Cassandra's trailing `ALLOW FILTERING` off a statement (Sieve takes it to mean "this
/// statement may read a large table in full"); whether it was there.
fn take_allow_filtering(statement: &mut Tokens) -> bool {
    // The last three words, from the end: only the suffix is looked at.
    let mut words = (statement.all().iter().enumerate().rev())
        .filter(|(_, t)| !matches!(t.token, Token::Whitespace(_) | Token::SemiColon));
    let (Some((_, filtering)), Some((allow, allow_word)), Some(_)) =
        (words.next(), words.next(), words.next())
    else {
        return false;
    };
    if !is_keyword(Some(&allow_word.token), "allow")
        || !is_keyword(Some(&filtering.token), "filtering")
    {
        return false;
    }
    statement.truncate(allow);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_filtering_is_a_suffix() {
        fn allowed(sql: &str) -> (&str, bool) {
            let mut tokens = Tokens::new(sql).unwrap();
            let allowed = take_allow_filtering(&mut tokens);
            (tokens.text(), allowed)
        }
        assert_eq!(
            allowed("select * from t where b > 1 ALLOW\n FILTERING;"),
            ("select * from t where b > 1", true)
        );
        assert_eq!(
            allowed("select * from t where b > 1 allow filtering ; "),
            ("select * from t where b > 1", true)
        );
        assert!(!allowed("select 'allow filtering'").1);
        assert!(!allowed("allow filtering").1);
        assert!(!allowed("select `allow` filtering").1);
    }

    #[test]
    fn each_kind_of_statement_is_told_apart() {
        let kind = |sql: &str| match read(sql, "db").unwrap() {
            Statement::Connection(_) => "connection",
            Statement::LoadData(_) => "load",
            Statement::Account(_) => "account",
            Statement::Show(_) => "show",
            Statement::Vacuum(_) => "vacuum",
            Statement::Optimize(_) => "optimize",
            Statement::Index(_) => "index",
            Statement::Copy(_) => "copy",
            Statement::Sql {
                allow_filtering: true,
                ..
            } => "sql allowing filtering",
            Statement::Sql { .. } => "sql",
        };
        assert_eq!(kind("kill query 3"), "connection");
        assert_eq!(kind("begin"), "connection");
        assert_eq!(kind("load data local infile 'x' into table t"), "load");
        assert_eq!(kind("create index ix on lake.ns.t (a)"), "index");
        assert_eq!(kind("drop index ix on lake.ns.t"), "index");
        assert_eq!(kind("create user a identified by 'x'"), "account");
        assert_eq!(kind("show index from t"), "show");
        assert_eq!(kind("vacuum t"), "vacuum");
        assert_eq!(kind("optimize table t"), "optimize");
        let copy = "copy into t from 's3://b/p/' file_format = (type = parquet)";
        assert_eq!(kind(copy), "copy");
        assert_eq!(
            kind("select * from t allow filtering"),
            "sql allowing filtering"
        );
        assert_eq!(kind("select 1; "), "sql");
        assert_eq!(kind("set autocommit = 1, names utf8mb4"), "sql");
        assert!(read("select 'unclosed", "db").is_err());
        assert!(read("select 1; select 2", "db").is_err());
    }
}
