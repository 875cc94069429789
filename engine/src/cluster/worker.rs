//! A stateless worker: it runs the plan fragments coordinators send (datafusion-distributed),
//! reading the same storage they do. It keeps nothing but caches, all in one runtime shared by
//! every task (sidecar entries and locator pages in the storage's caches, Parquet footers in the
//! runtime's), so the blocks rendezvous placement gives it stay warm across queries; killed and
//! started again it has lost only those.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion_distributed::{DistributedExt, Worker, WorkerQueryContext};
use sieve_storage::Storage;

use crate::cluster::attached_codec::AttachedScanCodec;
use crate::cluster::channels::WorkerChannels;
use crate::cluster::scan_codec::ScanCodec;
use crate::cluster::secret::ClusterSecret;
use crate::cluster::worker_tls::WorkerTls;
use crate::guard::memory::MemoryLimits;
use crate::session::Engine;

/// A worker over `storage`, to be served with `Worker::into_worker_server` (behind
/// [`ClusterSecret::check`] when it has a secret, which it also sends to the workers it calls).
/// With `tls`, it calls other workers (a shuffle's next stage) over TLS as a coordinator does.
/// Its shares of attached tables' scans are planned by a session of `engine` (the one that
/// answers its point lookups: the same attached catalogs, indexes and data cache).
pub fn worker(
    storage: Storage,
    engine: &Engine,
    limits: MemoryLimits,
    secret: Option<ClusterSecret>,
    tls: Option<WorkerTls>,
) -> Result<Worker> {
    let peers = tls
        .as_ref()
        .map(|tls| tls.client_config().map(|c| WorkerChannels::new(Some(c))))
        .transpose()?;
    let session = engine.session()?;
    // The stores the engine's sessions read, the storage's and the attached catalogs'
    // warehouses (a share of an attached table's scan reads its files from the warehouse).
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(limits.server_pool())
        .with_object_store_registry(session.object_stores())
        .build_arc()?;
    let codec = ScanCodec::new(storage);
    let attached = AttachedScanCodec::receiving(session);
    let worker = Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        let (codec, secret, peers) = (codec.clone(), secret.clone(), peers.clone());
        let attached = attached.clone();
        async move {
            // In the coordinator's order (a codec is named by its place).
            let mut builder = (ctx.builder.with_distributed_user_codec(codec))
                .with_distributed_user_codec(attached);
            if let Some(peers) = peers {
                builder = builder.with_distributed_channel_resolver(peers);
            }
            if let Some(secret) = secret {
                builder = builder.with_distributed_passthrough_headers(secret.headers())?;
            }
            // A plan fragment may call the functions Sieve adds: the MySQL ones, and the checked
            // arithmetic its rewrites put in place of `+ - *` on integers.
            let functions = builder.scalar_functions().get_or_insert_default();
            functions.extend(
                crate::dialect::functions::functions()
                    .into_iter()
                    .map(Arc::new),
            );
            functions.push(crate::dialect::checked_arithmetic::checked_udf());
            Ok(builder.build())
        }
    });
    Ok(worker.with_runtime_env(runtime))
}
