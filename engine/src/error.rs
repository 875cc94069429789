//! Storage errors surface through DataFusion as external errors, their message intact; front
//! ends (the MySQL server, the shell) classify them to pick an error code.
//!
//! The engine's own errors that a protocol numbers say their class themselves
//! ([`Classified`]) and travel wrapped as [`Classed`], so this file, which every module
//! imports, imports none of them.

use datafusion::error::DataFusionError;
use sieve_storage::StorageError;

pub fn to_df(e: StorageError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// What kind of mistake an error reports, for protocols that number their errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    Syntax,
    UnknownTable,
    UnknownDatabase,
    TableExists,
    DatabaseExists,
    NotSupported,
    UnknownVariable,
    /// An integer result out of its type's range.
    OutOfRange,
    /// Stopped by `max_execution_time`.
    Timeout,
    /// Over a memory limit.
    OutOfMemory,
    /// The account lacks a privilege on a table (MySQL's 1142), a database (1044), or the
    /// server (1227).
    TableAccessDenied,
    DatabaseAccessDenied,
    GlobalAccessDenied,
    /// CREATE USER of an account that exists, DROP or ALTER of one that does not (1396).
    CannotUser,
    /// SHOW GRANTS for, or REVOKE from, an account that does not exist (1141).
    NoSuchGrant,
    /// GRANT to an account that does not exist (1410).
    GrantCreates,
    /// CREATE INDEX of a name the table's indexes have (1061).
    DuplicateKeyName,
    /// CREATE INDEX over a column the table lacks (1072).
    KeyColumnMissing,
    /// DROP INDEX of an index the table does not have (1091).
    CannotDropKey,
    Other,
}

/// An engine error that knows which kind of mistake it reports.
pub(crate) trait Classified: std::error::Error + Send + Sync + 'static {
    fn class(&self) -> ErrorClass;
}

/// A [`Classified`] error as DataFusion carries it: an external error whose message is the
/// error's own.
#[derive(Debug)]
struct Classed {
    class: ErrorClass,
    error: Box<dyn std::error::Error + Send + Sync>,
}

impl std::fmt::Display for Classed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for Classed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// `error` as a DataFusion error that [`classify`] reads the class of.
pub(crate) fn external(error: impl Classified) -> DataFusionError {
    DataFusionError::External(Box::new(Classed {
        class: error.class(),
        error: Box::new(error),
    }))
}

pub fn classify(error: &DataFusionError) -> ErrorClass {
    let root = error.find_root();
    if let DataFusionError::External(e) = root
        && let Some(storage) = e.downcast_ref::<StorageError>()
    {
        return match storage.root() {
            StorageError::UnknownTable(..) | StorageError::Dropped(_) => ErrorClass::UnknownTable,
            StorageError::UnknownDatabase(_) => ErrorClass::UnknownDatabase,
            StorageError::TableExists(..) => ErrorClass::TableExists,
            StorageError::DatabaseExists(_) => ErrorClass::DatabaseExists,
            _ => ErrorClass::Other,
        };
    }
    if let DataFusionError::External(e) = root
        && let Some(classed) = e.downcast_ref::<Classed>()
    {
        return classed.class;
    }
    match root {
        DataFusionError::SQL(..) => ErrorClass::Syntax,
        DataFusionError::ResourcesExhausted(_) => ErrorClass::OutOfMemory,
        DataFusionError::NotImplemented(_) => ErrorClass::NotSupported,
        // DataFusion's planner reports unresolved tables as "table '…' not found".
        DataFusionError::Plan(message)
            if message.starts_with("table '") && message.ends_with("not found") =>
        {
            ErrorClass::UnknownTable
        }
        _ => ErrorClass::Other,
    }
}
