//! Values from outside (text fields, a file's columns) made into a batch of a table's rows: each
//! column cast to its table type as `CAST` would cast it. A value that does not cast, or a NULL
//! in a NOT NULL column, is an error naming where the row came from, its column and its value;
//! or, when asked, its row is dropped and counted.

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, new_null_array};
use datafusion::arrow::compute::{CastOptions, cast_with_options, filter};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::common::exec_err;
use datafusion::error::Result;

use crate::dialect::types::ddl_type;

/// A batch of `schema` from `columns` (one per table column: its values, or None for NULLs) of
/// `rows` rows; with `skip_bad_rows`, also how many rows were dropped. `place(row)` says where a
/// row came from in an error ("line 3").
pub fn fit_batch(
    schema: &SchemaRef,
    columns: Vec<Option<ArrayRef>>,
    rows: usize,
    skip_bad_rows: bool,
    place: impl Fn(usize) -> String,
) -> Result<(RecordBatch, u64)> {
    let options = CastOptions {
        safe: true,
        ..CastOptions::default()
    };
    let mut keep: Option<Vec<bool>> = None;
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(columns.len());
    for (values, field) in columns.into_iter().zip(schema.fields()) {
        let typed = match &values {
            Some(values) => cast_with_options(values, field.data_type(), &options)?,
            None => new_null_array(field.data_type(), rows),
        };
        for row in 0..rows {
            let unread = values.as_ref().is_some_and(|v| v.is_valid(row)) && typed.is_null(row);
            let missing = !field.is_nullable() && typed.is_null(row);
            if !(unread || missing) {
                continue;
            }
            if !skip_bad_rows {
                let (name, at) = (field.name(), place(row));
                return match &values {
                    Some(values) if unread => {
                        let ty = ddl_type(field.data_type());
                        let value = array_value_to_string(values, row)?;
                        exec_err!("Incorrect {ty} value: '{value}' for column '{name}' at {at}")
                    }
                    _ => exec_err!("Column '{name}' cannot be null (NOT NULL) at {at}"),
                };
            }
            keep.get_or_insert_with(|| vec![true; rows])[row] = false;
        }
        arrays.push(typed);
    }
    let mut skipped = 0;
    if let Some(keep) = keep {
        let keep = BooleanArray::from(keep);
        skipped = keep.false_count() as u64;
        arrays = arrays
            .iter()
            .map(|a| filter(a, &keep))
            .collect::<std::result::Result<_, _>>()?;
    }
    Ok((RecordBatch::try_new(schema.clone(), arrays)?, skipped))
}
