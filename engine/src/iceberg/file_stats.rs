//! The column bounds a table's manifests give each data file, as DataFusion's pruning reads
//! statistics: a lookup leaves out the files whose bounds rule its keys out before any is
//! opened, as Iceberg's own readers plan a scan. A file the index does not cover (one the
//! indexer has not reached) costs no footer read when its bounds exclude the key.
//!
//! Bounds are decoded from Iceberg's single-value serialization (spec Appendix D) by the
//! column's field id, into the type the table's schema gives the column now (an `int` promoted
//! to `long` keeps 4-byte bounds in older manifests). Anything not decoded here is unknown,
//! which prunes nothing: floating-point columns (their bounds leave NaN out, as Parquet's
//! statistics do), and types without an exact decoding below.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Schema, TimeUnit};
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::{Column, ScalarValue};
use sieve_iceberg::DataFile;

/// The statistics of `files`, one container each, for columns of `schema`.
pub struct FileStatistics<'a> {
    pub files: &'a [&'a DataFile],
    pub schema: &'a Schema,
}

impl FileStatistics<'_> {
    /// The field id and type of `column`.
    fn column(&self, column: &Column) -> Option<(i32, &DataType)> {
        let field = self.schema.field_with_name(&column.name).ok()?;
        Some((sieve_iceberg::field_id(field)?, field.data_type()))
    }

    /// One bound per file (`upper` or lower), null where unknown.
    fn bounds(&self, column: &Column, upper: bool) -> Option<ArrayRef> {
        let (id, data_type) = self.column(column)?;
        let unknown = ScalarValue::try_from(data_type).ok()?;
        let values = self.files.iter().map(|file| {
            let bounds = match upper {
                true => &file.bounds.upper,
                false => &file.bounds.lower,
            };
            (bounds.get(&id))
                .and_then(|bytes| decode(bytes, data_type))
                .unwrap_or_else(|| unknown.clone())
        });
        ScalarValue::iter_to_array(values).ok()
    }
}

impl PruningStatistics for FileStatistics<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.bounds(column, false)
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.bounds(column, true)
    }

    fn num_containers(&self) -> usize {
        self.files.len()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        let (id, _) = self.column(column)?;
        let counts = (self.files.iter()).map(|f| f.bounds.null_counts.get(&id).copied());
        Some(Arc::new(counts.collect::<UInt64Array>()))
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        let counts = self.files.iter().map(|f| Some(f.record_count));
        Some(Arc::new(counts.collect::<UInt64Array>()))
    }

    fn contained(&self, _: &Column, _: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}

/// A bound as a value of `data_type`; None when its bytes do not decode exactly to one.
fn decode(bytes: &[u8], data_type: &DataType) -> Option<ScalarValue> {
    let int = || Some(i32::from_le_bytes(bytes.try_into().ok()?));
    let long = || match bytes.len() {
        // A column promoted from int keeps the bounds its older files were written with.
        4 => int().map(i64::from),
        _ => Some(i64::from_le_bytes(bytes.try_into().ok()?)),
    };
    Some(match data_type {
        DataType::Boolean => match bytes {
            [b] => ScalarValue::Boolean(Some(*b != 0)),
            _ => return None,
        },
        DataType::Int32 => ScalarValue::Int32(int()),
        DataType::Int64 => ScalarValue::Int64(long()),
        DataType::Date32 => ScalarValue::Date32(int()),
        DataType::Time64(TimeUnit::Microsecond) => ScalarValue::Time64Microsecond(long()),
        DataType::Timestamp(TimeUnit::Microsecond, zone) => {
            ScalarValue::TimestampMicrosecond(long(), zone.clone())
        }
        DataType::Timestamp(TimeUnit::Nanosecond, zone) => {
            ScalarValue::TimestampNanosecond(long(), zone.clone())
        }
        DataType::Utf8 => ScalarValue::Utf8(Some(std::str::from_utf8(bytes).ok()?.to_string())),
        DataType::Binary => ScalarValue::Binary(Some(bytes.to_vec())),
        DataType::Decimal128(precision, scale) => {
            // Big-endian two's complement of the unscaled value, in as few bytes as it needs.
            if bytes.is_empty() || bytes.len() > 16 {
                return None;
            }
            let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
            let mut wide = [fill; 16];
            wide[16 - bytes.len()..].copy_from_slice(bytes);
            ScalarValue::Decimal128(Some(i128::from_be_bytes(wide)), *precision, *scale)
        }
        _ => return None,
    })
    .filter(|value| !value.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_decode_as_the_spec_serializes_them() {
        let long = 10_002i64.to_le_bytes();
        assert_eq!(
            decode(&long, &DataType::Int64),
            Some(ScalarValue::Int64(Some(10_002)))
        );
        // An int's 4 bytes, read as the long it was promoted to.
        let int = (-7i32).to_le_bytes();
        assert_eq!(
            decode(&int, &DataType::Int64),
            Some(ScalarValue::Int64(Some(-7)))
        );
        assert_eq!(
            decode(b"p10002", &DataType::Utf8),
            Some(ScalarValue::Utf8(Some("p10002".into())))
        );
        // -1.23 as decimal(9, 2): unscaled -123, one byte.
        assert_eq!(
            decode(&[0x85], &DataType::Decimal128(9, 2)),
            Some(ScalarValue::Decimal128(Some(-123), 9, 2))
        );
        assert_eq!(decode(&1.5f64.to_le_bytes(), &DataType::Float64), None);
        assert_eq!(decode(&[1, 2, 3], &DataType::Int64), None);
        assert_eq!(decode(&[0xff, 0xfe], &DataType::Utf8), None);
    }
}
