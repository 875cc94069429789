//! Columns of an Iceberg table's data files found by field id, as the spec requires ("Column
//! Projection"): a file written before a rename holds the column under its old name, and a
//! file written before a column was dropped and another added under its name holds a column of
//! that name that is not the table's. DataFusion's Parquet scan pairs columns by name, so each
//! file's columns are paired here first, by the `PARQUET:field_id` both the table's Arrow
//! schema ([`sieve_iceberg::TableScan::schema`]) and Iceberg's Parquet files carry, and
//! DataFusion's own adapter does the rest (casts of promoted types, nulls for a column the file
//! lacks). A column the file lacks that was added with an `initial-default` reads as that
//! value instead ([`sieve_iceberg::initial_default`]), in projections and predicates alike, so
//! statistics never prune such a file as if the column were null.
//!
//! A file without field ids (one a migration added) is paired by its column names, through the
//! table's name mapping or its stable names ([`sieve_iceberg::FileNames`]), or refused.
//!
//! A `variant` column, JSON text to the table, is the file's variant group: read as the group
//! and turned into JSON ([`VariantJson`]) before anything above the scan sees it.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::expressions::Literal;
use datafusion::physical_expr_adapter::{
    DefaultPhysicalExprAdapterFactory, PhysicalExprAdapter, PhysicalExprAdapterFactory,
};
use sieve_iceberg::{FileNames, field_id, initial_default, is_variant};

use super::variant_json::VariantJson;

/// Where a data file holds the table's column with field id `id`: None when the file has no
/// such column (written before it was added: its values are null, or the column's initial
/// default). A file without field ids is read through `names`.
pub fn column_in_file(file: &Schema, id: i32, names: &FileNames) -> Result<Option<usize>> {
    if file.fields().iter().any(|f| field_id(f).is_some()) {
        return Ok(file.fields().iter().position(|f| field_id(f) == Some(id)));
    }
    for (at, field) in file.fields().iter().enumerate() {
        let named = names.field_id(field.name());
        let named = named.map_err(|why| DataFusionError::NotImplemented(why.to_string()))?;
        if named == Some(id) {
            return Ok(Some(at));
        }
    }
    Ok(None)
}

/// The value a table column added with an `initial-default` has in files written before it
/// ([`sieve_iceberg::initial_default`]); None for a column without one (its value is null).
pub fn initial_value(field: &Field) -> Result<Option<ScalarValue>> {
    (initial_default(field).map(|default| ScalarValue::try_from_array(&default, 0))).transpose()
}

/// Pairs each file's columns with the table's by field id before DataFusion's adapter runs.
#[derive(Debug)]
pub struct ByFieldId {
    pub file_names: Arc<FileNames>,
}

impl PhysicalExprAdapterFactory for ByFieldId {
    fn create(
        &self,
        logical: SchemaRef,
        physical: SchemaRef,
    ) -> Result<Arc<dyn PhysicalExprAdapter>> {
        // Each table column is renamed to the file's name for its field id, or, when the file
        // lacks it, to a name no file column has, so that a column of the same name but
        // another id is never read in its place.
        let mut renamed = HashMap::new();
        let mut defaults = HashMap::new();
        let mut variants = Vec::new();
        let fields = (logical.fields().iter())
            .map(|field| {
                let id = field_id(field).unwrap_or(-1);
                let in_file = column_in_file(&physical, id, &self.file_names)?;
                let name = match in_file {
                    Some(i) => physical.field(i).name().clone(),
                    None => format!("{}\u{0}field {id} not in this file", field.name()),
                };
                if in_file.is_none()
                    && let Some(value) = initial_value(field)?
                {
                    defaults.insert(field.name().clone(), value);
                }
                if &name != field.name() {
                    renamed.insert(field.name().clone(), name.clone());
                }
                // DataFusion's adapter reads a variant as the file's group, uncast (a field that
                // differs in as much as its metadata would be cast).
                if let Some(i) = in_file.filter(|_| is_variant(field)) {
                    variants.push(name);
                    return Ok(physical.field(i).as_ref().clone());
                }
                Ok(field.as_ref().clone().with_name(name))
            })
            .collect::<Result<Vec<_>>>()?;
        let logical = Arc::new(Schema::new_with_metadata(
            fields,
            logical.metadata().clone(),
        ));
        Ok(Arc::new(Renaming {
            renamed,
            defaults,
            variants,
            inner: DefaultPhysicalExprAdapterFactory.create(logical, physical)?,
        }))
    }
}

#[derive(Debug)]
struct Renaming {
    /// Table column name → the name the file's column of the same field id has.
    renamed: HashMap<String, String>,
    /// Table column name → its initial default, for the columns the file lacks that have one.
    defaults: HashMap<String, ScalarValue>,
    /// The file's names of the variant columns it holds.
    variants: Vec<String>,
    inner: Arc<dyn PhysicalExprAdapter>,
}

impl PhysicalExprAdapter for Renaming {
    fn rewrite(&self, expr: Arc<dyn PhysicalExpr>) -> Result<Arc<dyn PhysicalExpr>> {
        let expr = if self.renamed.is_empty() {
            expr
        } else {
            expr.transform(|e| {
                let Some(column) = e.downcast_ref::<Column>() else {
                    return Ok(Transformed::no(e));
                };
                if let Some(value) = self.defaults.get(column.name()) {
                    return Ok(Transformed::yes(Arc::new(Literal::new(value.clone()))));
                }
                Ok(match self.renamed.get(column.name()) {
                    Some(name) => Transformed::yes(Arc::new(Column::new(name, column.index()))),
                    None => Transformed::no(e),
                })
            })
            .data()?
        };
        let expr = self.inner.rewrite(expr)?;
        if self.variants.is_empty() {
            return Ok(expr);
        }
        expr.transform(|e| {
            Ok(match e.downcast_ref::<Column>() {
                Some(c) if self.variants.contains(&c.name().to_string()) => {
                    Transformed::yes(Arc::new(VariantJson::new(e)))
                }
                _ => Transformed::no(e),
            })
        })
        .data()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{DataType, Field};
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::expressions::{BinaryExpr, lit};

    use super::*;

    fn field(name: &str, id: Option<i32>) -> Field {
        let field = Field::new(name, DataType::Int64, true);
        match id {
            Some(id) => {
                field.with_metadata([("PARQUET:field_id".to_string(), id.to_string())].into())
            }
            None => field,
        }
    }

    fn schema(fields: &[(&str, Option<i32>)]) -> SchemaRef {
        Arc::new(Schema::new(
            fields
                .iter()
                .map(|(n, id)| field(n, *id))
                .collect::<Vec<_>>(),
        ))
    }

    fn rewritten(expr: &dyn PhysicalExpr) -> String {
        format!("{expr}")
    }

    /// The table's `b` (id 2) is the file's `a`; the table's `c` (id 3) is not in the file,
    /// whose `c` is another field (id 9): it reads as null, never as the file's `c`.
    #[test]
    fn columns_are_paired_by_field_id_not_by_name() {
        let table = schema(&[("b", Some(2)), ("c", Some(3))]);
        let file = schema(&[("a", Some(2)), ("c", Some(9))]);
        let adapter = ByFieldId {
            file_names: refused(),
        }
        .create(table.clone(), file.clone())
        .unwrap();
        let b_eq_1 = Arc::new(BinaryExpr::new(
            Arc::new(Column::new("b", 0)),
            Operator::Eq,
            lit(1i64),
        ));
        assert_eq!(
            rewritten(adapter.rewrite(b_eq_1).unwrap().as_ref()),
            "a@0 = 1"
        );
        let c = adapter.rewrite(Arc::new(Column::new("c", 1))).unwrap();
        assert_eq!(rewritten(c.as_ref()), "NULL");
    }

    fn refused() -> Arc<FileNames> {
        Arc::new(FileNames::Refused("no name mapping".into()))
    }

    /// A file without field ids is read by the names its table pairs with ids (a name
    /// mapping, or stable names), and refused when there are none.
    #[test]
    fn a_file_without_field_ids_is_read_by_its_tables_names() {
        let table = schema(&[("b", Some(2)), ("c", Some(3))]);
        // The file's `a` is what the mapping calls field 2 (the table's `b` now).
        let file = schema(&[("a", None), ("c", None)]);
        let names = [
            ("a".to_string(), 2),
            ("b".to_string(), 2),
            ("c".to_string(), 3),
        ];
        let file_names = Arc::new(FileNames::Mapped(names.into_iter().collect()));
        let adapter = ByFieldId { file_names }
            .create(table.clone(), file.clone())
            .unwrap();
        // Read as the file's column (cast to the table's field, whose metadata differs).
        let b = adapter.rewrite(Arc::new(Column::new("b", 0))).unwrap();
        assert_eq!(rewritten(b.as_ref()), "CAST(a@0 AS Int64)");
        let c = adapter.rewrite(Arc::new(Column::new("c", 1))).unwrap();
        assert_eq!(rewritten(c.as_ref()), "CAST(c@1 AS Int64)");
        let refused = ByFieldId {
            file_names: refused(),
        }
        .create(table, file)
        .unwrap_err();
        assert!(refused.to_string().contains("name mapping"), "{refused}");
    }
}
