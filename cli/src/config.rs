//! `--config sieve.toml`: settings a deployment keeps in a file rather than on the command line.
//! Flags and environment variables override it; it overrides the built-in defaults.
//!
//! ```toml
//! storage = "s3://bucket/sieve"
//! host = "0.0.0.0"
//! port = 3307
//! user = "root"
//! password = "change-me"
//! memory_limit_mib = 4096        # all queries together
//! query_memory_limit_mib = 1024  # one query
//! max_execution_time = 0         # ms a query may run, as MySQL's; 0 is no limit
//! max_connections = 151          # logged-in connections; more are refused with MySQL's
//!                                 # "Too many connections"
//! max_pending_logins = 512       # connections still logging in; beyond it (or the bound
//! max_pending_logins_per_address = 256 # of one address) a newer one takes the place of
//!                                 # one logging in for over 2 s, or gets "Too many connections"
//! max_allowed_packet = 16777216  # bytes of one client packet after login
//! connect_timeout = 10           # seconds a client has to log in
//! wait_timeout = 28800           # seconds a logged-in client may stay silent
//! sidecar_cache_mib = 256        # opened sidecar entries kept in memory
//! data_cache_mib = 256           # verified bytes of blocks kept in memory (0: none)
//! disk_cache = "/var/cache/sieve" # and in files there, kept across restarts (default: none)
//! disk_cache_gib = 10            # at most this much of them
//! merge_io_mib_per_s = 256       # locator group merges' reads and writes (0: unbounded)
//! spill_dir = "/var/tmp/sieve"   # where sorts and joins over their memory spill
//!                                 # (default: the system temp directory's sieve-spill)
//! spill_limit_gib = 16           # disk all statements may spill to together
//! tls = true                     # offer TLS on the MySQL port (false: never)
//! tls_cert = "server-cert.pem"   # PEM chain and key; without them the server makes a
//! tls_key = "server-key.pem"     # certificate at first start and keeps it in tls_dir
//! tls_dir = "sieve-tls"          # (with ca.pem, to verify it against; and the RSA key
//!                                 # clients without TLS encrypt their password to)
//! require_secure_transport = false  # refuse logins without TLS beyond loopback
//! default_authentication_plugin = "caching_sha2_password"  # MySQL 8's; or
//!                                 # "mysql_native_password" for clients that know no other
//! local_infile = true            # serve LOAD DATA LOCAL INFILE (default: only when listening
//!                                 # on loopback)
//! flight_port = 3308             # also serve Arrow Flight SQL there (default: not at all)
//! flight_tls = true              # Flight SQL over TLS with the MySQL port's certificate
//!                                # (default: true unless the server listens on loopback
//!                                # or tls = false)
//! metrics_port = 9104            # Prometheus metrics at http://host:9104/metrics (default: none)
//! query_log = "sieve-queries.jsonl"  # every statement as a JSON line when it ends (default: none;
//!                                 # sieve_query_log() lists the last 1000 either way)
//! long_query_time = 10           # seconds from which a statement is marked slow
//! query_log_parameters = false   # also log prepared statements' values
//! workers = ["https://10.0.0.2:7100", "https://10.0.0.3:7100"]  # sieve worker processes
//! cluster_secret = "…"           # shared by coordinators and workers; workers refuse others
//! worker_tls_ca = "ca.pem"       # coordinator: the CA its https:// workers' certificates are
//!                                 # checked against (plain http:// is for loopback only)
//! worker_tls_client_cert = "coordinator-cert.pem"  # coordinator: its own certificate and key,
//! worker_tls_client_key = "coordinator-key.pem"    # for workers that require one
//! worker_tls_cert = "worker-cert.pem"  # worker: its certificate and key (PEM), needed to
//! worker_tls_key = "worker-key.pem"    # listen beyond loopback
//! worker_tls_client_ca = "ca.pem"      # worker: require coordinators' certificates signed by it
//! node_filter_mib = 2048         # routing filters, which route lookups to locator groups and
//!                                 # a coordinator's to workers (about 2.1 GB per 1e9 keys)
//!
//! # Where COPY INTO and read_parquet() may read files (nowhere else; never the host's files). Settings left out
//! # come from the environment (AWS_ENDPOINT, AWS_ACCESS_KEY_ID, …).
//! [[external_locations]]
//! url = "s3://landing/exports"
//! endpoint = "https://s3.eu-west-1.amazonaws.com"
//! region = "eu-west-1"
//! access_key_id = "…"
//! secret_access_key = "…"
//! allow_http = false
//!
//! # Iceberg catalogs whose tables statements read as name.namespace.table (read-only). The SQL
//! # catalog is the SQLite file PyIceberg's SqlCatalog and Java's JdbcCatalog keep; a REST
//! # catalog is its http(s) base URI. Every file their tables name must lie under the
//! # warehouse. S3 settings as for external locations.
//! [[iceberg_catalogs]]
//! name = "lake"
//! uri = "sqlite:///var/lib/sieve/lake.db"
//! catalog_name = "default"       # the name its writers gave the catalog (default: name)
//! warehouse = "s3://bucket/warehouse"   # or file:///dir
//!
//! [[iceberg_catalogs]]
//! name = "polaris"
//! uri = "https://polaris.example.com/api/catalog"
//! credential = "client_id:client_secret"   # or token = "…"; scope = "PRINCIPAL_ROLE:ALL"
//! rest_warehouse = "prod"        # the warehouse the catalog is asked for (GET /v1/config)
//! warehouse = "s3://bucket/prod"
//! ```

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sieve_engine::{MemoryLimits, QueryLog, QueryLogSettings, SieveOptions, SpillSettings};
use sieve_iceberg::CatalogConfig;
use sieve_storage::ExternalLocation;

use sieve_mysql::{GuardLimits, PendingLimits};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub storage: Option<String>,
    pub host: Option<IpAddr>,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub memory_limit_mib: Option<usize>,
    pub query_memory_limit_mib: Option<usize>,
    pub max_execution_time: Option<u64>,
    pub max_connections: Option<usize>,
    pub max_pending_logins: Option<usize>,
    pub max_pending_logins_per_address: Option<usize>,
    pub max_allowed_packet: Option<usize>,
    pub connect_timeout: Option<u64>,
    pub wait_timeout: Option<u64>,
    pub sidecar_cache_mib: Option<u64>,
    pub data_cache_mib: Option<u64>,
    pub disk_cache: Option<PathBuf>,
    pub disk_cache_gib: Option<u64>,
    pub merge_io_mib_per_s: Option<u64>,
    pub spill_dir: Option<PathBuf>,
    pub spill_limit_gib: Option<u64>,
    pub tls: Option<bool>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub tls_dir: Option<PathBuf>,
    pub require_secure_transport: Option<bool>,
    pub default_authentication_plugin: Option<String>,
    pub local_infile: Option<bool>,
    pub flight_port: Option<u16>,
    pub flight_tls: Option<bool>,
    pub metrics_port: Option<u16>,
    pub query_log: Option<PathBuf>,
    pub long_query_time: Option<f64>,
    pub query_log_parameters: Option<bool>,
    pub external_locations: Option<Vec<ExternalLocation>>,
    pub iceberg_catalogs: Option<Vec<CatalogConfig>>,
    pub workers: Option<Vec<String>>,
    pub cluster_secret: Option<String>,
    pub worker_tls_ca: Option<PathBuf>,
    pub worker_tls_client_cert: Option<PathBuf>,
    pub worker_tls_client_key: Option<PathBuf>,
    pub worker_tls_cert: Option<PathBuf>,
    pub worker_tls_key: Option<PathBuf>,
    pub worker_tls_client_ca: Option<PathBuf>,
    pub node_filter_mib: Option<usize>,
}

/// What one server allows its connections, with MySQL's defaults.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub pending: PendingLimits,
    pub guard: GuardLimits,
}

impl ConfigFile {
    pub fn memory_limits(&self) -> MemoryLimits {
        let defaults = MemoryLimits::default();
        MemoryLimits {
            server: self.memory_limit_mib.map_or(defaults.server, |m| m << 20),
            query: self
                .query_memory_limit_mib
                .map_or(defaults.query, |m| m << 20),
        }
    }

    pub fn connection_limits(&self) -> ConnectionLimits {
        ConnectionLimits {
            max_connections: self.max_connections.unwrap_or(151),
            pending: PendingLimits {
                total: self
                    .max_pending_logins
                    .unwrap_or(PendingLimits::default().total),
                per_address: self
                    .max_pending_logins_per_address
                    .unwrap_or(PendingLimits::default().per_address),
            },
            guard: GuardLimits {
                max_allowed_packet: self.max_allowed_packet.unwrap_or(16 << 20),
                handshake_timeout: Duration::from_secs(self.connect_timeout.unwrap_or(10)),
                idle_timeout: Duration::from_secs(self.wait_timeout.unwrap_or(28_800)),
            },
        }
    }

    pub fn spill_settings(&self) -> SpillSettings {
        let defaults = SpillSettings::default();
        SpillSettings {
            dir: self.spill_dir.clone().unwrap_or(defaults.dir),
            limit: self.spill_limit_gib.map_or(defaults.limit, |g| g << 30),
        }
    }

    /// The query log `serve` records statements in.
    pub fn query_log(&self) -> Result<QueryLog, String> {
        let defaults = QueryLogSettings::default();
        let long_query_time = match self.long_query_time {
            None => defaults.long_query_time,
            Some(s) => Duration::try_from_secs_f64(s)
                .map_err(|_| format!("long_query_time = {s}: seconds, 0 or more"))?,
        };
        let settings = QueryLogSettings {
            path: self.query_log.clone(),
            long_query_time,
            parameters: self.query_log_parameters.unwrap_or(defaults.parameters),
        };
        QueryLog::open(settings).map_err(|e| {
            let path = self.query_log.as_deref().unwrap_or(Path::new(""));
            format!("cannot open the query log {}: {e}", path.display())
        })
    }

    /// The settings every connection starts with.
    pub fn session_defaults(&self) -> SieveOptions {
        let mut options = SieveOptions::default();
        options.max_execution_time = self.max_execution_time.unwrap_or(0);
        options
    }

    pub fn load(path: Option<&Path>) -> Result<Self, String> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.message()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects_unknown_keys() {
        let config: ConfigFile = toml::from_str("port = 4000\npassword = 'x'").unwrap();
        assert_eq!(
            (config.port, config.password.as_deref()),
            (Some(4000), Some("x"))
        );
        assert!(toml::from_str::<ConfigFile>("colour = 'red'").is_err());
    }
}
