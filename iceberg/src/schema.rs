//! Iceberg schemas (spec: "Schemas and Data Types") as Arrow schemas. Each Arrow field carries
//! its Iceberg field id as `PARQUET:field_id`, as Iceberg's Parquet files do.
//!
//! Sieve's Parquet scan reads columns by name. That is exact only while a field id and its name
//! stay paired in every schema the table had: a rename, or a column dropped and another added
//! under its name, would read the wrong column or none. Such tables are refused (see
//! [`Schema::check_names_stable`]) until reads go by field id.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field as ArrowField, Schema as ArrowSchema, TimeUnit};
use serde::Deserialize;

use crate::error::{IcebergError, Result};

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Schema {
    pub schema_id: Option<i32>,
    pub fields: Vec<Field>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Field {
    pub id: i32,
    pub name: String,
    pub required: bool,
    /// A primitive's name (`long`, `decimal(9,2)`, …) or a nested type's object.
    #[serde(rename = "type")]
    pub kind: serde_json::Value,
}

impl Schema {
    /// The Arrow schema rows are read as; `table` names the table in errors.
    pub fn to_arrow(&self, table: &str) -> Result<Arc<ArrowSchema>> {
        let fields =
            self.fields
                .iter()
                .map(|field| {
                    let kind = field.kind.as_str().ok_or_else(|| {
                        IcebergError::Unsupported(
                            table.to_string(),
                            format!(
                                "column {} is nested (struct, list or map), not read yet",
                                field.name
                            ),
                        )
                    })?;
                    let data_type = primitive(kind).ok_or_else(|| {
                        IcebergError::Unsupported(
                            table.to_string(),
                            format!("column {} has type {kind}, not read yet", field.name),
                        )
                    })?;
                    let metadata =
                        HashMap::from([("PARQUET:field_id".to_string(), field.id.to_string())]);
                    Ok(ArrowField::new(&field.name, data_type, !field.required)
                        .with_metadata(metadata))
                })
                .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(ArrowSchema::new(fields)))
    }

    /// Refuses a table whose schemas paired a field id with another name, or a name with
    /// another id, than `self` does: files written under them would be read by the wrong name.
    pub fn check_names_stable<'a>(
        &self,
        table: &str,
        others: impl Iterator<Item = &'a Schema>,
    ) -> Result<()> {
        for other in others {
            for old in &other.fields {
                for now in &self.fields {
                    if (old.id == now.id) != (old.name == now.name) {
                        return Err(IcebergError::Unsupported(
                            table.to_string(),
                            format!(
                                "column {} (field id {}) was once {} (field id {}): renamed or \
                                 replaced columns are not read yet",
                                now.name, now.id, old.name, old.id
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The Arrow type of an Iceberg primitive, as Iceberg's Arrow readers map them.
fn primitive(kind: &str) -> Option<DataType> {
    let utc = || Some(Arc::from("UTC"));
    Some(match kind {
        "boolean" => DataType::Boolean,
        "int" => DataType::Int32,
        "long" => DataType::Int64,
        "float" => DataType::Float32,
        "double" => DataType::Float64,
        "date" => DataType::Date32,
        "time" => DataType::Time64(TimeUnit::Microsecond),
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "timestamptz" => DataType::Timestamp(TimeUnit::Microsecond, utc()),
        "timestamp_ns" => DataType::Timestamp(TimeUnit::Nanosecond, None),
        "timestamptz_ns" => DataType::Timestamp(TimeUnit::Nanosecond, utc()),
        "string" => DataType::Utf8,
        "uuid" => DataType::FixedSizeBinary(16),
        "binary" => DataType::Binary,
        other => {
            if let Some(length) = other
                .strip_prefix("fixed[")
                .and_then(|s| s.strip_suffix(']'))
            {
                DataType::FixedSizeBinary(length.trim().parse().ok()?)
            } else if let Some(ps) = other
                .strip_prefix("decimal(")
                .and_then(|s| s.strip_suffix(')'))
            {
                let (p, s) = ps.split_once(',')?;
                DataType::Decimal128(p.trim().parse().ok()?, s.trim().parse().ok()?)
            } else {
                return None;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(json: &str) -> Schema {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn primitives_map_to_arrow_and_nested_types_are_refused() {
        let s = schema(
            r#"{"type":"struct","schema-id":0,"fields":[
              {"id":1,"name":"id","required":true,"type":"long"},
              {"id":2,"name":"price","required":false,"type":"decimal(9, 2)"},
              {"id":3,"name":"at","required":false,"type":"timestamptz"},
              {"id":4,"name":"h","required":false,"type":"fixed[4]"}]}"#,
        );
        let arrow = s.to_arrow("t").unwrap();
        assert_eq!(arrow.field(0).data_type(), &DataType::Int64);
        assert!(!arrow.field(0).is_nullable());
        assert_eq!(arrow.field(0).metadata()["PARQUET:field_id"], "1");
        assert_eq!(arrow.field(1).data_type(), &DataType::Decimal128(9, 2));
        assert_eq!(
            arrow.field(2).data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
        assert_eq!(arrow.field(3).data_type(), &DataType::FixedSizeBinary(4));
        let nested = schema(
            r#"{"type":"struct","fields":[{"id":1,"name":"tags","required":false,
                "type":{"type":"list","element-id":2,"element":"string","element-required":false}}]}"#,
        );
        let e = nested.to_arrow("t").unwrap_err().to_string();
        assert!(e.contains("tags") && e.contains("nested"), "{e}");
    }

    #[test]
    fn renamed_or_replaced_columns_are_refused() {
        let now = schema(r#"{"fields":[{"id":1,"name":"a","required":true,"type":"long"}]}"#);
        let same = schema(r#"{"fields":[{"id":1,"name":"a","required":true,"type":"int"}]}"#);
        let renamed = schema(r#"{"fields":[{"id":1,"name":"b","required":true,"type":"long"}]}"#);
        let replaced = schema(r#"{"fields":[{"id":7,"name":"a","required":true,"type":"long"}]}"#);
        assert!(now.check_names_stable("t", [&same].into_iter()).is_ok());
        assert!(now.check_names_stable("t", [&renamed].into_iter()).is_err());
        assert!(
            now.check_names_stable("t", [&replaced].into_iter())
                .is_err()
        );
    }
}
