//! Arrow results as MySQL result sets: column types clients understand (BIGINT [UNSIGNED],
//! DOUBLE, DECIMAL, DATE, DATETIME, VARCHAR, BLOB) and values encoded for the text protocol
//! (queries) and the binary protocol (prepared statements) alike.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray};
use datafusion::arrow::compute::{can_cast_types, cast};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Float64Type, Int64Type, TimeUnit, TimestampMicrosecondType, UInt64Type,
};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use opensrv_mysql::{Column, ColumnFlags, ColumnType, RowWriter};
use tokio::io::AsyncWrite;

/// How one Arrow column is sent.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Signed,
    Unsigned,
    Float,
    Decimal,
    Date,
    DateTime,
    Text,
    Blob,
}

fn kind(data_type: &DataType) -> Kind {
    match data_type {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Boolean => Kind::Signed,
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => Kind::Unsigned,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => Kind::Float,
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => Kind::Decimal,
        DataType::Date32 | DataType::Date64 => Kind::Date,
        DataType::Timestamp(..) => Kind::DateTime,
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => Kind::Blob,
        DataType::Dictionary(_, value) => kind(value),
        _ => Kind::Text,
    }
}

pub fn columns(batch_schema: &datafusion::arrow::datatypes::Schema) -> Vec<Column> {
    batch_schema
        .fields()
        .iter()
        .map(|field| column(field.name(), field.data_type(), field.is_nullable()))
        .collect()
}

/// How a value of `data_type` is described to clients: result columns and statement parameters.
pub fn column(name: &str, data_type: &DataType, nullable: bool) -> Column {
    let kind = kind(data_type);
    let coltype = match kind {
        Kind::Signed | Kind::Unsigned => ColumnType::MYSQL_TYPE_LONGLONG,
        Kind::Float => ColumnType::MYSQL_TYPE_DOUBLE,
        Kind::Decimal => ColumnType::MYSQL_TYPE_NEWDECIMAL,
        Kind::Date => ColumnType::MYSQL_TYPE_DATE,
        Kind::DateTime => ColumnType::MYSQL_TYPE_DATETIME,
        Kind::Text => ColumnType::MYSQL_TYPE_VAR_STRING,
        Kind::Blob => ColumnType::MYSQL_TYPE_BLOB,
    };
    let mut colflags = ColumnFlags::empty();
    if matches!(kind, Kind::Unsigned) {
        colflags |= ColumnFlags::UNSIGNED_FLAG;
    }
    if matches!(kind, Kind::Blob) {
        colflags |= ColumnFlags::BINARY_FLAG;
    }
    if !nullable {
        colflags |= ColumnFlags::NOT_NULL_FLAG;
    }
    Column {
        table: String::new(),
        column: name.to_string(),
        coltype,
        colflags,
    }
}

/// One column of a batch, cast once to the Arrow type its MySQL values are read from.
struct Prepared {
    kind: Kind,
    array: ArrayRef,
}

fn prepare(array: &ArrayRef) -> Result<Prepared, ArrowError> {
    let kind = kind(array.data_type());
    let target = match kind {
        Kind::Signed => DataType::Int64,
        Kind::Unsigned => DataType::UInt64,
        Kind::Float => DataType::Float64,
        Kind::Date => DataType::Date32,
        Kind::DateTime => DataType::Timestamp(TimeUnit::Microsecond, None),
        Kind::Decimal | Kind::Text => DataType::Utf8,
        Kind::Blob => DataType::LargeBinary,
    };
    let array = if array.data_type() == &target {
        Arc::clone(array)
    } else if can_cast_types(array.data_type(), &target) {
        cast(array, &target)?
    } else {
        // Structs, maps, unions: as text, the way arrow prints them.
        let formatter = ArrayFormatter::try_new(array.as_ref(), &FormatOptions::default())?;
        let text: StringArray = (0..array.len())
            .map(|i| (!array.is_null(i)).then(|| formatter.value(i).to_string()))
            .collect();
        Arc::new(text)
    };
    Ok(Prepared { kind, array })
}

fn invalid(e: ArrowError) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, e)
}

pub async fn write_batch<W: AsyncWrite + Send + Unpin>(
    rows: &mut RowWriter<'_, W>,
    batch: &RecordBatch,
) -> std::io::Result<()> {
    let prepared: Vec<Prepared> = batch
        .columns()
        .iter()
        .map(prepare)
        .collect::<Result<_, _>>()
        .map_err(invalid)?;
    for row in 0..batch.num_rows() {
        for column in &prepared {
            let a = &column.array;
            if a.is_null(row) {
                rows.write_col(None::<i64>)?;
                continue;
            }
            match column.kind {
                Kind::Signed => rows.write_col(a.as_primitive::<Int64Type>().value(row))?,
                Kind::Unsigned => rows.write_col(a.as_primitive::<UInt64Type>().value(row))?,
                Kind::Float => rows.write_col(a.as_primitive::<Float64Type>().value(row))?,
                Kind::Date => rows.write_col(a.as_primitive::<Date32Type>().value_as_date(row))?,
                Kind::DateTime => rows.write_col(
                    a.as_primitive::<TimestampMicrosecondType>()
                        .value_as_datetime(row),
                )?,
                Kind::Decimal | Kind::Text => rows.write_col(a.as_string::<i32>().value(row))?,
                Kind::Blob => rows.write_col(a.as_binary::<i64>().value(row))?,
            }
        }
        rows.end_row().await?;
    }
    Ok(())
}
