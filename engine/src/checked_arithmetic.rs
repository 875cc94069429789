//! Integer arithmetic that fails instead of wrapping, as MySQL's does: `9223372036854775807 + 1`
//! is "BIGINT value is out of range", not -9223372036854775808, and `sum()` of integers is a
//! DECIMAL (as in MySQL), which cannot wrap.
//!
//! DataFusion's `+ - *` on integers wrap and its `sum` of BIGINT wraps, with no setting to change
//! that. This analyzer rule runs after type coercion, before constant folding, and replaces
//! integer `+ - *` with functions over Arrow's checked kernels and widens `sum`'s integer input to
//! DECIMAL(38, 0). Constant folding evaluates the functions too; an overflow there leaves the
//! expression in place, so the error comes when the statement runs.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{ArrayRef, Datum};
use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::error::ArrowError;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{
    BinaryExpr, Cast, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::optimizer::utils::NamePreserver;

/// The analyzer rule; add it after DataFusion's own rules.
#[derive(Debug, Default)]
pub struct CheckedArithmetic;

impl AnalyzerRule for CheckedArithmetic {
    fn name(&self) -> &str {
        "sieve_checked_arithmetic"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| {
            let schema = merge_schema(&plan.inputs());
            let names = NamePreserver::new(&plan);
            plan.map_expressions(|expr| {
                let name = names.save(&expr);
                expr.transform_up(|e| rewrite(e, &schema))
                    .map(|t| t.update_data(|e| name.restore(e)))
            })?
            .map_data(|plan| plan.recompute_schema())
        })
        .map(|t| t.data)
    }
}

fn rewrite(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if matches!(op, Operator::Plus | Operator::Minus | Operator::Multiply)
                && left.get_type(schema).is_ok_and(|t| t.is_integer()) =>
        {
            // Two literals are folded here, bottom-up, so a chain of them costs one pass; left
            // as functions, DataFusion's constant folding would evaluate every level's whole
            // subtree again (cubic: 500 terms took 24 s). An overflow keeps the function, whose
            // error comes when the statement runs.
            if let (Expr::Literal(l, _), Expr::Literal(r, _)) = (left.as_ref(), right.as_ref())
                && let Ok(folded) = apply(op, &l.to_array()?, &r.to_array()?)
            {
                return Ok(Transformed::yes(Expr::Literal(
                    ScalarValue::try_from_array(&folded, 0)?,
                    None,
                )));
            }
            let udf = match op {
                Operator::Plus => &*CHECKED_ADD,
                Operator::Minus => &*CHECKED_SUB,
                _ => &*CHECKED_MUL,
            };
            Ok(Transformed::yes(Expr::ScalarFunction(
                ScalarFunction::new_udf(udf.clone(), vec![*left, *right]),
            )))
        }
        Expr::AggregateFunction(mut aggregate)
            if aggregate.func.name() == "sum"
                && aggregate.params.args.len() == 1
                && aggregate.params.args[0]
                    .get_type(schema)
                    .is_ok_and(|t| t.is_integer()) =>
        {
            let arg = aggregate.params.args.remove(0);
            aggregate.params.args = vec![Expr::Cast(Cast::new(
                Box::new(arg),
                DataType::Decimal128(38, 0),
            ))];
            Ok(Transformed::yes(Expr::AggregateFunction(aggregate)))
        }
        other => Ok(Transformed::no(other)),
    }
}

static CHECKED_ADD: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| udf(Operator::Plus));
static CHECKED_SUB: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| udf(Operator::Minus));
static CHECKED_MUL: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| udf(Operator::Multiply));

fn udf(op: Operator) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(Checked {
        op,
        name: match op {
            Operator::Plus => "checked_add",
            Operator::Minus => "checked_sub",
            _ => "checked_mul",
        },
        signature: Signature::any(2, Volatility::Immutable),
    }))
}

/// `a op b` on two integers of one type (type coercion made them one), failing on overflow.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Checked {
    op: Operator,
    name: &'static str,
    signature: Signature,
}

impl ScalarUDFImpl for Checked {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let is_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let [left, right] = <[ColumnarValue; 2]>::try_from(args.args)
            .map_err(|_| DataFusionError::Internal(format!("{} takes two arguments", self.name)))?;
        let (left, right) = (left.into_array(rows)?, right.into_array(rows)?);
        let result = apply(self.op, &left, &right).map_err(|e| match e {
            ArrowError::ArithmeticOverflow(_) => {
                DataFusionError::External(Box::new(OutOfRange::new(left.data_type(), self.op)))
            }
            other => other.into(),
        })?;
        Ok(if is_scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&result, 0)?)
        } else {
            ColumnarValue::Array(result)
        })
    }
}

/// `left op right` with Arrow's checked kernels.
fn apply(op: Operator, left: &dyn Datum, right: &dyn Datum) -> Result<ArrayRef, ArrowError> {
    match op {
        Operator::Plus => numeric::add(left, right),
        Operator::Minus => numeric::sub(left, right),
        _ => numeric::mul(left, right),
    }
}

/// An integer result out of its type's range; MySQL's message (error 1690).
#[derive(Debug, thiserror::Error)]
#[error("{kind} value is out of range in `{op}`")]
pub struct OutOfRange {
    kind: &'static str,
    op: Operator,
}

impl OutOfRange {
    fn new(data_type: &DataType, op: Operator) -> Self {
        let kind = if data_type.is_unsigned_integer() {
            "BIGINT UNSIGNED"
        } else {
            "BIGINT"
        };
        Self { kind, op }
    }
}
