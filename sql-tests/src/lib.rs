//! Sieve's sqllogictest files (`sql-tests/slt/*.slt`) and the two ways they run: against an
//! embedded engine (`tests/slt.rs`) and over the MySQL protocol through `sieve serve`
//! (`cli/tests/slt_wire.rs`), with the same expected results, so the protocol layer's types and
//! formatting are covered by every SQL test.

mod embedded;
mod wire;

use std::path::PathBuf;

pub use embedded::EmbeddedDb;
pub use wire::WireDb;

/// Runs every file through `run` (a fresh database each), printing a line per file and libtest's
/// summary line, which scripts/test.sh counts; exits 1 if any file failed. `path` names the way
/// they ran in each line.
pub async fn run_every_file<F, Fut>(path: &str, mut run: F)
where
    F: FnMut(PathBuf) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let (mut passed, mut failed) = (0, 0);
    for file in slt_files() {
        let shown = format!("test {} {path}", file.display());
        match run(file).await {
            Ok(()) => {
                passed += 1;
                println!("{shown} ... ok");
            }
            Err(e) => {
                failed += 1;
                println!("{shown} ... FAILED\n{e}");
            }
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out",
        if failed == 0 { "ok" } else { "FAILED" }
    );
    if failed > 0 {
        std::process::exit(1);
    }
}

/// Every `.slt` file, in name order.
fn slt_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("sql-tests/slt exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .slt files in {}", dir.display());
    files
}

/// A cell as the files spell it: NULL for nulls, (empty) for empty strings.
fn spelled(text: Option<String>) -> String {
    match text {
        None => "NULL".into(),
        Some(t) if t.is_empty() => "(empty)".into(),
        Some(t) => t,
    }
}
