//! `sieve`: point queries over huge tables on object storage, from a MySQL client or a shell.

mod config;
mod heap_trim;
mod load;
mod location;
mod metrics_http;
mod remote;
mod render;
mod serve;
mod shell;
mod tls_certs;
mod worker;

use clap::{Parser, Subcommand};
use sieve_engine::{
    Cluster, ClusterSecret, ClusterSettings, DEFAULT_ROUTING_BYTES, QUERY_THREAD_STACK, WorkerTls,
};
use sieve_storage::{
    DEFAULT_DATA_CACHE_BYTES, DEFAULT_MERGE_IO_MIB_PER_S, DEFAULT_SIDECAR_CACHE_BYTES,
};

/// GiB a disk cache holds unless told otherwise.
const DEFAULT_DISK_CACHE_GIB: u64 = 10;
use tokio::runtime::Handle;

use crate::config::ConfigFile;
use crate::location::Location;

const DEFAULT_STORAGE: &str = "./sieve-data";

#[derive(Parser)]
#[command(name = "sieve", version, about = "Point queries over huge tables on object storage", long_about = None)]
struct Cli {
    /// Where tables live: a directory (the embedded default, ./sieve-data), file:///path,
    /// s3://bucket/prefix (configured by AWS_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
    /// AWS_REGION, AWS_ALLOW_HTTP) or memory://
    #[arg(long, global = true, env = "SIEVE_STORAGE")]
    storage: Option<String>,

    /// MiB of opened sidecar entries a process keeps (default 256): enough for every block's
    /// entry keeps point queries on unsorted columns warm
    #[arg(long, global = true, env = "SIEVE_SIDECAR_CACHE_MIB")]
    sidecar_cache_mib: Option<u64>,

    /// MiB of blocks' bytes (verified pages) a process keeps (default 256; 0 keeps none): the
    /// pages hot lookups read come from memory
    #[arg(long, global = true, env = "SIEVE_DATA_CACHE_MIB")]
    data_cache_mib: Option<u64>,

    /// Also keep verified blocks' bytes in files under this directory, which a restarted
    /// process reads again (default: none)
    #[arg(long, global = true, env = "SIEVE_DISK_CACHE")]
    disk_cache: Option<std::path::PathBuf>,

    /// GiB the disk cache may hold (default 10)
    #[arg(long, global = true, env = "SIEVE_DISK_CACHE_GIB")]
    disk_cache_gib: Option<u64>,

    /// MiB per second the background merges of locator groups may read and write together
    /// (default 256; 0: unbounded)
    #[arg(long, global = true, env = "SIEVE_MERGE_IO_MIB_PER_S")]
    merge_io_mib_per_s: Option<u64>,

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
    /// A stateless worker: runs the scans `sieve serve --workers …` sends it, over the same
    /// --storage
    Worker(worker::WorkerArgs),
    /// Make a CA and a certificate it signs for NAMES (workers' TLS, where no other CA is at hand)
    TlsCerts(tls_certs::TlsCertsArgs),
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    // Two runtimes, as DataFusion recommends: statements run on `queries` (its threads have
    // stacks sized for the deepest statement the engine accepts, see
    // sieve_engine::MAX_OPERATORS); clients, storage I/O and statement deadlines on `main`, so
    // a statement that keeps every query thread busy neither stalls other clients nor outlives
    // its deadline. `queries` has four threads a core: a nested loop join keeps its thread for
    // as long as one probe batch takes (seconds, minutes), and a statement runs a task per core,
    // so with a thread per core two such statements would hold every thread and the next
    // client's `select 1` would wait for them; with more threads than cores the kernel shares
    // the cores between them and the newcomer.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runtime = |name: &str, threads: usize| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .worker_threads(threads)
            .thread_name(name)
            .thread_stack_size(QUERY_THREAD_STACK)
            .build()
            .expect("the tokio runtime starts")
    };
    let (main, queries) = (
        runtime("sieve-io", cores),
        runtime("sieve-query", 4 * cores),
    );
    let executor = queries.handle().clone();
    if let Err(e) = heap_trim::spawn() {
        log::warn!("freed memory will not be returned to the system: {e}");
    }
    // The main future (the shell parses its statements there) gets a thread of the same size.
    let result = std::thread::Builder::new()
        .name("sieve-main".into())
        .stack_size(QUERY_THREAD_STACK)
        .spawn(move || main.block_on(run(cli, executor)))
        .expect("the main thread starts")
        .join()
        .unwrap_or_else(|_| Err("internal error: the main thread panicked".into()));
    // A statement abandoned at its deadline may still be computing: do not wait for it.
    queries.shutdown_background();
    if let Err(message) = result {
        eprintln!("sieve: {message}");
        std::process::exit(1);
    }
}

async fn run(cli: Cli, executor: Handle) -> Result<(), String> {
    let config = ConfigFile::load(cli.config.as_deref())?;
    let storage = Location {
        url: cli
            .storage
            .or(config.storage.clone())
            .unwrap_or_else(|| DEFAULT_STORAGE.to_string()),
        sidecar_cache_mib: cli
            .sidecar_cache_mib
            .or(config.sidecar_cache_mib)
            .unwrap_or(DEFAULT_SIDECAR_CACHE_BYTES >> 20),
        data_cache_mib: cli
            .data_cache_mib
            .or(config.data_cache_mib)
            .unwrap_or(DEFAULT_DATA_CACHE_BYTES >> 20),
        disk_cache: cli.disk_cache.or(config.disk_cache.clone()).map(|dir| {
            let gib = cli
                .disk_cache_gib
                .or(config.disk_cache_gib)
                .unwrap_or(DEFAULT_DISK_CACHE_GIB);
            (dir, gib << 30)
        }),
        merge_io_mib_per_s: cli
            .merge_io_mib_per_s
            .or(config.merge_io_mib_per_s)
            .unwrap_or(DEFAULT_MERGE_IO_MIB_PER_S),
        external_locations: config.external_locations.clone().unwrap_or_default(),
        iceberg_catalogs: config.iceberg_catalogs.clone().unwrap_or_default(),
    };
    match cli.command {
        Command::Serve(args) => {
            let mut engine = storage
                .engine()
                .await?
                .with_memory_limits(config.memory_limits())
                .and_then(|e| e.with_spill(&config.spill_settings()))
                .map_err(|e| e.to_string())?
                .with_session_defaults(config.session_defaults())
                .with_query_log(config.query_log()?)
                .with_executor(executor)
                .with_routing_budget(
                    args.node_filter_mib
                        .or(config.node_filter_mib)
                        .map_or(DEFAULT_ROUTING_BYTES, |mib| mib << 20),
                );
            let workers = match &args.workers {
                w if !w.is_empty() => w.clone(),
                _ => config.workers.clone().unwrap_or_default(),
            };
            if !workers.is_empty() {
                let settings = ClusterSettings {
                    secret: cluster_secret(args.cluster_secret.as_ref(), &config)?,
                    tls: worker_tls(&args, &config)?,
                };
                let cluster = Cluster::start(&workers, settings)
                    .await
                    .map_err(|e| e.to_string())?;
                log::info!(
                    "scans run on {} of {} workers",
                    cluster.live().len(),
                    workers.len()
                );
                engine = engine.with_cluster(cluster);
            }
            serve::serve(engine, args, config).await
        }
        Command::Sql(args) => shell::run(&storage, args, executor).await,
        Command::Load(args) => load::run(&storage, args).await,
        Command::Worker(args) => worker::run(&storage, args, &config).await,
        Command::TlsCerts(args) => tls_certs::run(args),
    }
}

/// What a coordinator trusts and presents on its links to `https://` workers.
fn worker_tls(args: &serve::ServeArgs, config: &ConfigFile) -> Result<Option<WorkerTls>, String> {
    let identity = match (
        config.worker_tls_client_cert.clone(),
        config.worker_tls_client_key.clone(),
    ) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => return Err("worker_tls_client_cert and worker_tls_client_key go together".into()),
    };
    let ca = args.worker_tls_ca.clone().or(config.worker_tls_ca.clone());
    match ca {
        Some(ca) => Ok(Some(WorkerTls { ca, identity })),
        None if identity.is_some() => {
            Err("worker_tls_client_cert needs worker_tls_ca, to verify the workers".into())
        }
        None => Ok(None),
    }
}

/// The cluster secret of `sieve serve` and `sieve worker`: the flag or environment, else the
/// config file's.
pub(crate) fn cluster_secret(
    flag: Option<&String>,
    config: &ConfigFile,
) -> Result<Option<ClusterSecret>, String> {
    flag.or(config.cluster_secret.as_ref())
        .map(|text| ClusterSecret::new(text).map_err(|e| e.to_string()))
        .transpose()
}
