//! The MySQL wire protocol, server side: login (with its throttle), command dispatch, prepared
//! statements, result encoding, KILL, and the transaction statements answered as no-ops.
//!
//! Written here rather than taken from a crate: opensrv-mysql 0.7.0, the maintained server-side
//! crate, answered pipelined commands from freed memory, closed connections on an unknown
//! statement id, panicked on malformed COM_STMT_EXECUTE packets, answered commands it did not
//! know (COM_STATISTICS) with a bare OK, and has no API for column lengths, decimals or table
//! names, nor for multi-statement results. mysql_common (the client side of mysql_async) does
//! not parse what a server reads. The protocol itself is small and stable; each module is one
//! part of it, and every read is checked so that no packet can panic the server.

mod auth;
mod columns;
mod connection;
mod handshake;
mod kill;
pub mod metrics;
mod packets;
mod params;
mod pending_logins;
mod replies;
mod rsa_key;
mod server_status;
mod tls;
mod wire;

pub use connection::{Connection, Shared};
pub use kill::Connections;
pub use packets::GuardLimits;
pub use pending_logins::{PendingLimits, PendingLogins};
pub use replies::{error, error_packet};
pub use rsa_key::RsaKey;
pub use server_status::ServerStatus;
pub use tls::{TlsFiles, acceptor as tls_acceptor, self_signed};
pub use tokio_rustls::TlsAcceptor;
