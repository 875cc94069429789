//! A coordinator (`sieve serve --workers …`) over three `sieve worker` processes on loopback, all
//! over one MinIO bucket: every answer equals a single-process server's over the same storage;
//! each worker reads only the blocks rendezvous placement gives it; a worker killed is routed
//! around, and one started again takes its share back.

mod common;

use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{Server, free_port, sieve, sql, stderr, stdout};

/// A `sieve worker` on a loopback port; killed on drop.
struct Worker {
    port: u16,
    child: Child,
    log: tempfile::NamedTempFile,
}

impl Worker {
    fn start(storage: &str, port: u16) -> Self {
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = sieve()
            .args(["--storage", storage, "worker", "--port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "sieve worker did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { port, child, log }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "worker {} log:\n{}",
                self.port,
                std::fs::read_to_string(self.log.path()).unwrap_or_default()
            );
        }
    }
}

/// The queries both servers answer: point lookups present and absent, IN lists, ranges,
/// aggregates, NULLs, and the same with pruning off.
fn queries(present: &str) -> Vec<String> {
    let mut queries = vec![
        "select count(*), sum(c1), count(c3) from t".to_string(),
        format!("select c1, c2, c3 from t where c2 = '{present}'"),
        "select c1, c2 from t where c2 = 'no such key'".to_string(),
        "select c1, c2 from t where c1 = 54321".to_string(),
        "select c1 from t where c1 in (7, 40000, 99999, 123456789) order by c1".to_string(),
        "select c1, c3 from t where c1 between 1000 and 1010 order by c1".to_string(),
        "select c3, count(*) from t group by c3 order by c3 limit 5".to_string(),
        "select count(*) from t where c3 is null".to_string(),
        "select c1 from t where c3 = 17 order by c1 limit 3".to_string(),
    ];
    let unpruned: Vec<String> = queries
        .iter()
        .map(|q| format!("set sieve.pruning = false; {q}"))
        .collect();
    queries.extend(unpruned);
    queries
}

fn answer(server: &Server, query: &str) -> String {
    let out = server.mysql(&["-e", &format!("{query} allow filtering")]);
    assert!(
        out.status.success(),
        "{query}: {}\nserver log:\n{}",
        stderr(&out),
        server.log()
    );
    stdout(&out)
}

/// Every query answers the same through the workers as in one process.
fn assert_answers_match(coordinator: &Server, local: &Server, present: &str) {
    for query in queries(present) {
        assert_eq!(
            answer(coordinator, &query),
            answer(local, &query),
            "{query}: the workers' answer differs from one process's"
        );
    }
}

#[test]
fn three_workers_answer_as_one_process_and_survive_losing_one() {
    let Ok(base) = std::env::var("SIEVE_TEST_S3_URL") else {
        eprintln!("SIEVE_TEST_S3_URL not set (scripts/test.sh sets it): skipped");
        return;
    };
    let storage = format!("{base}/workers-{}", std::process::id());
    // 100k rows in 25 blocks of 4000, indexed on c1 and c2; c3 has NULLs and repeats.
    let out = sql(
        &storage,
        "create table t (c1 bigint, c2 varchar, c3 int) \
         with (index_columns = 'c1,c2', block_rows = 4000); \
         insert into t select number, cast(number * 7919 % 100003 as varchar), \
         case when number % 10 = 0 then null else cast(number % 97 as int) end \
         from numbers(100000)",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let present = (54321u64 * 7919 % 100003).to_string();

    let mut workers: Vec<Worker> = (0..3)
        .map(|_| Worker::start(&storage, free_port()))
        .collect();
    let urls: Vec<String> = workers.iter().map(Worker::url).collect();
    let config = format!(
        "workers = [{}]",
        urls.iter()
            .map(|u| format!("\"{u}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let coordinator = Server::start_on(&storage, &config);
    let local = Server::start_on(&storage, "");
    assert_answers_match(&coordinator, &local, &present);

    // A worker dies: once the coordinator notices (it probes every 0.5 s), its blocks are read
    // by the others and every answer is still whole.
    let port = workers[1].port;
    workers[1].kill();
    std::thread::sleep(Duration::from_secs(2));
    assert_answers_match(&coordinator, &local, &present);

    // It comes back on the same address and takes its share back.
    workers[1] = Worker::start(&storage, port);
    std::thread::sleep(Duration::from_secs(2));
    assert_answers_match(&coordinator, &local, &present);

    // An append is seen by the next query through the workers.
    let out = sql(&storage, "insert into t values (100000, 'appended', 1)");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        answer(&coordinator, "select c1 from t where c2 = 'appended'"),
        "100000\n"
    );
}
