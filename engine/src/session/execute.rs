//! Running a logical plan: physical planning and execution on the statement runtime, the
//! statement's deadline, and one retry of a read whose worker died before its first row.

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::UInt64Array;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::Result;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::execution::context::SessionContext;
use datafusion::execution::memory_pool::MemoryPool;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::sql::parser::Statement as DFStatement;
use futures::StreamExt;
use tokio::runtime::Handle;
use tokio::time::Instant;

use super::Session;
use crate::cluster::coordinator::WorkerFailed;
use crate::dialect::tokens::Tokens;
use crate::guard::deadline::{DeadlineStream, QueryTimeout};
use crate::guard::interrupt::Interrupt;
use crate::guard::statement::check_confined;
use crate::maintenance::delete::check_delete;
use crate::session::query_stream::{ColumnOrigin, QueryStream};
use crate::session::statement_task::{rows_on, run_on};

async fn plan_physical(ctx: SessionContext, plan: LogicalPlan) -> Result<Arc<dyn ExecutionPlan>> {
    ctx.execute_logical_plan(plan)
        .await?
        .create_physical_plan()
        .await
}

impl Session {
    /// Runs a query Sieve wrote itself (the answer to a SHOW statement).
    pub(super) async fn run_sql(&self, sql: &str) -> Result<QueryStream> {
        self.run_in_datafusion(Tokens::new(sql)?.parse_one()?).await
    }

    pub(super) async fn run_in_datafusion(&self, statement: DFStatement) -> Result<QueryStream> {
        let plan = self.ctx.state().statement_to_plan(statement).await?;
        self.run_plan(plan).await
    }

    pub(super) async fn run_plan(&self, plan: LogicalPlan) -> Result<QueryStream> {
        let started = Instant::now();
        check_confined(&plan)?;
        check_delete(&plan)?;
        let limit = match plan {
            // MySQL's max_execution_time bounds read-only statements; writes commit or not.
            LogicalPlan::Dml(_) | LogicalPlan::Ddl(_) | LogicalPlan::Statement(_) => None,
            _ => self.max_execution_time(),
        };
        let is_dml = matches!(plan, LogicalPlan::Dml(_));
        let schema: SchemaRef = Arc::new(plan.schema().as_arrow().clone());
        let database = self.database();
        let origins = plan
            .schema()
            .iter()
            .map(|(qualifier, _)| {
                qualifier.map(|q| ColumnOrigin {
                    database: q.schema().unwrap_or(&database).to_string(),
                    table: q.table().to_string(),
                })
            })
            .collect();
        let read_only = !matches!(
            plan,
            LogicalPlan::Dml(_) | LogicalPlan::Ddl(_) | LogicalPlan::Statement(_)
        );
        // A read through workers that loses one before its first row is planned again, once,
        // over the workers still live (rendezvous hands the lost worker's blocks to the others).
        let mut retries = usize::from(read_only && self.cluster.is_some());
        let (physical, mut rows) = loop {
            let executor = self.executor();
            let planned = run_on(
                &executor,
                &self.tasks,
                plan_physical(self.ctx.clone(), plan.clone()),
            );
            let physical = match limit {
                Some(limit) => tokio::time::timeout(limit, planned)
                    .await
                    .map_err(|_| QueryTimeout::error(limit))??,
                None => planned.await?,
            };
            let (physical, mut rows) = self.rows(physical, &schema, started, limit)?;
            if let Some(cluster) = &self.cluster
                && read_only
            {
                match rows.next().await {
                    Some(Err(e)) if retries > 0 && WorkerFailed::is(&e) => {
                        retries -= 1;
                        log::warn!("{e}: planning the query again");
                        // A worker being killed may still accept connections for a moment.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        cluster.probe().await;
                        continue;
                    }
                    first => {
                        let rest = futures::stream::iter(first).chain(rows);
                        rows = Box::pin(RecordBatchStreamAdapter::new(schema.clone(), rest));
                    }
                }
            }
            break (physical, rows);
        };
        if is_dml {
            let mut count = 0;
            while let Some(batch) = rows.next().await {
                let batch = batch?;
                if let Some(c) = batch.column(0).as_any().downcast_ref::<UInt64Array>() {
                    count += c.iter().flatten().sum::<u64>();
                }
            }
            return Ok(QueryStream::written(count, physical, self.pool()));
        }
        Ok(QueryStream::rows(schema, rows, Some(physical), self.pool()).with_origins(origins))
    }

    /// Runs a query planned by the short path ([`crate::session::short_path`]): one table of
    /// this process, so no worker to lose.
    pub(super) fn run_physical(
        &self,
        physical: Arc<dyn ExecutionPlan>,
        origins: Vec<Option<ColumnOrigin>>,
    ) -> Result<QueryStream> {
        let schema = physical.schema();
        let (physical, rows) =
            self.rows(physical, &schema, Instant::now(), self.max_execution_time())?;
        Ok(QueryStream::rows(schema, rows, Some(physical), self.pool())
            .with_origins(origins)
            .by_short_path())
    }

    /// The rows of `physical`, produced on the executor, failures naming the worker that
    /// failed, ended at the statement's deadline; and the plan as it runs (its joins made
    /// interruptible, [`crate::guard::interrupt`]), whose metrics EXPLAIN ANALYZE shows.
    pub(super) fn rows(
        &self,
        physical: Arc<dyn ExecutionPlan>,
        schema: &SchemaRef,
        started: Instant,
        limit: Option<Duration>,
    ) -> Result<(Arc<dyn ExecutionPlan>, SendableRecordBatchStream)> {
        let interrupt = Interrupt::default();
        let physical = interrupt.wrap(physical, &self.tasks)?;
        let mut rows = rows_on(
            &self.executor(),
            &self.tasks,
            &interrupt,
            physical.clone(),
            self.ctx.task_ctx(),
        );
        let (cluster, spill) = (self.cluster.clone(), self.spill.clone());
        let explained = rows.map(move |r| {
            r.map_err(|e| match &cluster {
                Some(cluster) => cluster.explain_failure(spill.explain(e)),
                None => spill.explain(e),
            })
        });
        rows = Box::pin(RecordBatchStreamAdapter::new(schema.clone(), explained));
        if let Some(limit) = limit {
            rows = DeadlineStream::wrap(rows, started, limit);
        }
        Ok((physical, rows))
    }

    pub(super) fn executor(&self) -> Handle {
        self.executor.clone().unwrap_or_else(Handle::current)
    }

    /// The session's statement time limit (`SET sieve.max_execution_time = ms`; 0 is none).
    pub(super) fn max_execution_time(&self) -> Option<Duration> {
        let ms = self.options(|o| o.max_execution_time);
        (ms > 0).then(|| Duration::from_millis(ms))
    }

    pub(super) fn pool(&self) -> Arc<dyn MemoryPool> {
        self.ctx.runtime_env().memory_pool.clone()
    }

    pub(super) fn affected(&self, rows: u64) -> QueryStream {
        QueryStream::affected(rows, self.pool())
    }
}
