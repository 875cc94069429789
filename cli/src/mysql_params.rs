//! A prepared statement's parameters as the binary protocol sends them (COM_STMT_EXECUTE), turned
//! into typed DataFusion values: integers, doubles, exact decimals, strings, blobs, dates, times
//! and NULL keep their types, so a bound value is data, never SQL.
//!
//! Dates and times are decoded here from their packed bytes: opensrv-mysql's conversions panic
//! on values they do not expect (a negative TIME, a zero date).

use datafusion::arrow::datatypes::i256;
use datafusion::common::ScalarValue;
use opensrv_mysql::{ColumnType, ParamValue, ValueInner};

/// The value of parameter `index` (from 1, for messages).
pub fn scalar(index: usize, param: ParamValue<'_>) -> Result<ScalarValue, String> {
    let bad = |why: &str| format!("parameter {index}: {why}");
    Ok(match param.value.into_inner() {
        ValueInner::NULL => ScalarValue::Null,
        ValueInner::Int(i) => ScalarValue::Int64(Some(i)),
        ValueInner::UInt(u) => ScalarValue::UInt64(Some(u)),
        ValueInner::Double(d) if param.coltype == ColumnType::MYSQL_TYPE_FLOAT => {
            ScalarValue::Float32(Some(d as f32))
        }
        ValueInner::Double(d) => ScalarValue::Float64(Some(d)),
        ValueInner::Bytes(bytes) => match param.coltype {
            ColumnType::MYSQL_TYPE_BLOB
            | ColumnType::MYSQL_TYPE_TINY_BLOB
            | ColumnType::MYSQL_TYPE_MEDIUM_BLOB
            | ColumnType::MYSQL_TYPE_LONG_BLOB
            | ColumnType::MYSQL_TYPE_GEOMETRY
            | ColumnType::MYSQL_TYPE_BIT => ScalarValue::Binary(Some(bytes.to_vec())),
            ColumnType::MYSQL_TYPE_DECIMAL | ColumnType::MYSQL_TYPE_NEWDECIMAL => {
                let text = std::str::from_utf8(bytes).map_err(|_| bad("decimal is not text"))?;
                decimal(text).ok_or_else(|| bad(&format!("'{text}' is not a decimal")))?
            }
            // Drivers send byte strings as text types too: bytes that are not UTF-8 bind as
            // the binary string MySQL would take them for.
            _ => match String::from_utf8(bytes.to_vec()) {
                Ok(text) => ScalarValue::Utf8(Some(text)),
                Err(e) => ScalarValue::Binary(Some(e.into_bytes())),
            },
        },
        ValueInner::Date(bytes) => date(bytes).ok_or_else(|| bad("not a valid DATE"))?,
        ValueInner::Datetime(bytes) => {
            datetime(bytes).ok_or_else(|| bad("not a valid DATETIME"))?
        }
        ValueInner::Time(bytes) => time(bytes).ok_or_else(|| {
            bad("TIME values are bound as a time of day, 00:00:00 to 23:59:59.999999")
        })?,
    })
}

/// `-123.4500` as Decimal128(7, 4): the digits the client sent, none lost.
fn decimal(text: &str) -> Option<ScalarValue> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let all = format!("{whole}{fraction}");
    let precision = all.trim_start_matches('0').len().max(fraction.len()).max(1);
    if precision > 38 {
        // Wider than Decimal128: keep every digit in Decimal256.
        let value = i256::from_string(&all)?;
        let value = if negative {
            value.wrapping_neg()
        } else {
            value
        };
        return (precision <= 76)
            .then(|| ScalarValue::Decimal256(Some(value), precision as u8, fraction.len() as i8));
    }
    let value: i128 = all.parse().ok()?;
    Some(ScalarValue::Decimal128(
        Some(if negative { -value } else { value }),
        precision as u8,
        fraction.len() as i8,
    ))
}

/// Year (u16), month, day: 4 bytes, or 0 for the zero date, which has no DATE in Arrow.
fn date(bytes: &[u8]) -> Option<ScalarValue> {
    let day = calendar_day(bytes)?;
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
    Some(ScalarValue::Date32(Some(
        i32::try_from((day - epoch).num_days()).ok()?,
    )))
}

fn calendar_day(bytes: &[u8]) -> Option<chrono::NaiveDate> {
    let [y0, y1, month, day, ..] = *bytes else {
        return None;
    };
    chrono::NaiveDate::from_ymd_opt(
        i32::from(u16::from_le_bytes([y0, y1])),
        u32::from(month),
        u32::from(day),
    )
}

/// A date, then hour, minute, second (7 bytes), then microseconds (11 bytes).
fn datetime(bytes: &[u8]) -> Option<ScalarValue> {
    let day = calendar_day(bytes)?;
    let (h, m, s) = match bytes.len() {
        4 => (0, 0, 0),
        7 | 11 => (bytes[4], bytes[5], bytes[6]),
        _ => return None,
    };
    let micros = micros(bytes, 11, 7)?;
    let at = day.and_hms_micro_opt(u32::from(h), u32::from(m), u32::from(s), micros)?;
    Some(ScalarValue::TimestampMicrosecond(
        Some(at.and_utc().timestamp_micros()),
        None,
    ))
}

/// Sign, days (u32), hour, minute, second (8 bytes), then microseconds (12 bytes). MySQL's TIME
/// is a duration of up to ±838 hours; Arrow's Time64 is a time of day, so only those bind.
fn time(bytes: &[u8]) -> Option<ScalarValue> {
    let (negative, days, h, m, s) = match bytes.len() {
        0 => (false, 0, 0, 0, 0),
        8 | 12 => (
            bytes[0] != 0,
            u32::from_le_bytes(bytes[1..5].try_into().ok()?),
            bytes[5],
            bytes[6],
            bytes[7],
        ),
        _ => return None,
    };
    let micros = micros(bytes, 12, 8)?;
    if negative || days != 0 || h > 23 || m > 59 || s > 59 {
        return None;
    }
    let seconds = i64::from(h) * 3600 + i64::from(m) * 60 + i64::from(s);
    Some(ScalarValue::Time64Microsecond(Some(
        seconds * 1_000_000 + i64::from(micros),
    )))
}

/// The trailing microseconds of a packed date or time of `full` bytes (at `at`), or 0.
fn micros(bytes: &[u8], full: usize, at: usize) -> Option<u32> {
    if bytes.len() < full {
        return Some(0);
    }
    let micros = u32::from_le_bytes(bytes[at..at + 4].try_into().ok()?);
    (micros < 1_000_000).then_some(micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_keep_their_digits() {
        assert_eq!(
            decimal("-123.4500"),
            Some(ScalarValue::Decimal128(Some(-1234500), 7, 4))
        );
        assert_eq!(
            decimal("0.05"),
            Some(ScalarValue::Decimal128(Some(5), 2, 2))
        );
        assert_eq!(decimal("7"), Some(ScalarValue::Decimal128(Some(7), 1, 0)));
        let wide = "1".repeat(40);
        assert!(matches!(
            decimal(&wide),
            Some(ScalarValue::Decimal256(_, 40, 0))
        ));
        for bad in ["", ".", "1e5", "1.2.3", "--1", "12a", "1 "] {
            assert_eq!(decimal(bad), None, "{bad}");
        }
    }

    #[test]
    fn dates_and_times_are_decoded_from_their_bytes() {
        let date_bytes = [0xe8, 0x07, 2, 29]; // 2024-02-29
        assert_eq!(date(&date_bytes), Some(ScalarValue::Date32(Some(19782))));
        assert_eq!(date(&[0xe8, 0x07, 2, 30]), None);
        assert_eq!(date(&[]), None);
        let mut dt = date_bytes.to_vec();
        dt.extend([13, 14, 15]);
        dt.extend(250_000u32.to_le_bytes());
        let expected = 19782 * 86_400_000_000 + (13 * 3600 + 14 * 60 + 15) * 1_000_000 + 250_000;
        assert_eq!(
            datetime(&dt),
            Some(ScalarValue::TimestampMicrosecond(Some(expected), None))
        );
        let mut t = vec![0, 0, 0, 0, 0, 1, 2, 3];
        assert_eq!(
            time(&t),
            Some(ScalarValue::Time64Microsecond(Some(3723 * 1_000_000)))
        );
        t[0] = 1; // negative: no time of day
        assert_eq!(time(&t), None);
    }
}
