//! `sieve serve`: the MySQL wire protocol over one storage, a session per connection.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use clap::Args;
use opensrv_mysql::AsyncMysqlIntermediary;
use sieve_engine::Engine;
use tokio::net::{TcpListener, TcpStream};

use crate::auth::Account;
use crate::mysql_backend::Backend;

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on; anything but loopback needs a password
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    #[arg(long, default_value_t = 3307)]
    port: u16,
    /// The account clients log in as
    #[arg(long, env = "SIEVE_USER", default_value = "root")]
    user: String,
    /// Its password (empty: none, allowed on loopback only)
    #[arg(
        long,
        env = "SIEVE_PASSWORD",
        default_value = "",
        hide_env_values = true
    )]
    password: String,
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

pub async fn serve(engine: Engine, args: ServeArgs) -> Result<(), String> {
    if !args.host.is_loopback() && args.password.is_empty() {
        return Err(format!(
            "refusing to listen on {} without a password: set --password or SIEVE_PASSWORD",
            args.host
        ));
    }
    let address = SocketAddr::new(args.host, args.port);
    let listener = TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let account = Arc::new(Account {
        user: args.user,
        password: args.password,
    });
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
