//! Canonical byte forms of Arrow values, so the same logical value hashes the same whatever Arrow
//! type carries it (a literal `5` typed Int64 must find a row stored in an Int32 column).
//!
//! These forms are part of the on-disk format. All integers are little-endian.
//!
//! | logical type | Arrow types | canonical bytes |
//! |---|---|---|
//! | integer | Int8..Int64, UInt8..UInt64 | the value as i128, 16 bytes |
//! | decimal | Decimal32/64/128(p, s) | trailing zeros stripped while s > 0; then if s == 0 the integer form, else the unscaled i128 (16 bytes) followed by s as one byte |
//! | float | Float32, Float64 | the value widened to f64, -0.0 as +0.0, every NaN as `f64::NAN`; its 8 bits-bytes |
//! | text and bytes | Utf8, LargeUtf8, Utf8View, Binary, LargeBinary, BinaryView, FixedSizeBinary | the raw bytes (UTF-8 for text) |
//! | boolean | Boolean | one byte, 0 or 1 |
//! | instant | Date32, Date64, Timestamp(any unit, any zone) | nanoseconds since the Unix epoch as i128, 16 bytes |
//! | dictionary | Dictionary(any key, V) | the form of V's value |
//!
//! Timestamps are stored by Arrow as UTC instants whatever their zone, so the zone only labels the
//! value and is not part of the form; units are normalised to nanoseconds, and a date is the instant
//! of its midnight. Values of different logical types may share a form (integer 0 and 1970-01-01):
//! a probe always casts its literal to the column's type first, so they never meet.
//!
//! Nulls are not hashed: a column records that it has nulls as a flag.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrowPrimitiveType, new_empty_array};
use arrow_schema::{DataType, TimeUnit};

use crate::error::IndexError;
use crate::hash::hash_bytes;

/// The hashes of a column's non-null values, in row order, duplicates included.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ColumnHashes {
    pub hashes: Vec<u64>,
    pub has_null: bool,
}

impl ColumnHashes {
    /// Hashes one array (a literal is a one-row array of the column's type).
    pub fn from_array(array: &dyn Array) -> Result<Self, IndexError> {
        let mut hashes = Self::default();
        hashes.extend_from_array(array)?;
        Ok(hashes)
    }

    /// Appends the hashes of another batch of the same column, so a block built from many batches
    /// hashes every value exactly once.
    pub fn extend_from_array(&mut self, array: &dyn Array) -> Result<(), IndexError> {
        self.hashes
            .reserve(array.len() - array.logical_null_count());
        let Self { hashes, has_null } = self;
        visit(array, &mut |h| match h {
            Some(h) => hashes.push(h),
            None => *has_null = true,
        })
    }

    /// [`Self::extend_from_array`], also recording in `rows` the row (counted from `first_row`)
    /// of every hash it appends: the locator names where in a block each key is.
    pub fn extend_with_rows(
        &mut self,
        array: &dyn Array,
        first_row: u32,
        rows: &mut Vec<u32>,
    ) -> Result<(), IndexError> {
        let Self { hashes, has_null } = self;
        let mut row = first_row;
        visit(array, &mut |h| {
            match h {
                Some(h) => {
                    hashes.push(h);
                    rows.push(row);
                }
                None => *has_null = true,
            }
            row += 1;
        })
    }
}

/// Whether values of this type can be hashed, and so indexed.
pub fn is_hashable(data_type: &DataType) -> bool {
    visit(new_empty_array(data_type).as_ref(), &mut |_| {}).is_ok()
}

#[inline]
fn hash_integer(v: i128) -> u64 {
    hash_bytes(&v.to_le_bytes())
}

#[inline]
fn hash_float(v: f64) -> u64 {
    let v = if v.is_nan() {
        f64::NAN
    } else if v == 0.0 {
        0.0
    } else {
        v
    };
    hash_bytes(&v.to_bits().to_le_bytes())
}

#[inline]
fn hash_decimal(mut unscaled: i128, mut scale: i8) -> u64 {
    while scale > 0 && unscaled % 10 == 0 {
        unscaled /= 10;
        scale -= 1;
    }
    while scale < 0 {
        match unscaled.checked_mul(10) {
            Some(v) => {
                unscaled = v;
                scale += 1;
            }
            None => break,
        }
    }
    if scale == 0 {
        return hash_integer(unscaled);
    }
    let mut form = [0u8; 17];
    form[..16].copy_from_slice(&unscaled.to_le_bytes());
    form[16] = scale as u8;
    hash_bytes(&form)
}

fn nanos_per(unit: &TimeUnit) -> i128 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

const NANOS_PER_DAY: i128 = 86_400 * 1_000_000_000;

fn primitive<T: ArrowPrimitiveType>(
    array: &dyn Array,
    f: &mut dyn FnMut(Option<u64>),
    hash: impl Fn(T::Native) -> u64,
) {
    array
        .as_primitive::<T>()
        .iter()
        .for_each(|v| f(v.map(&hash)));
}

fn bytes<'a>(values: impl Iterator<Item = Option<&'a [u8]>>, f: &mut dyn FnMut(Option<u64>)) {
    values.for_each(|v| f(v.map(hash_bytes)));
}

/// Calls `f` with each row's hash (None for a null), in row order.
fn visit(array: &dyn Array, f: &mut dyn FnMut(Option<u64>)) -> Result<(), IndexError> {
    match array.data_type() {
        DataType::Int8 => primitive::<Int8Type>(array, f, |v| hash_integer(v.into())),
        DataType::Int16 => primitive::<Int16Type>(array, f, |v| hash_integer(v.into())),
        DataType::Int32 => primitive::<Int32Type>(array, f, |v| hash_integer(v.into())),
        DataType::Int64 => primitive::<Int64Type>(array, f, |v| hash_integer(v.into())),
        DataType::UInt8 => primitive::<UInt8Type>(array, f, |v| hash_integer(v.into())),
        DataType::UInt16 => primitive::<UInt16Type>(array, f, |v| hash_integer(v.into())),
        DataType::UInt32 => primitive::<UInt32Type>(array, f, |v| hash_integer(v.into())),
        DataType::UInt64 => primitive::<UInt64Type>(array, f, |v| hash_integer(v.into())),
        DataType::Float32 => primitive::<Float32Type>(array, f, |v| hash_float(v.into())),
        DataType::Float64 => primitive::<Float64Type>(array, f, hash_float),
        DataType::Decimal32(_, s) => {
            let s = *s;
            primitive::<Decimal32Type>(array, f, |v| hash_decimal(v.into(), s))
        }
        DataType::Decimal64(_, s) => {
            let s = *s;
            primitive::<Decimal64Type>(array, f, |v| hash_decimal(v.into(), s))
        }
        DataType::Decimal128(_, s) => {
            let s = *s;
            primitive::<Decimal128Type>(array, f, |v| hash_decimal(v, s))
        }
        DataType::Date32 => {
            primitive::<Date32Type>(array, f, |v| hash_integer(i128::from(v) * NANOS_PER_DAY))
        }
        DataType::Date64 => {
            primitive::<Date64Type>(array, f, |v| hash_integer(i128::from(v) * 1_000_000))
        }
        DataType::Timestamp(unit, _) => {
            let scale = nanos_per(unit);
            let hash = move |v: i64| hash_integer(i128::from(v) * scale);
            match unit {
                TimeUnit::Second => primitive::<TimestampSecondType>(array, f, hash),
                TimeUnit::Millisecond => primitive::<TimestampMillisecondType>(array, f, hash),
                TimeUnit::Microsecond => primitive::<TimestampMicrosecondType>(array, f, hash),
                TimeUnit::Nanosecond => primitive::<TimestampNanosecondType>(array, f, hash),
            }
        }
        DataType::Boolean => array
            .as_boolean()
            .iter()
            .for_each(|v| f(v.map(|v| hash_bytes(&[u8::from(v)])))),
        DataType::Utf8 => bytes(
            array
                .as_string::<i32>()
                .iter()
                .map(|v| v.map(str::as_bytes)),
            f,
        ),
        DataType::LargeUtf8 => bytes(
            array
                .as_string::<i64>()
                .iter()
                .map(|v| v.map(str::as_bytes)),
            f,
        ),
        DataType::Utf8View => bytes(
            array.as_string_view().iter().map(|v| v.map(str::as_bytes)),
            f,
        ),
        DataType::Binary => bytes(array.as_binary::<i32>().iter(), f),
        DataType::LargeBinary => bytes(array.as_binary::<i64>().iter(), f),
        DataType::BinaryView => bytes(array.as_binary_view().iter(), f),
        DataType::FixedSizeBinary(_) => bytes(array.as_fixed_size_binary().iter(), f),
        DataType::Dictionary(_, _) => {
            let dictionary = array.as_any_dictionary();
            let mut value_hashes = Vec::with_capacity(dictionary.values().len());
            visit(dictionary.values().as_ref(), &mut |h| value_hashes.push(h))?;
            if value_hashes.is_empty() {
                // No values: every key is null (and normalized_keys would panic).
                (0..array.len()).for_each(|_| f(None));
                return Ok(());
            }
            let nulls = array.logical_nulls();
            for (row, key) in dictionary.normalized_keys().into_iter().enumerate() {
                let valid = nulls.as_ref().is_none_or(|n| n.is_valid(row));
                f(if valid { value_hashes[key] } else { None });
            }
        }
        other => return Err(IndexError::UnsupportedType(other.clone())),
    }
    Ok(())
}
