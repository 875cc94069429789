//! Iceberg tables written by PyIceberg (cli/tests/iceberg/tables.py), and the configuration that
//! attaches their catalog to a Sieve server.

use std::path::Path;
use std::process::Command;

use super::{output_within, stderr};

/// Runs cli/tests/iceberg/tables.py, its catalog in `dir` (or the REST catalog at `rest`) and
/// its files there or under `s3`; what PyIceberg reads from each table.
pub fn pyiceberg_at(
    dir: &Path,
    step: &str,
    s3: Option<&str>,
    rest: Option<&str>,
) -> serde_json::Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/iceberg/tables.py");
    let mut command = Command::new("python3");
    command.args([script, dir.to_str().unwrap(), step]);
    command.args(s3);
    if let Some(uri) = rest {
        command.env("SIEVE_REST_URI", uri);
    }
    let out = output_within(command, None, String::new);
    assert!(
        out.status.success(),
        "PyIceberg did not write the tables (scripts/test.sh installs pyiceberg[sql-sqlite] \
         0.12.0): {}",
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

pub fn pyiceberg(warehouse: &Path, step: &str) -> serde_json::Value {
    pyiceberg_at(warehouse, step, None, None)
}

/// A catalog named lake over `dir`'s catalog.db, its files in `warehouse`.
pub fn config_at(dir: &Path, warehouse: &str) -> String {
    let dir = dir.display();
    format!(
        "[[iceberg_catalogs]]\nname = \"lake\"\nuri = \"sqlite://{dir}/catalog.db\"\n\
         catalog_name = \"writers\"\nwarehouse = \"{warehouse}\"\n"
    )
}

pub fn config(warehouse: &Path) -> String {
    config_at(warehouse, &format!("file://{}", warehouse.display()))
}
