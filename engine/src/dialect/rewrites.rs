//! Where a statement, once parsed, is made to mean in DataFusion what it means in MySQL: each
//! rewrite is a module of its own; this runs them, in order, on every statement a session runs
//! or prepares.

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{Select, SetExpr, Statement};

use crate::dialect::column_names::name_columns;
use crate::dialect::expressions::rewrite_mysql_expressions;
use crate::dialect::having_aliases::having_as_where;
use crate::dialect::lax_group_by::any_value_of_ungrouped_columns;
use crate::dialect::nested_names::collapse_nested_names;

pub(crate) fn rewrite(statement: &mut DFStatement) {
    collapse_nested_names(statement);
    // Names first: they are the text the client wrote, before any rewrite.
    if let Some(select) = outer_select(statement) {
        name_columns(select);
        having_as_where(select);
        any_value_of_ungrouped_columns(select);
    }
    rewrite_mysql_expressions(statement);
}

/// The SELECT whose columns a query returns, if it is one.
fn outer_select(statement: &mut DFStatement) -> Option<&mut Select> {
    let DFStatement::Statement(statement) = statement else {
        return None;
    };
    let Statement::Query(query) = statement.as_mut() else {
        return None;
    };
    match query.body.as_mut() {
        SetExpr::Select(select) => Some(select),
        _ => None,
    }
}

/// `sql` parsed and rewritten, as text, for the rewrites' tests.
#[cfg(test)]
pub(crate) fn rewritten(sql: &str, rewrite: impl FnOnce(&mut Select)) -> String {
    let mut statement = crate::dialect::tokens::Tokens::new(sql)
        .and_then(|t| t.parse_one())
        .unwrap();
    if let Some(select) = outer_select(&mut statement) {
        rewrite(select);
    }
    statement.to_string()
}
