//! Parquet leaves NaN out of a column chunk's min/max, but DataFusion compares floats in Arrow's
//! total order, where NaN equals NaN and sorts above every number (a NaN with its sign bit set,
//! below). A block holding NaN with Parquet's bounds would be pruned for `d = 'NaN'` or `d > 5`
//! although its NaN rows match; so such a block's bounds are widened to include its NaNs.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{ArrayRef, ArrowPrimitiveType, PrimitiveArray, RecordBatch};
use arrow_schema::DataType;

/// Widens `min` and `max` (one-element arrays) of float column `index` to the NaNs it holds.
pub fn widen_to_nans(
    batches: &[RecordBatch],
    index: usize,
    min: &mut ArrayRef,
    max: &mut ArrayRef,
) {
    match min.data_type() {
        DataType::Float32 => widen::<Float32Type>(batches, index, min, max, f32::NAN, |v| {
            (v.is_nan(), v.is_sign_negative())
        }),
        DataType::Float64 => widen::<Float64Type>(batches, index, min, max, f64::NAN, |v| {
            (v.is_nan(), v.is_sign_negative())
        }),
        _ => {}
    }
}

fn widen<T: ArrowPrimitiveType>(
    batches: &[RecordBatch],
    index: usize,
    min: &mut ArrayRef,
    max: &mut ArrayRef,
    nan: T::Native,
    classify: impl Fn(T::Native) -> (bool, bool),
) where
    T::Native: std::ops::Neg<Output = T::Native>,
{
    let (mut positive, mut negative) = (false, false);
    for batch in batches {
        for v in batch.column(index).as_primitive::<T>().iter().flatten() {
            match classify(v) {
                (true, true) => negative = true,
                (true, false) => positive = true,
                _ => {}
            }
        }
    }
    let one = |v: T::Native| -> ArrayRef { Arc::new(PrimitiveArray::<T>::from_iter_values([v])) };
    // Without non-NaN values Parquet gives no bounds at all; the NaNs are then both.
    let only_nans = min.is_null(0);
    if positive {
        *max = one(nan);
        if only_nans && !negative {
            *min = one(nan);
        }
    }
    if negative {
        *min = one(-nan);
        if only_nans && !positive {
            *max = one(-nan);
        }
    }
}
