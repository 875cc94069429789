//! The short path of a point lookup on an attached Iceberg table (`catalog.namespace.table`, or
//! `table` in the database `catalog.namespace`):
//! the table is resolved as the full path resolves it (the catalog asked for its current
//! metadata, the account's privileges checked), then the lookup is bound to the snapshot the
//! catalog names and answered from its kept result, or planned straight into the table's scan
//! (its index and pages), a filter and a projection, without DataFusion's SQL planner and
//! optimizer; the scan's few files are read on the lookup's task where they can be
//! ([`crate::iceberg::located_read`]). A snapshot never changes, so a kept result keyed by the table's UUID and snapshot
//! id is never stale; a commit by any writer names a new snapshot, seen by the next statement.

use std::sync::Arc;

use datafusion::common::ScalarValue;
use datafusion::error::Result;

use super::Session;
use crate::access::privileges::Privilege;
use crate::iceberg::catalog::{namespace_named, object};
use crate::iceberg::table::IcebergTable;
use crate::scan::page_read::LocatedRead;
use crate::session::lookup_results::keeping;
use crate::session::query_stream::QueryStream;
use crate::session::short_path::{Bound, LookupPlan, PointLookup};

impl Session {
    /// Runs `lookup` of the attached table `(catalog, namespace, table)` by the short path, in
    /// this process (a coordinator too: its workers hold no catalogs); None leaves it to the
    /// full path (which words the errors of an unknown catalog or table, and on a coordinator
    /// refuses every other read of an attached table by name).
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
        // Where the full path's scan would check it; a kept result is no exception.
        self.require(Privilege::Select, &object(catalog, namespace, name))?;
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
        let read = PointLookup::columns_read(&table_schema, &key)?;
        // No limit: the filter above the scan applies it (the scan's filters are inexact).
        let filters = [key.condition.clone()];
        let direct = self.options(|o| o.direct_reads);
        let reading = table.reading(&*self.ctx.state_ref().read(), &filters)?;
        let scan = (table.read(reading, Some(&read), None, direct)).await?;
        let located: Arc<dyn LocatedRead> = scan.clone();
        let plan = LookupPlan::new(
            (scan, Some(located)),
            &table_schema,
            &read,
            &key,
            self.ctx.state_ref().read().config_options(),
        )?;
        let answer = self.answer(&plan, origins).await?;
        Ok(Some(match results {
            Some(results) => answer.map_rows(|rows| keeping(rows, results, key)),
            None => answer,
        }))
    }
}
