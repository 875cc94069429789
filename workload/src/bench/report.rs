//! The filter comparison's results: one row per system (a Sieve table per filter kind, and plain
//! DataFusion over the same Parquet), written as a Markdown table, CSV and JSON.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::timing::Summary;

#[derive(Debug, Clone, Serialize)]
pub struct SystemRow {
    /// `sieve` or `datafusion`.
    pub engine: &'static str,
    /// The filter kind (`none` for no sidecar filter, `parquet_bloom` for Parquet's own).
    pub filter: String,
    pub table: String,
    pub rows: u64,
    pub blocks: u64,
    pub data_bytes: u64,
    /// Sidecar files over all blocks: the filter payloads plus their headers.
    pub sidecar_bytes: u64,
    /// Filter payloads over all blocks and index columns (for Parquet bloom: the bytes they add).
    pub index_bytes: u64,
    /// Distinct keys per block, summed over blocks and index columns.
    pub index_keys: u64,
    pub bits_per_key: Option<f64>,
    /// Absent c2 keys probed against every block's c2 filter: hits / probes.
    pub false_positive_rate: Option<f64>,
    pub false_positive_probes: u64,
    /// Rows/s of the load that wrote the table in this run (None if it was already loaded).
    pub load_rows_per_sec: Option<f64>,
    pub present_warm: Summary,
    pub present_cold: Summary,
    pub absent_warm: Summary,
    pub absent_cold: Summary,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub storage: String,
    pub rows: u64,
    pub block_rows: u64,
    pub queries: usize,
    pub cores: usize,
    pub systems: Vec<SystemRow>,
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or("–".into(), |v| format!("{v:.digits$}"))
}

fn mib(bytes: u64) -> String {
    format!("{:.2}", bytes as f64 / (1 << 20) as f64)
}

impl Report {
    pub fn markdown(&self) -> String {
        let mut md = format!(
            "Point queries on c2 of t10b, {} rows in blocks of {}, storage {}, {} queries per cell, {} cores; latency median / p95 in ms, blocks read median (max)\n\n",
            self.rows, self.block_rows, self.storage, self.queries, self.cores
        );
        md.push_str("| engine | filter | index MiB | bits/key | FPR % | present warm | present cold | absent warm | absent cold | blocks read present | blocks read absent | load rows/s |\n");
        md.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for s in &self.systems {
            let lat = |x: &Summary| format!("{:.1} / {:.1}", x.median_ms, x.p95_ms);
            let blocks = |x: &Summary| {
                format!(
                    "{} ({}) of {}",
                    x.blocks_read_median, x.blocks_read_max, s.blocks
                )
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                s.engine,
                s.filter,
                mib(s.index_bytes),
                opt(s.bits_per_key, 2),
                opt(s.false_positive_rate.map(|r| r * 100.0), 4),
                lat(&s.present_warm),
                lat(&s.present_cold),
                lat(&s.absent_warm),
                lat(&s.absent_cold),
                blocks(&s.present_warm),
                blocks(&s.absent_warm),
                opt(s.load_rows_per_sec, 0),
            );
        }
        md
    }

    fn csv(&self) -> Result<Vec<u8>, String> {
        let mut out = csv::Writer::from_writer(Vec::new());
        out.write_record([
            "engine",
            "filter",
            "table",
            "rows",
            "blocks",
            "data_bytes",
            "sidecar_bytes",
            "index_bytes",
            "index_keys",
            "bits_per_key",
            "false_positive_rate",
            "false_positive_probes",
            "load_rows_per_sec",
            "case",
            "median_ms",
            "p95_ms",
            "blocks_read_median",
            "blocks_read_max",
            "queries",
        ])
        .map_err(|e| e.to_string())?;
        let num = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
        for s in &self.systems {
            for (case, x) in [
                ("present_warm", &s.present_warm),
                ("present_cold", &s.present_cold),
                ("absent_warm", &s.absent_warm),
                ("absent_cold", &s.absent_cold),
            ] {
                out.write_record([
                    s.engine.to_string(),
                    s.filter.clone(),
                    s.table.clone(),
                    s.rows.to_string(),
                    s.blocks.to_string(),
                    s.data_bytes.to_string(),
                    s.sidecar_bytes.to_string(),
                    s.index_bytes.to_string(),
                    s.index_keys.to_string(),
                    num(s.bits_per_key),
                    num(s.false_positive_rate),
                    s.false_positive_probes.to_string(),
                    num(s.load_rows_per_sec),
                    case.to_string(),
                    x.median_ms.to_string(),
                    x.p95_ms.to_string(),
                    x.blocks_read_median.to_string(),
                    x.blocks_read_max.to_string(),
                    x.queries.to_string(),
                ])
                .map_err(|e| e.to_string())?;
            }
        }
        out.into_inner().map_err(|e| e.to_string())
    }

    /// Writes filters.md, filters.csv (one line per system and case) and filters.json into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        let write = |name: &str, bytes: &[u8]| {
            std::fs::write(dir.join(name), bytes)
                .map_err(|e| format!("cannot write {}: {e}", dir.join(name).display()))
        };
        write("filters.md", self.markdown().as_bytes())?;
        let json = serde_json::to_vec_pretty(self).map_err(|e| e.to_string())?;
        write("filters.json", &json)?;
        write("filters.csv", &self.csv()?)
    }
}
