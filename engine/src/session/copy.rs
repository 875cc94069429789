//! COPY INTO: the files at an allowed location, read as the table's rows and committed in one
//! snapshot (all of them or, on a failure without `ON_ERROR = CONTINUE`, none), with the record
//! of the files loaded, so a second COPY of the same files loads nothing. The answer is a row
//! per file read: rows loaded, rows skipped, the error that ended it.

use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::plan_err;
use datafusion::datasource::sink::DataSink;
use datafusion::error::Result;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;

use super::Session;
use crate::access::privileges::{Object, Privilege};
use crate::error::to_df;
use crate::ingest::copy_files::{self, FileReport};
use crate::ingest::copy_into::CopyInto;
use crate::session::query_stream::QueryStream;
use crate::session::statement_task::run_on;
use crate::sink::SieveSink;
use sieve_storage::{CopiesChange, ExternalPath};

pub(super) async fn copy_into(session: &Session, copy: CopyInto) -> Result<QueryStream> {
    session.progress.reset();
    let ExternalPath {
        store,
        bucket,
        path,
        ..
    } = session.external.resolve(&copy.from).map_err(to_df)?;
    let name = &copy.table;
    session.require(
        Privilege::Insert,
        &Object::table(&name.database, &name.table),
    )?;
    // It reads files the server may read, as MySQL's FILE privilege guards LOAD DATA INFILE.
    session.require_all_for("COPY INTO", &Object::global())?;
    let table = session
        .catalog
        .open_table(&name.database, &name.table)
        .await
        .map_err(to_df)?;
    let mut files =
        copy_files::list(&store, &bucket, &copy.from, &path, copy.pattern.as_ref()).await?;
    if files.is_empty() {
        let matching = match &copy.pattern {
            Some(p) => format!(" matching PATTERN '{p}'"),
            None => String::new(),
        };
        return plan_err!("no files at {}{matching}", copy.from);
    }
    // The record of copied files as of now; the commit fails if another COPY changes it.
    let snapshot = table.snapshot().await.map_err(to_df)?;
    let mut copied = table.copied_files(&snapshot).await.map_err(to_df)?;
    if !copy.force {
        files.retain(|f| !copied.contains(&f.identity));
    }
    let reports = Arc::new(Mutex::new(Vec::<FileReport>::new()));
    if files.is_empty() {
        return copy_report(session, &reports); // every file was loaded before
    }
    for file in &files {
        if !copied.contains(&file.identity) {
            copied.files.push(file.identity.clone());
        }
    }
    let copies = CopiesChange {
        from: snapshot.copies.clone(),
        to: table.put_copied_files(&copied).await.map_err(to_df)?,
    };
    let schema = table.def().schema.clone();
    let rows = copy_files::rows(
        files,
        store,
        copy.format,
        schema.clone(),
        copy.go_on,
        reports.clone(),
    );
    let rows = Box::pin(RecordBatchStreamAdapter::new(schema, rows));
    let sink = SieveSink::new(
        session.catalog.clone(),
        table,
        Some(session.progress.clone()),
    )
    .with_copies(copies);
    let context = session.ctx.task_ctx();
    run_on(&session.executor(), &session.tasks, async move {
        sink.write_all(rows, &context).await
    })
    .await?;
    copy_report(session, &reports)
}

/// A row per file read.
fn copy_report(session: &Session, reports: &Mutex<Vec<FileReport>>) -> Result<QueryStream> {
    let reports = std::mem::take(&mut *reports.lock().expect("reports lock"));
    let schema = Arc::new(Schema::new(vec![
        Field::new("file", DataType::Utf8, false),
        Field::new("rows_loaded", DataType::UInt64, false),
        Field::new("rows_skipped", DataType::UInt64, false),
        Field::new("error", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from_iter_values(
                reports.iter().map(|r| &r.file),
            )),
            Arc::new(UInt64Array::from_iter_values(
                reports.iter().map(|r| r.rows),
            )),
            Arc::new(UInt64Array::from_iter_values(
                reports.iter().map(|r| r.skipped),
            )),
            Arc::new(StringArray::from_iter(
                reports.iter().map(|r| r.error.as_deref()),
            )),
        ],
    )?;
    let rows = futures::stream::iter([Ok(batch)]);
    let rows = Box::pin(RecordBatchStreamAdapter::new(schema.clone(), rows));
    Ok(QueryStream::rows(schema, rows, None, session.pool()))
}
