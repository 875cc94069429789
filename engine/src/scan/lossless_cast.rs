//! Casting a literal to a column's type only when nothing is lost: the cast value casts back to
//! the same literal. Pruning hashes literals as the column's values (a lossy cast, 5.5 into an
//! integer column, would hash a different value), and prepared statements bind parameters as
//! the column's type where they can (a string into a `Utf8View` column).

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;

/// `literal` as a `to` value, if that cast loses nothing.
pub(crate) fn lossless_cast(literal: &ScalarValue, to: &DataType) -> Option<ScalarValue> {
    let cast = literal.cast_to(to).ok()?;
    (cast.cast_to(&literal.data_type()).ok()? == *literal).then_some(cast)
}
