//! Every `.slt` file under sql-tests/slt, each on a fresh in-memory engine.

use std::path::PathBuf;

use sieve_engine::Engine;
use sieve_sql_tests::EmbeddedDb;

#[tokio::main]
async fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("sql-tests/slt exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    let (mut passed, mut failed) = (0, 0);
    for file in &files {
        let engine = Engine::open("memory://").await.expect("memory engine");
        let mut runner = sqllogictest::Runner::new(|| {
            let engine = engine.clone();
            async move { engine.session().map(EmbeddedDb::new) }
        });
        match runner.run_file_async(file).await {
            Ok(()) => {
                passed += 1;
                println!("test {} ... ok", file.display());
            }
            Err(e) => {
                failed += 1;
                println!("test {} ... FAILED\n{e}", file.display());
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
