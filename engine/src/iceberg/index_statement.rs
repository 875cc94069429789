//! `CREATE INDEX name ON catalog.namespace.table (column, …) [USING filter]` and `DROP INDEX
//! name ON catalog.namespace.table`, in MySQL's form: Sieve's filters over an attached table's
//! data files. Recognised before parsing, as DataFusion plans neither.

use datafusion::common::plan_err;
use datafusion::error::{DataFusionError, Result};
use datafusion::sql::sqlparser::tokenizer::Token;
use sieve_index::FilterKind;

use crate::dialect::nested_names::table_levels;
use crate::dialect::tokens::{Tokens, is_keyword};

const CREATE_SYNTAX: &str = "CREATE INDEX <name> ON <catalog>.<namespace>.<table> (<column>, …) \
                             [USING <filter>]";
const DROP_SYNTAX: &str = "DROP INDEX <name> ON <catalog>.<namespace>.<table>";

#[derive(Debug, PartialEq)]
pub enum IndexStatement {
    Create {
        name: String,
        table: Vec<String>,
        columns: Vec<String>,
        /// None: the default filter.
        filter: Option<FilterKind>,
    },
    Drop {
        name: String,
        table: Vec<String>,
    },
}

/// The index statement `statement` holds; None if it is another statement.
pub fn parse(statement: &Tokens) -> Option<Result<IndexStatement>> {
    let words: Vec<&Token> = statement.words().collect();
    let [first, index, rest @ ..] = words.as_slice() else {
        return None;
    };
    if !is_keyword(Some(index), "index") {
        return None;
    }
    if is_keyword(Some(first), "create") {
        return Some(
            parse_create(rest)
                .ok_or_else(|| syntax(CREATE_SYNTAX))
                .and_then(|r| r),
        );
    }
    if is_keyword(Some(first), "drop") {
        return Some(parse_drop(rest).ok_or_else(|| syntax(DROP_SYNTAX)));
    }
    None
}

fn syntax(form: &str) -> DataFusionError {
    DataFusionError::Plan(format!("syntax: {form}"))
}

fn word(token: Option<&&Token>) -> Option<String> {
    match token {
        Some(Token::Word(w)) => Some(w.value.clone()),
        _ => None,
    }
}

/// `name ON table` at the start of `rest`, which it then skips.
fn name_on_table(rest: &mut &[&Token]) -> Option<(String, Vec<String>)> {
    let name = word(rest.first())?;
    if !is_keyword(rest.get(1).copied(), "on") {
        return None;
    }
    *rest = &rest[2..];
    let mut table = vec![word(rest.first())?];
    *rest = &rest[1..];
    while let [Token::Period, part, ..] = *rest {
        table.push(word(Some(part))?);
        *rest = &rest[2..];
    }
    Some((name, table_levels(table)))
}

fn parse_create(mut rest: &[&Token]) -> Option<Result<IndexStatement>> {
    let (name, table) = name_on_table(&mut rest)?;
    let [Token::LParen, after @ ..] = rest else {
        return None;
    };
    rest = after;
    let mut columns = Vec::new();
    loop {
        columns.push(word(rest.first())?);
        match rest.get(1) {
            Some(Token::Comma) => rest = &rest[2..],
            Some(Token::RParen) => {
                rest = &rest[2..];
                break;
            }
            _ => return None,
        }
    }
    let filter = match rest {
        [] => None,
        [using, kind] if is_keyword(Some(using), "using") => {
            let kind = word(Some(kind))?;
            match kind.parse::<FilterKind>() {
                Ok(kind) => Some(kind),
                Err(e) => return Some(plan_err!("CREATE INDEX … USING: {e}")),
            }
        }
        _ => return None,
    };
    Some(Ok(IndexStatement::Create {
        name,
        table,
        columns,
        filter,
    }))
}

fn parse_drop(mut rest: &[&Token]) -> Option<IndexStatement> {
    let (name, table) = name_on_table(&mut rest)?;
    rest.is_empty()
        .then_some(IndexStatement::Drop { name, table })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(sql: &str) -> Option<Result<IndexStatement>> {
        super::parse(&Tokens::new(sql).unwrap())
    }

    #[test]
    fn create_and_drop_index_are_read_and_nothing_else() {
        let create = parse("CREATE INDEX ix ON lake.ns.orders (c2);")
            .unwrap()
            .unwrap();
        assert_eq!(
            create,
            IndexStatement::Create {
                name: "ix".into(),
                table: vec!["lake".into(), "ns".into(), "orders".into()],
                columns: vec!["c2".into()],
                filter: None,
            }
        );
        let create = parse("create index `my ix` on t (a, `b c`) using xor8")
            .unwrap()
            .unwrap();
        assert_eq!(
            create,
            IndexStatement::Create {
                name: "my ix".into(),
                table: vec!["t".into()],
                columns: vec!["a".into(), "b c".into()],
                filter: Some(FilterKind::Xor8),
            }
        );
        let drop = parse("drop index ix on lake.ns.orders").unwrap().unwrap();
        assert_eq!(
            drop,
            IndexStatement::Drop {
                name: "ix".into(),
                table: vec!["lake".into(), "ns".into(), "orders".into()],
            }
        );
        // A table of a nested namespace, by its levels.
        let drop = parse("drop index ix on lake.a.b.t").unwrap().unwrap();
        assert_eq!(
            drop,
            IndexStatement::Drop {
                name: "ix".into(),
                table: vec!["lake".into(), "a.b".into(), "t".into()],
            }
        );
        for bad in [
            "create index ix on t",
            "create index ix on t ()",
            "create index ix on t (a b)",
            "create index on t (a)",
            "create index ix on t (a) using",
            "drop index ix",
            "drop index ix on t extra",
        ] {
            let e = parse(bad).unwrap().unwrap_err().to_string();
            assert!(e.contains("syntax: "), "{bad}: {e}");
        }
        let e = parse("create index ix on t (a) using btree")
            .unwrap()
            .unwrap_err();
        assert!(e.to_string().contains("binary_fuse8"), "{e}");
        assert!(parse("create table t (a int)").is_none());
        assert!(parse("drop table t").is_none());
        assert!(parse("select 1").is_none());
    }
}
