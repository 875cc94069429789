//! An Iceberg table's current snapshot as a DataFusion table: its data files read by
//! DataFusion's Parquet scan, each file's position-deleted rows left out by a row selection
//! (never decoded) and its rows equality deletes remove dropped as they are read
//! ([`super::equality_delete_exec`]), filters pruning row groups and pages by Parquet's statistics. A lookup of
//! keys of an indexed column first leaves out the files whose index rules the keys out, then
//! any filter the files whose manifest bounds rule it out ([`super::file_stats`]); a file
//! neither rules out is read. Each file's columns are paired with the table's by field id
//! ([`super::field_ids`]).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DFSchema, ScalarValue, internal_datafusion_err, internal_err};
use datafusion::datasource::TableType;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetRowSelection;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::Result;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::parquet::arrow::arrow_reader::RowSelection;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_optimizer::pruning::PruningPredicateBuilder;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;
use sieve_iceberg::{DataFile, EqualityDeletes, TableScan, field_id};
use std::ops::Range;

use crate::access::principal::require;
use crate::access::privileges::{Object, Privilege};
use crate::cluster::attached_scan::{AttachedScan, AttachedScanExec};
use crate::cluster::coordinator::Cluster;
use crate::options::SieveOptions;
use crate::scan::exec::parquet_options;
use crate::scan::live_rows::live_within;

use super::equality_delete_exec::{EqualityDeleteExec, FILE_COLUMN};
use super::field_ids::ByFieldId;
use super::file_indexes::{FileIndexes, Loaded, Located, Share};
use super::file_stats::FileStatistics;
use super::indexed_pages::IndexedPagesFactory;
use super::located_read::LocatedFiles;
use super::scan_exec::{FileCounts, Files, IcebergScanExec};
use super::snapshot_files::Considered;

#[derive(Debug)]
pub struct IcebergTable {
    /// What privileges are checked on.
    object: Object,
    /// `catalog.namespace` and the table's name in it.
    database: String,
    table: String,
    scan: Arc<TableScan>,
    store_url: ObjectStoreUrl,
    indexes: Arc<FileIndexes>,
}

impl IcebergTable {
    pub fn new(
        object: Object,
        (database, table): (String, String),
        scan: Arc<TableScan>,
        store_url: ObjectStoreUrl,
        indexes: Arc<FileIndexes>,
    ) -> Self {
        Self {
            object,
            database,
            table,
            scan,
            store_url,
            indexes,
        }
    }
}

/// `file` as DataFusion reads it, asking for only its rows in `wanted` (the row groups an
/// index left; None: all) that no position delete removed; None when none are left. Row
/// groups the selection leaves whole are skipped unread.
fn partitioned(file: &DataFile, wanted: Option<&[Range<u64>]>) -> Option<PartitionedFile> {
    let partitioned = PartitionedFile::new(file.path.to_string(), file.file_size);
    if wanted.is_none() && file.deleted.is_none() {
        return Some(partitioned);
    }
    let rows = file.record_count as usize;
    let wanted = match wanted {
        Some(ranges) => (ranges.iter())
            .map(|r| r.start as usize..r.end as usize)
            .collect(),
        None => std::iter::once(0..rows).collect(),
    };
    let ranges = live_within(wanted, file.deleted.as_ref());
    (!ranges.is_empty()).then(|| {
        let selection = RowSelection::from_consecutive_ranges(ranges.into_iter(), rows);
        partitioned.with_extension(ParquetRowSelection::new(selection))
    })
}

impl IcebergTable {
    /// The table's UUID and the id of the snapshot it reads, where its metadata has them: what
    /// a kept lookup result is keyed by.
    /// The table's privilege object and its names (`catalog.namespace`, table) as its catalog
    /// spells them, which a statement's lowercased names may not.
    pub fn named(&self) -> (&Object, &str, &str) {
        (&self.object, &self.database, &self.table)
    }

    pub fn snapshot(&self) -> (Option<&str>, Option<i64>) {
        (self.scan.table_uuid.as_deref(), self.scan.snapshot_id)
    }

    /// The metadata file the snapshot read was planned from: what a worker plans it from again.
    pub fn metadata_location(&self) -> &str {
        &self.scan.metadata_location
    }

    /// Whether every one of `paths` is a data file of the snapshot read.
    pub fn lists(&self, paths: &[String]) -> bool {
        paths.iter().all(|path| self.scan.file(path).is_some())
    }

    /// The paths of the data files `reading` would read: those no index or manifest bounds
    /// rule out. A coordinator sends each to the worker that owns it.
    pub async fn files_to_read(&self, reading: &Reading) -> Vec<String> {
        let (chosen, _, _) = self.choose_files(reading).await;
        chosen
            .iter()
            .map(|(file, _)| file.path.to_string())
            .collect()
    }
}

#[async_trait]
impl TableProvider for IcebergTable {
    fn schema(&self) -> SchemaRef {
        self.scan.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// Filters prune row groups and pages; DataFusion still applies them to the rows.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let reading = self.reading(state, filters)?;
        let Some(cluster) = state.config().get_extension::<Cluster>() else {
            return Ok(self.read(reading, projection, limit, false).await?);
        };
        // On a coordinator, the files left are read by the workers that own them, each
        // planning this snapshot again; this plan of the whole scan runs if the scan is left
        // in one task (`cluster::attached_scan`).
        let chosen = self.choose_files(&reading).await;
        let files: Vec<String> = (chosen.0.iter())
            .map(|(file, _)| file.path.to_string())
            .collect();
        let here = self.plan(chosen, reading, projection, limit, false)?;
        let (Some(table_id), Some(snapshot)) = self.snapshot() else {
            return Ok(here);
        };
        if files.is_empty() {
            return Ok(here);
        }
        let placement = Arc::new(cluster.placement()?);
        let mut workers: Vec<usize> = files.iter().map(|f| placement.owner(f)).collect();
        workers.sort_unstable();
        workers.dedup();
        let scan = AttachedScan {
            database: self.database.clone(),
            table: self.table.clone(),
            metadata_location: self.metadata_location().to_string(),
            snapshot: snapshot as u64,
            table_id: table_id.to_string(),
            files,
            placement,
            workers,
            projection: projection.cloned(),
            filters: filters.to_vec(),
            limit,
            // Those of `here`, which the node takes from it.
            schema: here.schema(),
            partitions: 0,
            counts: Some(here.counts().clone()),
        };
        Ok(Arc::new(AttachedScanExec::here(scan, here)))
    }
}

/// The files a read chose, each as DataFusion reads it; how it chose them; and the indexes it
/// probed.
type Chosen<'a> = (
    Vec<(&'a DataFile, PartitionedFile)>,
    FileCounts,
    Arc<Loaded>,
);

/// Files a point lookup reads at most directly ([`LocatedFiles`]); more are read by
/// DataFusion's scan, side by side.
const LOCATED_FILES: usize = 16;

/// What a read of an attached table takes from the session, taken before it awaits anything:
/// a point lookup's short path then borrows the session's state instead of cloning it (a
/// clone of DataFusion's `SessionState`, its function registries and options, is a few
/// percent of a lookup's CPU).
pub struct Reading {
    predicate: Option<Arc<dyn PhysicalExpr>>,
    runtime: Arc<RuntimeEnv>,
    batch_size: usize,
    target_partitions: usize,
    /// Whether the bytes read are kept in the data cache (`sieve.data_cache`).
    data_cache: bool,
    /// The data files to consider, by path; None: all of the snapshot's.
    only: Option<Vec<String>>,
    /// On a worker, its share of the files, which its view of the indexes holds.
    share: Option<Share>,
}

impl Reading {
    /// The same read, keeping the bytes it reads in the data cache or not: a worker's share
    /// reads as the asking session's `sieve.data_cache` says, not its own session's.
    pub fn data_cache(self, data_cache: bool) -> Self {
        Self { data_cache, ..self }
    }

    /// The same read of the files `paths` only (those of a worker's `share` of a lookup, which
    /// its coordinator chose): the others are not read, nor counted in EXPLAIN's totals.
    pub fn only(self, paths: &[String], share: Share) -> Self {
        // Each once: a file named twice must not be read twice.
        let mut paths = paths.to_vec();
        paths.sort_unstable();
        paths.dedup();
        Self {
            only: Some(paths),
            share: Some(share),
            ..self
        }
    }
}

impl IcebergTable {
    /// What [`Self::read`] takes of `state` to read the rows `filters` may select, the
    /// account's privilege checked.
    pub fn reading(&self, state: &dyn Session, filters: &[Expr]) -> Result<Reading> {
        require(state.config(), Privilege::Select, &self.object)?;
        let df_schema = DFSchema::try_from(self.schema().as_ref().clone())?;
        let predicate = conjunction(filters.iter().cloned())
            .map(|e| state.create_physical_expr(e, &df_schema))
            .transpose()?;
        let config = state.config();
        Ok(Reading {
            predicate,
            runtime: state.runtime_env().clone(),
            batch_size: config.batch_size(),
            target_partitions: config.target_partitions(),
            data_cache: (config.options().extensions.get::<SieveOptions>())
                .is_none_or(|o| o.data_cache),
            only: None,
            share: None,
        })
    }

    /// The plan of [`TableProvider::scan`], run in this process: also what a point lookup's
    /// short path plans and runs, without DataFusion's physical planner, and then may read
    /// `located` ([`LocatedFiles`]).
    pub async fn read(
        &self,
        reading: Reading,
        projection: Option<&Vec<usize>>,
        limit: Option<usize>,
        located: bool,
    ) -> Result<Arc<IcebergScanExec>> {
        let chosen = self.choose_files(&reading).await;
        self.plan(chosen, reading, projection, limit, located)
    }

    /// The plan of [`Self::read`] of the files `reading` chose (its choice, counts and the
    /// indexes it probed).
    fn plan(
        &self,
        (chosen, counts, loaded): Chosen<'_>,
        reading: Reading,
        projection: Option<&Vec<usize>>,
        limit: Option<usize>,
        located: bool,
    ) -> Result<Arc<IcebergScanExec>> {
        let Reading {
            predicate,
            runtime,
            batch_size,
            target_partitions,
            data_cache,
            only: _,
            share: _,
        } = reading;
        let schema = self.schema();
        if chosen.is_empty() {
            let projected = match projection {
                Some(p) => Arc::new(schema.project(p)?),
                None => schema,
            };
            let empty = Arc::new(EmptyExec::new(projected));
            return Ok(self.explained(counts, (Files::Built(empty), None)));
        }
        // Equality deletes apply by the file a row comes from: each file's place is read as a
        // column of its own, with the key columns, for the node above to drop deleted rows.
        let deletes: Vec<Option<EqualityDeletes>> = (chosen.iter())
            .map(|(file, _)| file.equality_deletes.clone())
            .collect();
        let with_deletes = deletes.iter().any(Option::is_some);
        let wanted: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..schema.fields().len()).collect(),
        };
        let mut read = wanted.clone();
        let mut table_schema = TableSchema::from(schema.clone());
        let mut key_columns = HashMap::new();
        if with_deletes {
            let ids = (deletes.iter().flatten())
                .flat_map(|d| d.keys.iter())
                .flat_map(|keys| keys.field_ids());
            // A column the table dropped that a delete compares is read after the table's
            // own, by its field id (null in files written without it), and not output.
            let mut fields: Vec<FieldRef> = schema.fields().iter().cloned().collect();
            for &id in ids {
                let at = match (fields.iter()).position(|f| field_id(f) == Some(id)) {
                    Some(at) => at,
                    None => {
                        let dropped = (self.scan.dropped_keys.iter())
                            .find(|f| field_id(f) == Some(id))
                            .ok_or_else(|| {
                                internal_datafusion_err!("no column of field id {id}")
                            })?;
                        fields.push(dropped.clone());
                        fields.len() - 1
                    }
                };
                let place = read.iter().position(|&c| c == at).unwrap_or_else(|| {
                    read.push(at);
                    read.len() - 1
                });
                key_columns.insert(id, place);
            }
            read.push(fields.len());
            let file_column = Field::new(FILE_COLUMN, DataType::UInt32, false);
            let with_keys = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
            table_schema = TableSchema::builder(with_keys)
                .with_table_partition_cols(vec![Arc::new(file_column)])
                .build();
        }
        // A lookup's few files, each with the rows its index left, may be read directly.
        let located = (located
            && !with_deletes
            && chosen.len() <= LOCATED_FILES
            && (chosen.iter()).all(|(_, f)| f.extension::<ParquetRowSelection>().is_some()))
        .then(|| chosen.iter().map(|(_, f)| f.clone()).collect::<Vec<_>>());
        let files: Vec<PartitionedFile> = (chosen.into_iter().enumerate())
            .map(|(place, (_, file))| match with_deletes {
                true => file.with_partition_values(vec![ScalarValue::UInt32(Some(place as u32))]),
                false => file,
            })
            .collect();
        // The options stay with the source when DataFusion pushes the filter above it down
        // into it after this, so a float filter prunes nothing by Parquet's statistics either.
        let options = parquet_options(predicate.as_ref(), &schema, false);
        let pages = Arc::new(IndexedPagesFactory::new(
            (runtime.object_store(&self.store_url)?, &self.store_url),
            runtime.cache_manager.get_file_metadata_cache(),
            data_cache.then(|| self.indexes.store().storage().clone()),
            loaded,
            batch_size,
        ));
        let located = located.map(|files| LocatedFiles {
            pages: pages.clone(),
            files,
            read: read.clone(),
            schema: schema.clone(),
            file_names: self.scan.file_names.clone(),
            batch_size,
        });
        let by_field_id = Arc::new(ByFieldId {
            file_names: self.scan.file_names.clone(),
        });
        if let Some(&past) =
            (read.iter()).find(|&&c| c >= table_schema.table_schema().fields().len())
        {
            return internal_err!("column {past} of {} projected", self.table);
        }
        let store_url = self.store_url.clone();
        // A limit applies after deletes, so it is not the source's to apply when any remain.
        let limit = limit.filter(|_| !with_deletes);
        let config = move || {
            let mut source = ParquetSource::new(table_schema.clone())
                .with_table_parquet_options(options.clone())
                .with_parquet_file_reader_factory(pages.clone());
            if let Some(predicate) = &predicate {
                source = source.with_predicate(predicate.clone());
            }
            let groups = FileGroup::new(files.clone()).split_files(target_partitions);
            (FileScanConfigBuilder::new(store_url.clone(), Arc::new(source)))
                .with_file_groups(groups)
                .with_expr_adapter(Some(by_field_id.clone()))
                .with_projection_indices(Some(read.clone()))
                .expect("a projection of the table's columns, checked above")
                .with_limit(limit)
                .build()
        };
        if !with_deletes {
            return Ok(self.explained(counts, (Files::scan(Box::new(config)), located)));
        }
        let config = config();
        let files = DataSourceExec::from_data_source(config);
        let output = (0..wanted.len()).collect();
        let deleting = EqualityDeleteExec::new(files, deletes, key_columns, output)?;
        let deleting = Files::Built(Arc::new(deleting));
        Ok(self.explained(counts, (deleting, None)))
    }
}

impl IcebergTable {
    /// The files to read of those `reading` considers: those with a live row that no index
    /// built from them rules out; and the table's indexes as loaded (empty for a lookup that
    /// names no key).
    async fn choose_files(&self, reading: &Reading) -> Chosen<'_> {
        let predicate = reading.predicate.as_ref();
        let only: Option<Vec<&DataFile>> = (reading.only.as_ref())
            .map(|paths| paths.iter().filter_map(|p| self.scan.file(p)).collect());
        let total = only.as_ref().map_or(self.scan.files.len(), Vec::len);
        // No file, no index to load (a worker's empty share would load a view for nothing).
        let (loaded, probes) = match (&self.scan.table_uuid, predicate) {
            (Some(uuid), Some(predicate)) if total > 0 => {
                let loaded = self.indexes.loaded(uuid, reading.share.as_ref()).await;
                let probes = loaded.probes(predicate, &self.scan.schema);
                (Some(loaded), probes)
            }
            _ => (None, Vec::new()),
        };
        // A file whose index answered for every key column the predicate reads needs no
        // manifest bounds: they could rule it out only where a filter's "maybe" was false,
        // which reading the rows it located answers (as `minmax_needed` for Sieve's blocks).
        // Building the bounds' pruning predicate was ~5% of an attached lookup's CPU.
        let probed_whole = predicate.is_some_and(|p| {
            !probes.is_empty()
                && (collect_columns(p).iter())
                    .all(|c| probes.iter().any(|probe| probe.table_column == c.name()))
        });
        // A lookup of the whole snapshot considers the files its keys' locators name (and
        // those no locator covers); a worker, the few its coordinator chose; a scan, all.
        let (considered, located) = match (&loaded, only) {
            (Some(loaded), None) if !probes.is_empty() => {
                let snapshot = loaded.snapshot_files(&self.scan);
                let files = (snapshot.as_ref(), self.scan.files.as_slice());
                self.indexes.considered(loaded, files, &probes).await
            }
            (loaded, only) => {
                let all = only.unwrap_or_else(|| self.scan.files.iter().collect());
                let considered = Considered::walk(all, loaded.as_deref());
                let located = match loaded {
                    Some(loaded) if !probes.is_empty() => {
                        (self.indexes.locate(loaded, &considered.files, &probes)).await
                    }
                    _ => Located::default(),
                };
                (considered, located)
            }
        };
        let mut counts = FileCounts {
            total,
            fully_deleted: considered.fully_deleted,
            not_indexed: considered.not_indexed,
            pruned_by_index: considered.ruled_out,
            ..Default::default()
        };
        let mut candidates = Vec::with_capacity(considered.files.len());
        let mut unvouched = Vec::new();
        for file in considered.files {
            let (mut wanted, mut vouched) = (None, false);
            let matching = (loaded.as_ref()).and_then(|l| l.matching_rows(file, &probes, &located));
            if let Some(matching) = matching {
                if matching.ranges.is_empty() {
                    counts.pruned_by_index += 1;
                    continue;
                }
                counts.row_groups_pruned_by_index += matching.left_out;
                wanted = Some(matching.ranges);
                vouched = probed_whole && matching.every_probe;
            }
            let Some(partitioned) = partitioned(file, wanted.as_deref()) else {
                // The row groups the index left hold deleted rows only.
                counts.pruned_by_index += 1;
                continue;
            };
            if !vouched {
                unvouched.push(candidates.len());
            }
            candidates.push(Some((file, partitioned)));
        }
        // Then the bounds the manifests give, for every file left that no index vouched for.
        let pruning = (predicate.filter(|_| !unvouched.is_empty())).and_then(|predicate| {
            PruningPredicateBuilder::new()
                .with_file_schema(self.scan.schema.clone())
                .build(predicate.clone())
        });
        if let Some(pruning) = pruning {
            let files: Vec<&DataFile> = (unvouched.iter())
                .filter_map(|&i| candidates[i].as_ref().map(|(file, _)| *file))
                .collect();
            let statistics = FileStatistics {
                files: &files,
                schema: &self.scan.schema,
            };
            if let Ok(keep) = pruning.prune(&statistics) {
                for (&i, keep) in unvouched.iter().zip(keep) {
                    if !keep {
                        candidates[i] = None;
                        counts.pruned_by_minmax += 1;
                    }
                }
            }
        }
        let files: Vec<_> = candidates.into_iter().flatten().collect();
        counts.read = files.len();
        (files, counts, loaded.unwrap_or_default())
    }

    fn explained(
        &self,
        counts: FileCounts,
        files: (Files, Option<LocatedFiles>),
    ) -> Arc<IcebergScanExec> {
        Arc::new(IcebergScanExec::new(
            format!("{}.{}", self.database, self.table),
            self.scan.snapshot_id,
            counts,
            files,
        ))
    }
}
