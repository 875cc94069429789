//! Rows written by the statement a session is running, read by front ends while it runs (the
//! shell's progress bar, the server's progress log).

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct WriteProgress {
    rows: AtomicU64,
}

impl WriteProgress {
    pub fn rows(&self) -> u64 {
        self.rows.load(Ordering::Relaxed)
    }

    pub(crate) fn add(&self, rows: u64) {
        self.rows.fetch_add(rows, Ordering::Relaxed);
    }

    pub(crate) fn reset(&self) {
        self.rows.store(0, Ordering::Relaxed);
    }
}
