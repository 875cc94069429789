//! `sieve load`: interrupted by kill -9, Ctrl-C or a MinIO restart, then run again, the table ends
//! with every row exactly once; loads it cannot continue are refused with a clear error.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_fails_with, sieve, signal, sql, stderr, stdout};

const ROWS: &str = "4000000";
/// 80 blocks, a commit every 4: many commits, each a fraction of a second even in a debug build.
const LOAD: [&str; 6] = [
    "--block-rows",
    "50000",
    "--commit-blocks",
    "4",
    "--rows",
    ROWS,
];

/// `sieve load <table> <args>` on `storage`.
fn sieve_load(storage: &str, table: &str, args: &[&str]) -> Command {
    let mut command = sieve();
    command
        .args(["--storage", storage, "load", table])
        .args(args);
    command
}

fn load(storage: &str, extra: &[&str]) -> Command {
    let mut command = sieve_load(storage, "t10b", &LOAD);
    command.args(extra);
    command
}

fn spawn_load(storage: &str) -> Child {
    load(storage, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// count(*) of t10b, or 0 while the table or its first commit does not exist yet.
fn committed_rows(storage: &str) -> u64 {
    let out = sql(storage, "select count(*) from t10b");
    stdout(&out)
        .lines()
        .find_map(|l| l.trim_matches(|c| c == '|' || c == ' ').parse().ok())
        .unwrap_or(0)
}

/// Waits until a load has committed something (and is still running).
fn wait_for_a_commit(storage: &str, child: &mut Child) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let rows = committed_rows(storage);
        if rows > 0 {
            return rows;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the load ended before its first commit was seen"
        );
        assert!(Instant::now() < deadline, "no commit within 2 minutes");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs the load to the end with --verify: count(*) = count(distinct c1) = ROWS.
fn finish_and_verify(storage: &str) -> String {
    let out = load(storage, &["--verify"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("verified: count(*) = count(distinct c1) = {ROWS}")),
        "{text}"
    );
    text
}

#[test]
fn a_load_killed_with_sigkill_continues_from_its_last_commit() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().to_str().unwrap();
    let mut child = spawn_load(storage);
    wait_for_a_commit(storage, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    let committed = committed_rows(storage);
    assert!(committed > 0 && committed < 4_000_000, "{committed}");
    assert_eq!(
        committed % 200_000,
        0,
        "commits are whole batches of 4 blocks"
    );

    let text = finish_and_verify(storage);
    assert!(text.contains("resumed after"), "{text}");
}

#[test]
fn ctrl_c_stops_a_load_with_what_is_committed_and_a_rerun_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().to_str().unwrap();
    let mut child = spawn_load(storage);
    wait_for_a_commit(storage, &mut child);
    signal(&child, "INT");
    let out = child.wait_with_output().unwrap();
    assert_fails_with(&out, "interrupted: ");
    assert_fails_with(&out, "run the same command again to continue");
    finish_and_verify(storage);
}

#[test]
fn a_finished_load_run_again_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().to_str().unwrap();
    finish_and_verify(storage);
    let text = finish_and_verify(storage);
    assert!(text.starts_with("loaded 0 rows"), "{text}");
}

#[test]
fn loads_that_cannot_continue_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().to_str().unwrap();
    let small = |rows: &str, extra: &[&str]| {
        let mut command = sieve_load(storage, "t", &["--block-rows", "1000", "--rows", rows]);
        command.args(extra).output().unwrap()
    };
    assert!(small("1500", &["--filter", "xor8"]).status.success());
    // Options the table already has may be repeated, or left out.
    let out = small("1500", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("loaded 0 rows"),
        "{}",
        stdout(&out)
    );
    assert_fails_with(
        &small("2500", &[]),
        "which a load of 2500 rows would not write",
    );
    assert_fails_with(
        &small("1500", &["--filter", "bloom"]),
        "exists with options",
    );
    assert_fails_with(&small("1500", &["--filter", "nope"]), "nope");

    let out = sql(
        storage,
        "create table ctas as select cast(number + 5 as bigint unsigned) as c1, cast(rand() as string) as c2 from numbers(10)",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = sieve_load(storage, "ctas", &["--rows", "10"])
        .output()
        .unwrap();
    assert_fails_with(&out, "that `sieve load` did not write");
    let out = sieve_load(storage, "t10b", &["--rows", "ten"])
        .output()
        .unwrap();
    assert_fails_with(&out, "expected a row count");
}

/// A MinIO of this test's own, so it can be killed and restarted without disturbing other tests.
struct Minio {
    bin: String,
    data: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Minio {
    fn start(bin: String) -> Self {
        let mut minio = Self {
            bin,
            data: tempfile::tempdir().unwrap(),
            port: common::free_port(),
            child: None,
        };
        minio.restart();
        // MinIO answers its liveness probe before it serves S3 requests (a PUT then gets 503
        // "Server not initialized"), so the bucket is created by retrying until it succeeds.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = Command::new("curl")
                .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT"])
                .args(["--user", "sieve:sieve-secret-key"])
                .args(["--aws-sigv4", "aws:amz:us-east-1:s3"])
                .arg(format!("{}/load-test", minio.endpoint()))
                .output()
                .unwrap();
            let code = String::from_utf8_lossy(&out.stdout).into_owned();
            if code == "200" {
                return minio;
            }
            assert!(
                Instant::now() < deadline,
                "could not create the bucket: HTTP {code}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn restart(&mut self) {
        let child = Command::new(&self.bin)
            .args(["server", self.data.path().to_str().unwrap(), "--address"])
            .arg(format!("127.0.0.1:{}", self.port))
            .env("MINIO_ROOT_USER", "sieve")
            .env("MINIO_ROOT_PASSWORD", "sieve-secret-key")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        let health = format!("{}/minio/health/live", self.endpoint());
        while !Command::new("curl")
            .args(["-sf", &health])
            .status()
            .unwrap()
            .success()
        {
            assert!(Instant::now() < deadline, "MinIO did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}

impl Drop for Minio {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn a_load_survives_a_minio_restart() {
    let bin = std::env::var("SIEVE_TEST_MINIO_BIN")
        .expect("SIEVE_TEST_MINIO_BIN is not set: this test restarts MinIO; run scripts/test.sh");
    let mut minio = Minio::start(bin);
    let storage = "s3://load-test/t";
    let endpoint = minio.endpoint();
    let load_from_minio = |extra: &[&str]| {
        let mut command = load(storage, extra);
        command
            .env("AWS_ENDPOINT", &endpoint)
            .env("AWS_ACCESS_KEY_ID", "sieve")
            .env("AWS_SECRET_ACCESS_KEY", "sieve-secret-key")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ALLOW_HTTP", "true");
        command
    };
    let child = load_from_minio(&[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Poll MinIO's own files for the first snapshot: `sieve sql` would need the env too.
    let deadline = Instant::now() + Duration::from_secs(120);
    while !has_snapshot(minio.data.path()) {
        assert!(Instant::now() < deadline, "no commit within 2 minutes");
        std::thread::sleep(Duration::from_millis(50));
    }
    minio.kill();
    std::thread::sleep(Duration::from_secs(2));
    minio.restart();
    // The interrupted load either rode out the outage on object_store's retries or failed with
    // an error; either way, running it again must leave every row exactly once.
    let first = child.wait_with_output().unwrap();
    eprintln!("first run: {:?}\n{}", first.status, stderr(&first));
    let out = load_from_minio(&["--verify"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("verified"), "{}", stdout(&out));
}

/// Whether MinIO's data directory holds a committed snapshot of a table (version 1 or later).
fn has_snapshot(dir: &std::path::Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let path = entry.path();
        if path
            .file_name()
            .is_some_and(|n| n == "00000000000000000001.json")
        {
            return true;
        }
        path.is_dir() && has_snapshot(&path)
    })
}
