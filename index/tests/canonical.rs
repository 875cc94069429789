//! The canonical forms: the same logical value hashes the same whatever Arrow type carries it.

mod common;

use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::*;
use arrow_schema::DataType;
use proptest::prelude::*;
use sieve_index::{ColumnHashes, IndexError, is_hashable};

fn hash_one(array: ArrayRef) -> u64 {
    let h = ColumnHashes::from_array(array.as_ref()).unwrap();
    assert_eq!(h.hashes.len(), 1, "{:?}", array.data_type());
    h.hashes[0]
}

fn all_equal(arrays: Vec<ArrayRef>) {
    let hashes: Vec<(DataType, u64)> = arrays
        .into_iter()
        .map(|a| (a.data_type().clone(), hash_one(a)))
        .collect();
    for (t, h) in &hashes {
        assert_eq!(
            *h, hashes[0].1,
            "{t} hashes differently from {}",
            hashes[0].0
        );
    }
}

proptest! {
    #[test]
    fn integers_hash_alike_across_widths_signedness_and_decimals(v in any::<i64>()) {
        let mut arrays: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![v])),
            Arc::new(Decimal128Array::from(vec![i128::from(v) * 1000])
                .with_precision_and_scale(38, 3).unwrap()),
            Arc::new(Decimal128Array::from(vec![i128::from(v)]).with_precision_and_scale(38, 0).unwrap()),
        ];
        if let Ok(x) = i8::try_from(v) { arrays.push(Arc::new(Int8Array::from(vec![x]))); }
        if let Ok(x) = i16::try_from(v) { arrays.push(Arc::new(Int16Array::from(vec![x]))); }
        if let Ok(x) = i32::try_from(v) {
            arrays.push(Arc::new(Int32Array::from(vec![x])));
            arrays.push(Arc::new(Decimal32Array::from(vec![x]).with_precision_and_scale(9, 0).unwrap()));
        }
        if let Ok(x) = u8::try_from(v) { arrays.push(Arc::new(UInt8Array::from(vec![x]))); }
        if let Ok(x) = u16::try_from(v) { arrays.push(Arc::new(UInt16Array::from(vec![x]))); }
        if let Ok(x) = u32::try_from(v) { arrays.push(Arc::new(UInt32Array::from(vec![x]))); }
        if let Ok(x) = u64::try_from(v) { arrays.push(Arc::new(UInt64Array::from(vec![x]))); }
        arrays.push(Arc::new(Decimal64Array::from(vec![v]).with_precision_and_scale(18, 0).unwrap()));
        all_equal(arrays);
    }

    #[test]
    fn decimals_hash_alike_across_scales(unscaled in -10_000_000i64..10_000_000, scale in 0i8..6) {
        let extra = 10i64.pow(3);
        all_equal(vec![
            Arc::new(Decimal64Array::from(vec![unscaled]).with_precision_and_scale(18, scale).unwrap()),
            Arc::new(Decimal128Array::from(vec![i128::from(unscaled * extra)])
                .with_precision_and_scale(38, scale + 3).unwrap()),
        ]);
    }

    #[test]
    fn texts_and_bytes_hash_alike_across_encodings(s in ".{0,40}") {
        let bytes = s.as_bytes();
        let mut arrays: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![s.as_str()])),
            Arc::new(LargeStringArray::from(vec![s.as_str()])),
            Arc::new(StringViewArray::from(vec![s.as_str()])),
            Arc::new(vec![s.as_str()].into_iter().collect::<DictionaryArray<Int32Type>>()),
            Arc::new(BinaryArray::from(vec![bytes])),
            Arc::new(LargeBinaryArray::from(vec![bytes])),
            Arc::new(BinaryViewArray::from(vec![bytes])),
        ];
        if !bytes.is_empty() {
            arrays.push(Arc::new(FixedSizeBinaryArray::try_from_iter(std::iter::once(bytes)).unwrap()));
        }
        all_equal(arrays);
    }

    #[test]
    fn instants_hash_alike_across_units_and_zones(secs in -9_000_000_000i64..9_000_000_000) {
        all_equal(vec![
            Arc::new(TimestampSecondArray::from(vec![secs])),
            Arc::new(TimestampMillisecondArray::from(vec![secs * 1_000]).with_timezone("UTC")),
            Arc::new(TimestampMicrosecondArray::from(vec![secs * 1_000_000]).with_timezone("-03:30")),
            Arc::new(TimestampNanosecondArray::from(vec![secs * 1_000_000_000]).with_timezone("Asia/Tokyo")),
        ]);
    }

    #[test]
    fn dates_hash_as_their_midnight(days in -100_000i32..100_000) {
        let ms = i64::from(days) * 86_400_000;
        all_equal(vec![
            Arc::new(Date32Array::from(vec![days])),
            Arc::new(Date64Array::from(vec![ms])),
            Arc::new(TimestampMillisecondArray::from(vec![ms])),
        ]);
    }

    #[test]
    fn floats_hash_alike_across_widths(x in any::<f32>()) {
        all_equal(vec![
            Arc::new(Float32Array::from(vec![x])),
            Arc::new(Float64Array::from(vec![f64::from(x)])),
        ]);
    }
}

#[test]
fn zeros_and_nans_are_normalized() {
    all_equal(vec![
        Arc::new(Float64Array::from(vec![0.0])),
        Arc::new(Float64Array::from(vec![-0.0])),
        Arc::new(Float32Array::from(vec![-0.0f32])),
    ]);
    all_equal(vec![
        Arc::new(Float64Array::from(vec![f64::NAN])),
        Arc::new(Float64Array::from(vec![-f64::NAN])),
        Arc::new(Float64Array::from(vec![f64::from_bits(
            0x7ff0_0000_0000_0001,
        )])),
        Arc::new(Float32Array::from(vec![f32::NAN])),
    ]);
}

#[test]
fn distinct_values_hash_apart() {
    let h = |a: ArrayRef| hash_one(a);
    assert_ne!(
        h(Arc::new(Int64Array::from(vec![1]))),
        h(Arc::new(Int64Array::from(vec![2])))
    );
    assert_ne!(
        h(Arc::new(BooleanArray::from(vec![true]))),
        h(Arc::new(BooleanArray::from(vec![false])))
    );
    assert_ne!(
        h(Arc::new(
            Decimal128Array::from(vec![15])
                .with_precision_and_scale(10, 1)
                .unwrap()
        )),
        h(Arc::new(
            Decimal128Array::from(vec![15])
                .with_precision_and_scale(10, 0)
                .unwrap()
        )),
    );
}

#[test]
fn nulls_are_flagged_not_hashed() {
    for array in common::arrays_of_every_type(&[Some(7), None, Some(7), None]) {
        let h = ColumnHashes::from_array(array.as_ref()).unwrap();
        assert!(h.has_null, "{}", array.data_type());
        assert_eq!(h.hashes.len(), 2, "{}", array.data_type());
        assert_eq!(h.hashes[0], h.hashes[1], "{}", array.data_type());
    }
    let no_nulls = ColumnHashes::from_array(&Int32Array::from(vec![1, 2])).unwrap();
    assert!(!no_nulls.has_null);
}

#[test]
fn every_listed_type_is_hashable_and_nested_types_are_not() {
    for array in common::arrays_of_every_type(&[Some(1)]) {
        assert!(is_hashable(array.data_type()), "{}", array.data_type());
    }
    let list = DataType::new_list(DataType::Int32, true);
    assert!(!is_hashable(&list));
    let err = ColumnHashes::from_array(arrow_array::new_empty_array(&list).as_ref()).unwrap_err();
    assert!(matches!(err, IndexError::UnsupportedType(_)));
    assert!(err.to_string().contains("List"), "{err}");
}

#[test]
fn a_dictionary_without_values_is_all_nulls() {
    let keys = Int32Array::from(vec![None, None]);
    let values: ArrayRef = Arc::new(StringArray::from(Vec::<&str>::new()));
    let dictionary = DictionaryArray::<Int32Type>::try_new(keys, values).unwrap();
    let h = ColumnHashes::from_array(&dictionary).unwrap();
    assert!(h.has_null && h.hashes.is_empty());
}

#[test]
fn batches_accumulate() {
    let mut h = ColumnHashes::default();
    h.extend_from_array(&Int32Array::from(vec![1, 2])).unwrap();
    h.extend_from_array(&Int64Array::from(vec![Some(3), None]))
        .unwrap();
    let whole =
        ColumnHashes::from_array(&Int64Array::from(vec![Some(1), Some(2), Some(3), None])).unwrap();
    assert_eq!(h, whole);
}
