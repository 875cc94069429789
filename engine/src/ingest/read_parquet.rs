//! `read_parquet('s3://bucket/prefix/' [, 'pattern'])`: Parquet files at a location the server's
//! configuration allows, as a table whose columns are inferred from the files' footers. It names
//! files as COPY INTO does (one file, or every file under a prefix whose path after it the
//! pattern matches), so `INSERT INTO t SELECT … FROM read_parquet(…)` and `CREATE TABLE t AS
//! SELECT * FROM read_parquet(…)` load files through the ordinary write path, and a plain SELECT
//! queries them in place. The files are read by DataFusion's own Parquet scan, a partition per
//! core, streamed.
//!
//! DataFusion asks for a table function's table while it plans, synchronously, and listing files
//! and reading footers are requests: a statement's calls are resolved before it is planned
//! ([`ReadParquet::resolve`]), as DataFusion resolves a statement's tables before planning it,
//! and the function hands over what was resolved for its arguments.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{ScalarValue, plan_datafusion_err, plan_err};
use datafusion::datasource::TableType;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{
    Expr as SqlExpr, FunctionArg, FunctionArgExpr, ObjectName, TableFactor, Value, Visit, Visitor,
};
use object_store::ObjectMeta;
use sieve_storage::{ExternalPath, ExternalStores};

use crate::error::to_df;
use crate::ingest::copy_files;

pub const NAME: &str = "read_parquet";

/// A call's arguments: the location, and the pattern if given.
type Call = (String, Option<String>);

/// The object store URL a configured location's files are read through: registered for each
/// location when a session starts, named by its place in the configuration, so two locations in
/// one bucket keep their own credentials.
pub fn store_url(location: usize, bucket: &str) -> Result<ObjectStoreUrl> {
    ObjectStoreUrl::parse(format!("sieve-external-{location}://{bucket}"))
}

/// The session's resolved calls, which its `read_parquet` function hands over.
#[derive(Debug, Default)]
pub struct ReadParquet {
    resolved: Mutex<HashMap<Call, Arc<ParquetFiles>>>,
}

impl ReadParquet {
    /// Lists the files and infers the columns of every `read_parquet` call in `statement`, for
    /// the function to hand over while it is planned; whether it makes any. `allowed` is asked
    /// first, once, if it does. What an earlier statement resolved is forgotten first: its file
    /// list may be stale, and a call this statement makes that was not found here (a form of
    /// name [`calls`] does not know) must fail rather than get it.
    pub async fn resolve(
        &self,
        statement: &DFStatement,
        external: &ExternalStores,
        session: &dyn Session,
        allowed: impl FnOnce() -> Result<()>,
    ) -> Result<bool> {
        self.forget();
        let calls = calls(statement)?;
        if calls.is_empty() {
            return Ok(false);
        }
        allowed()?;
        let mut resolved = HashMap::with_capacity(calls.len());
        for call in calls {
            if let Entry::Vacant(entry) = resolved.entry(call) {
                let files = ParquetFiles::list(entry.key(), external, session).await?;
                entry.insert(Arc::new(files));
            }
        }
        *self.resolved.lock().expect("read_parquet lock") = resolved;
        Ok(true)
    }

    /// Forgets what was resolved, once its statement is planned.
    pub fn forget(&self) {
        self.resolved.lock().expect("read_parquet lock").clear();
    }
}

impl TableFunctionImpl for ReadParquet {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let text = |e: &Expr| match e {
            Expr::Literal(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)), _) => {
                Some(s.clone())
            }
            _ => None,
        };
        let call = match args.exprs() {
            [url] => text(url).map(|u| (u, None)),
            [url, pattern] => text(url).zip(text(pattern).map(Some)),
            _ => None,
        };
        let resolved = call.and_then(|c| {
            self.resolved
                .lock()
                .expect("read_parquet lock")
                .get(&c)
                .cloned()
        });
        match resolved {
            Some(files) => Ok(files),
            None => plan_err!("{USAGE}"),
        }
    }
}

const USAGE: &str = "read_parquet takes the files' location and, optionally, a pattern, as \
                     strings: read_parquet('s3://bucket/prefix/' [, 'regex'])";

/// The arguments of every call in `statement` that may be `read_parquet`'s: a table function
/// named so in any part of its name, in any case, plain or LATERAL. Taking more than DataFusion
/// will plan as the function costs a listing; taking less would leave a call unresolved, which
/// then fails.
fn calls(statement: &DFStatement) -> Result<Vec<Call>> {
    struct Calls(Vec<Result<Call>>);
    impl Calls {
        fn add(&mut self, name: &ObjectName, args: &[FunctionArg]) {
            let named = name.0.iter().any(|part| {
                part.as_ident()
                    .is_some_and(|i| i.value.eq_ignore_ascii_case(NAME))
            });
            if !named {
                return;
            }
            let texts: Option<Vec<String>> = args.iter().map(text).collect();
            self.0.push(match texts.as_deref() {
                Some([url]) => Ok((url.clone(), None)),
                Some([url, pattern]) => Ok((url.clone(), Some(pattern.clone()))),
                _ => plan_err!("{USAGE}"),
            });
        }
    }
    impl Visitor for Calls {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            match factor {
                TableFactor::Table {
                    name,
                    args: Some(args),
                    ..
                } => self.add(name, &args.args),
                TableFactor::Function { name, args, .. } => self.add(name, args),
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    fn text(arg: &FunctionArg) -> Option<String> {
        match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(SqlExpr::Value(v))) => match &v.value {
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        }
    }
    let mut found = Calls(Vec::new());
    match statement {
        DFStatement::Statement(s) => {
            let _ = s.visit(&mut found);
        }
        DFStatement::Explain(explain) => return calls(&explain.statement),
        _ => {}
    }
    found.0.into_iter().collect()
}

/// The files of one call, with the columns inferred from them.
#[derive(Debug)]
pub struct ParquetFiles {
    schema: SchemaRef,
    store_url: ObjectStoreUrl,
    files: Vec<PartitionedFile>,
}

impl ParquetFiles {
    async fn list(
        (url, pattern): &Call,
        external: &ExternalStores,
        session: &dyn Session,
    ) -> Result<Self> {
        let ExternalPath {
            location,
            store,
            bucket,
            path,
        } = external.resolve(url).map_err(to_df)?;
        let pattern = pattern
            .as_deref()
            .map(regex::Regex::new)
            .transpose()
            .map_err(|e| {
                plan_datafusion_err!("read_parquet's pattern is not a regular expression: {e}")
            })?;
        let files = copy_files::list(&store, &bucket, url, &path, pattern.as_ref()).await?;
        if files.is_empty() {
            return plan_err!("no files at {url}");
        }
        let metas: Vec<ObjectMeta> = files.into_iter().map(|f| f.meta).collect();
        // Strings as Sieve's tables keep them (Utf8), not as views.
        let format = ParquetFormat::default().with_force_view_types(false);
        let schema = format
            .infer_schema(session, &store, &metas)
            .await
            .map_err(|e| plan_datafusion_err!("{url}: the files' columns cannot be read: {e}"))?;
        Ok(Self {
            schema,
            store_url: store_url(location, &bucket)?,
            files: metas.into_iter().map(PartitionedFile::from).collect(),
        })
    }
}

#[async_trait]
impl TableProvider for ParquetFiles {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// No filter is pushed to the Parquet reader: its statistics leave NaN out (see the scan's
    /// note in scan/exec.rs), and these are files to load, not to look up in.
    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let partitions = state.config().target_partitions();
        let groups = FileGroup::new(self.files.clone()).split_files(partitions);
        let config = FileScanConfigBuilder::new(
            self.store_url.clone(),
            Arc::new(ParquetSource::new(self.schema.clone())),
        )
        .with_file_groups(groups)
        .with_projection_indices(projection.cloned())?
        .with_limit(limit)
        .build();
        Ok(DataSourceExec::from_data_source(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_found_wherever_a_statement_names_them() {
        let parsed = |sql: &str| {
            crate::dialect::tokens::Tokens::new(sql)
                .and_then(|t| t.parse_one())
                .unwrap()
        };
        let found = calls(&parsed(
            "insert into t select * from read_parquet('s3://a/b/') \
             join (select * from READ_PARQUET('s3://a/c.parquet', 'x')) on true",
        ))
        .unwrap();
        assert_eq!(
            found,
            [
                ("s3://a/b/".to_string(), None),
                ("s3://a/c.parquet".to_string(), Some("x".to_string()))
            ]
        );
        assert!(
            calls(&parsed("select * from numbers(3)"))
                .unwrap()
                .is_empty()
        );
        let e = calls(&parsed("select * from read_parquet(1)")).unwrap_err();
        assert!(
            e.to_string()
                .contains("read_parquet takes the files' location"),
            "{e}"
        );
    }
}
