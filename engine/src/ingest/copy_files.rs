//! The files a COPY INTO reads: listed under its location (the one file it names, or every file
//! under the prefix that `PATTERN` keeps), each read as its format into batches of the table's
//! rows, one file after another, streamed: a file is never held whole in memory. Each file's
//! rows loaded, rows skipped and error are reported as they happen.

use std::io;
use std::sync::{Arc, Mutex};

use bytes::{Buf, Bytes};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::json::ReaderBuilder;
use datafusion::common::{exec_err, plan_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::parquet::arrow::ParquetRecordBatchStreamBuilder;
use futures::stream::{self, BoxStream};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use sieve_storage::{CopiedFile, parallelism};
use tokio::task::JoinSet;

use crate::ingest::copy_into::FileFormat;
use crate::ingest::fitted_batch::fit_batch;
use crate::ingest::object_file::ObjectFile;
use crate::ingest::text_file::TextFile;
use crate::ingest::text_rows::{BATCH_ROWS, TextRows};

/// Files a COPY reads at once, at most: a Parquet reader holds a row group's column chunks, which
/// may be large in files Sieve did not write.
const FILES_AT_ONCE: usize = 4;

/// One file to read.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// As users name it: `s3://bucket/path`.
    pub url: String,
    /// Where it is in its store, its size, ETag and modification time, as listed.
    pub meta: ObjectMeta,
    /// What the record of copied files knows it by.
    pub identity: CopiedFile,
}

/// What one file gave.
#[derive(Debug, Clone, Default)]
pub struct FileReport {
    pub file: String,
    pub rows: u64,
    pub skipped: u64,
    pub error: Option<String>,
}

/// The files at `path` of `store` (`url`, in `bucket`): the object itself if there is one, else
/// every non-empty object under it as a prefix whose path after it `pattern` matches, in path
/// order.
pub async fn list(
    store: &Arc<dyn ObjectStore>,
    bucket: &str,
    url: &str,
    path: &Path,
    pattern: Option<&regex::Regex>,
) -> Result<Vec<SourceFile>> {
    let named = |meta: ObjectMeta| {
        let url = format!("s3://{bucket}/{}", meta.location);
        SourceFile {
            identity: CopiedFile {
                url: url.clone(),
                bytes: meta.size,
                etag: meta.e_tag.clone(),
                modified_ms: meta.last_modified.timestamp_millis(),
            },
            url,
            meta,
        }
    };
    if !url.ends_with('/')
        && let Ok(meta) = store.head(path).await
    {
        return Ok(vec![named(meta)]);
    }
    let mut files: Vec<SourceFile> = store
        .list(Some(path))
        .map_err(|e| DataFusionError::External(Box::new(e)))
        .try_filter_map(|meta| async move {
            let relative = meta
                .location
                .prefix_match(path)
                .map(|parts| {
                    parts
                        .map(|p| p.as_ref().to_string())
                        .collect::<Vec<_>>()
                        .join("/")
                })
                .unwrap_or_default();
            // An empty object under a prefix holds no rows: the `_SUCCESS` markers Spark and
            // Hadoop leave beside their files are not files to read.
            let kept = meta.size > 0 && pattern.is_none_or(|p| p.is_match(&relative));
            Ok(kept.then(|| named(meta)))
        })
        .try_collect()
        .await?;
    files.sort_by(|a, b| a.meta.location.cmp(&b.meta.location));
    Ok(files)
}

/// Every file's rows as batches of `schema`, in order. With `go_on`, rows that do not fit are
/// skipped and a file that fails ends there (the rows before its failure stay); without, the
/// first failure is the stream's, naming its file. As many files as there are cores, and at most
/// [`FILES_AT_ONCE`], are read at once ([`read_ahead`]), their batches handed on in file order.
pub fn rows(
    files: Vec<SourceFile>,
    store: Arc<dyn ObjectStore>,
    format: FileFormat,
    schema: SchemaRef,
    go_on: bool,
    reports: Arc<Mutex<Vec<FileReport>>>,
) -> BoxStream<'static, Result<RecordBatch>> {
    stream::iter(files)
        .map(move |file| {
            let index = {
                let mut reports = reports.lock().expect("reports lock");
                reports.push(FileReport {
                    file: file.url.clone(),
                    ..FileReport::default()
                });
                reports.len() - 1
            };
            let report = {
                let reports = reports.clone();
                move |update: &dyn Fn(&mut FileReport)| {
                    update(&mut reports.lock().expect("reports lock")[index])
                }
            };
            let url = file.url.clone();
            let url_of_file = url.clone();
            let opened = open(file, store.clone(), format.clone(), schema.clone(), go_on);
            let batches = stream::once(opened)
                .try_flatten()
                .map(move |batch| match batch {
                    Ok((batch, skipped)) => {
                        report(&|r| {
                            r.rows += batch.num_rows() as u64;
                            r.skipped += skipped;
                        });
                        Some(Ok(batch))
                    }
                    Err(e) if go_on => {
                        report(&|r| r.error = Some(e.to_string()));
                        None
                    }
                    Err(e) => Some(exec_err!("{url}: {e}")),
                })
                .take_while(|b| futures::future::ready(b.is_some()))
                .filter_map(futures::future::ready)
                .boxed();
            async move { read_ahead(batches, url_of_file) }
        })
        .buffered(parallelism().min(FILES_AT_ONCE))
        .flatten()
        .boxed()
}

/// `batches` read in a task of its own, at most [`AHEAD`] batches ahead of whoever reads the
/// returned stream: decoding (Parquet pages, CSV fields, JSON) runs on its own core while memory
/// holds a few batches per file. Dropping the stream stops the task; a task that panics ends
/// the stream with an error, never early and clean.
fn read_ahead(
    mut batches: BoxStream<'static, Result<RecordBatch>>,
    url: String,
) -> BoxStream<'static, Result<RecordBatch>> {
    const AHEAD: usize = 2;
    let (sender, receiver) = tokio::sync::mpsc::channel(AHEAD);
    // A JoinSet, so that the task is aborted when the stream is dropped.
    let mut task = JoinSet::new();
    task.spawn(async move {
        while let Some(batch) = batches.next().await {
            if sender.send(batch).await.is_err() {
                break; // the reader is gone
            }
        }
    });
    stream::unfold(
        (receiver, task, url),
        |(mut receiver, mut task, url)| async move {
            if let Some(batch) = receiver.recv().await {
                return Some((batch, (receiver, task, url)));
            }
            match task.join_next().await? {
                Ok(()) => None,
                Err(e) => {
                    let failed = exec_err!("{url}: reading the file failed: {e}");
                    Some((failed, (receiver, task, url)))
                }
            }
        },
    )
    .boxed()
}

type Batches = BoxStream<'static, Result<(RecordBatch, u64)>>;

/// A file's rows, with the rows each batch skipped.
async fn open(
    file: SourceFile,
    store: Arc<dyn ObjectStore>,
    format: FileFormat,
    schema: SchemaRef,
    go_on: bool,
) -> Result<Batches> {
    match format {
        FileFormat::Parquet => parquet(file, store, schema, go_on).await,
        FileFormat::Csv {
            delimiters,
            skip_header,
        } => {
            let bytes = bytes_of(&file, store).await?;
            let rows = TextRows::new(schema, &[], go_on)?;
            let text = TextFile::new(bytes, delimiters, skip_header, rows);
            let batches = stream::try_unfold((text, 0), |(mut text, skipped_before)| async move {
                let batch = text.next_batch().await?;
                let skipped = text.skipped();
                Ok(batch.map(|b| ((b, skipped - skipped_before), (text, skipped))))
            });
            Ok(batches.boxed())
        }
        FileFormat::Ndjson => ndjson(file, store, schema, go_on).await,
    }
}

async fn bytes_of(
    file: &SourceFile,
    store: Arc<dyn ObjectStore>,
) -> Result<BoxStream<'static, io::Result<Bytes>>> {
    let object = store
        .get(&file.meta.location)
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    Ok(object.into_stream().map_err(io::Error::other).boxed())
}

/// Parquet columns go to the table's by name; a column the table lacks is an error.
async fn parquet(
    file: SourceFile,
    store: Arc<dyn ObjectStore>,
    schema: SchemaRef,
    go_on: bool,
) -> Result<Batches> {
    let reader = ObjectFile {
        store,
        path: file.meta.location,
        size: file.meta.size,
    };
    let builder = ParquetRecordBatchStreamBuilder::new(reader).await?;
    let mut sources = vec![None; schema.fields().len()];
    for (i, field) in builder.schema().fields().iter().enumerate() {
        let Some(target) = schema
            .fields()
            .iter()
            .position(|t| t.name().eq_ignore_ascii_case(field.name()))
        else {
            return plan_err!("the file's column '{}' is not in the table", field.name());
        };
        sources[target] = Some(i);
    }
    let mut offset = 0;
    let batches = builder
        .with_batch_size(BATCH_ROWS)
        .build()?
        .map(move |batch| {
            let batch = batch?;
            let n = batch.num_rows();
            let columns = sources
                .iter()
                .map(|s| s.map(|i| batch.column(i).clone()))
                .collect();
            let first = offset;
            offset += n;
            fit_batch(&schema, columns, n, go_on, |r| {
                format!("row {}", first + r + 1)
            })
        });
    Ok(batches.boxed())
}

/// NDJSON objects' fields go to the table's columns by name; a field the table lacks is an
/// error. Values are read into nullable columns first, so a NULL in a NOT NULL column is
/// reported with its line.
async fn ndjson(
    file: SourceFile,
    store: Arc<dyn ObjectStore>,
    schema: SchemaRef,
    go_on: bool,
) -> Result<Batches> {
    let nullable = Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
    );
    let decoder = ReaderBuilder::new(Arc::new(nullable))
        .with_batch_size(BATCH_ROWS)
        .with_strict_mode(true)
        .build_decoder()?;
    let bytes = bytes_of(&file, store).await?;
    let state = (bytes, decoder, Bytes::new(), false, 0usize);
    let batches = stream::try_unfold(
        state,
        move |(mut bytes, mut decoder, mut buffer, mut ended, mut offset)| {
            let schema = schema.clone();
            async move {
                loop {
                    if buffer.is_empty() && !ended {
                        match bytes.next().await {
                            Some(chunk) => buffer = chunk?,
                            None => ended = true,
                        }
                    }
                    let consumed = decoder.decode(&buffer)?;
                    buffer.advance(consumed);
                    let full = decoder.len() >= BATCH_ROWS;
                    if !(full || (ended && buffer.is_empty())) {
                        continue;
                    }
                    let Some(batch) = decoder.flush()? else {
                        return Ok(None); // ended with nothing buffered
                    };
                    let n = batch.num_rows();
                    let first = offset;
                    offset += n;
                    let columns = batch.columns().iter().cloned().map(Some).collect();
                    let fitted = fit_batch(&schema, columns, n, go_on, |r| {
                        format!("object {}", first + r + 1)
                    })?;
                    return Ok(Some((fitted, (bytes, decoder, buffer, ended, offset))));
                }
            }
        },
    );
    Ok(batches.boxed())
}
