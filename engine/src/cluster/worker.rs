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

use crate::catalog::storage_url::object_store_url;
use crate::cluster::channels::WorkerChannels;
use crate::cluster::scan_codec::ScanCodec;
use crate::cluster::secret::ClusterSecret;
use crate::cluster::worker_tls::WorkerTls;
use crate::guard::memory::MemoryLimits;

/// A worker over `storage`, to be served with `Worker::into_worker_server` (behind
/// [`ClusterSecret::check`] when it has a secret, which it also sends to the workers it calls).
/// With `tls`, it calls other workers (a shuffle's next stage) over TLS as a coordinator does.
pub fn worker(
    storage: Storage,
    limits: MemoryLimits,
    secret: Option<ClusterSecret>,
    tls: Option<WorkerTls>,
) -> Result<Worker> {
    let peers = tls
        .as_ref()
        .map(|tls| tls.client_config().map(|c| WorkerChannels::new(Some(c))))
        .transpose()?;
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(limits.server_pool())
        .build_arc()?;
    let url = object_store_url(&storage)?;
    runtime.register_object_store(url.as_ref(), storage.store().clone());
    let codec = ScanCodec::new(storage);
    let worker = Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        let (codec, secret, peers) = (codec.clone(), secret.clone(), peers.clone());
        async move {
            let mut builder = ctx.builder.with_distributed_user_codec(codec);
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
