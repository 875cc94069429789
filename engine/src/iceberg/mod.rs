//! Iceberg tables other engines write, served read-only: each catalog the configuration attaches
//! ([`sieve_iceberg::IcebergCatalog`]) is a DataFusion catalog of its own, so
//! `catalog.namespace.table` names a table wherever a table name goes.

pub(crate) mod catalog;
pub(crate) mod equality_delete_exec;
pub(crate) mod field_ids;
pub(crate) mod file_indexes;
pub(crate) mod file_stats;
pub(crate) mod index_build;
pub(crate) mod index_statement;
pub(crate) mod indexed_pages;
pub(crate) mod indexer;
pub(crate) mod located_read;
pub(crate) mod page_walk;
pub(crate) mod part_sizes;
pub(crate) mod scan_exec;
pub(crate) mod snapshot_files;
pub(crate) mod table;
pub(crate) mod variant_json;

use sieve_iceberg::IcebergError;

use crate::error::{Classified, ErrorClass};

impl Classified for IcebergError {
    fn class(&self) -> ErrorClass {
        match self {
            IcebergError::Unsupported(..) => ErrorClass::NotSupported,
            _ => ErrorClass::Other,
        }
    }
}
