//! A table's name as statements, table functions and tools give it: `table` or
//! `database.table`, each part an identifier that may be quoted (`` `my.db`.t `` is table `t` of
//! database `my.db`), resolved against a default database. Every name becomes a (database,
//! table) pair here, so none is cut at the wrong `.`.

use datafusion::common::plan_err;
use datafusion::error::Result;
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::dialect::tokens::Tokens;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    pub database: String,
    pub table: String,
}

impl TableName {
    /// From a name's identifiers as parsed: one or two.
    pub fn from_parts(parts: &[String], default_database: &str) -> Result<Self> {
        match parts {
            [table] => Ok(Self {
                database: default_database.to_string(),
                table: table.clone(),
            }),
            [database, table] => Ok(Self {
                database: database.clone(),
                table: table.clone(),
            }),
            _ => plan_err!(
                "table names are `table` or `database.table`, got {}",
                parts.join(".")
            ),
        }
    }

    /// From text, read as SQL identifiers in MySQL's dialect (backquotes included).
    pub fn parse(text: &str, default_database: &str) -> Result<Self> {
        let mut parser = Tokens::new(text)?.parser();
        let name = parser.parse_object_name(false)?;
        if parser.peek_token().token != Token::EOF {
            return plan_err!("table names are `table` or `database.table`, got {text:?}");
        }
        let parts: Vec<String> = name
            .0
            .iter()
            .filter_map(|p| p.as_ident())
            .map(|i| i.value.clone())
            .collect();
        Self::from_parts(&parts, default_database)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> (String, String) {
        let name = TableName::parse(text, "dflt").unwrap();
        (name.database, name.table)
    }

    #[test]
    fn names_are_parts_not_text_cut_at_a_dot() {
        assert_eq!(parsed("t10b"), ("dflt".into(), "t10b".into()));
        assert_eq!(parsed("db.t"), ("db".into(), "t".into()));
        assert_eq!(parsed("`my.db`.t"), ("my.db".into(), "t".into()));
        assert_eq!(parsed("`a.b`"), ("dflt".into(), "a.b".into()));
        for bad in ["a.b.c", "", "t x", "db."] {
            assert!(TableName::parse(bad, "dflt").is_err(), "{bad:?}");
        }
    }
}
