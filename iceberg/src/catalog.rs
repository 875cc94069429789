//! One attached Iceberg catalog: where its table list is (a SQL catalog's SQLite file), where
//! its files are (the warehouse), and the scans of its tables already planned. A scan is planned
//! once per metadata file: a metadata file and the manifests it leads to never change, so a
//! table is read afresh exactly when a writer commits (the catalog row names a new file).

use std::sync::Arc;

use serde::Deserialize;
use sieve_storage::ExternalLocation;

use crate::error::{IcebergError, Result};
use crate::sql_catalog::SqlCatalog;
use crate::table_scan::TableScan;
use crate::warehouse::Warehouse;

/// Planned scans kept per catalog (by metadata file).
const KEPT_SCANS: usize = 256;

/// An `[[iceberg_catalogs]]` entry of the server's configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogConfig {
    /// The name statements use: `name.namespace.table`.
    pub name: String,
    /// `sqlite:///absolute/path.db`: the SQL catalog's file.
    pub uri: String,
    /// The name the writers gave the catalog (the `catalog_name` column); default: `name`.
    pub catalog_name: Option<String>,
    /// `file:///dir` or `s3://bucket/prefix`: every file the catalog's tables name lies under
    /// it, and nothing else is read.
    pub warehouse: String,
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub allow_http: Option<bool>,
    /// Seconds between the indexer's looks at the catalog for snapshots its indexed tables
    /// committed (default [`DEFAULT_INDEX_INTERVAL_S`]).
    pub index_interval_s: Option<u64>,
}

/// How often, by default, the indexer looks for new snapshots of indexed tables.
pub const DEFAULT_INDEX_INTERVAL_S: u64 = 30;

#[derive(Debug)]
pub struct IcebergCatalog {
    name: String,
    index_interval: std::time::Duration,
    sql: SqlCatalog,
    warehouse: Warehouse,
    scans: quick_cache::sync::Cache<String, Arc<TableScan>>,
}

impl IcebergCatalog {
    pub fn open(config: &CatalogConfig) -> Result<Self> {
        // SQL folds unquoted names to lower case: `Lake.ns.t` names catalog `lake`.
        let name = &config.name;
        if name.is_empty() || name.contains('.') || *name != name.to_ascii_lowercase() {
            return Err(IcebergError::Catalog {
                catalog: name.clone(),
                why: "a catalog's name is a lower-case identifier without dots".into(),
            });
        }
        let warehouse = ExternalLocation {
            url: config.warehouse.clone(),
            endpoint: config.endpoint.clone(),
            region: config.region.clone(),
            access_key_id: config.access_key_id.clone(),
            secret_access_key: config.secret_access_key.clone(),
            allow_http: config.allow_http,
        };
        let writers_name = config.catalog_name.as_deref().unwrap_or(&config.name);
        Ok(Self {
            name: config.name.clone(),
            index_interval: std::time::Duration::from_secs(
                config
                    .index_interval_s
                    .unwrap_or(DEFAULT_INDEX_INTERVAL_S)
                    .max(1),
            ),
            sql: SqlCatalog::new(writers_name, &config.uri)?,
            warehouse: Warehouse::open(&warehouse).map_err(|e| IcebergError::Catalog {
                catalog: config.name.clone(),
                why: e.to_string(),
            })?,
            scans: quick_cache::sync::Cache::new(KEPT_SCANS),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// How often the indexer looks for new snapshots of this catalog's indexed tables.
    pub fn index_interval(&self) -> std::time::Duration {
        self.index_interval
    }

    pub fn warehouse(&self) -> &Warehouse {
        &self.warehouse
    }

    pub async fn namespaces(&self) -> Result<Vec<String>> {
        self.sql.namespaces().await
    }

    pub async fn tables(&self, namespace: &str) -> Result<Vec<String>> {
        self.sql.tables(namespace).await
    }

    /// The scan of `namespace.table` as the catalog has it now; None if there is no such table.
    pub async fn scan(&self, namespace: &str, table: &str) -> Result<Option<Arc<TableScan>>> {
        let Some(location) = self.sql.metadata_location(namespace, table).await? else {
            return Ok(None);
        };
        let name = format!("{}.{namespace}.{table}", self.name);
        let plan = async {
            Ok(Arc::new(
                TableScan::plan(&self.warehouse, &name, &location).await?,
            ))
        };
        self.scans
            .get_or_insert_async(&location, plan)
            .await
            .map(Some)
    }
}
