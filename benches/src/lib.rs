//! Data for Sieve's benchmarks: the columns of Databend's `t10b` table, made reproducibly.

use arrow_array::{StringArray, UInt64Array};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// `c1`: `number` from `numbers(n)`, starting at `start`.
pub fn numbers(start: u64, n: usize) -> UInt64Array {
    UInt64Array::from_iter_values(start..start + n as u64)
}

/// `c2`: `cast(rand() as string)`, random doubles printed as text, from a fixed seed.
pub fn random_double_strings(seed: u64, n: usize) -> StringArray {
    let mut rng = StdRng::seed_from_u64(seed);
    StringArray::from_iter_values((0..n).map(|_| rng.random::<f64>().to_string()))
}
