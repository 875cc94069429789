//! A prepared statement's parameters as the binary protocol sends them (COM_STMT_EXECUTE),
//! turned into typed DataFusion values: integers, doubles, exact decimals, strings, blobs,
//! dates, times and NULL keep their types, so a bound value is data, never SQL. Every read is
//! checked: a truncated or inconsistent packet is an error for the client, never a panic.

use std::collections::HashMap;

use datafusion::arrow::datatypes::i256;
use datafusion::common::ScalarValue;

use super::columns::code;
use super::wire::{Malformed, Reader};

/// What a statement remembers between executions: the parameter types last bound (a client
/// may send them once), and values sent ahead in pieces (COM_STMT_SEND_LONG_DATA).
#[derive(Debug, Default)]
pub struct Bindings {
    pub count: usize,
    types: Option<Vec<(u8, bool)>>,
    pub long_data: HashMap<u16, Vec<u8>>,
}

impl Bindings {
    pub fn new(count: usize) -> Self {
        Self {
            count,
            ..Self::default()
        }
    }

    /// The values of one COM_STMT_EXECUTE, from its body after the statement id.
    pub fn values(&mut self, body: &[u8]) -> Result<Vec<ScalarValue>, String> {
        let malformed = |Malformed| "malformed COM_STMT_EXECUTE packet".to_string();
        let mut r = Reader::new(body);
        r.take(1 + 4).map_err(malformed)?; // cursor flags, iteration count
        if self.count == 0 {
            return Ok(Vec::new());
        }
        let nulls = r.take(self.count.div_ceil(8)).map_err(malformed)?.to_vec();
        if r.u8().map_err(malformed)? == 1 {
            let types = (0..self.count)
                .map(|_| Ok::<_, Malformed>((r.u8()?, r.u8()? & 0x80 != 0)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(malformed)?;
            self.types = Some(types);
        }
        let Some(types) = &self.types else {
            return Err("COM_STMT_EXECUTE sent no parameter types".into());
        };
        let mut values = Vec::with_capacity(self.count);
        for (i, &(type_code, unsigned)) in types.iter().enumerate() {
            let index = i + 1;
            let value = if nulls[i / 8] & (1 << (i % 8)) != 0 || type_code == code::NULL {
                ScalarValue::Null
            } else if let Some(data) = self.long_data.get(&(i as u16)) {
                scalar(index, type_code, unsigned, Raw::Bytes(data))?
            } else {
                let raw = raw(&mut r, type_code).map_err(malformed)?;
                scalar(index, type_code, unsigned, raw)?
            };
            values.push(value);
        }
        self.long_data.clear();
        Ok(values)
    }
}

/// A value's bytes, as its type lays them out.
enum Raw<'a> {
    Int(u64, u8),
    Float(f32),
    Double(f64),
    Bytes(&'a [u8]),
}

fn raw<'a>(r: &mut Reader<'a>, type_code: u8) -> Result<Raw<'a>, Malformed> {
    Ok(match type_code {
        code::TINY => Raw::Int(u64::from(r.u8()?), 1),
        code::SHORT | code::YEAR => Raw::Int(u64::from(r.u16()?), 2),
        code::LONG | code::INT24 => Raw::Int(u64::from(r.u32()?), 4),
        code::LONGLONG => Raw::Int(r.u64()?, 8),
        code::FLOAT => Raw::Float(f32::from_le_bytes(r.array()?)),
        code::DOUBLE => Raw::Double(f64::from_le_bytes(r.array()?)),
        code::DATE | code::DATETIME | code::TIMESTAMP | code::TIME => {
            let len = r.u8()?;
            Raw::Bytes(r.take(usize::from(len))?)
        }
        _ => Raw::Bytes(r.lenenc_bytes()?),
    })
}

/// The value of parameter `index` (from 1, for messages).
fn scalar(
    index: usize,
    type_code: u8,
    unsigned: bool,
    raw: Raw<'_>,
) -> Result<ScalarValue, String> {
    let bad = |why: &str| format!("parameter {index}: {why}");
    Ok(match raw {
        Raw::Int(bits, _) if unsigned => ScalarValue::UInt64(Some(bits)),
        Raw::Int(bits, bytes) => {
            // Sign-extend from the width sent.
            let shift = 64 - 8 * u32::from(bytes);
            ScalarValue::Int64(Some(((bits << shift) as i64) >> shift))
        }
        Raw::Float(f) => ScalarValue::Float32(Some(f)),
        Raw::Double(d) => ScalarValue::Float64(Some(d)),
        Raw::Bytes(bytes) => match type_code {
            code::DATE => date(bytes).ok_or_else(|| bad("not a valid DATE"))?,
            code::DATETIME | code::TIMESTAMP => {
                datetime(bytes).ok_or_else(|| bad("not a valid DATETIME"))?
            }
            code::TIME => time(bytes).ok_or_else(|| {
                bad("TIME values are bound as a time of day, 00:00:00 to 23:59:59.999999")
            })?,
            code::BLOB
            | code::TINY_BLOB
            | code::MEDIUM_BLOB
            | code::LONG_BLOB
            | code::GEOMETRY
            | code::BIT => ScalarValue::Binary(Some(bytes.to_vec())),
            code::DECIMAL | code::NEWDECIMAL => {
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

#[cfg(test)]
mod execute_tests {
    use super::*;

    /// The body of a COM_STMT_EXECUTE after its statement id, binding `params`.
    fn body(nulls: u8, types: &[(u8, u8)], values: &[u8]) -> Vec<u8> {
        let mut out = vec![0, 1, 0, 0, 0, nulls, 1];
        for (t, f) in types {
            out.extend([*t, *f]);
        }
        out.extend_from_slice(values);
        out
    }

    #[test]
    fn typed_values_sign_nulls_and_remembered_types() {
        let mut b = Bindings::new(3);
        let mut values = vec![0xfe]; // TINY -2
        values.extend(7u64.to_le_bytes()); // LONGLONG unsigned 7
        let sent = body(
            0b100,
            &[
                (code::TINY, 0),
                (code::LONGLONG, 0x80),
                (code::VAR_STRING, 0),
            ],
            &values,
        );
        assert_eq!(
            b.values(&sent).unwrap(),
            [
                ScalarValue::Int64(Some(-2)),
                ScalarValue::UInt64(Some(7)),
                ScalarValue::Null
            ]
        );
        // Types not sent again: the last ones hold.
        let mut again = vec![0, 1, 0, 0, 0, 0b011, 0];
        again.extend(b"\x02hi");
        assert_eq!(
            b.values(&again).unwrap(),
            [
                ScalarValue::Null,
                ScalarValue::Null,
                ScalarValue::Utf8(Some("hi".into()))
            ]
        );
    }

    #[test]
    fn truncated_packets_are_errors_not_panics() {
        let mut values = vec![];
        values.extend(1.5f64.to_le_bytes());
        values.extend(b"\x03abc");
        let sent = body(0, &[(code::DOUBLE, 0), (code::VAR_STRING, 0)], &values);
        for cut in 0..sent.len() {
            assert!(
                Bindings::new(2).values(&sent[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        assert!(Bindings::new(2).values(&sent).is_ok());
        assert!(
            Bindings::new(1).values(&[0, 1, 0, 0, 0, 0, 0]).is_err(),
            "no types ever sent"
        );
    }

    #[test]
    fn long_data_stands_in_for_its_value() {
        let mut b = Bindings::new(1);
        b.long_data.insert(0, b"sent in pieces".to_vec());
        let sent = body(0, &[(code::BLOB, 0)], &[]);
        assert_eq!(
            b.values(&sent).unwrap(),
            [ScalarValue::Binary(Some(b"sent in pieces".to_vec()))]
        );
        assert!(b.long_data.is_empty());
    }
}
