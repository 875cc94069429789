//! Every `.slt` file, each on a fresh in-memory engine.

use sieve_engine::Engine;
use sieve_sql_tests::{EmbeddedDb, run_every_file};

#[tokio::main]
async fn main() {
    run_every_file("embedded", |file| async move {
        let engine = Engine::open("memory://").await.expect("memory engine");
        let mut runner = sqllogictest::Runner::new(|| {
            let engine = engine.clone();
            async move { engine.session().map(EmbeddedDb::new) }
        });
        runner
            .run_file_async(&file)
            .await
            .map_err(|e| e.to_string())
    })
    .await;
}
