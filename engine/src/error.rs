//! Storage errors surface through DataFusion as external errors, their message intact; front
//! ends (the MySQL server, the shell) classify them to pick an error code.

use datafusion::error::DataFusionError;
use sieve_storage::StorageError;

use crate::access::principal::{AccessDenied, Denied};
use crate::dialect::checked_arithmetic::OutOfRange;
use crate::dialect::set_variable::UnknownVariable;
use crate::guard::deadline::QueryTimeout;
use crate::scan::exec::FullScanRefused;
use crate::session::accounts::{AccountError, AccountErrorKind};

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
    Other,
}

pub fn classify(error: &DataFusionError) -> ErrorClass {
    let root = error.find_root();
    if let DataFusionError::External(e) = root
        && let Some(storage) = e.downcast_ref::<StorageError>()
    {
        return match storage {
            StorageError::UnknownTable(..) => ErrorClass::UnknownTable,
            StorageError::UnknownDatabase(_) => ErrorClass::UnknownDatabase,
            StorageError::TableExists(..) => ErrorClass::TableExists,
            StorageError::DatabaseExists(_) => ErrorClass::DatabaseExists,
            _ => ErrorClass::Other,
        };
    }
    if let DataFusionError::External(e) = root {
        if e.is::<QueryTimeout>() {
            return ErrorClass::Timeout;
        }
        if e.is::<UnknownVariable>() {
            return ErrorClass::UnknownVariable;
        }
        if e.is::<OutOfRange>() {
            return ErrorClass::OutOfRange;
        }
        if e.is::<FullScanRefused>() {
            return ErrorClass::NotSupported;
        }
        if let Some(denied) = e.downcast_ref::<AccessDenied>() {
            return match denied.kind {
                Denied::Table => ErrorClass::TableAccessDenied,
                Denied::Database => ErrorClass::DatabaseAccessDenied,
                Denied::Global => ErrorClass::GlobalAccessDenied,
            };
        }
        if let Some(account) = e.downcast_ref::<AccountError>() {
            return match account.kind {
                AccountErrorKind::CannotUser => ErrorClass::CannotUser,
                AccountErrorKind::NoSuchGrant => ErrorClass::NoSuchGrant,
                AccountErrorKind::GrantCreates => ErrorClass::GrantCreates,
            };
        }
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
