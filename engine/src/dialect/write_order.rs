//! `INSERT … SELECT … ORDER BY` writes its rows in that order, as MySQL does. In Sieve the order
//! is the point: a table's blocks are cut in the order rows arrive, so a sorted insert gives
//! blocks whose min/max ranges do not overlap and locator groups that are cut where a column stops
//! ascending.
//!
//! DataFusion loses the order when a projection over the sort drops the sort key (`select case …
//! end from numbers(n) order by number`): the sort's one partition is repartitioned round-robin
//! so the projection runs in parallel, and because the key is gone no ordering is left for the
//! sink to require, so the partitions are coalesced in whatever order they finish. This physical
//! rule runs after DataFusion's and, under each sink, removes such a round-robin repartition
//! (with the coalescing above it) wherever the operators between them keep their input's row
//! order: the projection then runs on one partition, in order. Inputs with no order, or already
//! spread over several partitions, are left parallel.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::replace_children_if_necessary;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, Partitioning};

/// The physical optimizer rule; add it after DataFusion's own rules.
#[derive(Debug, Default)]
pub struct WriteOrder;

impl PhysicalOptimizerRule for WriteOrder {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|plan| {
            if !plan.is::<DataSinkExec>() {
                return Ok(Transformed::no(plan));
            }
            let input = Arc::clone(plan.children()[0]);
            match unshuffled(input)? {
                Some(input) => {
                    replace_children_if_necessary(plan, vec![input]).map(Transformed::yes)
                }
                None => Ok(Transformed::no(plan)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "sieve_write_order"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `plan` without the round-robin repartition that scatters an ordered single partition, and
/// without the coalescing that gathers it again; `None` when there is none to remove.
fn unshuffled(plan: Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if let Some(repartition) = plan.downcast_ref::<RepartitionExec>() {
        let input = repartition.input();
        let scatters_an_order =
            matches!(repartition.partitioning(), Partitioning::RoundRobinBatch(_))
                && input.output_partitioning().partition_count() == 1
                && input.output_ordering().is_some();
        return Ok(scatters_an_order.then(|| Arc::clone(input)));
    }
    if let Some(coalesce) = plan.downcast_ref::<CoalescePartitionsExec>() {
        if coalesce.fetch().is_some() {
            return Ok(None);
        }
        let gathered = unshuffled(Arc::clone(coalesce.input()))?;
        return Ok(gathered.filter(|input| input.output_partitioning().partition_count() == 1));
    }
    let children = plan.children();
    if children.len() != 1 || !plan.maintains_input_order()[0] {
        return Ok(None);
    }
    match unshuffled(Arc::clone(children[0]))? {
        Some(child) => replace_children_if_necessary(plan, vec![child]).map(Some),
        None => Ok(None),
    }
}
