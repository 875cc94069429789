//! Data for Sieve's benchmarks: the columns of Databend's `t10b` table, made reproducibly.

use arrow_array::StringArray;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// `c2`: `cast(rand() as string)`, random doubles printed as text, from a fixed seed.
pub fn random_double_strings(seed: u64, n: usize) -> StringArray {
    let mut rng = StdRng::seed_from_u64(seed);
    StringArray::from_iter_values((0..n).map(|_| rng.random::<f64>().to_string()))
}
