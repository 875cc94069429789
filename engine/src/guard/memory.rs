//! Memory budgets: one for the whole process, shared by every session, and one per statement, so
//! a single query can neither take the server down nor starve the other connections. DataFusion's
//! operators reserve what they buffer (hash tables, sorts, joins' build sides) through the pool,
//! and spill or fail with "query exceeded …" when it says no; results on their way to a client are
//! reserved too when a caller collects them.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{
    GreedyMemoryPool, MemoryLimit, MemoryPool, MemoryReservation,
};

/// How much memory queries may reserve, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimits {
    /// All statements of the process together.
    pub server: usize,
    /// One statement.
    pub query: usize,
}

impl Default for MemoryLimits {
    fn default() -> Self {
        Self {
            server: 4 << 30,
            query: 1 << 30,
        }
    }
}

impl MemoryLimits {
    pub(crate) fn server_pool(&self) -> Arc<dyn MemoryPool> {
        Arc::new(GreedyMemoryPool::new(self.server))
    }
}

/// A session's share of the server pool: at most `limit` bytes at a time, and only while the
/// server pool has them. DataFusion has a pool per runtime, not nested pools, hence this wrapper.
#[derive(Debug)]
pub(crate) struct QueryPool {
    server: Arc<dyn MemoryPool>,
    limit: usize,
    used: AtomicUsize,
}

impl QueryPool {
    pub(crate) fn new(server: Arc<dyn MemoryPool>, limit: usize) -> Self {
        Self {
            server,
            limit,
            used: AtomicUsize::new(0),
        }
    }
}

fn mib(bytes: usize) -> usize {
    bytes.div_ceil(1 << 20)
}

impl MemoryPool for QueryPool {
    fn name(&self) -> &str {
        "sieve-query"
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.used.fetch_add(additional, Ordering::Relaxed);
        self.server.grow(reservation, additional);
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.used.fetch_sub(shrink, Ordering::Relaxed);
        self.server.shrink(reservation, shrink);
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                (used + additional <= self.limit).then_some(used + additional)
            })
            .map_err(|used| {
                DataFusionError::ResourcesExhausted(format!(
                    "query exceeded its memory limit of {} MiB ({} MiB held, {} MiB more asked by {}); \
                     narrow the query or raise query_memory_limit_mib",
                    mib(self.limit),
                    mib(used),
                    mib(additional),
                    reservation.consumer().name()
                ))
            })?;
        if let Err(e) = self.server.try_grow(reservation, additional) {
            self.used.fetch_sub(additional, Ordering::Relaxed);
            return Err(DataFusionError::ResourcesExhausted(format!(
                "the server's memory for queries is in use ({} MiB, memory_limit_mib); try again later: {e}",
                mib(self.server.reserved())
            )));
        }
        Ok(())
    }

    fn reserved(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn memory_limit(&self) -> MemoryLimit {
        MemoryLimit::Finite(self.limit)
    }
}

impl fmt::Display for QueryPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}(used: {} MiB, limit: {} MiB)",
            self.name(),
            mib(self.reserved()),
            mib(self.limit)
        )
    }
}

#[cfg(test)]
mod tests {
    use datafusion::execution::memory_pool::MemoryConsumer;

    use super::*;

    #[test]
    fn a_query_gets_at_most_its_share_and_what_the_server_has_left() {
        let server = MemoryLimits {
            server: 80,
            query: 60,
        }
        .server_pool();
        let a: Arc<dyn MemoryPool> = Arc::new(QueryPool::new(server.clone(), 60));
        let b: Arc<dyn MemoryPool> = Arc::new(QueryPool::new(server.clone(), 60));
        let ra = MemoryConsumer::new("a").register(&a);
        let rb = MemoryConsumer::new("b").register(&b);
        ra.try_grow(50).unwrap();
        let over = ra.try_grow(20).unwrap_err().to_string();
        assert!(over.contains("query exceeded its memory limit"), "{over}");
        rb.try_grow(50).unwrap_err();
        assert_eq!((a.reserved(), b.reserved(), server.reserved()), (50, 0, 50));
        rb.try_grow(30).unwrap();
        drop(ra);
        assert_eq!(server.reserved(), 30);
        rb.try_grow(20).unwrap();
        assert_eq!(server.reserved(), 50);
    }
}
