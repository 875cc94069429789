//! `sieve-bench filters` at 10M rows (against MinIO when SIEVE_TEST_S3_URL is set, as in
//! scripts/test.sh): the report has every system and case, and its figures agree with each other
//! and with what each filter kind promises. Timings are reported, never asserted.

use std::process::Command;

use serde_json::Value;
use sieve_engine::Engine;
use sieve_storage::Storage;
use sieve_workload::text_rows;

/// Runs `sql` in a fresh engine on `storage` (nothing cached, as in a new process): its rows'
/// cells, joined.
fn fresh(storage: &str, sql: &str) -> String {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let engine = Engine::with_storage(Storage::open(storage).unwrap())
            .await
            .unwrap();
        let rows = text_rows(&engine, sql).await.unwrap();
        rows.iter()
            .map(|row| row.join("\t"))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

const ROWS: u64 = 10_000_000;
const BLOCKS: u64 = 10;
const QUERIES: u64 = 50;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// A metric of the Sieve scan in EXPLAIN ANALYZE output (`name=361.0 K`), as a number.
fn metric(plan: &str, name: &str) -> f64 {
    let at = plan
        .match_indices(&format!("{name}="))
        .map(|(i, _)| i)
        .find(|&i| {
            i == 0
                || !plan.as_bytes()[i - 1].is_ascii_alphanumeric() && plan.as_bytes()[i - 1] != b'_'
        })
        .unwrap_or_else(|| panic!("no {name} in {plan}"));
    let text = &plan[at + name.len() + 1..];
    let end = text.find([',', ']']).unwrap_or(text.len());
    let mut parts = text[..end].split_whitespace();
    let number: f64 = parts.next().unwrap().parse().unwrap();
    number
        * match parts.next() {
            None => 1.0,
            Some("K") => 1e3,
            Some("M") => 1e6,
            Some("B") => 1e9,
            Some(unit) => panic!("unit {unit} of {name}"),
        }
}

/// Bits per key and false-positive rate each kind may show with 1M distinct keys per block.
fn bounds(kind: &str) -> Option<((f64, f64), (f64, f64))> {
    Some(match kind {
        "xor8" => ((9.7, 10.0), (0.0030, 0.0050)),
        "binary_fuse8" => ((8.9, 9.3), (0.0030, 0.0050)),
        "xor16" => ((19.5, 20.0), (0.0, 0.0001)),
        "binary_fuse16" => ((17.9, 18.5), (0.0, 0.0001)),
        "cuckoo" => ((12.0, 14.5), (0.0005, 0.0035)),
        "bloom" => ((9.5, 11.5), (0.0050, 0.0200)),
        _ => return None,
    })
}

#[test]
fn the_filter_comparison_at_10m_rows_is_complete_and_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let storage = match std::env::var("SIEVE_TEST_S3_URL") {
        Ok(base) => format!("{base}/bench-filters-{}", std::process::id()),
        Err(_) => dir.path().join("data").to_str().unwrap().to_string(),
    };
    let out_dir = dir.path().join("report");
    let out = Command::new(env!("CARGO_BIN_EXE_sieve-bench"))
        .args(["--storage", &storage, "filters", "--rows", "10M", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    println!("{stdout}");

    let report: Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("filters.json")).unwrap()).unwrap();
    assert_eq!(u(&report["rows"]), ROWS);
    let systems = report["systems"].as_array().unwrap();
    let names: Vec<String> = systems
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s["engine"].as_str().unwrap(),
                s["filter"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "sieve xor8",
            "sieve xor16",
            "sieve binary_fuse8",
            "sieve binary_fuse16",
            "sieve cuckoo",
            "sieve bloom",
            "sieve none",
            "sieve locator",
            "datafusion none",
            "datafusion parquet_bloom"
        ]
    );

    for (name, s) in names.iter().zip(systems) {
        assert_eq!(u(&s["rows"]), ROWS, "{name}");
        assert_eq!(u(&s["blocks"]), BLOCKS, "{name}");
        for case in ["present_warm", "present_cold", "absent_warm", "absent_cold"] {
            let c = &s[case];
            assert_eq!(u(&c["queries"]), QUERIES, "{name} {case}");
            assert!(f(&c["median_ms"]) > 0.0, "{name} {case}");
            assert!(f(&c["p95_ms"]) >= f(&c["median_ms"]), "{name} {case}");
            assert!(u(&c["blocks_read_max"]) <= BLOCKS, "{name} {case}");
            assert!(
                u(&c["blocks_read_median"]) <= u(&c["blocks_read_max"]),
                "{name} {case}"
            );
            if case.starts_with("present") {
                // The key's own block is always read: a filter never hides a row.
                assert!(u(&c["blocks_read_median"]) >= 1, "{name} {case}");
            }
        }
        let kind = s["filter"].as_str().unwrap();
        let index_bytes = u(&s["index_bytes"]);
        if let (Some(((bits_lo, bits_hi), (fpr_lo, fpr_hi))), "sieve") =
            (bounds(kind), s["engine"].as_str().unwrap())
        {
            // c2 is distinct within every block: a key per row; c1 (the row number) holds
            // every integer of its block's range and needs no filter.
            assert_eq!(u(&s["index_keys"]), ROWS, "{name}");
            let bits = f(&s["bits_per_key"]);
            assert!(
                (bits_lo..bits_hi).contains(&bits),
                "{name}: {bits} bits/key"
            );
            let from_bits = bits * u(&s["index_keys"]) as f64 / 8.0;
            assert!(
                (from_bits - index_bytes as f64).abs() < 1.0,
                "{name}: bytes vs bits/key"
            );
            // Sidecars are the payloads plus a header and a 40-byte record per column and block.
            let overhead = u(&s["sidecar_bytes"]) - index_bytes;
            assert!(
                overhead <= BLOCKS * 200,
                "{name}: {overhead} bytes of sidecar overhead"
            );
            assert_eq!(u(&s["false_positive_probes"]), 100_000 * BLOCKS, "{name}");
            let fpr = f(&s["false_positive_rate"]);
            assert!((fpr_lo..=fpr_hi).contains(&fpr), "{name}: FPR {fpr}");
            // Absent keys lie inside every block's min/max: only the filter prunes, and with
            // these rates it prunes nearly everything.
            assert!(u(&s["absent_warm"]["blocks_read_median"]) <= 1, "{name}");
        } else if name != "sieve locator" {
            assert!(s["false_positive_rate"].is_null(), "{name}");
        }
        match name.as_str() {
            "sieve none" | "datafusion none" => {
                assert_eq!(index_bytes, 0, "{name}");
                for case in ["present_warm", "absent_warm", "absent_cold"] {
                    assert_eq!(u(&s[case]["blocks_read_median"]), BLOCKS, "{name} {case}");
                }
            }
            "sieve locator" => {
                // One group of the 10 blocks, holding every distinct key of c2; c1 (the row
                // number) ascends block after block and needs no locator.
                assert_eq!(u(&s["index_keys"]), ROWS, "{name}");
                let bits = f(&s["bits_per_key"]);
                assert!((16.0..=32.0).contains(&bits), "{name}: {bits} bits/key");
                assert_eq!(u(&s["false_positive_probes"]), 100_000, "{name}");
                // The group's fingerprints have 8 bits: 2^-8 per probe.
                let fpr = f(&s["false_positive_rate"]);
                assert!((0.0..=0.005).contains(&fpr), "{name}: FPR {fpr}");
                for case in ["absent_warm", "absent_cold"] {
                    assert_eq!(u(&s[case]["blocks_read_median"]), 0, "{name} {case}");
                }
                for case in ["present_warm", "present_cold"] {
                    assert_eq!(u(&s[case]["blocks_read_median"]), 1, "{name} {case}");
                }
            }
            "datafusion parquet_bloom" => {
                assert!(index_bytes > 0, "Parquet bloom filters add bytes");
                assert!(u(&s["absent_warm"]["blocks_read_median"]) <= 1, "{name}");
            }
            _ => {}
        }
    }

    // The locator's reads at 10M rows, counted by the scan (a fresh process: nothing cached): a
    // present key's one slice, ≤ 512 KB of data; a few pages of index.
    let table = "bench_filters.t_binary_fuse8";
    let key = fresh(
        &storage,
        &format!("select c2 from {table} where c1 = 4242424"),
    );
    let plan = fresh(
        &storage,
        &format!("explain analyze select c1 from {table} where c2 = '{key}'"),
    );
    assert_eq!(metric(&plan, "blocks_read"), 1.0, "{plan}");
    assert_eq!(metric(&plan, "pages_read"), 1.0, "{plan}");
    assert!(metric(&plan, "bytes_scanned") <= 512e3, "{plan}");
    assert!(metric(&plan, "index_bytes_fetched") <= 8e3, "{plan}");

    let markdown = std::fs::read_to_string(out_dir.join("filters.md")).unwrap();
    assert_eq!(
        markdown.lines().filter(|l| l.starts_with("| ")).count(),
        1 + names.len()
    );
    assert!(stdout.contains(&markdown));
    let csv = std::fs::read_to_string(out_dir.join("filters.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 4 * names.len());
    let svg = std::fs::read_to_string(out_dir.join("filters.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("binary_fuse8"),
        "{svg:.200}"
    );
}
