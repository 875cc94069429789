//! `sieve worker` processes for tests of coordinators (`sieve serve` with `workers`).

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::sieve;

/// A `sieve worker` on a loopback port; killed on drop.
pub struct Worker {
    pub port: u16,
    child: Child,
    log: tempfile::NamedTempFile,
    /// Serves over TLS.
    tls: bool,
}

/// What the test's workers and coordinator share; workers refuse calls without it.
pub const SECRET: &str = "test-cluster-secret-0123";

impl Worker {
    pub fn start(storage: &str) -> Self {
        Self::start_with(storage, 0, &[])
    }

    /// A worker on `port` (0: one the kernel picks) with more flags (`--tls-cert …`).
    pub fn start_with(storage: &str, port: u16, more: &[&str]) -> Self {
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = sieve()
            .args(["--storage", storage, "worker", "--port", &port.to_string()])
            .args(more)
            .env("SIEVE_CLUSTER_SECRET", SECRET)
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap();
        let port = super::listening_port(&mut child, log.path(), "worker listening on ");
        Self {
            port,
            child,
            log,
            tls: more.contains(&"--tls-cert"),
        }
    }

    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// How many locator groups' routing filters the worker says it loaded (waiting up to 20 s
    /// for it to say so).
    pub fn routing_groups_loaded(&self) -> usize {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let log = std::fs::read_to_string(self.log.path()).unwrap_or_default();
            let loaded = log
                .rsplit("routing filters loaded: ")
                .next()
                .filter(|_| log.contains("routing filters loaded: "));
            if let Some(groups) = loaded.and_then(|l| l.split(' ').next()?.parse().ok()) {
                return groups;
            }
            assert!(
                Instant::now() < deadline,
                "no routing filters loaded:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// How many data files' index entries the worker last said it loaded of an attached
    /// table, as its share of the workers: None before it loaded any.
    pub fn attached_index_files_loaded(&self) -> Option<usize> {
        let log = std::fs::read_to_string(self.log.path()).unwrap_or_default();
        let (_, last) = log.rsplit_once(" loaded: entries of ")?;
        let (files, share) = last.split_once(" data files, ")?;
        assert!(share.contains(" MiB (this worker's share"), "{log}");
        Some(files.parse().unwrap())
    }

    pub fn kill(&mut self) {
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
