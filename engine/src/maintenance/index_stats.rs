//! `sieve_index_stats('table')` (or `'database.table'`): what a table's filters cost, per column
//! and entry kind over all its blocks — blocks, distinct keys, NDV estimates, bytes, bits per
//! key and locator groups — queryable in SQL like any table. The locator is a kind of its own ("locator"): its
//! pages per column over the groups whose header parses (a group's keys are distinct within
//! it, so a key in two groups counts twice, as it does in two blocks' sidecars).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Float64Array, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{ScalarValue, plan_err};
use datafusion::datasource::TableType;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use sieve_storage::Catalog;

use crate::access::principal::require_visible;
use crate::access::privileges::Object;
use crate::catalog::table_name::TableName;
use crate::error::to_df;

#[derive(Debug)]
pub struct IndexStatsFunction {
    catalog: Catalog,
}

impl IndexStatsFunction {
    pub fn new(catalog: Catalog) -> Self {
        Self { catalog }
    }
}

impl TableFunctionImpl for IndexStatsFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let name = match args.exprs() {
            [
                Expr::Literal(ScalarValue::Utf8(Some(name)) | ScalarValue::Utf8View(Some(name)), _),
            ] => name.clone(),
            _ => {
                return plan_err!(
                    "sieve_index_stats takes one table name as a string, e.g. sieve_index_stats('t10b')"
                );
            }
        };
        let options = args.session().config_options();
        let TableName { database, table } =
            TableName::parse(&name, &options.catalog.default_schema)?;
        require_visible(args.session().config(), &Object::table(&database, &table))?;
        Ok(Arc::new(IndexStatsTable {
            catalog: self.catalog.clone(),
            database,
            table,
        }))
    }
}

#[derive(Debug)]
struct IndexStatsTable {
    catalog: Catalog,
    database: String,
    table: String,
}

fn schema() -> SchemaRef {
    let u64_field = |name| Field::new(name, DataType::UInt64, false);
    Arc::new(Schema::new(vec![
        Field::new("column_name", DataType::Utf8, false),
        Field::new("kind", DataType::Utf8, false),
        u64_field("blocks"),
        u64_field("keys"),
        u64_field("ndv_estimate"),
        u64_field("bytes"),
        Field::new("bits_per_key", DataType::Float64, true),
        // Locator groups (0 for sidecars): what a lookup probes, which OPTIMIZE's merging bounds.
        u64_field("groups"),
    ]))
}

/// Sums per (column, kind): blocks, keys, NDV estimates, bytes, locator groups.
type Totals = BTreeMap<(String, String), [u64; 5]>;

impl IndexStatsTable {
    async fn totals(&self) -> Result<Totals> {
        let table = self
            .catalog
            .open_table(&self.database, &self.table)
            .await
            .map_err(to_df)?;
        let columns = table.def().options.index_columns.clone();
        let snapshot = table.snapshot().await.map_err(to_df)?;
        let blocks = table.blocks(&snapshot).await.map_err(to_df)?;
        let mut totals = Totals::new();
        for column in columns {
            let Some(stats) = blocks.index_stats(&column) else {
                continue;
            };
            for i in 0..blocks.len() {
                let entry = totals
                    .entry((column.clone(), stats.kinds.value(i).to_string()))
                    .or_default();
                entry[0] += 1;
                entry[1] += stats.keys.value(i);
                entry[2] += stats.ndv.value(i);
                entry[3] += stats.bytes.value(i);
            }
        }
        // The locator's keys are exact (distinct per group), so its NDV is its key count.
        for group in blocks.locator_groups() {
            let Ok(header) = &group.header else { continue };
            for column in &header.columns {
                let entry = totals
                    .entry((column.column.clone(), "locator".to_string()))
                    .or_default();
                entry[0] += group.blocks.len() as u64;
                entry[1] += column.keys;
                entry[2] += column.keys;
                entry[3] += column.bytes();
                entry[4] += 1;
            }
        }
        Ok(totals)
    }
}

#[async_trait]
impl TableProvider for IndexStatsTable {
    fn schema(&self) -> SchemaRef {
        schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let totals = self.totals().await?;
        let bits = |t: &[u64; 5]| (t[1] > 0).then(|| t[3] as f64 * 8.0 / t[1] as f64);
        let batch = RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(StringArray::from_iter_values(
                    totals.keys().map(|k| k.0.as_str()),
                )),
                Arc::new(StringArray::from_iter_values(
                    totals.keys().map(|k| k.1.as_str()),
                )),
                Arc::new(UInt64Array::from_iter_values(totals.values().map(|t| t[0]))),
                Arc::new(UInt64Array::from_iter_values(totals.values().map(|t| t[1]))),
                Arc::new(UInt64Array::from_iter_values(totals.values().map(|t| t[2]))),
                Arc::new(UInt64Array::from_iter_values(totals.values().map(|t| t[3]))),
                Arc::new(Float64Array::from_iter(totals.values().map(bits))),
                Arc::new(UInt64Array::from_iter_values(totals.values().map(|t| t[4]))),
            ],
        )?;
        Ok(MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            schema(),
            projection.cloned(),
        )?)
    }
}
