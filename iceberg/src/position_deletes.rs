//! Position delete files (spec: "Position Delete Files"): Parquet rows of (`file_path`, `pos`),
//! each deleting the row at ordinal `pos` of the data file at `file_path`. A reader collects,
//! per data file, the ordinals to skip.

use std::collections::HashMap;

use arrow_array::{Array, Int64Array, StringArray};
use arrow_schema::DataType;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use roaring::RoaringBitmap;

use crate::error::{IcebergError, Result};
use crate::manifest::FileEntry;
use crate::warehouse::Warehouse;

/// The ordinals one delete file deletes, per data file path.
/// Ordinals are u32: a Parquet file of over 4 billion rows is refused, not read.
pub type Positions = HashMap<String, RoaringBitmap>;

/// Reads the delete file `entry` names: whole, as it is small beside the data it deletes from
/// (two columns, sorted, so it compresses to a few bytes a row).
pub async fn read(warehouse: &Warehouse, entry: &FileEntry) -> Result<Positions> {
    let bad = |why: String| IcebergError::Deletes(entry.path.clone(), why);
    let bytes = warehouse.read(&entry.path).await?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(|e| bad(e.to_string()))?;
    let column = |name: &str| {
        builder
            .schema()
            .index_of(name)
            .map_err(|_| bad(format!("no {name} column")))
    };
    let (path_column, pos_column) = (column("file_path")?, column("pos")?);
    let mask = ProjectionMask::roots(builder.parquet_schema(), [path_column, pos_column]);
    let projected_path = usize::from(path_column > pos_column);
    let batches = builder
        .with_projection(mask)
        .build()
        .map_err(|e| bad(e.to_string()))?;
    let mut positions = Positions::new();
    for batch in batches {
        let batch = batch.map_err(|e| bad(e.to_string()))?;
        let cast = |i: usize, to: &DataType| {
            arrow_cast::cast(batch.column(i), to).map_err(|e| bad(e.to_string()))
        };
        let paths = cast(projected_path, &DataType::Utf8)?;
        let paths = paths
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("cast to Utf8");
        let pos = cast(1 - projected_path, &DataType::Int64)?;
        let pos = pos
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("cast to Int64");
        if paths.null_count() > 0 || pos.null_count() > 0 {
            return Err(bad("a row without file_path or pos".into()));
        }
        for (path, pos) in paths.iter().zip(pos.iter()) {
            let (Some(path), Some(pos)) = (path, pos) else {
                unreachable!("no nulls")
            };
            let pos = u32::try_from(pos).map_err(|_| bad(format!("position {pos}")))?;
            positions.entry(path.to_string()).or_default().insert(pos);
        }
    }
    Ok(positions)
}
