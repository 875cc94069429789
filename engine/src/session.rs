//! A SQL session over Sieve storage: DataFusion plans and runs queries and INSERTs; the statements
//! whose meaning lives in Sieve's catalog (databases, CREATE/DROP TABLE, CTAS, SHOW, USE) are
//! handled here. Every statement sees the storage as it is now: a second process's tables and
//! commits are visible at once.

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::UInt64Array;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::{ScalarValue, exec_err, plan_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::context::SessionContext;
use datafusion::execution::memory_pool::MemoryPool;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::logical_expr::var_provider::VarType;
use datafusion::logical_expr::{DdlStatement, LogicalPlan};
use datafusion::optimizer::Analyzer;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::prelude::SessionConfig;
use datafusion::sql::parser::{DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::{
    CreateTable, ObjectName, ObjectType, SchemaName, ShowCreateObject, ShowStatementFilter,
    Statement, Use,
};
use datafusion::sql::sqlparser::dialect::MySqlDialect;
use futures::StreamExt;
use sieve_storage::{
    Catalog, DEFAULT_DATABASE, Storage, StorageError, Table, TableDef, TableOptions,
};
use tokio::runtime::Handle;
use tokio::time::Instant;

use crate::catalog::{CATALOG_NAME, SieveCatalog};
use crate::checked_arithmetic::CheckedArithmetic;
use crate::cluster::{Cluster, WorkerFailed};
use crate::deadline::{DeadlineStream, QueryTimeout};
use crate::delete::check_delete;
use crate::describe::columns_of;
use crate::error::to_df;
use crate::index_stats::IndexStatsFunction;
use crate::information_schema;
use crate::memory::{MemoryLimits, QueryPool};
use crate::mysql_rewrites;
use crate::mysql_show;
use crate::numbers::NumbersFunction;
use crate::optimize::{self, Optimize};
use crate::options::SieveOptions;
use crate::panic_guard;
use crate::prepared::{Prepared, allow_filtering, number_placeholders};
use crate::progress::WriteProgress;
use crate::query_stream::{ColumnOrigin, QueryOutput, QueryStream};
use crate::script::statement_texts;
use crate::session_functions::{self, Client, RowCount};
use crate::set_variable;
use crate::show_create::create_table_sql;
use crate::show_filter::{filter_of, filtered_list};
use crate::sink::write_stream;
use crate::statement_guard::{check_complexity, check_confined};
use crate::statement_task::{rows_on, run_on};
use crate::storage_url::object_store_url;
use crate::system_variables::{ServerLimits, SystemVariables};
use crate::table_options::{table_options, take_key_constraints, take_table_options};
use crate::user_variables::UserVariables;
use crate::vacuum::{self, Vacuum};

/// One storage location opened for SQL; cheap to clone, shared by its sessions.
#[derive(Debug, Clone)]
pub struct Engine {
    catalog: Catalog,
    /// Shared by all sessions: the server's memory pool, the disk manager for spills, caches.
    runtime: Arc<RuntimeEnv>,
    limits: MemoryLimits,
    /// What a new session's `sieve.` settings start as.
    session_defaults: SieveOptions,
    /// The runtime statements run on; None runs them on the caller's.
    executor: Option<Handle>,
    /// Workers that run scans; None runs everything in this process.
    cluster: Option<Arc<Cluster>>,
}

impl Engine {
    /// Opens `file:///…`, a plain directory path, `s3://bucket/prefix` or `memory://`.
    pub async fn open(location: &str) -> Result<Self> {
        Self::with_storage(Storage::open(location).map_err(to_df)?).await
    }

    pub async fn with_storage(storage: Storage) -> Result<Self> {
        let limits = MemoryLimits::default();
        Ok(Self {
            catalog: Catalog::open(storage).await.map_err(to_df)?,
            runtime: runtime(limits)?,
            limits,
            session_defaults: SieveOptions::default(),
            executor: None,
            cluster: None,
        })
    }

    /// The same storage with other settings for new sessions (e.g. `max_execution_time`).
    pub fn with_session_defaults(self, session_defaults: SieveOptions) -> Self {
        Self {
            session_defaults,
            ..self
        }
    }

    /// The same storage, its statements run on `executor` (see [`crate::statement_task`]).
    pub fn with_executor(self, executor: Handle) -> Self {
        Self {
            executor: Some(executor),
            ..self
        }
    }

    /// The same storage, its scans split among `cluster`'s workers.
    pub fn with_cluster(self, cluster: Arc<Cluster>) -> Self {
        Self {
            cluster: Some(cluster),
            ..self
        }
    }

    /// The same storage under other memory limits.
    pub fn with_memory_limits(self, limits: MemoryLimits) -> Result<Self> {
        Ok(Self {
            runtime: runtime(limits)?,
            limits,
            ..self
        })
    }

    pub fn storage(&self) -> &Storage {
        self.catalog.storage()
    }

    pub(crate) fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn session(&self) -> Result<Session> {
        let pool = QueryPool::new(self.runtime.memory_pool.clone(), self.limits.query);
        let runtime = RuntimeEnvBuilder::from_runtime_env(&self.runtime)
            .with_memory_pool(Arc::new(pool))
            .build_arc()?;
        Session::new(
            self.catalog.clone(),
            runtime,
            self.session_defaults.clone(),
            self.executor.clone(),
            self.cluster.clone(),
        )
    }
}

async fn plan_physical(ctx: SessionContext, plan: LogicalPlan) -> Result<Arc<dyn ExecutionPlan>> {
    ctx.execute_logical_plan(plan)
        .await?
        .create_physical_plan()
        .await
}

fn runtime(limits: MemoryLimits) -> Result<Arc<RuntimeEnv>> {
    RuntimeEnvBuilder::new()
        .with_memory_pool(limits.server_pool())
        .build_arc()
}

pub struct Session {
    ctx: SessionContext,
    catalog: Catalog,
    progress: Arc<WriteProgress>,
    executor: Option<Handle>,
    /// What SHOW VARIABLES and SHOW PROCESSLIST report: the server's limits and the client.
    server: std::sync::Mutex<(ServerLimits, Client)>,
    user_variables: Arc<UserVariables>,
    row_count: Arc<RowCount>,
    /// The workers scans run on, whose failures a query's error explains.
    cluster: Option<Arc<Cluster>>,
}

fn object_parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(|i| i.value.clone())
        .collect()
}

impl Session {
    fn new(
        catalog: Catalog,
        runtime: Arc<RuntimeEnv>,
        options: SieveOptions,
        executor: Option<Handle>,
        cluster: Option<Arc<Cluster>>,
    ) -> Result<Self> {
        let progress = Arc::new(WriteProgress::default());
        let mut config = SessionConfig::new()
            .with_extension(progress.clone())
            .with_default_catalog_and_schema(CATALOG_NAME, DEFAULT_DATABASE)
            .with_create_default_catalog_and_schema(false)
            .with_option_extension(options)
            .set_str("datafusion.sql_parser.dialect", "mysql");
        if let Some(cluster) = &cluster {
            config = config.with_extension(cluster.clone());
        }
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_runtime_env(runtime)
            .with_default_features()
            .with_analyzer_rules({
                let mut rules = Analyzer::new().rules;
                rules.push(Arc::new(CheckedArithmetic));
                rules
            });
        let state = match &cluster {
            Some(cluster) => crate::cluster::distribute(state, cluster, catalog.storage())?,
            None => state,
        }
        .build();
        let ctx = SessionContext::new_with_state(state);
        ctx.register_catalog(CATALOG_NAME, Arc::new(SieveCatalog::new(catalog.clone())));
        ctx.register_udtf("numbers", Arc::new(NumbersFunction));
        ctx.register_udtf(
            "sieve_index_stats",
            Arc::new(IndexStatsFunction::new(catalog.clone())),
        );
        let rand = datafusion::functions::math::random()
            .as_ref()
            .clone()
            .with_aliases(["rand"]);
        ctx.register_udf(rand);
        crate::mysql_functions::register(&ctx);
        ctx.register_variable(VarType::System, Arc::new(SystemVariables::default()));
        let user_variables = Arc::new(UserVariables::default());
        ctx.register_variable(VarType::UserDefined, user_variables.clone());
        let row_count = Arc::new(RowCount::default());
        session_functions::register(&ctx, &Client::default(), &row_count);
        let storage = catalog.storage();
        let url = object_store_url(storage)?;
        ctx.register_object_store(url.as_ref(), storage.store().clone());
        Ok(Self {
            ctx,
            catalog,
            progress,
            executor,
            server: Default::default(),
            user_variables,
            row_count,
            cluster,
        })
    }

    /// The limits the server serving this session enforces, as `@@max_allowed_packet` and
    /// `@@wait_timeout` report them.
    pub fn set_server_limits(&self, limits: ServerLimits) {
        self.ctx
            .register_variable(VarType::System, Arc::new(SystemVariables { limits }));
        self.server().0 = limits;
    }

    fn server(&self) -> std::sync::MutexGuard<'_, (ServerLimits, Client)> {
        // Two plain values cannot be left half-changed by a panic.
        self.server
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Says whom the session serves, for `user()` and `connection_id()`.
    pub fn set_client(&self, client: &Client) {
        session_functions::register(&self.ctx, client, &self.row_count);
        self.server().1 = client.clone();
    }

    /// Rows written so far by the statement running now (INSERT, CTAS).
    pub fn progress(&self) -> Arc<WriteProgress> {
        self.progress.clone()
    }

    /// The database unqualified table names resolve in.
    pub fn database(&self) -> String {
        self.ctx
            .state()
            .config_options()
            .catalog
            .default_schema
            .clone()
    }

    pub async fn use_database(&self, name: &str) -> Result<()> {
        if !self.catalog.database_exists(name).await.map_err(to_df)? {
            return Err(to_df(StorageError::UnknownDatabase(name.to_string())));
        }
        self.ctx
            .state_ref()
            .write()
            .config_mut()
            .options_mut()
            .catalog
            .default_schema = name.to_string();
        Ok(())
    }

    /// Splits a script into its statements (as SQL text), so callers can run and time each.
    pub fn split_statements(sql: &str) -> Result<Vec<String>> {
        check_complexity(sql)?;
        Ok(statement_texts(sql)?
            .into_iter()
            .map(str::to_string)
            .collect())
    }

    /// Runs one statement to the end and returns its whole result.
    pub async fn execute(&self, sql: &str) -> Result<QueryOutput> {
        self.query(sql).await?.collect().await
    }

    /// Runs one statement; a query's rows stream as the caller reads them.
    pub async fn query(&self, sql: &str) -> Result<QueryStream> {
        let output = panic_guard::catch(self.parse_and_run(sql)).await;
        self.counted(output)
    }

    /// Keeps what `row_count()` reports of a statement that ran.
    fn counted(&self, output: Result<QueryStream>) -> Result<QueryStream> {
        if let Ok(stream) = &output {
            self.row_count.set(stream.affected_rows());
        }
        output
    }

    async fn parse_and_run(&self, sql: &str) -> Result<QueryStream> {
        check_complexity(sql)?;
        let (sql, allow_filtering) = allow_filtering(sql);
        let sql = set_variable::without_names(sql);
        let sql = sql.as_ref();
        if let Some(rewritten) = mysql_show::rewrite(sql, &self.database()) {
            return self.run_sql(&rewritten?).await;
        }
        if let Some(vacuum) = vacuum::parse(sql) {
            return self.vacuum(vacuum?).await;
        }
        if let Some(optimize) = optimize::parse(sql) {
            return self.optimize(optimize?).await;
        }
        let mut statement = Self::parse_one(sql)?;
        mysql_rewrites::rewrite(&mut statement);
        self.allowing_full_scan(allow_filtering, self.execute_statement(statement))
            .await
    }

    /// Runs `statement` (which plans its scans before it returns) with full scans allowed if
    /// `allow` says so, the session's setting as it was afterwards.
    async fn allowing_full_scan(
        &self,
        allow: bool,
        statement: impl Future<Output = Result<QueryStream>>,
    ) -> Result<QueryStream> {
        // On the heap: a statement's future is large, and this one wraps every statement.
        let statement = Box::pin(statement);
        if !allow {
            return statement.await;
        }
        let set = |value: bool| -> bool {
            let state = self.ctx.state_ref();
            let mut state = state.write();
            let options = state.config_mut().options_mut();
            let sieve = options.extensions.get_mut::<SieveOptions>();
            sieve.is_some_and(|o| std::mem::replace(&mut o.allow_full_scan, value))
        };
        let before = set(true);
        let result = statement.await;
        set(before);
        result
    }

    fn parse_one(sql: &str) -> Result<DFStatement> {
        let mut statements = DFParser::parse_sql_with_dialect(sql, &MySqlDialect {})?;
        match (statements.pop_front(), statements.is_empty()) {
            (Some(statement), true) => Ok(statement),
            (None, _) => plan_err!("no statement to run"),
            (Some(_), false) => {
                plan_err!("one statement expected; split scripts with split_statements")
            }
        }
    }

    async fn execute_statement(&self, statement: DFStatement) -> Result<QueryStream> {
        self.progress.reset();
        let DFStatement::Statement(sql) = statement else {
            return self.run_in_datafusion(statement).await;
        };
        match *sql {
            Statement::CreateDatabase {
                db_name,
                if_not_exists,
                ..
            } => {
                self.create_database(&object_parts(&db_name), if_not_exists)
                    .await
            }
            Statement::CreateSchema {
                schema_name: SchemaName::Simple(name),
                if_not_exists,
                ..
            } => {
                self.create_database(&object_parts(&name), if_not_exists)
                    .await
            }
            Statement::ShowDatabases { show_options, .. }
            | Statement::ShowSchemas { show_options, .. } => {
                let mut databases = self.catalog.list_databases().await.map_err(to_df)?;
                databases.push(information_schema::NAME.to_string());
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
                let db = match show_options.show_in.and_then(|s| s.parent_name) {
                    Some(name) => object_parts(&name).join("."),
                    None => self.database(),
                };
                if !self.catalog.database_exists(&db).await.map_err(to_df)?
                    && !db.eq_ignore_ascii_case(information_schema::NAME)
                {
                    return Err(to_df(StorageError::UnknownDatabase(db)));
                }
                let filter = filter_of(show_options.filter_position);
                self.run_sql(&mysql_show::tables(&db, full, filter)).await
            }
            Statement::ShowVariables { filter, .. } => {
                let limits = self.server().0;
                self.run_sql(&mysql_show::variables(&limits, filter)).await
            }
            Statement::ShowStatus { filter, .. } => self.run_sql(&mysql_show::status(filter)).await,
            Statement::ShowCollation { filter } => {
                self.run_sql(&mysql_show::collations(filter)).await
            }
            Statement::ShowCharset(charset) => {
                self.run_sql(&mysql_show::charsets(charset.filter)).await
            }
            Statement::ShowProcessList { .. } => {
                let client = self.server().1.clone();
                let sql =
                    mysql_show::processlist(client.connection_id, &client.user, &self.database());
                self.run_sql(&sql).await
            }
            Statement::ShowCreate {
                obj_type: ShowCreateObject::Table,
                obj_name,
            } => {
                let (db, table) = self.resolve(&obj_name)?;
                let def = self.catalog.table(&db, &table).await.map_err(to_df)?;
                QueryStream::table(
                    &["Table", "Create Table"],
                    vec![vec![def.name.clone(), create_table_sql(&def)]],
                    self.pool(),
                )
            }
            Statement::ExplainTable { table_name, .. } => {
                self.describe(&table_name, false, None).await
            }
            Statement::ShowColumns {
                full, show_options, ..
            } => {
                let Some(table) = show_options.show_in.and_then(|s| s.parent_name) else {
                    return plan_err!("SHOW COLUMNS needs FROM table");
                };
                let filter = filter_of(show_options.filter_position);
                self.describe(&table, full, filter).await
            }
            Statement::CreateTable(create) if !create.external => self.create_table(create).await,
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
                ObjectType::Table => self.drop_tables(&names, if_exists).await,
                ObjectType::Schema | ObjectType::Database => {
                    self.drop_databases(&names, if_exists).await
                }
                other => plan_err!("DROP {other} is not supported"),
            },
            other => {
                self.run_in_datafusion(DFStatement::Statement(Box::new(other)))
                    .await
            }
        }
    }

    /// DESCRIBE / SHOW COLUMNS: an unknown table is MySQL's error, not an empty list.
    async fn describe(
        &self,
        name: &ObjectName,
        full: bool,
        filter: Option<ShowStatementFilter>,
    ) -> Result<QueryStream> {
        let (db, table) = self.resolve(name)?;
        self.catalog.table(&db, &table).await.map_err(to_df)?;
        let frame = columns_of(&self.ctx, &db, &table, full, filter).await?;
        self.run_plan(frame.into_unoptimized_plan()).await
    }

    async fn create_database(&self, name: &[String], if_not_exists: bool) -> Result<QueryStream> {
        let [name] = name else {
            return plan_err!("a database name has one part");
        };
        if name.eq_ignore_ascii_case(information_schema::NAME) {
            return plan_err!("{name} is MySQL's catalog of the server; it cannot be created");
        }
        match self.catalog.create_database(name).await {
            Ok(()) => Ok(self.affected(1)),
            Err(StorageError::DatabaseExists(_)) if if_not_exists => Ok(self.affected(0)),
            Err(e) => Err(to_df(e)),
        }
    }

    async fn drop_databases(&self, names: &[ObjectName], if_exists: bool) -> Result<QueryStream> {
        for name in names {
            let [db] = object_parts(name)
                .try_into()
                .map_err(|_| DataFusionError::Plan(format!("bad database name {name}")))?;
            match self.catalog.drop_database(&db).await {
                Ok(()) => {}
                Err(StorageError::UnknownDatabase(_)) if if_exists => {}
                Err(e) => return Err(to_df(e)),
            }
        }
        Ok(self.affected(0))
    }

    fn resolve(&self, name: &ObjectName) -> Result<(String, String)> {
        match object_parts(name).as_slice() {
            [table] => Ok((self.database(), table.clone())),
            [db, table] => Ok((db.clone(), table.clone())),
            _ => plan_err!("table names are `table` or `database.table`, got {name}"),
        }
    }

    /// VACUUM: answers with what it removed.
    async fn vacuum(&self, vacuum: Vacuum) -> Result<QueryStream> {
        let checked = self
            .ctx
            .state()
            .config_options()
            .extensions
            .get::<SieveOptions>()
            .is_none_or(|o| o.vacuum_retention_check);
        if checked && vacuum.retain < vacuum::MIN_RETAIN {
            return plan_err!(
                "VACUUM keeps at least {} hour of versions: a write running longer than the \
                 retention would lose the blocks it has uploaded. When none runs, SET \
                 sieve.vacuum_retention_check = false first",
                vacuum::MIN_RETAIN.as_secs() / 3600
            );
        }
        let table = self.open_named(&vacuum.table).await?;
        let done = table.vacuum(vacuum.retain).await.map_err(to_df)?;
        self.run_sql(&format!(
            "select {} as files_removed, {} as bytes_removed, {} as versions_kept",
            done.files_removed, done.bytes_removed, done.versions_kept
        ))
        .await
    }

    /// OPTIMIZE: answers with what it rewrote.
    async fn optimize(&self, optimize: Optimize) -> Result<QueryStream> {
        let table = self.open_named(&optimize.table).await?;
        self.progress.reset();
        let done = optimize::optimize(&table, &self.ctx.task_ctx(), &self.progress).await?;
        self.run_sql(&format!(
            "select {} as blocks_removed, {} as blocks_written, {} as rows_written, \
             {} as rows_purged, {} as sidecars_rebuilt, {} as groups_merged",
            done.blocks_removed,
            done.blocks_written,
            done.rows_written,
            done.rows_purged,
            done.sidecars_rebuilt,
            done.groups_merged
        ))
        .await
    }

    /// The table a statement recognised before parsing names (`table` or `database.table`).
    async fn open_named(&self, parts: &[String]) -> Result<Table> {
        let (db, name) = match parts {
            [table] => (self.database(), table.clone()),
            [db, table] => (db.clone(), table.clone()),
            _ => unreachable!("table_statement::table_name takes one or two parts"),
        };
        self.catalog.open_table(&db, &name).await.map_err(to_df)
    }

    async fn drop_tables(&self, names: &[ObjectName], if_exists: bool) -> Result<QueryStream> {
        for name in names {
            let (db, table) = self.resolve(name)?;
            match self.catalog.drop_table(&db, &table).await {
                Ok(()) => {}
                Err(StorageError::UnknownTable(..)) if if_exists => {}
                Err(e) => return Err(to_df(e)),
            }
        }
        Ok(self.affected(0))
    }

    /// CREATE TABLE, with Sieve's options; CREATE TABLE … AS SELECT writes and commits the rows
    /// before the table is published, so a failed CTAS leaves no table behind.
    async fn create_table(&self, mut create: CreateTable) -> Result<QueryStream> {
        let mut pairs = take_table_options(&mut create.table_options)?;
        take_key_constraints(&mut create.constraints, &mut pairs)?;
        let (db, name) = self.resolve(&create.name)?;
        let if_not_exists = create.if_not_exists;
        if create.or_replace {
            return plan_err!("CREATE OR REPLACE TABLE is not supported; DROP TABLE first");
        }
        match self.catalog.table(&db, &name).await {
            Ok(_) if if_not_exists => return Ok(self.affected(0)),
            Ok(_) => return Err(to_df(StorageError::TableExists(db, name))),
            Err(StorageError::UnknownTable(..)) => {}
            Err(e) => return Err(to_df(e)),
        }
        let has_query = create.query.is_some();
        let plan = self
            .ctx
            .state()
            .statement_to_plan(DFStatement::Statement(Box::new(Statement::CreateTable(
                create,
            ))))
            .await?;
        let LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(create)) = plan else {
            return exec_err!("unexpected plan for CREATE TABLE");
        };
        // The table takes the physical plan's types: they can be wider than the logical plan's
        // (DataFusion 55 plans `bigint unsigned + 5` as Decimal(20, 0) but computes Decimal(21, 0)).
        let physical = if has_query {
            let frame = self
                .ctx
                .execute_logical_plan(create.input.as_ref().clone())
                .await?;
            Some(frame.create_physical_plan().await?)
        } else {
            None
        };
        let schema: SchemaRef = match &physical {
            Some(plan) => plan.schema(),
            None => Arc::new(create.input.schema().as_arrow().clone()),
        };
        let options = table_options(TableOptions::defaults_for(&schema), &pairs)?;
        let def = TableDef::new(&db, &name, schema, options).map_err(to_df)?;
        let mut rows = 0;
        if let Some(plan) = physical {
            let table = Table::new(self.catalog.storage().clone(), def.clone());
            let stream = datafusion::physical_plan::execute_stream(plan, self.ctx.task_ctx())?;
            rows = write_stream(&table, stream, Some(&self.progress)).await?;
        }
        match self.catalog.create_table(&def).await {
            Ok(()) => Ok(self.affected(rows)),
            Err(StorageError::TableExists(..)) if if_not_exists => Ok(self.affected(0)),
            Err(e) => Err(to_df(e)),
        }
    }

    /// Parses a statement whose `?` placeholders are bound at each [`Self::execute_prepared`];
    /// fails as the statement would (bad SQL, unknown table) before anything runs.
    pub async fn prepare(&self, sql: &str) -> Result<Prepared> {
        check_complexity(sql)?;
        let (sql, allow_full_scan) = allow_filtering(sql);
        let mut statement = Self::parse_one(sql)?;
        mysql_rewrites::rewrite(&mut statement);
        let placeholders = number_placeholders(&mut statement)?;
        let params = placeholders.count;
        if params == 0 {
            return Ok(Prepared {
                statement,
                param_types: Vec::new(),
                result_fields: Vec::new(),
                allow_full_scan,
                database: self.database(),
            });
        }
        let plan = self
            .ctx
            .state()
            .statement_to_plan(statement.clone())
            .await?;
        let types = plan.get_parameter_types()?;
        let param_types = (1..=params)
            .map(|n| match types.get(&format!("${n}")).cloned().flatten() {
                None if placeholders.row_counts.contains(&(n - 1)) => Some(DataType::Int64),
                inferred => inferred,
            })
            .collect();
        let result_fields = match plan {
            LogicalPlan::Dml(_) | LogicalPlan::Ddl(_) | LogicalPlan::Statement(_) => Vec::new(),
            query => query.schema().fields().to_vec(),
        };
        Ok(Prepared {
            statement,
            param_types,
            result_fields,
            allow_full_scan,
            database: self.database(),
        })
    }

    /// Runs a prepared statement with one value per parameter. The values are bound to the
    /// plan as literals of their own types (DataFusion coerces them as it would a literal in
    /// the text), never spliced into SQL.
    pub async fn execute_prepared(
        &self,
        prepared: &Prepared,
        params: Vec<ScalarValue>,
    ) -> Result<QueryStream> {
        if params.len() != prepared.params() {
            return plan_err!(
                "the statement has {} parameters, {} given",
                prepared.params(),
                params.len()
            );
        }
        let statement = prepared.statement.clone();
        let run = async move {
            if params.is_empty() {
                return self.execute_statement(statement).await;
            }
            self.progress.reset();
            let mut state = self.ctx.state();
            state.config_mut().options_mut().catalog.default_schema = prepared.database.clone();
            let plan = state.statement_to_plan(statement).await?;
            self.run_plan(plan.with_param_values(prepared.bind(params))?)
                .await
        };
        let output =
            panic_guard::catch(self.allowing_full_scan(prepared.allow_full_scan, run)).await;
        self.counted(output)
    }

    /// The value of one expression, as `SELECT expr` computes it.
    async fn evaluate(&self, expr: &datafusion::sql::sqlparser::ast::Expr) -> Result<ScalarValue> {
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

    /// Runs a query Sieve wrote itself (the answer to a SHOW statement).
    async fn run_sql(&self, sql: &str) -> Result<QueryStream> {
        let plan = self.ctx.state().create_logical_plan(sql).await?;
        self.run_plan(plan).await
    }

    async fn run_in_datafusion(&self, statement: DFStatement) -> Result<QueryStream> {
        let plan = self.ctx.state().statement_to_plan(statement).await?;
        self.run_plan(plan).await
    }

    async fn run_plan(&self, plan: LogicalPlan) -> Result<QueryStream> {
        let started = Instant::now();
        check_confined(&plan)?;
        check_delete(&plan)?;
        let limit = match plan {
            // MySQL's max_execution_time bounds read-only statements; writes commit or not.
            LogicalPlan::Dml(_) | LogicalPlan::Ddl(_) | LogicalPlan::Statement(_) => None,
            _ => self.max_execution_time(),
        };
        let is_dml = matches!(plan, LogicalPlan::Dml(_));
        let schema: SchemaRef = Arc::new(plan.schema().as_arrow().clone());
        let database = self.database();
        let origins = plan
            .schema()
            .iter()
            .map(|(qualifier, _)| {
                qualifier.map(|q| ColumnOrigin {
                    database: q.schema().unwrap_or(&database).to_string(),
                    table: q.table().to_string(),
                })
            })
            .collect();
        let read_only = !matches!(
            plan,
            LogicalPlan::Dml(_) | LogicalPlan::Ddl(_) | LogicalPlan::Statement(_)
        );
        let executor = self.executor.clone().unwrap_or_else(Handle::current);
        // A read through workers that loses one before its first row is planned again, once,
        // over the workers still live (rendezvous hands the lost worker's blocks to the others).
        let mut retries = usize::from(read_only && self.cluster.is_some());
        let (physical, mut rows) = loop {
            let planned = run_on(&executor, plan_physical(self.ctx.clone(), plan.clone()));
            let physical = match limit {
                Some(limit) => tokio::time::timeout(limit, planned)
                    .await
                    .map_err(|_| QueryTimeout::error(limit))??,
                None => planned.await?,
            };
            let mut rows = rows_on(&executor, physical.clone(), self.ctx.task_ctx());
            if let Some(cluster) = self.cluster.clone() {
                let failures = rows.map(move |r| r.map_err(|e| cluster.explain_failure(e)));
                rows = Box::pin(RecordBatchStreamAdapter::new(schema.clone(), failures));
            }
            if let Some(limit) = limit {
                rows = DeadlineStream::wrap(rows, started, limit);
            }
            if let Some(cluster) = &self.cluster
                && read_only
            {
                match rows.next().await {
                    Some(Err(e)) if retries > 0 && WorkerFailed::is(&e) => {
                        retries -= 1;
                        log::warn!("{e}: planning the query again");
                        // A worker being killed may still accept connections for a moment.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        cluster.probe().await;
                        continue;
                    }
                    first => {
                        let rest = futures::stream::iter(first).chain(rows);
                        rows = Box::pin(RecordBatchStreamAdapter::new(schema.clone(), rest));
                    }
                }
            }
            break (physical, rows);
        };
        if is_dml {
            let mut count = 0;
            while let Some(batch) = rows.next().await {
                let batch = batch?;
                if let Some(c) = batch.column(0).as_any().downcast_ref::<UInt64Array>() {
                    count += c.iter().flatten().sum::<u64>();
                }
            }
            return Ok(QueryStream::written(count, physical, self.pool()));
        }
        Ok(QueryStream::rows(schema, rows, Some(physical), self.pool()).with_origins(origins))
    }

    /// The session's statement time limit (`SET sieve.max_execution_time = ms`; 0 is none).
    fn max_execution_time(&self) -> Option<Duration> {
        let ms = self
            .ctx
            .state()
            .config_options()
            .extensions
            .get::<SieveOptions>()
            .map_or(0, |o| o.max_execution_time);
        (ms > 0).then(|| Duration::from_millis(ms))
    }

    fn pool(&self) -> Arc<dyn MemoryPool> {
        self.ctx.runtime_env().memory_pool.clone()
    }

    fn affected(&self, rows: u64) -> QueryStream {
        QueryStream::affected(rows, self.pool())
    }
}
