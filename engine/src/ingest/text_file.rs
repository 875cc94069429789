//! A delimited text file as it arrives, in chunks of any size: records cut from it, the lines
//! before `skip_lines` dropped, the rest made into batches of the table's rows.

use std::io;

use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use futures::{Stream, StreamExt};

use crate::ingest::delimited::{Delimiters, Fields, Records};
use crate::ingest::text_rows::{BATCH_ROWS, TextRows};

pub struct TextFile<S> {
    file: S,
    records: Records,
    fields: Fields,
    rows: TextRows,
    skip_lines: u64,
    ended: bool,
}

impl<S: Stream<Item = io::Result<Bytes>> + Unpin> TextFile<S> {
    pub fn new(file: S, delimiters: Delimiters, skip_lines: u64, rows: TextRows) -> Self {
        Self {
            file,
            records: Records::new(delimiters),
            fields: Fields::default(),
            rows,
            skip_lines,
            ended: false,
        }
    }

    /// Rows skipped as bad so far.
    pub fn skipped(&self) -> u64 {
        self.rows.skipped()
    }

    /// The next batch of rows, reading more of the file as needed; None once it is all read.
    pub async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            while self.rows.rows() < BATCH_ROWS && self.records.next(&mut self.fields)? {
                let line = self.records.line();
                if line > self.skip_lines {
                    self.rows.push(&self.fields, line)?;
                }
            }
            if self.rows.rows() >= BATCH_ROWS || self.ended {
                match self.rows.finish()? {
                    Some(batch) => return Ok(Some(batch)),
                    None if self.ended => return Ok(None),
                    None => {}
                }
            }
            match self.file.next().await {
                Some(chunk) => self.records.push(&chunk.map_err(DataFusionError::IoError)?),
                None => {
                    self.records.end();
                    self.ended = true;
                }
            }
        }
    }
}
