//! One MySQL connection: login, then each command the client sends, answered in order. Queries
//! run in a Sieve session; prepared statements bind their parameters to the plan as typed values
//! (`sieve_engine::Prepared`); a multi-statement query answers each statement in turn.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::error::DataFusionError;
use sieve_engine::{
    Access, Account, AuthPlugin, Client, ConnectionStatement, ErrorClass, MYSQL_VERSION, Prepared,
    Principal, QueryStream, ReadStatement, Session, classify, redacted,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;

use super::columns::{ColumnDefinition, RowFormat, UTF8MB4, encode_rows};
use super::handshake::{
    HandshakeResponse, SERVER_CAPABILITIES, auth_switch, caching_sha2 as sha2, capability,
    greeting, parse_response,
};
use super::packets::{
    GuardLimits, PRE_AUTH_MAX_PACKET, Packet, PacketReader, PacketWriter, ReadError,
};
use super::params::Bindings;
use super::replies::{
    end_of_rows, eof_packet, error, error_payload, ok_packet, ok_packet_with_info, statistics,
    status,
};
use super::server_status::ServerStatus;
use super::tls;
use crate::auth::{Proof, fast_sha2, verify};
use crate::kill::{Connections, Killable};
use crate::pending_logins::PendingLogins;
use crate::rsa_key::RsaKey;
use sieve_engine::access::privileges::{Object, Privilege};
use sieve_engine::rate;

mod local_infile;
mod login;
mod results;
mod statements;

use login::ClientReader;
use results::mysql_error;
use statements::{statement_id, unknown_statement};

/// Command bytes (COM_*).
mod command {
    pub const QUIT: u8 = 0x01;
    pub const INIT_DB: u8 = 0x02;
    pub const QUERY: u8 = 0x03;
    pub const FIELD_LIST: u8 = 0x04;
    pub const STATISTICS: u8 = 0x09;
    pub const PROCESS_KILL: u8 = 0x0c;
    pub const DEBUG: u8 = 0x0d;
    pub const PING: u8 = 0x0e;
    pub const STMT_PREPARE: u8 = 0x16;
    pub const STMT_EXECUTE: u8 = 0x17;
    pub const STMT_SEND_LONG_DATA: u8 = 0x18;
    pub const STMT_CLOSE: u8 = 0x19;
    pub const STMT_RESET: u8 = 0x1a;
    pub const SET_OPTION: u8 = 0x1b;
    pub const RESET_CONNECTION: u8 = 0x1f;
}

/// What a connection shares with the server: the accounts (with the login throttle), the places of
/// connections logging in and logged in, the other connections (for KILL) and the server's
/// counters.
pub struct Shared {
    pub access: Arc<Access>,
    /// What a client without TLS encrypts its password to for `caching_sha2_password`.
    pub rsa_key: Arc<RsaKey>,
    pub pending: Arc<PendingLogins>,
    /// `max_connections`: a permit per logged-in connection.
    pub slots: Arc<Semaphore>,
    /// TLS, offered to clients when the server has a certificate.
    pub tls: Option<TlsAcceptor>,
    /// Refuse logins without TLS from beyond loopback.
    pub require_secure_transport: bool,
    /// Serve LOAD DATA LOCAL INFILE (MySQL's `local_infile`).
    pub local_infile: bool,
    pub connections: Arc<Connections>,
    pub status: Arc<ServerStatus>,
    pub limits: GuardLimits,
}

pub struct Connection {
    session: Session,
    /// A second handle on the socket, only peeked at to notice a client that went away.
    client: Arc<TcpStream>,
    peer: IpAddr,
    id: u32,
    shared: Arc<Shared>,
    killable: Arc<Killable>,
    salt: [u8; 20],
    /// What both sides offered at login.
    capabilities: u32,
    statements: HashMap<u32, Statement>,
    next_statement: u32,
    /// Statements that wrote since BEGIN, while a client believes it is in a transaction.
    transaction: Option<u64>,
    /// Its place among the logged-in connections (`max_connections`), from login on.
    slot: Option<OwnedSemaphorePermit>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shared.connections.deregister(self.id);
    }
}

/// A prepared statement: its text, and its numbered parameters if it has any. Without
/// parameters it runs as its text does.
struct Statement {
    /// Shared with each execution rather than copied: an execution of a point lookup costs
    /// about as much as copying its parsed statement would.
    sql: Arc<str>,
    prepared: Option<Arc<Prepared>>,
    bindings: Bindings,
}

/// How a statement's answer ended: a client running several statements in one query goes on
/// to the next only after a success, as MySQL does.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Done,
    Failed,
}

type Writer<W> = PacketWriter<W>;

impl Connection {
    pub fn new(session: Session, client: Arc<TcpStream>, shared: Arc<Shared>, id: u32) -> Self {
        // Printable, never NUL: some clients treat the salt as a C string.
        let salt = std::array::from_fn(|_| rand::random_range(b'!'..=b'~'));
        let killable = shared.connections.register(id, client.clone());
        session.set_process_list(shared.connections.clone());
        Self {
            peer: client
                .peer_addr()
                .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip()),
            session,
            client,
            id,
            shared,
            killable,
            salt,
            capabilities: 0,
            statements: HashMap::new(),
            next_statement: 1,
            transaction: None,
            slot: None,
        }
    }

    /// Serves the connection until the client quits or leaves, or breaks a limit.
    pub async fn run(mut self, stream: TcpStream) -> io::Result<()> {
        let Ok(mut pending) = self.shared.pending.admit(self.peer) else {
            log::debug!(
                "refused {} before login: max_pending_logins connections are logging in",
                self.peer
            );
            let mut stream = stream;
            let mut writer = PacketWriter::new(&mut stream);
            writer.packet(&error_payload(error::CON_COUNT, "Too many connections"));
            return writer.flush().await;
        };
        let logged_in = tokio::select! {
            logged_in = self.login(stream) => logged_in?,
            () = pending.pushed_out() => {
                log::debug!("dropped the pending login from {}: newer connections took its place", self.peer);
                None
            }
        };
        drop(pending);
        let Some((mut reader, mut writer)) = logged_in else {
            return Ok(());
        };
        let limits = self.shared.limits;
        loop {
            let deadline = tokio::time::Instant::now() + limits.idle_timeout;
            let waiting = "idle for longer than wait_timeout";
            let packet = match reader
                .next(limits.max_allowed_packet, deadline, waiting)
                .await
            {
                Ok(Some(packet)) => packet,
                Ok(None) => return Ok(()),
                Err(e) => return refuse(&mut writer, e).await,
            };
            writer.reply_to(packet.sequence);
            let go_on = self
                .command(&packet.payload, &mut reader, &mut writer)
                .await?;
            writer.flush().await?;
            if !go_on {
                return Ok(());
            }
        }
    }

    fn status(&self) -> u16 {
        status::AUTOCOMMIT
            | if self.transaction.is_some() {
                status::IN_TRANS
            } else {
                0
            }
    }

    /// Answers one command; false when the connection is to end.
    async fn command<W: AsyncWrite + Unpin>(
        &mut self,
        payload: &[u8],
        r: &mut ClientReader,
        w: &mut Writer<W>,
    ) -> io::Result<bool> {
        let Some((&command, body)) = payload.split_first() else {
            w.packet(&error_payload(
                error::MALFORMED_PACKET,
                "empty command packet",
            ));
            return Ok(true);
        };
        match command {
            command::QUIT => return Ok(false),
            command::PING | command::RESET_CONNECTION | command::STMT_RESET => {
                if command == command::RESET_CONNECTION {
                    self.statements.clear();
                    self.transaction = None;
                }
                if command == command::STMT_RESET {
                    let id = statement_id(body);
                    match self.statements.get_mut(&id) {
                        Some(statement) => statement.bindings.long_data.clear(),
                        None => {
                            w.packet(&unknown_statement(id, "mysqld_stmt_reset"));
                            return Ok(true);
                        }
                    }
                }
                w.packet(&ok_packet(0, self.status()));
            }
            command::INIT_DB => {
                let Some(database) = self.text(body, w) else {
                    return Ok(true);
                };
                match self.session.use_database(database.trim()).await {
                    Ok(()) => w.packet(&ok_packet(0, self.status())),
                    Err(e) => {
                        let (code, message) = results::mysql_error(&e);
                        w.packet(&error_payload(code, &message))
                    }
                }
            }
            command::QUERY => {
                let Some(sql) = self.text(body, w) else {
                    return Ok(true);
                };
                self.query(sql, r, w).await?;
            }
            command::STMT_PREPARE => {
                let Some(sql) = self.text(body, w) else {
                    return Ok(true);
                };
                self.prepare(sql, w).await?;
            }
            command::STMT_EXECUTE => self.execute(body, r, w).await?,
            command::STMT_SEND_LONG_DATA => {
                // No answer, ever: an unknown statement's data is dropped, as MySQL does.
                if let (Some(statement), Some(param)) = (
                    self.statements.get_mut(&statement_id(body)),
                    body.get(4..6).map(|p| u16::from_le_bytes([p[0], p[1]])),
                ) {
                    let data = statement.bindings.long_data.entry(param).or_default();
                    data.extend_from_slice(body.get(6..).unwrap_or_default());
                }
            }
            command::STMT_CLOSE => {
                // No answer, ever.
                self.statements.remove(&statement_id(body));
            }
            command::FIELD_LIST => {
                // Deprecated since MySQL 5.7; the mysql client sends it for completion. No
                // columns, rather than wrong ones.
                w.packet(&end_of_rows(self.capabilities, self.status()));
            }
            command::STATISTICS => {
                let shared = &self.shared;
                w.packet(&statistics(
                    shared.status.uptime().as_secs(),
                    shared.connections.count(),
                    shared.status.questions(),
                ));
            }
            command::PROCESS_KILL => {
                let id = statement_id(body);
                self.kill(id, false, w);
            }
            command::SET_OPTION => {
                match body.get(..2) {
                    Some([0, 0]) => self.capabilities |= capability::MULTI_STATEMENTS,
                    Some([1, 0]) => self.capabilities &= !capability::MULTI_STATEMENTS,
                    _ => {
                        w.packet(&error_payload(error::UNKNOWN_COM, "unknown option"));
                        return Ok(true);
                    }
                }
                w.packet(&eof_packet(self.status()));
            }
            command::DEBUG => w.packet(&eof_packet(self.status())),
            other => {
                let message = format!("Unknown command {other:#04x}");
                w.packet(&error_payload(error::UNKNOWN_COM, &message));
            }
        }
        Ok(true)
    }

    /// A command's text, or MySQL's error 1300 for text that is not UTF-8.
    fn text<'a, W: AsyncWrite + Unpin>(
        &self,
        body: &'a [u8],
        w: &mut Writer<W>,
    ) -> Option<&'a str> {
        match std::str::from_utf8(body) {
            // Some connectors end a statement's text with a NUL, as a C string; MySQL ignores it.
            Ok(text) => Some(text.trim_end_matches('\0')),
            Err(e) => {
                let bad = &body[e.valid_up_to()..];
                let shown: String = bad.iter().take(16).map(|b| format!("{b:02X}")).collect();
                let message = format!("Invalid utf8mb4 character string: '{shown}'");
                w.packet(&error_payload(error::INVALID_CHARACTER_STRING, &message));
                None
            }
        }
    }

    /// KILL: a user's own connections, or any with ALL on every database.
    fn kill<W: AsyncWrite + Unpin>(&self, id: u32, query_only: bool, w: &mut Writer<W>) {
        let principal = self.session.principal();
        if let Some(user) = self.shared.connections.user_of(id)
            && user != principal.user()
            && !principal.holds(Privilege::All, &Object::global())
        {
            let message = format!("You are not owner of thread {id}");
            w.packet(&error_payload(error::KILL_DENIED, &message));
            return;
        }
        if self.shared.connections.kill(id, query_only) {
            w.packet(&ok_packet(0, self.status()));
        } else {
            let message = format!("Unknown thread id: {id}");
            w.packet(&error_payload(error::NO_SUCH_THREAD, &message));
        }
    }
}

/// Answers a packet the reader refused (too large, too late) before the connection closes.
pub(super) async fn refuse<W: AsyncWrite + Unpin>(
    w: &mut Writer<W>,
    e: ReadError,
) -> io::Result<()> {
    match e {
        ReadError::Oversized(sequence, limit) => {
            w.reply_to(sequence);
            let message = if limit == PRE_AUTH_MAX_PACKET {
                format!("Got a packet bigger than {limit} bytes before logging in")
            } else {
                format!("Got a packet bigger than 'max_allowed_packet' bytes ({limit})")
            };
            w.packet(&error_payload(error::NET_PACKET_TOO_LARGE, &message));
            // Best effort: the connection closes whether or not the client reads it.
            let _ = w.flush().await;
            Err(io::Error::new(io::ErrorKind::InvalidData, message))
        }
        ReadError::TimedOut(what) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("client {what}"),
        )),
        ReadError::Io(e) => Err(e),
    }
}

/// Resolves when the client closes its connection (or it breaks). Bytes waiting mean a next
/// command (clients may pipeline): keep watching without reading.
async fn client_gone(socket: &TcpStream) {
    let mut byte = [0u8; 1];
    loop {
        match socket.peek(&mut byte).await {
            Ok(0) | Err(_) => return,
            Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}
