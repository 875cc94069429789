//! How a Sieve scan travels from a coordinator to a worker: the [`ScanRequest`] as a protobuf
//! message (the predicate in DataFusion's own physical-expression encoding, the table definition
//! as the catalog's JSON), so the worker plans the same scan over its own copy of the storage.
//! The wire form is versioned: a worker refuses a message of another version with a clear error
//! instead of misreading it, and a coordinator and worker over different storages are refused.

use std::sync::Arc;

use datafusion::common::{exec_err, internal_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{
    PhysicalExtensionCodec, PhysicalPlanDecodeContext, PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf::PhysicalExprNode;
use prost::Message;
use sieve_storage::{Storage, Table, TableDef};

use crate::cluster::placement::Placement;
use crate::scan::exec::{ScanRequest, Shares, SieveScanExec};

/// The version of [`ScanMessage`]; a worker answers only its own.
const SCAN_MESSAGE_VERSION: u32 = 1;

#[derive(Clone, PartialEq, Message)]
struct ScanMessage {
    #[prost(uint32, tag = "1")]
    version: u32,
    #[prost(string, tag = "2")]
    storage_url: String,
    /// The table definition, as the catalog stores it.
    #[prost(bytes = "vec", tag = "3")]
    table: Vec<u8>,
    #[prost(uint32, repeated, tag = "4")]
    projection: Vec<u32>,
    #[prost(bool, tag = "5")]
    projected: bool,
    /// An encoded `PhysicalExprNode`, over the table's schema.
    #[prost(bytes = "vec", optional, tag = "6")]
    predicate: Option<Vec<u8>>,
    #[prost(uint64, optional, tag = "7")]
    limit: Option<u64>,
    #[prost(bool, tag = "8")]
    pruning: bool,
    #[prost(bool, tag = "9")]
    locator: bool,
    #[prost(uint64, optional, tag = "10")]
    full_scan_blocks: Option<u64>,
    #[prost(uint32, tag = "11")]
    partitions: u32,
    #[prost(uint64, optional, tag = "12")]
    snapshot: Option<u64>,
    /// The placement's workers, and the indices of those whose blocks this task reads; no
    /// workers means every block.
    #[prost(string, repeated, tag = "13")]
    workers: Vec<String>,
    #[prost(uint32, repeated, tag = "14")]
    shares: Vec<u32>,
    /// Workers the coordinator's node filters left out, for this task's metrics. Added within
    /// version 1: a peer without it reads 0, which only under-reports.
    #[prost(uint32, tag = "15")]
    skipped_by_node_filter: u32,
}

/// Encodes Sieve scans; decodes them over `storage` (the worker's own).
#[derive(Debug, Clone)]
pub struct ScanCodec {
    storage: Storage,
}

impl ScanCodec {
    pub fn new(storage: Storage) -> Self {
        Self { storage }
    }
}

fn wire_error(why: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!("malformed Sieve scan from the coordinator: {why}"))
}

impl PhysicalExtensionCodec for ScanCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !inputs.is_empty() {
            return internal_err!("a Sieve scan has no inputs, got {}", inputs.len());
        }
        let message = ScanMessage::decode(buf).map_err(wire_error)?;
        if message.version != SCAN_MESSAGE_VERSION {
            return exec_err!(
                "the coordinator sent a Sieve scan of wire version {}, this worker reads {}: run the same Sieve release on both",
                message.version,
                SCAN_MESSAGE_VERSION
            );
        }
        if message.storage_url != self.storage.url() {
            return exec_err!(
                "the coordinator reads storage {} but this worker serves {}: start the worker with the coordinator's --storage",
                message.storage_url,
                self.storage.url()
            );
        }
        let def: TableDef = serde_json::from_slice(&message.table).map_err(wire_error)?;
        let predicate = match &message.predicate {
            Some(bytes) => {
                let node = PhysicalExprNode::decode(bytes.as_slice()).map_err(wire_error)?;
                let decode = PhysicalPlanDecodeContext::new(ctx, self);
                Some(proto_converter.proto_to_physical_expr(&node, &def.schema, &decode)?)
            }
            None => None,
        };
        let shares = (!message.workers.is_empty()).then(|| Shares {
            placement: Arc::new(Placement::new(message.workers)),
            workers: message.shares.iter().map(|&i| i as usize).collect(),
            skipped_by_node_filter: message.skipped_by_node_filter as usize,
        });
        if let Some(s) = &shares
            && s.workers.iter().any(|&i| i >= s.placement.workers().len())
        {
            return Err(wire_error("a share names no listed worker"));
        }
        let request = ScanRequest {
            table: Table::new(self.storage.clone(), def),
            projection: message
                .projected
                .then(|| message.projection.iter().map(|&i| i as usize).collect()),
            predicate,
            limit: message.limit.map(|l| l as usize),
            pruning: message.pruning,
            locator: message.locator,
            full_scan_blocks: message.full_scan_blocks,
            partitions: message.partitions as usize,
            snapshot: message.snapshot,
            shares,
            // Scans sent to a worker run in its Parquet scan; its lookups come by their own call.
            direct: false,
            rows: None,
            chosen: None,
        };
        Ok(Arc::new(SieveScanExec::new(request)?))
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let Some(scan) = node.downcast_ref::<SieveScanExec>() else {
            return internal_err!("the Sieve codec cannot encode {}", node.name());
        };
        let request = scan.request();
        let predicate = match &request.predicate {
            Some(p) => Some(
                proto_converter
                    .physical_expr_to_proto(p, self)?
                    .encode_to_vec(),
            ),
            None => None,
        };
        let (workers, shares) = match &request.shares {
            Some(s) => (
                s.placement.workers().to_vec(),
                s.workers.iter().map(|&i| i as u32).collect(),
            ),
            None => (vec![], vec![]),
        };
        let message = ScanMessage {
            version: SCAN_MESSAGE_VERSION,
            storage_url: request.table.storage().url().to_string(),
            table: serde_json::to_vec(request.table.def()).map_err(wire_error)?,
            projection: request
                .projection
                .iter()
                .flatten()
                .map(|&i| i as u32)
                .collect(),
            projected: request.projection.is_some(),
            predicate,
            limit: request.limit.map(|l| l as u64),
            pruning: request.pruning,
            locator: request.locator,
            full_scan_blocks: request.full_scan_blocks,
            partitions: request.partitions as u32,
            snapshot: request.snapshot,
            workers,
            shares,
            skipped_by_node_filter: request
                .shares
                .as_ref()
                .map_or(0, |s| s.skipped_by_node_filter as u32),
        };
        message.encode(buf).map_err(wire_error)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_expr::expressions::{col, lit};
    use datafusion::physical_plan::displayable;
    use datafusion_proto::physical_plan::DefaultPhysicalProtoConverter;
    use sieve_storage::TableOptions;

    use super::*;

    fn scan(storage: &Storage) -> SieveScanExec {
        let schema = Arc::new(Schema::new(vec![
            Field::new("c1", DataType::Int64, false),
            Field::new("c2", DataType::Utf8, true),
        ]));
        let mut options = TableOptions::defaults_for(&schema);
        options.index_columns = vec!["c2".into()];
        let def = TableDef::new("db", "t", schema.clone(), options).unwrap();
        let predicate = datafusion::physical_expr::expressions::binary(
            col("c2", &schema).unwrap(),
            datafusion::logical_expr::Operator::Eq,
            lit("key"),
            &schema,
        )
        .unwrap();
        SieveScanExec::new(ScanRequest {
            table: Table::new(storage.clone(), def),
            projection: Some(vec![1]),
            predicate: Some(predicate),
            limit: Some(10),
            pruning: true,
            locator: false,
            full_scan_blocks: Some(10),
            partitions: 3,
            snapshot: Some(42),
            shares: Some(Shares {
                placement: Arc::new(Placement::new(vec![
                    "http://a:1/".into(),
                    "http://b:2/".into(),
                ])),
                workers: vec![1],
                skipped_by_node_filter: 3,
            }),
            direct: false,
            rows: None,
            chosen: None,
        })
        .unwrap()
    }

    fn encode(codec: &ScanCodec, node: Arc<dyn ExecutionPlan>) -> Vec<u8> {
        let mut buf = Vec::new();
        codec
            .try_encode(node, &mut buf, &DefaultPhysicalProtoConverter {})
            .unwrap();
        buf
    }

    #[test]
    fn a_scan_arrives_as_it_was_sent_and_only_over_its_own_storage() {
        let storage = Storage::open("memory://").unwrap();
        let codec = ScanCodec::new(storage.clone());
        let sent: Arc<dyn ExecutionPlan> = Arc::new(scan(&storage));
        let bytes = encode(&codec, sent.clone());
        let ctx = TaskContext::default();
        let converter = DefaultPhysicalProtoConverter {};
        let received = codec.try_decode(&bytes, &[], &ctx, &converter).unwrap();
        let show = |p: &Arc<dyn ExecutionPlan>| displayable(p.as_ref()).one_line().to_string();
        assert_eq!(show(&received), show(&sent));
        let r = received.downcast_ref::<SieveScanExec>().unwrap().request();
        assert_eq!(
            (
                r.projection.clone(),
                r.limit,
                r.pruning,
                r.locator,
                r.snapshot,
                r.partitions
            ),
            (Some(vec![1]), Some(10), true, false, Some(42), 3)
        );
        assert_eq!(r.shares.as_ref().unwrap().workers, vec![1]);

        // A worker over another storage refuses it, and so does one of another wire version.
        let elsewhere = ScanCodec::new(Storage::open("memory://other").unwrap());
        let refused = elsewhere.try_decode(&bytes, &[], &ctx, &converter);
        assert!(refused.unwrap_err().to_string().contains("--storage"));
        let mut message = ScanMessage::decode(bytes.as_slice()).unwrap();
        message.version += 1;
        let newer = codec.try_decode(&message.encode_to_vec(), &[], &ctx, &converter);
        assert!(newer.unwrap_err().to_string().contains("wire version"));
        assert!(codec.try_decode(&[0xff; 7], &[], &ctx, &converter).is_err());
    }
}
