//! Arrays of every hashable Arrow type built from the same integers, for tests that must hold
//! "for every supported type".

use std::sync::Arc;

use arrow_array::types::{Int16Type, UInt8Type};
use arrow_array::*;

/// One array per supported type; row i of each holds a value derived from `values[i]` (None stays
/// null). Types with a small domain (Int8, Boolean, …) wrap, so they see duplicates too.
pub fn arrays_of_every_type(values: &[Option<i64>]) -> Vec<ArrayRef> {
    let map = |f: &dyn Fn(i64) -> i64| values.iter().map(|v| v.map(f)).collect::<Vec<_>>();
    let ints = map(&|v| v);
    let texts: Vec<Option<String>> = values.iter().map(|v| v.map(|v| format!("v{v}"))).collect();
    let text_refs: Vec<Option<&str>> = texts.iter().map(|t| t.as_deref()).collect();
    let blobs: Vec<Option<[u8; 8]>> = values.iter().map(|v| v.map(i64::to_le_bytes)).collect();
    let blob_refs: Vec<Option<&[u8]>> = blobs.iter().map(|b| b.as_ref().map(|b| &b[..])).collect();
    // A UInt8-keyed dictionary holds at most 256 distinct values.
    let small: Vec<Option<String>> = values
        .iter()
        .map(|v| v.map(|v| format!("d{}", v.rem_euclid(200))))
        .collect();
    let cents = map(&|v| v.rem_euclid(1 << 30));
    vec![
        Arc::new(Int8Array::from_iter(
            ints.iter().map(|v| v.map(|v| v as i8)),
        )),
        Arc::new(Int16Array::from_iter(
            ints.iter().map(|v| v.map(|v| v as i16)),
        )),
        Arc::new(Int32Array::from_iter(
            ints.iter().map(|v| v.map(|v| v as i32)),
        )),
        Arc::new(Int64Array::from(ints.clone())),
        Arc::new(UInt8Array::from_iter(
            ints.iter().map(|v| v.map(|v| v as u8)),
        )),
        Arc::new(UInt16Array::from_iter(
            ints.iter().map(|v| v.map(|v| v as u16)),
        )),
        Arc::new(UInt32Array::from_iter(
            ints.iter().map(|v| v.map(|v| v as u32)),
        )),
        Arc::new(UInt64Array::from_iter(
            ints.iter().map(|v| v.map(|v| v as u64)),
        )),
        Arc::new(Float32Array::from_iter(
            ints.iter().map(|v| v.map(|v| v as f32 / 8.0)),
        )),
        Arc::new(Float64Array::from_iter(
            ints.iter().map(|v| v.map(|v| v as f64 / 3.0)),
        )),
        Arc::new(
            Decimal32Array::from_iter(cents.iter().map(|v| v.map(|v| v as i32 % 999_999_999)))
                .with_precision_and_scale(9, 2)
                .unwrap(),
        ),
        Arc::new(
            Decimal64Array::from(cents.clone())
                .with_precision_and_scale(18, 2)
                .unwrap(),
        ),
        Arc::new(
            Decimal128Array::from_iter(ints.iter().map(|v| v.map(i128::from)))
                .with_precision_and_scale(38, 3)
                .unwrap(),
        ),
        Arc::new(StringArray::from(text_refs.clone())),
        Arc::new(LargeStringArray::from(text_refs.clone())),
        Arc::new(StringViewArray::from(text_refs.clone())),
        Arc::new(BinaryArray::from(blob_refs.clone())),
        Arc::new(LargeBinaryArray::from(blob_refs.clone())),
        Arc::new(BinaryViewArray::from(blob_refs.clone())),
        Arc::new(
            FixedSizeBinaryArray::try_from_sparse_iter_with_size(blobs.iter().copied(), 8).unwrap(),
        ),
        Arc::new(BooleanArray::from_iter(
            ints.iter().map(|v| v.map(|v| v % 2 == 0)),
        )),
        Arc::new(Date32Array::from_iter(
            ints.iter().map(|v| v.map(|v| v as i32)),
        )),
        Arc::new(Date64Array::from(map(&|v| v.wrapping_mul(86_400_000)))),
        Arc::new(TimestampSecondArray::from(ints.clone())),
        Arc::new(TimestampMillisecondArray::from(ints.clone()).with_timezone("+05:00")),
        Arc::new(TimestampMicrosecondArray::from(ints.clone()).with_timezone("UTC")),
        Arc::new(TimestampNanosecondArray::from(ints.clone())),
        Arc::new(
            text_refs
                .iter()
                .copied()
                .collect::<DictionaryArray<Int16Type>>(),
        ),
        Arc::new(
            small
                .iter()
                .map(|s| s.as_deref())
                .collect::<DictionaryArray<UInt8Type>>(),
        ),
    ]
}
