//! What the server counts for COM_STATISTICS (`mariadb-admin status`): its uptime and the
//! statements it has been sent.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct ServerStatus {
    started: Instant,
    questions: AtomicU64,
}

impl Default for ServerStatus {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            questions: AtomicU64::new(0),
        }
    }
}

impl ServerStatus {
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// Counts a statement a client sent (MySQL's `Questions`).
    pub fn question(&self) {
        self.questions.fetch_add(1, Ordering::Relaxed);
    }

    pub fn questions(&self) -> u64 {
        self.questions.load(Ordering::Relaxed)
    }
}
