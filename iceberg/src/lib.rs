//! Apache Iceberg tables read as their catalogs and metadata describe them (spec:
//! <https://iceberg.apache.org/spec/>), for Sieve to serve tables other engines write without
//! copying them. Read-only: Sieve never writes into a catalog or a table's location.
//!
//! Why a reader of Sieve's own: no crates.io release of iceberg-rust is built on the arrow and
//! DataFusion versions Sieve pins (see docs/research/iceberg.md), and a read of v1 to v3 tables
//! needs only the metadata JSON, two Avro files and the delete files (deletion vectors among
//! them), with apache-avro for the Avro. Parts of the format not read yet (v3's default values
//! and new types, nested columns) are refused by name, never read wrong; columns are found by
//! field id.
//!
//! The way through: [`IcebergCatalog::scan`] asks the catalog (SQL or REST) for a table's
//! metadata file, and [`TableScan::plan`] reads it, its snapshot's manifest list, manifests and
//! delete files into the data files to read, the rows to skip in each (position deletes and
//! deletion vectors) and the keys deleted from each (equality deletes).

mod catalog;
mod deletion_vectors;
mod equality_deletes;
mod error;
mod file_cache;
mod manifest;
mod metadata;
mod name_mapping;
mod position_deletes;
mod rest_catalog;
mod schema;
mod sql_catalog;
mod table_scan;
mod vended;
mod warehouse;

pub use catalog::{CatalogConfig, IcebergCatalog};
pub use equality_deletes::{DeletedKeys, EqualityDeletes};
pub use error::{IcebergError, Result};
pub use manifest::ColumnBounds;
pub use name_mapping::FileNames;
pub use schema::{field_id, field_with_id, initial_default, is_variant};
pub use table_scan::{DataFile, TableScan};
pub use warehouse::Warehouse;
