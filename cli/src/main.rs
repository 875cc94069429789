//! `sieve`: point queries over huge tables on object storage, from a MySQL client or a shell.

mod auth;
mod bench;
mod config;
mod load;
mod mysql_backend;
mod mysql_values;
mod progress;
mod remote;
mod render;
mod serve;
mod shell;
mod system_variables;

use clap::{Parser, Subcommand};
use sieve_engine::Engine;

use crate::config::ConfigFile;

const DEFAULT_STORAGE: &str = "./sieve-data";

#[derive(Parser)]
#[command(name = "sieve", version, about = "Point queries over huge tables on object storage", long_about = None)]
struct Cli {
    /// Where tables live: a directory (the embedded default, ./sieve-data), file:///path,
    /// s3://bucket/prefix (configured by AWS_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
    /// AWS_REGION, AWS_ALLOW_HTTP) or memory://
    #[arg(long, global = true, env = "SIEVE_STORAGE")]
    storage: Option<String>,

    /// A TOML file with storage, host, port, user and password; flags and environment win
    #[arg(long, global = true, env = "SIEVE_CONFIG")]
    config: Option<std::path::PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the MySQL wire protocol (connect with `mysql -h127.0.0.1 -P3307 -uroot`)
    Serve(serve::ServeArgs),
    /// Run SQL: an interactive shell, `-e "…"`, or a script on standard input
    Sql(shell::SqlArgs),
    /// Load (or finish loading) Databend's synthetic table t10b: c1 = 0..N, c2 = a random double
    /// as text. Resumable: after an interruption, the same command continues from the last commit
    Load(load::LoadArgs),
    /// Benchmarks: `sieve bench filters --rows 10M` compares filter kinds
    Bench(bench::BenchArgs),
}

#[tokio::main]
async fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    let result = async {
        let config = ConfigFile::load(cli.config.as_deref())?;
        let storage = cli
            .storage
            .or(config.storage.clone())
            .unwrap_or_else(|| DEFAULT_STORAGE.to_string());
        match cli.command {
            Command::Serve(args) => {
                let engine = Engine::open(&storage).await.map_err(|e| e.to_string())?;
                serve::serve(engine, args, config).await
            }
            Command::Sql(args) => shell::run(&storage, args).await,
            Command::Load(args) => load::run(&storage, args).await,
            Command::Bench(args) => bench::run(&storage, args).await,
        }
    }
    .await;
    if let Err(message) = result {
        eprintln!("sieve: {message}");
        std::process::exit(1);
    }
}
