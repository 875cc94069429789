//! What SHOW PROCESSLIST lists: every connection of the server, from the front end that holds
//! them (the MySQL server registers its connections, [`ProcessList`]); a session no server
//! serves (`sieve sql`, an embedded one) lists itself.

use std::fmt::Debug;

/// One connection as SHOW PROCESSLIST shows it (MySQL's columns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub id: u64,
    pub user: String,
    pub host: String,
    pub db: String,
    /// `Query` while a statement runs, `Sleep` between statements.
    pub command: String,
    /// Seconds in this command.
    pub time: u64,
    pub state: String,
    /// The statement running, if one is.
    pub info: Option<String>,
}

/// The server's connections, as its front end knows them.
pub trait ProcessList: Send + Sync + Debug {
    fn processes(&self) -> Vec<Process>;
}
