//! `sieve-bench`: Sieve's benchmarks on t10b (`sieve_workload::bench`).

fn main() {
    sieve_workload::bench::main()
}
