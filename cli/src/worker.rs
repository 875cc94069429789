//! `sieve worker`: a stateless worker coordinators (`sieve serve --workers …`) send plan
//! fragments to over gRPC; it reads the same storage they do and keeps only caches.

use std::net::{IpAddr, SocketAddr};

use clap::Args;
use prometheus_client::registry::Registry;
use std::path::PathBuf;
use tonic::service::interceptor::InterceptedService;

use tonic::transport::server::TcpIncoming;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

use sieve_engine::WorkerTls;

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
    /// TLS certificate chain (PEM) coordinators verify (with `worker_tls_ca`); needed to listen
    /// beyond loopback
    #[arg(long, env = "SIEVE_WORKER_TLS_CERT")]
    tls_cert: Option<PathBuf>,
    /// Its private key (PEM)
    #[arg(long, env = "SIEVE_WORKER_TLS_KEY")]
    tls_key: Option<PathBuf>,
    /// The CA (PEM) that signed the other workers' certificates: this one calls them in
    /// shuffles, presenting its own certificate (the coordinators' `worker_tls_ca`)
    #[arg(long, env = "SIEVE_WORKER_TLS_CA")]
    tls_ca: Option<PathBuf>,
    /// Require coordinators (and other workers) to present a certificate signed by this CA
    /// (PEM): mutual TLS
    #[arg(long, env = "SIEVE_WORKER_TLS_CLIENT_CA")]
    tls_client_ca: Option<PathBuf>,
    /// Serve Prometheus metrics (its object-store requests, caches, memory) on this port
    /// of the same host, at /metrics
    #[arg(long)]
    metrics_port: Option<u16>,
}

/// How the worker calls other workers over TLS: their CA, and its own certificate.
fn peer_tls(args: &WorkerArgs, config: &ConfigFile) -> Result<Option<WorkerTls>, String> {
    let cert = args.tls_cert.clone().or(config.worker_tls_cert.clone());
    let key = args.tls_key.clone().or(config.worker_tls_key.clone());
    let ca = args.tls_ca.clone().or(config.worker_tls_ca.clone());
    match (cert, key, ca) {
        (Some(cert), Some(key), Some(ca)) => Ok(Some(WorkerTls {
            ca,
            identity: Some((cert, key)),
        })),
        (Some(_), Some(_), None) => Err(
            "--tls-cert needs --tls-ca (worker_tls_ca): the CA of the other workers, which this \
             one calls in shuffles"
                .into(),
        ),
        _ => Ok(None),
    }
}

/// The worker's TLS, from its flags or the config; None for a plain (loopback) worker.
fn tls(args: &WorkerArgs, config: &ConfigFile) -> Result<Option<ServerTlsConfig>, String> {
    let cert = args.tls_cert.clone().or(config.worker_tls_cert.clone());
    let key = args.tls_key.clone().or(config.worker_tls_key.clone());
    let client_ca = args
        .tls_client_ca
        .clone()
        .or(config.worker_tls_client_ca.clone());
    let read = |path: &PathBuf, what: &str| {
        std::fs::read(path)
            .map_err(|e| format!("cannot read the worker's {what} {}: {e}", path.display()))
    };
    let (cert, key) = match (cert, key) {
        (Some(cert), Some(key)) => (cert, key),
        (None, None) if client_ca.is_none() => return Ok(None),
        (None, None) => return Err("--tls-client-ca needs --tls-cert and --tls-key".into()),
        _ => return Err("--tls-cert and --tls-key go together".into()),
    };
    let mut config = ServerTlsConfig::new().identity(Identity::from_pem(
        read(&cert, "certificate")?,
        read(&key, "key")?,
    ));
    if let Some(ca) = client_ca {
        config = config.client_ca_root(Certificate::from_pem(read(&ca, "client CA")?));
    }
    Ok(Some(config))
}

pub async fn run(location: &Location, args: WorkerArgs, config: &ConfigFile) -> Result<(), String> {
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
    let tls = tls(&args, config)?;
    if tls.is_none() && !address.ip().is_loopback() {
        return Err(format!(
            "refusing to listen on {} without TLS: the cluster secret and every row would travel \
             in clear. Set --tls-cert and --tls-key (worker_tls_cert, worker_tls_key), and \
             worker_tls_ca on the coordinators",
            address.ip()
        ));
    }
    let peers = peer_tls(&args, config)?;
    // With the attached catalogs: a coordinator sends this worker lookups of their tables too.
    let engine = (location.engine().await?)
        .with_memory_limits(config.memory_limits())
        .map_err(|e| e.to_string())?;
    let url = engine.storage().url().to_string();
    let worker = sieve_engine::worker(&engine, secret.clone(), peers).map_err(|e| e.to_string())?;
    if let Some(port) = args.metrics_port {
        let mut registry = Registry::with_prefix("sieve");
        sieve_engine::metrics::register(&mut registry, &engine);
        // Served until the process ends.
        crate::metrics_http::serve(SocketAddr::new(address.ip(), port), registry).await?;
    }
    let lookups = sieve_engine::LookupService::new(engine);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    log::info!("worker listening on {scheme}://{bound}, storage {url}");
    let check = move |call| match &secret {
        Some(secret) => secret.check(call),
        None => Ok(call),
    };
    let close_lookups = lookups.closer();
    let service = InterceptedService::new(worker.into_worker_server(), check.clone());
    // Point lookups: a Flight service of their own beside the plan fragments', on one port.
    let lookups = InterceptedService::new(lookups.into_server(), check);
    let mut server = Server::builder();
    if let Some(tls) = tls {
        server = server
            .tls_config(tls)
            .map_err(|e| format!("the worker's TLS: {e}"))?;
    }
    server
        .add_service(service)
        .add_service(lookups)
        // No Nagle: a task's small frames otherwise wait for the peer's delayed ACK (40 ms a
        // point lookup, measured), which tonic turns off only on sockets it binds itself.
        .serve_with_incoming_shutdown(
            TcpIncoming::from(listener).with_nodelay(Some(true)),
            async move {
                shutdown_signal().await;
                close_lookups();
            },
        )
        .await
        .map_err(|e| format!("worker on {bound} failed: {e}"))
}
