//! Iceberg schemas (spec: "Schemas and Data Types") as Arrow schemas. Each Arrow field carries
//! its Iceberg field id as `PARQUET:field_id`, as Iceberg's Parquet files do.
//!
//! Sieve's scan pairs a data file's columns with the table's by these ids (the engine's
//! `iceberg::field_ids`), so renamed and replaced columns read as the spec says. Only a file
//! without field ids falls back to names: the table's name mapping's, else the current schema's
//! while every schema the table had paired each name with one id (name_mapping.rs).
//!
//! A column added with an `initial-default` (v3; PyIceberg writes it into v2 tables too) reads
//! as that value, not null, in the files written before it was added. The default rides in the
//! Arrow field's metadata as the spec's JSON single-value serialization ([`initial_default`]).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, FixedSizeBinaryArray, StringArray};
use arrow_cast::{CastOptions, cast_with_options};
use arrow_schema::{DataType, Field as ArrowField, FieldRef, Schema as ArrowSchema, TimeUnit};
use serde::Deserialize;

use crate::error::{IcebergError, Result};

/// Where Iceberg's Parquet files, and the Arrow schemas made here, keep a column's field id.
const FIELD_ID: &str = "PARQUET:field_id";

/// The Iceberg field id of an Arrow field.
pub fn field_id(field: &ArrowField) -> Option<i32> {
    field.metadata().get(FIELD_ID)?.parse().ok()
}

/// Where the Arrow schemas made here keep a column's `initial-default`, as JSON.
const INITIAL_DEFAULT: &str = "iceberg:initial-default";

/// The value a column added with an `initial-default` has in the files written before it was
/// added, as an array of one row of the field's type; None for a column without one (null).
pub fn initial_default(field: &ArrowField) -> Option<ArrayRef> {
    let json = serde_json::from_str(field.metadata().get(INITIAL_DEFAULT)?).ok()?;
    decode_default(&json, field.data_type())
}

/// The spec's JSON single-value serialization (Appendix C) of a value of type `to`: numbers and
/// booleans as JSON's; binary and fixed values as hexadecimal strings, a uuid as its canonical
/// string; other types as strings in the forms Arrow's casts from strings read (`2017-11-16`,
/// `22:31:08.123456`, `2017-11-16T22:31:08.123456[+00:00]`, `14.20`).
fn decode_default(json: &serde_json::Value, to: &DataType) -> Option<ArrayRef> {
    let text = match json {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    match to {
        DataType::Binary => {
            let bytes = hex::decode(&text).ok()?;
            Some(Arc::new(BinaryArray::from_vec(vec![&bytes])))
        }
        DataType::FixedSizeBinary(size) => {
            let bytes = match uuid::Uuid::try_parse(&text) {
                Ok(uuid) if text.contains('-') => uuid.as_bytes().to_vec(),
                _ => hex::decode(&text).ok()?,
            };
            (bytes.len() == usize::try_from(*size).ok()?).then_some(())?;
            let array = FixedSizeBinaryArray::try_from_iter(std::iter::once(bytes)).ok()?;
            Some(Arc::new(array))
        }
        _ => {
            let strings: ArrayRef = Arc::new(StringArray::from(vec![text]));
            let strict = CastOptions {
                safe: false,
                ..CastOptions::default()
            };
            cast_with_options(&strings, to, &strict).ok()
        }
    }
}

/// The field of `schema` with field id `id`.
pub fn field_with_id(schema: &ArrowSchema, id: i32) -> Option<&FieldRef> {
    schema.fields().iter().find(|f| field_id(f) == Some(id))
}

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
    /// v3: the value rows of files written before the column was added read as (instead of
    /// null); [`initial_default`].
    #[serde(rename = "initial-default")]
    pub initial_default: Option<serde_json::Value>,
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
                    let mut metadata =
                        HashMap::from([(FIELD_ID.to_string(), field.id.to_string())]);
                    if let Some(default) = &field.initial_default {
                        if decode_default(default, &data_type).is_none() {
                            return Err(IcebergError::Unsupported(
                                table.to_string(),
                                format!(
                                    "column {} has an initial-default Sieve does not read yet \
                                     ({default} as {kind})",
                                    field.name
                                ),
                            ));
                        }
                        metadata.insert(INITIAL_DEFAULT.to_string(), default.to_string());
                    }
                    Ok(ArrowField::new(&field.name, data_type, !field.required)
                        .with_metadata(metadata))
                })
                .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(ArrowSchema::new(fields)))
    }

    /// Each top-level column's id, by its name.
    pub fn field_ids_by_name(&self) -> HashMap<String, i32> {
        (self.fields.iter())
            .map(|f| (f.name.clone(), f.id))
            .collect()
    }

    /// Whether every schema in `others` paired each field id with the name `self` gives it, and
    /// each name with the same id: then a data file's columns can be found by name.
    pub fn names_stable<'a>(&self, mut others: impl Iterator<Item = &'a Schema>) -> bool {
        others.all(|other| {
            (other.fields.iter()).all(|old| {
                (self.fields.iter()).all(|now| (old.id == now.id) == (old.name == now.name))
            })
        })
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
    fn initial_defaults_are_read_in_the_columns_type() {
        let s = schema(
            r#"{"fields":[
              {"id":1,"name":"c","required":false,"type":"long","initial-default":7},
              {"id":2,"name":"d","required":false,"type":"date","initial-default":"2024-01-02"},
              {"id":3,"name":"p","required":false,"type":"decimal(9, 2)","initial-default":"14.20"},
              {"id":4,"name":"t","required":false,"type":"timestamp",
               "initial-default":"2024-01-02T03:04:05.000006"},
              {"id":5,"name":"b","required":false,"type":"boolean","initial-default":true},
              {"id":6,"name":"n","required":false,"type":"string"}]}"#,
        );
        let arrow = s.to_arrow("t").unwrap();
        let shown: Vec<String> = (arrow.fields().iter())
            .map(|f| match initial_default(f) {
                Some(a) => arrow_cast::display::array_value_to_string(&a, 0).unwrap(),
                None => "null".into(),
            })
            .collect();
        assert_eq!(
            shown,
            [
                "7",
                "2024-01-02",
                "14.20",
                "2024-01-02T03:04:05.000006",
                "true",
                "null"
            ]
        );
        let bytes = schema(
            r#"{"fields":[
              {"id":1,"name":"u","required":false,"type":"uuid",
               "initial-default":"f79c3e09-677c-4bbd-a479-3f349cb785e7"},
              {"id":2,"name":"f","required":false,"type":"fixed[2]","initial-default":"00ff"},
              {"id":3,"name":"b","required":false,"type":"binary","initial-default":"0A0B0C"}]}"#,
        );
        let arrow = bytes.to_arrow("t").unwrap();
        let shown: Vec<String> = (arrow.fields().iter())
            .map(|f| arrow_cast::display::array_value_to_string(&initial_default(f).unwrap(), 0))
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert_eq!(
            shown,
            ["f79c3e09677c4bbda4793f349cb785e7", "00ff", "0a0b0c"]
        );
        let short = schema(
            r#"{"fields":[{"id":1,"name":"f","required":false,"type":"fixed[4]",
                "initial-default":"00ff"}]}"#,
        );
        let e = short.to_arrow("t").unwrap_err().to_string();
        assert!(
            e.contains("initial-default") && e.contains("fixed[4]"),
            "{e}"
        );
        let wrong = schema(
            r#"{"fields":[{"id":1,"name":"c","required":false,"type":"long","initial-default":"x"}]}"#,
        );
        assert!(wrong.to_arrow("t").is_err());
    }

    #[test]
    fn renamed_or_replaced_columns_leave_names_unstable() {
        let now = schema(r#"{"fields":[{"id":1,"name":"a","required":true,"type":"long"}]}"#);
        let same = schema(r#"{"fields":[{"id":1,"name":"a","required":true,"type":"int"}]}"#);
        let renamed = schema(r#"{"fields":[{"id":1,"name":"b","required":true,"type":"long"}]}"#);
        let replaced = schema(r#"{"fields":[{"id":7,"name":"a","required":true,"type":"long"}]}"#);
        assert!(now.names_stable([&same].into_iter()));
        assert!(!now.names_stable([&renamed].into_iter()));
        assert!(!now.names_stable([&replaced].into_iter()));
    }
}
