//! Sieve's indexes over tables it serves but does not write (attached Iceberg tables): a filter
//! sidecar per row group of a data file and a locator over them, in parts, under Sieve's own
//! storage. The engine builds them and probes them; this module only says where they are and
//! how their bytes are laid out.

mod part;
mod part_locator;
mod row_group_map;
mod store;

pub use part::{FiltersAt, IndexedFile, IndexedFileEntry, KeptEntries, Part, RowGroupFilters};
pub use part_locator::{PartKeys, PartLocator};
pub use row_group_map::{PageLocation, RowGroupMap};
pub use store::{AttachedIndexDef, AttachedIndexes};
