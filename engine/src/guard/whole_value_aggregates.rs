//! Aggregates whose state is the whole of their input (`string_agg`, `array_agg`) run in one stage.
//!
//! DataFusion aggregates in two stages, a partial one per input partition and a final one per
//! group. A partial aggregate over its memory budget does not fail or spill: it emits its groups
//! to the final stage and starts again (`OutOfMemoryMode::EmitEarly`). For sums and counts that
//! frees memory. For `string_agg` and `array_agg` it frees nothing: the final stage must hold the
//! same values, and on the way they are copied into the emitted array, again by the repartition,
//! and again into the final stage's growing strings, none of which the pool counts at once. A
//! 1 GiB query took the server to 7.6 GiB this way (issue 53, docs/benchmarks.md). In one stage
//! (input rows repartitioned by the group keys, as for a `SinglePartitioned` aggregate) the
//! aggregate's state is reserved where it is built, and over its budget it spills or fails.
//! `SET sieve.one_stage_collect = false` keeps DataFusion's two stages (the baseline).

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::Partitioning;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::repartition::RepartitionExec;

use crate::options::SieveOptions;

/// Aggregate functions whose state grows with every value they are given.
const WHOLE_VALUE: [&str; 2] = ["string_agg", "array_agg"];

/// The physical optimizer rule; add it after DataFusion's own rules.
#[derive(Debug, Default)]
pub struct WholeValueAggregates;

impl PhysicalOptimizerRule for WholeValueAggregates {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !(config.extensions.get::<SieveOptions>()).is_none_or(|o| o.one_stage_collect) {
            return Ok(plan);
        }
        plan.transform_up(|plan| match one_stage(&plan)? {
            Some(single) => Ok(Transformed::yes(single)),
            None => Ok(Transformed::no(plan)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "sieve_whole_value_aggregates"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `plan`, a final aggregate over a partial one of a whole-value function, as one aggregate over
/// the partial's input; None for any other plan.
fn one_stage(plan: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(last) = plan.downcast_ref::<AggregateExec>() else {
        return Ok(None);
    };
    let exchange = last.input();
    let Some(partial) = exchange
        .children()
        .first()
        .and_then(|c| c.downcast_ref::<AggregateExec>())
    else {
        return Ok(None);
    };
    let whole_value = partial
        .aggr_expr()
        .iter()
        .any(|e| WHOLE_VALUE.contains(&e.fun().name()));
    // Grouping sets keep their two stages: rows partitioned by all the keys would give each
    // partition its own row of a set that leaves keys out. (MySQL's syntax has none today.)
    if *partial.mode() != AggregateMode::Partial
        || !whole_value
        || partial.group_expr().groups().len() > 1
    {
        return Ok(None);
    }
    let rows = Arc::clone(partial.input());
    let (mode, input): (_, Arc<dyn ExecutionPlan>) = match (last.mode(), exchange) {
        (AggregateMode::Final, e) if e.is::<CoalescePartitionsExec>() => (
            AggregateMode::Single,
            Arc::new(CoalescePartitionsExec::new(rows)),
        ),
        (AggregateMode::FinalPartitioned, e) => {
            let Some(repartition) = e.downcast_ref::<RepartitionExec>() else {
                return Ok(None);
            };
            let Partitioning::Hash(_, partitions) = repartition.partitioning() else {
                return Ok(None);
            };
            let keys = partial.group_expr().input_exprs();
            let by_keys = Partitioning::Hash(keys, *partitions);
            (
                AggregateMode::SinglePartitioned,
                Arc::new(RepartitionExec::try_new(rows, by_keys)?),
            )
        }
        _ => return Ok(None),
    };
    let single = AggregateExec::try_new(
        mode,
        partial.group_expr().clone(),
        partial.aggr_expr().to_vec(),
        partial.filter_expr().to_vec(),
        input,
        partial.input_schema(),
    )?
    .with_limit_options(last.limit_options());
    Ok(Some(Arc::new(single)))
}
