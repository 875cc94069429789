//! Databases and tables by name: the storage catalog as DataFusion schemas, table options.

pub(crate) mod schemas;
pub(crate) mod storage_url;
pub(crate) mod table_name;
pub(crate) mod table_options;
pub(crate) mod tables;
