//! The gRPC channels a coordinator keeps to its workers: one per worker, shared by every session,
//! and made again when the probe sees the worker go down or come back.
//!
//! datafusion-distributed's default keeps a channel per URL in a cache keyed by the address of
//! the session's RuntimeEnv. Sieve makes a RuntimeEnv per session, so a new session could find
//! the channels of a dropped one whose RuntimeEnv had the same address, opened to a worker since
//! killed and restarted. A query then failed 10 s after the restart with the worker "waiting for
//! the plan to be set by the coordinator": the plan goes to the worker on one RPC and the rows
//! come back on another, and a channel still bound to the dead connection lost the first.
//! Forgetting a worker's channel whenever its liveness changes (and every channel after a
//! transport failure) means the first query after it returns opens a fresh connection.
//!
//! Over TLS ([`crate::cluster::worker_tls`]) the channel is made here, connected when first
//! asked for: a worker that cannot be reached fails with the default resolver's error text,
//! which the coordinator reads as a lost worker; one whose TLS handshake fails (a certificate
//! not trusted, one required and not given) with [`TLS_REFUSED`], which it does not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::common::exec_datafusion_err;
use datafusion::error::DataFusionError;
use datafusion_distributed::grpc::{
    BoxCloneSyncChannel, DefaultChannelResolver, create_worker_client,
};
use datafusion_distributed::{ChannelResolver, WorkerChannel};
use tokio::sync::OnceCell;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use url::Url;

use crate::cluster::lookup_stream::LookupStream;
use crate::cluster::secret::{ClusterSecret, REFUSED};

/// How long connecting to a worker may take before the query is told it is lost.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// What a query meets when a worker's TLS handshake fails: not a lost worker (every query would
/// meet it again), so it is not routed around.
pub(crate) const TLS_REFUSED: &str = "TLS between the coordinator and a worker failed: check \
     worker_tls_ca, worker_tls_client_cert/key and the worker's --tls-cert and --tls-client-ca";

/// Whether an error's text is a TLS handshake's refusal (rustls's certificate errors and
/// alerts), not a connection lost.
pub(crate) fn is_tls_refusal(text: &str) -> bool {
    [
        "certificate",
        "received fatal alert",
        "CertificateRequired",
        "UnknownIssuer",
    ]
    .iter()
    .any(|mark| text.contains(mark))
}

/// An error and its sources, as one line: tonic's transport error alone says only
/// "transport error".
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}

/// How every channel to a worker connects: bounded in time, without Nagle, over TLS when given.
fn endpoint(url: &Url, tls: Option<ClientTlsConfig>) -> Result<Endpoint, DataFusionError> {
    let endpoint = Channel::from_shared(url.to_string())
        .map_err(|e| exec_datafusion_err!("worker URL {url}: {e}"))?
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true);
    match tls {
        Some(tls) => endpoint
            .tls_config(tls)
            .map_err(|e| exec_datafusion_err!("worker {url}: {}", chain(&e))),
        None => Ok(endpoint),
    }
}

/// A worker's refusal in `text` (no cluster secret, a certificate not taken), as the error to
/// report: not a lost worker to route around, since every call would meet it again.
pub(crate) fn refusal(text: &str) -> Option<DataFusionError> {
    if text.contains(REFUSED) {
        return Some(DataFusionError::Execution(REFUSED.to_string()));
    }
    if let Some(at) = text.find(TLS_REFUSED) {
        return Some(DataFusionError::Execution(text[at..].to_string()));
    }
    is_tls_refusal(text).then(|| DataFusionError::Execution(format!("{TLS_REFUSED}: {text}")))
}

/// `map` locked, poisoned or not.
pub(crate) fn lock<T>(map: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A map of handles (channels, senders) cannot be left half-changed by a panic.
    map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A worker's channel: the default resolver's (plain), or one made over TLS when first used.
#[derive(Clone)]
enum Link {
    Plain(DefaultChannelResolver),
    Tls(Arc<OnceCell<BoxCloneSyncChannel>>),
}

/// Channels by worker URL, so forgetting one drops its channel.
#[derive(Clone, Default)]
pub(crate) struct WorkerChannels {
    links: Arc<Mutex<HashMap<Url, Link>>>,
    /// For point lookups ([`crate::cluster::remote_lookup`]): an exchange on a channel of
    /// their own to the same port, so a lookup does not queue behind a scan's streams.
    lookups: Arc<Mutex<HashMap<Url, Arc<LookupStream>>>>,
    /// For `https://` workers.
    tls: Option<ClientTlsConfig>,
}

impl std::fmt::Debug for WorkerChannels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.resolvers().keys()).finish()
    }
}

impl WorkerChannels {
    pub(crate) fn new(tls: Option<ClientTlsConfig>) -> Self {
        Self {
            links: Arc::default(),
            lookups: Arc::default(),
            tls,
        }
    }

    /// The next query to `url` opens a new connection.
    pub(crate) fn forget(&self, url: &Url) {
        self.resolvers().remove(url);
        lock(&self.lookups).remove(url);
    }

    /// Every worker's next query opens a new connection (after a transport failure, whose
    /// worker is not known).
    pub(crate) fn forget_all(&self) {
        self.resolvers().clear();
        lock(&self.lookups).clear();
    }

    /// The exchange point lookups to `url` take: opened once (connected when first used, over
    /// TLS for `https://`) and kept until the worker is forgotten or the exchange ends.
    pub(crate) fn lookup_stream(
        &self,
        url: &Url,
        secret: Option<&ClusterSecret>,
    ) -> Result<Arc<LookupStream>, DataFusionError> {
        let mut lookups = lock(&self.lookups);
        if let Some(stream) = lookups.get(url).filter(|stream| !stream.ended()) {
            return Ok(stream.clone());
        }
        let tls = match url.scheme() {
            "https" => Some(self.tls.clone().ok_or_else(|| {
                exec_datafusion_err!("worker URL {url}: https needs worker_tls_ca")
            })?),
            _ => None,
        };
        let stream = Arc::new(LookupStream::open(
            endpoint(url, tls)?.connect_lazy(),
            secret,
        ));
        lookups.insert(url.clone(), stream.clone());
        Ok(stream)
    }

    fn resolvers(&self) -> std::sync::MutexGuard<'_, HashMap<Url, Link>> {
        lock(&self.links)
    }

    /// A channel to `url` over TLS, connected.
    async fn connect_tls(
        url: &Url,
        tls: ClientTlsConfig,
    ) -> Result<BoxCloneSyncChannel, DataFusionError> {
        let channel = endpoint(url, Some(tls))?.connect().await.map_err(|e| {
            let cause = chain(&e);
            if is_tls_refusal(&cause) {
                exec_datafusion_err!("{TLS_REFUSED} ({url}): {cause}")
            } else {
                exec_datafusion_err!(
                    "Error connecting to Distributed DataFusion worker on '{url}': {cause}"
                )
            }
        })?;
        Ok(BoxCloneSyncChannel::new(channel))
    }
}

#[async_trait]
impl ChannelResolver for WorkerChannels {
    async fn get_worker_client_for_url(
        &self,
        url: &Url,
    ) -> Result<Box<dyn WorkerChannel>, DataFusionError> {
        let link = self
            .resolvers()
            .entry(url.clone())
            .or_insert_with(|| match url.scheme() {
                "https" => Link::Tls(Arc::default()),
                _ => Link::Plain(DefaultChannelResolver::default()),
            })
            .clone();
        match link {
            Link::Plain(resolver) => resolver.get_worker_client_for_url(url).await,
            Link::Tls(cell) => {
                let Some(tls) = self.tls.clone() else {
                    return Err(exec_datafusion_err!(
                        "worker URL {url}: https needs worker_tls_ca"
                    ));
                };
                let channel = cell
                    .get_or_try_init(|| Self::connect_tls(url, tls))
                    .await?
                    .clone();
                Ok(create_worker_client(channel))
            }
        }
    }
}
