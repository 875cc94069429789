//! Sieve's table format on object storage: Parquet blocks with index sidecars, segment metadata
//! with per-block statistics, versioned snapshots committed atomically, and the catalog.
//!
//! Knows nothing about SQL: the engine hands it Arrow batches to write and asks it which blocks a
//! table version holds and what their sidecars say.

mod attached_index;
mod catalog;
mod error;
mod external;
mod local_store;
mod location;
mod meta;
pub mod metrics;
mod operations;
mod read;
mod users;
mod write;

pub use attached_index::{
    AttachedIndexDef, AttachedIndexes, FiltersAt, IndexedFile, IndexedFileEntry, KeptEntries,
    PageLocation, Part, PartKeys, PartLocator, RowGroupFilters, RowGroupMap,
};
pub use catalog::{Catalog, DEFAULT_DATABASE};
pub use error::{Result, StorageError};
pub use external::{ExternalLocation, ExternalPath, ExternalStores};
pub use location::Storage;
pub use meta::block::{BlockStats, IndexStats};
pub use meta::block_checksums::BlockChecksums;
pub use meta::block_list::{BlockList, IndexColumnStats, LocatorGroup};
pub use meta::copied_files::{CopiedFile, CopiedFiles};
pub use meta::deletes::{BlockDeletes, Deletes};
pub use meta::page_table;
pub use meta::snapshot::{CopiesChange, SegmentRef, Snapshot};
pub use meta::table_def::{DEFAULT_BLOCK_ROWS, DEFAULT_MAX_FALSE_READS, TableDef, TableOptions};
pub use meta::versions;
pub use operations::group_merge::{MAX_GROUP_ROWS, MERGE_FAN_IN};
pub use operations::merge_rate::DEFAULT_MERGE_IO_MIB_PER_S;
pub use operations::optimize::{OptimizePlan, Optimized, Rewrite};
pub use operations::vacuum::Vacuumed;
pub use read::cache::{DEFAULT_DATA_CACHE_BYTES, DEFAULT_SIDECAR_CACHE_BYTES, RangeKey};
pub use read::disk_cache::DiskCache;
pub use read::request_trace::{RequestTrace, TracedStore};
pub use read::table::{SidecarFetch, Table};
pub use roaring::RoaringBitmap;
pub use users::{StoredGrant, StoredUser, UserList, Users};
pub use write::deleter::DeleteCommitted;
pub use write::locator_builder::{LOCATOR_GROUP_ROWS, blocks_per_group};
pub use write::writer::{Committed, TableWriter, Written, parallelism};
