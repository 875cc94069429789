//! Every `.slt` file over the MySQL protocol: each on a fresh `sieve serve`, through a MySQL
//! client, with the expected results the embedded runner checks (sql-tests/tests/slt.rs).

mod common;

use common::{PASSWORD, Server};
use sieve_sql_tests::{WireDb, run_every_file};

#[tokio::main]
async fn main() {
    run_every_file("over MySQL", |file| async move {
        let server = Server::start();
        let port = server.port;
        let mut runner = sqllogictest::Runner::new(move || WireDb::connect(port, "root", PASSWORD));
        runner
            .run_file_async(&file)
            .await
            .map_err(|e| format!("{e}\nserver log:\n{}", server.log()))
    })
    .await;
}
