//! A v3 `variant` column of an attached table, read as its values' JSON text: Parquet holds a
//! variant as a group of `metadata` and `value` bytes, and, shredded, `typed_value` columns
//! for the paths a writer chose, which arrow-rs's variant crates reassemble
//! ([`VariantArray`]). MySQL clients see JSON text, as they see MySQL's own JSON columns;
//! predicates compare it as a string.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::PhysicalExpr;
use parquet_variant_compute::{VariantArray, unshred_variant};
use parquet_variant_json::VariantToJson;

/// The JSON text of the variant group `child` evaluates to; null where the variant is null.
#[derive(Debug, Eq)]
pub struct VariantJson {
    child: Arc<dyn PhysicalExpr>,
}

impl VariantJson {
    pub fn new(child: Arc<dyn PhysicalExpr>) -> Self {
        Self { child }
    }
}

impl PartialEq for VariantJson {
    fn eq(&self, other: &Self) -> bool {
        self.child.eq(&other.child)
    }
}

impl Hash for VariantJson {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.child.hash(state);
    }
}

impl fmt::Display for VariantJson {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "variant_json({})", self.child)
    }
}

/// The JSON text of each variant in `groups`. Shredded values are put back together first:
/// read in place, a shredded object's value is not supported by arrow-rs 59 (a debug
/// assertion, and in a release build a null, not an error).
pub fn variant_json(groups: &dyn Array) -> Result<ArrayRef> {
    let variants = unshred_variant(&VariantArray::try_new(groups)?)?;
    let mut json = StringBuilder::with_capacity(variants.len(), variants.len() * 32);
    for i in 0..variants.len() {
        if variants.is_null(i) {
            json.append_null();
        } else {
            json.append_value(variants.try_value(i)?.to_json_string()?);
        }
    }
    Ok(Arc::new(json.finish()))
}

impl PhysicalExpr for VariantJson {
    fn return_field(&self, input: &Schema) -> Result<FieldRef> {
        let name = self.child.return_field(input)?.name().clone();
        Ok(Arc::new(Field::new(name, DataType::Utf8, true)))
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        let groups = self.child.evaluate(batch)?.into_array(batch.num_rows())?;
        Ok(ColumnarValue::Array(variant_json(&groups)?))
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![&self.child]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        match children.len() {
            1 => Ok(Arc::new(Self::new(children.swap_remove(0)))),
            n => Err(DataFusionError::Internal(format!(
                "variant_json takes one child, not {n}"
            ))),
        }
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "variant_json(")?;
        self.child.fmt_sql(f)?;
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{AsArray, StringArray};
    use parquet_variant_compute::json_to_variant;

    use super::*;

    #[test]
    fn variants_read_back_as_compact_json_and_nulls_stay_null() {
        let texts = [
            Some(r#"{"b": "x", "a": [1, 2.5, null]}"#),
            None,
            Some("null"),
            Some(r#""text""#),
        ];
        let input: ArrayRef = Arc::new(StringArray::from(texts.to_vec()));
        let groups = json_to_variant(&input).unwrap().into_inner();
        let json = variant_json(&groups).unwrap();
        let json = json.as_string::<i32>();
        let read: Vec<Option<&str>> = json.iter().collect();
        assert_eq!(
            read,
            [
                Some(r#"{"a":[1,2.5,null],"b":"x"}"#),
                None,
                Some("null"),
                Some(r#""text""#)
            ]
        );
        // Not a variant group: an error, not a panic.
        assert!(variant_json(&input).is_err());
    }
}
