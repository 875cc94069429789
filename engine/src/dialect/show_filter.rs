//! `SHOW … LIKE 'pattern'` and `SHOW … WHERE expr` over a list the catalog answers (databases,
//! tables): the filter runs in DataFusion, with MySQL's LIKE (`\` escapes) and the list's column
//! named case-insensitively in a WHERE, as MySQL names columns.

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::Column;
use datafusion::dataframe::DataFrame;
use datafusion::error::Result;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{Expr, Like, lit};
use datafusion::sql::sqlparser::ast::{
    Expr as SqlExpr, ExprWithAlias, ShowStatementFilter, ShowStatementFilterPosition,
};
use std::sync::Arc;

/// MySQL's `expr LIKE 'pattern'`: `%` and `_`, escaped by `\`.
pub(crate) fn like(expr: Expr, pattern: String, case_insensitive: bool) -> Expr {
    Expr::Like(Like::new(
        false,
        Box::new(expr),
        Box::new(lit(pattern)),
        Some('\\'),
        case_insensitive,
    ))
}

/// The filter of a SHOW statement, wherever it was written.
pub(crate) fn filter_of(
    position: Option<ShowStatementFilterPosition>,
) -> Option<ShowStatementFilter> {
    position.map(|p| match p {
        ShowStatementFilterPosition::Infix(f) | ShowStatementFilterPosition::Suffix(f) => f,
    })
}

/// `values` as a one-column frame named `column`, the rows `filter` keeps; the session runs it
/// as it runs any plan.
pub(crate) fn filtered_list(
    ctx: &SessionContext,
    column: &str,
    values: Vec<String>,
    filter: Option<ShowStatementFilter>,
) -> Result<DataFrame> {
    // Filtered under its lower-cased name, which unquoted names in a WHERE normalize to.
    let internal = column.to_ascii_lowercase();
    let schema = Arc::new(Schema::new(vec![Field::new(
        &internal,
        DataType::Utf8,
        false,
    )]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(values))])?;
    let frame = ctx.read_batch(batch)?;
    let name = Expr::Column(Column::new_unqualified(&internal));
    let frame = match filter {
        None => frame,
        Some(ShowStatementFilter::Like(p) | ShowStatementFilter::NoKeyword(p)) => {
            frame.filter(like(name.clone(), p, false))?
        }
        Some(ShowStatementFilter::ILike(p)) => frame.filter(like(name.clone(), p, true))?,
        Some(ShowStatementFilter::Where(e)) => filter_where(frame, e)?,
    };
    frame.select(vec![name.alias(column)])
}

/// `frame` filtered by a SHOW statement's `WHERE` condition, planned from the parsed
/// condition: the text is not parsed again.
pub(crate) fn filter_where(frame: DataFrame, condition: SqlExpr) -> Result<DataFrame> {
    let (state, plan) = frame.into_parts();
    let condition = ExprWithAlias {
        expr: condition,
        alias: None,
    };
    let predicate = state.create_logical_expr_from_sql_expr(condition, plan.schema())?;
    DataFrame::new(state, plan).filter(predicate)
}
