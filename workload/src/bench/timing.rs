//! Latency samples of repeated point queries, summarised as medians and 95th percentiles (these
//! machines are noisy: means would follow the outliers).

use std::time::Duration;

use serde::Serialize;

/// One query: how long it took, what it returned, how many blocks (row groups) it read.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub elapsed: Duration,
    pub rows: usize,
    pub blocks_read: u64,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Summary {
    pub median_ms: f64,
    pub p95_ms: f64,
    pub blocks_read_median: u64,
    pub blocks_read_max: u64,
    pub queries: usize,
}

fn nearest_rank<T: Copy + PartialOrd>(values: &[T], quantile: f64) -> T {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    let rank = ((quantile * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

impl Summary {
    pub fn of(samples: &[Sample]) -> Self {
        let ms: Vec<f64> = samples
            .iter()
            .map(|s| s.elapsed.as_secs_f64() * 1000.0)
            .collect();
        let blocks: Vec<u64> = samples.iter().map(|s| s.blocks_read).collect();
        Self {
            median_ms: nearest_rank(&ms, 0.5),
            p95_ms: nearest_rank(&ms, 0.95),
            blocks_read_median: nearest_rank(&blocks, 0.5),
            blocks_read_max: blocks.iter().copied().max().unwrap_or(0),
            queries: samples.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(ms: u64, blocks: u64) -> Sample {
        Sample {
            elapsed: Duration::from_millis(ms),
            rows: 0,
            blocks_read: blocks,
        }
    }

    #[test]
    fn nearest_rank_median_and_p95() {
        let samples: Vec<Sample> = (1..=100).rev().map(|i| sample(i, i % 3)).collect();
        let s = Summary::of(&samples);
        assert_eq!((s.median_ms, s.p95_ms), (50.0, 95.0));
        assert_eq!((s.blocks_read_median, s.blocks_read_max), (1, 2));
        assert_eq!(Summary::of(&[sample(7, 1)]).p95_ms, 7.0);
    }
}
