//! Plain DataFusion over a Sieve table's Parquet files: a `ListingTable` of its blocks directory,
//! with DataFusion's own row-group pruning (min/max, and Parquet bloom filters where the files have
//! them) and nothing of Sieve's. `sieve bench filters` measures Sieve against it in the same run.
//!
//! It lists the directory, so it sees every block file, committed or not: only meaningful for a
//! table whose loads all completed (the bench checks each answer).

use std::sync::Arc;

use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::error::Result;
use datafusion::execution::context::SessionContext;
use datafusion::prelude::SessionConfig;

use crate::error::to_df;
use crate::session::Engine;
use crate::storage_url::object_store_url;

impl Engine {
    /// A fresh DataFusion context (no caches shared with anything) in which `table` is a
    /// ListingTable over the table's block files, under its bare name.
    pub async fn listing_baseline(&self, table: &str) -> Result<SessionContext> {
        let (db, name) = crate::catalog::split_table_name(table, sieve_storage::DEFAULT_DATABASE);
        let table = self.catalog().open_table(db, name).await.map_err(to_df)?;
        // The same Parquet reading as Sieve's scans (filters pushed into the decoder, page index),
        // so the comparison is about which blocks get read.
        let config = SessionConfig::new()
            .set_bool("datafusion.execution.parquet.pushdown_filters", true)
            .set_bool("datafusion.execution.parquet.bloom_filter_on_read", true);
        let ctx = SessionContext::new_with_config(config);
        let store_url = object_store_url(self.storage())?;
        ctx.register_object_store(store_url.as_ref(), self.storage().store().clone());
        let dir = ListingTableUrl::parse(format!(
            "{}{}/",
            store_url.as_str(),
            table.dir().join("blocks")
        ))?;
        let options =
            ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
        let config = ListingTableConfig::new(dir)
            .with_listing_options(options)
            .with_schema(table.def().schema.clone());
        ctx.register_table(name, Arc::new(ListingTable::try_new(config)?))?;
        Ok(ctx)
    }
}
