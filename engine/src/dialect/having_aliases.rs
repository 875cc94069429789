//! MySQL's HAVING without GROUP BY or aggregates: a filter on the selected rows that may name
//! the select list's aliases. MySQL Connector/J's `DatabaseMetaData.getTables` sends one
//! (`SELECT … CASE … END AS TABLE_TYPE FROM information_schema.TABLES … HAVING TABLE_TYPE IN
//! (…)`); DataFusion reads HAVING as a filter on groups and refuses it. Such a HAVING is the
//! same as a WHERE with each alias replaced by the expression it names, which is what it
//! becomes here.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, GroupByExpr, Select, SelectItem, visit_expressions, visit_expressions_mut,
};

/// Functions that make a query aggregate, where HAVING keeps its own meaning.
const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "group_concat",
    "bit_and",
    "bit_or",
    "bit_xor",
    "std",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "any_value",
    "array_agg",
    "string_agg",
];

fn aggregates<V: datafusion::sql::sqlparser::ast::Visit>(node: &V) -> bool {
    visit_expressions(node, |expr| match expr {
        Expr::Function(f)
            if f.name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .is_some_and(|i| AGGREGATES.contains(&i.value.to_ascii_lowercase().as_str())) =>
        {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

pub(crate) fn having_as_where(select: &mut Select) {
    let ungrouped = matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty());
    if select.having.is_none()
        || !ungrouped
        || aggregates(&select.projection)
        || aggregates(&select.having)
    {
        return;
    }
    let aliases: HashMap<String, Expr> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { expr, alias } => {
                Some((alias.value.to_ascii_lowercase(), expr.clone()))
            }
            _ => None,
        })
        .collect();
    let Some(mut having) = select.having.take() else {
        return;
    };
    let _ = visit_expressions_mut(&mut having, |expr| {
        if let Expr::Identifier(ident) = expr
            && let Some(named) = aliases.get(&ident.value.to_ascii_lowercase())
        {
            *expr = Expr::Nested(Box::new(named.clone()));
        }
        ControlFlow::<()>::Continue(())
    });
    select.selection = Some(match select.selection.take() {
        Some(filter) => Expr::BinaryOp {
            left: Box::new(Expr::Nested(Box::new(filter))),
            op: BinaryOperator::And,
            right: Box::new(Expr::Nested(Box::new(having))),
        },
        None => having,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::rewrites::rewritten;

    #[test]
    fn aliases_in_an_ungrouped_having_become_a_where() {
        assert_eq!(
            rewritten(
                "select a + 1 as b from t where c = 1 having b in (2, 3) order by b",
                having_as_where
            ),
            "SELECT a + 1 AS b FROM t WHERE (c = 1) AND ((a + 1) IN (2, 3)) ORDER BY b"
        );
        let grouped = "SELECT a, count(*) AS n FROM t GROUP BY a HAVING n > 1";
        assert_eq!(rewritten(grouped, having_as_where), grouped);
        let aggregate = "SELECT count(*) AS n FROM t HAVING n > 1";
        assert_eq!(rewritten(aggregate, having_as_where), aggregate);
    }
}
