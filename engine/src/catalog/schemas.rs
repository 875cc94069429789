//! Exposes the storage catalog to DataFusion: every database is a schema of the `sieve` catalog.
//! Lookups go to storage each time, so tables created or dropped by another process are seen at
//! once. Listing is async in storage and sync here, so SHOW DATABASES / SHOW TABLES are answered by
//! the session from storage directly, and the listing methods below return nothing; MySQL's
//! `information_schema` is a schema of its own ([`crate::dialect::information_schema`]), listed when read.
//! A schema named `catalog.namespace` (one identifier, as SHOW DATABASES lists an attached
//! Iceberg namespace and tools quote it back) is that namespace.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::error::Result;
use sieve_iceberg::IcebergCatalog;
use sieve_storage::{Catalog, StorageError};

use crate::access::principal::CurrentPrincipal;
use crate::access::privileges::Object;
use crate::dialect::information_schema::{self, InformationSchema};
use crate::error::to_df;
use crate::iceberg::catalog::{IcebergCatalogProvider, namespace_named};
use crate::iceberg::file_indexes::FileIndexes;
use crate::processes::ServerProcesses;
use crate::scan::provider::SieveTable;

pub const CATALOG_NAME: &str = "sieve";

#[derive(Debug)]
pub struct SieveCatalog {
    catalog: Catalog,
    /// The attached Iceberg catalogs and their tables' indexes, which `information_schema`
    /// lists too.
    attached: (Arc<[Arc<IcebergCatalog>]>, Arc<FileIndexes>),
    /// The attached catalogs as DataFusion reads them, for schemas named `catalog.namespace`.
    providers: Arc<[Arc<IcebergCatalogProvider>]>,
    processes: ServerProcesses,
    /// The session's principal: `information_schema` lists what it sees.
    viewer: CurrentPrincipal,
    /// The session's table functions (`numbers`, `sieve_index_stats`, DataFusion's
    /// `generate_series` …).
    functions: Arc<HashSet<String>>,
}

impl SieveCatalog {
    pub fn new(
        catalog: Catalog,
        attached: (Arc<[Arc<IcebergCatalog>]>, Arc<FileIndexes>),
        providers: Arc<[Arc<IcebergCatalogProvider>]>,
        processes: ServerProcesses,
        viewer: CurrentPrincipal,
        functions: Arc<HashSet<String>>,
    ) -> Self {
        Self {
            catalog,
            attached,
            providers,
            processes,
            viewer,
            functions,
        }
    }
}

impl CatalogProvider for SieveCatalog {
    fn schema_names(&self) -> Vec<String> {
        Vec::new()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        if name.eq_ignore_ascii_case(information_schema::NAME) {
            let processes = self.processes.get().cloned();
            return Some(Arc::new(InformationSchema::new(
                self.catalog.clone(),
                self.attached.clone(),
                processes,
                self.viewer.get(),
            )));
        }
        if let Some((attached, namespace)) = namespace_named(&self.attached.0, name) {
            let provider = (self.providers.iter()).find(|p| p.name() == attached.name())?;
            return provider.schema(namespace);
        }
        Some(Arc::new(SieveSchema {
            catalog: self.catalog.clone(),
            database: name.to_string(),
            viewer: self.viewer.clone(),
            functions: self.functions.clone(),
        }))
    }
}

#[derive(Debug)]
pub struct SieveSchema {
    catalog: Catalog,
    database: String,
    /// Whose plans resolve names here: a table it may not see is refused when named, before
    /// anything is looked up, so no plan (`LIMIT 0`, a prepared statement's columns) shows
    /// its columns or whether it exists.
    viewer: CurrentPrincipal,
    /// DataFusion asks for a table by a table function's name too, before it calls the
    /// function: such a name is not a table the viewer is refused.
    functions: Arc<HashSet<String>>,
}

#[async_trait]
impl SchemaProvider for SieveSchema {
    fn table_names(&self) -> Vec<String> {
        Vec::new()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let principal = self.viewer.get();
        let table = Object::table(&self.database, name);
        if !principal.sees(&table) {
            if self.functions.contains(name) {
                return Ok(None);
            }
            principal.require_visible(&table)?;
        }
        match self.catalog.open_table(&self.database, name).await {
            Ok(table) => Ok(Some(Arc::new(SieveTable::new(self.catalog.clone(), table)))),
            Err(StorageError::UnknownTable(..)) => Ok(None),
            Err(e) => Err(to_df(e)),
        }
    }

    fn table_exist(&self, _name: &str) -> bool {
        false
    }
}
