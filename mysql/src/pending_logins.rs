//! Connections that have not logged in yet, kept apart from those that have. A client that
//! connects and then trickles its login (a 16,000-byte handshake packet, a byte a second) holds
//! its socket until `connect_timeout`; when such connections counted against `max_connections`,
//! 151 of them locked every other client out with "Too many connections". Now `max_connections`
//! counts logged-in connections only, and the ones still logging in have their own bound, in all
//! and per address.
//!
//! A new connection beyond either bound takes the place of the oldest pending login (of its
//! address, or of all) only if that one has been logging in for longer than a real client takes
//! (`PATIENCE`), as a full SYN queue drops a stale half-open connection; otherwise it is refused
//! with MySQL's "Too many connections", which a client reports, never a reset. A connection
//! pool's burst (every connection of an application server comes from one address, and a TLS +
//! caching_sha2 login takes up to a second under load) therefore all logs in, where dropping the
//! oldest at once reset a third of 64; a connection that trickles or stays silent still ends up
//! dropped, by a newer one or at `connect_timeout`.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

/// How long a pending login is left alone before a newer connection may take its place: longer
/// than a login over TLS with caching_sha2's full authentication takes on a loaded server.
const PATIENCE: Duration = Duration::from_secs(2);

/// How many connections may be logging in at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingLimits {
    pub total: usize,
    pub per_address: usize,
}

impl Default for PendingLimits {
    /// A burst of 256 connections from one address (a pool's), and room for a second one.
    fn default() -> Self {
        Self {
            total: 512,
            per_address: 256,
        }
    }
}

/// A connection refused because `max_pending_logins` (or its per-address bound) connections
/// are logging in, none of them for long.
#[derive(Debug, PartialEq, Eq)]
pub struct TooManyLogins;

/// A pending login: its address, when it was admitted, and what wakes it when dropped.
struct Entry {
    address: IpAddr,
    since: Instant,
    _dropped_wakes_it: oneshot::Sender<()>,
}

#[derive(Default)]
struct Pending {
    /// Oldest first, by admission order.
    logins: BTreeMap<u64, Entry>,
    per_address: HashMap<IpAddr, usize>,
    admitted: u64,
}

impl Pending {
    fn remove(&mut self, order: u64) {
        if let Some(entry) = self.logins.remove(&order)
            && let Some(count) = self.per_address.get_mut(&entry.address)
        {
            *count -= 1;
            if *count == 0 {
                self.per_address.remove(&entry.address);
            }
        }
    }

    /// Makes room for one more login (of `of`'s address, or of all when None) by dropping the
    /// oldest pending one, if it has waited past `PATIENCE`.
    fn make_room(&mut self, of: Option<IpAddr>, now: Instant) -> Result<(), TooManyLogins> {
        let oldest = self
            .logins
            .iter()
            .find(|(_, entry)| of.is_none_or(|of| entry.address == of));
        match oldest {
            Some((&order, entry)) if now.duration_since(entry.since) >= PATIENCE => {
                self.remove(order);
                Ok(())
            }
            _ => Err(TooManyLogins),
        }
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
    /// address or of all if either is at its bound and that login has waited long enough;
    /// refuses it if not.
    pub fn admit(self: &Arc<Self>, address: IpAddr) -> Result<PendingLogin, TooManyLogins> {
        let mut pending = self.pending.lock().expect("pending logins lock");
        let now = Instant::now();
        if pending.per_address.get(&address).copied().unwrap_or(0) >= self.limits.per_address {
            pending.make_room(Some(address), now)?;
        }
        if pending.logins.len() >= self.limits.total {
            pending.make_room(None, now)?;
        }
        let (wake, dropped) = oneshot::channel();
        pending.admitted += 1;
        let order = pending.admitted;
        let entry = Entry {
            address,
            since: now,
            _dropped_wakes_it: wake,
        };
        pending.logins.insert(order, entry);
        *pending.per_address.entry(address).or_default() += 1;
        Ok(PendingLogin {
            owner: self.clone(),
            order,
            dropped,
        })
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

    #[tokio::test(start_paused = true)]
    async fn a_full_table_refuses_until_its_oldest_login_has_waited_too_long() {
        let logins = Arc::new(PendingLogins::new(PendingLimits {
            total: 3,
            per_address: 2,
        }));
        let mut first = logins.admit(address(1)).unwrap();
        let mut second = logins.admit(address(1)).unwrap();
        // A third from the same address is refused while the first is young…
        assert_eq!(logins.admit(address(1)).err(), Some(TooManyLogins));
        // …and another address still has room.
        let other = logins.admit(address(2)).unwrap();
        assert_eq!(logins.admit(address(3)).err(), Some(TooManyLogins));
        assert_eq!(logins.count(), 3);
        // Past the patience, a newcomer of the address pushes out the oldest of it.
        tokio::time::advance(PATIENCE).await;
        let _third = logins.admit(address(1)).unwrap();
        first.pushed_out().await;
        // And one of another address the oldest of all.
        let fourth = logins.admit(address(4)).unwrap();
        second.pushed_out().await;
        assert_eq!(logins.count(), 3);
        // A login that ends gives its place back at once.
        drop(fourth);
        let _fifth = logins.admit(address(5)).unwrap();
        drop(other);
        assert_eq!(logins.count(), 2);
    }
}
