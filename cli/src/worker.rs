//! `sieve worker`: a stateless worker coordinators (`sieve serve --workers …`) send plan
//! fragments to over gRPC; it reads the same storage they do and keeps only caches.

use std::net::{IpAddr, SocketAddr};

use clap::Args;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

use crate::config::ConfigFile;
use crate::location::Location;
use crate::serve::shutdown_signal;

#[derive(Args)]
pub struct WorkerArgs {
    /// Address to listen on [default: 127.0.0.1]
    #[arg(long)]
    host: Option<IpAddr>,
    /// Port to listen on; 0 picks a free one (the log says which)
    #[arg(long)]
    port: u16,
    /// Refuse calls that do not carry this secret (coordinators get it from `sieve serve
    /// --cluster-secret`); needed to listen beyond loopback
    #[arg(long, env = "SIEVE_CLUSTER_SECRET", hide_env_values = true)]
    cluster_secret: Option<String>,
}

pub async fn run(location: &Location, args: WorkerArgs, config: &ConfigFile) -> Result<(), String> {
    let storage = location.storage()?;
    let url = storage.url().to_string();
    let secret = crate::cluster_secret(args.cluster_secret.as_ref(), config)?;
    let address = SocketAddr::new(args.host.unwrap_or(IpAddr::from([127, 0, 0, 1])), args.port);
    if secret.is_none() && !address.ip().is_loopback() {
        return Err(format!(
            "refusing to listen on {} without a cluster secret: a worker runs what any caller \
             sends it. Set --cluster-secret, SIEVE_CLUSTER_SECRET or cluster_secret in --config \
             (and the same on the coordinators)",
            address.ip()
        ));
    }
    let worker = sieve_engine::worker(storage, config.memory_limits(), secret.clone())
        .map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    log::info!("worker listening on http://{bound}, storage {url}");
    let service = InterceptedService::new(worker.into_worker_server(), move |call| match &secret {
        Some(secret) => secret.check(call),
        None => Ok(call),
    });
    Server::builder()
        .add_service(service)
        // No Nagle: a task's small frames otherwise wait for the peer's delayed ACK (40 ms a
        // point lookup, measured), which tonic turns off only on sockets it binds itself.
        .serve_with_incoming_shutdown(
            TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown_signal(),
        )
        .await
        .map_err(|e| format!("worker on {bound} failed: {e}"))
}
