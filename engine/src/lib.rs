//! Sieve's query engine: DataFusion over Sieve tables. Scans prune blocks by min/max statistics and
//! filter sidecars before reading Parquet; writes stream into blocks and commit atomically.

mod catalog;
mod error;
mod false_positives;
mod index_stats;
mod listing_baseline;
mod load;
mod numbers;
mod options;
mod progress;
mod provider;
mod pruning;
mod scan_exec;
mod session;
mod sink;
mod storage_url;
mod synthetic;
mod table_options;

pub use error::{ErrorClass, classify};
pub use false_positives::FalsePositives;
pub use load::{DEFAULT_COMMIT_BLOCKS, LoadProgress, LoadRequest, LoadSummary};
pub use options::SieveOptions;
pub use progress::WriteProgress;
pub use pruning::PruneOutcome;
pub use session::{Engine, QueryOutput, ScanStats, Session};
