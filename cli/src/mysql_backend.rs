//! One MySQL connection: a Sieve session behind the wire protocol (opensrv-mysql). Queries run
//! in the engine; driver chatter is answered directly; prepared statements bind their parameters
//! to the plan as typed values (`sieve_engine::Prepared`).

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::DataFusionError;
use opensrv_mysql::{
    AsyncMysqlShim, Column, ErrorKind, InitWriter, OkResponse, ParamParser, QueryResultWriter,
    StatementMetaWriter,
};
use sieve_engine::{Client, ErrorClass, MYSQL_VERSION, Prepared, QueryStream, Session, classify};
use tokio::io::AsyncWrite;
use tokio::net::TcpStream;
use tokio::sync::futures::Notified;

use crate::auth::Account;
use crate::kill::{Connections, Killable, kill_statement};
use crate::login_throttle::LoginThrottle;
use crate::mysql_params::scalar;
use crate::mysql_values::{column, columns, write_batch};
use crate::packet_guard::OpenStatements;
use crate::progress::{rate, watch};
use crate::transaction_statements::{Transaction, transaction_statement};

pub struct Backend {
    session: Session,
    /// The same socket opensrv talks over, only peeked at to notice a client that went away.
    client: Arc<TcpStream>,
    peer: IpAddr,
    account: Arc<Account>,
    throttle: Arc<LoginThrottle>,
    /// Tells the connection's [`crate::packet_guard::PacketGuard`] that login succeeded.
    authenticated: Arc<AtomicBool>,
    connection_id: u32,
    /// Where KILL finds this connection, and its own handle there.
    connections: Arc<Connections>,
    killable: Arc<Killable>,
    salt: [u8; 20],
    statements: HashMap<u32, Statement>,
    /// The ids in `statements`, for the connection's guard.
    open_statements: Arc<OpenStatements>,
    next_statement: u32,
    /// Statements that wrote since BEGIN, while a client believes it is in a transaction.
    transaction: Option<u64>,
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.connections.deregister(self.connection_id);
    }
}

/// A prepared statement: its text, and its numbered parameters if it has any. Without
/// parameters it runs as its text does, driver chatter included.
struct Statement {
    sql: String,
    prepared: Option<Prepared>,
}

/// What a connection's login is checked with.
pub struct Login {
    pub account: Arc<Account>,
    pub throttle: Arc<LoginThrottle>,
    pub authenticated: Arc<AtomicBool>,
    pub statements: Arc<OpenStatements>,
    pub connections: Arc<Connections>,
}

impl Backend {
    pub fn new(session: Session, client: Arc<TcpStream>, login: Login, connection_id: u32) -> Self {
        // Printable, never NUL: some clients treat the salt as a C string.
        let salt = std::array::from_fn(|_| rand::random_range(b'!'..=b'~'));
        let killable = login.connections.register(connection_id, client.clone());
        Self {
            connections: login.connections,
            killable,
            session,
            peer: client
                .peer_addr()
                .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip()),
            client,
            account: login.account,
            throttle: login.throttle,
            authenticated: login.authenticated,
            connection_id,
            salt,
            statements: HashMap::new(),
            open_statements: login.statements,
            next_statement: 1,
            transaction: None,
        }
    }

    async fn run<W: AsyncWrite + Send + Unpin>(
        &mut self,
        query: &str,
        results: QueryResultWriter<'_, W>,
    ) -> io::Result<()> {
        if let Some((id, query_only)) = kill_statement(query) {
            return if self.connections.kill(id, query_only) {
                results.completed(OkResponse::default()).await
            } else {
                let message = format!("Unknown thread id: {id}");
                results
                    .error(ErrorKind::ER_NO_SUCH_THREAD, message.as_bytes())
                    .await
            };
        }
        match transaction_statement(query) {
            Some(Transaction::Begin) => {
                self.transaction = Some(0);
                return results.completed(OkResponse::default()).await;
            }
            Some(Transaction::Commit) => {
                self.transaction = None;
                return results.completed(OkResponse::default()).await;
            }
            Some(Transaction::Rollback) => {
                return match self.transaction.take() {
                    Some(writes) if writes > 0 => {
                        let message = format!(
                            "ROLLBACK cannot undo the {writes} statement(s) that wrote since BEGIN: \
                             Sieve has no transactions, each statement committed on its own"
                        );
                        results
                            .error(
                                ErrorKind::ER_WARNING_NOT_COMPLETE_ROLLBACK,
                                message.as_bytes(),
                            )
                            .await
                    }
                    _ => results.completed(OkResponse::default()).await,
                };
            }
            None => {}
        }
        self.stream(query, None, results).await
    }

    /// Runs `sql` (or, given `bound`, that prepared statement with those values) and sends its
    /// result, tracking writes for ROLLBACK, logging slow statements, and cancelling it if the
    /// client goes away.
    async fn stream<W: AsyncWrite + Send + Unpin>(
        &mut self,
        sql: &str,
        bound: Option<(Prepared, Vec<ScalarValue>)>,
        results: QueryResultWriter<'_, W>,
    ) -> io::Result<()> {
        let started = Instant::now();
        let head: String = sql.chars().take(80).collect();
        let (session, transaction) = (&self.session, &mut self.transaction);
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
                () = killed.as_mut() => return interrupted(results).await,
            };
            match planned {
                Ok(output) => {
                    if output.affected_rows().is_some_and(|rows| rows > 0)
                        && let Some(writes) = transaction
                    {
                        *writes += 1;
                    }
                    let rows = send(output, results, killed).await?;
                    log_slow(&head, rows, started);
                    Ok(())
                }
                Err(e) => {
                    let (kind, message) = mysql_error(&e);
                    results.error(kind, message.as_bytes()).await
                }
            }
        };
        tokio::select! {
            outcome = statement => outcome,
            () = client_gone(&self.client) => {
                // Dropping the statement cancels it; a write commits nothing.
                log::info!("client {} went away; cancelled: {head}", self.connection_id);
                Err(io::Error::new(io::ErrorKind::ConnectionAborted, "client went away"))
            }
        }
    }
}

/// How often a running statement that writes logs its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

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

/// Resolves when the client closes its connection (or it breaks). MySQL clients send nothing
/// while a statement runs, so bytes waiting mean a new command: keep watching without reading.
async fn client_gone(socket: &TcpStream) {
    let mut byte = [0u8; 1];
    loop {
        match socket.peek(&mut byte).await {
            Ok(0) | Err(_) => return,
            Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Sends a statement's result as it is produced, one batch in memory at a time; returns the rows
/// sent or affected. An error before the first row is a plain error packet, a later one ends the
/// result set with it.
async fn send<W: AsyncWrite + Send + Unpin>(
    mut output: QueryStream,
    results: QueryResultWriter<'_, W>,
    mut killed: Pin<&mut Notified<'_>>,
) -> io::Result<u64> {
    if let Some(affected_rows) = output.affected_rows() {
        results
            .completed(OkResponse {
                affected_rows,
                ..Default::default()
            })
            .await?;
        return Ok(affected_rows);
    }
    let cols = columns(output.schema());
    let mut next = tokio::select! {
        next = output.next() => next,
        () = killed.as_mut() => return interrupted(results).await.map(|()| 0),
    };
    if let Some(Err(e)) = &next {
        let (kind, message) = mysql_error(e);
        results.error(kind, message.as_bytes()).await?;
        return Ok(0);
    }
    let mut rows = results.start(&cols).await?;
    let mut sent = 0;
    while let Some(batch) = next {
        match batch {
            Ok(batch) => {
                write_batch(&mut rows, &batch).await?;
                sent += batch.num_rows() as u64;
            }
            Err(e) => {
                let (kind, message) = mysql_error(&e);
                rows.finish_error(kind, &message.as_bytes()).await?;
                return Ok(sent);
            }
        }
        next = tokio::select! {
            next = output.next() => next,
            () = killed.as_mut() => {
                rows.finish_error(ErrorKind::ER_QUERY_INTERRUPTED, &INTERRUPTED).await?;
                return Ok(sent);
            }
        };
    }
    rows.finish().await?;
    Ok(sent)
}

/// Some connectors end a statement's text with a NUL, as a C string; MySQL ignores it.
fn without_terminator(sql: &str) -> &str {
    sql.trim_end_matches('\0')
}

const INTERRUPTED: &[u8] = b"Query execution was interrupted";

/// The answer to a statement KILL QUERY stopped before its first row.
async fn interrupted<W: AsyncWrite + Send + Unpin>(
    results: QueryResultWriter<'_, W>,
) -> io::Result<()> {
    results
        .error(ErrorKind::ER_QUERY_INTERRUPTED, INTERRUPTED)
        .await
}

fn mysql_error(e: &DataFusionError) -> (ErrorKind, String) {
    let kind = match classify(e) {
        ErrorClass::Syntax => ErrorKind::ER_PARSE_ERROR,
        ErrorClass::UnknownTable => ErrorKind::ER_NO_SUCH_TABLE,
        ErrorClass::UnknownDatabase => ErrorKind::ER_BAD_DB_ERROR,
        ErrorClass::TableExists => ErrorKind::ER_TABLE_EXISTS_ERROR,
        ErrorClass::DatabaseExists => ErrorKind::ER_DB_CREATE_EXISTS,
        ErrorClass::NotSupported => ErrorKind::ER_NOT_SUPPORTED_YET,
        // MySQL answers 3024 (ER_QUERY_TIMEOUT), which opensrv-mysql does not list; 1317 is
        // its older "query execution was interrupted".
        ErrorClass::Timeout => ErrorKind::ER_QUERY_INTERRUPTED,
        ErrorClass::OutOfMemory => ErrorKind::ER_OUT_OF_RESOURCES,
        ErrorClass::UnknownVariable => ErrorKind::ER_UNKNOWN_SYSTEM_VARIABLE,
        ErrorClass::OutOfRange => ErrorKind::ER_DATA_OUT_OF_RANGE,
        ErrorClass::Other => ErrorKind::ER_UNKNOWN_ERROR,
    };
    (kind, e.to_string())
}

#[async_trait]
impl<W: AsyncWrite + Send + Unpin> AsyncMysqlShim<W> for Backend {
    type Error = io::Error;

    fn version(&self) -> String {
        MYSQL_VERSION.to_string()
    }

    fn connect_id(&self) -> u32 {
        self.connection_id
    }

    fn salt(&self) -> [u8; 20] {
        self.salt
    }

    async fn authenticate(
        &self,
        _plugin: &str,
        user: &[u8],
        salt: &[u8],
        auth_data: &[u8],
    ) -> bool {
        let ok = self
            .throttle
            .check(self.peer, || self.account.verify(user, salt, auth_data))
            .await;
        if ok {
            self.session.set_client(&Client {
                user: format!("{}@{}", String::from_utf8_lossy(user), self.peer),
                connection_id: u64::from(self.connection_id),
            });
            self.authenticated.store(true, Ordering::Release);
        } else {
            log::warn!(
                "access denied for user '{}' from {}",
                String::from_utf8_lossy(user),
                self.peer
            );
        }
        ok
    }

    async fn on_prepare<'a>(
        &'a mut self,
        query: &'a str,
        info: StatementMetaWriter<'a, W>,
    ) -> io::Result<()> {
        let query = without_terminator(query);
        let prepared = if transaction_statement(query).is_some() {
            None
        } else {
            match self.session.prepare(query).await {
                Ok(prepared) => Some(prepared).filter(|p| p.params() > 0),
                Err(e) => {
                    let (kind, message) = mysql_error(&e);
                    return info.error(kind, message.as_bytes()).await;
                }
            }
        };
        let params: Vec<Column> = prepared
            .iter()
            .flat_map(|p| &p.param_types)
            .map(|t| column("?", t.as_ref().unwrap_or(&DataType::Utf8), true))
            .collect();
        let id = self.next_statement;
        self.next_statement += 1;
        self.statements.insert(
            id,
            Statement {
                sql: query.to_string(),
                prepared,
            },
        );
        self.open_statements.opened(id);
        info.reply(id, &params, &[]).await
    }

    async fn on_execute<'a>(
        &'a mut self,
        id: u32,
        params: ParamParser<'a>,
        results: QueryResultWriter<'a, W>,
    ) -> io::Result<()> {
        let Some(statement) = self.statements.get(&id) else {
            return results
                .error(
                    ErrorKind::ER_UNKNOWN_STMT_HANDLER,
                    b"unknown prepared statement",
                )
                .await;
        };
        let sql = statement.sql.clone();
        let Some(prepared) = statement.prepared.clone() else {
            return self.run(&sql, results).await;
        };
        let values: Result<Vec<_>, String> = params
            .into_iter()
            .enumerate()
            .map(|(i, param)| scalar(i + 1, param))
            .collect();
        let values = match values {
            Ok(values) => values,
            Err(message) => {
                return results
                    .error(ErrorKind::ER_WRONG_ARGUMENTS, message.as_bytes())
                    .await;
            }
        };
        self.stream(&sql, Some((prepared, values)), results).await
    }

    async fn on_close<'a>(&'a mut self, id: u32)
    where
        W: 'async_trait,
    {
        self.statements.remove(&id);
        self.open_statements.closed(id);
    }

    async fn on_query<'a>(
        &'a mut self,
        query: &'a str,
        results: QueryResultWriter<'a, W>,
    ) -> io::Result<()> {
        self.run(without_terminator(query), results).await
    }

    async fn on_init<'a>(
        &'a mut self,
        database: &'a str,
        writer: InitWriter<'a, W>,
    ) -> io::Result<()> {
        // mysql-connector-python names an empty database in its handshake.
        if database.is_empty() {
            return writer.ok().await;
        }
        match self.session.use_database(database).await {
            Ok(()) => writer.ok().await,
            Err(e) => {
                let (kind, message) = mysql_error(&e);
                writer.error(kind, message.as_bytes()).await
            }
        }
    }
}
