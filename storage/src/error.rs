//! Why a storage operation failed, worded for the person who typed the statement.

use arrow_schema::ArrowError;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("storage: {0}")]
    ObjectStore(#[from] object_store::Error),
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("arrow: {0}")]
    Arrow(#[from] ArrowError),
    #[error("metadata: {0}")]
    Json(#[from] serde_json::Error),
    #[error("index: {0}")]
    Index(#[from] sieve_index::IndexError),
    #[error("invalid storage URL {0:?}: {1}")]
    InvalidUrl(String, String),
    #[error("database '{0}' already exists")]
    DatabaseExists(String),
    #[error("unknown database '{0}'")]
    UnknownDatabase(String),
    #[error("table '{0}.{1}' already exists")]
    TableExists(String, String),
    #[error("unknown table '{0}.{1}'")]
    UnknownTable(String, String),
    #[error("database '{0}' is not empty: drop its tables first")]
    DatabaseNotEmpty(String),
    /// The newest version of the table stored under this directory says it was dropped
    /// ([`crate::meta::snapshot::Snapshot::dropped`]); a table's own reads report it as
    /// [`Self::UnknownTable`].
    #[error("the table stored under {0} was dropped")]
    Dropped(String),
    #[error("{0}")]
    Invalid(String),
    /// A block a statement chose rows in was rewritten by an OPTIMIZE that committed first: the
    /// statement must choose again on the newer version.
    #[error("block {0} was rewritten by an OPTIMIZE while the statement ran; run it again")]
    Rewritten(String),
    /// A stored object that fails its checks (checksum, format version, missing from a sequence).
    #[error("cannot use {0}: {1}")]
    Damaged(String, String),
    /// A stored object of a format newer than this build reads: written by a newer Sieve
    /// sharing the storage, so left as it is (not treated as damaged and replaced).
    #[error("cannot use {0}: {1}")]
    Newer(String, String),
    #[error("local file: {0}")]
    Io(#[from] std::io::Error),
    #[error("background task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// The error of a check several queries shared ([`crate::read::freshness`]).
    #[error(transparent)]
    Shared(std::sync::Arc<StorageError>),
}

impl StorageError {
    /// The error itself, or the one a shared check ended with.
    pub fn root(&self) -> &StorageError {
        match self {
            StorageError::Shared(shared) => shared.root(),
            other => other,
        }
    }
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;
