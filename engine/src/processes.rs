//! What SHOW PROCESSLIST and `information_schema.PROCESSLIST` list: the connections of the
//! server, from the front end that holds them (the MySQL server registers its connections,
//! [`ProcessList`]), those of the session's own user unless it holds ALL on every database
//! (MySQL's PROCESS privilege); a session no server serves (`sieve sql`, an embedded one) lists
//! itself in SHOW PROCESSLIST and nothing in the table.

use std::fmt::Debug;
use std::sync::{Arc, OnceLock};

use crate::access::principal::CurrentPrincipal;

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

/// Where a session finds the server's connections: set once, by the server, and shared with
/// the session's `information_schema`.
pub(crate) type ServerProcesses = Arc<OnceLock<Arc<dyn ProcessList>>>;

/// The server's connections a session may see ([`CurrentPrincipal::sees`]).
#[derive(Debug)]
pub(crate) struct Visible {
    pub all: Arc<dyn ProcessList>,
    pub viewer: CurrentPrincipal,
}

impl ProcessList for Visible {
    fn processes(&self) -> Vec<Process> {
        let mut processes = self.all.processes();
        processes.retain(|p| self.viewer.sees_statements_of(&p.user));
        processes
    }
}
