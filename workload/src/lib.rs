//! The synthetic table `t10b` and what is measured on it, beside the engine rather than inside
//! it: the block generator, the resumable loader behind `sieve load` (with its progress bar),
//! and the two references `sieve-bench filters` ([`bench`], the cli package's second binary, not
//! a command of `sieve`) compares Sieve with: plain DataFusion over the same Parquet files, and
//! each filter's false-positive rate probed directly. It reaches tables through the engine's
//! public API only.

pub mod bench;
mod false_positives;
mod listing_baseline;
mod load;
mod progress_bar;
mod row_count;
mod synthetic;
mod text_rows;

pub use false_positives::{FalsePositives, false_positives, locator_false_reads};
pub use listing_baseline::listing_baseline;
pub use load::{LoadProgress, LoadRequest, LoadSummary, load_synthetic};
pub use progress_bar::load_with_progress;
pub use row_count::{cores, parse_count};
pub use synthetic::block as t10b_block;
pub use text_rows::text_rows;
