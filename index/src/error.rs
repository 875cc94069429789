//! Why indexing a column or opening a sidecar failed.
//!
//! A sidecar that cannot be opened must never become a wrong answer: callers treat every
//! error below as "cannot prune this block".

use arrow_schema::DataType;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IndexError {
    #[error("values of type {0} cannot be hashed for a filter")]
    UnsupportedType(DataType),
    #[error("unknown filter kind {0:?}; expected one of: {1}")]
    UnknownKind(String, &'static str),
    #[error("not a Sieve sidecar (bad magic)")]
    BadMagic,
    #[error("sidecar format version {0} is not supported by this build (supports {1})")]
    UnsupportedVersion(u32, u32),
    #[error("sidecar is truncated: {0}")]
    Truncated(&'static str),
    #[error("sidecar is corrupt: {0}")]
    Corrupt(String),
}
