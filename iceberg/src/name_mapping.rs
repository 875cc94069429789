//! How the columns of a data file without field ids are paired with the table's (spec: "Column
//! Projection"). Such files come from migrations: Spark's `migrate` and `add_files`
//! procedures and PyIceberg's `add_files` register Parquet files that other writers made. The
//! table's name mapping (`schema.name-mapping.default`, which those procedures set, and which
//! PyIceberg and Java keep up to date when a column is renamed) lists for each field id every
//! name a file may give it. A table without one is read by its current schema's names, which is
//! exact only while every schema it had paired each name with one id
//! ([`crate::schema::Schema::names_stable`]); otherwise such files are refused.
//!
//! Only top-level columns are mapped: nested ones are refused before this matters.

use std::collections::HashMap;

use serde::Deserialize;

use crate::metadata::TableMetadata;
use crate::schema::Schema;

/// The table property holding the name mapping, as JSON.
pub const NAME_MAPPING: &str = "schema.name-mapping.default";

/// One entry of a name mapping.
#[derive(Deserialize)]
struct MappedField {
    #[serde(rename = "field-id")]
    field_id: Option<i32>,
    names: Vec<String>,
}

/// The field id a data file's column name stands for, in files without field ids.
#[derive(Debug, Clone)]
pub enum FileNames {
    /// By the name mapping, or by the current schema's stable names.
    Mapped(HashMap<String, i32>),
    /// Why such a file cannot be read.
    Refused(String),
}

impl FileNames {
    /// The table's pairing of names with ids for files without field ids.
    pub fn of(metadata: &TableMetadata, current: &Schema) -> Self {
        if let Some(json) = metadata.properties.get(NAME_MAPPING) {
            return match mapped(json) {
                Ok(ids) => Self::Mapped(ids),
                Err(why) => Self::Refused(format!("its name mapping ({NAME_MAPPING}) {why}")),
            };
        }
        if current.names_stable(metadata.all_schemas()) {
            return Self::Mapped(current.field_ids_by_name());
        }
        Self::Refused(format!(
            "a data file without Iceberg field ids, in a table whose columns were renamed or \
             replaced and which has no name mapping ({NAME_MAPPING}) to pair them with"
        ))
    }

    /// The id of the field a file without field ids calls `name`: Ok(None) when no field is
    /// called so; Err when such files cannot be read.
    pub fn field_id(&self, name: &str) -> Result<Option<i32>, &str> {
        match self {
            Self::Mapped(ids) => Ok(ids.get(name).copied()),
            Self::Refused(why) => Err(why),
        }
    }
}

/// A name mapping's top-level names and their ids; a name given two ids is no mapping.
fn mapped(json: &str) -> Result<HashMap<String, i32>, String> {
    let fields: Vec<MappedField> =
        serde_json::from_str(json).map_err(|e| format!("does not parse: {e}"))?;
    let mut ids = HashMap::new();
    for field in fields {
        let Some(id) = field.field_id else {
            continue;
        };
        for name in field.names {
            if let Some(other) = ids.insert(name.clone(), id)
                && other != id
            {
                return Err(format!("gives {name:?} two field ids, {other} and {id}"));
            }
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(properties: &str, schemas: &str) -> (TableMetadata, Schema) {
        let json = format!(
            r#"{{"format-version":2,"location":"file:///w/t","current-schema-id":1,
            "schemas":{schemas},"properties":{properties}}}"#
        );
        let metadata = TableMetadata::parse("m.json", json.as_bytes()).unwrap();
        let current = metadata.current_schema().unwrap().clone();
        (metadata, current)
    }

    const RENAMED: &str = r#"[
        {"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":false,"type":"long"},
            {"id":2,"name":"name","required":false,"type":"string"}]},
        {"type":"struct","schema-id":1,"fields":[{"id":1,"name":"id","required":false,"type":"long"},
            {"id":2,"name":"label","required":false,"type":"string"}]}]"#;

    #[test]
    fn a_name_mapping_pairs_every_name_it_lists() {
        let mapping = r#"{"schema.name-mapping.default":
            "[{\"field-id\":1,\"names\":[\"id\"]},{\"field-id\":2,\"names\":[\"name\",\"label\"]},{\"names\":[\"x\"]}]"}"#;
        let (metadata, current) = table(mapping, RENAMED);
        let names = FileNames::of(&metadata, &current);
        assert_eq!(names.field_id("name"), Ok(Some(2)));
        assert_eq!(names.field_id("label"), Ok(Some(2)));
        assert_eq!(names.field_id("id"), Ok(Some(1)));
        assert_eq!(names.field_id("x"), Ok(None));
    }

    #[test]
    fn without_a_mapping_names_pair_only_while_stable() {
        let (metadata, current) = table("{}", RENAMED);
        let names = FileNames::of(&metadata, &current);
        assert!(
            names
                .field_id("label")
                .unwrap_err()
                .contains("no name mapping")
        );
        let stable = r#"[{"type":"struct","schema-id":1,"fields":[
            {"id":1,"name":"id","required":false,"type":"long"}]}]"#;
        let (metadata, current) = table("{}", stable);
        let names = FileNames::of(&metadata, &current);
        assert_eq!(names.field_id("id"), Ok(Some(1)));
        assert_eq!(names.field_id("label"), Ok(None));
    }

    #[test]
    fn a_mapping_that_does_not_pair_names_with_one_id_refuses() {
        for (mapping, why) in [
            (
                r#"{"schema.name-mapping.default":"not json"}"#,
                "does not parse",
            ),
            (
                r#"{"schema.name-mapping.default":
                "[{\"field-id\":1,\"names\":[\"a\"]},{\"field-id\":2,\"names\":[\"a\"]}]"}"#,
                "gives \"a\" two field ids, 1 and 2",
            ),
        ] {
            let (metadata, current) = table(mapping, RENAMED);
            let names = FileNames::of(&metadata, &current);
            let refused = names.field_id("a").unwrap_err();
            assert!(refused.contains(why), "{refused}");
        }
    }
}
