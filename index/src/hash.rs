//! The one hash every filter, sketch and probe in Sieve agrees on.
//!
//! It is persisted (filters store functions of it), so it must never change: XXH3-64 with a fixed
//! seed over the canonical bytes of a value (see [`crate::canonical`]). `std`'s hashers, foldhash
//! and `derive(Hash)` are deliberately not used: their output may change between releases.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Part of the on-disk format: changing it invalidates every sidecar ever written.
pub const HASH_SEED: u64 = 0x5349_4556_455f_5631; // "SIEVE_V1"

/// Hashes the canonical byte form of one value.
#[inline]
pub fn hash_bytes(canonical: &[u8]) -> u64 {
    xxh3_64_with_seed(canonical, HASH_SEED)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden values, cross-checked against the C reference implementation (python-xxhash
    /// `xxh3_64_intdigest(data, seed=HASH_SEED)`). If this fails, the on-disk format changed.
    #[test]
    fn hash_is_pinned() {
        let got = [
            hash_bytes(b""),
            hash_bytes(b"0.6622377673133426"),
            hash_bytes(&5_i128.to_le_bytes()),
        ];
        assert_eq!(
            got,
            [
                0x0f28_822b_252d_aa42,
                0xc4e0_e994_f8b9_f34d,
                0xf1a7_d68b_2519_2f37
            ]
        );
    }
}
