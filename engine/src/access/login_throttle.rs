//! Failed logins from one address slow down: each failure answers after a delay that doubles
//! with the address's recent failures (up to [`MAX_DELAY`]), and one address's failed attempts
//! are answered one at a time, so opening many connections in parallel does not multiply the
//! guesses. A successful login clears the address's record. One throttle serves every port
//! (MySQL and Flight SQL), so guesses cannot be spread over both.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

const FIRST_DELAY: Duration = Duration::from_millis(200);
const MAX_DELAY: Duration = Duration::from_secs(5);
/// An address with no failure for this long starts afresh.
const FORGET_AFTER: Duration = Duration::from_secs(600);

#[derive(Debug, Default)]
struct Record {
    failures: u32,
    last: Option<Instant>,
}

#[derive(Debug, Default)]
pub struct LoginThrottle {
    addresses: Mutex<HashMap<IpAddr, Arc<tokio::sync::Mutex<Record>>>>,
}

impl LoginThrottle {
    fn record(&self, address: IpAddr) -> Arc<tokio::sync::Mutex<Record>> {
        let mut addresses = self.addresses.lock().expect("throttle lock");
        addresses.entry(address).or_default().clone()
    }

    /// Runs `check` (a password check) for `address`, delaying the answer if it fails. The check
    /// runs on a blocking thread: SHA-256-crypt's 5000 rounds take milliseconds, which would
    /// hold up the other connections served by the same runtime thread. The check and its delay
    /// run in a task of their own, so a caller that gives up (a gRPC client cancelling its
    /// handshake) neither ends the delay nor hands the address's turn to its next attempt early.
    pub async fn check(
        &self,
        address: IpAddr,
        check: impl FnOnce() -> bool + Send + 'static,
    ) -> bool {
        let record = self.record(address);
        let attempt = tokio::spawn(async move {
            let mut record = record.lock().await;
            if tokio::task::spawn_blocking(check).await.unwrap_or(false) {
                return true;
            }
            let now = Instant::now();
            if record.last.is_some_and(|last| now - last > FORGET_AFTER) {
                record.failures = 0;
            }
            let delay = FIRST_DELAY
                .saturating_mul(1 << record.failures.min(8))
                .min(MAX_DELAY);
            record.failures += 1;
            crate::metrics::login_delayed(delay);
            // Held across the delay: the address's next attempt waits for this one's answer.
            tokio::time::sleep(delay).await;
            record.last = Some(Instant::now());
            false
        });
        let ok = attempt.await.unwrap_or(false);
        if ok {
            self.addresses
                .lock()
                .expect("throttle lock")
                .remove(&address);
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn failures_slow_down_and_run_one_at_a_time() {
        let throttle = Arc::new(LoginThrottle::default());
        let address = IpAddr::from([10, 0, 0, 1]);
        let started = Instant::now();
        let attempts: Vec<_> = (0..6)
            .map(|_| {
                let throttle = throttle.clone();
                tokio::spawn(async move { throttle.check(address, || false).await })
            })
            .collect();
        for attempt in attempts {
            assert!(!attempt.await.unwrap());
        }
        // 0.2 + 0.4 + 0.8 + 1.6 + 3.2 + 5 s, one after another.
        assert_eq!(started.elapsed(), Duration::from_millis(11_200));
        let other = Instant::now();
        assert!(throttle.check(IpAddr::from([10, 0, 0, 2]), || true).await);
        assert!(throttle.check(address, || true).await);
        assert_eq!(other.elapsed(), Duration::ZERO);
        assert!(!throttle.check(address, || false).await);
        assert_eq!(other.elapsed(), FIRST_DELAY);
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_that_gives_up_does_not_shorten_the_delay() {
        let throttle = LoginThrottle::default();
        let address = IpAddr::from([10, 0, 0, 3]);
        let started = Instant::now();
        let first = throttle.check(address, || false);
        assert!(
            tokio::time::timeout(Duration::from_millis(1), first)
                .await
                .is_err(),
            "the first failure is still being held back"
        );
        // The next attempt waits for the first one's 0.2 s, then its own 0.4 s.
        assert!(!throttle.check(address, || false).await);
        assert_eq!(started.elapsed(), Duration::from_millis(600));
    }
}
