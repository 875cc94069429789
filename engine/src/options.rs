//! Session settings under the `sieve.` prefix, set with SQL: `SET sieve.pruning = false` reads
//! every block, the baseline differential tests compare pruned results against.

use datafusion::common::extensions_options;
use datafusion::config::ConfigExtension;

extensions_options! {
    pub struct SieveOptions {
        /// Skip blocks using min/max statistics and filter sidecars.
        pub pruning: bool, default = true
    }
}

impl ConfigExtension for SieveOptions {
    const PREFIX: &'static str = "sieve";
}
