//! A table's definition as the catalog stores it: schema, options and the id its data lives under.

use std::sync::Arc;

use arrow_schema::{Schema, SchemaRef};
use serde::{Deserialize, Serialize};
use sieve_index::{FilterKind, is_hashable};

use crate::error::{Result, StorageError};

pub const DEFAULT_BLOCK_ROWS: usize = 1_000_000;
/// The locator numbers a block's rows with 32 bits.
pub const MAX_BLOCK_ROWS: usize = u32::MAX as usize;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableOptions {
    /// Columns with a filter in every block's sidecar.
    pub index_columns: Vec<String>,
    #[serde(with = "filter_name")]
    pub filter: FilterKind,
    pub block_rows: usize,
    /// Also write Parquet's own split-block bloom filters for the index columns, so other Parquet
    /// readers (and DataFusion's ListingTable baseline in `sieve bench filters`) can use them.
    #[serde(default)]
    pub parquet_bloom_filters: bool,
    /// Build a locator (`sieve_index::locator`) per group of blocks for the index columns, so a
    /// point query reads one small range per group instead of a filter per block.
    #[serde(default = "enabled")]
    pub locator: bool,
    /// The locator's error budget: expected false block reads of an absent-key query, summed
    /// over every group the table will ever have.
    #[serde(default = "default_max_false_reads")]
    pub max_false_reads: f64,
    /// A DELETE rebuilds a block's xor, fuse or bloom entry from its live keys once this
    /// fraction of the keys it holds have no live row left (Wei et al.'s lazy policy; cuckoo
    /// entries forget keys at once instead).
    #[serde(default = "default_stale_rebuild_fraction")]
    pub stale_rebuild_fraction: f64,
    /// Rows a write puts in one locator group at most (see [`crate::LOCATOR_GROUP_ROWS`]);
    /// merges make groups of up to [`crate::MAX_GROUP_ROWS`] of smaller ones.
    #[serde(default = "default_locator_group_rows")]
    pub locator_group_rows: usize,
}

fn default_locator_group_rows() -> usize {
    crate::LOCATOR_GROUP_ROWS
}

pub const DEFAULT_STALE_REBUILD_FRACTION: f64 = 0.2;

fn default_stale_rebuild_fraction() -> f64 {
    DEFAULT_STALE_REBUILD_FRACTION
}

fn enabled() -> bool {
    true
}

pub const DEFAULT_MAX_FALSE_READS: f64 = 0.01;

fn default_max_false_reads() -> f64 {
    DEFAULT_MAX_FALSE_READS
}

impl TableOptions {
    /// Every column of a hashable type indexed with binary_fuse8, 1M-row blocks.
    pub fn defaults_for(schema: &Schema) -> Self {
        Self {
            index_columns: schema
                .fields()
                .iter()
                .filter(|f| is_hashable(f.data_type()))
                .map(|f| f.name().clone())
                .collect(),
            filter: FilterKind::default(),
            block_rows: DEFAULT_BLOCK_ROWS,
            parquet_bloom_filters: false,
            locator: true,
            max_false_reads: DEFAULT_MAX_FALSE_READS,
            stale_rebuild_fraction: DEFAULT_STALE_REBUILD_FRACTION,
            locator_group_rows: crate::LOCATOR_GROUP_ROWS,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableDef {
    pub database: String,
    pub name: String,
    /// Unique per CREATE, so a table dropped and created again never sees the old data.
    pub id: String,
    pub schema: SchemaRef,
    pub options: TableOptions,
}

impl TableDef {
    pub fn new(
        database: &str,
        name: &str,
        schema: SchemaRef,
        options: TableOptions,
    ) -> Result<Self> {
        for column in &options.index_columns {
            let field = schema.field_with_name(column).map_err(|_| {
                StorageError::Invalid(format!(
                    "index column '{column}' is not a column of '{name}'"
                ))
            })?;
            if !is_hashable(field.data_type()) {
                return Err(StorageError::Invalid(format!(
                    "column '{column}' of type {} cannot be indexed",
                    field.data_type()
                )));
            }
        }
        if !(options.max_false_reads > 0.0 && options.max_false_reads <= 1.0) {
            return Err(StorageError::Invalid(format!(
                "max_false_reads must be in (0, 1], got {}",
                options.max_false_reads
            )));
        }
        if !(options.stale_rebuild_fraction > 0.0 && options.stale_rebuild_fraction <= 1.0) {
            return Err(StorageError::Invalid(format!(
                "stale_rebuild_fraction must be in (0, 1], got {}",
                options.stale_rebuild_fraction
            )));
        }
        if options.locator_group_rows == 0
            || options.locator_group_rows as u64 > crate::MAX_GROUP_ROWS
        {
            return Err(StorageError::Invalid(format!(
                "locator_group_rows must be in 1..={}, got {}",
                crate::MAX_GROUP_ROWS,
                options.locator_group_rows
            )));
        }
        if options.block_rows == 0 || options.block_rows > MAX_BLOCK_ROWS {
            return Err(StorageError::Invalid(format!(
                "block_rows must be 1 ..= {MAX_BLOCK_ROWS}, got {}",
                options.block_rows
            )));
        }
        Ok(Self {
            database: database.to_string(),
            name: name.to_string(),
            id: uuid::Uuid::new_v4().simple().to_string(),
            schema: Arc::new(Schema::new(schema.fields().clone())),
            options,
        })
    }
}

pub(crate) mod filter_name {
    use serde::{Deserialize, Deserializer, Serializer};
    use sieve_index::FilterKind;

    pub fn serialize<S: Serializer>(kind: &FilterKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(kind.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<FilterKind, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}
