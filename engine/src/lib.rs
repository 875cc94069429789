//! Sieve's query engine: DataFusion over Sieve tables. Scans prune blocks by min/max statistics and
//! filter sidecars before reading Parquet; writes stream into blocks and commit atomically.
//!
//! Where things live: `session/` runs statements (setup, dispatch, DDL, prepared statements,
//! execution); `scan/` reads tables and prunes their blocks; `dialect/` makes SQL mean what it
//! means in MySQL; `catalog/` names databases and tables; `maintenance/` holds DELETE, OPTIMIZE
//! and VACUUM; `cluster/` ships scans to workers; `ingest/` brings users' files in; `guard/` keeps a statement from hurting the
//! server. `sink.rs` is INSERT's path into the table writer, `numbers.rs` the `numbers(N)` source.

pub mod access;
mod catalog;
mod cluster;
mod dialect;
mod error;
mod guard;
mod iceberg;
mod ingest;
mod maintenance;
pub mod metrics;
mod numbers;
mod options;
mod processes;
mod progress;
mod query_log;
mod scan;
mod session;
mod sink;
mod statement_text;
#[cfg(test)]
mod test_files;

pub use access::accounts::{Access, Account};
pub use access::password::{AuthPlugin, Credential};
pub use access::principal::Principal;
pub use access::redact::redacted;
pub use cluster::coordinator::{Cluster, ClusterSettings};
pub use cluster::lookup_service::LookupService;
pub use cluster::placement::Placement;
pub use cluster::secret::ClusterSecret;
pub use cluster::worker::worker;
pub use cluster::worker_tls::WorkerTls;
pub use dialect::connection_statements::ConnectionStatement;
pub use dialect::session_functions::Client;
pub use dialect::show_create::quoted;
pub use dialect::system_variables::{MYSQL_VERSION, ServerLimits};
pub use error::{ErrorClass, classify, to_df};
pub use guard::deadline::QueryTimeout;
pub use guard::memory::MemoryLimits;
pub use guard::spill::SpillSettings;
pub use guard::statement::{MAX_OPERATORS, QUERY_THREAD_STACK};
pub use iceberg::indexer::Following;
pub use ingest::local_load::{Loaded, LocalLoad};
pub use options::SieveOptions;
pub use processes::{Process, ProcessList};
pub use progress::{WriteProgress, rate};
pub use query_log::{QueryLog, QueryLogSettings};
pub use scan::pruning::PruneOutcome;
pub use scan::routing::DEFAULT_ROUTING_BYTES;
pub use session::prepared::Prepared;
pub use session::query_stream::{ColumnOrigin, QueryOutput, QueryStream, ScanStats};
pub use session::{Engine, ReadStatement, Session};
