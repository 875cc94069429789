//! Logins: a Flight handshake with HTTP basic credentials (the MySQL port's accounts: root and
//! the users made with CREATE USER, with the same privileges) gets a bearer token, and each token a session of its own, so `USE db` and `SET` last for the
//! client's later calls as on a MySQL connection. The newest [`MAX_LOGINS`] are kept; an older
//! token is refused and its client logs in again.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use sieve_engine::{Engine, Principal, Session};
use subtle::ConstantTimeEq;
use tonic::Status;
use tonic::metadata::MetadataMap;

pub const MAX_LOGINS: usize = 1024;

pub struct Logins {
    engine: Engine,
    sessions: Mutex<VecDeque<(String, Arc<Session>)>>,
}

impl Logins {
    pub fn new(engine: Engine) -> Self {
        Self {
            engine,
            sessions: Mutex::default(),
        }
    }

    /// Checks `Basic base64(user:password)` from a client at `peer`; a new token.
    pub async fn login(&self, metadata: &MetadataMap, peer: IpAddr) -> Result<String, Status> {
        let header = authorization(metadata)?;
        let Some(encoded) = header.strip_prefix("Basic ") else {
            return Err(Status::unauthenticated(
                "log in with basic authentication (user and password)",
            ));
        };
        // Padded or not: Go's Flight client (under ADBC) sends it unpadded.
        let decoded = STANDARD_NO_PAD
            .decode(encoded.trim().trim_end_matches('='))
            .map_err(|_| Status::unauthenticated("malformed basic authentication"))?;
        let text = String::from_utf8(decoded)
            .map_err(|_| Status::unauthenticated("malformed basic authentication"))?;
        let (user, password) = text.split_once(':').unwrap_or((&text, ""));
        let access = self.engine.access();
        let found = access.account(user, peer).await;
        let (checked, password) = (found.clone(), password.as_bytes().to_vec());
        // Through the MySQL port's throttle: a failure is answered late, and an address's
        // failures one at a time, whichever port they come in on.
        let ok = access
            .throttle()
            .check(peer, move || {
                checked.is_some_and(|account| account.credential.matches(&password))
            })
            .await;
        let account = found
            .filter(|_| ok)
            .ok_or_else(|| Status::unauthenticated(format!("Access denied for user '{user}'")))?;
        let session = self
            .engine
            .session()
            .map_err(|e| Status::internal(e.to_string()))?;
        session.set_principal(Principal::logged_in(access, account, peer));
        let token = format!("{:032x}", rand::random::<u128>());
        let mut sessions = self.sessions.lock().expect("logins lock");
        if sessions.len() == MAX_LOGINS {
            sessions.pop_front();
        }
        sessions.push_back((token.clone(), Arc::new(session)));
        Ok(token)
    }

    /// The session of the call's bearer token, and the token.
    pub fn session(&self, metadata: &MetadataMap) -> Result<(String, Arc<Session>), Status> {
        let header = authorization(metadata)?;
        let Some(token) = header.strip_prefix("Bearer ") else {
            return Err(Status::unauthenticated("log in first (a Flight handshake)"));
        };
        let sessions = self.sessions.lock().expect("logins lock");
        sessions
            .iter()
            .find(|(t, _)| bool::from(t.as_bytes().ct_eq(token.trim().as_bytes())))
            .map(|(t, s)| (t.clone(), s.clone()))
            .ok_or_else(|| Status::unauthenticated("unknown or expired token: log in again"))
    }
}

fn authorization(metadata: &MetadataMap) -> Result<&str, Status> {
    metadata
        .get("authorization")
        .ok_or_else(|| Status::unauthenticated("no authorization header: log in first"))?
        .to_str()
        .map_err(|_| Status::unauthenticated("malformed authorization header"))
}
