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
use sieve_engine::{Client, ErrorClass, MYSQL_VERSION, Prepared, QueryStream, Session, classify};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::columns::{ColumnDefinition, RowFormat, UTF8MB4, encode_rows};
use super::handshake::{
    HandshakeResponse, NATIVE_PASSWORD, SERVER_CAPABILITIES, auth_switch, capability, greeting,
    parse_response,
};
use super::packets::{
    GuardLimits, PRE_AUTH_MAX_PACKET, Packet, PacketReader, PacketWriter, ReadError,
};
use super::params::Bindings;
use super::replies::{
    end_of_rows, eof_packet, error, error_payload, ok_packet, statistics, status,
};
use super::server_status::ServerStatus;
use crate::auth::Account;
use crate::kill::{Connections, Killable, kill_statement};
use crate::login_throttle::LoginThrottle;
use crate::progress::{rate, watch};
use crate::transaction_statements::{Transaction, transaction_statement};

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

/// What a connection shares with the server: the account, the login throttle, the other
/// connections (for KILL) and the server's counters.
pub struct Shared {
    pub account: Arc<Account>,
    pub throttle: Arc<LoginThrottle>,
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
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shared.connections.deregister(self.id);
    }
}

/// A prepared statement: its text, and its numbered parameters if it has any. Without
/// parameters it runs as its text does.
struct Statement {
    sql: String,
    prepared: Option<Prepared>,
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
        }
    }

    /// Serves the connection until the client quits or leaves, or breaks a limit.
    pub async fn run<R, W>(mut self, reader: R, writer: W) -> io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let (mut reader, mut writer) = (PacketReader::new(reader), PacketWriter::new(writer));
        if !self.login(&mut reader, &mut writer).await? {
            return Ok(());
        }
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
            let go_on = self.command(&packet.payload, &mut writer).await?;
            writer.flush().await?;
            if !go_on {
                return Ok(());
            }
        }
    }

    /// The handshake; false if the client did not log in (it has been told why).
    async fn login<R, W>(
        &mut self,
        reader: &mut PacketReader<R>,
        writer: &mut Writer<W>,
    ) -> io::Result<bool>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let deadline = tokio::time::Instant::now() + self.shared.limits.handshake_timeout;
        let waiting = "did not log in within connect_timeout";
        writer.packet(&greeting(MYSQL_VERSION, self.id, &self.salt, UTF8MB4 as u8));
        writer.flush().await?;
        let packet = match reader.next(PRE_AUTH_MAX_PACKET, deadline, waiting).await {
            Ok(Some(packet)) => packet,
            Ok(None) => return Ok(false),
            Err(e) => return refuse(writer, e).await.map(|()| false),
        };
        writer.reply_to(packet.sequence);
        let Ok(mut response) = parse_response(&packet.payload) else {
            let message = "Bad handshake";
            writer.packet(&error_payload(error::MALFORMED_PACKET, message));
            writer.flush().await?;
            return Ok(false);
        };
        if response.capabilities & capability::SSL != 0 {
            writer.packet(&error_payload(
                error::NOT_SUPPORTED_YET,
                "this server does not offer SSL; connect without it (--ssl-mode=DISABLED)",
            ));
            writer.flush().await?;
            return Ok(false);
        }
        self.capabilities = response.capabilities & SERVER_CAPABILITIES;
        let switch = response.capabilities & capability::PLUGIN_AUTH != 0
            && response
                .plugin
                .as_deref()
                .is_some_and(|p| p != NATIVE_PASSWORD);
        if switch {
            writer.packet(&auth_switch(&self.salt));
            writer.flush().await?;
            match reader.next(PRE_AUTH_MAX_PACKET, deadline, waiting).await {
                Ok(Some(Packet { sequence, payload })) => {
                    writer.reply_to(sequence);
                    response.auth = payload;
                }
                Ok(None) => return Ok(false),
                Err(e) => return refuse(writer, e).await.map(|()| false),
            }
        }
        if !self.authenticate(&response).await {
            let message = format!(
                "Access denied for user '{}'@'{}' (using password: {})",
                String::from_utf8_lossy(&response.user),
                self.peer,
                if response.auth.is_empty() {
                    "NO"
                } else {
                    "YES"
                }
            );
            writer.packet(&error_payload(error::ACCESS_DENIED, &message));
            writer.flush().await?;
            return Ok(false);
        }
        // mysql-connector-python names an empty database in its handshake.
        if let Some(database) = response.database.filter(|d| !d.is_empty()) {
            let database = String::from_utf8_lossy(&database);
            if let Err(e) = self.session.use_database(&database).await {
                writer.packet(&error_payload(error::BAD_DB, &e.to_string()));
                writer.flush().await?;
                return Ok(false);
            }
        }
        writer.packet(&ok_packet(0, self.status()));
        writer.flush().await?;
        Ok(true)
    }

    async fn authenticate(&self, response: &HandshakeResponse) -> bool {
        let account = &self.shared.account;
        let ok = self
            .shared
            .throttle
            .check(self.peer, || {
                account.verify(&response.user, &self.salt, &response.auth)
            })
            .await;
        let user = String::from_utf8_lossy(&response.user);
        if ok {
            self.session.set_client(&Client {
                user: format!("{user}@{}", self.peer),
                connection_id: u64::from(self.id),
            });
        } else {
            log::warn!("access denied for user '{user}' from {}", self.peer);
        }
        ok
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
                    Err(e) => w.packet(&error_payload(error::BAD_DB, &e.to_string())),
                }
            }
            command::QUERY => {
                let Some(sql) = self.text(body, w) else {
                    return Ok(true);
                };
                self.query(sql, w).await?;
            }
            command::STMT_PREPARE => {
                let Some(sql) = self.text(body, w) else {
                    return Ok(true);
                };
                self.prepare(sql, w).await?;
            }
            command::STMT_EXECUTE => self.execute(body, w).await?,
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

    fn kill<W: AsyncWrite + Unpin>(&self, id: u32, query_only: bool, w: &mut Writer<W>) {
        if self.shared.connections.kill(id, query_only) {
            w.packet(&ok_packet(0, self.status()));
        } else {
            let message = format!("Unknown thread id: {id}");
            w.packet(&error_payload(error::NO_SUCH_THREAD, &message));
        }
    }

    /// COM_QUERY: one statement, or several when the client allows multi-statements.
    async fn query<W: AsyncWrite + Unpin>(
        &mut self,
        sql: &str,
        w: &mut Writer<W>,
    ) -> io::Result<()> {
        let statements = if self.capabilities & capability::MULTI_STATEMENTS != 0 {
            // Text the tokenizer rejects runs whole, for the parser to report where it fails.
            Session::split_statements(sql).unwrap_or_else(|_| vec![sql.to_string()])
        } else {
            vec![sql.to_string()]
        };
        if statements.is_empty() || sql.trim().is_empty() {
            w.packet(&error_payload(error::EMPTY_QUERY, "Query was empty"));
            return Ok(());
        }
        let last = statements.len() - 1;
        for (i, statement) in statements.iter().enumerate() {
            let more = if i < last {
                status::MORE_RESULTS_EXISTS
            } else {
                0
            };
            if self.statement(statement, RowFormat::Text, more, w).await? == Outcome::Failed {
                break;
            }
        }
        Ok(())
    }

    /// A statement of a query, with `more` set when others follow it.
    async fn statement<W: AsyncWrite + Unpin>(
        &mut self,
        sql: &str,
        format: RowFormat,
        more: u16,
        w: &mut Writer<W>,
    ) -> io::Result<Outcome> {
        self.shared.status.question();
        if let Some((id, query_only)) = kill_statement(sql) {
            self.kill(id, query_only, w);
            return Ok(Outcome::Done);
        }
        match transaction_statement(sql) {
            Some(Transaction::Begin) => self.transaction = Some(0),
            Some(Transaction::Commit) => self.transaction = None,
            Some(Transaction::Rollback) => {
                if let Some(writes) = self.transaction.take().filter(|&w| w > 0) {
                    let message = format!(
                        "ROLLBACK cannot undo the {writes} statement(s) that wrote since BEGIN: \
                         Sieve has no transactions, each statement committed on its own"
                    );
                    w.packet(&error_payload(
                        error::WARNING_NOT_COMPLETE_ROLLBACK,
                        &message,
                    ));
                    return Ok(Outcome::Failed);
                }
            }
            None => return self.stream(sql, None, format, more, w).await,
        }
        w.packet(&ok_packet(0, self.status() | more));
        Ok(Outcome::Done)
    }

    async fn prepare<W: AsyncWrite + Unpin>(
        &mut self,
        sql: &str,
        w: &mut Writer<W>,
    ) -> io::Result<()> {
        let prepared = if transaction_statement(sql).is_some() || kill_statement(sql).is_some() {
            None
        } else {
            match self.session.prepare(sql).await {
                Ok(prepared) => Some(prepared).filter(|p| p.params() > 0),
                Err(e) => {
                    let (code, message) = mysql_error(&e);
                    w.packet(&error_payload(code, &message));
                    return Ok(());
                }
            }
        };
        let params: Vec<ColumnDefinition> = prepared
            .iter()
            .flat_map(|p| &p.param_types)
            .map(|t| {
                let field = Field::new("?", t.clone().unwrap_or(DataType::Utf8), true);
                ColumnDefinition::new(&field, None)
            })
            .collect();
        let columns: Vec<ColumnDefinition> = prepared
            .iter()
            .flat_map(|p| p.result_fields.iter())
            .map(|field| ColumnDefinition::new(field, None))
            .collect();
        let id = self.next_statement;
        self.next_statement = self.next_statement.wrapping_add(1).max(1);
        let mut ok = vec![0];
        ok.extend_from_slice(&id.to_le_bytes());
        ok.extend_from_slice(&(columns.len() as u16).to_le_bytes());
        ok.extend_from_slice(&(params.len() as u16).to_le_bytes());
        ok.extend_from_slice(&[0, 0, 0]); // filler, no warnings
        w.packet(&ok);
        for definitions in [&params, &columns] {
            if definitions.is_empty() {
                continue;
            }
            for definition in definitions {
                w.packet(&definition.encode());
            }
            if self.capabilities & capability::DEPRECATE_EOF == 0 {
                w.packet(&eof_packet(self.status()));
            }
        }
        self.statements.insert(
            id,
            Statement {
                sql: sql.to_string(),
                bindings: Bindings::new(params.len()),
                prepared,
            },
        );
        Ok(())
    }

    async fn execute<W: AsyncWrite + Unpin>(
        &mut self,
        body: &[u8],
        w: &mut Writer<W>,
    ) -> io::Result<()> {
        let id = statement_id(body);
        let Some(statement) = self.statements.get_mut(&id) else {
            w.packet(&unknown_statement(id, "mysqld_stmt_execute"));
            return Ok(());
        };
        let values = match statement.bindings.values(body.get(4..).unwrap_or_default()) {
            Ok(values) => values,
            Err(message) => {
                w.packet(&error_payload(error::WRONG_ARGUMENTS, &message));
                return Ok(());
            }
        };
        let sql = statement.sql.clone();
        match statement.prepared.clone() {
            Some(prepared) => {
                self.shared.status.question();
                let bound = Some((prepared, values));
                self.stream(&sql, bound, RowFormat::Binary, 0, w).await?;
            }
            // Without parameters it runs as its text does (BEGIN, KILL and all).
            None => {
                self.statement(&sql, RowFormat::Binary, 0, w).await?;
            }
        }
        Ok(())
    }

    /// Runs `sql` (or, given `bound`, that prepared statement with those values) and sends its
    /// result, tracking writes for ROLLBACK, logging slow statements, and cancelling it if the
    /// client goes away or KILL QUERY names it.
    async fn stream<W: AsyncWrite + Unpin>(
        &mut self,
        sql: &str,
        bound: Option<(Prepared, Vec<datafusion::common::ScalarValue>)>,
        format: RowFormat,
        more: u16,
        w: &mut Writer<W>,
    ) -> io::Result<Outcome> {
        let started = Instant::now();
        let head: String = sql.chars().take(80).collect();
        let session = &self.session;
        let status = self.status() | more;
        let capabilities = self.capabilities;
        // Registered now, so a KILL QUERY from here on interrupts this statement.
        let killed = self.killable.interrupt.notified();
        tokio::pin!(killed);
        killed.as_mut().enable();
        let statement = async {
            let planned = watch(
                async {
                    match bound {
                        Some((prepared, values)) => {
                            session.execute_prepared(&prepared, values).await
                        }
                        None => session.query(sql).await,
                    }
                },
                session.progress(),
                PROGRESS_EVERY,
                |rows, elapsed| {
                    log::info!(
                        "{rows} rows written in {:.0} s ({:.0} rows/s): {head}",
                        elapsed.as_secs_f64(),
                        rate(rows, elapsed)
                    );
                },
            );
            let planned = tokio::select! {
                planned = planned => planned,
                () = killed.as_mut() => {
                    w.packet(&error_payload(error::QUERY_INTERRUPTED, INTERRUPTED));
                    return Ok((Outcome::Failed, None));
                }
            };
            let output = match planned {
                Ok(output) => output,
                Err(e) => {
                    let (code, message) = mysql_error(&e);
                    w.packet(&error_payload(code, &message));
                    return Ok((Outcome::Failed, None));
                }
            };
            let wrote = output.affected_rows().is_some_and(|rows| rows > 0);
            let sent = send(output, format, capabilities, status, w, killed.as_mut()).await?;
            if let (Outcome::Done, rows) = sent {
                log_slow(&head, rows, started);
            }
            Ok((sent.0, Some(wrote)))
        };
        let outcome = tokio::select! {
            outcome = statement => outcome,
            () = client_gone(&self.client) => {
                // Dropping the statement cancels it; a write commits nothing.
                log::info!("client {} went away; cancelled: {head}", self.id);
                Err(io::Error::new(io::ErrorKind::ConnectionAborted, "client went away"))
            }
        };
        let (outcome, wrote) = outcome?;
        if wrote == Some(true)
            && let Some(writes) = &mut self.transaction
        {
            *writes += 1;
        }
        Ok(outcome)
    }
}

/// How often a running statement that writes logs its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

const INTERRUPTED: &str = "Query execution was interrupted";

/// Sends a statement's result as it is produced, one batch in memory at a time; returns how it
/// ended and the rows sent or affected. An error before the first row is a plain error packet,
/// a later one ends the result set with it.
async fn send<W: AsyncWrite + Unpin>(
    mut output: QueryStream,
    format: RowFormat,
    capabilities: u32,
    status: u16,
    w: &mut Writer<W>,
    mut killed: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>,
) -> io::Result<(Outcome, u64)> {
    if let Some(affected) = output.affected_rows() {
        w.packet(&ok_packet(affected, status));
        return Ok((Outcome::Done, affected));
    }
    let mut next = tokio::select! {
        next = output.next() => next,
        () = killed.as_mut() => Some(Err(DataFusionError::Execution(INTERRUPTED.into()))),
    };
    if let Some(Err(e)) = &next {
        let (code, message) = interrupted_or(e);
        w.packet(&error_payload(code, &message));
        return Ok((Outcome::Failed, 0));
    }
    let mut count = Vec::new();
    super::wire::put_lenenc_int(&mut count, output.schema().fields().len() as u64);
    w.packet(&count);
    for (i, field) in output.schema().fields().iter().enumerate() {
        w.packet(&ColumnDefinition::new(field, output.origin(i)).encode());
    }
    if capabilities & capability::DEPRECATE_EOF == 0 {
        w.packet(&eof_packet(status));
    }
    let mut sent = 0;
    while let Some(batch) = next {
        match batch {
            Ok(batch) => {
                encode_rows(&batch, format, |row| w.packet(row))?;
                w.flush_if_full().await?;
                sent += batch.num_rows() as u64;
            }
            Err(e) => {
                let (code, message) = interrupted_or(&e);
                w.packet(&error_payload(code, &message));
                return Ok((Outcome::Failed, sent));
            }
        }
        next = tokio::select! {
            next = output.next() => next,
            () = killed.as_mut() => Some(Err(DataFusionError::Execution(INTERRUPTED.into()))),
        };
    }
    w.packet(&end_of_rows(capabilities, status));
    Ok((Outcome::Done, sent))
}

/// KILL QUERY's error for the interruption, the statement's own otherwise.
fn interrupted_or(e: &DataFusionError) -> (u16, String) {
    match e {
        DataFusionError::Execution(m) if m == INTERRUPTED => {
            (error::QUERY_INTERRUPTED, INTERRUPTED.to_string())
        }
        e => mysql_error(e),
    }
}

/// The statement id at the front of a COM_STMT_* body (0, which is never one, if missing).
fn statement_id(body: &[u8]) -> u32 {
    body.get(..4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn unknown_statement(id: u32, to: &str) -> Vec<u8> {
    let message = format!("Unknown prepared statement handler ({id}) given to {to}");
    error_payload(error::UNKNOWN_STMT_HANDLER, &message)
}

/// Answers a packet the reader refused (too large, too late) before the connection closes.
async fn refuse<W: AsyncWrite + Unpin>(w: &mut Writer<W>, e: ReadError) -> io::Result<()> {
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

/// Statements over a second are logged with their size, so long loads show their rate.
fn log_slow(head: &str, rows: u64, started: Instant) {
    let elapsed = started.elapsed();
    if elapsed.as_secs() >= 1 {
        log::info!(
            "{rows} rows in {:.1} s ({:.0} rows/s): {head}",
            elapsed.as_secs_f64(),
            rate(rows, elapsed)
        );
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

fn mysql_error(e: &DataFusionError) -> (u16, String) {
    let code = match classify(e) {
        ErrorClass::Syntax => error::PARSE,
        ErrorClass::UnknownTable => error::NO_SUCH_TABLE,
        ErrorClass::UnknownDatabase => error::BAD_DB,
        ErrorClass::TableExists => error::TABLE_EXISTS,
        ErrorClass::DatabaseExists => error::DB_CREATE_EXISTS,
        ErrorClass::NotSupported => error::NOT_SUPPORTED_YET,
        // MySQL answers 3024 (ER_QUERY_TIMEOUT) since 5.7; clients know 1317 as
        // "interrupted" from every version.
        ErrorClass::Timeout => error::QUERY_INTERRUPTED,
        ErrorClass::OutOfMemory => error::OUT_OF_RESOURCES,
        ErrorClass::UnknownVariable => error::UNKNOWN_SYSTEM_VARIABLE,
        ErrorClass::OutOfRange => error::DATA_OUT_OF_RANGE,
        ErrorClass::Other => error::UNKNOWN,
    };
    (code, e.to_string())
}
