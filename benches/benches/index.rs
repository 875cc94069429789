//! Index benchmarks per filter kind at 10k / 100k / 1M keys, on the `t10b` c2 column (random
//! doubles as text, every value distinct):
//! - `build`: hashing the Arrow column + cardinality estimate + sort/dedup + filter construction
//!   (throughput = keys/s, so ns/key is its inverse);
//! - `probe`: `may_contain` on an opened sidecar, half present and half absent keys;
//! - a table of bits/key and measured false-positive rate, printed first;
//! - `locator`: what a write spends per key on a locator group of 8 blocks (1M keys) built in
//!   memory: the blocks' `block_keys`, then `locator::build` (a larger group spills its keys and
//!   builds the same shards a range at a time).
//!
//! `cargo bench -p sieve-benches --bench index` (add `-- build/binary_fuse8` to filter).

use std::hint::black_box;
use std::time::Duration;

use arrow_array::ArrayRef;
use criterion::{BenchmarkId, Criterion, Throughput};
use sieve_index::locator::{self, SLICE_ROWS};
use sieve_index::sidecar::{self, Sidecar};
use sieve_index::{ColumnHashes, ColumnIndex, FilterKind};

const SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];
const PROBES: usize = 4096;

/// `n` values of t10b's c2 (`cast(rand() as string)`), as `sieve load` writes block `seed`.
fn random_double_strings(seed: u64, n: usize) -> ArrayRef {
    let block = sieve_workload::t10b_block(seed, 0, n as u64).expect("generates");
    block.column(1).clone()
}

fn hashes(seed: u64, n: usize) -> ColumnHashes {
    ColumnHashes::from_array(random_double_strings(seed, n).as_ref()).expect("strings hash")
}

fn open_sidecar(kind: FilterKind, n: usize) -> (Sidecar, ColumnIndex) {
    let column = ColumnIndex::build("c2", kind, hashes(1, n));
    let bytes = sidecar::encode(std::slice::from_ref(&column)).expect("encodes");
    (Sidecar::open(bytes.into()).expect("opens"), column)
}

/// Bits per distinct key and false-positive rate over 1M absent keys, as a Markdown table.
fn size_report() {
    let absent = hashes(2, 1_000_000).hashes;
    println!("| kind | keys | bits/key | FPR (1M absent keys) |\n|---|---|---|---|");
    for kind in FilterKind::ALL {
        for n in SIZES {
            let (sidecar, column) = open_sidecar(kind, n);
            let probe = &sidecar.columns()[0];
            let false_positives = absent.iter().filter(|&&h| probe.may_contain(h)).count();
            println!(
                "| {kind} | {n} | {:.2} | {:.4}% |",
                column.payload.len() as f64 * 8.0 / column.key_count as f64,
                false_positives as f64 * 100.0 / absent.len() as f64
            );
        }
    }
}

fn build(c: &mut Criterion) {
    let mut group = c.benchmark_group("build");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500));
    for n in SIZES {
        let strings = random_double_strings(1, n);
        group.throughput(Throughput::Elements(n as u64));
        for kind in FilterKind::ALL {
            group.bench_with_input(BenchmarkId::new(kind.name(), n), &strings, |b, strings| {
                b.iter(|| {
                    let hashes = ColumnHashes::from_array(strings.as_ref()).expect("strings hash");
                    black_box(ColumnIndex::build("c2", kind, hashes))
                })
            });
        }
    }
    group.finish();
}

fn probe(c: &mut Criterion) {
    let mut group = c.benchmark_group("probe");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500));
    group.throughput(Throughput::Elements(PROBES as u64));
    for n in SIZES {
        let present = hashes(1, PROBES / 2).hashes;
        let mut keys = hashes(3, PROBES / 2).hashes;
        keys.extend(present);
        for kind in FilterKind::ALL {
            let (sidecar, _) = open_sidecar(kind, n);
            let column = sidecar.column("c2").expect("indexed");
            group.bench_with_input(BenchmarkId::new(kind.name(), n), &keys, |b, keys| {
                b.iter(|| {
                    keys.iter()
                        .filter(|&&h| column.may_contain(black_box(h)))
                        .count()
                })
            });
        }
    }
    group.finish();
}

fn locator(c: &mut Criterion) {
    const BLOCKS: usize = 8;
    const BLOCK_KEYS: usize = 1 << 17;
    let mut group = c.benchmark_group("locator");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .throughput(Throughput::Elements((BLOCKS * BLOCK_KEYS) as u64));
    let rows: Vec<u32> = (0..BLOCK_KEYS as u32).collect();
    let blocks: Vec<Vec<u64>> = (0..BLOCKS as u64)
        .map(|b| hashes(b, BLOCK_KEYS).hashes)
        .collect();
    let keys = || -> Vec<_> {
        blocks
            .iter()
            .map(|h| locator::block_keys(h, &rows, SLICE_ROWS))
            .collect()
    };
    group.bench_function("block_keys", |b| b.iter(|| black_box(keys())));
    let per_block = [("c2", keys())];
    let slices = (BLOCK_KEYS as u32).div_ceil(SLICE_ROWS);
    group.bench_function("build", |b| {
        b.iter(|| locator::build(black_box(&per_block), SLICE_ROWS, slices, 8).expect("builds"))
    });
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    // `cargo bench` passes --bench; `cargo test` runs each benchmark once and skips the report.
    if std::env::args().any(|a| a == "--bench") {
        size_report();
    }
    build(&mut criterion);
    probe(&mut criterion);
    locator(&mut criterion);
    criterion.final_summary();
}
