//! An attached Iceberg catalog as DataFusion sees it: its namespaces are schemas, its tables
//! tables. Each table is looked up in the catalog when a statement names it, so a commit by any
//! writer is seen by the next statement. Privileges are those of a Sieve database named after
//! the catalog, its tables named `namespace.table`: `GRANT SELECT ON lake.* TO …` opens a
//! catalog, ``GRANT SELECT ON lake.`ns.orders` TO …`` one table.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::error::Result;
use datafusion::execution::object_store::ObjectStoreUrl;
use sieve_iceberg::IcebergCatalog;
use sieve_storage::StorageError;

use super::file_indexes::FileIndexes;
use super::table::IcebergTable;
use crate::access::principal::{CurrentPrincipal, Principal};
use crate::access::privileges::{Object, Privilege};
use crate::error::{external, to_df};

/// The privilege object of `namespace.table` in `catalog`.
pub fn object(catalog: &str, namespace: &str, table: &str) -> Object {
    Object::table(catalog, &format!("{namespace}.{table}"))
}

/// The attached catalog a statement's `name` names (SQL folds names, so case aside).
pub fn named<'a>(
    attached: &'a [Arc<IcebergCatalog>],
    name: &str,
) -> Option<&'a Arc<IcebergCatalog>> {
    attached
        .iter()
        .find(|c| c.name().eq_ignore_ascii_case(name))
}

/// The attached catalog and namespace a database name `catalog.namespace` names, as SHOW
/// DATABASES lists it and tools quote it back (`USE \`lake.ns\``); None when it names no
/// attached catalog.
pub fn namespace_named<'a, 'b>(
    attached: &'a [Arc<IcebergCatalog>],
    database: &'b str,
) -> Option<(&'a Arc<IcebergCatalog>, &'b str)> {
    let (catalog, namespace) = database.split_once('.')?;
    Some((named(attached, catalog)?, namespace))
}

/// The namespaces of the attached catalogs that `principal` holds anything in, as
/// `catalog.namespace`: SHOW DATABASES lists them beside Sieve's databases.
pub async fn visible_namespaces(
    attached: &[Arc<IcebergCatalog>],
    principal: &Principal,
) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for catalog in attached {
        if principal.sees(&Object::database(catalog.name())) {
            let namespaces = listed(catalog, catalog.namespaces().await);
            names.extend(namespaces.iter().map(|n| format!("{}.{n}", catalog.name())));
        }
    }
    Ok(names)
}

/// What a listing over every catalog (SHOW DATABASES, information_schema) takes from one:
/// a catalog that cannot answer (a REST catalog down) is left out with a warning in the log,
/// so tools that list databases on connecting still reach the others. A statement naming
/// one of its tables still fails, saying why.
pub fn listed(catalog: &IcebergCatalog, names: sieve_iceberg::Result<Vec<String>>) -> Vec<String> {
    names.unwrap_or_else(|e| {
        log::warn!(
            "left attached catalog {} out of a listing: {e}",
            catalog.name()
        );
        Vec::new()
    })
}

/// The tables `principal` sees in `catalog.namespace` when `parts` names an attached catalog's
/// namespace (SHOW TABLES FROM lake.ns, or FROM \`lake.ns\`); None when it names no attached
/// catalog; an error when the namespace does not exist or the principal may not see it.
pub async fn visible_tables(
    attached: &[Arc<IcebergCatalog>],
    parts: &[String],
    principal: &Principal,
) -> Option<Result<Vec<String>>> {
    let (catalog, namespace) = match parts {
        [catalog, namespace] => (named(attached, catalog)?, namespace.as_str()),
        [database] => namespace_named(attached, database)?,
        _ => return None,
    };
    let listed = async {
        let database = format!("{}.{namespace}", catalog.name());
        if !principal.sees(&Object::database(catalog.name())) {
            principal.require(Privilege::Select, &Object::database(&database))?;
        }
        if !catalog
            .namespaces()
            .await
            .map_err(external)?
            .iter()
            .any(|n| n == namespace)
        {
            return Err(to_df(StorageError::UnknownDatabase(database)));
        }
        let mut tables = catalog.tables(namespace).await.map_err(external)?;
        tables.retain(|t| principal.sees(&object(catalog.name(), namespace, t)));
        Ok(tables)
    };
    Some(listed.await)
}

/// Where DataFusion finds the store of the `i`th attached catalog's warehouse.
pub fn store_url(i: usize) -> Result<ObjectStoreUrl> {
    ObjectStoreUrl::parse(format!("sieve-iceberg-{i}://warehouse"))
}

#[derive(Debug)]
pub struct IcebergCatalogProvider {
    catalog: Arc<IcebergCatalog>,
    store_url: ObjectStoreUrl,
    viewer: CurrentPrincipal,
    indexes: Arc<FileIndexes>,
}

impl IcebergCatalogProvider {
    pub fn name(&self) -> &str {
        self.catalog.name()
    }

    /// `namespace.name` at the snapshot its metadata file `location` names: a worker reads
    /// the one its coordinator resolved, without asking the catalog which is current.
    pub async fn table_at(
        &self,
        namespace: &str,
        name: &str,
        location: &str,
    ) -> Result<IcebergTable> {
        let scan = (self.catalog.scan_at(namespace, name, location).await).map_err(external)?;
        let at = (self.catalog.as_ref(), &self.store_url, &self.indexes);
        Ok(attached_table(at, namespace, name, scan))
    }

    pub fn new(
        catalog: Arc<IcebergCatalog>,
        store_url: ObjectStoreUrl,
        viewer: CurrentPrincipal,
        indexes: Arc<FileIndexes>,
    ) -> Self {
        Self {
            catalog,
            store_url,
            viewer,
            indexes,
        }
    }
}

impl CatalogProvider for IcebergCatalogProvider {
    /// Listing is async in the catalog and sync here; SHOW statements ask the catalog itself.
    fn schema_names(&self) -> Vec<String> {
        Vec::new()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        Some(Arc::new(IcebergNamespace {
            catalog: self.catalog.clone(),
            store_url: self.store_url.clone(),
            namespace: name.to_string(),
            viewer: self.viewer.clone(),
            indexes: self.indexes.clone(),
        }))
    }
}

#[derive(Debug)]
struct IcebergNamespace {
    catalog: Arc<IcebergCatalog>,
    store_url: ObjectStoreUrl,
    namespace: String,
    /// Whose plans resolve names here: a table it may not see is refused before the catalog is
    /// asked, so no plan shows its columns or whether it exists.
    viewer: CurrentPrincipal,
    indexes: Arc<FileIndexes>,
}

impl IcebergNamespace {
    /// The one table whose namespace and name are these but for the case of their letters:
    /// DataFusion lowercases the names a statement does not quote, while the writers of a
    /// catalog (Spark, PyIceberg) keep a table's case, as MySQL does on Linux. So
    /// `lake.Sales.Orders` finds the table PyIceberg made as `Sales.Orders` unquoted, as it
    /// does in the statements Sieve parses itself (DESCRIBE, CREATE INDEX); None when no
    /// table or several (`Orders` and `ORDERS`) are spelled so: quoting names one exactly.
    async fn spelled_otherwise(&self, name: &str) -> Result<Option<(String, String)>> {
        let catalog = &self.catalog;
        let namespaces = catalog.namespaces().await.map_err(external)?;
        let mut found = Vec::new();
        for namespace in namespaces
            .iter()
            .filter(|n| n.eq_ignore_ascii_case(&self.namespace))
        {
            let tables = catalog.tables(namespace).await.map_err(external)?;
            found.extend(
                (tables.into_iter())
                    .filter(|t| t.eq_ignore_ascii_case(name))
                    .map(|t| (namespace.clone(), t)),
            );
        }
        Ok(match found.len() {
            1 => found.pop(),
            _ => None,
        })
    }
}

#[async_trait]
impl SchemaProvider for IcebergNamespace {
    fn table_names(&self) -> Vec<String> {
        Vec::new()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let asked = object(self.catalog.name(), &self.namespace, name);
        self.viewer.get().require_visible(&asked)?;
        let mut found = (self.catalog.scan(&self.namespace, name).await).map_err(external)?;
        let mut spelled = (self.namespace.clone(), name.to_string());
        if found.is_none()
            && let Some(other) = self.spelled_otherwise(name).await?
        {
            let (namespace, name) = &other;
            // Not found, rather than refused, for a table the account may not see: a refusal
            // would name it as its catalog spells it.
            if !self
                .viewer
                .get()
                .sees(&object(self.catalog.name(), namespace, name))
            {
                return Ok(None);
            }
            found = (self.catalog.scan(namespace, name).await).map_err(external)?;
            spelled = other;
        }
        let Some(scan) = found else {
            return Ok(None);
        };
        let at = (self.catalog.as_ref(), &self.store_url, &self.indexes);
        let (namespace, name) = &spelled;
        Ok(Some(Arc::new(attached_table(at, namespace, name, scan))))
    }

    fn table_exist(&self, _name: &str) -> bool {
        false
    }
}

/// The table `namespace.name` of `catalog` (its warehouse at `store_url`, its indexes in
/// `indexes`) as `scan` reads it.
fn attached_table(
    (catalog, store_url, indexes): (&IcebergCatalog, &ObjectStoreUrl, &Arc<FileIndexes>),
    namespace: &str,
    name: &str,
    scan: Arc<sieve_iceberg::TableScan>,
) -> IcebergTable {
    IcebergTable::new(
        object(catalog.name(), namespace, name),
        (format!("{}.{namespace}", catalog.name()), name.to_string()),
        scan,
        store_url.clone(),
        indexes.clone(),
    )
}
