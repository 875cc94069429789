//! A worker's share of an attached table's scan ([`crate::cluster::attached_scan`]): the
//! snapshot its coordinator read, planned again here from its metadata file, reading only the
//! data files the share names, as this process would read them with no workers.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;

use super::Session;
use crate::cluster::attached_scan::AttachedScan;
use crate::iceberg::file_indexes::Share;
use crate::options::SieveOptions;

impl Session {
    /// The plan of `scan`'s share: its files of the table at the coordinator's snapshot, the
    /// filters pruning them as they would here, read under the asking session's `options`.
    pub(crate) async fn plan_attached_share(
        &self,
        scan: &AttachedScan,
        options: &SieveOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // A task dealt no file (two at least are planned) reads nothing, and asks for nothing.
        if scan.files.is_empty() {
            return Ok(Arc::new(EmptyExec::new(scan.schema.clone())));
        }
        let table = self
            .attached_table_at(
                (&scan.database, &scan.table),
                &scan.metadata_location,
                (&scan.table_id, scan.snapshot),
                &scan.files,
            )
            .await?;
        // The index entries this worker holds are those of the files it owns; a share dealt
        // more than one worker's files reads the others' unpruned by the index.
        let share = Share {
            placement: scan.placement.clone(),
            worker: scan.workers.first().copied().unwrap_or_default(),
        };
        let reading = table
            .reading(&*self.ctx.state_ref().read(), &scan.filters)?
            .only(&scan.files, share)
            .data_cache(options.data_cache);
        let plan = table
            .read(reading, scan.projection.as_ref(), scan.limit, false)
            .await?;
        Ok(plan)
    }
}
