//! The short path of a point lookup on an attached Iceberg table (`catalog.namespace.table`, or
//! `table` in the database `catalog.namespace`):
//! the table is resolved as the full path resolves it (the catalog asked for its current
//! metadata, the account's privileges checked), then the lookup is bound to the snapshot the
//! catalog names and answered from its kept result, or planned straight into the table's scan
//! (its index and pages), a filter and a projection, without DataFusion's SQL planner and
//! optimizer; the scan's few files are read on the lookup's task where they can be
//! ([`crate::iceberg::located_read`]). A snapshot never changes, so a kept result keyed by the table's UUID and snapshot
//! id is never stale; a commit by any writer names a new snapshot, seen by the next statement.
//!
//! On a coordinator the files the table's index and manifest bounds leave are read by the
//! workers rendezvous gives them ([`crate::cluster::remote_lookup`]), each told the metadata
//! file of the snapshot resolved here: a worker plans that snapshot from it and reads its
//! share, never another snapshot, and needs only the warehouse's settings (the catalog's
//! `[[iceberg_catalogs]]` entry), not the catalog's answer.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};

use super::Session;
use crate::access::privileges::Privilege;
use crate::cluster::lookup_wire::{WireLookup, malformed};
use crate::cluster::placement::Placement;
use crate::cluster::remote_lookup::Owned;
use crate::iceberg::catalog::{IcebergCatalogProvider, namespace_named};
use crate::iceberg::file_indexes::Share;
use crate::iceberg::table::{IcebergTable, Reading};
use crate::scan::page_read::LocatedRead;
use crate::session::lookup_results::{LookupKey, keeping};
use crate::session::query_stream::QueryStream;
use crate::session::short_path::{Bound, LookupPlan, OwnedRows, PointLookup};

impl Session {
    /// Runs `lookup` of the attached table `(catalog, namespace, table)` by the short path, in
    /// this process or, on a coordinator, on the workers owning the files it reads; None
    /// leaves it to the full path (which words the errors of an unknown catalog or table).
    pub(super) async fn attached_lookup(
        &self,
        lookup: &PointLookup,
        (catalog, namespace, name): (&str, &str, &str),
        database: &str,
        params: &[ScalarValue],
    ) -> Result<Option<QueryStream>> {
        if namespace_named(&self.iceberg, &format!("{catalog}.{namespace}")).is_none() {
            return Ok(None);
        }
        let Some(schema) = self.ctx.catalog(catalog).and_then(|c| c.schema(namespace)) else {
            return Ok(None);
        };
        // The catalog is asked for the table's current metadata here, as the full path asks.
        let Ok(Some(provider)) = schema.table(name).await else {
            return Ok(None);
        };
        let Some(table) = provider.downcast_ref::<IcebergTable>() else {
            return Ok(None);
        };
        // Where the full path's scan would check it; a kept result is no exception. On the table
        // found, spelled as its catalog spells it.
        let (object, database_found, name_found) = table.named();
        self.require(Privilege::Select, object)?;
        // Kept results are keyed by the table's UUID and snapshot: none for a table without.
        let (id, version) = match table.snapshot() {
            (Some(id), Some(snapshot)) => (Some(id), snapshot as u64),
            _ => (None, 0),
        };
        let cache = self.options(|o| o.lookup_cache) && id.is_some();
        let table_schema = provider.schema();
        let id = id.unwrap_or_default();
        let (bound, results) = self.bind(
            lookup,
            (&table_schema, id),
            version,
            (database, params),
            cache,
        );
        let Some(Bound { origins, key }) = bound else {
            return Ok(None);
        };
        self.progress.reset();
        if let Some(kept) = self.kept(results.as_ref(), &key, &origins) {
            return Ok(Some(kept));
        }
        let reading = self.attached_reading(table, &key)?;
        let answer = match &self.cluster {
            Some(cluster) => {
                let wire = self.options(|o| lookup.wire((database, params), &key, cache, o));
                let Some(wire) = wire else {
                    return Ok(None);
                };
                let wire = WireLookup {
                    database: database_found.to_string(),
                    table: name_found.to_string(),
                    metadata_location: table.metadata_location().to_string(),
                    ..wire
                };
                let files = Owned::Files(table.files_to_read(&reading).await);
                let schema = PointLookup::output_schema(&table_schema, &key);
                self.ask_workers(cluster, files, wire, schema, origins)
            }
            None => {
                let plan = self
                    .attached_plan(table, &table_schema, &key, reading)
                    .await?;
                self.answer(&plan, origins).await?
            }
        };
        Ok(Some(match results {
            Some(results) => answer.map_rows(|rows| keeping(rows, results, key)),
            None => answer,
        }))
    }

    /// A worker's side of an attached table's lookup ([`Session::answer_owned`]): its rows in
    /// the data files `wire` names, of the snapshot its metadata file names.
    pub(super) async fn answer_attached_owned(
        &self,
        lookup: &PointLookup,
        wire: &WireLookup,
    ) -> Result<OwnedRows> {
        let table = self
            .attached_table_at(
                (&wire.database, &wire.table),
                &wire.metadata_location,
                (&wire.table_id, wire.version),
                &wire.files,
            )
            .await?;
        let schema = table.schema();
        let (bound, _) = self.bind(
            lookup,
            (&schema, &wire.table_id),
            wire.version,
            (&wire.database, &[]),
            false,
        );
        let Some(Bound { key, .. }) = bound else {
            return Err(malformed("a lookup this worker cannot bind to the table"));
        };
        let share = Share {
            placement: Arc::new(Placement::new(wire.placement.clone())),
            worker: wire.worker as usize,
        };
        let reading = self
            .attached_reading(&table, &key)?
            .only(&wire.files, share);
        let plan = self.attached_plan(&table, &schema, &key, reading).await?;
        self.owned_rows(&plan).await
    }

    /// On a worker, the attached table `(database, table)` (`catalog.namespace` and a name) at
    /// the snapshot its coordinator read: the one the metadata file `location` names, which
    /// must be `(table_id, snapshot)` and list every one of `files`.
    pub(crate) async fn attached_table_at(
        &self,
        (database, name): (&str, &str),
        location: &str,
        (table_id, snapshot): (&str, u64),
        files: &[String],
    ) -> Result<IcebergTable> {
        let no_catalog = || {
            DataFusionError::Execution(format!(
                "this worker has no Iceberg catalog for {database}: give workers the \
                 coordinators' [[iceberg_catalogs]] entries (the warehouse's settings are what \
                 they use)"
            ))
        };
        let (catalog, namespace) =
            namespace_named(&self.iceberg, database).ok_or_else(no_catalog)?;
        let provider = self.ctx.catalog(catalog.name()).ok_or_else(no_catalog)?;
        let provider =
            (provider.downcast_ref::<IcebergCatalogProvider>()).ok_or_else(no_catalog)?;
        let table = (provider.table_at(namespace, name, location)).await?;
        let (uuid, at) = table.snapshot();
        let at = (uuid.unwrap_or_default(), at.map_or(0, |s| s as u64));
        if at != (table_id, snapshot) || !table.lists(files) {
            return Err(DataFusionError::Execution(format!(
                "{database}.{name}: the metadata file {location} is not of the snapshot \
                 {snapshot} the coordinator read, or lists other data files"
            )));
        }
        Ok(table)
    }

    /// What a read of `table` for `key` takes of this session, its privilege checked.
    fn attached_reading(&self, table: &IcebergTable, key: &LookupKey) -> Result<Reading> {
        // No limit: the filter above the scan applies it (the scan's filters are inexact).
        let filters = [key.condition.clone()];
        table.reading(&*self.ctx.state_ref().read(), &filters)
    }

    /// The plan of `key`'s lookup of `table` (of `schema`): its scan of the files `reading`
    /// considers, a filter and a projection.
    async fn attached_plan(
        &self,
        table: &IcebergTable,
        schema: &SchemaRef,
        key: &LookupKey,
        reading: Reading,
    ) -> Result<LookupPlan> {
        let read = PointLookup::columns_read(schema, key)?;
        let direct = self.options(|o| o.direct_reads);
        let scan = (table.read(reading, Some(&read), None, direct)).await?;
        let located: Arc<dyn LocatedRead> = scan.clone();
        LookupPlan::new(
            (scan, Some(located)),
            schema,
            &read,
            key,
            self.ctx.state_ref().read().config_options(),
        )
    }
}
