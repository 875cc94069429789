//! `sieve-bench filters --rows N`: loads the same t10b once per filter kind (identical data: the
//! loader seeds c2 by block), then measures, per kind, what the index costs (bytes, bits per key,
//! false-positive rate probed directly) and what it buys (blocks read and latency of point queries
//! on c2 for present and absent keys, warm and cold cache), against plain DataFusion over the same
//! Parquet files (ListingTable, with and without Parquet's own bloom filters) in the same run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crate::{
    LoadRequest, cores, false_positives, listing_baseline, load_with_progress, locator_false_reads,
    parse_count, text_rows,
};
use clap::Args;
use datafusion::arrow::datatypes::Schema;
use datafusion::execution::context::SessionContext;
use datafusion::physical_expr_common::metrics::MetricValue;
use datafusion::physical_plan::{ExecutionPlan, collect};
use sieve_engine::Engine;

use super::Location;
use super::chart;
use super::report::{Report, SystemRow};
use super::timing::{Sample, Summary};

#[derive(Args)]
pub struct FiltersArgs {
    /// Rows of t10b to load per filter kind (10M, 100M, 1B, …)
    #[arg(long, value_parser = parse_count, default_value = "10M")]
    rows: u64,
    /// Rows per block
    #[arg(long, value_parser = parse_count, default_value = "1M")]
    block_rows: u64,
    /// Point queries per case (present/absent key × warm/cold cache)
    #[arg(long, default_value_t = 50)]
    queries: usize,
    /// Absent keys probed against every block's filter to measure the false-positive rate
    #[arg(long, default_value_t = 100_000)]
    probe_keys: usize,
    /// Filter kinds to compare (`none`, the baseline for the others, is always loaded)
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "xor8,xor16,binary_fuse8,binary_fuse16,cuckoo,bloom"
    )]
    kinds: Vec<String>,
    /// Database holding the tables (t_<kind>); tables already loaded are reused
    #[arg(long, default_value = "bench_filters")]
    database: String,
    /// Directory for filters.md, filters.csv, filters.json and filters.svg
    #[arg(long, default_value = "bench-filters")]
    out: PathBuf,
}

/// The Parquet-bloom baseline's table: no Sieve filter matters to it, only the Parquet files.
const PARQUET_BLOOM: &str = "parquet_bloom";

struct Loaded {
    filter: String,
    table: String,
    rows_per_sec: Option<f64>,
    data_bytes: u64,
    sidecar_bytes: u64,
    blocks: u64,
}

async fn load_table(engine: &Engine, args: &FiltersArgs, filter: &str) -> Result<Loaded, String> {
    let table = format!("{}.t_{filter}", args.database);
    let mut options = vec![("block_rows".to_string(), args.block_rows.to_string())];
    match filter {
        "none" => options.push(("index_columns".into(), "none".into())),
        PARQUET_BLOOM => options.push(("parquet_bloom_filters".into(), "true".into())),
        kind => options.push(("filter".into(), kind.into())),
    }
    let request = LoadRequest {
        table: table.clone(),
        rows: args.rows,
        options,
        commit_blocks: None,
    };
    eprintln!("loading {table}");
    let summary = load_with_progress(engine, &request).await?;
    Ok(Loaded {
        filter: filter.to_string(),
        table,
        rows_per_sec: (summary.rows_loaded > 0)
            .then(|| summary.rows_loaded as f64 / summary.elapsed.as_secs_f64()),
        data_bytes: summary.data_bytes,
        sidecar_bytes: summary.sidecar_bytes,
        blocks: summary.blocks_total,
    })
}

/// Text keys shaped like c2's values (and inside every block's min/max, so only filters can rule
/// them out); a clash with one of N random doubles has odds around N / 10^17.
fn absent_keys(count: usize) -> Vec<String> {
    (0..count as u64)
        .map(|i| {
            let mixed = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
            format!("0.{:017}", mixed % 100_000_000_000_000_000)
        })
        .collect()
}

/// Runs every case for one system, checking each answer: one row for a present key, none for an
/// absent one.
async fn measure(
    name: &str,
    keys: &Keys,
    table: &str,
    mut query: impl AsyncFnMut(bool, String) -> Result<Sample, String>,
) -> Result<[Summary; 4], String> {
    let sql = |key: &str| format!("select c1, c2 from {table} where c2 = '{key}'");
    // Fills the warm cache: any c2 query fetches every block's sidecar and the block list.
    query(false, sql(&keys.present[0])).await?;
    let mut summaries = Vec::new();
    for (cold, keys, expected) in [
        (false, &keys.present, 1),
        (true, &keys.present, 1),
        (false, &keys.absent, 0),
        (true, &keys.absent, 0),
    ] {
        let mut samples = Vec::new();
        for key in keys {
            let sample = query(cold, sql(key)).await?;
            if sample.rows != expected {
                return Err(format!(
                    "{name}: {} returned {} rows, expected {expected}",
                    sql(key),
                    sample.rows
                ));
            }
            samples.push(sample);
        }
        summaries.push(Summary::of(&samples));
    }
    Ok([summaries[0], summaries[1], summaries[2], summaries[3]])
}

/// Row groups DataFusion skipped, by file statistics, row-group statistics or bloom filters.
fn row_groups_pruned(plan: &Arc<dyn ExecutionPlan>) -> u64 {
    let own: u64 = plan
        .metrics()
        .iter()
        .flat_map(|set| set.iter().cloned().collect::<Vec<_>>())
        .filter_map(|metric| match metric.value() {
            MetricValue::PruningMetrics {
                name,
                pruning_metrics,
            } if name.starts_with("row_groups_pruned")
                || name.starts_with("files_ranges_pruned") =>
            {
                Some(pruning_metrics.pruned() as u64)
            }
            _ => None,
        })
        .sum();
    own + plan
        .children()
        .into_iter()
        .map(row_groups_pruned)
        .sum::<u64>()
}

async fn listing_sample(ctx: &SessionContext, sql: &str, blocks: u64) -> Result<Sample, String> {
    let started = Instant::now();
    let plan = ctx
        .sql(sql)
        .await
        .map_err(|e| e.to_string())?
        .create_physical_plan()
        .await
        .map_err(|e| e.to_string())?;
    let batches = collect(plan.clone(), ctx.task_ctx())
        .await
        .map_err(|e| e.to_string())?;
    Ok(Sample {
        elapsed: started.elapsed(),
        rows: batches.iter().map(|b| b.num_rows()).sum(),
        blocks_read: blocks.saturating_sub(row_groups_pruned(&plan)),
    })
}

/// The keys every system is asked for.
struct Keys {
    present: Vec<String>,
    absent: Vec<String>,
}

/// Present keys spread over the table, looked up by c1 (the data is the same in every table).
async fn present_keys(
    engine: &Engine,
    args: &FiltersArgs,
    table: &str,
) -> Result<Vec<String>, String> {
    let step = (args.rows / args.queries as u64).max(1);
    let ids: Vec<String> = (0..args.queries as u64)
        .map(|i| ((i * step + step / 2).min(args.rows - 1)).to_string())
        .collect();
    let rows = text_rows(
        engine,
        &format!("select c2 from {table} where c1 in ({})", ids.join(",")),
    )
    .await?;
    Ok(rows.into_iter().map(|mut row| row.remove(0)).collect())
}

/// Which of a Sieve table's indexes a row of the report measures.
#[derive(Clone, Copy, PartialEq)]
enum SieveIndex {
    /// The per-block sidecars of the table's filter kind (`sieve.locator` off).
    Sidecars,
    /// The locator groups, with the sidecars as their fallback.
    Locator,
}

/// One Sieve table: its index as `sieve_index_stats` counts it, the false-positive rate over
/// `probes` (per block for sidecars, per group for the locator), and its point queries through
/// Sieve's engine (cold: a fresh engine per query).
async fn measure_sieve(
    engine: &Engine,
    storage: &Location,
    args: &FiltersArgs,
    table: &Loaded,
    index: SieveIndex,
    keys: &Keys,
    probes: &[String],
) -> Result<SystemRow, String> {
    let (filter, kinds) = match index {
        // The keys the filters hold: a column holding every integer of its block's range (c1,
        // the row number) has none (kind `minmax`).
        SieveIndex::Sidecars => (table.filter.clone(), "kind not in ('locator', 'minmax')"),
        SieveIndex::Locator => ("locator".to_string(), "kind = 'locator'"),
    };
    let name = format!("sieve {filter}");
    eprintln!("measuring {name}");
    let stats = text_rows(
        engine,
        &format!(
            "select sum(bytes), sum(keys) from sieve_index_stats('{}') where {kinds}",
            table.table
        ),
    )
    .await?;
    let number = |s: &str| s.parse::<u64>().unwrap_or(0);
    let (index_bytes, index_keys) = (number(&stats[0][0]), number(&stats[0][1]));
    let fp = match index {
        SieveIndex::Sidecars => false_positives(engine, &table.table, "c2", probes).await,
        SieveIndex::Locator => locator_false_reads(engine, &table.table, "c2", probes).await,
    }
    .map_err(|e| e.to_string())?;
    let locator = index == SieveIndex::Locator;
    let [present_warm, present_cold, absent_warm, absent_cold] =
        measure(&name, keys, &table.table, async |cold, sql| {
            let engine = match cold {
                true => storage.engine().await?,
                false => engine.clone(),
            };
            let session = engine.session().map_err(|e| e.to_string())?;
            session
                .execute(&format!("set sieve.locator = {locator}"))
                .await
                .map_err(|e| e.to_string())?;
            let started = Instant::now();
            let out = session.execute(&sql).await.map_err(|e| e.to_string())?;
            Ok(Sample {
                elapsed: started.elapsed(),
                rows: out.row_count(),
                blocks_read: out.stats.blocks_read,
            })
        })
        .await?;
    Ok(SystemRow {
        engine: "sieve",
        filter,
        table: table.table.clone(),
        rows: args.rows,
        blocks: table.blocks,
        data_bytes: table.data_bytes,
        sidecar_bytes: table.sidecar_bytes,
        index_bytes,
        index_keys,
        bits_per_key: (index_keys > 0).then(|| index_bytes as f64 * 8.0 / index_keys as f64),
        false_positive_rate: fp.rate(),
        false_positive_probes: fp.probes,
        load_rows_per_sec: table.rows_per_sec,
        present_warm,
        present_cold,
        absent_warm,
        absent_cold,
    })
}

/// Plain DataFusion (a ListingTable) over one table's Parquet files; cold: a fresh context per
/// query. Its index is what Parquet's bloom filters add to the files of the unindexed table
/// (`none`), counted against the same distinct keys as Sieve's.
async fn measure_listing(
    engine: &Engine,
    storage: &Location,
    args: &FiltersArgs,
    table: &Loaded,
    keys: &Keys,
    none: &Loaded,
    index_keys: u64,
) -> Result<SystemRow, String> {
    let name = format!("datafusion {}", table.filter);
    eprintln!("measuring {name}");
    let bare = table
        .table
        .split_once('.')
        .map_or(table.table.as_str(), |(_, t)| t);
    let warm = listing_baseline(engine, &table.table)
        .await
        .map_err(|e| e.to_string())?;
    let [present_warm, present_cold, absent_warm, absent_cold] =
        measure(&name, keys, bare, async |cold, sql| {
            let ctx = match cold {
                true => listing_baseline(&storage.engine().await?, &table.table)
                    .await
                    .map_err(|e| e.to_string())?,
                false => warm.clone(),
            };
            listing_sample(&ctx, &sql, table.blocks).await
        })
        .await?;
    let bloom_bytes = table.data_bytes.saturating_sub(none.data_bytes);
    Ok(SystemRow {
        engine: "datafusion",
        filter: table.filter.clone(),
        table: table.table.clone(),
        rows: args.rows,
        blocks: table.blocks,
        data_bytes: table.data_bytes,
        sidecar_bytes: 0,
        index_bytes: bloom_bytes,
        index_keys,
        bits_per_key: (table.filter == PARQUET_BLOOM && index_keys > 0)
            .then(|| bloom_bytes as f64 * 8.0 / index_keys as f64),
        false_positive_rate: None,
        false_positive_probes: 0,
        load_rows_per_sec: table.rows_per_sec,
        present_warm,
        present_cold,
        absent_warm,
        absent_cold,
    })
}

pub async fn filters(storage: &Location, args: FiltersArgs) -> Result<(), String> {
    if storage.is_memory() {
        return Err("bench filters needs storage that outlives one engine (a directory or s3://…): cold-cache queries open it afresh".into());
    }
    if args.queries == 0 || args.rows == 0 {
        return Err("--rows and --queries must be positive".into());
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    let engine = storage.engine().await?;
    text_rows(
        &engine,
        &format!("create database if not exists {}", args.database),
    )
    .await?;

    let mut loaded = Vec::new();
    for filter in args
        .kinds
        .iter()
        .map(String::as_str)
        .chain(["none", PARQUET_BLOOM])
    {
        if !loaded.iter().any(|l: &Loaded| l.filter == filter) {
            loaded.push(load_table(&engine, &args, filter).await?);
        }
    }
    let keys = Keys {
        present: present_keys(&engine, &args, &loaded[0].table).await?,
        absent: absent_keys(args.queries),
    };
    let probes = absent_keys(args.queries + args.probe_keys).split_off(args.queries);

    let find = |filter: &str| {
        loaded
            .iter()
            .find(|l| l.filter == filter)
            .expect("always loaded")
    };
    let mut systems = Vec::new();
    for table in loaded.iter().filter(|l| l.filter != PARQUET_BLOOM) {
        let sidecars = SieveIndex::Sidecars;
        systems
            .push(measure_sieve(&engine, storage, &args, table, sidecars, &keys, &probes).await?);
    }
    // The locator of the default kind's table (any indexed table has the same locator).
    let default_kind = sieve_storage::TableOptions::defaults_for(&Schema::empty())
        .filter
        .to_string();
    if let Some(table) = loaded
        .iter()
        .find(|l| l.filter == default_kind)
        .or(loaded.first())
    {
        let row = measure_sieve(
            &engine,
            storage,
            &args,
            table,
            SieveIndex::Locator,
            &keys,
            &probes,
        );
        systems.push(row.await?);
    }
    // Distinct keys per block over c1 and c2, as the Sieve tables count them: Parquet's bloom
    // filters cover both columns.
    let index_keys = match systems.first() {
        Some(first) => {
            let sql = format!(
                "select sum(keys) from sieve_index_stats('{}') where kind <> 'locator'",
                first.table
            );
            let keys = text_rows(&engine, &sql).await?;
            keys[0][0].parse::<u64>().unwrap_or(0)
        }
        None => 0,
    };
    for filter in ["none", PARQUET_BLOOM] {
        let row = measure_listing(
            &engine,
            storage,
            &args,
            find(filter),
            &keys,
            find("none"),
            index_keys,
        )
        .await?;
        systems.push(row);
    }

    let report = Report {
        storage: storage.to_string(),
        rows: args.rows,
        block_rows: args.block_rows,
        queries: args.queries,
        cores: cores(),
        systems,
    };
    println!("{}", report.markdown());
    report.write(&args.out)?;
    chart::write_svg(&report, &args.out.join("filters.svg"))?;
    println!(
        "wrote filters.md, filters.csv, filters.json and filters.svg to {}",
        args.out.display()
    );
    Ok(())
}
