//! Bounded I/O per second for background work: locator group merges and compactions of small
//! appends. Both read whole blocks again and upload what they rebuilt; run in the background
//! after every commit, unbounded they take whatever bandwidth the store gives while lookups and
//! loads wait behind them. The process's merges share one token bucket (governor's, whose cells
//! are KiB here) that paces those reads and uploads to a configured rate, one second's worth in a
//! burst (`--merge-io-mib-per-s`, `merge_io_mib_per_s`). What they spent is counted either way,
//! for the `sieve_merge_io_bytes_total` metric.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

/// MiB per second merges read and write unless told otherwise: a fraction of what one MinIO
/// node serves, so lookups keep most of it.
pub const DEFAULT_MERGE_IO_MIB_PER_S: u64 = 256;

pub struct MergeRate {
    /// None: unbounded.
    bucket: Option<Bucket>,
    /// Bytes spent so far.
    spent: AtomicU64,
}

struct Bucket {
    limiter: DefaultDirectRateLimiter,
    /// KiB the bucket holds.
    burst: NonZeroU32,
}

/// Parts a spend is taken in, at most, per bucket: a part the size of the whole bucket would
/// wait for it to be full, which smaller spends of other merges could put off indefinitely
/// (governor serves no queue).
const PARTS_PER_BURST: u32 = 16;

impl std::fmt::Debug for MergeRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergeRate")
            .field("kib_per_s", &self.bucket.as_ref().map(|b| b.burst))
            .field("spent", &self.spent)
            .finish()
    }
}

impl MergeRate {
    /// A bucket refilled at `mib_per_s`; 0 is unbounded.
    pub fn new(mib_per_s: u64) -> Self {
        let kib = u32::try_from(mib_per_s.saturating_mul(1024)).unwrap_or(u32::MAX);
        let bucket = NonZeroU32::new(kib).map(|burst| Bucket {
            limiter: RateLimiter::direct(Quota::per_second(burst)),
            burst,
        });
        Self {
            bucket,
            spent: AtomicU64::new(0),
        }
    }

    /// Waits until `bytes` more of merge I/O fit the rate, then counts them.
    pub async fn spend(&self, bytes: u64) {
        if let Some(bucket) = &self.bucket {
            let mut kib = bytes.div_ceil(1024);
            let most = (bucket.burst.get() / PARTS_PER_BURST).max(1);
            while let Some(part) = NonZeroU32::new(kib.min(u64::from(most)) as u32) {
                bucket
                    .limiter
                    .until_n_ready(part)
                    .await
                    .expect("a part is less than the burst");
                kib -= u64::from(part.get());
            }
        }
        self.spent.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Bytes merges and compactions have read and written.
    pub fn spent(&self) -> u64 {
        self.spent.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spend takes its KiB from the bucket: after spending the whole burst nothing is left, and
    /// no part beyond the burst is asked for; 0 is unbounded. Both count what was spent.
    #[tokio::test]
    async fn spending_empties_the_bucket_and_is_counted() {
        let unbounded = MergeRate::new(0);
        assert!(unbounded.bucket.is_none());
        unbounded.spend(5 << 30).await;
        assert_eq!(unbounded.spent(), 5 << 30);

        let rate = MergeRate::new(1);
        let bucket = rate.bucket.as_ref().unwrap();
        assert_eq!(bucket.burst.get(), 1024);
        rate.spend(1024 * 1024).await;
        assert_eq!(rate.spent(), 1024 * 1024);
        // 100 KiB refill in about 100 ms; the check comes far sooner.
        assert!(
            bucket
                .limiter
                .check_n(NonZeroU32::new(100).unwrap())
                .unwrap()
                .is_err()
        );
        assert!(
            bucket
                .limiter
                .check_n(NonZeroU32::new(2000).unwrap())
                .is_err(),
            "beyond the burst"
        );
    }
}
