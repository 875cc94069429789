//! Result columns named as MySQL names them: a column that is not a table's column and has no
//! alias is named by its text (`select 1` gives a column `1`, `select version()` one named
//! `version()`, `select 'x'` one named `x`), where DataFusion would name it `Int64(1)`. Clients
//! and tools that read results by column name (pandas, ORMs) depend on it.

use std::collections::HashSet;

use datafusion::sql::sqlparser::ast::{Expr, Ident, Select, SelectItem, Value};

/// Aliases the unnamed expressions of a query's outermost SELECT by their text.
pub(crate) fn name_columns(select: &mut Select) {
    let named = |item: &SelectItem| match item {
        SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
        SelectItem::UnnamedExpr(Expr::Identifier(ident)) => Some(ident.value.clone()),
        SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
            parts.last().map(|p| p.value.clone())
        }
        _ => None,
    };
    let mut taken: HashSet<String> = select.projection.iter().filter_map(named).collect();
    for item in &mut select.projection {
        let SelectItem::UnnamedExpr(expr) = item else {
            continue;
        };
        if matches!(expr, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
            continue;
        }
        let name = match expr {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
                _ => expr.to_string(),
            },
            _ => expr.to_string(),
        };
        // Two columns of one name would be ambiguous to DataFusion: the second keeps its own.
        if !taken.insert(name.clone()) {
            continue;
        }
        *item = SelectItem::ExprWithAlias {
            expr: expr.clone(),
            alias: Ident::with_quote('`', name),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::rewrites::rewritten;

    #[test]
    fn unnamed_expressions_take_their_text() {
        assert_eq!(
            rewritten(
                "select 1, 'x', version(), c1, t.c2, c3 as y from t",
                name_columns
            ),
            "SELECT 1 AS `1`, 'x' AS `x`, version() AS `version()`, c1, t.c2, c3 AS y FROM t"
        );
        assert_eq!(rewritten("select 1, 1", name_columns), "SELECT 1 AS `1`, 1");
        assert_eq!(
            rewritten("insert into t values (1)", name_columns),
            "INSERT INTO t VALUES (1)"
        );
    }
}
