//! `sieve worker`: a stateless worker coordinators (`sieve serve --workers …`) send plan
//! fragments to over gRPC; it reads the same storage they do and keeps only caches.

use std::net::{IpAddr, SocketAddr};

use clap::Args;
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
}

pub async fn run(location: &Location, args: WorkerArgs, config: &ConfigFile) -> Result<(), String> {
    let storage = location.storage()?;
    let url = storage.url().to_string();
    let worker =
        sieve_engine::worker(storage, config.memory_limits()).map_err(|e| e.to_string())?;
    let address = SocketAddr::new(args.host.unwrap_or(IpAddr::from([127, 0, 0, 1])), args.port);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    log::info!("worker listening on http://{bound}, storage {url}");
    if !bound.ip().is_loopback() {
        log::warn!("workers do not authenticate coordinators: keep {bound} on a private network");
    }
    Server::builder()
        .add_service(worker.into_worker_server())
        // No Nagle: a task's small frames otherwise wait for the peer's delayed ACK (40 ms a
        // point lookup, measured), which tonic turns off only on sockets it binds itself.
        .serve_with_incoming_shutdown(
            TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown_signal(),
        )
        .await
        .map_err(|e| format!("worker on {bound} failed: {e}"))
}
