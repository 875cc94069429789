//! Records of text fields made into batches of a table's rows: each field goes to its column and
//! is read as the column's type, the way `CAST(text AS type)` reads it. A value that does not
//! read, a NULL in a NOT NULL column, or a record with too few or too many fields is an error
//! naming the line, the column and the value, or, when asked (`LOAD DATA … IGNORE`), a row
//! skipped and counted.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringBuilder};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{exec_err, plan_err};
use datafusion::error::Result;

use crate::ingest::delimited::Fields;
use crate::ingest::fitted_batch::fit_batch;

/// Rows are handed on in batches of this many.
pub const BATCH_ROWS: usize = 64 << 10;

#[derive(Debug)]
pub struct TextRows {
    schema: SchemaRef,
    /// Per field of a record: the table column it goes to (None: skipped).
    targets: Vec<Option<usize>>,
    /// Per table column: its text so far, if a field goes to it (else it is all NULL).
    columns: Vec<Option<StringBuilder>>,
    /// Per row so far: its line in the file.
    lines: Vec<u64>,
    skip_bad_rows: bool,
    skipped: u64,
}

impl TextRows {
    /// For `schema`'s table, fields going to `columns` (by name; None skips a field; empty
    /// means every column in order).
    pub fn new(schema: SchemaRef, columns: &[Option<String>], skip_bad_rows: bool) -> Result<Self> {
        let targets: Vec<Option<usize>> = if columns.is_empty() {
            (0..schema.fields().len()).map(Some).collect()
        } else {
            let mut targets = Vec::with_capacity(columns.len());
            for name in columns {
                let Some(name) = name else {
                    targets.push(None);
                    continue;
                };
                let Some(i) = schema
                    .fields()
                    .iter()
                    .position(|f| f.name().eq_ignore_ascii_case(name))
                else {
                    return plan_err!("Unknown column '{name}' in 'field list'");
                };
                if targets.contains(&Some(i)) {
                    return plan_err!("Column '{name}' specified twice");
                }
                targets.push(Some(i));
            }
            targets
        };
        for (i, field) in schema.fields().iter().enumerate() {
            if !field.is_nullable() && !targets.contains(&Some(i)) {
                return plan_err!(
                    "Field '{}' doesn't have a default value: it is NOT NULL and not loaded",
                    field.name()
                );
            }
        }
        let columns = (0..schema.fields().len())
            .map(|i| targets.contains(&Some(i)).then(StringBuilder::new))
            .collect();
        Ok(Self {
            schema,
            targets,
            columns,
            lines: Vec::new(),
            skip_bad_rows,
            skipped: 0,
        })
    }

    pub fn rows(&self) -> usize {
        self.lines.len()
    }

    /// Rows skipped as bad so far.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Adds the record read from `line`.
    pub fn push(&mut self, fields: &Fields, line: u64) -> Result<()> {
        if fields.len() != self.targets.len() {
            if self.skip_bad_rows {
                self.skipped += 1;
                return Ok(());
            }
            let (n, want) = (fields.len(), self.targets.len());
            self.check_rows_so_far()?;
            return if n < want {
                exec_err!(
                    "Row {line} doesn't contain data for all columns: {n} fields, {want} expected"
                )
            } else {
                exec_err!(
                    "Row {line} was truncated; it contained more data than there were input columns: {n} fields, {want} expected"
                )
            };
        }
        // UTF-8 first, so a bad row adds to no column.
        for i in 0..fields.len() {
            if let (Some(_), Some(bytes)) = (self.targets[i], fields.get(i))
                && let Err(e) = std::str::from_utf8(bytes)
            {
                if self.skip_bad_rows {
                    self.skipped += 1;
                    return Ok(());
                }
                self.check_rows_so_far()?;
                let column = self.name_of_field(i);
                return exec_err!(
                    "Invalid utf8mb4 character string for column '{column}' at line {line}: {e}"
                );
            }
        }
        for (i, target) in self.targets.iter().enumerate() {
            let Some(builder) = target.and_then(|t| self.columns[t].as_mut()) else {
                continue;
            };
            // Checked above.
            builder.append_option(fields.get(i).map(|b| std::str::from_utf8(b).unwrap_or("")));
        }
        self.lines.push(line);
        Ok(())
    }

    /// The rows added since the last batch, as the table's types: None if there are none.
    pub fn finish(&mut self) -> Result<Option<RecordBatch>> {
        let lines = std::mem::take(&mut self.lines);
        if lines.is_empty() {
            return Ok(None);
        }
        let columns = self
            .columns
            .iter_mut()
            .map(|c| c.as_mut().map(|b| Arc::new(b.finish()) as ArrayRef))
            .collect();
        let place = |row: usize| format!("line {}", lines[row]);
        let (batch, skipped) = fit_batch(
            &self.schema,
            columns,
            lines.len(),
            self.skip_bad_rows,
            place,
        )?;
        self.skipped += skipped;
        Ok(Some(batch))
    }

    /// Fails with the first error among the rows added so far, if any: a load reports the
    /// first bad line of the file, though values are read a batch at a time.
    fn check_rows_so_far(&mut self) -> Result<()> {
        self.finish().map(drop)
    }

    fn name_of_field(&self, i: usize) -> String {
        self.targets[i].map_or_else(String::new, |t| self.schema.field(t).name().to_string())
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Array, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;
    use crate::ingest::delimited::{Delimiters, Records};

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ]))
    }

    /// The batch made from `text` (tab-separated lines) into `rows`.
    fn load(rows: &mut TextRows, text: &[u8]) -> Result<Option<RecordBatch>> {
        let mut records = Records::new(Delimiters::default());
        let mut fields = Fields::default();
        records.push(text);
        records.end();
        while records.next(&mut fields)? {
            rows.push(&fields, records.line())?;
        }
        rows.finish()
    }

    #[test]
    fn fields_become_typed_columns_in_the_order_named() {
        let mut rows = TextRows::new(
            schema(),
            &[Some("NAME".into()), None, Some("id".into())],
            false,
        )
        .unwrap();
        let batch = load(&mut rows, b"a\tskip\t1\n\\N\tskip\t2\n")
            .unwrap()
            .unwrap();
        let ids = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let names = batch
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!(ids.values(), &[1, 2]);
        assert_eq!((names.value(0), names.is_null(1)), ("a", true));
    }

    #[test]
    fn bad_values_name_their_line_and_column_or_are_skipped_and_counted() {
        let text = b"1\ta\nx\tb\n\\N\tc\n4\n5\te\tf\n6\tg\n";
        let mut strict = TextRows::new(schema(), &[], false).unwrap();
        let e = load(&mut strict, b"1\ta\n2\tb\n4\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Row 3 doesn't contain data for all columns"),
            "{e}"
        );

        // The first bad line is the one reported, though values are read a batch at a time.
        let mut strict = TextRows::new(schema(), &[], false).unwrap();
        let e = load(&mut strict, text).unwrap_err().to_string();
        assert!(
            e.contains("Incorrect bigint value: 'x' for column 'id' at line 2"),
            "{e}"
        );

        let mut strict = TextRows::new(schema(), &[], false).unwrap();
        let e = load(&mut strict, b"\\N\tc\n").unwrap_err().to_string();
        assert!(
            e.contains("Column 'id' cannot be null (NOT NULL) at line 1"),
            "{e}"
        );

        let mut lenient = TextRows::new(schema(), &[], true).unwrap();
        let batch = load(&mut lenient, text).unwrap().unwrap();
        let ids = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(ids.values(), &[1, 6]);
        assert_eq!(lenient.skipped(), 4);
    }

    #[test]
    fn columns_the_table_lacks_or_needs_are_refused_before_any_row() {
        let e = TextRows::new(schema(), &[Some("nope".into())], false).unwrap_err();
        assert!(
            e.to_string()
                .contains("Unknown column 'nope' in 'field list'"),
            "{e}"
        );
        let e = TextRows::new(schema(), &[Some("name".into())], false).unwrap_err();
        assert!(
            e.to_string()
                .contains("Field 'id' doesn't have a default value"),
            "{e}"
        );
        let e =
            TextRows::new(schema(), &[Some("id".into()), Some("ID".into())], false).unwrap_err();
        assert!(e.to_string().contains("Column 'ID' specified twice"), "{e}");
    }
}
