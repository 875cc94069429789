//! Sieve's query engine: DataFusion over Sieve tables. Scans prune blocks by min/max statistics and
//! filter sidecars before reading Parquet; writes stream into blocks and commit atomically.

mod catalog;
mod checked_arithmetic;
mod deadline;
mod describe;
mod error;
mod index_stats;
mod information_schema;
mod lossless_cast;
mod memory;
mod mysql_types;
mod numbers;
mod options;
mod panic_guard;
mod prepared;
mod progress;
mod provider;
mod pruning;
mod query_stream;
mod scan_exec;
mod session;
mod session_functions;
mod set_variable;
mod show_create;
mod show_filter;
mod sink;
mod statement_guard;
mod statement_task;
mod storage_url;
mod system_variables;
mod table_options;
mod tables;
mod verified_reader;

pub use deadline::QueryTimeout;
pub use error::{ErrorClass, classify, to_df};
pub use memory::MemoryLimits;
pub use options::SieveOptions;
pub use prepared::Prepared;
pub use progress::WriteProgress;
pub use pruning::PruneOutcome;
pub use query_stream::{QueryOutput, QueryStream, ScanStats};
pub use session::{Engine, Session};
pub use session_functions::Client;
pub use statement_guard::{MAX_OPERATORS, QUERY_THREAD_STACK};
pub use system_variables::{MYSQL_VERSION, ServerLimits};
