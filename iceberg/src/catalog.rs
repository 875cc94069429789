//! One attached Iceberg catalog: where its table list is (a SQL catalog's SQLite file or a REST
//! catalog), where its files are (the warehouse), and the scans of its tables already planned. A scan is planned
//! once per metadata file: a metadata file and the manifests it leads to never change, so a
//! table is read afresh exactly when a writer commits (the catalog row names a new file).

use std::sync::Arc;

use serde::Deserialize;
use sieve_storage::ExternalLocation;

use crate::error::{IcebergError, Result};
use crate::file_cache::{FILE_CACHE_BYTES, FileCache};
use crate::rest_catalog::{LoadedTable, RestAuth, RestCatalog};
use crate::sql_catalog::SqlCatalog;
use crate::table_scan::TableScan;
use crate::vended::Renew;
use crate::warehouse::Warehouse;

/// Planned scans kept per catalog (by metadata file).
const KEPT_SCANS: usize = 256;

/// An `[[iceberg_catalogs]]` entry of the server's configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogConfig {
    /// The name statements use: `name.namespace.table`.
    pub name: String,
    /// `sqlite:///absolute/path.db`, the SQL catalog's file, or `http(s)://host/path`, a REST
    /// catalog's base (the part before `/v1/`).
    pub uri: String,
    /// The SQL catalog's name as its writers gave it (the `catalog_name` column); default: `name`.
    pub catalog_name: Option<String>,
    /// A REST catalog's bearer token.
    pub token: Option<String>,
    /// A REST catalog's OAuth2 client credentials, `client_id:client_secret`, exchanged for a
    /// token at `{uri}/v1/oauth/tokens`.
    pub credential: Option<String>,
    /// The scope a credential's token is asked for (default `catalog`, as Java's client asks).
    pub scope: Option<String>,
    /// The warehouse a REST catalog is asked for (`GET /v1/config?warehouse=`): Polaris's
    /// catalog name, Lakekeeper's warehouse. Not where the files are: that is `warehouse`.
    pub rest_warehouse: Option<String>,
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
    tables: TableList,
    warehouse: Warehouse,
    scans: quick_cache::sync::Cache<String, Arc<TableScan>>,
    /// The manifests and delete files the plans of `scans` read, for the next snapshot's.
    files: FileCache,
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
        let tables = TableList::open(config)?;
        Ok(Self {
            name: config.name.clone(),
            index_interval: std::time::Duration::from_secs(
                config
                    .index_interval_s
                    .unwrap_or(DEFAULT_INDEX_INTERVAL_S)
                    .max(1),
            ),
            tables,
            // Its error named the warehouse as the catalog: it names the catalog here.
            warehouse: Warehouse::open(&warehouse).map_err(|e| IcebergError::Catalog {
                catalog: config.name.clone(),
                why: match e {
                    IcebergError::Catalog { why, .. } => why,
                    e => e.to_string(),
                },
            })?,
            scans: quick_cache::sync::Cache::new(KEPT_SCANS),
            files: FileCache::new(FILE_CACHE_BYTES),
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
        match &self.tables {
            TableList::Sql(sql) => sql.namespaces().await,
            TableList::Rest(rest) => rest.namespaces().await,
        }
    }

    pub async fn tables(&self, namespace: &str) -> Result<Vec<String>> {
        match &self.tables {
            TableList::Sql(sql) => sql.tables(namespace).await,
            TableList::Rest(rest) => rest.tables(namespace).await,
        }
    }

    /// The scan of `namespace.table` as the catalog has it now; None if there is no such table.
    pub async fn scan(&self, namespace: &str, table: &str) -> Result<Option<Arc<TableScan>>> {
        let location = match &self.tables {
            TableList::Sql(sql) => sql.metadata_location(namespace, table).await?,
            TableList::Rest(rest) => {
                let loaded = rest.load_table(namespace, table).await?;
                // Before the metadata file is read: it may be readable with the keys only.
                if let Some(loaded) = &loaded {
                    self.vend(rest, namespace, table, loaded)?;
                }
                loaded.map(|loaded| loaded.metadata_location)
            }
        };
        let Some(location) = location else {
            return Ok(None);
        };
        self.planned(namespace, table, &location).await.map(Some)
    }

    /// The scan of `namespace.table` as its metadata file `location` has it: the snapshot
    /// another process read, planned here without asking the catalog which is current (a
    /// worker answering a coordinator's lookup may not reach the catalog, a SQLite file on the
    /// coordinator's disk). A REST catalog is asked for the table once per metadata file, for
    /// the keys it vends for the table's files.
    pub async fn scan_at(
        &self,
        namespace: &str,
        table: &str,
        location: &str,
    ) -> Result<Arc<TableScan>> {
        if let Some(scan) = self.scans.get(location) {
            return Ok(scan);
        }
        if let TableList::Rest(rest) = &self.tables
            && let Some(loaded) = rest.load_table(namespace, table).await?
        {
            self.vend(rest, namespace, table, &loaded)?;
        }
        self.planned(namespace, table, location).await
    }

    /// The keys `loaded` vends for `namespace.table`'s files, used from here on.
    fn vend(
        &self,
        rest: &Arc<RestCatalog>,
        namespace: &str,
        table: &str,
        loaded: &LoadedTable,
    ) -> Result<()> {
        self.warehouse.vend(&loaded.vended, |one| {
            renew(rest.clone(), namespace, table, &one.prefix)
        })
    }

    /// The scan planned from the metadata file `location`, or the one planned from it before.
    async fn planned(
        &self,
        namespace: &str,
        table: &str,
        location: &str,
    ) -> Result<Arc<TableScan>> {
        let name = format!("{}.{namespace}.{table}", self.name);
        let plan = async {
            Ok(Arc::new(
                TableScan::plan(&self.warehouse, &self.files, &name, location).await?,
            ))
        };
        self.scans.get_or_insert_async(location, plan).await
    }
}

/// Asks `rest` for `namespace.table`'s keys for `prefix` again: the table loaded anew.
fn renew(rest: Arc<RestCatalog>, namespace: &str, table: &str, prefix: &str) -> Renew {
    let (namespace, table, prefix) = (namespace.to_string(), table.to_string(), prefix.to_string());
    Arc::new(move || {
        let (rest, namespace, table, prefix) = (
            rest.clone(),
            namespace.clone(),
            table.clone(),
            prefix.clone(),
        );
        Box::pin(async move {
            let loaded = rest.load_table(&namespace, &table).await?;
            let vended = loaded.map(|l| l.vended).unwrap_or_default();
            Ok(vended.into_iter().find(|v| v.prefix == prefix))
        })
    })
}

/// Where a catalog keeps its table list: the kind of catalog `uri` names.
#[derive(Debug)]
enum TableList {
    Sql(SqlCatalog),
    /// Shared with the keys it vends, which ask it again when they expire.
    Rest(Arc<RestCatalog>),
}

impl TableList {
    fn open(config: &CatalogConfig) -> Result<Self> {
        let refused = |why: String| IcebergError::Catalog {
            catalog: config.name.clone(),
            why,
        };
        let rest = config.uri.starts_with("http://") || config.uri.starts_with("https://");
        if !rest {
            let rest_only = [
                ("token", config.token.is_some()),
                ("credential", config.credential.is_some()),
                ("scope", config.scope.is_some()),
                ("rest_warehouse", config.rest_warehouse.is_some()),
            ];
            if let Some((key, _)) = rest_only.iter().find(|(_, set)| *set) {
                return Err(refused(format!(
                    "{key} is a REST catalog's setting, and uri {:?} is not http(s)://",
                    config.uri
                )));
            }
            let writers_name = config.catalog_name.as_deref().unwrap_or(&config.name);
            return Ok(Self::Sql(SqlCatalog::new(
                &config.name,
                writers_name,
                &config.uri,
            )?));
        }
        if config.catalog_name.is_some() {
            return Err(refused(
                "catalog_name names a SQL catalog's rows; a REST catalog is chosen by uri \
                 (and rest_warehouse)"
                    .into(),
            ));
        }
        let auth = match (&config.token, &config.credential) {
            (Some(_), Some(_)) => {
                return Err(refused("give a token or a credential, not both".into()));
            }
            (Some(token), None) => RestAuth::Token(token.clone()),
            (None, Some(credential)) => {
                let Some((client_id, client_secret)) = credential.split_once(':') else {
                    return Err(refused(
                        "credential is client_id:client_secret (one colon between them)".into(),
                    ));
                };
                RestAuth::Credential {
                    client_id: client_id.to_string(),
                    client_secret: client_secret.to_string(),
                    scope: config.scope.clone().unwrap_or_else(|| "catalog".into()),
                }
            }
            (None, None) if config.scope.is_some() => {
                return Err(refused(
                    "scope is asked with a credential; none is given".into(),
                ));
            }
            (None, None) => RestAuth::None,
        };
        Ok(Self::Rest(Arc::new(RestCatalog::new(
            &config.name,
            &config.uri,
            config.rest_warehouse.clone(),
            auth,
        )?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(config: CatalogConfig) -> String {
        IcebergCatalog::open(&config).unwrap_err().to_string()
    }

    fn rest(uri: &str) -> CatalogConfig {
        CatalogConfig {
            name: "lake".into(),
            uri: uri.into(),
            warehouse: "file:///tmp".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_catalog_kind_is_refused_settings_of_the_other() {
        let sql = rest("sqlite:///x.db");
        let with_token = CatalogConfig {
            token: Some("t".into()),
            ..sql.clone()
        };
        assert!(refusal(with_token).contains("token is a REST catalog's setting"));
        let named = CatalogConfig {
            catalog_name: Some("writers".into()),
            ..rest("http://127.0.0.1:8181")
        };
        assert!(refusal(named).contains("catalog_name names a SQL catalog's rows"));
        assert!(refusal(rest("postgres://x")).contains("a REST catalog http(s)://"));
    }

    /// Errors name the catalog as Sieve's configuration does, not as its writers do, nor the
    /// warehouse as a catalog.
    #[tokio::test]
    async fn errors_name_the_catalog_by_its_name_in_sieve() {
        let gs = CatalogConfig {
            warehouse: "gs://bucket/x".into(),
            ..rest("sqlite:///nowhere/catalog.db")
        };
        let refused = refusal(gs);
        assert!(
            refused.starts_with("iceberg catalog lake: warehouse \"gs://bucket/x\": "),
            "{refused}"
        );
        let written_as = CatalogConfig {
            catalog_name: Some("writers".into()),
            ..rest("sqlite:///nowhere/catalog.db")
        };
        let catalog = IcebergCatalog::open(&written_as).unwrap();
        let missing = catalog.namespaces().await.unwrap_err().to_string();
        assert_eq!(
            missing,
            "iceberg catalog lake: no SQLite file at /nowhere/catalog.db"
        );
    }

    #[test]
    fn a_rest_catalog_takes_a_token_or_a_credential() {
        let both = CatalogConfig {
            token: Some("t".into()),
            credential: Some("id:secret".into()),
            ..rest("https://catalog.example.com/api/catalog")
        };
        assert!(refusal(both).contains("a token or a credential, not both"));
        let no_colon = CatalogConfig {
            credential: Some("secret".into()),
            ..rest("https://catalog.example.com")
        };
        assert!(refusal(no_colon).contains("client_id:client_secret"));
        let scope_alone = CatalogConfig {
            scope: Some("PRINCIPAL_ROLE:ALL".into()),
            ..rest("https://catalog.example.com")
        };
        assert!(refusal(scope_alone).contains("scope is asked with a credential"));
        // Nothing is asked of the catalog until a statement needs it: a server starts while
        // its REST catalog is down.
        let credential = CatalogConfig {
            credential: Some("id:secret".into()),
            scope: Some("PRINCIPAL_ROLE:ALL".into()),
            ..rest("http://127.0.0.1:1/")
        };
        assert!(IcebergCatalog::open(&credential).is_ok());
    }
}
