//! Rows of MySQL's delimited text format (what `LOAD DATA` reads and `SELECT … INTO OUTFILE`
//! writes), cut from a file that arrives in chunks of any size.
//!
//! The format is not CSV: a field's characters may be escaped (`\t`, `\n`, `\\`, `\,` …, and
//! `\N` alone is NULL), enclosure is optional per field, and fields and lines end with
//! terminators of any length. The `csv` crate has no escape character and a one-byte
//! terminator, so the rules are written here, as MySQL's manual states them (LOAD DATA, "Field
//! and Line Handling"): an enclosed field ends at the enclosing character followed by a field or
//! line terminator, and a doubled enclosing character inside it is one; with an enclosing
//! character set, an unenclosed `NULL` is NULL; a line without the `STARTING BY` prefix is skipped.
//! An empty line is no row (MySQL would load one of defaults, with a warning).

use datafusion::common::{exec_err, plan_err};
use datafusion::error::Result;

/// A record longer than this is refused: more likely a wrong terminator than a real row.
pub const MAX_RECORD_BYTES: usize = 64 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delimiters {
    pub field_end: Vec<u8>,
    pub enclosure: Option<u8>,
    pub escape: Option<u8>,
    pub line_end: Vec<u8>,
    pub line_start: Vec<u8>,
    /// An unenclosed empty field is NULL (CSV's rule, as PostgreSQL's COPY reads it; MySQL's
    /// format reads it as an empty string).
    pub empty_is_null: bool,
}

/// MySQL's defaults: tab-separated lines, backslash escapes, no enclosure.
impl Default for Delimiters {
    fn default() -> Self {
        Self {
            field_end: b"\t".to_vec(),
            enclosure: None,
            escape: Some(b'\\'),
            line_end: b"\n".to_vec(),
            line_start: Vec::new(),
            empty_is_null: false,
        }
    }
}

impl Delimiters {
    pub fn check(&self) -> Result<()> {
        if self.field_end.is_empty() {
            return plan_err!(
                "FIELDS TERMINATED BY '' (fixed-width rows) is not supported; name a terminator"
            );
        }
        if self.line_end.is_empty() {
            return plan_err!("LINES TERMINATED BY '' is not supported; name a terminator");
        }
        Ok(())
    }
}

/// One record's fields, unescaped: reused from record to record.
#[derive(Debug, Default)]
pub struct Fields {
    bytes: Vec<u8>,
    /// Per field: where it ends in `bytes`, and whether it is NULL.
    ends: Vec<(usize, bool)>,
}

impl Fields {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Field `i`'s bytes, or None for NULL.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let start = if i == 0 { 0 } else { self.ends[i - 1].0 };
        let (end, null) = self.ends[i];
        (!null).then(|| &self.bytes[start..end])
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    fn is_blank(&self) -> bool {
        matches!(self.ends.as_slice(), [(0, _)])
    }
}

/// Cuts records out of the bytes given to it, keeping an unfinished one until more arrives.
#[derive(Debug)]
pub struct Records {
    delimiters: Delimiters,
    pending: Vec<u8>,
    /// Where the next record starts in `pending`.
    at: usize,
    /// Records cut so far (a record's line number, counting from 1, once it is cut).
    line: u64,
    ended: bool,
}

/// How a record's field ended.
enum FieldEnd {
    Field,
    Line,
    /// The bytes so far end inside the record.
    MoreNeeded,
}

impl Records {
    pub fn new(delimiters: Delimiters) -> Self {
        Self {
            delimiters,
            pending: Vec::new(),
            at: 0,
            line: 0,
            ended: false,
        }
    }

    /// More of the file.
    pub fn push(&mut self, chunk: &[u8]) {
        self.pending.drain(..self.at);
        self.at = 0;
        self.pending.extend_from_slice(chunk);
    }

    /// The file has ended: the last record needs no terminator.
    pub fn end(&mut self) {
        self.ended = true;
    }

    /// The line number of the record last cut.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Cuts the next record into `fields`: false when the bytes given so far hold no whole one.
    pub fn next(&mut self, fields: &mut Fields) -> Result<bool> {
        loop {
            fields.clear();
            let Some(end) = self.record(fields) else {
                self.skip_to_a_line_start();
                if self.pending.len() - self.at > MAX_RECORD_BYTES {
                    return exec_err!(
                        "line {} is longer than {} MiB: are FIELDS and LINES TERMINATED BY right?",
                        self.line + 1,
                        MAX_RECORD_BYTES >> 20
                    );
                }
                return Ok(false);
            };
            self.at = end;
            self.line += 1;
            if !fields.is_blank() {
                return Ok(true);
            }
        }
    }

    /// With a `STARTING BY` prefix nowhere in the bytes held, drops them but for a tail that may
    /// begin one: lines without the prefix are skipped, however many there are.
    fn skip_to_a_line_start(&mut self) {
        let prefix = &self.delimiters.line_start;
        let rest = &self.pending[self.at..];
        if !prefix.is_empty() && memchr::memmem::find(rest, prefix).is_none() {
            self.at = self.pending.len() - (prefix.len() - 1).min(rest.len());
        }
    }

    /// Reads the record at `self.at` into `fields`: where it ends, or None if it is not whole.
    fn record(&self, fields: &mut Fields) -> Option<usize> {
        let d = &self.delimiters;
        let mut at = self.at;
        if at == self.pending.len() {
            return None; // nothing left, ended or not
        }
        if !d.line_start.is_empty() {
            let rest = &self.pending[at..];
            match memchr::memmem::find(rest, &d.line_start) {
                Some(found) => at += found + d.line_start.len(),
                // Skipped to the end: a prefix may yet arrive, or (ended) no record is left.
                None => return None,
            }
        }
        loop {
            let (end, next) = self.field(at, fields)?;
            at = next;
            match end {
                FieldEnd::Field => continue,
                FieldEnd::Line => return Some(at),
                FieldEnd::MoreNeeded => return None,
            }
        }
    }

    /// Reads the field at `at`: how it ended and where the next one starts.
    fn field(&self, mut at: usize, fields: &mut Fields) -> Option<(FieldEnd, usize)> {
        let d = &self.delimiters;
        let data = &self.pending;
        let out = &mut fields.bytes;
        let start = out.len();
        let enclosed = d.enclosure.is_some() && data.get(at) == d.enclosure.as_ref();
        if enclosed {
            at += 1;
        }
        let raw_start = at;
        let mut escaped_n = false;
        let end = loop {
            let Some(&byte) = data.get(at) else {
                break self.at_end();
            };
            if Some(byte) == d.escape {
                let Some(&next) = data.get(at + 1) else {
                    break self.at_end();
                };
                escaped_n = next == b'N' && at == raw_start;
                out.push(unescape(next));
                at += 2;
                continue;
            }
            if enclosed {
                if Some(byte) == d.enclosure {
                    let after = at + 1;
                    let rest = &data[after..];
                    if rest.first() == Some(&byte) {
                        out.push(byte); // doubled: one enclosing character
                        at += 2;
                        continue;
                    }
                    if rest.starts_with(&d.field_end) {
                        at = after + d.field_end.len();
                        break FieldEnd::Field;
                    }
                    if rest.starts_with(&d.line_end) {
                        at = after + d.line_end.len();
                        break FieldEnd::Line;
                    }
                    if rest.is_empty() {
                        at = after;
                        break self.at_end();
                    }
                    if self.could_be_terminator(after) {
                        break FieldEnd::MoreNeeded;
                    }
                    // A stray enclosing character inside the field is a character.
                }
                let rest = &data[at + 1..];
                let quote = d.enclosure.unwrap_or(byte);
                let next = match d.escape {
                    Some(escape) => memchr::memchr2(quote, escape, rest),
                    None => memchr::memchr(quote, rest),
                };
                let run = next.map_or(data.len(), |i| at + 1 + i);
                out.extend_from_slice(&data[at..run]);
                at = run;
                continue;
            }
            if data[at..].starts_with(&d.field_end) {
                at += d.field_end.len();
                break FieldEnd::Field;
            }
            if data[at..].starts_with(&d.line_end) {
                at += d.line_end.len();
                break FieldEnd::Line;
            }
            if self.could_be_terminator(at) {
                break FieldEnd::MoreNeeded;
            }
            // Up to the next byte that may start an escape or a terminator, in one copy.
            let run = next_special(&data[at + 1..], d).map_or(data.len(), |i| at + 1 + i);
            out.extend_from_slice(&data[at..run]);
            at = run;
        };
        if matches!(end, FieldEnd::MoreNeeded) {
            return None;
        }
        let value = &out[start..];
        let null = !enclosed
            && ((escaped_n && value == b"N")
                || (d.enclosure.is_some() && value == b"NULL")
                || (d.empty_is_null && value.is_empty()));
        fields.ends.push((out.len(), null));
        Some((end, at))
    }

    /// How a field that reached the end of the bytes so far ends.
    fn at_end(&self) -> FieldEnd {
        if self.ended {
            FieldEnd::Line
        } else {
            FieldEnd::MoreNeeded
        }
    }

    /// Whether the bytes from `at` to the end are a proper start of a terminator, so more bytes
    /// decide (a two-byte `\r\n` split between chunks).
    fn could_be_terminator(&self, at: usize) -> bool {
        if self.ended {
            return false;
        }
        let rest = &self.pending[at..];
        let d = &self.delimiters;
        [&d.field_end, &d.line_end]
            .iter()
            .any(|t| rest.len() < t.len() && t.starts_with(rest))
    }
}

/// The character an escape sequence stands for (MySQL's table; any other character is itself).
fn unescape(c: u8) -> u8 {
    match c {
        b'0' => 0,
        b'b' => 8,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'Z' => 26,
        other => other,
    }
}

/// The first byte of `data` that may begin an escape or a terminator.
fn next_special(data: &[u8], d: &Delimiters) -> Option<usize> {
    let (field, line) = (d.field_end[0], d.line_end[0]);
    match d.escape {
        Some(escape) => memchr::memchr3(escape, field, line, data),
        None => memchr::memchr2(field, line, data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record of `text` given in chunks of `chunk` bytes, NULL as None.
    fn read(d: &Delimiters, text: &[u8], chunk: usize) -> Vec<Vec<Option<String>>> {
        let mut records = Records::new(d.clone());
        let mut fields = Fields::default();
        let mut out = Vec::new();
        let mut take = |records: &mut Records, out: &mut Vec<_>| {
            while records.next(&mut fields).unwrap() {
                out.push(
                    (0..fields.len())
                        .map(|i| {
                            fields
                                .get(i)
                                .map(|b| String::from_utf8(b.to_vec()).unwrap())
                        })
                        .collect(),
                );
            }
        };
        for part in text.chunks(chunk.max(1)) {
            records.push(part);
            take(&mut records, &mut out);
        }
        records.end();
        take(&mut records, &mut out);
        out
    }

    fn row(values: &[Option<&str>]) -> Vec<Option<String>> {
        values.iter().map(|v| v.map(str::to_string)).collect()
    }

    fn csv() -> Delimiters {
        Delimiters {
            field_end: b",".to_vec(),
            enclosure: Some(b'"'),
            line_end: b"\r\n".to_vec(),
            ..Delimiters::default()
        }
    }

    #[test]
    fn tab_separated_with_escapes_and_nulls() {
        let text = b"1\ta\\tb\n2\t\\N\n3\t\\\\N\n4\tx\\\ny\n5\tlast";
        let want = vec![
            row(&[Some("1"), Some("a\tb")]),
            row(&[Some("2"), None]),
            row(&[Some("3"), Some("\\N")]),
            row(&[Some("4"), Some("x\ny")]),
            row(&[Some("5"), Some("last")]),
        ];
        for chunk in [1, 2, 3, 7, 1000] {
            assert_eq!(
                read(&Delimiters::default(), text, chunk),
                want,
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn enclosed_fields_hold_terminators_and_doubled_quotes() {
        let text = b"1,\"a,b\"\r\n2,\"say \"\"hi\"\"\"\r\n3,\"two\r\nlines\"\r\n4,NULL\r\n5,\"NULL\"\r\n6,\"\"";
        let want = vec![
            row(&[Some("1"), Some("a,b")]),
            row(&[Some("2"), Some("say \"hi\"")]),
            row(&[Some("3"), Some("two\r\nlines")]),
            row(&[Some("4"), None]),
            row(&[Some("5"), Some("NULL")]),
            row(&[Some("6"), Some("")]),
        ];
        for chunk in [1, 2, 5, 1000] {
            assert_eq!(read(&csv(), text, chunk), want, "chunk {chunk}");
        }
    }

    #[test]
    fn line_prefixes_skip_lines_without_them_and_blank_lines_are_no_rows() {
        let d = Delimiters {
            field_end: b",".to_vec(),
            line_start: b"xxx".to_vec(),
            ..Delimiters::default()
        };
        let text = b"xxx1,a\nnoise\nyyyxxx2,b\n\n";
        for chunk in [1, 4, 100] {
            assert_eq!(
                read(&d, text, chunk),
                vec![row(&[Some("1"), Some("a")]), row(&[Some("2"), Some("b")])]
            );
        }
        let blank = read(&Delimiters::default(), b"1\ta\n\n\n2\tb\n", 3);
        assert_eq!(blank.len(), 2);
    }

    #[test]
    fn lines_without_the_prefix_are_dropped_as_they_arrive() {
        let d = Delimiters {
            line_start: b">>".to_vec(),
            ..Delimiters::default()
        };
        let mut records = Records::new(d);
        let mut fields = Fields::default();
        let noise = vec![b'x'; 1 << 20];
        for _ in 0..(MAX_RECORD_BYTES >> 20) + 2 {
            records.push(&noise);
            assert!(!records.next(&mut fields).unwrap());
        }
        records.push(b">");
        records.push(b">1\tkept\n");
        assert!(records.next(&mut fields).unwrap());
        assert_eq!(fields.get(1), Some(&b"kept"[..]));
    }

    #[test]
    fn line_numbers_count_every_record_and_a_runaway_record_is_refused() {
        let mut records = Records::new(Delimiters::default());
        let mut fields = Fields::default();
        records.push(b"a\nb\nc");
        assert!(records.next(&mut fields).unwrap());
        assert!(records.next(&mut fields).unwrap());
        assert_eq!(records.line(), 2);
        assert!(!records.next(&mut fields).unwrap(), "c may go on");
        records.end();
        assert!(records.next(&mut fields).unwrap());
        assert_eq!((records.line(), fields.get(0)), (3, Some(&b"c"[..])));

        let mut records = Records::new(Delimiters::default());
        records.push(&vec![b'x'; MAX_RECORD_BYTES + 1]);
        let e = records.next(&mut fields).unwrap_err().to_string();
        assert!(e.contains("line 1 is longer than 64 MiB"), "{e}");
    }
}
