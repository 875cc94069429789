//! Connections that have not logged in yet, kept apart from those that have. A client that
//! connects and then trickles its login (a 16,000-byte handshake packet, a byte a second) holds
//! its socket until `connect_timeout`; when such connections counted against `max_connections`,
//! 151 of them locked every other client out with "Too many connections". Now `max_connections`
//! counts logged-in connections only, and the ones still logging in have their own, smaller
//! bound, in all and per address. A new connection beyond either bound does not wait or get
//! refused: the oldest pending login (of its address, or of all) is dropped to make room, as a
//! full SYN queue drops its oldest half-open connection. A real client logs in within a round
//! trip or two, so it is never the oldest for long; one that trickles always ends up dropped.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// How many connections may be logging in at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingLimits {
    pub total: usize,
    pub per_address: usize,
}

impl Default for PendingLimits {
    fn default() -> Self {
        Self {
            total: 64,
            per_address: 16,
        }
    }
}

#[derive(Default)]
struct Pending {
    /// Oldest first: admission order, the address, and what wakes the login when dropped.
    logins: BTreeMap<u64, (IpAddr, oneshot::Sender<()>)>,
    per_address: HashMap<IpAddr, usize>,
    admitted: u64,
}

impl Pending {
    fn remove(&mut self, order: u64) {
        if let Some((address, _dropped_wakes_it)) = self.logins.remove(&order)
            && let Some(count) = self.per_address.get_mut(&address)
        {
            *count -= 1;
            if *count == 0 {
                self.per_address.remove(&address);
            }
        }
    }

    fn oldest(&self, of: Option<IpAddr>) -> Option<u64> {
        self.logins
            .iter()
            .find(|(_, (address, _))| of.is_none_or(|of| *address == of))
            .map(|(order, _)| *order)
    }
}

pub struct PendingLogins {
    limits: PendingLimits,
    pending: Mutex<Pending>,
}

impl PendingLogins {
    pub fn new(limits: PendingLimits) -> Self {
        Self {
            limits,
            pending: Mutex::default(),
        }
    }

    /// Admits a connection from `address` to log in, dropping the oldest pending login of its
    /// address or of all if either is at its bound.
    pub fn admit(self: &Arc<Self>, address: IpAddr) -> PendingLogin {
        let mut pending = self.pending.lock().expect("pending logins lock");
        if pending.per_address.get(&address).copied().unwrap_or(0) >= self.limits.per_address
            && let Some(oldest) = pending.oldest(Some(address))
        {
            pending.remove(oldest);
        }
        if pending.logins.len() >= self.limits.total
            && let Some(oldest) = pending.oldest(None)
        {
            pending.remove(oldest);
        }
        let (wake, dropped) = oneshot::channel();
        pending.admitted += 1;
        let order = pending.admitted;
        pending.logins.insert(order, (address, wake));
        *pending.per_address.entry(address).or_default() += 1;
        PendingLogin {
            owner: self.clone(),
            order,
            dropped,
        }
    }

    /// Connections logging in now.
    pub fn count(&self) -> usize {
        self.pending
            .lock()
            .expect("pending logins lock")
            .logins
            .len()
    }
}

/// One connection's place among the pending logins, given up when it is dropped (logged in or
/// gone).
pub struct PendingLogin {
    owner: Arc<PendingLogins>,
    order: u64,
    dropped: oneshot::Receiver<()>,
}

impl PendingLogin {
    /// Resolves when a newer connection took this one's place: its login is to end.
    pub async fn pushed_out(&mut self) {
        // Nothing is ever sent: the sender is dropped with the entry.
        let _ = (&mut self.dropped).await;
    }
}

impl Drop for PendingLogin {
    fn drop(&mut self) {
        let mut pending = self.owner.pending.lock().expect("pending logins lock");
        pending.remove(self.order);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[tokio::test]
    async fn the_oldest_of_an_address_then_of_all_make_room() {
        let logins = Arc::new(PendingLogins::new(PendingLimits {
            total: 3,
            per_address: 2,
        }));
        let mut first = logins.admit(address(1));
        let mut second = logins.admit(address(1));
        // A third from the same address pushes out the first of it.
        let _third = logins.admit(address(1));
        first.pushed_out().await;
        assert_eq!(logins.count(), 2);
        // Another address fills the total; one more pushes out the oldest of all.
        let mut other = logins.admit(address(2));
        let fifth = logins.admit(address(3));
        second.pushed_out().await;
        assert_eq!(logins.count(), 3);
        // A login that ends gives its place back, and is not pushed out later.
        drop(fifth);
        assert_eq!(logins.count(), 2);
        let _sixth = logins.admit(address(4));
        assert_eq!(logins.count(), 3);
        assert_eq!(
            other.dropped.try_recv(),
            Err(oneshot::error::TryRecvError::Empty),
            "still pending"
        );
    }
}
