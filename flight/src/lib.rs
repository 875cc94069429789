//! Arrow Flight SQL for Sieve (`sieve serve --flight-port P`): what ADBC, the Flight SQL JDBC
//! driver and pyarrow speak, with results as Arrow record batches rather than MySQL's text rows
//! (Apache Doris 2.1 serves the same next to its MySQL port). The same user and password as the
//! MySQL port; each login (a Flight handshake) gets a session of its own, as a MySQL connection
//! does, with the same limits.

mod logins;
mod pending;
mod running;
mod service;

pub use service::{FlightSettings, serve};
