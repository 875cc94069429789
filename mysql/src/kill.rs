//! KILL [QUERY | CONNECTION] id: what JDBC's `Statement.cancel()` and the mysql client's Ctrl-C
//! send, on a second connection, to stop a statement running on the first. Every connection
//! registers here under its id; KILL QUERY interrupts the statement it is running (MySQL's error
//! 1317 to its client, which keeps its connection), KILL closes the connection too.

use std::collections::HashMap;
use std::net::Shutdown;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::TcpStream;
use tokio::sync::Notify;

/// One connection, as KILL reaches it.
#[derive(Debug)]
pub struct Killable {
    /// Wakes the statement running now, if one is (a KILL between statements does nothing).
    pub interrupt: Notify,
    socket: Arc<TcpStream>,
}

/// Every open connection, by id.
#[derive(Debug, Default)]
pub struct Connections(Mutex<HashMap<u32, Arc<Killable>>>);

impl Connections {
    pub fn register(&self, id: u32, socket: Arc<TcpStream>) -> Arc<Killable> {
        let killable = Arc::new(Killable {
            interrupt: Notify::new(),
            socket,
        });
        self.map().insert(id, killable.clone());
        killable
    }

    pub fn deregister(&self, id: u32) {
        self.map().remove(&id);
    }

    /// Connections open now (MySQL's `Threads`).
    pub fn count(&self) -> usize {
        self.map().len()
    }

    /// Interrupts connection `id`'s statement, and closes the connection unless `query_only`;
    /// false if there is no such connection.
    pub fn kill(&self, id: u32, query_only: bool) -> bool {
        let Some(target) = self.map().get(&id).cloned() else {
            return false;
        };
        target.interrupt.notify_waiters();
        if !query_only {
            // Its reads and writes fail at once, and its task ends; already closed is fine.
            let _ = socket2::SockRef::from(target.socket.as_ref()).shutdown(Shutdown::Both);
        }
        true
    }

    fn map(&self) -> MutexGuard<'_, HashMap<u32, Arc<Killable>>> {
        // A map of handles cannot be left half-changed by a panic.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// `KILL [QUERY | CONNECTION] id` → (id, query only).
pub fn kill_statement(query: &str) -> Option<(u32, bool)> {
    let lower = query.trim().trim_end_matches(';').to_ascii_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let (query_only, id) = match words.as_slice() {
        ["kill", id] | ["kill", "connection", id] => (false, id),
        ["kill", "query", id] => (true, id),
        _ => return None,
    };
    Some((id.parse().ok()?, query_only))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_statements() {
        assert_eq!(kill_statement("KILL QUERY 12"), Some((12, true)));
        assert_eq!(kill_statement("kill 7;"), Some((7, false)));
        assert_eq!(kill_statement("kill connection 7"), Some((7, false)));
        assert_eq!(kill_statement("kill query x"), None);
        assert_eq!(kill_statement("select 1"), None);
    }
}
