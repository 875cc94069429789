//! Storage errors surface through DataFusion as external errors, their message intact.

use datafusion::error::DataFusionError;
use sieve_storage::StorageError;

pub fn to_df(e: StorageError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}
