//! `sieve-bench`: measurements of Sieve against the alternatives on t10b, a binary of its own
//! beside `sieve` rather than a command inside it (`cargo run --release -p sieve-cli --bin
//! sieve-bench -- filters --rows 10M`). The binary is the cli package's, so that it is built with
//! the same dependency features as `sieve` and one release build serves both.

mod chart;
mod filters;
mod report;
mod timing;

use std::fmt;

use clap::{Parser, Subcommand};
use sieve_engine::Engine;
use sieve_storage::{DEFAULT_DATA_CACHE_BYTES, DEFAULT_SIDECAR_CACHE_BYTES, Storage};

#[derive(Parser)]
#[command(name = "sieve-bench", version, about = "Sieve's benchmarks on t10b", long_about = None)]
struct Cli {
    /// Where the benchmark's tables live: a directory or s3://bucket/prefix (configured by
    /// AWS_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ALLOW_HTTP)
    #[arg(long, env = "SIEVE_STORAGE", default_value = "./sieve-data")]
    storage: String,

    /// MiB of opened sidecar entries a process keeps (default 256): "warm" only means warm for
    /// every filter kind when all of a table's sidecars fit
    #[arg(long, env = "SIEVE_SIDECAR_CACHE_MIB")]
    sidecar_cache_mib: Option<u64>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compare filter kinds on t10b: index size, false-positive rate, blocks read and point-query
    /// latency, against plain DataFusion over the same Parquet files
    Filters(filters::FiltersArgs),
}

/// Where the benchmark's tables live; cold-cache queries open it again with a fresh engine.
struct Location {
    url: String,
    sidecar_cache_bytes: u64,
}

impl Location {
    async fn engine(&self) -> Result<Engine, String> {
        let storage = Storage::open(&self.url)
            .map_err(|e| e.to_string())?
            .with_caches(self.sidecar_cache_bytes, DEFAULT_DATA_CACHE_BYTES);
        Engine::with_storage(storage)
            .await
            .map_err(|e| e.to_string())
    }

    fn is_memory(&self) -> bool {
        self.url.starts_with("memory:")
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

/// The `sieve-bench` binary's main.
#[tokio::main]
pub async fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    let location = Location {
        url: cli.storage,
        sidecar_cache_bytes: cli
            .sidecar_cache_mib
            .map_or(DEFAULT_SIDECAR_CACHE_BYTES, |mib| mib << 20),
    };
    let result = match cli.command {
        Command::Filters(args) => filters::filters(&location, args).await,
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
