//! A SQL session over Sieve storage: DataFusion plans and runs queries and INSERTs; the statements
//! whose meaning lives in Sieve's catalog (databases, CREATE/DROP TABLE, CTAS, SHOW, USE) are
//! handled here. Every statement sees the storage as it is now: a second process's tables and
//! commits are visible at once.
//!
//! `Session` is what a statement runs in: whom it acts for, its options, the current database,
//! its caches and runtime. Its methods take a statement from text to rows (here, `dispatch`,
//! `execute`, `prepared`, `short_path`); the statements themselves are functions of the modules
//! named for them, given the session: `ddl`, `accounts`, `copy`, `load`, `maintenance`,
//! `external_files`.

pub(crate) mod accounts;
mod attached_lookup;
mod attached_share;
mod copy;
mod ddl;
mod dispatch;
mod engine;
mod execute;
mod external_files;
mod index_statements;
mod load;
pub(crate) mod lookup_results;
mod maintenance;
pub(crate) mod prepared;
pub(crate) mod query_stream;
mod recognized_texts;
pub(crate) mod short_path;
mod statement_end;
pub(crate) mod statement_task;

pub use dispatch::ReadStatement;
pub use engine::Engine;

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::context::SessionContext;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::logical_expr::var_provider::VarType;
use datafusion::optimizer::Analyzer;
use datafusion::prelude::SessionConfig;
use datafusion::sql::sqlparser::ast::ObjectName;
use datafusion_distributed::DistributedExt;
use sieve_iceberg::IcebergCatalog;
use sieve_storage::{Catalog, DEFAULT_DATABASE, ExternalStores, RequestTrace, StorageError};
use tokio::runtime::Handle;

use crate::access::accounts::Access;
use crate::access::principal::{CurrentPrincipal, Principal};
use crate::access::privileges::{Object, Privilege};
use crate::access::redact::redacted;
use crate::catalog::schemas::{CATALOG_NAME, SieveCatalog};
use crate::catalog::storage_url::object_store_url;
use crate::cluster::coordinator::Cluster;
use crate::dialect::checked_arithmetic::CheckedArithmetic;
use crate::dialect::information_schema;
use crate::dialect::script::statement_texts;
use crate::dialect::session_functions::{self, Client, RowCount};
use crate::dialect::string_results;
use crate::dialect::system_variables::{ServerLimits, SystemVariables};
use crate::dialect::user_variables::UserVariables;
use crate::dialect::write_order::WriteOrder;
use crate::error::to_df;
use crate::guard::interrupt::StatementTasks;
use crate::guard::panic;
use crate::guard::spill::SpillPlace;
use crate::guard::whole_value_aggregates::WholeValueAggregates;
use crate::iceberg::catalog::{self as iceberg_catalog, IcebergCatalogProvider};
use crate::iceberg::file_indexes::FileIndexes;
use crate::ingest::load_data::LoadData;
use crate::ingest::local_load::LocalLoad;
use crate::ingest::read_parquet::{self, ReadParquet};
use crate::maintenance::index_stats::IndexStatsFunction;
use crate::maintenance::merges::BackgroundMerges;
use crate::metrics::{Outcome, statement_kind};
use crate::numbers::NumbersFunction;
use crate::options::SieveOptions;
use crate::processes::{Process, ProcessList, ServerProcesses, Visible};
use crate::progress::WriteProgress;
use crate::query_log::{QueryLog, QueryLogFunction};
use crate::scan::routing::RoutingFilters;
use crate::session::lookup_results::LookupResults;
use crate::session::query_stream::{QueryOutput, QueryStream, ScanStats};
use crate::session::recognized_texts::RecognizedTexts;
use crate::session::statement_end::Finished;

pub struct Session {
    ctx: SessionContext,
    catalog: Catalog,
    progress: Arc<WriteProgress>,
    executor: Option<Handle>,
    /// The engine's count of statement tasks still running.
    tasks: Arc<StatementTasks>,
    spill: Arc<SpillPlace>,
    /// What SHOW VARIABLES and SHOW PROCESSLIST report: the server's limits and the client.
    server: std::sync::Mutex<(ServerLimits, Client)>,
    /// The server's connections, when a server serves this session.
    process_list: ServerProcesses,
    user_variables: Arc<UserVariables>,
    row_count: Arc<RowCount>,
    /// The workers scans run on, whose failures a query's error explains.
    cluster: Option<Arc<Cluster>>,
    /// The locations COPY INTO and read_parquet may read files from.
    external: Arc<ExternalStores>,
    /// The files of the running statement's read_parquet calls.
    read_parquet: Arc<ReadParquet>,
    /// Where statements are recorded when they end.
    query_log: Arc<QueryLog>,
    /// Text lookups recognised before.
    texts: Arc<RecognizedTexts>,
    /// Whom its statements act for.
    principal: CurrentPrincipal,
    /// The attached Iceberg catalogs, which SHOW lists beside Sieve's databases.
    iceberg: Arc<[Arc<IcebergCatalog>]>,
    /// The indexes of their tables, as loaded.
    file_indexes: Arc<FileIndexes>,
}

/// What the sessions of an engine share besides its storage, reached by their tasks through the
/// session config's extensions.
#[derive(Debug, Clone)]
pub(crate) struct EngineShared {
    /// The locator groups' key filters held in memory: lookups skip the groups they rule out,
    /// a coordinator the workers.
    pub routing: Arc<RoutingFilters>,
    /// Locator group merges running in the background after commits.
    pub merges: Arc<BackgroundMerges>,
    /// Point lookups' results by table version ([`lookup_results`]).
    pub lookups: Arc<LookupResults>,
    /// Statement tasks that have not stopped yet.
    pub statements: Arc<StatementTasks>,
    /// Where statements spill.
    pub spill: Arc<SpillPlace>,
    /// The locations COPY INTO and read_parquet may read files from.
    pub external: Arc<ExternalStores>,
    /// Where statements are recorded when they end.
    pub query_log: Arc<QueryLog>,
    /// Text lookups recognised before ([`recognized_texts`]).
    pub texts: Arc<RecognizedTexts>,
    /// The accounts and their privileges.
    pub access: Arc<Access>,
    /// The Iceberg catalogs the configuration attaches, by their place in it.
    pub iceberg: Arc<[Arc<IcebergCatalog>]>,
    /// The indexes of their tables, as loaded.
    pub file_indexes: Arc<FileIndexes>,
}

fn object_parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(|i| i.value.clone())
        .collect()
}

impl Session {
    /// The load a LOAD DATA statement asks for ([`ReadStatement::into_load_data`]), checked
    /// against its table and ready for the client's file.
    pub async fn open_load(&self, statement: LoadData) -> Result<LocalLoad> {
        load::open_load(self, statement).await
    }

    /// Whom the session acts for.
    pub fn principal(&self) -> Arc<Principal> {
        self.principal.get()
    }

    /// Refuses the statement unless the session's account holds `wanted` on `object`.
    fn require(&self, wanted: Privilege, object: &Object) -> Result<()> {
        self.principal().require(wanted, object)
    }

    /// MySQL's 1044 for a database the account holds nothing in, whether it exists or not
    /// (`information_schema` is everyone's).
    fn require_visible_database(&self, db: &str) -> Result<()> {
        let database = Object::database(db);
        if db.eq_ignore_ascii_case(information_schema::NAME) || self.principal().sees(&database) {
            return Ok(());
        }
        self.require(Privilege::Select, &database)
    }

    /// Refuses `command` (CREATE, DROP, OPTIMIZE, VACUUM) unless the session's account holds
    /// ALL on `object`.
    fn require_all_for(&self, command: &str, object: &Object) -> Result<()> {
        self.principal()
            .require_for(command, Privilege::All, object)
    }

    fn new(
        catalog: Catalog,
        runtime: Arc<RuntimeEnv>,
        options: SieveOptions,
        executor: Option<Handle>,
        cluster: Option<Arc<Cluster>>,
        shared: EngineShared,
    ) -> Result<Self> {
        let progress = Arc::new(WriteProgress::default());
        let (tasks, spill) = (shared.statements.clone(), shared.spill.clone());
        let external = shared.external.clone();
        let iceberg = shared.iceberg.clone();
        let file_indexes = shared.file_indexes.clone();
        let query_log = shared.query_log.clone();
        let texts = shared.texts.clone();
        let principal = CurrentPrincipal::new(Principal::root(shared.access.clone()));
        let mut config = SessionConfig::new()
            .with_extension(progress.clone())
            .with_extension(shared.routing)
            .with_extension(shared.merges)
            .with_extension(shared.lookups)
            .with_extension(Arc::new(principal.clone()))
            .with_default_catalog_and_schema(CATALOG_NAME, DEFAULT_DATABASE)
            .with_create_default_catalog_and_schema(false)
            .set_str("datafusion.sql_parser.dialect", "mysql");
        // The settings travel with the tasks a coordinator's scans send workers (as headers of
        // each task), so that a worker's share reads as this session asked: `SET
        // sieve.data_cache = false` or `sieve.routing = false` holds there too.
        config.set_distributed_option_extension(options);
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
            })
            .with_physical_optimizer_rule(Arc::new(WriteOrder))
            .with_physical_optimizer_rule(Arc::new(WholeValueAggregates));
        let state = match &cluster {
            Some(cluster) => {
                crate::cluster::coordinator::distribute(state, cluster, catalog.storage())?
            }
            None => state,
        }
        .build();
        let ctx = SessionContext::new_with_state(state);
        let process_list = ServerProcesses::default();
        ctx.register_udtf("numbers", Arc::new(NumbersFunction));
        ctx.register_udtf(
            "sieve_query_log",
            Arc::new(QueryLogFunction {
                log: shared.query_log.clone(),
                viewer: principal.clone(),
            }),
        );
        ctx.register_udtf(
            "sieve_index_stats",
            Arc::new(IndexStatsFunction::new(catalog.clone())),
        );
        let read_parquet = Arc::new(ReadParquet::default());
        ctx.register_udtf(read_parquet::NAME, read_parquet.clone());
        for (location, bucket, store) in external.stores() {
            let url = read_parquet::store_url(location, bucket)?;
            ctx.register_object_store(url.as_ref(), store.clone());
        }
        // Registered after the table functions, whose names it needs.
        let functions = ctx.state().table_functions().keys().cloned().collect();
        let mut providers = Vec::with_capacity(iceberg.len());
        for (i, attached) in iceberg.iter().enumerate() {
            let url = iceberg_catalog::store_url(i)?;
            ctx.register_object_store(url.as_ref(), attached.warehouse().store().clone());
            let provider = Arc::new(IcebergCatalogProvider::new(
                attached.clone(),
                url,
                principal.clone(),
                file_indexes.clone(),
            ));
            ctx.register_catalog(attached.name(), provider.clone());
            providers.push(provider);
        }
        let schemas = SieveCatalog::new(
            catalog.clone(),
            (iceberg.clone(), file_indexes.clone()),
            providers.into(),
            process_list.clone(),
            principal.clone(),
            Arc::new(functions),
        );
        ctx.register_catalog(CATALOG_NAME, Arc::new(schemas));
        let rand = datafusion::functions::math::random()
            .as_ref()
            .clone()
            .with_aliases(["rand"]);
        ctx.register_udf(rand);
        crate::dialect::functions::register(&ctx);
        crate::dialect::sleep::register(&ctx);
        string_results::register(&ctx, ServerLimits::default().max_allowed_packet);
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
            tasks,
            spill,
            server: Default::default(),
            process_list,
            user_variables,
            row_count,
            cluster,
            external,
            read_parquet,
            query_log,
            texts,
            principal,
            iceberg,
            file_indexes,
        })
    }

    /// The limits the server serving this session enforces, as `@@max_allowed_packet` and
    /// `@@wait_timeout` report them.
    pub fn set_server_limits(&self, limits: ServerLimits) {
        self.ctx
            .register_variable(VarType::System, Arc::new(SystemVariables { limits }));
        string_results::register(&self.ctx, limits.max_allowed_packet);
        self.server().0 = limits;
    }

    fn server(&self) -> std::sync::MutexGuard<'_, (ServerLimits, Client)> {
        // Two plain values cannot be left half-changed by a panic.
        self.server
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Where SHOW PROCESSLIST finds the server's connections (set once, by the server).
    pub fn set_process_list(&self, list: Arc<dyn ProcessList>) {
        let visible = Visible {
            all: list,
            viewer: self.principal.clone(),
        };
        let _ = self.process_list.set(Arc::new(visible));
    }

    /// SHOW PROCESSLIST's rows: the server's connections, or this session alone.
    pub(crate) fn processes(&self) -> Vec<Process> {
        if let Some(list) = self.process_list.get() {
            return list.processes();
        }
        let client = self.server().1.clone();
        let (user, host) = client.user.split_once('@').unwrap_or((&client.user, ""));
        vec![Process {
            id: client.connection_id,
            user: user.to_string(),
            host: host.to_string(),
            db: self.database(),
            command: "Query".into(),
            time: 0,
            state: "executing".into(),
            info: Some("SHOW PROCESSLIST".into()),
        }]
    }

    /// Makes the session act for `principal` (a client that logged in) from its next statement.
    pub fn set_principal(&self, principal: Principal) {
        self.principal.set(principal);
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
            .state_ref()
            .read()
            .config_options()
            .catalog
            .default_schema
            .clone()
    }

    /// A value of the session's settings, read in place (a statement's hot path clones no
    /// session state).
    fn options<T>(&self, read: impl FnOnce(&SieveOptions) -> T) -> T {
        let state = self.ctx.state_ref();
        let state = state.read();
        let options = state.config_options().extensions.get::<SieveOptions>();
        read(options.unwrap_or(&SieveOptions::default()))
    }

    /// Whether unquoted identifiers are lowercased, as DataFusion's planner does by default.
    fn normalizes_identifiers(&self) -> bool {
        let state = self.ctx.state_ref();
        let normalize = state
            .read()
            .config_options()
            .sql_parser
            .enable_ident_normalization;
        normalize
    }

    pub async fn use_database(&self, name: &str) -> Result<()> {
        let principal = self.principal();
        let parts = [name.to_string()];
        match iceberg_catalog::visible_tables(&self.iceberg, &parts, &principal).await {
            // An attached namespace, which exists and the account may see.
            Some(listed) => drop(listed?),
            None => {
                self.require_visible_database(name)?;
                if !self.catalog.database_exists(name).await.map_err(to_df)? {
                    return Err(to_df(StorageError::UnknownDatabase(name.to_string())));
                }
            }
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
        Ok(statement_texts(sql)?
            .into_iter()
            .map(str::to_string)
            .collect())
    }

    /// Runs one statement to the end and returns its whole result.
    pub async fn execute(&self, sql: &str) -> Result<QueryOutput> {
        self.query(sql).await?.collect().await
    }

    /// Reads and runs one statement; a query's rows stream as the caller reads them.
    pub async fn query(&self, sql: &str) -> Result<QueryStream> {
        let statement = self.read(sql).await;
        self.run(statement).await
    }

    /// Runs one statement the front door read ([`Self::read`]).
    pub async fn run(&self, statement: ReadStatement) -> Result<QueryStream> {
        // Logs and SHOW PROCESSLIST never show a password typed in CREATE or ALTER USER.
        let text = redacted(statement.text()).into_owned();
        let finished = Finished::start(self, statement_kind(statement.text()), text, None);
        let planning = RequestTrace::new();
        let output = panic::catch(planning.scope(self.run_read(statement))).await;
        self.counted(output, planning, finished)
    }

    /// Keeps what `row_count()` reports of a statement that ran, and the requests its planning
    /// sent; records a statement that failed before its result (one that did not is recorded
    /// when its result is done with).
    fn counted(
        &self,
        output: Result<QueryStream>,
        planning: Arc<RequestTrace>,
        finished: Finished,
    ) -> Result<QueryStream> {
        match output {
            Ok(stream) => {
                self.row_count.set(stream.affected_rows());
                Ok(stream.planned_with(planning, finished))
            }
            Err(e) => {
                let error = Some(e.to_string());
                finished.record(Outcome::Error, 0, &ScanStats::default(), error);
                Err(e)
            }
        }
    }
}
