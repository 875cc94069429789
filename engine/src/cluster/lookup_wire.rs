//! The messages between a coordinator and the worker that owns a point lookup's blocks, on one
//! long-lived Flight exchange per worker ([`crate::cluster::lookup_stream`]): a message holds
//! one lookup ([`WireLookup`]) and is answered by a message holding its [`WireAnswer`].
//!
//! A lookup names what it asks and nothing about how to run it, so it is not a serialized
//! plan: the table (by name, and its id, so a table made again under the same name is
//! refused), the snapshot version the coordinator resolved, the condition's columns and values
//! as written, the output columns, the LIMIT, the placement the coordinator used and which of
//! its workers is asked, the asking session's settings that the read depends on, and the
//! blocks its pruning left to that worker. A lookup of an attached Iceberg table names it as
//! `catalog.namespace` and table, its UUID and snapshot id as the table's id and version, the
//! metadata file the coordinator read that snapshot from (the worker plans the same snapshot
//! from it, without asking the catalog), and the data files of the worker's share.
//!
//! The condition travels in prefix order ([`WireNode`]): an AND or OR node is followed by its
//! two sides, an IN node carries its column and values. Values are integers and strings as the
//! statement or its parameters gave them; the worker binds them to its columns with the same
//! lossless casts as the coordinator, so both ends agree on what matches.
//!
//! An answer is the lookup's rows as an Arrow IPC stream, or the error that lookup met, and
//! what reading them cost the worker.
//!
//! Versioned by [`LOOKUP_WIRE_VERSION`]: a worker refuses a lookup of another version rather
//! than guess (coordinators and workers are upgraded together; the error says so). Version 1
//! sent one lookup per `DoGet` ticket; version 2 sent lookups in `DoAction` calls of one or
//! more; version 3 sent those calls as messages of one `DoExchange` per worker; version 4
//! sent each lookup as a message of its own on that exchange; version 5 adds lookups of
//! attached tables (`metadata_location`, `files`); version 6 adds the asking session's
//! `data_cache` and `direct_reads` (a worker read with its own defaults before), and to an
//! answer what reading it cost the worker ([`WireRead`]).

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use prost::Message;

use crate::session::query_stream::ScanStats;

/// Bumped whenever a field's meaning changes.
pub const LOOKUP_WIRE_VERSION: u32 = 6;

/// A worker's answer to one lookup.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WireAnswer {
    #[prost(oneof = "WireOutcome", tags = "1, 2")]
    pub outcome: Option<WireOutcome>,
    /// What reading the rows cost the worker (none for kept rows), for the coordinator's
    /// statement counters and query log.
    #[prost(message, optional, tag = "3")]
    pub read: Option<WireRead>,
}

/// [`ScanStats`] as a worker reports them with its rows.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WireRead {
    #[prost(uint64, tag = "1")]
    pub blocks_total: u64,
    #[prost(uint64, tag = "2")]
    pub blocks_read: u64,
    #[prost(uint64, tag = "3")]
    pub rows_read: u64,
    #[prost(uint64, tag = "4")]
    pub bytes_read: u64,
    #[prost(uint64, tag = "5")]
    pub index_bytes: u64,
    #[prost(uint64, tag = "6")]
    pub locator_groups_probed: u64,
    #[prost(uint64, tag = "7")]
    pub pages_read: u64,
    #[prost(uint64, tag = "8")]
    pub blocks_read_directly: u64,
    #[prost(uint64, tag = "9")]
    pub locator_groups_routed_out: u64,
    #[prost(uint64, tag = "10")]
    pub requests: u64,
    #[prost(uint64, tag = "11")]
    pub sequential_requests: u64,
}

impl From<&ScanStats> for WireRead {
    fn from(s: &ScanStats) -> Self {
        Self {
            blocks_total: s.blocks_total,
            blocks_read: s.blocks_read,
            rows_read: s.rows_read,
            bytes_read: s.bytes_read,
            index_bytes: s.index_bytes,
            locator_groups_probed: s.locator_groups_probed,
            pages_read: s.pages_read,
            blocks_read_directly: s.blocks_read_directly,
            locator_groups_routed_out: s.locator_groups_routed_out,
            requests: s.requests,
            sequential_requests: s.sequential_requests,
        }
    }
}

impl From<&WireRead> for ScanStats {
    fn from(w: &WireRead) -> Self {
        Self {
            blocks_total: w.blocks_total,
            blocks_read: w.blocks_read,
            rows_read: w.rows_read,
            bytes_read: w.bytes_read,
            index_bytes: w.index_bytes,
            locator_groups_probed: w.locator_groups_probed,
            pages_read: w.pages_read,
            blocks_read_directly: w.blocks_read_directly,
            locator_groups_routed_out: w.locator_groups_routed_out,
            requests: w.requests,
            sequential_requests: w.sequential_requests,
        }
    }
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum WireOutcome {
    /// The rows, as an Arrow IPC stream (a schema message, then the batches).
    #[prost(bytes = "bytes", tag = "1")]
    Rows(bytes::Bytes),
    /// Why this lookup has no answer.
    #[prost(string, tag = "2")]
    Error(String),
}

/// One point lookup, as a coordinator asks one worker.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WireLookup {
    #[prost(uint32, tag = "1")]
    pub wire_version: u32,
    #[prost(string, tag = "2")]
    pub database: String,
    #[prost(string, tag = "3")]
    pub table: String,
    /// The table's id when the coordinator bound the lookup.
    #[prost(string, tag = "4")]
    pub table_id: String,
    /// The snapshot version to read: never an older one (the worker reads exactly this).
    #[prost(uint64, tag = "5")]
    pub version: u64,
    /// The condition in prefix order.
    #[prost(message, repeated, tag = "6")]
    pub condition: Vec<WireNode>,
    /// (table column, output name) pairs; empty with `all_columns` for `*`.
    #[prost(message, repeated, tag = "7")]
    pub columns: Vec<WireColumn>,
    #[prost(bool, tag = "8")]
    pub all_columns: bool,
    #[prost(uint64, optional, tag = "9")]
    pub limit: Option<u64>,
    /// The live workers the coordinator placed the table's groups over, in its order.
    #[prost(string, repeated, tag = "10")]
    pub placement: Vec<String>,
    /// Which of them is asked: it reads only the blocks it owns under that placement.
    #[prost(uint32, tag = "11")]
    pub worker: u32,
    /// The asking session's `sieve.pruning`, `sieve.locator`, `sieve.routing` and
    /// `sieve.lookup_cache`.
    #[prost(bool, tag = "12")]
    pub pruning: bool,
    #[prost(bool, tag = "13")]
    pub locator: bool,
    #[prost(bool, tag = "14")]
    pub routing: bool,
    #[prost(bool, tag = "15")]
    pub lookup_cache: bool,
    /// The asking statement may read every block (ALLOW FILTERING, `sieve.allow_full_scan`).
    #[prost(bool, tag = "16")]
    pub allow_full_scan: bool,
    /// The asking session's `sieve.data_cache` and `sieve.direct_reads`: whether the worker
    /// keeps the pages it reads in its data cache, and decodes them on the lookup's task.
    #[prost(bool, tag = "22")]
    pub data_cache: bool,
    #[prost(bool, tag = "23")]
    pub direct_reads: bool,
    /// The coordinator pruned: `chosen_blocks` are the blocks (indices into the version's list
    /// of `blocks_listed`) its min/max and node filters kept among those the worker owns, the
    /// only ones the worker reads, without min/max again. Unset (a coordinator without
    /// pruning, or of a release before it), the worker prunes its own.
    #[prost(bool, tag = "17")]
    pub chosen: bool,
    #[prost(uint32, repeated, tag = "18")]
    pub chosen_blocks: Vec<u32>,
    #[prost(uint64, tag = "19")]
    pub blocks_listed: u64,
    /// Set for an attached table: the metadata file of the snapshot `version` names, which the
    /// worker plans its read from.
    #[prost(string, tag = "20")]
    pub metadata_location: String,
    /// An attached table's data files the worker reads (the coordinator's index and manifest
    /// bounds kept them, and rendezvous gave them this worker), by path in the warehouse.
    #[prost(string, repeated, tag = "21")]
    pub files: Vec<String>,
}

/// One node of a condition in prefix order.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WireNode {
    #[prost(enumeration = "WireOp", tag = "1")]
    pub op: i32,
    /// For `In`: the column, and the values it may equal.
    #[prost(string, tag = "2")]
    pub column: String,
    #[prost(message, repeated, tag = "3")]
    pub values: Vec<WireValue>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum WireOp {
    In = 0,
    And = 1,
    Or = 2,
}

/// A value of the lookup: an integer or a string, the kinds the short path compares.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WireValue {
    #[prost(oneof = "WireScalar", tags = "1, 2, 3")]
    pub value: Option<WireScalar>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum WireScalar {
    #[prost(int64, tag = "1")]
    Int(i64),
    #[prost(string, tag = "2")]
    Text(String),
    /// An unsigned value beyond `i64` (a prepared statement's parameter).
    #[prost(uint64, tag = "3")]
    Unsigned(u64),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct WireColumn {
    #[prost(string, tag = "1")]
    pub column: String,
    #[prost(string, tag = "2")]
    pub name: String,
}

impl WireValue {
    /// An integer (of any width, the same number) or a string (of any string type, the same
    /// text); None for other values, which the short path does not take.
    pub fn of(value: &ScalarValue) -> Option<Self> {
        let value = match value {
            ScalarValue::UInt64(Some(n)) => match i64::try_from(*n) {
                Ok(n) => WireScalar::Int(n),
                Err(_) => WireScalar::Unsigned(*n),
            },
            v if v.data_type().is_integer() => match v.cast_to(&DataType::Int64).ok()? {
                ScalarValue::Int64(Some(n)) => WireScalar::Int(n),
                _ => return None,
            },
            ScalarValue::Utf8(Some(s))
            | ScalarValue::Utf8View(Some(s))
            | ScalarValue::LargeUtf8(Some(s)) => WireScalar::Text(s.clone()),
            _ => return None,
        };
        Some(Self { value: Some(value) })
    }

    pub fn scalar(&self) -> Result<ScalarValue> {
        match &self.value {
            Some(WireScalar::Int(n)) => Ok(ScalarValue::Int64(Some(*n))),
            Some(WireScalar::Unsigned(n)) => Ok(ScalarValue::UInt64(Some(*n))),
            Some(WireScalar::Text(s)) => Ok(ScalarValue::Utf8(Some(s.clone()))),
            None => Err(malformed("a value without a value")),
        }
    }
}

impl WireLookup {
    /// The lookup a message's body holds, if this worker reads its wire version.
    pub fn decode_body(body: &[u8]) -> Result<Self> {
        let lookup = Self::decode(body).map_err(|e| malformed(&e.to_string()))?;
        if lookup.wire_version != LOOKUP_WIRE_VERSION {
            return Err(DataFusionError::Execution(format!(
                "a coordinator sent a lookup of wire version {} to a worker of version {}: run \
                 coordinators and workers of one release",
                lookup.wire_version, LOOKUP_WIRE_VERSION
            )));
        }
        Ok(lookup)
    }
}

#[cfg(test)]
impl WireLookup {
    /// `select c1 from default.t where c2 in (keys)`, at `version` of the table `table_id`,
    /// asked of the only worker of a placement, pruned by its routing filters and locator.
    pub(crate) fn c1_where_c2_in(table_id: &str, version: u64, keys: &[&str]) -> Self {
        let values = keys.iter().map(|k| {
            WireValue::of(&ScalarValue::Utf8(Some(k.to_string()))).expect("a string travels")
        });
        WireLookup {
            wire_version: LOOKUP_WIRE_VERSION,
            database: "default".into(),
            table: "t".into(),
            table_id: table_id.into(),
            version,
            condition: vec![WireNode {
                op: WireOp::In as i32,
                column: "c2".into(),
                values: values.collect(),
            }],
            columns: vec![WireColumn {
                column: "c1".into(),
                name: "c1".into(),
            }],
            all_columns: false,
            limit: None,
            placement: vec!["http://127.0.0.1:1".into()],
            worker: 0,
            pruning: true,
            locator: true,
            routing: true,
            lookup_cache: true,
            allow_full_scan: false,
            data_cache: true,
            direct_reads: true,
            chosen: false,
            blocks_listed: 0,
            chosen_blocks: Vec::new(),
            metadata_location: String::new(),
            files: Vec::new(),
        }
    }
}

pub fn malformed(why: &str) -> DataFusionError {
    DataFusionError::Execution(format!("a malformed lookup request: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lookup_survives_the_wire_and_another_version_is_refused() {
        let lookup = WireLookup {
            wire_version: LOOKUP_WIRE_VERSION,
            database: "default".into(),
            table: "t".into(),
            table_id: "id".into(),
            version: 7,
            condition: vec![
                WireNode {
                    op: WireOp::Or as i32,
                    ..Default::default()
                },
                WireNode {
                    op: WireOp::In as i32,
                    column: "c1".into(),
                    values: vec![WireValue::of(&ScalarValue::Int64(Some(-3))).unwrap()],
                },
                WireNode {
                    op: WireOp::In as i32,
                    column: "c2".into(),
                    values: vec![WireValue::of(&ScalarValue::Utf8(Some("x".into()))).unwrap()],
                },
            ],
            columns: vec![WireColumn {
                column: "c1".into(),
                name: "k".into(),
            }],
            all_columns: false,
            limit: Some(2),
            placement: vec!["http://127.0.0.1:1".into()],
            worker: 0,
            pruning: true,
            locator: true,
            routing: false,
            lookup_cache: true,
            allow_full_scan: false,
            data_cache: false,
            direct_reads: true,
            chosen: true,
            chosen_blocks: vec![0, 3],
            blocks_listed: 5,
            metadata_location: "s3://lake/ns/t/metadata/00002.metadata.json".into(),
            files: vec!["ns/t/data/a.parquet".into()],
        };
        let back = WireLookup::decode_body(&lookup.encode_to_vec()).unwrap();
        assert_eq!(back, lookup);
        assert_eq!(
            back.condition[1].values[0].scalar().unwrap(),
            ScalarValue::Int64(Some(-3))
        );
        let other = WireLookup {
            wire_version: LOOKUP_WIRE_VERSION + 1,
            ..lookup.clone()
        };
        let refused = WireLookup::decode_body(&other.encode_to_vec()).unwrap_err();
        assert!(refused.to_string().contains("of one release"), "{refused}");
        assert!(WireLookup::decode_body(b"\xff\xff\xff").is_err());
        assert!(WireValue::of(&ScalarValue::Float64(Some(1.0))).is_none());
        assert!(WireValue::of(&ScalarValue::Int32(None)).is_none());
        for (value, back) in [
            (ScalarValue::Int8(Some(-5)), ScalarValue::Int64(Some(-5))),
            (ScalarValue::UInt32(Some(7)), ScalarValue::Int64(Some(7))),
            (
                ScalarValue::UInt64(Some(u64::MAX)),
                ScalarValue::UInt64(Some(u64::MAX)),
            ),
            (
                ScalarValue::Utf8View(Some("v".into())),
                ScalarValue::Utf8(Some("v".into())),
            ),
        ] {
            assert_eq!(WireValue::of(&value).unwrap().scalar().unwrap(), back);
        }
    }
}
