//! The plan node of a Sieve table scan. It is a leaf, and planning it does no I/O: the node holds
//! only what a physical-plan codec would send to another process (the table, projection,
//! predicate, limit and whether to prune). When it first executes it reads the table's newest
//! snapshot, chooses the blocks to read ([`crate::scan::pruning`]: min/max, then the survivors' filter
//! sidecars) and reads them with DataFusion's Parquet scan, the way DataFusion's own Parquet
//! opener prunes row groups when a file is opened rather than when the query is planned.
//! EXPLAIN ANALYZE shows blocks total / pruned by min-max / pruned by filter / read, sidecar
//! bytes fetched and cache hits, next to the Parquet scan's own metrics.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::Statistics;
use datafusion::common::config::{ConfigOptions, TableParquetOptions};
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetRowSelection;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::parquet::arrow::arrow_reader::RowSelection;
use datafusion::physical_expr::utils::{LiteralGuarantee, collect_columns};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, Metric, MetricBuilder, MetricValue, MetricsSet, Time,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties, ReplaceChildrenOptions,
};
use futures::{StreamExt, TryStreamExt};
use sieve_storage::{BlockList, RequestTrace, Table};
use tokio::sync::OnceCell;

use crate::catalog::storage_url::object_store_url;
use crate::cluster::placement::Placement;
use crate::error::{Classified, ErrorClass, external, to_df};
use crate::options::SieveOptions;
use crate::scan::live_rows::live_ranges;
use crate::scan::page_read::{self, LocatedRead};
use crate::scan::pruning::{Narrowing, PruneOutcome, prune_blocks};
use crate::scan::routing::routing_of;
use crate::scan::verified_reader::{BlockPages, VerifiedReaderFactory};

/// A filtered query that would read every block of a large table (Cassandra's ALLOW
/// FILTERING). Refused before any block is read, saying how to narrow it or run it anyway.
#[derive(Debug, thiserror::Error)]
#[error(
    "refusing to read all {blocks} blocks of {table}: no block can be skipped for this filter. \
     Filter on an indexed column ({}) or a range of a clustered one, or run it anyway with \
     ALLOW FILTERING at the end of the statement or SET sieve.allow_full_scan = true",
    if index_columns.is_empty() { "none".to_string() } else { index_columns.join(", ") }
)]
pub struct FullScanRefused {
    pub table: String,
    pub blocks: usize,
    pub index_columns: Vec<String>,
}

impl Classified for FullScanRefused {
    fn class(&self) -> ErrorClass {
        ErrorClass::NotSupported
    }
}

/// Up to this many located slices (4096 rows each) a scan reads every column in one round trip
/// instead of pushing its filter down ([`parquet_scan`]).
const FETCH_TOGETHER_PAGES: u64 = 16;

/// What a scan is asked to read; planning fills it in without touching storage.
#[derive(Debug, Clone)]
pub struct ScanRequest {
    pub table: Table,
    pub projection: Option<Vec<usize>>,
    /// The conjunction of the filters pushed into the scan.
    pub predicate: Option<Arc<dyn PhysicalExpr>>,
    pub limit: Option<usize>,
    /// Off: every block is read (the differential tests' baseline).
    pub pruning: bool,
    /// Off: pruning probes every block's sidecar, never the locators.
    pub locator: bool,
    /// A filtered scan that narrows no block of a table of more blocks than this is refused
    /// ([`FullScanRefused`]); None allows it.
    pub full_scan_blocks: Option<u64>,
    pub partitions: usize,
    /// The snapshot to read; None reads the newest when the scan starts. A distributed scan
    /// pins it when it is planned, so every worker's share is of one snapshot.
    pub snapshot: Option<u64>,
    /// None: every block. Some: only the blocks these workers own, when a scan is split into
    /// one task per worker ([`crate::cluster::coordinator`]).
    pub shares: Option<Shares>,
    /// Pages the locator named are decoded by [`crate::scan::page_read`] on the task that
    /// reads the scan, not by DataFusion's Parquet scan (a short-path lookup's read, with
    /// `sieve.direct_reads`).
    pub direct: bool,
    /// The rows the scan returns, when known before it runs (the live rows of the pinned
    /// `snapshot`, for a scan of no column and no filter): its exact statistics, from which
    /// DataFusion answers `count(*)` without running it. Not sent to workers.
    pub rows: Option<u64>,
    /// A worker's point lookup: the blocks its coordinator's pruning left to it, which it
    /// reads in place of `shares`' and narrows without min/max (its coordinator's).
    pub chosen: Option<ChosenBlocks>,
}

impl ScanRequest {
    /// A scan of every column of `table`'s newest snapshot, unfiltered, under the session's
    /// settings (pruning, locator, the full-scan guard, partitions).
    pub fn new(table: Table, options: &ConfigOptions) -> Self {
        let sieve = options.extensions.get::<SieveOptions>();
        Self {
            table,
            projection: None,
            predicate: None,
            limit: None,
            pruning: sieve.is_none_or(|o| o.pruning),
            locator: sieve.is_none_or(|o| o.locator),
            full_scan_blocks: match sieve {
                Some(o) if !o.allows_full_scan() => Some(o.full_scan_blocks),
                _ => None,
            },
            partitions: options.execution.target_partitions,
            snapshot: None,
            shares: None,
            direct: false,
            rows: None,
            chosen: None,
        }
    }
}

/// The blocks a coordinator chose for a worker's lookup
/// ([`crate::cluster::lookup_wire::WireLookup::chosen_blocks`]).
#[derive(Debug, Clone)]
pub struct ChosenBlocks {
    /// Indices into the version's block list.
    pub blocks: Arc<[u32]>,
    /// How many blocks the coordinator's list of the version held.
    pub listed: u64,
}

impl ChosenBlocks {
    /// For each block of `blocks`, whether it was chosen; an error if `blocks` is not the list
    /// the coordinator chose from.
    fn owned(&self, blocks: &BlockList) -> Result<Vec<bool>> {
        let mismatch = || {
            datafusion::error::DataFusionError::Execution(format!(
                "the coordinator chose among {} blocks, this worker lists {} at the version \
                 asked: run coordinators and workers of one release",
                self.listed,
                blocks.len()
            ))
        };
        if self.listed != blocks.len() as u64 {
            return Err(mismatch());
        }
        let mut owned = vec![false; blocks.len()];
        for &b in self.blocks.iter() {
            *owned.get_mut(b as usize).ok_or_else(mismatch)? = true;
        }
        Ok(owned)
    }
}

/// Which workers' blocks one task of a distributed scan reads.
#[derive(Debug, Clone)]
pub struct Shares {
    pub placement: Arc<Placement>,
    /// Indices into the placement's workers.
    pub workers: Vec<usize>,
    /// On the coordinator: workers owning blocks of the table that node filters left out.
    pub skipped_by_node_filter: usize,
}

impl Shares {
    /// For each block of `blocks`, whether this task reads it.
    fn owned(&self, blocks: &BlockList) -> Vec<bool> {
        self.placement
            .block_owners(blocks)
            .into_iter()
            .map(|owner| self.workers.contains(&owner))
            .collect()
    }
}

/// What executing the scan decided, once.
#[derive(Debug)]
pub struct Opened {
    pub outcome: PruneOutcome,
    pub rows_in_blocks_read: u64,
    pub bytes_in_blocks_read: u64,
    /// The Parquet scan of the surviving blocks; None when no block survives or they are read
    /// directly.
    input: Option<Arc<dyn ExecutionPlan>>,
    /// The located blocks to decode directly ([`ScanRequest::direct`]), when the scan chose to.
    direct: Vec<PartitionedFile>,
}

impl Opened {
    /// The blocks the scan chose to decode directly, read: the scan's rows, unfiltered.
    async fn read_direct(
        &self,
        request: &ScanRequest,
        schema: &SchemaRef,
        metrics: &ExecutionPlanMetricsSet,
        context: &TaskContext,
    ) -> Result<Vec<RecordBatch>> {
        page_read::read_located(
            &reader_factory(&request.table, context),
            &self.direct,
            schema,
            request.projection.as_deref(),
            context.session_config().batch_size(),
            metrics,
        )
        .await
    }
}

#[derive(Debug)]
pub struct SieveScanExec {
    request: ScanRequest,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
    opened: Arc<OnceCell<Opened>>,
    /// The object-store requests the scan sends (every partition's), for `requests` and
    /// `sequential_requests`.
    trace: Arc<RequestTrace>,
}

impl SieveScanExec {
    pub fn new(request: ScanRequest) -> Result<Self> {
        let table_schema = request.table.def().schema.clone();
        let schema = match &request.projection {
            Some(p) => Arc::new(table_schema.project(p)?),
            None => table_schema,
        };
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(request.partitions.max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Self {
            request,
            schema,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
            opened: Arc::new(OnceCell::new()),
            trace: RequestTrace::new(),
        })
    }

    pub fn request(&self) -> &ScanRequest {
        &self.request
    }

    /// The object-store requests the scan has sent.
    pub fn trace(&self) -> &RequestTrace {
        &self.trace
    }

    /// What execution decided; None until the scan has started.
    pub fn opened(&self) -> Option<&Opened> {
        self.opened.get()
    }

    /// Prunes and plans the Parquet scan, the first time any partition asks.
    async fn open(
        request: &ScanRequest,
        metrics: &ExecutionPlanMetricsSet,
        context: &TaskContext,
    ) -> Result<Opened> {
        let table = &request.table;
        let count = |name: &'static str, value: u64| {
            MetricBuilder::new(metrics)
                .global_counter(name)
                .add(value as usize)
        };
        if let Some(shares) = &request.shares {
            // Summed over a split scan's tasks: each task counts the workers it was sent for,
            // and only the first the workers node filters left out (see cluster::split_scan).
            count("workers_contacted", shares.workers.len() as u64);
            count(
                "workers_skipped_by_node_filter",
                shares.skipped_by_node_filter as u64,
            );
        }
        if request
            .shares
            .as_ref()
            .is_some_and(|s| s.workers.is_empty())
        {
            // No worker can hold a row (node filters): nothing to read, not even the snapshot.
            return Ok(Opened {
                outcome: PruneOutcome::default(),
                rows_in_blocks_read: 0,
                bytes_in_blocks_read: 0,
                input: None,
                direct: Vec::new(),
            });
        }
        let started = Instant::now();
        let blocks = match request.snapshot {
            Some(version) => table.blocks_at(version).await,
            None => match table
                .snapshot_within(Duration::from_millis(
                    SieveOptions::of(context).max_staleness_ms,
                ))
                .await
            {
                Ok(snapshot) => table.blocks(&snapshot).await,
                Err(e) => Err(e),
            },
        }
        .map_err(to_df)?;
        let owned = match (&request.chosen, &request.shares) {
            (Some(chosen), _) => Some(chosen.owned(&blocks)?),
            (None, shares) => shares.as_ref().map(|s| s.owned(&blocks)),
        };
        let resolved = Instant::now();
        let predicate = request.predicate.as_ref().filter(|_| request.pruning);
        let guarantees = match (predicate, &request.chosen) {
            (Some(p), Some(_)) => LiteralGuarantee::analyze(p),
            _ => Vec::new(),
        };
        let narrowing = match (predicate, &request.chosen) {
            (Some(_), Some(_)) => Some(Narrowing::Chosen(&guarantees)),
            (Some(p), None) => Some(Narrowing::Prune(p)),
            (None, _) => None,
        };
        let routing = routing_of(context);
        let outcome = prune_blocks(
            table,
            &blocks,
            owned.as_deref(),
            narrowing,
            request.locator,
            routing.as_ref(),
        )
        .await?;
        if let Some(limit) = request.full_scan_blocks
            && request.pruning
            && request.predicate.is_some()
            && !outcome.point_lookup
            && outcome.total as u64 > limit
            && outcome.survivors.len() == outcome.total
        {
            return Err(external(FullScanRefused {
                table: format!("{}.{}", table.def().database, table.def().name),
                blocks: outcome.total,
                index_columns: table.def().options.index_columns.clone(),
            }));
        }
        // What a point query costs before it reads any block: finding the snapshot and its
        // blocks, then pruning them.
        let timer = |name: &'static str, from: Instant, to: Instant| {
            let time = Time::new();
            time.add_duration(to - from);
            MetricBuilder::new(metrics).build(MetricValue::Time {
                name: name.into(),
                time,
            });
        };
        timer("snapshot_time", started, resolved);
        timer("prune_time", resolved, Instant::now());
        let survivors = &outcome.survivors;
        let rows_in_blocks_read = survivors.iter().map(|&i| blocks.rows().value(i)).sum();
        // Slices (a page of each column) the scan is asked to read.
        let pages_read = survivors
            .iter()
            .zip(&outcome.slices)
            .map(|(&i, slices)| match slices {
                Some(s) => s.len() as u64,
                None => blocks
                    .rows()
                    .value(i)
                    .div_ceil(u64::from(blocks.slice_rows(i))),
            })
            .sum();
        let bytes_in_blocks_read = survivors
            .iter()
            .map(|&i| blocks.data_bytes().value(i))
            .sum();
        count("blocks_total", outcome.total as u64);
        count("blocks_fully_deleted", outcome.fully_deleted as u64);
        count("blocks_pruned_by_minmax", outcome.pruned_by_minmax as u64);
        count("blocks_pruned_by_locator", outcome.pruned_by_locator as u64);
        count("blocks_pruned_by_filter", outcome.pruned_by_filter as u64);
        count("blocks_read", survivors.len() as u64);
        count("pages_read", pages_read);
        count("index_bytes_fetched", outcome.index_bytes);
        count("locator_groups_probed", outcome.locator_groups_probed);
        count(
            "locator_groups_routed_out",
            outcome.locator_groups_routed_out,
        );
        count("locators_unreadable", outcome.locators_unreadable);
        count("sidecar_bytes_fetched", outcome.sidecar_bytes);
        count("sidecar_cache_hits", outcome.sidecar_cache_hits);
        count("sidecars_unreadable", outcome.sidecars_unreadable);
        count("rows_in_blocks_read", rows_in_blocks_read);
        count("bytes_in_blocks_read", bytes_in_blocks_read);
        // What this process (a worker, in a cluster) holds of the index after pruning: per task
        // in EXPLAIN ANALYZE VERBOSE, each worker's share of the table's index.
        MetricBuilder::new(metrics)
            .global_gauge("index_cache_bytes")
            .set(table.storage().caches().index_bytes() as usize);

        let files: Vec<PartitionedFile> = survivors
            .iter()
            .zip(&outcome.slices)
            .filter_map(|(&i, slices)| block_file(table, &blocks, i, slices.as_ref()))
            .collect();
        let located = outcome.slices.iter().all(Option::is_some);
        let factory = reader_factory(table, context);
        // Decoded directly only when each block's page table fits: a block without one is read
        // through DataFusion's scan, which reads its footer.
        let direct = request.direct
            && located
            && pages_read <= FETCH_TOGETHER_PAGES
            && files.iter().all(|f| factory.fits(f));
        if direct {
            count("blocks_read_directly", files.len() as u64);
            return Ok(Opened {
                outcome,
                rows_in_blocks_read,
                bytes_in_blocks_read,
                input: None,
                direct: files,
            });
        }
        let input = if files.is_empty() {
            None
        } else {
            let per_group = files.len().div_ceil(request.partitions.max(1));
            let groups = files
                .chunks(per_group)
                .map(|c| FileGroup::new(c.to_vec()))
                .collect();
            // Pages the locator named are few rows: filtering them above the scan costs less
            // than the round trip that pushdown's predicate-columns-first read adds.
            let pushdown = !(located && pages_read <= FETCH_TOGETHER_PAGES);
            Some(parquet_scan(
                table,
                groups,
                request.projection.clone(),
                request.predicate.as_ref().map(|p| (p, pushdown)),
                request.limit,
                context,
            )?)
        };
        Ok(Opened {
            outcome,
            rows_in_blocks_read,
            bytes_in_blocks_read,
            input,
            direct: Vec::new(),
        })
    }
}

#[async_trait]
impl LocatedRead for SieveScanExec {
    /// Opens the scan on the caller's task and, when it chose to decode located pages directly
    /// ([`ScanRequest::direct`]), decodes them there.
    async fn read_direct(&self, context: &TaskContext) -> Result<Option<Vec<RecordBatch>>> {
        let opened = self
            .opened
            .get_or_try_init(|| Self::open(&self.request, &self.metrics, context))
            .await?;
        if opened.input.is_some() {
            return Ok(None);
        }
        let read = opened.read_direct(&self.request, &self.schema, &self.metrics, context);
        Ok(Some(self.trace.scope(read).await?))
    }
}

/// The reader of a table's blocks, verified and through the caches the session allows.
fn reader_factory(table: &Table, context: &TaskContext) -> VerifiedReaderFactory {
    VerifiedReaderFactory::new(
        table.storage().clone(),
        context
            .runtime_env()
            .cache_manager
            .get_file_metadata_cache(),
        SieveOptions::of(context).data_cache,
    )
}

/// Block `i` as a file for the Parquet scan, asking for only its live rows of `slices` (all
/// slices when None): with the page index the scan reads only the pages that hold them. None when
/// no such row is left. The block comes with its page table, if its segment has one
/// ([`BlockPages`]): slices the locator named are read without the footer, and any page read
/// whole is fetched exactly.
pub fn block_file(
    table: &Table,
    blocks: &BlockList,
    i: usize,
    slices: Option<&BTreeSet<u32>>,
) -> Option<PartitionedFile> {
    let path = table.block_path(blocks.block_id(i));
    let mut file = PartitionedFile::new(path.to_string(), blocks.data_bytes().value(i))
        .with_extension(blocks.checksums(i));
    let rows = blocks.rows().value(i) as usize;
    if let Some(table_bytes) = blocks.page_table(i) {
        file = file.with_extension(BlockPages {
            table: Bytes::copy_from_slice(table_bytes),
            schema: table.def().schema.clone(),
            rows: rows as u64,
            located: slices.is_some(),
        });
    }
    let Some(ranges) = live_ranges(blocks, i, slices) else {
        return Some(file);
    };
    (!ranges.is_empty()).then(|| {
        let selection = RowSelection::from_consecutive_ranges(ranges.into_iter(), rows);
        file.with_extension(ParquetRowSelection::new(selection))
    })
}

/// The options of a Parquet scan filtered by `predicate` over `schema`, filtering rows while
/// decoding if `pushdown`. Parquet leaves NaN out of its statistics, so its own row-group and
/// page pruning would drop NaN rows for `d = 'NaN'` or `d > 5`: a predicate on a float column
/// prunes nothing by them.
pub fn parquet_options(
    predicate: Option<&Arc<dyn PhysicalExpr>>,
    schema: &Schema,
    pushdown: bool,
) -> TableParquetOptions {
    let on_floats = predicate.is_some_and(|p| {
        collect_columns(p)
            .iter()
            .any(|c| schema.field(c.index()).data_type().is_floating())
    });
    let mut options = TableParquetOptions::default();
    options.global.pruning = !on_floats;
    options.global.enable_page_index = !on_floats;
    options.global.pushdown_filters = pushdown;
    options
}

/// DataFusion's Parquet scan of Sieve blocks, each file read through the verified reader
/// ([`VerifiedReaderFactory`]), pruning pages with `predicate` and, when its flag is set,
/// filtering rows with it while decoding. Pushdown reads the predicate's columns first and the
/// others only for rows that pass: a second round trip, worth it when many rows are read.
/// Without it every projected column's pages are fetched at once, and the rows must be filtered
/// above the scan (Sieve's scans are, see [`crate::scan::provider`]).
pub fn parquet_scan(
    table: &Table,
    groups: Vec<FileGroup>,
    projection: Option<Vec<usize>>,
    predicate: Option<(&Arc<dyn PhysicalExpr>, bool)>,
    limit: Option<usize>,
    context: &TaskContext,
) -> Result<Arc<dyn ExecutionPlan>> {
    let schema = table.def().schema.clone();
    // Sieve's block bounds include NaN (see sieve_storage's nan_bounds): a float predicate is
    // left to them.
    let options = parquet_options(
        predicate.map(|(p, _)| p),
        &schema,
        predicate.is_some_and(|(_, pushdown)| pushdown),
    );
    let mut source = ParquetSource::new(schema.clone())
        .with_table_parquet_options(options)
        .with_parquet_file_reader_factory(Arc::new(reader_factory(table, context)));
    if let Some((predicate, _)) = predicate {
        source = source.with_predicate(predicate.clone());
    }
    let url = object_store_url(table.storage())?;
    let config = FileScanConfigBuilder::new(url, Arc::new(source))
        .with_file_groups(groups)
        .with_projection_indices(projection)?
        .with_limit(limit)
        .build();
    Ok(DataSourceExec::from_data_source(config))
}

impl DisplayAs for SieveScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let def = self.request.table.def();
        write!(f, "SieveScanExec: table={}.{}", def.database, def.name)?;
        if let Some(predicate) = &self.request.predicate {
            write!(f, ", predicate={predicate}")?;
        }
        if !self.request.pruning {
            write!(f, ", pruning=off")?;
        }
        if let Some(shares) = &self.request.shares {
            let names: Vec<&str> = shares
                .workers
                .iter()
                .map(|&w| shares.placement.workers()[w].as_str())
                .collect();
            write!(
                f,
                ", workers=[{}], workers_skipped_by_node_filter={}",
                names.join(" "),
                shares.skipped_by_node_filter
            )?;
        }
        if let Some(opened) = self.opened() {
            let o = &opened.outcome;
            write!(
                f,
                ", blocks={} total, {} fully deleted, {} pruned by min-max, {} pruned by locator, {} pruned by filter, {} read",
                o.total,
                o.fully_deleted,
                o.pruned_by_minmax,
                o.pruned_by_locator,
                o.pruned_by_filter,
                o.survivors.len()
            )?;
        }
        Ok(())
    }
}

impl ExecutionPlan for SieveScanExec {
    fn name(&self) -> &'static str {
        "SieveScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        let mut statistics = Statistics::new_unknown(&self.schema);
        if let (None, Some(rows)) = (partition, self.request.rows) {
            statistics.num_rows = Precision::Exact(usize::try_from(rows).unwrap_or(usize::MAX));
        }
        Ok(Arc::new(statistics))
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        match &self.request.predicate {
            Some(predicate) => f(predicate),
            None => Ok(TreeNodeRecursion::Continue),
        }
    }

    fn replace_children(
        self: Arc<Self>,
        _: Vec<Arc<dyn ExecutionPlan>>,
        _: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn with_new_children(
        self: Arc<Self>,
        _: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let (request, metrics, opened) = (
            self.request.clone(),
            self.metrics.clone(),
            self.opened.clone(),
        );
        let schema = self.schema.clone();
        let trace = self.trace.clone();
        let rows = futures::stream::once(async move {
            let opened = opened
                .get_or_try_init(|| Self::open(&request, &metrics, &context))
                .await?;
            match &opened.input {
                Some(input) if partition < input.output_partitioning().partition_count() => {
                    input.execute(partition, context)
                }
                None if partition == 0 && !opened.direct.is_empty() => {
                    let batches = opened
                        .read_direct(&request, &schema, &metrics, &context)
                        .await?;
                    Ok(Box::pin(RecordBatchStreamAdapter::new(
                        schema,
                        futures::stream::iter(batches.into_iter().map(Ok)),
                    )) as SendableRecordBatchStream)
                }
                _ => Ok(Box::pin(RecordBatchStreamAdapter::new(
                    schema,
                    futures::stream::empty(),
                )) as SendableRecordBatchStream),
            }
        })
        .try_flatten();
        // Entered per poll, wherever DataFusion polls the partition (often a task it spawned).
        let mut rows = rows.boxed();
        let rows = futures::stream::poll_fn(move |cx| trace.enter(|| rows.poll_next_unpin(cx)));
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            rows,
        )))
    }

    /// Pruning's counts, and the Parquet scan's metrics (bytes scanned, row groups and pages
    /// pruned) once it has run.
    fn metrics(&self) -> Option<MetricsSet> {
        let mut set = self.metrics.clone_inner();
        let parquet = self
            .opened()
            .and_then(|o| o.input.as_ref())
            .and_then(|input| input.metrics());
        for metric in parquet.iter().flat_map(|m| m.iter()) {
            set.push(metric.clone());
        }
        for (name, value) in [
            ("requests", self.trace.requests()),
            ("sequential_requests", self.trace.sequential_requests()),
        ] {
            let count = Count::new();
            count.add(value as usize);
            set.push(Arc::new(Metric::new(
                MetricValue::Count {
                    name: name.into(),
                    count,
                },
                None,
            )));
        }
        Some(set)
    }
}
