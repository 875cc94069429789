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

use datafusion::execution::object_store::ObjectStoreUrl;
use sieve_engine::Engine;

/// A fresh DataFusion context (no caches shared with anything) in which `table` is a
/// ListingTable over the table's block files, under its bare name.
pub async fn listing_baseline(engine: &Engine, table: &str) -> Result<SessionContext> {
    let table = engine.open_table(table).await?;
    // The same Parquet reading as Sieve's scans (filters pushed into the decoder, page index),
    // so the comparison is about which blocks get read.
    let config = SessionConfig::new()
        .set_bool("datafusion.execution.parquet.pushdown_filters", true)
        .set_bool("datafusion.execution.parquet.bloom_filter_on_read", true);
    let ctx = SessionContext::new_with_config(config);
    // The context is this table's alone, so any URL names the store.
    let store_url = ObjectStoreUrl::parse("sieve-baseline://table")?;
    ctx.register_object_store(store_url.as_ref(), table.storage().store().clone());
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
    ctx.register_table(
        table.def().name.as_str(),
        Arc::new(ListingTable::try_new(config)?),
    )?;
    Ok(ctx)
}
