//! DESCRIBE t and SHOW [FULL] COLUMNS FROM t, as MySQL answers them (Field, Type, Null, Key,
//! Default, Extra), read from [`crate::information_schema`]: MySQL type names, and `MUL` on the
//! indexed columns.

use datafusion::common::{Column, ScalarValue};
use datafusion::dataframe::DataFrame;
use datafusion::error::Result;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{Expr, col, lit};

/// The columns of `database.table`, in order; `full` adds Collation, Privileges and Comment.
pub(crate) async fn columns_of(
    ctx: &SessionContext,
    database: &str,
    table: &str,
    full: bool,
) -> Result<DataFrame> {
    let columns = ctx
        .table(format!("{}.columns", crate::information_schema::NAME).as_str())
        .await?
        .filter(
            col("table_schema")
                .eq(lit(database))
                .and(col("table_name").eq(lit(table))),
        )?
        .sort(vec![col("ordinal_position").sort(true, false)])?;
    let named =
        |column: &str, name: &str| Expr::Column(Column::new_unqualified(column)).alias(name);
    let mut out = vec![named("column_name", "Field"), named("column_type", "Type")];
    if full {
        out.push(lit(ScalarValue::Utf8(None)).alias("Collation"));
    }
    out.extend([
        named("is_nullable", "Null"),
        named("column_key", "Key"),
        named("column_default", "Default"),
        named("extra", "Extra"),
    ]);
    if full {
        out.push(lit("select,insert").alias("Privileges"));
        out.push(named("column_comment", "Comment"));
    }
    columns.select(out)
}
