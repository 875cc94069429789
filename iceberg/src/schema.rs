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

/// Where the Arrow schemas made here mark a v3 `variant` column.
const VARIANT: &str = "iceberg:variant";

/// Whether the table column `field` is a v3 `variant`: typed here as its values' JSON text,
/// while a data file holds it as Parquet's variant group (metadata, value and, shredded,
/// typed_value), which a reader converts.
pub fn is_variant(field: &ArrowField) -> bool {
    field.metadata().contains_key(VARIANT)
}

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
                    // A variant is read at the top level only: as JSON text, it has no nested
                    // fields to pair.
                    let variant = field.kind.as_str() == Some("variant");
                    let data_type = match variant {
                        true => Ok(DataType::Utf8),
                        false => arrow_type(&field.kind),
                    };
                    let data_type = data_type.map_err(|why| {
                        IcebergError::Unsupported(
                            table.to_string(),
                            format!("column {}: {why}", field.name),
                        )
                    })?;
                    let kind = &field.kind;
                    let mut metadata =
                        HashMap::from([(FIELD_ID.to_string(), field.id.to_string())]);
                    if variant {
                        metadata.insert(VARIANT.to_string(), String::new());
                    }
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

    /// Every nested field: (its id, its parent's id, its name).
    fn nested(&self) -> Vec<(i64, i64, String)> {
        let mut out = Vec::new();
        for field in &self.fields {
            nested_fields(field.id.into(), &field.kind, &mut |id, parent, name, _| {
                out.push((id, parent, name.to_string()))
            });
        }
        out
    }

    /// The ids of its `geometry`, `geography` and `variant` fields (v3), at any depth: what
    /// manifests give as their bounds is a bounding box, or a variant of bounds per path
    /// (spec: "Bound serialization"), not the least and greatest of their values' bytes, so no
    /// pruning may read it as min/max.
    pub fn ids_without_min_max(&self) -> Vec<i32> {
        let mut out = Vec::new();
        let mut check = |id: i64, kind: Option<&serde_json::Value>| {
            if kind
                .and_then(serde_json::Value::as_str)
                .is_some_and(|kind| geospatial(kind) || kind == "variant")
            {
                out.extend(i32::try_from(id).ok());
            }
        };
        for field in &self.fields {
            check(field.id.into(), Some(&field.kind));
            nested_fields(field.id.into(), &field.kind, &mut |id, _, _, kind| {
                check(id, kind)
            });
        }
        out
    }

    /// Whether every schema in `others` gave each of `self`'s nested fields the name and parent
    /// it has now, and each (parent, name) the same id: then nested fields, which a scan pairs
    /// by name below their column, read as the spec says. Else the field that moved.
    pub fn nested_names_stable<'a>(
        &self,
        others: impl Iterator<Item = &'a Schema>,
    ) -> std::result::Result<(), String> {
        let now = self.nested();
        for other in others {
            for (id, parent, name) in other.nested() {
                let moved =
                    (now.iter()).any(|(i, p, n)| (*i == id) != (*p == parent && *n == name));
                if moved {
                    return Err(format!(
                        "nested field {name} (field id {id}) was renamed, moved or replaced \
                         since some of its files were written, not read yet"
                    ));
                }
            }
        }
        Ok(())
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

/// The Arrow type of an Iceberg type: a primitive's name, or a struct, list or map, whose
/// fields carry their ids as top-level columns do. A list's element is named `element` and a
/// map's entries `key_value` of `key` and `value`: the names Iceberg's Parquet writers give
/// them, so a file's nested columns read as the table's. Nested fields are paired by name
/// below their column (which is paired by id), so a table whose nested fields were renamed or
/// replaced is refused ([`Schema::nested_names_stable`]), as is a nested field with an
/// `initial-default`.
fn arrow_type(kind: &serde_json::Value) -> std::result::Result<DataType, String> {
    let unread = || format!("type {kind} is not read yet");
    if let Some(name) = kind.as_str() {
        return primitive(name).ok_or_else(unread);
    }
    let id_of = |key: &str| {
        kind.get(key)
            .and_then(serde_json::Value::as_i64)
            .ok_or_else(unread)
    };
    let type_of = |key: &str| kind.get(key).ok_or_else(unread);
    let required = |key: &str| {
        kind.get(key)
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false)
    };
    match kind.get("type").and_then(serde_json::Value::as_str) {
        Some("struct") => {
            let fields: Vec<Field> = (kind.get("fields").cloned())
                .and_then(|f| serde_json::from_value(f).ok())
                .ok_or_else(unread)?;
            let fields = (fields.iter())
                .map(|f| match &f.initial_default {
                    Some(_) => Err(format!(
                        "nested field {} has an initial-default, not read yet",
                        f.name
                    )),
                    None => with_id(&f.name, f.id.into(), &f.kind, f.required),
                })
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(DataType::Struct(fields.into()))
        }
        Some("list") => {
            let element = type_of("element")?;
            let element = with_id(
                "element",
                id_of("element-id")?,
                element,
                required("element-required"),
            )?;
            Ok(DataType::List(Arc::new(element)))
        }
        Some("map") => {
            let key = with_id("key", id_of("key-id")?, type_of("key")?, true)?;
            let value = type_of("value")?;
            let value = with_id(
                "value",
                id_of("value-id")?,
                value,
                required("value-required"),
            )?;
            let entries = DataType::Struct(vec![key, value].into());
            Ok(DataType::Map(
                Arc::new(ArrowField::new("key_value", entries, false)),
                false,
            ))
        }
        _ => Err(unread()),
    }
}

/// A nested field as Arrow has it: its id in its metadata, as Parquet's reader gives it.
fn with_id(
    name: &str,
    id: i64,
    kind: &serde_json::Value,
    required: bool,
) -> std::result::Result<ArrowField, String> {
    let metadata = HashMap::from([(FIELD_ID.to_string(), id.to_string())]);
    Ok(ArrowField::new(name, arrow_type(kind)?, !required).with_metadata(metadata))
}

/// Each nested field of the nested types `kind` holds (under the field of id `parent`), given
/// to `visit` as its id, its parent's id, its name and its type.
fn nested_fields(
    parent: i64,
    kind: &serde_json::Value,
    visit: &mut impl FnMut(i64, i64, &str, Option<&serde_json::Value>),
) {
    let Some(kind) = kind.as_object() else {
        return;
    };
    let mut child = |id: Option<i64>, name: &str, kind: Option<&serde_json::Value>| {
        if let Some(id) = id {
            visit(id, parent, name, kind);
            if let Some(kind) = kind {
                nested_fields(id, kind, visit);
            }
        }
    };
    let id = |key: &str| kind.get(key).and_then(serde_json::Value::as_i64);
    match kind.get("type").and_then(serde_json::Value::as_str) {
        Some("struct") => {
            let fields = kind.get("fields").and_then(serde_json::Value::as_array);
            for field in fields.into_iter().flatten() {
                let name = field.get("name").and_then(serde_json::Value::as_str);
                child(
                    field.get("id").and_then(serde_json::Value::as_i64),
                    name.unwrap_or(""),
                    field.get("type"),
                );
            }
        }
        Some("list") => child(id("element-id"), "element", kind.get("element")),
        Some("map") => {
            child(id("key-id"), "key", kind.get("key"));
            child(id("value-id"), "value", kind.get("value"));
        }
        _ => {}
    }
}

/// Whether `kind` is v3's `geometry` or `geography`, with or without its parameters
/// (`geometry(EPSG:4326)`, `geography(OGC:CRS84, karney)`).
fn geospatial(kind: &str) -> bool {
    ["geometry", "geography"].iter().any(|name| {
        kind.strip_prefix(name)
            .is_some_and(|rest| rest.is_empty() || (rest.starts_with('(') && rest.ends_with(')')))
    })
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
        // v3: a column whose type is not known yet; every value is null, and no file holds it.
        "unknown" => DataType::Null,
        // v3: a shape as WKB (Parquet's GEOMETRY and GEOGRAPHY annotate a BYTE_ARRAY), read as
        // its bytes; the CRS and edge interpolation in the type's parameters are the client's.
        other if geospatial(other) => DataType::Binary,
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
    fn primitives_map_to_arrow() {
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
        let v3 = schema(
            r#"{"fields":[{"id":1,"name":"at","required":false,"type":"timestamptz_ns"},
              {"id":2,"name":"u","required":false,"type":"unknown"}]}"#,
        );
        let arrow = v3.to_arrow("t").unwrap();
        assert_eq!(
            arrow.field(0).data_type(),
            &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
        );
        assert_eq!(arrow.field(1).data_type(), &DataType::Null);
    }

    /// Geometries and geographies read as their WKB bytes, and their bounds (bounding boxes)
    /// are known to be no min/max, at any depth.
    #[test]
    fn geospatial_columns_read_as_wkb_and_are_found_at_any_depth() {
        let s = schema(
            r#"{"fields":[{"id":1,"name":"id","required":true,"type":"long"},
              {"id":2,"name":"g","required":false,"type":"geometry"},
              {"id":3,"name":"h","required":false,"type":"geography(OGC:CRS84, karney)"},
              {"id":4,"name":"s","required":false,"type":{"type":"struct","fields":[
                {"id":5,"name":"at","required":false,"type":"geometry(EPSG:4326)"},
                {"id":6,"name":"b","required":false,"type":"binary"}]}},
              {"id":7,"name":"l","required":false,"type":{"type":"list","element-id":8,
                "element":"geography","element-required":false}},
              {"id":9,"name":"x","required":false,"type":"geometryish"}]}"#,
        );
        assert_eq!(s.ids_without_min_max(), vec![2, 3, 5, 8]);
        let e = s.to_arrow("t").unwrap_err().to_string();
        assert!(e.contains("column x: type \"geometryish\""), "{e}");
        let s = Schema {
            fields: s.fields[..5].to_vec(),
            ..s
        };
        let arrow = s.to_arrow("t").unwrap();
        assert_eq!(arrow.field(1).data_type(), &DataType::Binary);
        assert_eq!(arrow.field(2).data_type(), &DataType::Binary);
        let DataType::Struct(inner) = arrow.field(3).data_type() else {
            panic!("a struct: {arrow:?}")
        };
        assert_eq!(inner[0].data_type(), &DataType::Binary);
    }

    /// Nested types as Iceberg's Parquet writers name their parts, each field with its id.
    #[test]
    fn nested_types_map_to_arrow_with_their_ids() {
        let nested = schema(
            r#"{"type":"struct","fields":[
              {"id":1,"name":"tags","required":false,
                "type":{"type":"list","element-id":4,"element":"string","element-required":false}},
              {"id":2,"name":"point","required":false,"type":{"type":"struct","fields":[
                {"id":5,"name":"x","required":true,"type":"double"},
                {"id":6,"name":"y","required":false,"type":"double"}]}},
              {"id":3,"name":"attrs","required":false,"type":{"type":"map",
                "key-id":7,"key":"string","value-id":8,"value":"long","value-required":false}}]}"#,
        );
        let arrow = nested.to_arrow("t").unwrap();
        let id = |f: &ArrowField| f.metadata()["PARQUET:field_id"].clone();
        let DataType::List(element) = arrow.field(0).data_type() else {
            panic!("{arrow:?}")
        };
        assert_eq!(
            (element.name().as_str(), id(element)),
            ("element", "4".into())
        );
        assert_eq!(element.data_type(), &DataType::Utf8);
        let DataType::Struct(point) = arrow.field(1).data_type() else {
            panic!("{arrow:?}")
        };
        assert_eq!((point[0].name().as_str(), id(&point[0])), ("x", "5".into()));
        assert!(!point[0].is_nullable() && point[1].is_nullable());
        let DataType::Map(entries, false) = arrow.field(2).data_type() else {
            panic!("{arrow:?}")
        };
        let DataType::Struct(kv) = entries.data_type() else {
            panic!("{entries:?}")
        };
        assert_eq!(entries.name(), "key_value");
        assert_eq!((kv[0].name().as_str(), id(&kv[0])), ("key", "7".into()));
        assert_eq!(
            (kv[1].data_type(), id(&kv[1])),
            (&DataType::Int64, "8".into())
        );
        // A nested field added with a default, and a type not read, are refused by name.
        let defaulted = schema(
            r#"{"fields":[{"id":1,"name":"p","required":false,"type":{"type":"struct","fields":[
                {"id":2,"name":"z","required":false,"type":"long","initial-default":1}]}}]}"#,
        );
        let e = defaulted.to_arrow("t").unwrap_err().to_string();
        assert!(
            e.contains("column p: nested field z has an initial-default"),
            "{e}"
        );
        // A variant reads as JSON text at the top level; inside a struct it is refused.
        let variant = schema(
            r#"{"fields":[{"id":1,"name":"v","required":false,"type":"variant"},
              {"id":2,"name":"p","required":false,"type":{"type":"struct","fields":[
                {"id":3,"name":"w","required":false,"type":"variant"}]}}]}"#,
        );
        assert_eq!(variant.ids_without_min_max(), vec![1, 3]);
        let e = variant.to_arrow("t").unwrap_err().to_string();
        assert!(
            e.contains("column p: type \"variant\" is not read yet"),
            "{e}"
        );
        let top = schema(r#"{"fields":[{"id":1,"name":"v","required":false,"type":"variant"}]}"#);
        let arrow = top.to_arrow("t").unwrap();
        assert_eq!(arrow.field(0).data_type(), &DataType::Utf8);
        assert!(is_variant(arrow.field(0)));
    }

    #[test]
    fn nested_fields_renamed_or_replaced_are_refused() {
        let point = |x: &str, x_id: i32| {
            schema(&format!(
                r#"{{"fields":[{{"id":1,"name":"p","required":false,"type":{{"type":"struct",
                "fields":[{{"id":{x_id},"name":"{x}","required":false,"type":"long"}}]}}}}]}}"#
            ))
        };
        let now = point("x", 2);
        // The column renamed above its fields, or a field added: still stable.
        let renamed_column = schema(
            r#"{"fields":[{"id":1,"name":"q","required":false,"type":{"type":"struct",
            "fields":[{"id":2,"name":"x","required":false,"type":"long"}]}}]}"#,
        );
        assert!(
            now.nested_names_stable([&renamed_column].into_iter())
                .is_ok()
        );
        let e = now.nested_names_stable([&point("old", 2)].into_iter());
        assert!(e.unwrap_err().contains("nested field old (field id 2)"));
        let e = now.nested_names_stable([&point("x", 3)].into_iter());
        assert!(e.unwrap_err().contains("field id 3"));
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
