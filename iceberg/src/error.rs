//! Why reading an Iceberg table failed, worded for the person who named it: which catalog,
//! table or file, and what in it Sieve does not read.

#[derive(Debug, thiserror::Error)]
pub enum IcebergError {
    #[error("iceberg catalog {catalog}: {why}")]
    Catalog { catalog: String, why: String },
    #[error("iceberg catalog {0}: {1}")]
    Sqlite(String, #[source] rusqlite::Error),
    #[error("iceberg file {0}: {1}")]
    Store(String, #[source] object_store::Error),
    #[error("iceberg table metadata {0}: {1}")]
    Metadata(String, String),
    #[error("iceberg manifest {0}: {1}")]
    Manifest(String, String),
    #[error("iceberg delete file {0}: {1}")]
    Deletes(String, String),
    /// A part of the format this reader does not serve yet: refused rather than read wrong.
    #[error("iceberg table {0}: {1}")]
    Unsupported(String, String),
    #[error("{0}: not under the iceberg catalog's warehouse {1} (Sieve reads nothing else)")]
    OutsideWarehouse(String, String),
    #[error("background task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

pub type Result<T, E = IcebergError> = std::result::Result<T, E>;
