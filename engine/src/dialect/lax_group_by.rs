//! MySQL's GROUP BY without ONLY_FULL_GROUP_BY (what `mariadb-dump` assumes): a bare column in
//! the select list that is neither grouped nor aggregated takes any value of its group. Here it
//! takes the first (`first_value`), named as the column is; DataFusion would refuse the query.

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments,
    GroupByExpr, Ident, ObjectName, Select, SelectItem,
};

pub(crate) fn any_value_of_ungrouped_columns(select: &mut Select) {
    let GroupByExpr::Expressions(grouped, _) = &select.group_by else {
        return;
    };
    if grouped.is_empty() {
        return;
    }
    let key = |e: &Expr| e.to_string().to_ascii_lowercase();
    let grouped: Vec<String> = grouped.iter().map(key).collect();
    for item in &mut select.projection {
        let SelectItem::UnnamedExpr(expr) = item else {
            continue;
        };
        let name = match expr {
            Expr::Identifier(ident) => ident.clone(),
            Expr::CompoundIdentifier(parts) => match parts.last() {
                Some(last) => last.clone(),
                None => continue,
            },
            _ => continue,
        };
        if grouped.contains(&key(expr)) || grouped.contains(&name.value.to_ascii_lowercase()) {
            continue;
        }
        let any_value = Expr::Function(Function {
            name: ObjectName::from(vec![Ident::new("first_value")]),
            uses_odbc_syntax: false,
            parameters: FunctionArguments::None,
            args: FunctionArguments::List(FunctionArgumentList {
                duplicate_treatment: None,
                args: vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(expr.clone()))],
                clauses: Vec::new(),
            }),
            filter: None,
            null_treatment: None,
            over: None,
            within_group: Vec::new(),
        });
        *item = SelectItem::ExprWithAlias {
            expr: any_value,
            alias: name,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::rewrites::rewritten;

    #[test]
    fn ungrouped_columns_take_a_value_of_their_group() {
        assert_eq!(
            rewritten(
                "select a, t.b, c, count(*) from t group by a, c",
                any_value_of_ungrouped_columns
            ),
            "SELECT a, first_value(t.b) AS b, c, count(*) FROM t GROUP BY a, c"
        );
    }
}
