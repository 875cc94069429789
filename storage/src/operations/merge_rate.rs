//! Bounded I/O per second for locator group merges. A merge reads its blocks' indexed
//! columns again (whole blocks) and uploads the merged locator file; run in the background after
//! every commit, unbounded it takes whatever bandwidth the store gives while lookups and loads
//! wait behind it. The process's merges share one token bucket (governor's, whose cells are
//! KiB here) that paces those reads and uploads to a configured rate, one second's worth in a
//! burst (`--merge-io-mib-per-s`, `merge_io_mib_per_s`).

use std::num::NonZeroU32;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

/// MiB per second merges read and write unless told otherwise: a fraction of what one MinIO
/// node serves, so lookups keep most of it.
pub const DEFAULT_MERGE_IO_MIB_PER_S: u64 = 256;

pub struct MergeRate {
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
            .field("kib_per_s", &self.burst)
            .finish()
    }
}

impl MergeRate {
    /// A bucket refilled at `mib_per_s`; None for 0 (unbounded).
    pub fn new(mib_per_s: u64) -> Option<Self> {
        let kib = u32::try_from(mib_per_s.saturating_mul(1024)).unwrap_or(u32::MAX);
        let burst = NonZeroU32::new(kib)?;
        Some(Self {
            limiter: RateLimiter::direct(Quota::per_second(burst)),
            burst,
        })
    }

    /// Waits until `bytes` more of merge I/O fit the rate, then counts them.
    pub async fn spend(&self, bytes: u64) {
        let mut kib = bytes.div_ceil(1024);
        let most = (self.burst.get() / PARTS_PER_BURST).max(1);
        while let Some(part) = NonZeroU32::new(kib.min(u64::from(most)) as u32) {
            self.limiter
                .until_n_ready(part)
                .await
                .expect("a part is less than the burst");
            kib -= u64::from(part.get());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spend takes its KiB from the bucket: after spending the whole burst nothing is left, and
    /// no part beyond the burst is asked for; 0 is unbounded.
    #[tokio::test]
    async fn spending_empties_the_bucket() {
        assert!(MergeRate::new(0).is_none());
        let rate = MergeRate::new(1).unwrap();
        assert_eq!(rate.burst.get(), 1024);
        rate.spend(1024 * 1024).await;
        // 100 KiB refill in about 100 ms; the check comes far sooner.
        assert!(
            rate.limiter
                .check_n(NonZeroU32::new(100).unwrap())
                .unwrap()
                .is_err()
        );
        assert!(
            rate.limiter
                .check_n(NonZeroU32::new(2000).unwrap())
                .is_err(),
            "beyond the burst"
        );
    }
}
