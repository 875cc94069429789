//! MySQL user variables (`SET @saved = @@character_set_client`, then `@saved` in a later
//! statement), per session. `mariadb-dump` scripts save and restore settings through them, so a
//! dump replays only if they work. A variable never set is NULL, as in MySQL.

use std::collections::HashMap;
use std::sync::RwLock;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::var_provider::VarProvider;

#[derive(Debug, Default)]
pub struct UserVariables(RwLock<HashMap<String, ScalarValue>>);

/// `@Name` and `@name` are one variable.
fn key(var_names: &[String]) -> String {
    var_names
        .last()
        .map_or("", String::as_str)
        .trim_start_matches('@')
        .to_ascii_lowercase()
}

impl UserVariables {
    pub fn set(&self, name: &str, value: ScalarValue) {
        let mut map = self.0.write().unwrap_or_else(|p| p.into_inner());
        map.insert(key(&[name.to_string()]), value);
    }

    fn get(&self, var_names: &[String]) -> Option<ScalarValue> {
        let map = self.0.read().unwrap_or_else(|p| p.into_inner());
        map.get(&key(var_names)).cloned()
    }
}

impl VarProvider for UserVariables {
    fn get_value(&self, var_names: Vec<String>) -> Result<ScalarValue> {
        Ok(self.get(&var_names).unwrap_or(ScalarValue::Utf8(None)))
    }

    fn get_type(&self, var_names: &[String]) -> Option<DataType> {
        Some(
            self.get(var_names)
                .map_or(DataType::Utf8, |v| v.data_type()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fold_case_and_unset_is_null() {
        let vars = UserVariables::default();
        assert_eq!(
            vars.get_value(vec!["@x".into()]).unwrap(),
            ScalarValue::Utf8(None)
        );
        vars.set("@Old_Mode", ScalarValue::Int64(Some(3)));
        assert_eq!(
            vars.get_value(vec!["@old_mode".into()]).unwrap(),
            ScalarValue::Int64(Some(3))
        );
        assert_eq!(vars.get_type(&["@OLD_MODE".into()]), Some(DataType::Int64));
    }
}
