//! Statement dispatch: a statement's text is read by the front door ([`statement_text`]), then
//! sent to the short path, to Sieve's own handling, or to DataFusion.

use super::accounts;
use super::copy;
use super::ddl;
use super::external_files;
use super::index_statements;
use super::load;
use super::maintenance;
use datafusion::common::{ScalarValue, not_impl_err, plan_err};
use datafusion::error::Result;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{
    ObjectType, SchemaName, ShowCreateObject, Statement as SqlStatement, Use,
};
use sieve_storage::StorageError;

use super::{Session, object_parts};
use crate::access::privileges::Object;
use crate::dialect::connection_statements::ConnectionStatement;
use crate::dialect::information_schema;
use crate::dialect::set_variable;
use crate::dialect::show;
use crate::dialect::show_create::create_table_sql;
use crate::dialect::show_filter::{filter_of, filtered_list};
use crate::error::to_df;
use crate::iceberg::catalog as iceberg_catalog;
use crate::ingest::load_data::LoadData;
use crate::options::allowing_full_scan;
use crate::session::query_stream::QueryStream;
use crate::session::recognized_texts::Recognized;
use crate::session::short_path::PointLookup;
use crate::session::statement_task::run_on;
use crate::statement_text::{self, Statement};

/// Statement texts longer than this are read on the executor, not on the thread that serves
/// clients: three clients sending 150,000 nested parentheses or a 150,000-item IN list held the
/// serving threads for seconds between them, and another client's `select 1` waited up to 3 s.
/// Shorter texts (every point lookup) are read where they arrive, without a hop to another
/// thread.
const READ_ASIDE_BYTES: usize = 16 << 10;

/// A statement's text, read by the front door ([`statement_text`]): what the front end answers
/// itself ([`Self::connection_statement`], [`Self::into_load_data`]) or gives to
/// [`Session::run`]. A text that is no statement Sieve can run keeps its error, which
/// [`Session::run`] reports and records as the statement's.
pub struct ReadStatement {
    text: String,
    read: Result<Read>,
}

enum Read {
    /// A point lookup whose text was read before ([`crate::session::recognized_texts`]).
    Known(Recognized),
    /// With the point lookup it is, if one.
    Read(Statement, Option<PointLookup>),
}

impl ReadStatement {
    /// KILL or a transaction statement, which the front end answers itself.
    pub fn connection_statement(&self) -> Option<ConnectionStatement> {
        match &self.read {
            Ok(Read::Read(Statement::Connection(statement), _)) => Some(*statement),
            _ => None,
        }
    }

    /// The LOAD DATA this is, for the front end to ask its client for the file; itself if it
    /// is none.
    pub fn into_load_data(self) -> std::result::Result<LoadData, Self> {
        match self.read {
            Ok(Read::Read(Statement::LoadData(load), _)) => Ok(load),
            read => Err(Self { read, ..self }),
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }
}

impl Session {
    /// Reads one statement's text (see [`ReadStatement`]).
    pub async fn read(&self, text: &str) -> ReadStatement {
        let read = self.read_text(text).await;
        ReadStatement {
            text: text.to_string(),
            read,
        }
    }

    async fn read_text(&self, text: &str) -> Result<Read> {
        let keep_texts = self.options(|o| o.short_path && o.text_lookups);
        match self.texts.get(text, self.normalizes_identifiers()) {
            Some(known) if keep_texts => Ok(Read::Known(known)),
            _ => self.read_new(text).await,
        }
    }

    /// Reads `text` without asking whether it was read before.
    async fn read_new(&self, text: &str) -> Result<Read> {
        let (database, normalize) = (self.database(), self.normalizes_identifiers());
        let read = move |text: &str| {
            let statement = statement_text::read(text, &database)?;
            let lookup = match &statement {
                Statement::Sql { statement, .. } => PointLookup::recognize(statement, normalize),
                _ => None,
            };
            Ok(Read::Read(statement, lookup))
        };
        if text.len() > READ_ASIDE_BYTES {
            let text = text.to_string();
            let work = async move { read(&text) };
            run_on(&self.executor(), &self.tasks, work).await
        } else {
            read(text)
        }
    }

    /// Runs a statement the front door read.
    pub(super) async fn run_read(&self, statement: ReadStatement) -> Result<QueryStream> {
        let ReadStatement { text, read } = statement;
        let normalize = self.normalizes_identifiers();
        let keep_texts = self.options(|o| o.short_path && o.text_lookups);
        let (statement, lookup) = match read? {
            Read::Known(known) => {
                let short = self.allowing_full_scan(known.allow_filtering, async {
                    self.short_path(&known.lookup, &self.database(), &[]).await
                });
                // None when the table changed so that the full path must plan it: it is read
                // again, and planned.
                if let Some(rows) = short.await? {
                    return Ok(rows);
                }
                self.texts.remove(&text);
                match self.read_new(&text).await? {
                    Read::Read(statement, lookup) => (statement, lookup),
                    Read::Known(known) => unreachable!("read_new reads: {known:?}"),
                }
            }
            Read::Read(statement, lookup) => (statement, lookup),
        };
        let (statement, allow_filtering) = match statement {
            Statement::Sql {
                statement,
                allow_filtering,
            } => (statement, allow_filtering),
            other => return self.run_recognised(other).await,
        };
        self.allowing_full_scan(allow_filtering, async {
            if let Some(lookup) = lookup
                && let Some(rows) = self.short_path(&lookup, &self.database(), &[]).await?
            {
                let known = Recognized {
                    lookup,
                    allow_filtering,
                    normalize,
                };
                if keep_texts {
                    self.texts.insert(&text, known);
                }
                return Ok(rows);
            }
            self.execute_statement(statement).await
        })
        .await
    }

    /// Runs a statement the front door read, other than through the short path.
    async fn run_recognised(&self, statement: Statement) -> Result<QueryStream> {
        match statement {
            Statement::Connection(statement) => self.connection_statement(statement),
            Statement::LoadData(_) => Err(load::needs_a_client()),
            Statement::Account(statement) => accounts::run_user_statement(self, statement).await,
            Statement::Show(sql) => self.run_sql(&sql).await,
            Statement::Vacuum(vacuum) => maintenance::vacuum(self, vacuum).await,
            Statement::Optimize(optimize) => maintenance::optimize(self, optimize).await,
            Statement::Index(statement) => index_statements::run(self, statement).await,
            Statement::Copy(copy) => copy::copy_into(self, copy).await,
            Statement::Sql {
                statement,
                allow_filtering,
            } => {
                self.allowing_full_scan(allow_filtering, self.execute_statement(statement))
                    .await
            }
        }
    }

    /// KILL and the transaction statements where no MySQL connection answers them (Flight
    /// SQL, `sieve sql`): BEGIN and COMMIT change nothing, as every statement commits on its
    /// own; the others cannot be done here.
    fn connection_statement(&self, statement: ConnectionStatement) -> Result<QueryStream> {
        match statement {
            ConnectionStatement::Begin | ConnectionStatement::Commit => Ok(self.affected(0)),
            ConnectionStatement::Rollback => not_impl_err!(
                "ROLLBACK cannot undo anything: Sieve has no transactions, each statement \
                 committed on its own"
            ),
            ConnectionStatement::Kill { .. } => not_impl_err!(
                "KILL stops a statement of a MySQL connection: send it over the MySQL protocol"
            ),
        }
    }

    /// Runs `statement` (which plans its scans before it returns) with full scans allowed if
    /// `allow` says so, for its span only ([`crate::options::allowing_full_scan`]).
    pub(super) async fn allowing_full_scan<T>(
        &self,
        allow: bool,
        statement: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        // On the heap: a statement's future is large, and this one wraps every statement.
        allowing_full_scan(allow, Box::pin(statement)).await
    }

    pub(super) async fn execute_statement(&self, statement: DFStatement) -> Result<QueryStream> {
        self.progress.reset();
        let _files = external_files::resolve_files(self, &statement).await?;
        let DFStatement::Statement(sql) = statement else {
            return self.run_in_datafusion(statement).await;
        };
        match *sql {
            SqlStatement::CreateDatabase {
                db_name,
                if_not_exists,
                ..
            } => ddl::create_database(self, &object_parts(&db_name), if_not_exists).await,
            SqlStatement::CreateSchema {
                schema_name: SchemaName::Simple(name),
                if_not_exists,
                ..
            } => ddl::create_database(self, &object_parts(&name), if_not_exists).await,
            SqlStatement::ShowDatabases { show_options, .. }
            | SqlStatement::ShowSchemas { show_options, .. } => {
                let mut databases = self.catalog.list_databases().await.map_err(to_df)?;
                let principal = self.principal();
                databases.retain(|db| principal.sees(&Object::database(db)));
                databases.push(information_schema::NAME.to_string());
                databases
                    .extend(iceberg_catalog::visible_namespaces(&self.iceberg, &principal).await?);
                let filter = filter_of(show_options.filter_position);
                let list = filtered_list(&self.ctx, "Database", databases, filter)?;
                self.run_plan(list.into_unoptimized_plan()).await
            }
            SqlStatement::Use(Use::Object(name) | Use::Database(name) | Use::Schema(name)) => {
                match object_parts(&name).as_slice() {
                    [db] => self.use_database(db).await.map(|()| self.affected(0)),
                    _ => plan_err!("USE takes one database name, got {name}"),
                }
            }
            SqlStatement::ShowTables {
                full, show_options, ..
            } => {
                let parts = show_options
                    .show_in
                    .and_then(|s| s.parent_name)
                    .map(|n| object_parts(&n));
                let filter = filter_of(show_options.filter_position);
                let principal = self.principal();
                let named = parts.clone().unwrap_or_else(|| vec![self.database()]);
                if let Some(tables) =
                    iceberg_catalog::visible_tables(&self.iceberg, &named, &principal).await
                {
                    let column = format!("Tables_in_{}", named.join("."));
                    let mut list = filtered_list(&self.ctx, &column, tables?, filter)?;
                    if full {
                        let kind = datafusion::logical_expr::lit("BASE TABLE");
                        list = list.with_column("Table_type", kind)?;
                    }
                    return self.run_plan(list.into_unoptimized_plan()).await;
                }
                let db = match parts {
                    Some(parts) => parts.join("."),
                    None => self.database(),
                };
                self.require_visible_database(&db)?;
                if !self.catalog.database_exists(&db).await.map_err(to_df)?
                    && !db.eq_ignore_ascii_case(information_schema::NAME)
                {
                    return Err(to_df(StorageError::UnknownDatabase(db)));
                }
                self.run_sql(&show::tables(&db, full, filter)).await
            }
            SqlStatement::ShowVariables { filter, .. } => {
                let limits = self.server().0;
                self.run_sql(&show::variables(&limits, filter)).await
            }
            SqlStatement::ShowStatus { filter, .. } => self.run_sql(&show::status(filter)).await,
            SqlStatement::ShowCollation { filter } => self.run_sql(&show::collations(filter)).await,
            SqlStatement::ShowCharset(charset) => {
                self.run_sql(&show::charsets(charset.filter)).await
            }
            SqlStatement::ShowProcessList { full, .. } => {
                let sql = show::processlist(&self.processes(), full);
                self.run_sql(&sql).await
            }
            SqlStatement::ShowCreate {
                obj_type: ShowCreateObject::Table,
                obj_name,
            } => {
                let (db, table) = ddl::resolve(self, &obj_name)?;
                // Refused before looking, as MySQL does: a refusal says nothing of existence.
                self.principal()
                    .require_visible(&Object::table(&db, &table))?;
                let def = self.catalog.table(&db, &table).await.map_err(to_df)?;
                QueryStream::table(
                    &["Table", "Create Table"],
                    vec![vec![def.name.clone(), create_table_sql(&def)]],
                    self.pool(),
                )
            }
            SqlStatement::ExplainTable { table_name, .. } => {
                ddl::describe(self, &table_name, false, None).await
            }
            SqlStatement::ShowColumns {
                full, show_options, ..
            } => {
                let Some(table) = show_options.show_in.and_then(|s| s.parent_name) else {
                    return plan_err!("SHOW COLUMNS needs FROM table");
                };
                let filter = filter_of(show_options.filter_position);
                ddl::describe(self, &table, full, filter).await
            }
            SqlStatement::CreateTable(create) if !create.external => {
                ddl::create_table(self, create).await
            }
            SqlStatement::Set(set) => {
                let (user, rest) = set_variable::take_user_assignments(set);
                // Values first: a SET that fails changes nothing.
                let mut values = Vec::with_capacity(user.len());
                for (name, expr) in user {
                    values.push((name, self.evaluate(&expr).await?));
                }
                if let Some(rest) = rest {
                    let state = self.ctx.state_ref();
                    set_variable::apply(state.write().config_mut().options_mut(), rest)?;
                }
                for (name, value) in values {
                    self.user_variables.set(&name, value);
                }
                Ok(self.affected(0))
            }
            // Each statement reads one snapshot of the tables it names, which is what a read
            // lock would give; Sieve takes no locks (mariadb-dump sends these).
            SqlStatement::LockTables { .. } | SqlStatement::UnlockTables => Ok(self.affected(0)),
            SqlStatement::Drop {
                object_type,
                if_exists,
                names,
                ..
            } => match object_type {
                ObjectType::Table => ddl::drop_tables(self, &names, if_exists).await,
                ObjectType::Schema | ObjectType::Database => {
                    ddl::drop_databases(self, &names, if_exists).await
                }
                other => plan_err!("DROP {other} is not supported"),
            },
            other => {
                self.run_in_datafusion(DFStatement::Statement(Box::new(other)))
                    .await
            }
        }
    }

    /// The value of one expression, as `SELECT expr` computes it.
    pub(super) async fn evaluate(
        &self,
        expr: &datafusion::sql::sqlparser::ast::Expr,
    ) -> Result<ScalarValue> {
        let output = self
            .run_sql(&format!("select {expr}"))
            .await?
            .collect()
            .await?;
        match output.batches.iter().find(|b| b.num_rows() > 0) {
            Some(batch) => ScalarValue::try_from_array(batch.column(0), 0),
            None => Ok(ScalarValue::Utf8(None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::panic::AssertUnwindSafe;
    use std::time::Duration;

    use futures::FutureExt;

    use datafusion::error::DataFusionError;

    use super::*;
    use crate::Engine;
    use crate::options::SieveOptions;

    /// A statement with ALLOW FILTERING may read tables in full while it runs, without the
    /// session's setting changing; once it is dropped mid-way (KILL, a timeout) or panics, the
    /// session's next statement is refused a full scan.
    #[tokio::test]
    async fn a_dropped_or_panicking_statement_leaves_full_scans_refused() {
        let engine = Engine::open("memory://").await.unwrap();
        let s = engine.session().unwrap();
        s.execute("create table t (k bigint) with (block_rows = 10)")
            .await
            .unwrap();
        s.execute("insert into t select number from numbers(200)")
            .await
            .unwrap();
        let full_scan = "select count(*) from t where k + 1 > 0";
        let refused =
            |e: DataFusionError| assert!(e.to_string().contains("ALLOW FILTERING"), "{e}");
        refused(s.execute(full_scan).await.unwrap_err());
        let allowed = || s.options(SieveOptions::allows_full_scan);
        let pending = s.allowing_full_scan(true, async {
            assert!(allowed() && !s.options(|o| o.allow_full_scan));
            std::future::pending::<Result<()>>().await
        });
        let dropped = tokio::time::timeout(Duration::from_millis(10), pending).await;
        assert!(dropped.is_err());
        assert!(!allowed(), "a dropped statement left full scans allowed");
        refused(s.execute(full_scan).await.unwrap_err());
        let panicking = s.allowing_full_scan(true, async {
            assert!(allowed());
            panic!("mid-statement")
        });
        let panicked: std::result::Result<Result<()>, _> =
            AssertUnwindSafe(panicking).catch_unwind().await;
        assert!(panicked.is_err());
        assert!(!allowed(), "a panicking statement left full scans allowed");
        refused(s.execute(full_scan).await.unwrap_err());
        let counted = s.execute(&format!("{full_scan} allow filtering")).await;
        assert_eq!(counted.unwrap().batches[0].num_rows(), 1);
    }
}
