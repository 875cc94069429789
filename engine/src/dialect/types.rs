//! Arrow types as MySQL names them, for what tools read about columns: `information_schema`,
//! DESCRIBE. Sieve stores Arrow types; a MySQL client knows `bigint unsigned`, not `UInt64`.

use datafusion::arrow::datatypes::DataType;

/// A column's type as `information_schema.COLUMNS` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MysqlType {
    /// `DATA_TYPE`: the bare name (`bigint`, `varchar`, `decimal`).
    pub data_type: String,
    /// `COLUMN_TYPE`: with length, precision and sign (`bigint unsigned`, `decimal(10,2)`).
    pub column_type: String,
    /// `CHARACTER_MAXIMUM_LENGTH`, for strings and blobs.
    pub max_length: Option<u64>,
    /// `NUMERIC_PRECISION` and `NUMERIC_SCALE`, for numbers.
    pub precision: Option<u64>,
    pub scale: Option<u64>,
}

impl MysqlType {
    /// `CHARACTER_OCTET_LENGTH`: a string's bytes in utf8mb4 (4 per character), a blob's.
    pub fn octet_length(&self) -> Option<u64> {
        let chars = self.max_length?;
        Some(if self.data_type == "varchar" {
            chars * 4
        } else {
            chars
        })
    }

    /// `DATETIME_PRECISION`: the digits of a second's fraction, for dates and times.
    pub fn datetime_precision(&self) -> Option<u64> {
        match self.data_type.as_str() {
            "datetime" | "time" => Some(6),
            "date" => Some(0),
            _ => None,
        }
    }

    /// `CHARACTER_SET_NAME` and `COLLATION_NAME`, for strings.
    pub fn charset(&self) -> Option<(&'static str, &'static str)> {
        (self.data_type == "varchar").then_some(("utf8mb4", "utf8mb4_general_ci"))
    }
}

/// Strings have no declared length in Sieve; MySQL's longest `varchar`.
const VARCHAR_LENGTH: u64 = 65_535;
const BLOB_LENGTH: u64 = 4_294_967_295;

pub fn mysql_type(data_type: &DataType) -> MysqlType {
    let number = |name: &str, digits: u64, unsigned: bool| MysqlType {
        data_type: name.to_string(),
        column_type: if unsigned {
            format!("{name} unsigned")
        } else {
            name.to_string()
        },
        max_length: None,
        precision: Some(digits),
        scale: Some(0),
    };
    let plain = |name: &str, max_length: Option<u64>, column_type: String| MysqlType {
        data_type: name.to_string(),
        column_type,
        max_length,
        precision: None,
        scale: None,
    };
    match data_type {
        DataType::Boolean => MysqlType {
            column_type: "tinyint(1)".into(),
            ..number("tinyint", 3, false)
        },
        DataType::Int8 => number("tinyint", 3, false),
        DataType::Int16 => number("smallint", 5, false),
        DataType::Int32 => number("int", 10, false),
        DataType::Int64 => number("bigint", 19, false),
        DataType::UInt8 => number("tinyint", 3, true),
        DataType::UInt16 => number("smallint", 5, true),
        DataType::UInt32 => number("int", 10, true),
        DataType::UInt64 => number("bigint", 20, true),
        DataType::Float16 | DataType::Float32 => MysqlType {
            scale: None,
            ..number("float", 12, false)
        },
        DataType::Float64 => MysqlType {
            scale: None,
            ..number("double", 22, false)
        },
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => MysqlType {
            data_type: "decimal".into(),
            column_type: format!("decimal({p},{s})"),
            max_length: None,
            precision: Some(u64::from(*p)),
            scale: Some(u64::try_from(*s).unwrap_or(0)),
        },
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => plain(
            "varchar",
            Some(VARCHAR_LENGTH),
            format!("varchar({VARCHAR_LENGTH})"),
        ),
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => plain("longblob", Some(BLOB_LENGTH), "longblob".into()),
        DataType::Date32 | DataType::Date64 => plain("date", None, "date".into()),
        DataType::Timestamp(..) => plain("datetime", None, "datetime(6)".into()),
        DataType::Time32(_) | DataType::Time64(_) => plain("time", None, "time(6)".into()),
        DataType::Dictionary(_, value) => mysql_type(value),
        _ => plain("json", None, "json".into()),
    }
}

/// The type as Sieve's CREATE TABLE takes it back: MySQL's name where DataFusion parses it to
/// the same type, DataFusion's where MySQL's would not (`boolean`, not `tinyint(1)`).
pub fn ddl_type(data_type: &DataType) -> String {
    match data_type {
        DataType::Boolean => "boolean".into(),
        DataType::Timestamp(..) => "timestamp".into(),
        DataType::Time32(_) | DataType::Time64(_) => "time".into(),
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "bytea".into(),
        DataType::Dictionary(_, value) => ddl_type(value),
        _ => mysql_type(data_type).column_type,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(mysql_type(&DataType::UInt64).column_type, "bigint unsigned");
        assert_eq!(mysql_type(&DataType::Utf8View).data_type, "varchar");
        let decimal = mysql_type(&DataType::Decimal128(10, 2));
        assert_eq!(
            (
                decimal.column_type.as_str(),
                decimal.precision,
                decimal.scale
            ),
            ("decimal(10,2)", Some(10), Some(2))
        );
        assert_eq!(mysql_type(&DataType::Boolean).column_type, "tinyint(1)");
    }
}
