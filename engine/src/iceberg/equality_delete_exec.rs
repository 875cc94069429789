//! The rows equality deletes remove ([`sieve_iceberg::EqualityDeletes`]), left out as an
//! attached table's data files are read. Which deletes apply depends on the file a row comes
//! from (its sequence number and partition), so DataFusion's Parquet scan below reads each file
//! with one more column, constant per file, holding the file's place in [`FILE_COLUMN`]'s list
//! (a partition value of the scan: a batch never spans two files). This node compares each
//! row's key columns with that file's deleted keys, drops the rows deleted, and passes on only
//! the columns the statement asked for (the key columns and the file's place are read for it).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{cast, filter_record_batch, partition};
use datafusion::arrow::datatypes::{SchemaRef, UInt32Type};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::StreamExt;
use sieve_iceberg::EqualityDeletes;

/// The name of the scan's column holding each row's file: one no Iceberg writer gives a column.
pub const FILE_COLUMN: &str = "\0iceberg_file";

#[derive(Debug)]
pub struct EqualityDeleteExec {
    input: Arc<dyn ExecutionPlan>,
    /// By a file's place (the input's last column), the deletes that apply to it.
    files: Arc<[Option<EqualityDeletes>]>,
    /// Where the input holds each key column, by field id.
    key_columns: Arc<HashMap<i32, usize>>,
    /// The input's columns passed on, in order.
    output: Arc<[usize]>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl EqualityDeleteExec {
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        files: Vec<Option<EqualityDeletes>>,
        key_columns: HashMap<i32, usize>,
        output: Vec<usize>,
    ) -> Result<Self> {
        let schema = Arc::new(input.schema().project(&output)?);
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            input.properties().output_partitioning().clone(),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Self {
            input,
            files: files.into(),
            key_columns: Arc::new(key_columns),
            output: output.into(),
            schema,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

impl DisplayAs for EqualityDeleteExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let with = self.files.iter().flatten().count();
        write!(
            f,
            "IcebergEqualityDeleteExec: files_with_deletes={with} of {}",
            self.files.len()
        )
    }
}

impl ExecutionPlan for EqualityDeleteExec {
    fn name(&self) -> &str {
        "IcebergEqualityDeleteExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue) // it has none of its own
    }

    /// Its own properties claim no order (sorts stay above it), so it claims none kept.
    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(Self {
            input: children.swap_remove(0),
            files: self.files.clone(),
            key_columns: self.key_columns.clone(),
            output: self.output.clone(),
            schema: self.schema.clone(),
            properties: self.properties.clone(),
            metrics: self.metrics.clone(),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let deleted =
            MetricBuilder::new(&self.metrics).counter("rows_deleted_by_equality", partition);
        let (files, key_columns, output) = (
            self.files.clone(),
            self.key_columns.clone(),
            self.output.clone(),
        );
        let rows = input.map(move |batch| {
            let _timer = baseline.elapsed_compute().timer();
            let batch = batch?;
            let kept = undeleted(&batch, &files, &key_columns, &deleted)?;
            baseline.record_output(kept.num_rows());
            Ok(kept.project(&output)?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            rows,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// `batch` without the rows the deletes of their files remove.
fn undeleted(
    batch: &RecordBatch,
    files: &[Option<EqualityDeletes>],
    key_columns: &HashMap<i32, usize>,
    count: &Count,
) -> Result<RecordBatch> {
    let file_column = batch.column(batch.num_columns() - 1);
    let places = file_column.as_primitive::<UInt32Type>();
    let mut deleted = vec![false; batch.num_rows()];
    for range in partition(std::slice::from_ref(file_column))?.ranges() {
        let Some(deletes) = &files[places.value(range.start) as usize] else {
            continue;
        };
        for keys in &deletes.keys {
            let columns = (keys.field_ids().iter().zip(keys.types()))
                .map(|(id, to)| {
                    let at = *key_columns.get(id).ok_or_else(|| {
                        DataFusionError::Internal(format!("key column {id} not read"))
                    })?;
                    let column = batch.column(at).slice(range.start, range.len());
                    Ok(match column.data_type() == to {
                        true => column,
                        false => cast(&column, to)?,
                    })
                })
                .collect::<Result<Vec<ArrayRef>>>()?;
            keys.mark(
                &columns,
                deletes.sequence_number,
                &mut deleted[range.clone()],
            )?;
        }
    }
    let removed = deleted.iter().filter(|d| **d).count();
    if removed == 0 {
        return Ok(batch.clone());
    }
    count.add(removed);
    let keep: BooleanArray = deleted.iter().map(|d| Some(!d)).collect();
    Ok(filter_record_batch(batch, &keep)?)
}
