//! MySQL expressions DataFusion reads otherwise or not at all, rewritten in the syntax tree to
//! what they mean in MySQL. Drivers' metadata queries use each of them (MariaDB Connector/J's
//! `getTables`, MySQL Connector/J's `getColumns`):
//! - `IF(condition, then, else)` is `CASE WHEN condition THEN then ELSE else END`;
//! - `CAST(x AS SIGNED [INTEGER])` is a BIGINT, `UNSIGNED [INTEGER]` a BIGINT UNSIGNED, and
//!   `CONVERT(x, type)` is `CAST(x AS type)`;
//! - `UPPER`, `LOWER`, `UCASE`, `LCASE` take any value, as its text.

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    CaseWhen, CastKind, DataType, Expr, FunctionArg, FunctionArgExpr, FunctionArguments,
    visit_expressions_mut,
};

pub(crate) fn rewrite_mysql_expressions(statement: &mut DFStatement) {
    let DFStatement::Statement(statement) = statement else {
        return;
    };
    let _ = visit_expressions_mut(statement.as_mut(), |expr| {
        if let Some([condition, then, otherwise]) = if_arguments(expr) {
            *expr = Expr::Case {
                case_token: AttachedToken::empty(),
                end_token: AttachedToken::empty(),
                operand: None,
                conditions: vec![CaseWhen {
                    condition,
                    result: then,
                }],
                else_result: Some(Box::new(otherwise)),
            };
        }
        if let Expr::Convert {
            expr: inner,
            data_type: Some(data_type),
            charset: None,
            ..
        } = expr
        {
            *expr = Expr::Cast {
                kind: CastKind::Cast,
                expr: inner.clone(),
                data_type: data_type.clone(),
                array: false,
                format: None,
            };
        }
        if let Expr::Cast { data_type, .. } = expr {
            match data_type {
                DataType::Signed | DataType::SignedInteger => *data_type = DataType::BigInt(None),
                DataType::Unsigned | DataType::UnsignedInteger => {
                    *data_type = DataType::BigIntUnsigned(None);
                }
                _ => {}
            }
        }
        if let Some(arg) = case_function_argument(expr) {
            let inner = std::mem::replace(
                arg,
                Expr::value(datafusion::sql::sqlparser::ast::Value::Null),
            );
            *arg = Expr::Cast {
                kind: CastKind::Cast,
                expr: Box::new(inner),
                data_type: DataType::Varchar(None),
                array: false,
                format: None,
            };
        }
        ControlFlow::<()>::Continue(())
    });
}

/// The name of a function called with no qualifier, lower case.
fn called(expr: &Expr) -> Option<String> {
    let Expr::Function(function) = expr else {
        return None;
    };
    let [name] = function.name.0.as_slice() else {
        return None;
    };
    Some(name.as_ident()?.value.to_ascii_lowercase())
}

/// The argument of an `UPPER(…)` (or LOWER, UCASE, LCASE) call that is not already text.
fn case_function_argument(expr: &mut Expr) -> Option<&mut Expr> {
    let name = called(expr)?;
    if !["upper", "lower", "ucase", "lcase"].contains(&name.as_str()) {
        return None;
    }
    let Expr::Function(function) = expr else {
        return None;
    };
    let FunctionArguments::List(list) = &mut function.args else {
        return None;
    };
    match list.args.as_mut_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))]
            if !matches!(
                arg,
                Expr::Cast {
                    data_type: DataType::Varchar(None),
                    ..
                }
            ) =>
        {
            Some(arg)
        }
        _ => None,
    }
}

/// The three arguments of an `IF(…)` call.
fn if_arguments(expr: &Expr) -> Option<[Expr; 3]> {
    if called(expr)?.as_str() != "if" {
        return None;
    }
    let Expr::Function(function) = expr else {
        return None;
    };
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    let args: Vec<Expr> = list
        .args
        .iter()
        .map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    args.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::tokens::Tokens;

    #[test]
    fn mysql_expressions_become_datafusion_ones() {
        let sql = "select if(a > 1, 'x', if(b, 1, 2)), cast(c as signed integer), \
                   convert(c, unsigned integer), upper(d) from t";
        let mut statement = Tokens::new(sql).and_then(|t| t.parse_one()).unwrap();
        rewrite_mysql_expressions(&mut statement);
        assert_eq!(
            statement.to_string(),
            "SELECT CASE WHEN a > 1 THEN 'x' ELSE CASE WHEN b THEN 1 ELSE 2 END END, \
             CAST(c AS BIGINT), CAST(c AS BIGINT UNSIGNED), upper(CAST(d AS VARCHAR)) FROM t"
        );
    }
}
