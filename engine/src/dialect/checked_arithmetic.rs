//! Integer arithmetic that fails instead of wrapping, as MySQL's does: `9223372036854775807 + 1`
//! is "BIGINT value is out of range", not -9223372036854775808, and `sum()` of integers is a
//! DECIMAL (as in MySQL), which cannot wrap.
//!
//! DataFusion's `+ - *` on integers wrap and its `sum` of BIGINT wraps, with no setting to change
//! that. This analyzer rule runs after type coercion, before constant folding, and replaces
//! integer `+ - *` with functions over Arrow's checked kernels and widens `sum`'s integer input to
//! DECIMAL(38, 0). Constant folding evaluates the functions too; an overflow there leaves the
//! expression in place, so the error comes when the statement runs.
//!
//! A whole tree of integer `+ - *` becomes one call, `checked_arithmetic('0 1 + 2 *', a, b, c)`
//! for `(a + b) * c`: the tree in postfix order over the operands that follow, evaluated with a
//! stack in the tree's own order (so an intermediate overflow is found exactly where MySQL finds
//! it). A call per operator made planning cubic in the chain's length, because DataFusion names
//! every node of a plan and names a call by formatting each argument's name into a new string:
//! a chain of 400 terms took 45 s to plan in a debug build, and 1,000 terms most of an hour.

use std::any::Any;
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

use crate::error::{Classified, ErrorClass, external};

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
            if step_of(op).is_some() && left.get_type(schema).is_ok_and(|t| t.is_integer()) =>
        {
            if let (Expr::Literal(l, _), Expr::Literal(r, _)) = (left.as_ref(), right.as_ref())
                && let Ok(folded) = apply(op, &l.to_array()?, &r.to_array()?)
            {
                return Ok(Transformed::yes(Expr::Literal(
                    ScalarValue::try_from_array(&folded, 0)?,
                    None,
                )));
            }
            let (mut program, mut operands) = tree(*left)?;
            let (right_program, right_operands) = tree(*right)?;
            program.extend(right_program.into_iter().map(|step| match step {
                Step::Operand(i) => Step::Operand(i + operands.len()),
                op => op,
            }));
            program.push(step_of(op).expect("an arithmetic operator"));
            operands.extend(right_operands);
            let mut args = vec![Expr::Literal(
                ScalarValue::Utf8(Some(encode(&program))),
                None,
            )];
            args.extend(operands);
            Ok(Transformed::yes(Expr::ScalarFunction(
                ScalarFunction::new_udf(CHECKED.clone(), args),
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

/// One step of a postfix program: push an operand, or apply an operator to the top two values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Operand(usize),
    Apply(Operator),
}

fn step_of(op: Operator) -> Option<Step> {
    matches!(op, Operator::Plus | Operator::Minus | Operator::Multiply).then_some(Step::Apply(op))
}

/// An operand's program and operands: a call this rule made already (its tree merges into the
/// new one), or any other expression as a single operand.
fn tree(expr: Expr) -> Result<(Vec<Step>, Vec<Expr>)> {
    match expr {
        Expr::ScalarFunction(call) if (call.func.inner().as_ref() as &dyn Any).is::<Checked>() => {
            let mut args = call.args.into_iter();
            let Some(Expr::Literal(ScalarValue::Utf8(Some(program)), _)) = args.next() else {
                return Err(DataFusionError::Internal(
                    "checked_arithmetic without its program".into(),
                ));
            };
            Ok((decode(&program)?, args.collect()))
        }
        other => Ok((vec![Step::Operand(0)], vec![other])),
    }
}

fn encode(program: &[Step]) -> String {
    let words: Vec<String> = program
        .iter()
        .map(|step| match step {
            Step::Operand(i) => i.to_string(),
            Step::Apply(op) => op.to_string(),
        })
        .collect();
    words.join(" ")
}

fn decode(program: &str) -> Result<Vec<Step>> {
    program
        .split(' ')
        .map(|word| match word {
            "+" => Ok(Step::Apply(Operator::Plus)),
            "-" => Ok(Step::Apply(Operator::Minus)),
            "*" => Ok(Step::Apply(Operator::Multiply)),
            index => index.parse().map(Step::Operand).map_err(|_| {
                DataFusionError::Plan(format!("bad checked_arithmetic program {program:?}"))
            }),
        })
        .collect()
}

static CHECKED: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| {
    Arc::new(ScalarUDF::new_from_impl(Checked {
        signature: Signature::variadic_any(Volatility::Immutable),
    }))
});

/// The function the rewritten plans call, for a worker decoding them (it finds functions by name).
pub(crate) fn checked_udf() -> Arc<ScalarUDF> {
    CHECKED.clone()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Checked {
    signature: Signature,
}

impl ScalarUDFImpl for Checked {
    fn name(&self) -> &str {
        "checked_arithmetic"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The operands' type (type coercion made both sides of every operator alike).
    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        args.get(1)
            .cloned()
            .ok_or_else(|| DataFusionError::Plan("checked_arithmetic takes operands".into()))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let mut args = args.args.into_iter();
        let Some(ColumnarValue::Scalar(ScalarValue::Utf8(Some(program)))) = args.next() else {
            return Err(DataFusionError::Internal(
                "checked_arithmetic without its program".into(),
            ));
        };
        let operands: Vec<ColumnarValue> = args.collect();
        let is_scalar = operands
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let operands = operands
            .into_iter()
            .map(|o| o.into_array(rows))
            .collect::<Result<Vec<ArrayRef>>>()?;
        let mut stack: Vec<ArrayRef> = Vec::new();
        for step in decode(&program)? {
            match step {
                Step::Operand(i) => stack.push(operands.get(i).cloned().ok_or_else(|| {
                    DataFusionError::Internal(format!("checked_arithmetic has no operand {i}"))
                })?),
                Step::Apply(op) => {
                    let (Some(right), Some(left)) = (stack.pop(), stack.pop()) else {
                        return Err(DataFusionError::Internal(format!(
                            "bad checked_arithmetic program {program:?}"
                        )));
                    };
                    let result = apply(op, &left, &right).map_err(|e| match e {
                        ArrowError::ArithmeticOverflow(_) => {
                            external(OutOfRange::new(left.data_type(), op))
                        }
                        other => other.into(),
                    })?;
                    stack.push(result);
                }
            }
        }
        let (Some(result), true) = (stack.pop(), stack.is_empty()) else {
            return Err(DataFusionError::Internal(format!(
                "bad checked_arithmetic program {program:?}"
            )));
        };
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

impl Classified for OutOfRange {
    fn class(&self) -> ErrorClass {
        ErrorClass::OutOfRange
    }
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
