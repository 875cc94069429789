//! A coordinator's view of its workers, and how a Sieve scan is split among them on
//! datafusion-distributed. The scan is planned with its snapshot pinned and the live workers'
//! [`Placement`]; the distributed planner asks how many tasks it wants (one per worker, at
//! least two, see below), splits it into one variant per task, each reading the blocks its
//! workers own, and sends each task to the worker that owns its blocks, so that worker's caches
//! (sidecars, locator pages, Parquet footers) serve the same blocks query after query.
//!
//! At least two tasks: datafusion-distributed removes the network boundary of a one-task stage
//! (`prepare_network_boundaries`), which would run a one-worker scan on the coordinator. A scan
//! that needs one worker gets a second, empty task sent to the same worker instead.
//!
//! Which workers are live is probed in the background (a TCP connect every
//! [`PROBE_INTERVAL`]); a query is planned over the live ones, so after a worker dies the next
//! query routes around it, and a worker that comes back takes its share back. A read that loses
//! a worker before its first row is planned again at once (the session does that); any other
//! loss is a [`WorkerFailed`] error.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{exec_err, plan_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_distributed::{
    DesiredTaskCountEvent, DesiredTaskCountEventResponse, DistributedExt, DistributedLeafExec,
    RouteTasksEvent, RouteTasksEventResponse, ScaleUpLeafNodeEvent, ScaleUpLeafNodeEventResponse,
    SessionStateBuilderExt, WorkerResolver,
};
use url::Url;

use sieve_storage::Storage;

use crate::cluster::attached_codec::AttachedScanCodec;
use crate::cluster::attached_scan::AttachedScanExec;
use crate::cluster::bounded_analyze::BoundedAnalyzePlanner;
use crate::cluster::channels::{WorkerChannels, refusal};
use crate::cluster::lookup_stream::LookupStream;
use crate::cluster::placement::Placement;
use crate::cluster::scan_codec::ScanCodec;
use crate::cluster::secret::ClusterSecret;
use crate::cluster::worker_tls::{WorkerTls, is_loopback};
use crate::scan::exec::{ScanRequest, Shares, SieveScanExec};

/// How often each worker's port is tried.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(500);
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// How a coordinator uses its workers.
#[derive(Debug, Clone)]
pub struct ClusterSettings {
    /// Sent on every call to a worker, which refuses calls without it when it has one.
    pub secret: Option<ClusterSecret>,
    /// For `https://` workers: the CA their certificates are checked against, and the
    /// coordinator's own certificate for workers that require one.
    pub tls: Option<WorkerTls>,
}

/// The workers a coordinator was given, and which of them answer.
#[derive(Debug)]
pub struct Cluster {
    /// Each worker's URL, and the `host:port` probed (resolved on every probe: a restarted
    /// container may come back on another address).
    workers: Vec<(Url, String)>,
    live: Vec<AtomicBool>,
    secret: Option<ClusterSecret>,
    channels: WorkerChannels,
}

impl Cluster {
    /// Checks every URL (`https://host:port`, or `http://` on loopback), probes each once, and
    /// keeps probing in the background for as long as the cluster is in use.
    pub async fn start(urls: &[String], settings: ClusterSettings) -> Result<Arc<Self>> {
        if urls.is_empty() {
            return plan_err!("--workers lists no worker");
        }
        let tls = settings
            .tls
            .as_ref()
            .map(WorkerTls::client_config)
            .transpose()?;
        let mut workers = Vec::with_capacity(urls.len());
        for text in urls {
            let url = Url::parse(text.trim())
                .map_err(|e| DataFusionError::Configuration(format!("worker URL {text:?}: {e}")))?;
            let addr = match (url.scheme(), url.host_str(), url.port()) {
                ("http" | "https", Some(host), Some(port)) => format!("{host}:{port}"),
                _ => {
                    return Err(DataFusionError::Configuration(format!(
                        "worker URL {text:?}: expected https://host:port (or http:// on loopback)"
                    )));
                }
            };
            let refused = match url.scheme() {
                "http" if !is_loopback(&url) => Some(
                    "a plain link beyond loopback would carry the cluster secret and every row \
                     in clear: use https:// with worker_tls_ca",
                ),
                "https" if tls.is_none() => {
                    Some("https needs worker_tls_ca, the CA that signed the workers' certificates")
                }
                _ => None,
            };
            if let Some(why) = refused {
                return Err(DataFusionError::Configuration(format!(
                    "worker URL {text:?}: {why}"
                )));
            }
            if workers.iter().any(|(u, _)| u == &url) {
                return Err(DataFusionError::Configuration(format!(
                    "worker {url} is listed twice"
                )));
            }
            workers.push((url, addr));
        }
        let live = workers.iter().map(|_| AtomicBool::new(false)).collect();
        let cluster = Arc::new(Self {
            workers,
            live,
            secret: settings.secret,
            channels: WorkerChannels::new(tls),
        });
        cluster.probe().await;
        let weak = Arc::downgrade(&cluster);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(PROBE_INTERVAL).await;
                let Some(cluster) = weak.upgrade() else {
                    return;
                };
                cluster.probe().await;
            }
        });
        Ok(cluster)
    }

    /// Tries every worker's port now, marking each live or not.
    pub(crate) async fn probe(&self) {
        let tries = self.workers.iter().map(|(_, addr)| async move {
            matches!(
                tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect(addr.as_str()))
                    .await,
                Ok(Ok(_))
            )
        });
        for ((url, _), (live, up)) in self
            .workers
            .iter()
            .zip(self.live.iter().zip(futures::future::join_all(tries).await))
        {
            if live.swap(up, Ordering::Relaxed) != up {
                // A channel to the worker as it was may be bound to a dead connection.
                self.channels.forget(url);
                if up {
                    log::info!("worker {url} is up");
                } else {
                    log::warn!("worker {url} is down: its blocks go to the others");
                }
            }
        }
    }

    /// The live workers, in the order they were listed.
    pub fn live(&self) -> Vec<Url> {
        self.workers
            .iter()
            .zip(&self.live)
            .filter(|(_, live)| live.load(Ordering::Relaxed))
            .map(|((url, _), _)| url.clone())
            .collect()
    }

    /// The placement a scan planned now uses: over the live workers; an error if none is.
    pub fn placement(&self) -> Result<Placement> {
        let live = self.live();
        if live.is_empty() {
            let all: Vec<String> = self.workers.iter().map(|(u, _)| u.to_string()).collect();
            return exec_err!("no worker is reachable ({})", all.join(", "));
        }
        Ok(Placement::new(live.iter().map(Url::to_string).collect()))
    }

    /// The exchange point lookups to the worker named `url` take.
    pub(crate) fn lookup_stream(&self, url: &str) -> Result<Arc<LookupStream>> {
        let url =
            Url::parse(url).map_err(|e| DataFusionError::Internal(format!("worker {url}: {e}")))?;
        self.channels.lookup_stream(&url, self.secret.as_ref())
    }

    /// After a call to the worker named `url` failed in transport: its next call opens a new
    /// connection, and every worker is probed now, so a lookup asked again goes to the live.
    pub(crate) async fn lost(&self, url: &str) {
        if let Ok(url) = Url::parse(url) {
            self.channels.forget(&url);
        }
        self.probe().await;
    }

    /// What the distributed planner asks: the live workers, shared with this cluster.
    pub fn resolver(self: &Arc<Self>) -> LiveWorkers {
        LiveWorkers(self.clone())
    }
}

/// A query lost a worker (it died, or its connection broke) while running on it.
#[derive(Debug, thiserror::Error)]
#[error(
    "a worker failed during the query ({0}); workers are probed every {PROBE_INTERVAL:?} and \
     the next query runs on the live ones"
)]
pub struct WorkerFailed(String);

impl WorkerFailed {
    pub fn is(error: &DataFusionError) -> bool {
        matches!(error.find_root(), DataFusionError::External(e) if e.is::<WorkerFailed>())
    }
}

impl Cluster {
    /// `error` as [`WorkerFailed`] if it is a worker's transport failing (gRPC status or
    /// connection error), which also probes the workers at once; else `error` unchanged.
    pub fn explain_failure(self: &Arc<Self>, error: DataFusionError) -> DataFusionError {
        // The gRPC status may sit under DataFusion, Arrow or Flight errors, so the whole chain
        // is walked; and a failure one worker met reaching another (a shuffle) arrives as text
        // (datafusion-distributed sends errors between processes as messages), so a status is
        // also recognised by how tonic prints one.
        let mut transport = false;
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&error);
        while let Some(e) = cause {
            let text = e.to_string();
            if let Some(refused) = refusal(&text) {
                return refused;
            }
            transport |= e.is::<tonic::Status>()
                || text.starts_with("code: '")
                || text.contains("Error connecting to Distributed DataFusion worker");
            cause = e.source();
        }
        if !transport {
            return error;
        }
        self.channels.forget_all();
        let cluster = self.clone();
        tokio::spawn(async move { cluster.probe().await });
        DataFusionError::External(Box::new(WorkerFailed(error.find_root().to_string())))
    }
}

/// [`Cluster::live`] as datafusion-distributed's worker resolver.
pub struct LiveWorkers(Arc<Cluster>);

impl WorkerResolver for LiveWorkers {
    fn get_urls(&self) -> Result<Vec<Url>> {
        Ok(self.0.live())
    }
}

/// A session state whose scans, of Sieve's tables and of attached ones, are split among
/// `cluster`'s workers.
pub fn distribute(
    state: SessionStateBuilder,
    cluster: &Arc<Cluster>,
    storage: &Storage,
) -> Result<SessionStateBuilder> {
    let state = match &cluster.secret {
        Some(secret) => state.with_distributed_passthrough_headers(secret.headers())?,
        None => state,
    };
    let mut state = state
        .with_distributed_worker_resolver(cluster.resolver())
        .with_distributed_channel_resolver(cluster.channels.clone())
        .with_distributed_planner()
        .with_distributed_user_codec(ScanCodec::new(storage.clone()))
        // After the Sieve scan's codec, as on the workers (a codec is named by its place).
        .with_distributed_user_codec(AttachedScanCodec::sending())
        .with_distributed_desired_task_count_handler(desired_tasks)
        .with_distributed_scale_up_leaf_node_handler(split_scan)
        .with_distributed_route_tasks_handler(route_to_owners)
        // Not capped at the live workers' count: a one-worker scan still has two tasks.
        .with_distributed_max_tasks_per_stage(cluster.workers.len().max(2))?;
    let Some(distributed) = state.query_planner().take() else {
        return exec_err!("the distributed planner was not installed");
    };
    Ok(state.with_query_planner(Arc::new(BoundedAnalyzePlanner { distributed })))
}

fn sharing(plan: &Arc<dyn ExecutionPlan>) -> Option<(&SieveScanExec, &Shares)> {
    let scan = plan.downcast_ref::<SieveScanExec>()?;
    Some((scan, scan.request().shares.as_ref()?))
}

/// The workers a split scan reads the share of (indices in its placement), and the placement:
/// of a Sieve scan, or of an attached table's.
fn workers_of(plan: &Arc<dyn ExecutionPlan>) -> Option<(&[usize], &Placement)> {
    if let Some((_, shares)) = sharing(plan) {
        return Some((&shares.workers, &shares.placement));
    }
    let scan = plan.downcast_ref::<AttachedScanExec>()?.scan();
    Some((&scan.workers, &scan.placement))
}

/// One task per worker the scan asks, and never fewer than two (see the module's doc).
/// A scan no worker can answer (node filters ruled every one out) is left alone: one task, run
/// by the coordinator, reading nothing.
fn desired_tasks(ev: DesiredTaskCountEvent) -> Option<Result<DesiredTaskCountEventResponse>> {
    let (workers, _) = workers_of(ev.plan)?;
    if workers.is_empty() {
        return None;
    }
    Some(Ok(DesiredTaskCountEventResponse::desired(
        workers.len().max(2),
    )))
}

/// Deals the scan's workers out to `task_count` variants, in turn; variants beyond the number of
/// workers read nothing. With one task the scan is left whole (it reads every worker's share).
fn split_scan(ev: ScaleUpLeafNodeEvent) -> Option<Result<ScaleUpLeafNodeEventResponse>> {
    if ev.task_count < 2 {
        return None;
    }
    if let Some(attached) = ev.plan.downcast_ref::<AttachedScanExec>() {
        let leaf = DistributedLeafExec::try_new(ev.plan.clone(), attached.split(ev.task_count));
        return Some(leaf.map(|leaf| ScaleUpLeafNodeEventResponse::new(Arc::new(leaf))));
    }
    let (scan, shares) = sharing(ev.plan)?;
    let variants: Result<Vec<Arc<dyn ExecutionPlan>>> = (0..ev.task_count)
        .map(|task| {
            let mine = shares
                .workers
                .iter()
                .skip(task)
                .step_by(ev.task_count)
                .copied()
                .collect();
            let request = ScanRequest {
                shares: Some(Shares {
                    workers: mine,
                    // Counted once, by the first task (EXPLAIN ANALYZE sums the tasks' metrics).
                    skipped_by_node_filter: match task {
                        0 => shares.skipped_by_node_filter,
                        _ => 0,
                    },
                    placement: shares.placement.clone(),
                }),
                ..scan.request().clone()
            };
            Ok(Arc::new(SieveScanExec::new(request)?) as Arc<dyn ExecutionPlan>)
        })
        .collect();
    Some(
        variants
            .and_then(|v| DistributedLeafExec::try_new(ev.plan.clone(), v))
            .map(|leaf| ScaleUpLeafNodeEventResponse::new(Arc::new(leaf))),
    )
}

/// Sends each task of a split scan (a Sieve table's or an attached one's) to the worker owning
/// its first share; an empty variant goes where a non-empty one does, so it contacts no other
/// worker. A scan left whole in a one-task stage goes to its first owner.
fn route_to_owners(ev: RouteTasksEvent) -> Option<Result<RouteTasksEventResponse>> {
    let mut owners: Option<Vec<Option<String>>> = None;
    let walked = ev.plan.apply(|node| {
        if let Some(leaf) = node.downcast_ref::<DistributedLeafExec>()
            && workers_of(leaf.original()).is_some()
        {
            owners = Some(
                leaf.variants()
                    .iter()
                    .map(|v| {
                        let (workers, placement) = workers_of(v)?;
                        let first = *workers.first()?;
                        Some(placement.workers()[first].clone())
                    })
                    .collect(),
            );
            return Ok(TreeNodeRecursion::Stop);
        }
        // A scan left whole in a stage of one task (a union's child may be given one): to the
        // first of its owners, whose caches hold its blocks or files.
        if let Some((workers, placement)) = workers_of(node) {
            owners = Some(vec![
                workers.first().map(|&w| placement.workers()[w].clone()),
            ]);
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    if let Err(e) = walked {
        return Some(Err(e));
    }
    let owners = owners?;
    if owners.len() != ev.task_count {
        return None;
    }
    let named: Vec<&String> = owners.iter().flatten().collect();
    let first = *named.first()?;
    let urls: Result<Vec<Url>> = owners
        .iter()
        .enumerate()
        .map(|(i, owner)| {
            let url = owner
                .as_ref()
                .unwrap_or(named.get(i % named.len()).unwrap_or(&first));
            Url::parse(url).map_err(|e| DataFusionError::Internal(format!("worker {url}: {e}")))
        })
        .collect();
    Some(urls.map(RouteTasksEventResponse::new))
}
