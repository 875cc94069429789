//! Distinct-value estimates from the same hashes the filters are built from, so no value is hashed
//! twice. HyperLogLog++ (hyperloglockless): its sparse mode is near-exact for the small counts
//! that decide between "no filter", "exact list" and a filter, and p=14 keeps the large-count
//! error near 0.8% in 16 KiB.

use hyperloglockless::HyperLogLogPlus;

const PRECISION: u8 = 14;

pub fn estimate_ndv(hashes: &[u64]) -> u64 {
    let mut sketch = HyperLogLogPlus::new(PRECISION);
    for &hash in hashes {
        sketch.insert_hash(hash);
    }
    sketch.count() as u64
}
