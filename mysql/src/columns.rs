//! Arrow columns as MySQL result columns: the column definition a client reads (MySQL's type,
//! display length, decimals, flags, character set, and the table the column comes from), and
//! each value encoded for the text protocol (queries) or the binary one (prepared statements),
//! always in the width the definition announces.

use std::sync::Arc;

use chrono::{Datelike, NaiveDate, Timelike};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray, StringBuilder};
use datafusion::arrow::compute::{can_cast_types, cast};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Field, Float32Type, Float64Type, Int64Type, Time64MicrosecondType,
    TimeUnit, TimestampMicrosecondType, UInt64Type,
};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::json::writer::{EncoderOptions, make_encoder};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use sieve_engine::ColumnOrigin;

use super::wire::{put_lenenc_bytes, put_lenenc_int};

/// MySQL's column type codes (`enum_field_types`).
pub mod code {
    pub const TINY: u8 = 1;
    pub const SHORT: u8 = 2;
    pub const LONG: u8 = 3;
    pub const FLOAT: u8 = 4;
    pub const DOUBLE: u8 = 5;
    pub const NULL: u8 = 6;
    pub const TIMESTAMP: u8 = 7;
    pub const LONGLONG: u8 = 8;
    pub const INT24: u8 = 9;
    pub const DATE: u8 = 10;
    pub const TIME: u8 = 11;
    pub const DATETIME: u8 = 12;
    pub const YEAR: u8 = 13;
    pub const BIT: u8 = 16;
    pub const NEWDECIMAL: u8 = 246;
    pub const TINY_BLOB: u8 = 249;
    pub const MEDIUM_BLOB: u8 = 250;
    pub const LONG_BLOB: u8 = 251;
    pub const BLOB: u8 = 252;
    pub const VAR_STRING: u8 = 253;
    pub const GEOMETRY: u8 = 255;
    pub const DECIMAL: u8 = 0;
}

mod flag {
    pub const NOT_NULL: u16 = 1;
    pub const BLOB: u16 = 16;
    pub const UNSIGNED: u16 = 32;
    pub const BINARY: u16 = 128;
    pub const NUM: u16 = 32768;
}

/// utf8mb4_general_ci: every client knows it (MySQL 8's 255 is unknown to older MariaDB ones).
pub const UTF8MB4: u16 = 45;
const BINARY_CHARSET: u16 = 63;

/// How one Arrow column is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// TINYINT … BIGINT: its width in bytes.
    Int {
        bytes: u8,
        unsigned: bool,
    },
    Float,
    Double,
    Decimal,
    Date,
    DateTime,
    Time,
    Text,
    Blob,
}

fn kind(data_type: &DataType) -> Kind {
    let int = |bytes, unsigned| Kind::Int { bytes, unsigned };
    match data_type {
        DataType::Boolean | DataType::Int8 => int(1, false),
        DataType::Int16 => int(2, false),
        DataType::Int32 => int(4, false),
        DataType::Int64 => int(8, false),
        DataType::UInt8 => int(1, true),
        DataType::UInt16 => int(2, true),
        DataType::UInt32 => int(4, true),
        DataType::UInt64 => int(8, true),
        DataType::Float16 | DataType::Float32 => Kind::Float,
        DataType::Float64 => Kind::Double,
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => Kind::Decimal,
        DataType::Date32 | DataType::Date64 => Kind::Date,
        DataType::Timestamp(..) => Kind::DateTime,
        DataType::Time32(_) | DataType::Time64(_) => Kind::Time,
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => Kind::Blob,
        DataType::Dictionary(_, value) => kind(value),
        _ => Kind::Text,
    }
}

/// A result column or statement parameter as a client is told about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDefinition {
    pub schema: String,
    pub table: String,
    pub name: String,
    pub type_code: u8,
    pub flags: u16,
    pub charset: u16,
    pub length: u32,
    pub decimals: u8,
    kind: Kind,
}

/// Strings have no declared length in Sieve: MySQL's longest VARCHAR, in utf8mb4 bytes.
const TEXT_LENGTH: u32 = 65_535 * 4;

impl ColumnDefinition {
    pub fn new(field: &Field, origin: Option<&ColumnOrigin>) -> Self {
        let data_type = field.data_type();
        let kind = kind(data_type);
        let (type_code, length, decimals) = match kind {
            Kind::Int { .. } if matches!(data_type, DataType::Boolean) => (code::TINY, 1, 0),
            Kind::Int { bytes, unsigned } => {
                let (type_code, digits) = match bytes {
                    1 => (code::TINY, 3),
                    2 => (code::SHORT, 5),
                    4 => (code::LONG, 10),
                    _ => (code::LONGLONG, if unsigned { 20 } else { 19 }),
                };
                // A sign's place, as MySQL counts it (BIGINT is 20 either way).
                let length = if unsigned || bytes == 8 {
                    digits
                } else {
                    digits + 1
                };
                (type_code, length, 0)
            }
            // 31: "not fixed", what MySQL sends for FLOAT and DOUBLE without a scale.
            Kind::Float => (code::FLOAT, 12, 31),
            Kind::Double => (code::DOUBLE, 22, 31),
            Kind::Decimal => {
                let (precision, scale) = decimal_shape(data_type);
                let length = u32::from(precision) + 1 + u32::from(scale > 0);
                (code::NEWDECIMAL, length, scale)
            }
            Kind::Date => (code::DATE, 10, 0),
            Kind::DateTime => (code::DATETIME, 26, 6),
            Kind::Time => (code::TIME, 15, 6),
            Kind::Text => (code::VAR_STRING, TEXT_LENGTH, 0),
            Kind::Blob => (code::BLOB, u32::MAX, 0),
        };
        let mut flags = 0;
        if !field.is_nullable() {
            flags |= flag::NOT_NULL;
        }
        match kind {
            Kind::Int { unsigned, .. } => {
                flags |= flag::NUM | if unsigned { flag::UNSIGNED } else { 0 };
            }
            Kind::Float | Kind::Double | Kind::Decimal => flags |= flag::NUM,
            Kind::Blob => flags |= flag::BLOB | flag::BINARY,
            Kind::Date | Kind::DateTime | Kind::Time => flags |= flag::BINARY,
            Kind::Text => {}
        }
        let charset = if kind == Kind::Text {
            UTF8MB4
        } else {
            BINARY_CHARSET
        };
        let (schema, table) = origin
            .map(|o| (o.database.clone(), o.table.clone()))
            .unwrap_or_default();
        Self {
            schema,
            table,
            name: field.name().clone(),
            type_code,
            flags,
            charset,
            length,
            decimals,
            kind,
        }
    }

    /// The Protocol::ColumnDefinition41 packet.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.name.len());
        for text in [
            "def",
            &self.schema,
            &self.table,
            &self.table,
            &self.name,
            &self.name,
        ] {
            put_lenenc_bytes(&mut out, text.as_bytes());
        }
        put_lenenc_int(&mut out, 0x0c);
        out.extend_from_slice(&self.charset.to_le_bytes());
        out.extend_from_slice(&self.length.to_le_bytes());
        out.push(self.type_code);
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.push(self.decimals);
        out.extend_from_slice(&[0, 0]);
        out
    }
}

fn decimal_shape(data_type: &DataType) -> (u8, u8) {
    match data_type {
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => (*p, u8::try_from(*s).unwrap_or(0)),
        DataType::Dictionary(_, value) => decimal_shape(value),
        _ => (0, 0),
    }
}

/// One column of a batch, cast once to the Arrow type its MySQL values are read from.
struct Values {
    kind: Kind,
    array: ArrayRef,
}

fn values(array: &ArrayRef) -> Result<Values, ArrowError> {
    let kind = kind(array.data_type());
    let target = match kind {
        Kind::Int {
            unsigned: false, ..
        } => DataType::Int64,
        Kind::Int { unsigned: true, .. } => DataType::UInt64,
        Kind::Float => DataType::Float32,
        Kind::Double => DataType::Float64,
        Kind::Date => DataType::Date32,
        Kind::DateTime => DataType::Timestamp(TimeUnit::Microsecond, None),
        Kind::Time => DataType::Time64(TimeUnit::Microsecond),
        Kind::Decimal | Kind::Text => DataType::Utf8,
        Kind::Blob => DataType::LargeBinary,
    };
    let as_is = array.data_type() == &target
        || (target == DataType::Utf8
            && matches!(array.data_type(), DataType::LargeUtf8 | DataType::Utf8View));
    let array = if as_is {
        Arc::clone(array)
    } else if matches!(
        array.data_type(),
        DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::Struct(_)
            | DataType::Map(..)
    ) {
        json_text(array)?
    } else if can_cast_types(array.data_type(), &target) {
        cast(array, &target)?
    } else {
        // Unions: as text, the way arrow prints them.
        let formatter = ArrayFormatter::try_new(array.as_ref(), &FormatOptions::default())?;
        let text: StringArray = (0..array.len())
            .map(|i| (!array.is_null(i)).then(|| formatter.value(i).to_string()))
            .collect();
        Arc::new(text)
    };
    Ok(Values { kind, array })
}

/// Lists, structs and maps as JSON text, the type DESCRIBE and information_schema give them
/// (`json`): a list an array, a struct or a map an object, nulls inside them as null.
fn json_text(array: &ArrayRef) -> Result<ArrayRef, ArrowError> {
    let field = Arc::new(Field::new("", array.data_type().clone(), true));
    let options = EncoderOptions::default().with_explicit_nulls(true);
    let mut encoder = make_encoder(&field, array.as_ref(), &options)?;
    let mut text = StringBuilder::new();
    let mut json = Vec::new();
    for i in 0..array.len() {
        if array.is_null(i) {
            text.append_null();
            continue;
        }
        json.clear();
        encoder.encode(i, &mut json);
        text.append_value(String::from_utf8_lossy(&json));
    }
    Ok(Arc::new(text.finish()))
}

fn invalid(e: ArrowError) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, e)
}

/// Which of the protocol's two row formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFormat {
    Text,
    Binary,
}

/// Calls `row` with each row of `batch`, encoded.
pub fn encode_rows(
    batch: &RecordBatch,
    format: RowFormat,
    mut row: impl FnMut(&[u8]),
) -> std::io::Result<()> {
    let columns: Vec<Values> = batch
        .columns()
        .iter()
        .map(values)
        .collect::<Result<_, _>>()
        .map_err(invalid)?;
    let mut out = Vec::new();
    // Values are formatted here, not into a String each: a row costs no allocation.
    let mut scratch = String::new();
    for i in 0..batch.num_rows() {
        out.clear();
        match format {
            RowFormat::Text => {
                for column in &columns {
                    if column.array.is_null(i) {
                        out.push(0xfb);
                    } else {
                        text_value(&mut out, &mut scratch, column, i);
                    }
                }
            }
            RowFormat::Binary => {
                out.push(0);
                // The NULL bitmap of a binary row starts at bit 2.
                let bitmap = out.len();
                out.resize(bitmap + (columns.len() + 7 + 2) / 8, 0);
                for (c, column) in columns.iter().enumerate() {
                    if column.array.is_null(i) {
                        out[bitmap + (c + 2) / 8] |= 1 << ((c + 2) % 8);
                    } else {
                        binary_value(&mut out, column, i);
                    }
                }
            }
        }
        row(&out);
    }
    Ok(())
}

fn date_of(days: i32) -> NaiveDate {
    NaiveDate::from_num_days_from_ce_opt(days + 719_163).unwrap_or_default()
}

fn text_value(out: &mut Vec<u8>, scratch: &mut String, column: &Values, i: usize) {
    use std::fmt::Write;
    let a = &column.array;
    let mut integer = itoa::Buffer::new();
    scratch.clear();
    // Writing to a String cannot fail.
    let _ = match column.kind {
        Kind::Int {
            unsigned: false, ..
        } => {
            let text = integer.format(a.as_primitive::<Int64Type>().value(i));
            return put_lenenc_bytes(out, text.as_bytes());
        }
        Kind::Int { unsigned: true, .. } => {
            let text = integer.format(a.as_primitive::<UInt64Type>().value(i));
            return put_lenenc_bytes(out, text.as_bytes());
        }
        Kind::Float => write!(scratch, "{}", a.as_primitive::<Float32Type>().value(i)),
        Kind::Double => write!(scratch, "{}", a.as_primitive::<Float64Type>().value(i)),
        Kind::Date => {
            let day = date_of(a.as_primitive::<Date32Type>().value(i));
            write!(
                scratch,
                "{:04}-{:02}-{:02}",
                day.year(),
                day.month(),
                day.day()
            )
        }
        Kind::DateTime => {
            let (at, micros) = datetime_at(a, i);
            let whole = at.format("%Y-%m-%d %H:%M:%S");
            if micros == 0 {
                write!(scratch, "{whole}")
            } else {
                write!(scratch, "{whole}.{micros:06}")
            }
        }
        Kind::Time => {
            let (h, m, s, micros) = time_parts(a.as_primitive::<Time64MicrosecondType>().value(i));
            if micros == 0 {
                write!(scratch, "{h:02}:{m:02}:{s:02}")
            } else {
                write!(scratch, "{h:02}:{m:02}:{s:02}.{micros:06}")
            }
        }
        Kind::Decimal | Kind::Text => return put_lenenc_bytes(out, text_at(a, i).as_bytes()),
        Kind::Blob => return put_lenenc_bytes(out, a.as_binary::<i64>().value(i)),
    };
    put_lenenc_bytes(out, scratch.as_bytes());
}

/// Row `i` of a string column of any of Arrow's layouts ([`values`] keeps them as they are).
fn text_at(a: &ArrayRef, i: usize) -> &str {
    match a.data_type() {
        DataType::Utf8View => a.as_string_view().value(i),
        DataType::LargeUtf8 => a.as_string::<i64>().value(i),
        _ => a.as_string::<i32>().value(i),
    }
}

/// Row `i` of a microsecond timestamp column, and its microseconds.
fn datetime_at(a: &ArrayRef, i: usize) -> (chrono::NaiveDateTime, u32) {
    let at = a
        .as_primitive::<TimestampMicrosecondType>()
        .value_as_datetime(i)
        .unwrap_or_default();
    (at, at.nanosecond() / 1000)
}

fn time_parts(micros: i64) -> (i64, i64, i64, i64) {
    let seconds = micros.div_euclid(1_000_000);
    (
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        micros.rem_euclid(1_000_000),
    )
}

fn binary_value(out: &mut Vec<u8>, column: &Values, i: usize) {
    let a = &column.array;
    match column.kind {
        Kind::Int {
            bytes,
            unsigned: false,
        } => {
            let v = a.as_primitive::<Int64Type>().value(i);
            out.extend_from_slice(&v.to_le_bytes()[..usize::from(bytes)]);
        }
        Kind::Int {
            bytes,
            unsigned: true,
        } => {
            let v = a.as_primitive::<UInt64Type>().value(i);
            out.extend_from_slice(&v.to_le_bytes()[..usize::from(bytes)]);
        }
        Kind::Float => {
            out.extend_from_slice(&a.as_primitive::<Float32Type>().value(i).to_le_bytes())
        }
        Kind::Double => {
            out.extend_from_slice(&a.as_primitive::<Float64Type>().value(i).to_le_bytes());
        }
        Kind::Date => {
            let day = date_of(a.as_primitive::<Date32Type>().value(i));
            out.push(4);
            put_date(out, day);
        }
        Kind::DateTime => {
            let (at, micros) = datetime_at(a, i);
            out.push(if micros == 0 { 7 } else { 11 });
            put_date(out, at.date());
            out.extend_from_slice(&[at.hour() as u8, at.minute() as u8, at.second() as u8]);
            if micros != 0 {
                out.extend_from_slice(&micros.to_le_bytes());
            }
        }
        Kind::Time => {
            let (h, m, s, micros) = time_parts(a.as_primitive::<Time64MicrosecondType>().value(i));
            out.push(if micros == 0 { 8 } else { 12 });
            out.push(0); // not negative
            out.extend_from_slice(&((h / 24) as u32).to_le_bytes());
            out.extend_from_slice(&[(h % 24) as u8, m as u8, s as u8]);
            if micros != 0 {
                out.extend_from_slice(&(micros as u32).to_le_bytes());
            }
        }
        Kind::Decimal | Kind::Text => {
            put_lenenc_bytes(out, text_at(a, i).as_bytes());
        }
        Kind::Blob => put_lenenc_bytes(out, a.as_binary::<i64>().value(i)),
    }
}

fn put_date(out: &mut Vec<u8>, day: NaiveDate) {
    out.extend_from_slice(&(day.year() as u16).to_le_bytes());
    out.extend_from_slice(&[day.month() as u8, day.day() as u8]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{BooleanArray, Decimal128Array, Int32Array};
    use datafusion::arrow::datatypes::Schema;

    fn definition(data_type: DataType) -> ColumnDefinition {
        ColumnDefinition::new(&Field::new("c", data_type, true), None)
    }

    #[test]
    fn definitions_carry_mysql_types_lengths_and_decimals() {
        let int = definition(DataType::Int32);
        assert_eq!(
            (int.type_code, int.length, int.decimals),
            (code::LONG, 11, 0)
        );
        let unsigned = definition(DataType::UInt64);
        assert_eq!((unsigned.type_code, unsigned.length), (code::LONGLONG, 20));
        assert_ne!(unsigned.flags & flag::UNSIGNED, 0);
        let boolean = definition(DataType::Boolean);
        assert_eq!((boolean.type_code, boolean.length), (code::TINY, 1));
        let decimal = definition(DataType::Decimal128(10, 2));
        assert_eq!(
            (decimal.type_code, decimal.length, decimal.decimals),
            (code::NEWDECIMAL, 12, 2)
        );
        let text = definition(DataType::Utf8View);
        assert_eq!((text.type_code, text.charset), (code::VAR_STRING, UTF8MB4));
        let origin = ColumnOrigin {
            database: "db".into(),
            table: "t".into(),
        };
        let named = ColumnDefinition::new(&Field::new("c", DataType::Int64, false), Some(&origin));
        let encoded = named.encode();
        assert!(encoded.starts_with(b"\x03def\x02db\x01t\x01t\x01c\x01c\x0c"));
        assert_eq!(named.flags & flag::NOT_NULL, flag::NOT_NULL);
    }

    #[test]
    fn binary_rows_use_the_announced_widths() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int32, true),
            Field::new("b", DataType::Boolean, true),
            Field::new("d", DataType::Decimal128(5, 2), true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(vec![Some(-2), None])),
                Arc::new(BooleanArray::from(vec![Some(true), Some(false)])),
                Arc::new(
                    Decimal128Array::from(vec![Some(12345), None])
                        .with_precision_and_scale(5, 2)
                        .unwrap(),
                ),
            ],
        )
        .unwrap();
        let mut rows = Vec::new();
        encode_rows(&batch, RowFormat::Binary, |r| rows.push(r.to_vec())).unwrap();
        assert_eq!(rows[0], b"\x00\x00\xfe\xff\xff\xff\x01\x06123.45");
        // i and d NULL: bits 2 and 4.
        assert_eq!(rows[1], b"\x00\x14\x00");
        let mut text = Vec::new();
        encode_rows(&batch, RowFormat::Text, |r| text.push(r.to_vec())).unwrap();
        assert_eq!(text[0], b"\x02-2\x011\x06123.45");
        assert_eq!(text[1], b"\xfb\x010\xfb");
    }

    /// A list, a struct and a map are sent as the JSON DESCRIBE announces, nulls inside kept.
    #[test]
    fn nested_values_are_sent_as_json() {
        use datafusion::arrow::array::{Float64Array, ListArray, MapBuilder, StructArray};
        use datafusion::arrow::array::{Int64Builder, StringBuilder as Strings};
        use datafusion::arrow::datatypes::Int64Type;
        let list =
            ListArray::from_iter_primitive::<Int64Type, _, _>([Some(vec![Some(1), None]), None]);
        let point = StructArray::from(vec![
            (
                Arc::new(Field::new("x", DataType::Float64, true)),
                Arc::new(Float64Array::from(vec![Some(1.5), None])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("y", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec![Some("a\"b"), Some("c")])) as ArrayRef,
            ),
        ]);
        let mut attrs = MapBuilder::new(None, Strings::new(), Int64Builder::new());
        attrs.keys().append_value("k");
        attrs.values().append_value(1);
        attrs.append(true).unwrap();
        attrs.append(true).unwrap();
        let columns: Vec<ArrayRef> =
            vec![Arc::new(list), Arc::new(point), Arc::new(attrs.finish())];
        let fields: Vec<Field> = (columns.iter().zip(["l", "p", "m"]))
            .map(|(c, name)| Field::new(name, c.data_type().clone(), true))
            .collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
        let mut text = Vec::new();
        encode_rows(&batch, RowFormat::Text, |r| text.push(r.to_vec())).unwrap();
        assert_eq!(
            text[0],
            b"\x08[1,null]\x14{\"x\":1.5,\"y\":\"a\\\"b\"}\x07{\"k\":1}"
        );
        assert_eq!(text[1], b"\xfb\x12{\"x\":null,\"y\":\"c\"}\x02{}");
    }
}
