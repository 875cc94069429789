//! DESCRIBE t and SHOW [FULL] COLUMNS FROM t [LIKE | WHERE], as MySQL answers them (Field, Type,
//! Null, Key, Default, Extra), read from [`crate::dialect::information_schema`]: MySQL type names, and
//! `MUL` on the indexed columns.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::Schema;
use datafusion::common::{Column, ScalarValue};
use datafusion::dataframe::DataFrame;
use datafusion::error::Result;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{Expr, col, lit, when};
use datafusion::sql::sqlparser::ast::ShowStatementFilter;

use crate::dialect::show_filter::{filter_where, like};
use crate::dialect::types::mysql_type;

/// The columns of `database.table`, in order, that `filter` keeps; `full` adds Collation,
/// Privileges and Comment.
pub(crate) async fn columns_of(
    ctx: &SessionContext,
    database: &str,
    table: &str,
    full: bool,
    filter: Option<ShowStatementFilter>,
) -> Result<DataFrame> {
    let frame = ctx
        .table(format!("{}.columns", crate::dialect::information_schema::NAME).as_str())
        .await?
        .filter(
            col("table_schema")
                .eq(lit(database))
                .and(col("table_name").eq(lit(table))),
        )?;
    described(frame, full, filter)
}

/// The columns of a table Sieve has no definition of (an attached Iceberg table), from its
/// schema: MySQL type names, no key.
pub(crate) fn columns_of_schema(
    ctx: &SessionContext,
    schema: &Schema,
    full: bool,
    filter: Option<ShowStatementFilter>,
) -> Result<DataFrame> {
    let fields = schema.fields();
    let types: Vec<_> = fields.iter().map(|f| mysql_type(f.data_type())).collect();
    let texts = |values: Vec<Option<&str>>| Arc::new(StringArray::from(values)) as ArrayRef;
    let same = |value: Option<&str>| texts(vec![value; fields.len()]);
    let batch = RecordBatch::try_from_iter([
        (
            "column_name",
            texts(fields.iter().map(|f| Some(f.name().as_str())).collect()),
        ),
        (
            "ordinal_position",
            Arc::new(UInt64Array::from_iter_values(1..=fields.len() as u64)) as ArrayRef,
        ),
        (
            "data_type",
            texts(types.iter().map(|t| Some(t.data_type.as_str())).collect()),
        ),
        (
            "column_type",
            texts(types.iter().map(|t| Some(t.column_type.as_str())).collect()),
        ),
        (
            "is_nullable",
            texts(
                fields
                    .iter()
                    .map(|f| Some(if f.is_nullable() { "YES" } else { "NO" }))
                    .collect(),
            ),
        ),
        ("column_key", same(Some(""))),
        ("column_default", same(None)),
        ("extra", same(Some(""))),
        ("column_comment", same(Some(""))),
    ])?;
    described(ctx.read_batch(batch)?, full, filter)
}

/// MySQL's DESCRIBE columns of `frame`, rows as information_schema.columns has them.
fn described(
    frame: DataFrame,
    full: bool,
    filter: Option<ShowStatementFilter>,
) -> Result<DataFrame> {
    let text = |v: Option<&str>| lit(ScalarValue::Utf8(v.map(str::to_string)));
    let column = |name: &str| Expr::Column(Column::new_unqualified(name));
    // (information_schema column or value, MySQL's heading); filtered under the heading in
    // lower case, which unquoted names in a WHERE normalize to, then shown as MySQL shows it.
    let mut shown = vec![
        (column("column_name"), "Field"),
        (column("column_type"), "Type"),
    ];
    if full {
        let collation = when(
            column("data_type").eq(lit("varchar")),
            lit("utf8mb4_general_ci"),
        )
        .otherwise(text(None))?;
        shown.push((collation, "Collation"));
    }
    shown.extend([
        (column("is_nullable"), "Null"),
        (column("column_key"), "Key"),
        (column("column_default"), "Default"),
        (column("extra"), "Extra"),
    ]);
    if full {
        shown.push((lit("select,insert"), "Privileges"));
        shown.push((column("column_comment"), "Comment"));
    }
    let frame = frame
        .sort(vec![col("ordinal_position").sort(true, false)])?
        .select(
            shown
                .iter()
                .map(|(e, heading)| e.clone().alias(heading.to_ascii_lowercase()))
                .collect::<Vec<_>>(),
        )?;
    let field = column("field");
    let frame = match filter {
        None => frame,
        // Column names are not case-sensitive in MySQL.
        Some(
            ShowStatementFilter::Like(p)
            | ShowStatementFilter::ILike(p)
            | ShowStatementFilter::NoKeyword(p),
        ) => frame.filter(like(field, p, true))?,
        Some(ShowStatementFilter::Where(e)) => filter_where(frame, e)?,
    };
    frame.select(
        shown
            .iter()
            .map(|(_, heading)| column(&heading.to_ascii_lowercase()).alias(*heading))
            .collect::<Vec<_>>(),
    )
}
