//! A stateless worker: it runs the plan fragments coordinators send (datafusion-distributed),
//! reading the same storage they do. It keeps nothing but caches, all in one runtime shared by
//! every task (sidecar entries and locator pages in the storage's caches, Parquet footers in the
//! runtime's), so the blocks rendezvous placement gives it stay warm across queries; killed and
//! started again it has lost only those.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion_distributed::{DistributedExt, Worker, WorkerQueryContext};

use crate::cluster::attached_codec::AttachedScanCodec;
use crate::cluster::channels::WorkerChannels;
use crate::cluster::scan_codec::ScanCodec;
use crate::cluster::secret::ClusterSecret;
use crate::cluster::worker_tls::WorkerTls;
use crate::options::SieveOptions;
use crate::session::Engine;

/// A worker over `engine`'s storage, to be served with `Worker::into_worker_server` (behind
/// [`ClusterSecret::check`] when it has a secret, which it also sends to the workers it calls).
/// With `tls`, it calls other workers (a shuffle's next stage) over TLS as a coordinator does.
/// Its tasks run in the engine's runtime and read through the storage's caches, which the
/// engine's sessions answering its point lookups share: one memory pool (the server's budget),
/// one spill directory, one footer cache, one data cache and disk cache directory, and the
/// object stores of the storage and the attached catalogs' warehouses. Its shares of attached
/// tables' scans are planned by one of those sessions (the same catalogs and indexes).
pub fn worker(
    engine: &Engine,
    secret: Option<ClusterSecret>,
    tls: Option<WorkerTls>,
) -> Result<Worker> {
    let peers = tls
        .as_ref()
        .map(|tls| tls.client_config().map(|c| WorkerChannels::new(Some(c))))
        .transpose()?;
    let session = engine.session()?;
    let runtime = engine.runtime();
    let codec = ScanCodec::new(engine.storage().clone());
    let attached = AttachedScanCodec::receiving(session);
    let worker = Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        let (codec, secret, peers) = (codec.clone(), secret.clone(), peers.clone());
        let attached = attached.clone();
        async move {
            // In the coordinator's order (a codec is named by its place).
            let mut builder = (ctx.builder.with_distributed_user_codec(codec))
                .with_distributed_user_codec(attached)
                // The asking session's settings, which its coordinator sends with each task.
                .with_distributed_option_extension_from_headers::<SieveOptions>(&ctx.headers)?;
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
