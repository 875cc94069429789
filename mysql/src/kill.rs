//! KILL [QUERY | CONNECTION] id: what JDBC's `Statement.cancel()` and the mysql client's Ctrl-C
//! send, on a second connection, to stop a statement running on the first (the engine's front
//! door reads it, as every statement). Every connection
//! registers here under its id; KILL QUERY interrupts the statement it is running (MySQL's error
//! 1317 to its client, which keeps its connection), KILL closes the connection too. The same
//! registry is SHOW PROCESSLIST's: each connection keeps what it is doing here.

use std::collections::HashMap;
use std::net::{IpAddr, Shutdown};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use sieve_engine::{Process, ProcessList};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// One connection, as KILL reaches it and SHOW PROCESSLIST shows it.
#[derive(Debug)]
pub struct Killable {
    /// Wakes the statement running now, if one is (a KILL between statements does nothing).
    pub interrupt: Notify,
    socket: Arc<TcpStream>,
    doing: Mutex<Doing>,
}

/// What a connection is doing, for SHOW PROCESSLIST.
#[derive(Debug)]
struct Doing {
    user: String,
    host: String,
    db: String,
    since: Instant,
    /// The statement running, if one is.
    statement: Option<String>,
}

impl Killable {
    fn doing(&self) -> MutexGuard<'_, Doing> {
        // Plain values cannot be left half-changed by a panic.
        self.doing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The account the connection logged in as.
    pub fn logged_in(&self, user: &str) {
        self.doing().user = user.to_string();
    }

    /// Marks `statement` running in `db` until the returned guard is dropped.
    pub fn running(self: &Arc<Self>, statement: &str, db: String) -> Running {
        let mut doing = self.doing();
        doing.statement = Some(statement.to_string());
        doing.db = db;
        doing.since = Instant::now();
        Running(self.clone())
    }
}

/// A statement running on a connection; the connection sleeps again when it is dropped.
pub struct Running(Arc<Killable>);

impl Drop for Running {
    fn drop(&mut self) {
        let mut doing = self.0.doing();
        doing.statement = None;
        doing.since = Instant::now();
    }
}

/// Every open connection, by id.
#[derive(Debug, Default)]
pub struct Connections(Mutex<HashMap<u32, Arc<Killable>>>);

impl Connections {
    pub fn register(&self, id: u32, socket: Arc<TcpStream>) -> Arc<Killable> {
        let host = socket
            .peer_addr()
            .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
        let killable = Arc::new(Killable {
            interrupt: Notify::new(),
            socket,
            doing: Mutex::new(Doing {
                user: "unauthenticated user".into(),
                host: host.to_string(),
                db: String::new(),
                since: Instant::now(),
                statement: None,
            }),
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

    /// The account connection `id` logged in as; None if there is no such connection.
    pub fn user_of(&self, id: u32) -> Option<String> {
        let target = self.map().get(&id).cloned()?;
        let user = target.doing().user.clone();
        Some(user)
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

impl ProcessList for Connections {
    fn processes(&self) -> Vec<Process> {
        let connections: Vec<(u32, Arc<Killable>)> =
            self.map().iter().map(|(id, k)| (*id, k.clone())).collect();
        connections
            .into_iter()
            .map(|(id, killable)| {
                let doing = killable.doing();
                let running = doing.statement.is_some();
                Process {
                    id: u64::from(id),
                    user: doing.user.clone(),
                    host: doing.host.clone(),
                    db: doing.db.clone(),
                    command: if running { "Query" } else { "Sleep" }.into(),
                    time: doing.since.elapsed().as_secs(),
                    state: if running { "executing" } else { "" }.into(),
                    info: doing.statement.clone(),
                }
            })
            .collect()
    }
}
