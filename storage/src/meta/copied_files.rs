//! The files COPY INTO loaded into a table, so a second COPY of the same files loads nothing
//! (Databend keeps the same record). `tables/<id>/copies/<uuid>.json` is checked JSON
//! ([`super::checked_json`]) listing every file ever copied in (its URL, size, ETag and
//! modification time: a file rewritten in place is a new file); a snapshot names the newest list
//! in `copies` with its size and checksum, as it names segments. A COPY writes the whole list
//! anew (the old one plus its files) before its commit, so the list and the rows land together
//! or not at all; a COPY that finds another COPY committed a list first fails and commits
//! nothing, and is run again.

use object_store::path::Path;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopiedFiles {
    pub files: Vec<CopiedFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopiedFile {
    /// `s3://bucket/path`.
    pub url: String,
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub modified_ms: i64,
}

impl CopiedFiles {
    pub fn contains(&self, file: &CopiedFile) -> bool {
        self.files.contains(file)
    }
}

pub fn copies_path(table_dir: &Path, name: &str) -> Path {
    table_dir
        .clone()
        .join("copies")
        .join(format!("{name}.json"))
}
