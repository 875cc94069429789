//! Sieve's table format on object storage: Parquet blocks with index sidecars, segment metadata
//! with per-block statistics, versioned snapshots committed atomically, and the catalog.
//!
//! Knows nothing about SQL: the engine hands it Arrow batches to write and asks it which blocks a
//! table version holds and what their sidecars say.

mod block;
mod block_checksums;
mod cache;
mod catalog;
mod checked_json;
mod deleter;
mod deletes;
mod error;
mod freshness;
mod group_merge;
mod location;
mod locator_builder;
mod nan_bounds;
mod optimize;
mod segment;
mod snapshot;
mod table;
mod table_def;
mod vacuum;
mod writer;

pub use block::{BlockStats, IndexStats};
pub use block_checksums::BlockChecksums;
pub use cache::{DEFAULT_DATA_CACHE_BYTES, DEFAULT_SIDECAR_CACHE_BYTES};
pub use catalog::{Catalog, DEFAULT_DATABASE};
pub use deleter::DeleteCommitted;
pub use deletes::{BlockDeletes, Deletes};
pub use error::{Result, StorageError};
pub use group_merge::{MAX_GROUP_ROWS, MERGE_FAN_IN};
pub use location::Storage;
pub use locator_builder::LOCATOR_GROUP_ROWS;
pub use optimize::{OptimizePlan, Optimized, Rewrite};
pub use roaring::RoaringBitmap;
pub use segment::{BlockList, IndexColumnStats, LocatorGroup};
pub use snapshot::Snapshot;
pub use table::{SidecarFetch, Table};
pub use table_def::{DEFAULT_BLOCK_ROWS, DEFAULT_MAX_FALSE_READS, TableDef, TableOptions};
pub use vacuum::Vacuumed;
pub use writer::{Committed, TableWriter, Written};
