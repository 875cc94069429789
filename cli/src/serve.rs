//! `sieve serve`: the MySQL wire protocol over one storage, a session per connection.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use clap::Args;
use opensrv_mysql::AsyncMysqlIntermediary;
use sieve_engine::Engine;
use tokio::net::{TcpListener, TcpStream};

use crate::auth::Account;
use crate::config::ConfigFile;
use crate::mysql_backend::Backend;

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1]; anything but loopback needs a password
    #[arg(long)]
    host: Option<IpAddr>,
    /// [default: 3307]
    #[arg(long)]
    port: Option<u16>,
    /// The account clients log in as [default: root]
    #[arg(long, env = "SIEVE_USER")]
    user: Option<String>,
    /// Its password [default: none, allowed on loopback only]
    #[arg(long, env = "SIEVE_PASSWORD", hide_env_values = true)]
    password: Option<String>,
}

async fn shutdown_signal() {
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
    let host = args
        .host
        .or(config.host)
        .unwrap_or(IpAddr::from([127, 0, 0, 1]));
    let port = args.port.or(config.port).unwrap_or(3307);
    let user = args.user.or(config.user).unwrap_or_else(|| "root".into());
    let password = args.password.or(config.password).unwrap_or_default();
    if !host.is_loopback() && password.is_empty() {
        return Err(format!(
            "refusing to listen on {host} without a password: set --password, SIEVE_PASSWORD or password in --config"
        ));
    }
    let address = SocketAddr::new(host, port);
    let listener = TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let account = Arc::new(Account { user, password });
    log::info!(
        "serving the MySQL protocol on {address}, storage {}",
        engine.storage().url()
    );
    let ids = AtomicU32::new(1);
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(c) => c,
                    Err(e) => {
                        log::warn!("accept failed: {e}");
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let watcher = match duplicate(&stream) {
                    Ok(w) => w,
                    Err(e) => {
                        log::warn!("cannot watch connection from {peer}: {e}");
                        continue;
                    }
                };
                let session = engine.session().map_err(|e| e.to_string())?;
                let backend = Backend::new(session, watcher, account.clone(), ids.fetch_add(1, Ordering::Relaxed));
                tokio::spawn(async move {
                    let (reader, writer) = stream.into_split();
                    if let Err(e) = AsyncMysqlIntermediary::run_on(backend, reader, writer).await {
                        log::debug!("connection from {peer} ended: {e}");
                    }
                });
            }
            _ = &mut shutdown => {
                // Statements still running are dropped: nothing uncommitted becomes visible.
                log::info!("shutting down");
                return Ok(());
            }
        }
    }
}
