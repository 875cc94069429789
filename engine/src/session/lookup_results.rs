//! The results of point lookups, kept by what determines them: the table, the snapshot version
//! read, and the lookup with its values bound. A snapshot is immutable, and every commit
//! (INSERT, DELETE, OPTIMIZE) makes a new version, so an entry is never stale: a lookup still
//! resolves the table's current version first (sharing the freshness check, see
//! `sieve_storage::freshness`), and only a lookup of the same key in the same version hits.
//! This is the row cache of Apache Doris's point queries: a hot key costs no page decode.
//! `SET sieve.lookup_cache = false` reads the table every time.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::error::Result;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::{Stream, StreamExt};
use quick_cache::Weighter;
use quick_cache::sync::Cache;

use crate::cluster::placement::Placement;

/// The budget of every lookup's results together.
const LOOKUP_RESULT_BYTES: u64 = 64 << 20;
/// Results larger than this are not kept: a lookup's answer is a few rows.
const MAX_RESULT_BYTES: usize = 1 << 20;

/// What a lookup's result depends on: the table (its id, new for a table made again under the
/// same name), the snapshot version, the condition with its values as the column's literals,
/// the output columns (table index and name) and the LIMIT; and the session's pruning settings,
/// which do not change a result but which a session sets to have the table read their way (a
/// differential baseline with pruning off must not be answered by a pruned lookup's result).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct LookupKey {
    pub table: String,
    pub version: u64,
    pub condition: Expr,
    pub outputs: Vec<(usize, String)>,
    pub limit: Option<usize>,
    /// `sieve.pruning`, `sieve.locator`, `sieve.routing`.
    pub pruning: (bool, bool, bool),
    /// On a worker: the placement a coordinator asked under and this worker's place in it, of
    /// whose blocks the result is (None: every block, as one process reads).
    pub owner: Option<(Arc<Placement>, usize)>,
}

/// A lookup's result: its schema too, so that a hit answers without planning the lookup (an
/// absent key's result has no batch to take it from).
#[derive(Clone)]
pub(crate) struct Kept {
    pub schema: SchemaRef,
    pub batches: Arc<[RecordBatch]>,
}

#[derive(Clone)]
struct ResultBytes;

impl Kept {
    /// The kept rows as a stream, sharing their batches.
    pub(crate) fn rows(self) -> SendableRecordBatchStream {
        let Kept { schema, batches } = self;
        let rows = (0..batches.len()).map(move |i| Ok(batches[i].clone()));
        Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::iter(rows),
        ))
    }
}

impl Weighter<LookupKey, Kept> for ResultBytes {
    fn weight(&self, key: &LookupKey, kept: &Kept) -> u64 {
        let rows: usize = kept
            .batches
            .iter()
            .map(RecordBatch::get_array_memory_size)
            .sum();
        (rows + key.table.len() + 128) as u64
    }
}

/// Shared by the sessions of an engine.
pub struct LookupResults {
    cache: Cache<LookupKey, Kept, ResultBytes>,
}

impl std::fmt::Debug for LookupResults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LookupResults")
            .field("entries", &self.cache.len())
            .field("bytes", &self.cache.weight())
            .finish()
    }
}

impl Default for LookupResults {
    fn default() -> Self {
        Self {
            cache: Cache::with_weighter(
                (LOOKUP_RESULT_BYTES / 1024) as usize,
                LOOKUP_RESULT_BYTES,
                ResultBytes,
            ),
        }
    }
}

impl LookupResults {
    pub(crate) fn get(&self, key: &LookupKey) -> Option<Kept> {
        self.cache.get(key)
    }

    fn insert(&self, key: LookupKey, schema: SchemaRef, batches: Vec<RecordBatch>) {
        let batches = batches.into();
        self.cache.insert(key, Kept { schema, batches });
    }
}

/// `rows` as they stream, kept under `key` once they have all streamed without an error (and
/// fit [`MAX_RESULT_BYTES`]); a reader that stops early keeps nothing.
pub(crate) fn keeping(
    rows: SendableRecordBatchStream,
    results: Arc<LookupResults>,
    key: LookupKey,
) -> SendableRecordBatchStream {
    let schema = rows.schema();
    Box::pin(RecordBatchStreamAdapter::new(
        schema,
        Keeping {
            rows,
            kept: Some(Vec::new()),
            bytes: 0,
            results,
            key: Some(key),
        },
    ))
}

/// `batch` holding only its own values: a filtered string view column still points into the
/// whole page it was decoded from, which a kept result must not hold on to.
fn compacted(batch: &RecordBatch) -> RecordBatch {
    let columns = batch
        .columns()
        .iter()
        .map(|column| match column.data_type() {
            DataType::Utf8View => Arc::new(column.as_string_view().gc()) as ArrayRef,
            DataType::BinaryView => Arc::new(column.as_binary_view().gc()) as ArrayRef,
            _ => column.clone(),
        })
        .collect();
    RecordBatch::try_new(batch.schema(), columns).expect("the same schema and lengths")
}

struct Keeping {
    rows: SendableRecordBatchStream,
    /// None once the result is known not to be kept (too large, or failed).
    kept: Option<Vec<RecordBatch>>,
    bytes: usize,
    results: Arc<LookupResults>,
    key: Option<LookupKey>,
}

impl Stream for Keeping {
    type Item = Result<RecordBatch>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let next = ready!(this.rows.poll_next_unpin(cx));
        match &next {
            Some(Ok(batch)) if this.kept.is_some() => {
                let compact = compacted(batch);
                this.bytes += compact.get_array_memory_size();
                match &mut this.kept {
                    Some(_) if this.bytes > MAX_RESULT_BYTES => this.kept = None,
                    Some(kept) => kept.push(compact),
                    None => {}
                }
            }
            Some(Ok(_)) => {}
            Some(Err(_)) => this.kept = None,
            None => {
                if let (Some(kept), Some(key)) = (this.kept.take(), this.key.take()) {
                    this.results.insert(key, this.rows.schema(), kept);
                }
            }
        }
        Poll::Ready(next)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{BooleanArray, StringViewArray};
    use datafusion::arrow::compute::filter_record_batch;
    use datafusion::arrow::datatypes::{Field, Schema};

    use super::*;

    #[test]
    fn a_kept_row_does_not_hold_its_page() {
        let page: StringViewArray = (0..8192)
            .map(|i| Some(format!("a value long enough to be stored out of line {i}")))
            .collect();
        let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8View, true)]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(page)]).unwrap();
        let one = BooleanArray::from((0..8192).map(|i| i == 4242).collect::<Vec<_>>());
        let found = filter_record_batch(&batch, &one).unwrap();
        let kept = compacted(&found);
        assert_eq!(kept, found);
        assert!(found.get_array_memory_size() > 100_000);
        assert!(
            kept.get_array_memory_size() < 1_000,
            "{}",
            kept.get_array_memory_size()
        );
    }
}
