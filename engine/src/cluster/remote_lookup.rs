//! A coordinator's point lookup: the short path up to routing, then one call to each worker
//! that owns blocks that may hold the key. A plan per lookup through datafusion-distributed
//! costs many times the lookup (planning, a plan encoded and shipped, a task's stream, a
//! merge); a lookup needs only to reach its key's owner, as Doris sends a point query to the
//! tablet's backend.
//!
//! Min/max statistics and node filters ([`crate::cluster::node_filters`]) choose the workers,
//! so an absent key calls none; each is sent the lookup as a typed message ([`WireLookup`],
//! on the exchange the coordinator keeps with that worker's port,
//! [`crate::cluster::lookup_stream`], with the cluster's TLS and secret) and answers the rows
//! of the blocks it owns under the placement sent, which it reads through its own short path
//! and caches ([`crate::cluster::lookup_service`]). A lookup of an attached Iceberg table is
//! routed the same way by its data files: the coordinator's copy of the table's index and the
//! manifests' bounds choose the files, each read by the worker rendezvous gives its path, so
//! a worker keeps the footers, pages and cached bytes of its own files. Every worker asked answers whole before a
//! row is returned, so a worker lost mid-lookup costs one retry of the whole lookup over the
//! workers live after a probe (its groups then go to their next owner by rendezvous); a second
//! loss is an error naming the worker.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::TryStreamExt;
use sieve_storage::{BlockList, Table};
use tonic::Code;

use crate::cluster::channels::{chain, refusal};
use crate::cluster::coordinator::Cluster;
use crate::cluster::lookup_wire::{WireAnswer, WireLookup, WireOutcome};
use crate::cluster::node_filters::shares_to_ask;
use crate::cluster::placement::Placement;
use crate::scan::routing::RoutingFilters;
use crate::session::query_stream::ScanStats;

/// A lookup bound on the coordinator, to be asked of the workers owning its blocks or files.
pub(crate) struct RemoteLookup {
    pub cluster: Arc<Cluster>,
    /// What the workers read, and so which are asked.
    pub owned: Owned,
    /// What each worker is sent, less its share, the placement and the worker.
    pub wire: WireLookup,
    pub schema: SchemaRef,
    /// What the workers that answered say reading their rows cost, summed.
    pub read: Arc<Mutex<ScanStats>>,
}

/// What a lookup reads, placed over the workers.
pub(crate) enum Owned {
    /// Blocks of a Sieve table, placed by locator group.
    Blocks {
        routing: Arc<RoutingFilters>,
        table: Table,
        /// The blocks of the version the lookup reads.
        blocks: Arc<BlockList>,
        /// The condition, for min/max and the node filters; None with pruning off (every
        /// owner is asked).
        predicate: Option<Arc<dyn PhysicalExpr>>,
        node_filters: bool,
    },
    /// Data files of an attached table the coordinator's pruning left, placed by path.
    Files(Vec<String>),
}

impl Owned {
    /// The workers to ask under `placement`, each with `wire` narrowed to its share.
    fn shares(
        &self,
        placement: Arc<Placement>,
        wire: &WireLookup,
    ) -> Result<Vec<(usize, WireLookup)>> {
        match self {
            Self::Blocks {
                routing,
                table,
                blocks,
                predicate,
                node_filters,
            } => {
                let (shares, mut chosen) = shares_to_ask(
                    routing,
                    table,
                    blocks,
                    predicate.as_ref(),
                    *node_filters,
                    placement,
                )?;
                let mut share = |worker: usize| WireLookup {
                    // Without pruning, the worker reads every block it owns.
                    chosen: predicate.is_some(),
                    chosen_blocks: std::mem::take(&mut chosen[worker]),
                    blocks_listed: blocks.len() as u64,
                    ..wire.clone()
                };
                Ok(shares.workers.iter().map(|&w| (w, share(w))).collect())
            }
            Self::Files(files) => {
                let mut by_owner: BTreeMap<usize, Vec<String>> = BTreeMap::new();
                for file in files {
                    by_owner
                        .entry(placement.owner(file))
                        .or_default()
                        .push(file.clone());
                }
                Ok((by_owner.into_iter())
                    .map(|(worker, files)| {
                        (
                            worker,
                            WireLookup {
                                files,
                                ..wire.clone()
                            },
                        )
                    })
                    .collect())
            }
        }
    }
}

/// A worker's answer to one lookup: its rows and what reading them cost it, or why there are
/// none.
pub(crate) type LookupAnswer = std::result::Result<(Vec<RecordBatch>, ScanStats), Failure>;

/// Why a worker did not answer a lookup (each lookup waiting on a failed exchange gets a copy).
#[derive(Clone)]
pub(crate) enum Failure {
    /// Its connection failed: it may be gone, and its groups another's once probed.
    Lost(String),
    /// It answered with an error, or refused the lookup: asking again would meet it again.
    Refused(String),
}

impl RemoteLookup {
    /// The rows, asked for when first polled (so the statement's deadline and KILL bound the
    /// calls as they bound a scan).
    pub fn rows(self) -> SendableRecordBatchStream {
        let schema = self.schema.clone();
        let rows = futures::stream::once(self.ask())
            .map_ok(|batches| futures::stream::iter(batches.into_iter().map(Ok)))
            .try_flatten();
        Box::pin(RecordBatchStreamAdapter::new(schema, rows))
    }

    async fn ask(self) -> Result<Vec<RecordBatch>> {
        let mut lost_before: Option<String> = None;
        loop {
            let placement = Arc::new(self.cluster.placement()?);
            let shares = self.owned.shares(placement.clone(), &self.wire)?;
            let (cluster, schema) = (&self.cluster, &self.schema);
            let calls = shares.into_iter().map(|(worker, share)| {
                let url = placement.workers()[worker].clone();
                let wire = WireLookup {
                    placement: placement.workers().to_vec(),
                    worker: worker as u32,
                    ..share
                };
                async move {
                    ask_worker(cluster, &url, wire, schema)
                        .await
                        .map_err(|failure| (url, failure))
                }
            });
            match futures::future::try_join_all(calls).await {
                Ok(answers) => {
                    let mut rows = Vec::new();
                    let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
                    for (batches, cost) in answers {
                        rows.extend(batches);
                        read.add(&cost);
                    }
                    return Ok(limited(rows, self.wire.limit));
                }
                Err((url, Failure::Refused(e))) => {
                    return Err(DataFusionError::Execution(format!("worker {url}: {e}")));
                }
                Err((url, Failure::Lost(why))) => {
                    if let Some(first) = lost_before {
                        return Err(DataFusionError::Execution(format!(
                            "a point lookup's owner {url} failed ({why}), after {first}; \
                             workers are probed and the next statement asks the live ones"
                        )));
                    }
                    log::warn!("worker {url} failed a point lookup ({why}); asking again");
                    self.cluster.lost(&url).await;
                    lost_before = Some(format!("{url} failed ({why})"));
                }
            }
        }
    }
}

/// The rows of `wire` from the worker at `url`, as the coordinator's schema types them: the
/// lookup is a message of its own on the exchange with that worker.
async fn ask_worker(
    cluster: &Cluster,
    url: &str,
    wire: WireLookup,
    schema: &SchemaRef,
) -> LookupAnswer {
    crate::metrics::worker_lookup_sent(url);
    let stream = cluster
        .lookup_stream(url)
        .map_err(|e| Failure::Refused(e.to_string()))?;
    let (batches, read) = answer(stream.call(wire).await?)?;
    let batches = batches
        .into_iter()
        .map(|batch| {
            RecordBatch::try_new(schema.clone(), batch.columns().to_vec()).map_err(|e| {
                Failure::Refused(format!(
                    "its rows do not have the lookup's columns ({e}): run coordinators and \
                     workers of one release"
                ))
            })
        })
        .collect::<std::result::Result<_, _>>()?;
    Ok((batches, read))
}

/// One lookup's rows, or the error the worker met answering it.
fn answer(answer: WireAnswer) -> LookupAnswer {
    let malformed = |why: String| Failure::Refused(format!("a malformed answer: {why}"));
    let read = answer
        .read
        .as_ref()
        .map(ScanStats::from)
        .unwrap_or_default();
    match answer.outcome {
        Some(WireOutcome::Rows(ipc)) => StreamReader::try_new(std::io::Cursor::new(ipc), None)
            .and_then(|rows| rows.collect())
            .map(|batches| (batches, read))
            .map_err(|e| malformed(e.to_string())),
        Some(WireOutcome::Error(error)) => Err(Failure::Refused(error)),
        None => Err(malformed("no outcome".into())),
    }
}

/// A gRPC status as a lost worker (its transport failed) or an answer not to ask again.
pub(crate) fn failure(status: tonic::Status) -> Failure {
    // tonic's own message for a transport error is "transport error"; its sources say which.
    let text = chain(&status);
    if let Some(refused) = refusal(&text) {
        return Failure::Refused(refused.to_string());
    }
    match status.code() {
        // What tonic reports of a connection refused, reset or cut mid-answer.
        Code::Unavailable | Code::Unknown | Code::Cancelled => Failure::Lost(text),
        _ => Failure::Refused(text),
    }
}

/// At most `limit` rows of `batches`: each worker answers at most that many.
fn limited(batches: Vec<RecordBatch>, limit: Option<u64>) -> Vec<RecordBatch> {
    let Some(mut left) = limit.map(|n| n as usize) else {
        return batches;
    };
    let mut kept = Vec::with_capacity(batches.len());
    for batch in batches {
        if left == 0 {
            break;
        }
        let take = batch.num_rows().min(left);
        left -= take;
        kept.push(batch.slice(0, take));
    }
    kept
}
