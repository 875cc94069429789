//! `sieve serve`: the MySQL wire protocol over one storage, a session per connection.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use clap::Args;
use sieve_engine::{Engine, ServerLimits};
use sieve_flight::FlightSettings;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tonic::transport::{Identity, ServerTlsConfig};

use crate::config::ConfigFile;
use crate::metrics_http;
use prometheus_client::registry::Registry;
use sieve_engine::AuthPlugin;
use sieve_mysql::{
    Connection, Connections, PendingLogins, RsaKey, ServerStatus, Shared, TlsFiles, self_signed,
    tls_acceptor,
};

/// How long accepting waits after an error (out of file descriptors, say) before trying again;
/// doubles while errors go on, so a full descriptor table costs no CPU and little log.
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(1));

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1]; anything but loopback needs a password
    #[arg(long)]
    host: Option<IpAddr>,
    /// [default: 3307]; 0 picks a free one (the log says which)
    #[arg(long)]
    port: Option<u16>,
    /// The account clients log in as [default: root]
    #[arg(long, env = "SIEVE_USER")]
    user: Option<String>,
    /// Its password [default: none, allowed on loopback only]
    #[arg(long, env = "SIEVE_PASSWORD", hide_env_values = true)]
    password: Option<String>,
    /// Workers (`sieve worker`) to run scans on, as http://host:port,http://host:port; blocks
    /// are placed on them by rendezvous hashing. Without it everything runs in this process
    #[arg(long, env = "SIEVE_WORKERS", value_delimiter = ',')]
    pub workers: Vec<String>,
    /// The secret the workers were started with (`sieve worker --cluster-secret`)
    #[arg(long, env = "SIEVE_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,
    /// The CA (PEM) that signed the certificates of https:// workers
    #[arg(long, env = "SIEVE_WORKER_TLS_CA")]
    pub worker_tls_ca: Option<PathBuf>,
    /// TLS certificate chain (PEM) for the MySQL port; without it the server makes one at first
    /// start and keeps it in --tls-dir
    #[arg(long, env = "SIEVE_TLS_CERT")]
    tls_cert: Option<PathBuf>,
    /// Its private key (PEM)
    #[arg(long, env = "SIEVE_TLS_KEY")]
    tls_key: Option<PathBuf>,
    /// Where the server keeps the certificate it makes, and the RSA key a client without TLS
    /// encrypts its password to [default: ./sieve-tls]
    #[arg(long, env = "SIEVE_TLS_DIR")]
    tls_dir: Option<PathBuf>,
    /// MiB of routing filters kept in memory (default 2048, about a billion keys): lookups skip
    /// the locator groups they rule out, a coordinator the workers; groups beyond the budget
    /// are always probed and their owners asked
    #[arg(long, env = "SIEVE_NODE_FILTER_MIB")]
    pub node_filter_mib: Option<usize>,
    /// Also serve Arrow Flight SQL (ADBC, the Flight SQL JDBC driver) on this port, same host,
    /// user and password
    #[arg(long, env = "SIEVE_FLIGHT_PORT")]
    flight_port: Option<u16>,
    /// Serve Prometheus metrics at http://host:port/metrics (same host)
    #[arg(long, env = "SIEVE_METRICS_PORT")]
    metrics_port: Option<u16>,
}

/// The certificate the MySQL port offers (and the Flight SQL port, with `flight_tls`): the
/// configured one, or the one this server made (for `localhost`, loopback and the listening
/// address); none if the config says `tls = false`.
fn tls(args: &ServeArgs, config: &ConfigFile, host: IpAddr) -> Result<Option<TlsFiles>, String> {
    if config.tls == Some(false) {
        return Ok(None);
    }
    let cert = args.tls_cert.clone().or(config.tls_cert.clone());
    let key = args.tls_key.clone().or(config.tls_key.clone());
    let files = match (cert, key) {
        (Some(cert), Some(key)) => TlsFiles { cert, key },
        (None, None) => self_signed(&tls_dir(args, config), &certificate_names(host))?,
        _ => return Err("--tls-cert and --tls-key go together".into()),
    };
    Ok(Some(files))
}

/// The names the self-made certificate is for: loopback's, the address the server listens on,
/// and, listening on every address, the machine's host name (which clients elsewhere use).
fn certificate_names(host: IpAddr) -> Vec<String> {
    let mut names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    if host.is_unspecified() {
        match nix::unistd::gethostname().map(|n| n.into_string()) {
            Ok(Ok(name)) if !name.is_empty() && name != "localhost" => names.push(name),
            _ => {}
        }
    } else if !names.contains(&host.to_string()) {
        names.push(host.to_string());
    }
    names
}

/// The Flight SQL port's TLS: gRPC cannot switch to TLS on a connection as MySQL's handshake
/// does, so the port is either TLS or plain. TLS (the MySQL port's certificate) unless the
/// server listens on loopback only, the config turns TLS off (`tls = false`), or
/// `flight_tls = false` says otherwise.
fn flight_tls(
    config: &ConfigFile,
    files: Option<&TlsFiles>,
    host: IpAddr,
) -> Result<Option<ServerTlsConfig>, String> {
    let wanted = config
        .flight_tls
        .unwrap_or(!host.is_loopback() && files.is_some());
    if !wanted {
        if !host.is_loopback() && config.require_secure_transport == Some(true) {
            return Err(
                "flight_tls = false beyond loopback: require_secure_transport refuses plain logins"
                    .into(),
            );
        }
        return Ok(None);
    }
    let Some(files) = files else {
        return Err(
            "flight_tls needs the server's certificate, and tls = false turns it off".into(),
        );
    };
    let read = |path: &PathBuf| {
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let identity = Identity::from_pem(read(&files.cert)?, read(&files.key)?);
    Ok(Some(ServerTlsConfig::new().identity(identity)))
}

fn tls_dir(args: &ServeArgs, config: &ConfigFile) -> PathBuf {
    args.tls_dir
        .clone()
        .or(config.tls_dir.clone())
        .unwrap_or_else(|| PathBuf::from("sieve-tls"))
}

async fn back_off(backoff: &mut Duration) {
    tokio::time::sleep(*backoff).await;
    *backoff = (*backoff * 2).min(ACCEPT_BACKOFF.1);
}

pub(crate) async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("SIGTERM handler installs");
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}

/// A second handle on a connection's socket, for noticing the client leave mid-statement.
fn duplicate(stream: &TcpStream) -> std::io::Result<TcpStream> {
    let fd = socket2::SockRef::from(stream).try_clone()?;
    TcpStream::from_std(std::net::TcpStream::from(fd))
}

pub async fn serve(engine: Engine, args: ServeArgs, config: ConfigFile) -> Result<(), String> {
    let limits = config.connection_limits();
    let host = args
        .host
        .or(config.host)
        .unwrap_or(IpAddr::from([127, 0, 0, 1]));
    let port = args.port.or(config.port).unwrap_or(3307);
    let tls_files = tls(&args, &config, host)?;
    let tls = tls_files.as_ref().map(tls_acceptor).transpose()?;
    let flight_port = args.flight_port.or(config.flight_port);
    let flight_tls = match flight_port {
        Some(_) => flight_tls(&config, tls_files.as_ref(), host)?,
        None => None,
    };
    let rsa_dir = tls_dir(&args, &config);
    let plugin = match config.default_authentication_plugin.as_deref() {
        None => AuthPlugin::CachingSha2,
        Some(name) => AuthPlugin::named(name).ok_or_else(|| {
            format!(
                "default_authentication_plugin = {name:?}: use {:?} or {:?}",
                AuthPlugin::CachingSha2.name(),
                AuthPlugin::Native.name()
            )
        })?,
    };
    let user = args.user.or(config.user).unwrap_or_else(|| "root".into());
    let password = args.password.or(config.password).unwrap_or_default();
    if !host.is_loopback() && password.is_empty() {
        return Err(format!(
            "refusing to listen on {host} without a password: set --password, SIEVE_PASSWORD or password in --config"
        ));
    }
    engine.access().set_root(user, plugin, &password);
    let address = SocketAddr::new(host, port);
    let listener = TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let flight = match flight_port {
        Some(flight_port) => {
            let settings = FlightSettings {
                address: SocketAddr::new(host, flight_port),
                tls: flight_tls,
            };
            Some(tokio::spawn(sieve_flight::serve(engine.clone(), settings)?))
        }
        None => None,
    };
    // Held until the server stops: the attached tables' indexes follow their snapshots.
    let _indexer = engine.follow_attached_tables();
    let connections = Arc::new(Connections::default());
    let shared = Arc::new(Shared {
        access: engine.access(),
        rsa_key: Arc::new(RsaKey::in_dir(rsa_dir)),
        pending: Arc::new(PendingLogins::new(limits.pending)),
        slots: Arc::new(Semaphore::new(limits.max_connections)),
        tls,
        require_secure_transport: config.require_secure_transport.unwrap_or(false),
        // MySQL's rule: a client's file goes only to a server that asks in answer to its own
        // statement; off by default where strangers can connect.
        local_infile: config.local_infile.unwrap_or(host.is_loopback()),
        connections: connections.clone(),
        status: Arc::new(ServerStatus::default()),
        limits: limits.guard,
    });
    let metrics = match args.metrics_port.or(config.metrics_port) {
        Some(metrics_port) => {
            let mut registry = Registry::with_prefix("sieve");
            sieve_engine::metrics::register(&mut registry, &engine);
            sieve_mysql::metrics::register(&mut registry, shared.clone());
            Some(metrics_http::serve(SocketAddr::new(host, metrics_port), registry).await?)
        }
        None => None,
    };
    let mut backoff = ACCEPT_BACKOFF.0;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    log::info!(
        "serving the MySQL protocol on {bound}, storage {}",
        engine.storage().url()
    );
    let ids = AtomicU32::new(1);
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(c) => {
                        backoff = ACCEPT_BACKOFF.0;
                        c
                    }
                    Err(e) => {
                        log::warn!("accept failed, next try in {backoff:?}: {e}");
                        back_off(&mut backoff).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let watcher = match duplicate(&stream) {
                    Ok(w) => Arc::new(w),
                    Err(e) => {
                        // Out of descriptors too: back off as for accept.
                        log::warn!("cannot watch connection from {peer}, next try in {backoff:?}: {e}");
                        back_off(&mut backoff).await;
                        continue;
                    }
                };
                let session = match engine.session() {
                    Ok(s) => s,
                    Err(e) => {
                        log::warn!("cannot open a session for {peer}: {e}");
                        continue;
                    }
                };
                session.set_server_limits(ServerLimits {
                    max_allowed_packet: limits.guard.max_allowed_packet as u64,
                    wait_timeout: limits.guard.idle_timeout.as_secs(),
                });
                let connection = Connection::new(session, watcher, shared.clone(), ids.fetch_add(1, Ordering::Relaxed));
                tokio::spawn(async move {
                    if let Err(e) = connection.run(stream).await {
                        log::debug!("connection from {peer} ended: {e}");
                    }
                });
            }
            _ = &mut shutdown => {
                // Statements still running are dropped: nothing uncommitted becomes visible.
                log::info!("shutting down");
                if let Some(flight) = flight {
                    flight.abort();
                }
                if let Some(metrics) = metrics {
                    metrics.abort();
                }
                return Ok(());
            }
        }
    }
}
