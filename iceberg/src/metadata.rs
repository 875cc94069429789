//! A table's metadata file (spec: "Table Metadata", JSON as in its Appendix C): the parts a
//! reader needs to find the current snapshot's files and to type their columns. A metadata file
//! is never rewritten (each commit writes a new one), so what is read from one may be kept.

use serde::Deserialize;

use crate::error::{IcebergError, Result};
use crate::schema::Schema;

/// The highest format version read, as the spec requires a reader to refuse versions it does not
/// know. Of what v3 adds, deletion vectors are applied, row lineage needs nothing of a reader
/// that does not return `_row_id`, and new types and default values are refused by name
/// (schema.rs).
pub const MAX_FORMAT_VERSION: u8 = 3;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TableMetadata {
    pub format_version: u8,
    pub location: String,
    /// Required from v2; a v1 table may lack it, and then cannot be indexed.
    pub table_uuid: Option<String>,
    pub current_schema_id: Option<i32>,
    #[serde(default)]
    pub schemas: Vec<Schema>,
    /// v1's single schema, where `schemas` is absent.
    pub schema: Option<Schema>,
    /// Absent or -1: the table has no snapshot yet (no rows).
    pub current_snapshot_id: Option<i64>,
    #[serde(default)]
    pub snapshots: Vec<Snapshot>,
    /// The table's properties: its name mapping among them (name_mapping.rs).
    #[serde(default)]
    pub properties: std::collections::HashMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Snapshot {
    pub snapshot_id: i64,
    /// Required from v2; v1 may list its manifests inline instead.
    pub manifest_list: Option<String>,
    pub manifests: Option<Vec<String>>,
}

impl TableMetadata {
    /// Parses a metadata file read from `uri`, refusing format versions above
    /// [`MAX_FORMAT_VERSION`]. A gzip-compressed one (`write.metadata.compression-codec =
    /// gzip`: Java names it `….gz.metadata.json`) is told by gzip's magic bytes, not its name.
    pub fn parse(uri: &str, bytes: &[u8]) -> Result<Self> {
        let bad = |why: String| IcebergError::Metadata(uri.to_string(), why);
        let inflated;
        let bytes = match bytes.starts_with(&[0x1f, 0x8b]) {
            true => {
                inflated = gunzip(bytes).map_err(|e| bad(format!("gzip: {e}")))?;
                &inflated[..]
            }
            false => bytes,
        };
        let metadata: Self = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        if metadata.format_version > MAX_FORMAT_VERSION || metadata.format_version == 0 {
            return Err(IcebergError::Unsupported(
                metadata.location.clone(),
                format!(
                    "format version {} (Sieve reads versions 1 to 3)",
                    metadata.format_version
                ),
            ));
        }
        Ok(metadata)
    }

    /// The schema rows are read with now.
    pub fn current_schema(&self) -> Result<&Schema> {
        let found = match self.current_schema_id {
            Some(id) => self.schemas.iter().find(|s| s.schema_id == Some(id)),
            None => self.schema.as_ref().or(self.schemas.last()),
        };
        found.ok_or_else(|| {
            IcebergError::Metadata(self.location.clone(), "no current schema".into())
        })
    }

    /// Every schema the table has had: files written under any of them may still be read.
    pub fn all_schemas(&self) -> impl Iterator<Item = &Schema> {
        self.schemas.iter().chain(self.schema.iter())
    }

    /// The snapshot reads see; None for a table with no snapshot yet.
    pub fn current_snapshot(&self) -> Result<Option<&Snapshot>> {
        let id = match self.current_snapshot_id {
            None | Some(-1) => return Ok(None),
            Some(id) => id,
        };
        self.snapshots
            .iter()
            .find(|s| s.snapshot_id == id)
            .map(Some)
            .ok_or_else(|| {
                IcebergError::Metadata(
                    self.location.clone(),
                    format!("current snapshot {id} is not among its snapshots"),
                )
            })
    }
}

fn gunzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut inflated = Vec::with_capacity(bytes.len() * 8);
    flate2::read::MultiGzDecoder::new(bytes).read_to_end(&mut inflated)?;
    Ok(inflated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_above_three_are_refused_by_name_and_gzip_is_read() {
        let v4 = br#"{"format-version":4,"location":"file:///w/t","schemas":[]}"#;
        let e = TableMetadata::parse("m.json", v4).unwrap_err().to_string();
        assert!(e.contains("format version 4"), "{e}");
        let empty = br#"{"format-version":2,"location":"file:///w/t","current-schema-id":0,
            "schemas":[{"type":"struct","schema-id":0,"fields":[]}],"current-snapshot-id":-1}"#;
        let metadata = TableMetadata::parse("m.json", empty).unwrap();
        assert!(metadata.current_snapshot().unwrap().is_none());
        let mut gzipped = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gzipped, empty).unwrap();
        let gzipped = gzipped.finish().unwrap();
        let metadata = TableMetadata::parse("m.gz.metadata.json", &gzipped).unwrap();
        assert_eq!(metadata.location, "file:///w/t");
        // Cut short: refused, saying it is the gzip stream that is broken.
        let e = TableMetadata::parse("m.gz.metadata.json", &gzipped[..gzipped.len() / 2])
            .unwrap_err()
            .to_string();
        assert!(e.contains("m.gz.metadata.json: gzip:"), "{e}");
    }
}
