//! The `sieve` command line (server, SQL shell, loader, benchmarks, workers). Built in the CLI
//! issue; depends only on `sieve-engine`.
