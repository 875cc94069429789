//! Statement dispatch: a statement's text is recognised (SHOW, VACUUM, OPTIMIZE), parsed and
//! rewritten for MySQL, then sent to Sieve's own handling or to DataFusion.

use super::accounts;
use super::copy;
use super::ddl;
use super::external_files;
use super::load;
use super::maintenance;
use datafusion::common::{ScalarValue, plan_err};
use datafusion::error::Result;
use datafusion::sql::parser::{DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::{ObjectType, SchemaName, ShowCreateObject, Statement, Use};
use datafusion::sql::sqlparser::dialect::MySqlDialect;
use sieve_storage::StorageError;

use super::{Session, object_parts};
use crate::access::privileges::Object;
use crate::access::user_statements::{self, UserStatement};
use crate::dialect::information_schema;
use crate::dialect::rewrites;
use crate::dialect::set_variable;
use crate::dialect::show;
use crate::dialect::show_create::create_table_sql;
use crate::dialect::show_filter::{filter_of, filtered_list};
use crate::error::to_df;
use crate::guard::statement::check_complexity;
use crate::iceberg::catalog as iceberg_catalog;
use crate::ingest::copy_into::{self, CopyInto};
use crate::maintenance::optimize::{self, Optimize};
use crate::maintenance::vacuum::{self, Vacuum};
use crate::options::SieveOptions;
use crate::session::prepared::allow_filtering;
use crate::session::query_stream::QueryStream;
use crate::session::recognized_texts::Recognized;
use crate::session::short_path::PointLookup;
use crate::session::statement_task::run_on;

/// A statement Sieve recognises before SQL parsing: DataFusion's parser knows none of these in
/// the form MySQL users write them.
pub(super) enum Recognised {
    Account(UserStatement),
    /// SHOW statements, rewritten as queries of `information_schema`.
    Show(String),
    Vacuum(Vacuum),
    Optimize(Optimize),
    Copy(CopyInto),
}

/// The statement `sql` holds if it is one Sieve recognises before parsing (or the error that
/// says why it is a malformed one); None for the others. A LOAD DATA is an error here: only a
/// client that sends the file can run it.
pub(super) fn recognise(sql: &str, database: &str) -> Option<Result<Recognised>> {
    if let Some(statement) = user_statements::parse(sql) {
        return Some(statement.map(Recognised::Account));
    }
    if let Some(rewritten) = show::rewrite(sql, database) {
        return Some(rewritten.map(Recognised::Show));
    }
    if let Some(vacuum) = vacuum::parse(sql) {
        return Some(vacuum.map(Recognised::Vacuum));
    }
    if let Some(optimize) = optimize::parse(sql) {
        return Some(optimize.map(Recognised::Optimize));
    }
    if let Some(copy) = copy_into::parse(sql, database) {
        return Some(copy.map(Recognised::Copy));
    }
    load::refuse_load_data(sql).map(Err)
}

/// Statement texts longer than this are checked and parsed on the executor, not on the thread
/// that serves clients: three clients sending 150,000 nested parentheses or a 150,000-item IN
/// list held the serving threads for seconds between them, and another client's `select 1`
/// waited up to 3 s. Shorter texts (every point lookup) are parsed where they arrive, without a
/// hop to another thread.
const PARSED_ASIDE_BYTES: usize = 16 << 10;

/// A statement's text made ready to run: one Sieve recognises, or a statement parsed and
/// rewritten for MySQL, with the point lookup it is (if one) and whether it allows filtering.
enum Parsed {
    Recognised(Recognised),
    Statement(DFStatement, Option<PointLookup>, bool),
}

fn parse_text(text: &str, database: &str, normalize: bool) -> Result<Parsed> {
    check_complexity(text)?;
    let (sql, allow_filtering) = allow_filtering(text);
    let sql = set_variable::without_names(sql);
    let sql = sql.as_ref();
    if let Some(recognised) = recognise(sql, database) {
        return recognised.map(Parsed::Recognised);
    }
    let mut statement = Session::parse_one(sql)?;
    rewrites::rewrite(&mut statement);
    let lookup = PointLookup::recognize(&statement, normalize);
    Ok(Parsed::Statement(statement, lookup, allow_filtering))
}

impl Session {
    pub(super) async fn parse_and_run(&self, text: &str) -> Result<QueryStream> {
        let normalize = self.normalizes_identifiers();
        let keep_texts = self.options(|o| o.short_path && o.text_lookups);
        if let Some(known) = self.texts.get(text, normalize).filter(|_| keep_texts) {
            let short = self.allowing_full_scan(known.allow_filtering, async {
                self.short_path(&known.lookup, &self.database(), &[]).await
            });
            // None when the table changed so that the full path must plan it: then as below.
            match short.await? {
                Some(rows) => return Ok(rows),
                None => self.texts.remove(text),
            }
        }
        let database = self.database();
        let parsed = if text.len() > PARSED_ASIDE_BYTES {
            let text = text.to_string();
            let work = async move { parse_text(&text, &database, normalize) };
            run_on(&self.executor(), &self.tasks, work).await?
        } else {
            parse_text(text, &database, normalize)?
        };
        let (statement, lookup, allow_filtering) = match parsed {
            Parsed::Recognised(recognised) => return self.run_recognised(recognised).await,
            Parsed::Statement(statement, lookup, allow) => (statement, lookup, allow),
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
                    self.texts.insert(text, known);
                }
                return Ok(rows);
            }
            self.execute_statement(statement).await
        })
        .await
    }

    async fn run_recognised(&self, recognised: Recognised) -> Result<QueryStream> {
        match recognised {
            Recognised::Account(statement) => accounts::run_user_statement(self, statement).await,
            Recognised::Show(sql) => self.run_sql(&sql).await,
            Recognised::Vacuum(vacuum) => maintenance::vacuum(self, vacuum).await,
            Recognised::Optimize(optimize) => maintenance::optimize(self, optimize).await,
            Recognised::Copy(copy) => copy::copy_into(self, copy).await,
        }
    }

    /// Runs `statement` (which plans its scans before it returns) with full scans allowed if
    /// `allow` says so, the session's setting as it was afterwards: also when the statement is
    /// dropped mid-way (KILL, a timeout, a client gone) or panics, or the full-scan guard would
    /// stay off for the session's next statements.
    pub(super) async fn allowing_full_scan<T>(
        &self,
        allow: bool,
        statement: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        // On the heap: a statement's future is large, and this one wraps every statement.
        let statement = Box::pin(statement);
        if !allow {
            return statement.await;
        }
        let _restore = FullScanAllowed {
            before: self.set_allow_full_scan(true),
            session: self,
        };
        statement.await
    }

    /// Sets `allow_full_scan`, returning what it was.
    fn set_allow_full_scan(&self, value: bool) -> bool {
        let state = self.ctx.state_ref();
        let mut state = state.write();
        let options = state.config_mut().options_mut();
        let sieve = options.extensions.get_mut::<SieveOptions>();
        sieve.is_some_and(|o| std::mem::replace(&mut o.allow_full_scan, value))
    }

    pub(super) fn parse_one(sql: &str) -> Result<DFStatement> {
        let mut statements = DFParser::parse_sql_with_dialect(sql, &MySqlDialect {})?;
        match (statements.pop_front(), statements.is_empty()) {
            (Some(statement), true) => Ok(statement),
            (None, _) => plan_err!("no statement to run"),
            (Some(_), false) => {
                plan_err!("one statement expected; split scripts with split_statements")
            }
        }
    }

    pub(super) async fn execute_statement(&self, statement: DFStatement) -> Result<QueryStream> {
        self.progress.reset();
        let _files = external_files::resolve_files(self, &statement).await?;
        let DFStatement::Statement(sql) = statement else {
            return self.run_in_datafusion(statement).await;
        };
        match *sql {
            Statement::CreateDatabase {
                db_name,
                if_not_exists,
                ..
            } => ddl::create_database(self, &object_parts(&db_name), if_not_exists).await,
            Statement::CreateSchema {
                schema_name: SchemaName::Simple(name),
                if_not_exists,
                ..
            } => ddl::create_database(self, &object_parts(&name), if_not_exists).await,
            Statement::ShowDatabases { show_options, .. }
            | Statement::ShowSchemas { show_options, .. } => {
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
            Statement::Use(Use::Object(name) | Use::Database(name) | Use::Schema(name)) => {
                match object_parts(&name).as_slice() {
                    [db] => self.use_database(db).await.map(|()| self.affected(0)),
                    _ => plan_err!("USE takes one database name, got {name}"),
                }
            }
            Statement::ShowTables {
                full, show_options, ..
            } => {
                let parts = show_options
                    .show_in
                    .and_then(|s| s.parent_name)
                    .map(|n| object_parts(&n));
                let filter = filter_of(show_options.filter_position);
                let principal = self.principal();
                if let Some(parts) = &parts
                    && let Some(tables) =
                        iceberg_catalog::visible_tables(&self.iceberg, parts, &principal).await
                {
                    let column = format!("Tables_in_{}", parts.join("."));
                    let list = filtered_list(&self.ctx, &column, tables?, filter)?;
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
            Statement::ShowVariables { filter, .. } => {
                let limits = self.server().0;
                self.run_sql(&show::variables(&limits, filter)).await
            }
            Statement::ShowStatus { filter, .. } => self.run_sql(&show::status(filter)).await,
            Statement::ShowCollation { filter } => self.run_sql(&show::collations(filter)).await,
            Statement::ShowCharset(charset) => self.run_sql(&show::charsets(charset.filter)).await,
            Statement::ShowProcessList { full, .. } => {
                let sql = show::processlist(&self.processes(), full);
                self.run_sql(&sql).await
            }
            Statement::ShowCreate {
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
            Statement::ExplainTable { table_name, .. } => {
                ddl::describe(self, &table_name, false, None).await
            }
            Statement::ShowColumns {
                full, show_options, ..
            } => {
                let Some(table) = show_options.show_in.and_then(|s| s.parent_name) else {
                    return plan_err!("SHOW COLUMNS needs FROM table");
                };
                let filter = filter_of(show_options.filter_position);
                ddl::describe(self, &table, full, filter).await
            }
            Statement::CreateTable(create) if !create.external => {
                ddl::create_table(self, create).await
            }
            Statement::Set(set) => {
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
            Statement::LockTables { .. } | Statement::UnlockTables => Ok(self.affected(0)),
            Statement::Drop {
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

/// Puts the session's `allow_full_scan` back as it was when dropped, however the statement
/// that allowed full scans ended.
struct FullScanAllowed<'a> {
    session: &'a Session,
    before: bool,
}

impl Drop for FullScanAllowed<'_> {
    fn drop(&mut self) {
        self.session.set_allow_full_scan(self.before);
    }
}

#[cfg(test)]
mod tests {
    use std::panic::AssertUnwindSafe;
    use std::time::Duration;

    use futures::FutureExt;

    use super::*;
    use crate::Engine;

    /// A statement with ALLOW FILTERING that is dropped mid-way (KILL, a timeout) or panics
    /// leaves the session's full-scan guard on for the next statement.
    #[tokio::test]
    async fn a_dropped_or_panicking_statement_leaves_full_scans_refused() {
        let engine = Engine::open("memory://").await.unwrap();
        let s = engine.session().unwrap();
        let allowed = || s.options(|o| o.allow_full_scan);
        let pending = s.allowing_full_scan(true, std::future::pending::<Result<()>>());
        let dropped = tokio::time::timeout(Duration::from_millis(10), pending).await;
        assert!(dropped.is_err());
        assert!(!allowed(), "a dropped statement left full scans allowed");
        let panicking = s.allowing_full_scan(true, async {
            assert!(s.options(|o| o.allow_full_scan));
            panic!("mid-statement")
        });
        let panicked: std::result::Result<Result<()>, _> =
            AssertUnwindSafe(panicking).catch_unwind().await;
        assert!(panicked.is_err());
        assert!(!allowed(), "a panicking statement left full scans allowed");
    }
}
