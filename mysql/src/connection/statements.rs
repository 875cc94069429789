//! Running statements: COM_QUERY (one or several), and prepared statements (prepare, execute,
//! close), each streamed to the client as it runs.

use super::results::{INTERRUPTED, mysql_error, send};
use super::*;

impl Connection {
    /// COM_QUERY: one statement, or several when the client allows multi-statements.
    pub(super) async fn query<W: AsyncWrite + Unpin>(
        &mut self,
        sql: &str,
        r: &mut ClientReader,
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
            if self
                .statement(statement, RowFormat::Text, more, r, w)
                .await?
                == Outcome::Failed
            {
                break;
            }
        }
        Ok(())
    }

    /// A statement of a query, with `more` set when others follow it.
    pub(super) async fn statement<W: AsyncWrite + Unpin>(
        &mut self,
        sql: &str,
        format: RowFormat,
        more: u16,
        r: &mut ClientReader,
        w: &mut Writer<W>,
    ) -> io::Result<Outcome> {
        self.shared.status.question();
        let statement = self.session.read(sql).await;
        match statement.connection_statement() {
            Some(ConnectionStatement::Kill { id, query_only }) => {
                self.kill(id, query_only, w);
                return Ok(Outcome::Done);
            }
            Some(ConnectionStatement::Begin) => self.transaction = Some(0),
            Some(ConnectionStatement::Commit) => self.transaction = None,
            Some(ConnectionStatement::Rollback) => {
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
            None => {
                return match statement.into_load_data() {
                    Ok(load) => match self.session.open_load(load).await {
                        Ok(load) => self.load_local(sql, load, more, r, w).await,
                        Err(e) => {
                            let (code, message) = mysql_error(&e);
                            w.packet(&error_payload(code, &message));
                            Ok(Outcome::Failed)
                        }
                    },
                    Err(statement) => self.stream(Run::Text(statement), format, more, w).await,
                };
            }
        }
        w.packet(&ok_packet(0, self.status() | more));
        Ok(Outcome::Done)
    }

    pub(super) async fn prepare<W: AsyncWrite + Unpin>(
        &mut self,
        sql: &str,
        w: &mut Writer<W>,
    ) -> io::Result<()> {
        let prepared = match self.session.prepare(sql).await {
            Ok(prepared) => Some(prepared).filter(|p| p.params() > 0),
            Err(e) => {
                let (code, message) = mysql_error(&e);
                w.packet(&error_payload(code, &message));
                return Ok(());
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
                sql: sql.into(),
                bindings: Bindings::new(params.len()),
                prepared: prepared.map(Arc::new),
            },
        );
        Ok(())
    }

    pub(super) async fn execute<W: AsyncWrite + Unpin>(
        &mut self,
        body: &[u8],
        r: &mut ClientReader,
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
                let run = Run::Prepared(&sql, prepared, values);
                self.stream(run, RowFormat::Binary, 0, w).await?;
            }
            // Without parameters it runs as its text does (BEGIN, KILL and all).
            None => {
                self.statement(&sql, RowFormat::Binary, 0, r, w).await?;
            }
        }
        Ok(())
    }

    /// Runs a statement and sends its result, tracking writes for ROLLBACK, logging slow
    /// statements, and cancelling it if the client goes away or KILL QUERY names it.
    pub(super) async fn stream<W: AsyncWrite + Unpin>(
        &mut self,
        run: Run<'_>,
        format: RowFormat,
        more: u16,
        w: &mut Writer<W>,
    ) -> io::Result<Outcome> {
        let started = Instant::now();
        // What the processlist and the log show: never a password typed in the statement.
        let shown = redacted(run.text()).into_owned();
        let _running = self.killable.running(&shown, self.session.database());
        let head: String = shown.chars().take(80).collect();
        let session = &self.session;
        let status = self.status() | more;
        let capabilities = self.capabilities;
        // Registered now, so a KILL QUERY from here on interrupts this statement.
        let killed = self.killable.interrupt.notified();
        tokio::pin!(killed);
        killed.as_mut().enable();
        let statement = async {
            let planned = session.progress().watch(
                async {
                    match run {
                        Run::Prepared(_, prepared, values) => {
                            session.execute_prepared(&prepared, values).await
                        }
                        Run::Text(statement) => session.run(statement).await,
                    }
                },
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

/// What [`Connection::stream`] runs: a statement read from its text, or a prepared one (its
/// text, and the values bound to it).
pub(super) enum Run<'a> {
    Text(ReadStatement),
    Prepared(&'a str, Arc<Prepared>, Vec<datafusion::common::ScalarValue>),
}

impl Run<'_> {
    fn text(&self) -> &str {
        match self {
            Run::Text(statement) => statement.text(),
            Run::Prepared(text, ..) => text,
        }
    }
}

/// How often a running statement that writes logs its progress.
pub(super) const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// The statement id at the front of a COM_STMT_* body (0, which is never one, if missing).
pub(super) fn statement_id(body: &[u8]) -> u32 {
    body.get(..4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

pub(super) fn unknown_statement(id: u32, to: &str) -> Vec<u8> {
    let message = format!("Unknown prepared statement handler ({id}) given to {to}");
    error_payload(error::UNKNOWN_STMT_HANDLER, &message)
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
