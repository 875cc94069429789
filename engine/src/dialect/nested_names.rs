//! Names of tables in nested namespaces of an attached catalog, written as their levels:
//! `lake.a.b.t` is table `t` of namespace `a.b` (the database SHOW DATABASES lists as
//! `lake.a.b`). SQL names have three parts at most in DataFusion (catalog, schema, table), so a
//! longer name becomes those three here, its middle levels one identifier joined by dots, which
//! is how the attached catalog names a nested namespace (`` lake.`a.b`.t `` already meant it).
//! Done once on the parsed statement, so every statement that names a table (queries, DESCRIBE,
//! SHOW TABLES FROM, the short path) sees the same three parts.

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{Ident, ObjectName, ObjectNamePart, Statement};

/// A table's name of four parts or more as three: the catalog, the levels between joined by
/// dots, the table. Shorter names are as they were.
pub fn table_levels(parts: Vec<String>) -> Vec<String> {
    match parts.as_slice() {
        [_, _, _, _, ..] => joined(parts, 1),
        _ => parts,
    }
}

/// A database's name of three parts or more (`lake.a.b`) as two: the catalog and its
/// namespace's levels joined by dots.
pub fn database_levels(parts: Vec<String>) -> Vec<String> {
    match parts.as_slice() {
        [_, _, _, ..] => joined(parts, 0),
        _ => parts,
    }
}

/// The first part, the parts after it but for the last `keep_last`, joined, then those last.
fn joined(parts: Vec<String>, keep_last: usize) -> Vec<String> {
    let mut parts = parts.into_iter();
    let first = parts.next().expect("a name of several parts");
    let rest: Vec<String> = parts.collect();
    let (levels, last) = rest.split_at(rest.len() - keep_last);
    [vec![first, levels.join(".")], last.to_vec()].concat()
}

/// Every table name of `statement` (and the database SHOW TABLES FROM names) as its levels.
pub fn collapse_nested_names(statement: &mut DFStatement) {
    match statement {
        DFStatement::Statement(statement) => collapse(statement),
        DFStatement::Explain(explain) => collapse_nested_names(&mut explain.statement),
        _ => {}
    }
}

fn collapse(statement: &mut Statement) {
    if let Statement::ShowTables { show_options, .. } = statement
        && let Some(name) = show_options
            .show_in
            .as_mut()
            .and_then(|s| s.parent_name.as_mut())
    {
        rename(name, database_levels);
    }
    let _ = datafusion::sql::sqlparser::ast::visit_relations_mut(statement, |name| {
        rename(name, table_levels);
        ControlFlow::<()>::Continue(())
    });
}

/// `name` as `levels` makes it, when every part is an identifier and `levels` changes them.
fn rename(name: &mut ObjectName, levels: fn(Vec<String>) -> Vec<String>) {
    let Some(idents) = (name.0.iter())
        .map(|p| p.as_ident().cloned())
        .collect::<Option<Vec<Ident>>>()
    else {
        return;
    };
    let parts: Vec<String> = idents.iter().map(|i| i.value.clone()).collect();
    let count = parts.len();
    let collapsed = levels(parts);
    if collapsed.len() == count {
        return;
    }
    // The first and last identifiers keep their quoting (and so their case rules); the joined
    // levels are quoted, as a name with dots must be.
    let first = idents[0].clone();
    let last = (collapsed.len() == 3).then(|| idents[count - 1].clone());
    let middle = Ident::with_quote('`', collapsed[1].clone());
    name.0 = [Some(first), Some(middle), last]
        .into_iter()
        .flatten()
        .map(ObjectNamePart::Identifier)
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::tokens::Tokens;

    fn collapsed(sql: &str) -> String {
        let mut statement = Tokens::new(sql).and_then(|t| t.parse_one()).unwrap();
        collapse_nested_names(&mut statement);
        statement.to_string()
    }

    #[test]
    fn a_name_of_a_nested_namespace_is_its_catalog_levels_and_table() {
        let strings = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        assert_eq!(
            table_levels(strings(&["lake", "a", "b", "c", "t"])),
            strings(&["lake", "a.b.c", "t"])
        );
        assert_eq!(
            table_levels(strings(&["lake", "a", "t"])),
            strings(&["lake", "a", "t"])
        );
        assert_eq!(
            database_levels(strings(&["lake", "a", "b"])),
            strings(&["lake", "a.b"])
        );
        assert_eq!(
            database_levels(strings(&["lake", "a"])),
            strings(&["lake", "a"])
        );
        assert_eq!(
            collapsed(
                "select x from lake.ns.deep.t a join lake.ns.u on a.x = u.x where x in (select y from lake.a.b.c.v)"
            ),
            "SELECT x FROM lake.`ns.deep`.t a JOIN lake.ns.u ON a.x = u.x WHERE x IN (SELECT y FROM lake.`a.b.c`.v)"
        );
        assert_eq!(
            collapsed("describe lake.ns.deep.t"),
            "DESCRIBE lake.`ns.deep`.t"
        );
        assert_eq!(
            collapsed("show tables from lake.ns.deep"),
            "SHOW TABLES FROM lake.`ns.deep`"
        );
        assert_eq!(
            collapsed("explain select * from `Lake`.ns.deep.`T`"),
            "EXPLAIN SELECT * FROM `Lake`.`ns.deep`.`T`"
        );
    }
}
