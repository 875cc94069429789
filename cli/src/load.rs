//! `sieve load t10b --rows N`: loads Databend's synthetic table with a progress bar (rows/s, ETA)
//! and a summary; run again after any interruption to finish the load (see `sieve_workload::load_synthetic`).

use crate::location::Location;

use clap::Args;
use indicatif::{HumanBytes, HumanCount};
use sieve_engine::rate;
use sieve_workload::{LoadRequest, cores, load_with_progress, parse_count, text_rows};

#[derive(Args)]
pub struct LoadArgs {
    /// The table to create or finish, `name` or `database.name`
    #[arg(default_value = "t10b")]
    table: String,
    /// Rows the table holds when done: c1 = 0..N, c2 = text of a random double
    #[arg(long, value_parser = parse_count)]
    rows: u64,
    /// Filter kind for a new table: xor8, xor16, binary_fuse8 (default), binary_fuse16, cuckoo,
    /// cuckoo16, bloom
    #[arg(long)]
    filter: Option<String>,
    /// Indexed columns of a new table, comma-separated, or `none` (default: c1,c2)
    #[arg(long)]
    index_columns: Option<String>,
    /// Rows per block of a new table (default 1000000)
    #[arg(long, value_parser = parse_count)]
    block_rows: Option<u64>,
    /// Rows per locator group a new table's writes build (default 128M; merges join smaller
    /// ones in the background as the load commits)
    #[arg(long, value_parser = parse_count)]
    locator_group_rows: Option<u64>,
    /// Also write Parquet's own bloom filters for the indexed columns
    #[arg(long)]
    parquet_bloom_filters: bool,
    /// Commit every this many blocks (default: every two locator groups, 256 blocks of 1M rows);
    /// an interrupted load loses at most one batch of work
    #[arg(long)]
    commit_blocks: Option<usize>,
    /// Afterwards, check count(*) and count(distinct c1) against --rows (memory grows with rows)
    #[arg(long)]
    verify: bool,
}

impl LoadArgs {
    pub fn request(&self) -> LoadRequest {
        let mut options = Vec::new();
        if let Some(filter) = &self.filter {
            options.push(("filter".to_string(), filter.clone()));
        }
        if let Some(columns) = &self.index_columns {
            options.push(("index_columns".to_string(), columns.clone()));
        }
        if let Some(rows) = self.block_rows {
            options.push(("block_rows".to_string(), rows.to_string()));
        }
        if let Some(rows) = self.locator_group_rows {
            options.push(("locator_group_rows".to_string(), rows.to_string()));
        }
        if self.parquet_bloom_filters {
            options.push(("parquet_bloom_filters".to_string(), "true".to_string()));
        }
        LoadRequest {
            table: self.table.clone(),
            rows: self.rows,
            options,
            commit_blocks: self.commit_blocks,
        }
    }
}

pub async fn run(storage: &Location, args: LoadArgs) -> Result<(), String> {
    let engine = storage.engine().await?;
    let summary = load_with_progress(&engine, &args.request()).await?;
    let secs = summary.elapsed.as_secs_f64();
    let per_second = rate(summary.rows_loaded, summary.elapsed);
    println!(
        "loaded {} rows into {} in {secs:.1} s: {} rows/s, {} rows/s per core ({} cores), {} commits{}",
        HumanCount(summary.rows_loaded),
        summary.table,
        HumanCount(per_second as u64),
        HumanCount((per_second / cores() as f64) as u64),
        cores(),
        summary.commits,
        if summary.rows_before > 0 {
            format!(
                " (resumed after {} committed rows)",
                HumanCount(summary.rows_before)
            )
        } else {
            String::new()
        }
    );
    println!(
        "{}: {} rows in {} blocks · data {} · sidecars {} · locators built in {:.1} s of thread time",
        summary.table,
        HumanCount(summary.rows_total),
        summary.blocks_total,
        HumanBytes(summary.data_bytes),
        HumanBytes(summary.sidecar_bytes),
        summary.locator_build.as_secs_f64()
    );
    // The commits asked for locator group merges as they landed; the load ends once they have.
    let merging = std::time::Instant::now();
    engine.merges_settled().await;
    println!(
        "locator groups merged as the load committed; waited {:.1} s after its last commit",
        merging.elapsed().as_secs_f64()
    );
    let stats = text_rows(
        &engine,
        &format!(
            "select column_name, kind, blocks, keys, bytes, round(bits_per_key, 2), groups \
             from sieve_index_stats('{}')",
            summary.table
        ),
    )
    .await?;
    for row in stats {
        println!(
            "  index {} {}: {} blocks, {} keys, {}, {} bits/key{}",
            row[0],
            row[1],
            row[2],
            row[3],
            HumanBytes(row[4].parse().unwrap_or(0)),
            row[5],
            match row[6].as_str() {
                "" | "NULL" | "0" => String::new(),
                groups => format!(", {groups} groups"),
            }
        );
    }
    if args.verify {
        let counts = text_rows(
            &engine,
            &format!("select count(*), count(distinct c1) from {}", summary.table),
        )
        .await?
        .remove(0);
        let want = args.rows.to_string();
        if counts != [want.clone(), want] {
            return Err(format!(
                "verification failed: count(*) = {}, count(distinct c1) = {}, expected {}",
                counts[0], counts[1], args.rows
            ));
        }
        println!("verified: count(*) = count(distinct c1) = {}", args.rows);
    }
    Ok(())
}
