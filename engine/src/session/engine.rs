//! The engine: one storage location opened for SQL, and what every session of it shares.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use sieve_iceberg::IcebergCatalog;
use sieve_storage::{AttachedIndexes, Catalog, ExternalStores, Storage, Table};
use tokio::runtime::Handle;

use super::{EngineShared, Session};
use crate::access::accounts::Access;
use crate::catalog::schemas::CATALOG_NAME;
use crate::catalog::tables;
use crate::cluster::coordinator::Cluster;
use crate::error::to_df;
use crate::guard::memory::{MemoryLimits, QueryPool};
use crate::guard::spill::{SpillPlace, SpillSettings};
use crate::iceberg::file_indexes::FileIndexes;
use crate::iceberg::indexer::{self, Following};
use crate::options::SieveOptions;
use crate::query_log::QueryLog;
use crate::scan::routing::{DEFAULT_ROUTING_BYTES, RoutingFilters};

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
    /// Routing filters, background merges and lookup results, shared by every session.
    shared: EngineShared,
}

impl Engine {
    /// Opens `file:///…`, a plain directory path, `s3://bucket/prefix` or `memory://`.
    pub async fn open(location: &str) -> Result<Self> {
        Self::with_storage(Storage::open(location).map_err(to_df)?).await
    }

    pub async fn with_storage(storage: Storage) -> Result<Self> {
        let limits = MemoryLimits::default();
        let spill = spill_place(&SpillSettings::default())?;
        let catalog = Catalog::open(storage).await.map_err(to_df)?;
        Ok(Self {
            catalog: catalog.clone(),
            runtime: runtime(limits, &spill)?,
            limits,
            session_defaults: SieveOptions::default(),
            executor: None,
            cluster: None,
            shared: EngineShared {
                routing: Arc::new(RoutingFilters::new(DEFAULT_ROUTING_BYTES)),
                merges: Arc::default(),
                lookups: Arc::default(),
                statements: Arc::default(),
                spill,
                external: Arc::default(),
                query_log: Arc::default(),
                texts: Arc::default(),
                access: Arc::new(Access::new(catalog.clone())),
                iceberg: Arc::new([]),
                file_indexes: Arc::new(FileIndexes::new(AttachedIndexes::new(
                    catalog.storage().clone(),
                ))),
            },
        })
    }

    /// The accounts clients log in as, and their privileges.
    pub fn access(&self) -> Arc<Access> {
        self.shared.access.clone()
    }

    /// The same storage with other settings for new sessions (e.g. `max_execution_time`).
    pub fn with_session_defaults(self, session_defaults: SieveOptions) -> Self {
        Self {
            session_defaults,
            ..self
        }
    }

    /// The same storage, its statements run on `executor` (see [`crate::session::statement_task`]).
    pub fn with_executor(self, executor: Handle) -> Self {
        Self {
            executor: Some(executor),
            ..self
        }
    }

    /// The same storage, its scans split among `cluster`'s workers. Attached tables' indexes
    /// are then held without their row group maps, which only the workers' reads use.
    pub fn with_cluster(self, cluster: Arc<Cluster>) -> Self {
        let store = self.shared.file_indexes.store().clone();
        Self {
            cluster: Some(cluster),
            shared: EngineShared {
                file_indexes: Arc::new(FileIndexes::for_routing(store)),
                ..self.shared
            },
            ..self
        }
    }

    /// The same storage, COPY INTO reading files from `external` (and nowhere else).
    pub fn with_external_locations(self, external: ExternalStores) -> Self {
        Self {
            shared: EngineShared {
                external: Arc::new(external),
                ..self.shared
            },
            ..self
        }
    }

    /// The same storage, with `catalogs` attached: their tables are `name.namespace.table`.
    /// Refuses a name taken by another attached catalog or by Sieve's own.
    pub fn with_iceberg_catalogs(self, catalogs: Vec<Arc<IcebergCatalog>>) -> Result<Self> {
        let mut names = std::collections::HashSet::new();
        for catalog in &catalogs {
            let name = catalog.name().to_ascii_lowercase();
            if name == CATALOG_NAME || name == "datafusion" || !names.insert(name) {
                return Err(DataFusionError::Configuration(format!(
                    "iceberg_catalogs: the name {} is taken (by Sieve's own catalog or another \
                     entry)",
                    catalog.name()
                )));
            }
        }
        Ok(Self {
            shared: EngineShared {
                iceberg: catalogs.into(),
                ..self.shared
            },
            ..self
        })
    }

    /// Starts the indexer: the indexes of the attached catalogs' tables follow their snapshots,
    /// each catalog looked at every `index_interval_s`, until the returned tasks are dropped.
    pub fn follow_attached_tables(&self) -> Following {
        let runtime = self.executor.clone().unwrap_or_else(Handle::current);
        indexer::follow(
            self.shared.file_indexes.clone(),
            &self.shared.iceberg,
            &runtime,
            self.runtime.memory_pool.clone(),
        )
    }

    /// The same storage with routing filters of at most `bytes` in all.
    pub fn with_routing_budget(self, bytes: usize) -> Self {
        Self {
            shared: EngineShared {
                routing: Arc::new(RoutingFilters::new(bytes)),
                ..self.shared
            },
            ..self
        }
    }

    /// Waits until no routing filter is loading (filters load in the background from a table's
    /// first lookup): what a test or benchmark counting the groups a lookup probes waits on.
    pub async fn routing_settled(&self) {
        self.shared.routing.settled().await
    }

    /// Merges `table`'s locator groups in the background, as a commit through SQL does: for
    /// writers beside SQL (the loader) after each of their commits.
    pub fn merge_in_background(&self, table: &Table) {
        self.shared.merges.start(table)
    }

    /// Waits until no locator group merge runs in the background (commits start them).
    pub async fn merges_settled(&self) {
        self.shared.merges.settled().await
    }

    /// Waits until every statement task (planning, producing rows) of this engine's sessions
    /// has stopped: what a test waits on to see a dropped statement's work end.
    pub async fn statements_stopped(&self) {
        self.shared.statements.stopped().await
    }

    /// Bytes the routing filters hold in memory.
    pub fn routing_bytes(&self) -> usize {
        self.shared.routing.bytes()
    }

    /// Records statements as they end in `log` (and `sieve_query_log()`).
    pub fn with_query_log(self, log: QueryLog) -> Self {
        Self {
            shared: EngineShared {
                query_log: Arc::new(log),
                ..self.shared
            },
            ..self
        }
    }

    /// Bytes statements hold in the server's memory pool.
    pub fn memory_reserved(&self) -> usize {
        self.runtime.memory_pool.reserved()
    }

    /// The same storage under other memory limits.
    pub fn with_memory_limits(self, limits: MemoryLimits) -> Result<Self> {
        Ok(Self {
            runtime: runtime(limits, &self.shared.spill)?,
            limits,
            ..self
        })
    }

    /// The same storage, its statements spilling into `settings.dir` up to `settings.limit`
    /// bytes ([`crate::guard::spill`]).
    pub fn with_spill(self, settings: &SpillSettings) -> Result<Self> {
        let spill = spill_place(settings)?;
        Ok(Self {
            runtime: runtime(self.limits, &spill)?,
            shared: EngineShared {
                spill,
                ..self.shared
            },
            ..self
        })
    }

    pub fn storage(&self) -> &Storage {
        self.catalog.storage()
    }

    /// The table `name` (in the default database) or `database.name`, for tools beside the
    /// engine that read its blocks directly.
    pub async fn open_table(&self, name: &str) -> Result<Table> {
        tables::open_named(&self.catalog, name).await
    }

    /// `name`, made with `schema` and `options` if it does not exist
    /// ([`tables::ensure_named`]), for tools beside the engine that write its blocks directly.
    pub async fn ensure_table(
        &self,
        name: &str,
        schema: SchemaRef,
        options: &[(String, String)],
    ) -> Result<Table> {
        tables::ensure_named(&self.catalog, name, schema, options).await
    }

    /// The runtime its sessions' runtimes are made from: the server's memory pool, the spill
    /// directory, the caches DataFusion keeps (Parquet footers) and the object stores.
    pub(crate) fn runtime(&self) -> Arc<RuntimeEnv> {
        self.runtime.clone()
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
            self.shared.clone(),
        )
    }
}

fn runtime(limits: MemoryLimits, spill: &SpillPlace) -> Result<Arc<RuntimeEnv>> {
    RuntimeEnvBuilder::new()
        .with_memory_pool(limits.server_pool())
        .with_disk_manager_builder(spill.disk_manager())
        .build_arc()
}

fn spill_place(settings: &SpillSettings) -> Result<Arc<SpillPlace>> {
    SpillPlace::open(settings).map(Arc::new).map_err(|e| {
        DataFusionError::Execution(format!(
            "cannot prepare the spill directory {}: {e}",
            settings.dir.display()
        ))
    })
}
