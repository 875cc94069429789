//! Parquet files written in memory, for the unit tests that read them.

use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::metadata::{
    PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader,
};
use datafusion::parquet::file::properties::WriterProperties;

/// `batch` written as a file with `properties`, and its footer with the page index it has.
pub fn written(batch: &RecordBatch, properties: WriterProperties) -> (Bytes, Arc<ParquetMetaData>) {
    let mut file = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut file, batch.schema(), Some(properties)).unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
    let file = Bytes::from(file);
    let metadata = (ParquetMetaDataReader::new().with_page_index_policy(PageIndexPolicy::Optional))
        .parse_and_finish(&file)
        .unwrap();
    (file, Arc::new(metadata))
}
