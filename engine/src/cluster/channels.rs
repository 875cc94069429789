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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::error::DataFusionError;
use datafusion_distributed::grpc::DefaultChannelResolver;
use datafusion_distributed::{ChannelResolver, WorkerChannel};
use url::Url;

/// Channels by worker URL; a resolver per URL, so forgetting one drops its cached channel.
#[derive(Clone, Default)]
pub(crate) struct WorkerChannels(Arc<Mutex<HashMap<Url, DefaultChannelResolver>>>);

impl std::fmt::Debug for WorkerChannels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.resolvers().keys()).finish()
    }
}

impl WorkerChannels {
    /// The next query to `url` opens a new connection.
    pub(crate) fn forget(&self, url: &Url) {
        self.resolvers().remove(url);
    }

    /// Every worker's next query opens a new connection (after a transport failure, whose
    /// worker is not known).
    pub(crate) fn forget_all(&self) {
        self.resolvers().clear();
    }

    fn resolvers(&self) -> std::sync::MutexGuard<'_, HashMap<Url, DefaultChannelResolver>> {
        // A map of handles cannot be left half-changed by a panic.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl ChannelResolver for WorkerChannels {
    async fn get_worker_client_for_url(
        &self,
        url: &Url,
    ) -> Result<Box<dyn WorkerChannel>, DataFusionError> {
        let resolver = self.resolvers().entry(url.clone()).or_default().clone();
        resolver.get_worker_client_for_url(url).await
    }
}
