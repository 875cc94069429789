//! Databend's synthetic table `t10b` (`select number as c1, cast(rand() as string) as c2 from
//! numbers(N)`), generated block by block for `sieve load`.
//!
//! Block `i` holds c1 = i·block_rows … and c2 drawn from a generator seeded with `i`, so a block can
//! be produced on any core, in any order, and again after a crash, and the same request always
//! writes the same table (the filter comparison loads identical data once per filter kind). c2 is
//! formatted by Arrow's cast, exactly as the CTAS formats `rand()`.

use std::sync::Arc;

use datafusion::arrow::array::{Float64Array, RecordBatch, UInt64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::error::Result;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("c1", DataType::UInt64, false),
        Field::new("c2", DataType::Utf8View, false),
    ]))
}

/// The rows `first .. first + rows` of the table, c2 seeded by `block`.
pub fn block(block: u64, first: u64, rows: u64) -> Result<RecordBatch> {
    let mut rng = SmallRng::seed_from_u64(block);
    let c1 = UInt64Array::from_iter_values(first..first + rows);
    let doubles = Float64Array::from_iter_values((0..rows).map(|_| rng.random::<f64>()));
    let c2 = cast(&doubles, &DataType::Utf8View)?;
    Ok(RecordBatch::try_new(schema(), vec![Arc::new(c1), c2])?)
}
