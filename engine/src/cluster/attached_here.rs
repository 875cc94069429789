//! Statements that read an attached Iceberg table run in the coordinator, but for point
//! lookups, which the owners of the table's files read (`session::attached_lookup`). A worker
//! is handed Sieve scans only (a table definition over the storage they share; the plan codec
//! has no attached table's scan), so a distributed plan could not send a worker an attached
//! table's scan. Such a statement is
//! planned by DataFusion's own physical planner instead of the distributed one and runs here,
//! the Sieve tables it joins included (read from the shared storage, as a process without
//! workers reads them); every other statement is distributed as before. The cost: the
//! coordinator does that statement's work alone.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::source_as_provider;
use datafusion::error::Result;
use datafusion::execution::context::QueryPlanner;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};

use crate::iceberg::table::IcebergTable;

/// The coordinator's query planner: `distributed`, except for statements that read an
/// attached table.
#[derive(Debug)]
pub(crate) struct AttachedHere {
    pub distributed: Arc<dyn QueryPlanner + Send + Sync>,
}

#[async_trait]
impl QueryPlanner for AttachedHere {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if reads_attached(logical_plan)? {
            let here = DefaultPhysicalPlanner::default();
            return here.create_physical_plan(logical_plan, session).await;
        }
        self.distributed
            .create_physical_plan(logical_plan, session)
            .await
    }
}

/// Whether `plan` or any of its subqueries scans an attached table.
fn reads_attached(plan: &LogicalPlan) -> Result<bool> {
    let mut found = false;
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node
            && source_as_provider(&scan.source)
                .is_ok_and(|provider| provider.downcast_ref::<IcebergTable>().is_some())
        {
            found = true;
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(found)
}
