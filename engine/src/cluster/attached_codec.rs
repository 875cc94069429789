//! How a share of an attached table's scan ([`AttachedScanExec`]) travels from a coordinator to
//! a worker: a protobuf message naming the table, the metadata file of the snapshot read and
//! the data files, with the filters in datafusion-proto's encoding of logical expressions (the
//! worker plans the scan from them, as this process plans it from the statement's). Versioned
//! as the Sieve scan's message is: a worker refuses another version with a clear error.

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::common::{exec_err, internal_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::DefaultLogicalExtensionCodec;
use datafusion_proto::logical_plan::from_proto::parse_exprs;
use datafusion_proto::logical_plan::to_proto::serialize_expr;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use datafusion_proto::protobuf::LogicalExprNode;
use prost::Message;

use crate::cluster::attached_scan::{AttachedScan, AttachedScanExec};
use crate::cluster::placement::Placement;
use crate::iceberg::scan_exec::FileCounts;
use crate::session::Session;

/// The version of [`AttachedScanMessage`]; a worker answers only its own.
const ATTACHED_SCAN_VERSION: u32 = 1;

#[derive(Clone, PartialEq, Message)]
struct AttachedScanMessage {
    #[prost(uint32, tag = "1")]
    version: u32,
    /// `catalog.namespace`.
    #[prost(string, tag = "2")]
    database: String,
    #[prost(string, tag = "3")]
    table: String,
    #[prost(string, tag = "4")]
    metadata_location: String,
    #[prost(uint64, tag = "5")]
    snapshot: u64,
    #[prost(string, tag = "6")]
    table_id: String,
    #[prost(string, repeated, tag = "7")]
    files: Vec<String>,
    /// The placement's workers, and the indices of those whose files this share reads.
    #[prost(string, repeated, tag = "8")]
    placement: Vec<String>,
    #[prost(uint32, repeated, tag = "9")]
    workers: Vec<u32>,
    #[prost(uint32, repeated, tag = "10")]
    projection: Vec<u32>,
    #[prost(bool, tag = "11")]
    projected: bool,
    #[prost(message, repeated, tag = "12")]
    filters: Vec<LogicalExprNode>,
    #[prost(uint64, optional, tag = "13")]
    limit: Option<u64>,
    #[prost(message, optional, tag = "14")]
    schema: Option<datafusion_proto::protobuf::Schema>,
    #[prost(uint32, tag = "15")]
    partitions: u32,
    #[prost(message, optional, tag = "16")]
    counts: Option<WireCounts>,
}

/// [`FileCounts`] on the wire.
#[derive(Clone, PartialEq, Message)]
struct WireCounts {
    #[prost(uint64, tag = "1")]
    total: u64,
    #[prost(uint64, tag = "2")]
    fully_deleted: u64,
    #[prost(uint64, tag = "3")]
    pruned_by_index: u64,
    #[prost(uint64, tag = "4")]
    row_groups_pruned_by_index: u64,
    #[prost(uint64, tag = "5")]
    pruned_by_minmax: u64,
    #[prost(uint64, tag = "6")]
    not_indexed: u64,
    #[prost(uint64, tag = "7")]
    read: u64,
}

impl From<&FileCounts> for WireCounts {
    fn from(c: &FileCounts) -> Self {
        Self {
            total: c.total as u64,
            fully_deleted: c.fully_deleted as u64,
            pruned_by_index: c.pruned_by_index as u64,
            row_groups_pruned_by_index: c.row_groups_pruned_by_index as u64,
            pruned_by_minmax: c.pruned_by_minmax as u64,
            not_indexed: c.not_indexed as u64,
            read: c.read as u64,
        }
    }
}

impl From<&WireCounts> for FileCounts {
    fn from(c: &WireCounts) -> Self {
        Self {
            total: c.total as usize,
            fully_deleted: c.fully_deleted as usize,
            pruned_by_index: c.pruned_by_index as usize,
            row_groups_pruned_by_index: c.row_groups_pruned_by_index as usize,
            pruned_by_minmax: c.pruned_by_minmax as usize,
            not_indexed: c.not_indexed as usize,
            read: c.read as usize,
        }
    }
}

/// Encodes shares of attached tables' scans; on a worker, decodes them to be planned by its
/// session.
#[derive(Clone)]
pub struct AttachedScanCodec {
    /// None on a coordinator, which only sends.
    session: Option<Arc<Session>>,
}

impl std::fmt::Debug for AttachedScanCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("AttachedScanCodec").finish_non_exhaustive()
    }
}

impl AttachedScanCodec {
    /// A coordinator's: it sends shares and receives none.
    pub fn sending() -> Self {
        Self { session: None }
    }

    /// A worker's: the shares it receives are planned by `session` (one of the worker's
    /// engine, with its attached catalogs, caches and indexes).
    pub fn receiving(session: Session) -> Self {
        Self {
            session: Some(Arc::new(session)),
        }
    }
}

fn wire_error(why: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!(
        "malformed scan of an attached table from the coordinator: {why}"
    ))
}

impl PhysicalExtensionCodec for AttachedScanCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        _: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !inputs.is_empty() {
            return internal_err!("an attached table's scan has no inputs");
        }
        let Some(session) = &self.session else {
            return internal_err!("only a worker receives an attached table's scan");
        };
        let message = AttachedScanMessage::decode(buf).map_err(wire_error)?;
        if message.version != ATTACHED_SCAN_VERSION {
            return exec_err!(
                "the coordinator sent a scan of an attached table of wire version {}, this \
                 worker reads {}: run the same Sieve release on both",
                message.version,
                ATTACHED_SCAN_VERSION
            );
        }
        let schema = message
            .schema
            .as_ref()
            .ok_or_else(|| wire_error("no schema"))?;
        let schema = Schema::try_from(schema).map_err(wire_error)?;
        let filters = parse_exprs(&message.filters, ctx, &DefaultLogicalExtensionCodec {})?;
        let placement = Arc::new(Placement::new(message.placement));
        let workers: Vec<usize> = message.workers.iter().map(|&w| w as usize).collect();
        if workers.iter().any(|&w| w >= placement.workers().len()) {
            return Err(wire_error("a share names no listed worker"));
        }
        let scan = AttachedScan {
            database: message.database,
            table: message.table,
            metadata_location: message.metadata_location,
            snapshot: message.snapshot,
            table_id: message.table_id,
            files: message.files,
            placement,
            workers,
            projection: message
                .projected
                .then(|| message.projection.iter().map(|&i| i as usize).collect()),
            filters,
            limit: message.limit.map(|l| l as usize),
            schema: Arc::new(schema),
            partitions: message.partitions as usize,
            counts: message.counts.as_ref().map(FileCounts::from),
        };
        Ok(Arc::new(AttachedScanExec::there(scan, session.clone())))
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        _: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let Some(exec) = node.downcast_ref::<AttachedScanExec>() else {
            return internal_err!("the attached scan codec cannot encode {}", node.name());
        };
        let scan = exec.scan();
        // A filter datafusion-proto cannot encode (none of a scan's should be) is left out:
        // it only prunes, and DataFusion applies it above the scan.
        let codec = DefaultLogicalExtensionCodec {};
        let filters = (scan.filters.iter())
            .filter_map(|f| serialize_expr(f, &codec).ok())
            .collect();
        let message = AttachedScanMessage {
            version: ATTACHED_SCAN_VERSION,
            database: scan.database.clone(),
            table: scan.table.clone(),
            metadata_location: scan.metadata_location.clone(),
            snapshot: scan.snapshot,
            table_id: scan.table_id.clone(),
            files: scan.files.clone(),
            placement: scan.placement.workers().to_vec(),
            workers: scan.workers.iter().map(|&w| w as u32).collect(),
            projection: (scan.projection.iter().flatten())
                .map(|&i| i as u32)
                .collect(),
            projected: scan.projection.is_some(),
            filters,
            limit: scan.limit.map(|l| l as u64),
            schema: Some((scan.schema.as_ref()).try_into().map_err(wire_error)?),
            partitions: scan.partitions as u32,
            counts: scan.counts.as_ref().map(WireCounts::from),
        };
        message.encode(buf).map_err(wire_error)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{DataType, Field};
    use datafusion::logical_expr::{col, lit};
    use datafusion::physical_plan::empty::EmptyExec;
    use datafusion_proto::physical_plan::DefaultPhysicalProtoConverter;
    use sieve_storage::Storage;

    use super::*;
    use crate::session::Engine;

    fn scan() -> AttachedScanExec {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        let scan = AttachedScan {
            database: "lake.ns".into(),
            table: "people".into(),
            metadata_location: "s3://w/ns/people/metadata/00002.metadata.json".into(),
            snapshot: 42,
            table_id: "8e5f…".into(),
            files: (0..6)
                .map(|i| format!("ns/people/data/{i}.parquet"))
                .collect(),
            placement: Arc::new(Placement::new(vec![
                "http://a:1/".into(),
                "http://b:2/".into(),
                "http://c:3/".into(),
            ])),
            workers: vec![0, 1, 2],
            projection: Some(vec![1]),
            filters: vec![col("id").eq(lit(5i64)), col("name").like(lit("p%"))],
            limit: Some(10),
            schema: schema.clone(),
            partitions: 0,
            counts: Some(FileCounts {
                total: 9,
                pruned_by_minmax: 3,
                read: 6,
                ..Default::default()
            }),
        };
        let here = Arc::new(EmptyExec::new(Arc::new(schema.project(&[1]).unwrap())));
        AttachedScanExec::here(scan, here)
    }

    /// A share arrives as it was sent, each task with its workers' files and only the first
    /// with the coordinator's counts; a worker refuses another wire version, and a coordinator
    /// receives none.
    #[tokio::test]
    async fn a_share_arrives_as_it_was_sent() {
        let storage = Storage::open("memory://").unwrap();
        let engine = Engine::with_storage(storage).await.unwrap();
        let worker = AttachedScanCodec::receiving(engine.session().unwrap());
        let coordinator = AttachedScanCodec::sending();
        let converter = DefaultPhysicalProtoConverter {};
        let ctx = TaskContext::default();
        let whole = scan();
        let shares = whole.split(2);
        let mut files = Vec::new();
        for (task, share) in shares.into_iter().enumerate() {
            let mut bytes = Vec::new();
            coordinator
                .try_encode(share.clone(), &mut bytes, &converter)
                .unwrap();
            let received = worker.try_decode(&bytes, &[], &ctx, &converter).unwrap();
            let (sent, got) = (
                share.downcast_ref::<AttachedScanExec>().unwrap().scan(),
                received.downcast_ref::<AttachedScanExec>().unwrap().scan(),
            );
            assert_eq!(
                format!("{:?}", (&got.database, &got.table, &got.metadata_location)),
                format!(
                    "{:?}",
                    (&sent.database, &sent.table, &sent.metadata_location)
                ),
            );
            assert_eq!((got.snapshot, &got.table_id), (42, &sent.table_id));
            assert_eq!((&got.files, &got.workers), (&sent.files, &sent.workers));
            assert_eq!(got.placement, sent.placement);
            assert_eq!((&got.projection, got.limit), (&Some(vec![1]), Some(10)));
            assert_eq!(got.filters, sent.filters);
            assert_eq!((&got.schema, got.partitions), (&sent.schema, 1));
            assert_eq!(got.counts.is_some(), task == 0);
            // Task 0 reads the files of workers 0 and 2, task 1 those of worker 1.
            let workers = [vec![0, 2], vec![1]];
            assert_eq!(got.workers, workers[task]);
            for file in &got.files {
                assert!(got.workers.contains(&got.placement.owner(file)), "{file}");
            }
            files.extend(got.files.iter().cloned());
        }
        files.sort();
        assert_eq!(files, whole.scan().files, "every file in one share");
        let mut bytes = Vec::new();
        coordinator
            .try_encode(Arc::new(scan()), &mut bytes, &converter)
            .unwrap();
        let refused = coordinator.try_decode(&bytes, &[], &ctx, &converter);
        assert!(refused.unwrap_err().to_string().contains("only a worker"));
        let mut message = AttachedScanMessage::decode(bytes.as_slice()).unwrap();
        message.version += 1;
        let newer = worker.try_decode(&message.encode_to_vec(), &[], &ctx, &converter);
        assert!(newer.unwrap_err().to_string().contains("wire version"));
        assert!(
            worker
                .try_decode(&[0xff; 7], &[], &ctx, &converter)
                .is_err()
        );
        // A task dealt no file reads nothing, and asks nothing of the catalog (this worker
        // has none, which any read of the table would report).
        let empty = whole.split(4).pop().unwrap();
        let mut bytes = Vec::new();
        coordinator
            .try_encode(empty, &mut bytes, &converter)
            .unwrap();
        let received = worker.try_decode(&bytes, &[], &ctx, &converter).unwrap();
        let rows = received.execute(0, Arc::new(ctx)).unwrap();
        let batches: Vec<_> = futures::TryStreamExt::try_collect::<Vec<_>>(rows)
            .await
            .unwrap();
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 0);
    }
}
