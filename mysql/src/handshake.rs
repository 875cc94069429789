//! Logging in: the server's greeting (Protocol::HandshakeV10), the client's answer
//! (HandshakeResponse41), the switch to the account's login plugin for clients that answered for
//! another, and `caching_sha2_password`'s further messages.

use super::wire::{Malformed, Read, Reader};
use sieve_engine::AuthPlugin;

/// Capability flags, as `CLIENT_*` in MySQL's `mysql_com.h`.
pub mod capability {
    /// Set by MySQL servers; a server without it is taken by MariaDB clients for a MariaDB one.
    pub const LONG_PASSWORD: u32 = 1;
    pub const FOUND_ROWS: u32 = 1 << 1;
    pub const LONG_FLAG: u32 = 1 << 2;
    pub const CONNECT_WITH_DB: u32 = 1 << 3;
    pub const LOCAL_FILES: u32 = 1 << 7;
    pub const PROTOCOL_41: u32 = 1 << 9;
    pub const INTERACTIVE: u32 = 1 << 10;
    pub const SSL: u32 = 1 << 11;
    pub const TRANSACTIONS: u32 = 1 << 13;
    pub const SECURE_CONNECTION: u32 = 1 << 15;
    pub const MULTI_STATEMENTS: u32 = 1 << 16;
    pub const MULTI_RESULTS: u32 = 1 << 17;
    pub const PS_MULTI_RESULTS: u32 = 1 << 18;
    pub const PLUGIN_AUTH: u32 = 1 << 19;
    pub const CONNECT_ATTRS: u32 = 1 << 20;
    pub const PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
    pub const DEPRECATE_EOF: u32 = 1 << 24;
}

/// What this server offers; a connection uses what both sides offer. Not offered: compression,
/// session tracking and query attributes (which change COM_QUERY's layout); SSL is offered by a
/// server with a certificate ([`crate::tls`]).
pub const SERVER_CAPABILITIES: u32 = capability::LONG_PASSWORD
    | capability::FOUND_ROWS
    | capability::LONG_FLAG
    | capability::CONNECT_WITH_DB
    | capability::LOCAL_FILES
    | capability::PROTOCOL_41
    | capability::INTERACTIVE
    | capability::TRANSACTIONS
    | capability::SECURE_CONNECTION
    | capability::MULTI_STATEMENTS
    | capability::MULTI_RESULTS
    | capability::PS_MULTI_RESULTS
    | capability::PLUGIN_AUTH
    | capability::CONNECT_ATTRS
    | capability::PLUGIN_AUTH_LENENC_CLIENT_DATA
    | capability::DEPRECATE_EOF;

/// `caching_sha2_password`'s messages after the client's scramble (MySQL's
/// `sql/auth/sha2_password.cc`): AuthMoreData packets, and the client's request for the key.
pub mod caching_sha2 {
    /// The first byte of an AuthMoreData packet.
    pub const AUTH_MORE_DATA: u8 = 0x01;
    pub const FAST_AUTH_SUCCESS: [u8; 2] = [AUTH_MORE_DATA, 0x03];
    pub const PERFORM_FULL_AUTHENTICATION: [u8; 2] = [AUTH_MORE_DATA, 0x04];
    /// What a client without TLS sends to get the server's RSA public key.
    pub const REQUEST_PUBLIC_KEY: u8 = 0x02;
}

/// SERVER_STATUS_AUTOCOMMIT: every statement commits on its own.
pub const STATUS_AUTOCOMMIT: u16 = 0x0002;

pub fn greeting(
    version: &str,
    connection_id: u32,
    salt: &[u8; 20],
    charset: u8,
    capabilities: u32,
    plugin: AuthPlugin,
) -> Vec<u8> {
    let caps = capabilities.to_le_bytes();
    let mut out = vec![10];
    out.extend_from_slice(version.as_bytes());
    out.push(0);
    out.extend_from_slice(&connection_id.to_le_bytes());
    out.extend_from_slice(&salt[..8]);
    out.push(0);
    out.extend_from_slice(&caps[..2]);
    out.push(charset);
    out.extend_from_slice(&STATUS_AUTOCOMMIT.to_le_bytes());
    out.extend_from_slice(&caps[2..]);
    out.push(21); // the salt's length with its NUL
    out.extend_from_slice(&[0; 10]);
    out.extend_from_slice(&salt[8..]);
    out.push(0);
    out.extend_from_slice(plugin.name().as_bytes());
    out.push(0);
    out
}

#[derive(Debug, PartialEq, Eq)]
pub struct HandshakeResponse {
    pub capabilities: u32,
    pub user: Vec<u8>,
    pub auth: Vec<u8>,
    pub database: Option<Vec<u8>>,
    pub plugin: Option<String>,
}

pub fn parse_response(payload: &[u8]) -> Read<HandshakeResponse> {
    let mut r = Reader::new(payload);
    let capabilities = r.u32()?;
    if capabilities & capability::PROTOCOL_41 == 0 {
        return Err(Malformed);
    }
    r.take(4 + 1 + 23)?; // max packet size, character set, filler
    let user = r.null_terminated().to_vec();
    let auth = if capabilities & capability::PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
        r.lenenc_bytes()?
    } else if capabilities & capability::SECURE_CONNECTION != 0 {
        let len = r.u8()?;
        r.take(usize::from(len))?
    } else {
        r.null_terminated()
    }
    .to_vec();
    let database = (capabilities & capability::CONNECT_WITH_DB != 0 && !r.is_empty())
        .then(|| r.null_terminated().to_vec());
    let plugin = (capabilities & capability::PLUGIN_AUTH != 0 && !r.is_empty())
        .then(|| String::from_utf8_lossy(r.null_terminated()).into_owned());
    Ok(HandshakeResponse {
        capabilities,
        user,
        auth,
        database,
        plugin,
    })
}

/// Asks a client that answered for another plugin to answer for `plugin`.
pub fn auth_switch(plugin: AuthPlugin, salt: &[u8; 20]) -> Vec<u8> {
    let mut out = vec![0xfe];
    out.extend_from_slice(plugin.name().as_bytes());
    out.push(0);
    out.extend_from_slice(salt);
    out.push(0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_parse_with_every_auth_encoding() {
        let mut packet = (capability::PROTOCOL_41
            | capability::PLUGIN_AUTH_LENENC_CLIENT_DATA
            | capability::CONNECT_WITH_DB
            | capability::PLUGIN_AUTH)
            .to_le_bytes()
            .to_vec();
        packet.extend_from_slice(&[0; 28]);
        packet.extend_from_slice(b"root\0\x03abcdb\0caching_sha2_password\0");
        let parsed = parse_response(&packet).unwrap();
        assert_eq!(parsed.user, b"root");
        assert_eq!(parsed.auth, b"abc");
        assert_eq!(parsed.database.as_deref(), Some(&b"db"[..]));
        assert_eq!(parsed.plugin.as_deref(), Some("caching_sha2_password"));
        // Cut anywhere inside the fixed part: malformed, never a panic.
        for cut in 0..32 {
            assert!(parse_response(&packet[..cut]).is_err());
        }
        let old = (capability::PROTOCOL_41 | capability::SECURE_CONNECTION).to_le_bytes();
        let mut packet = old.to_vec();
        packet.extend_from_slice(&[0; 28]);
        packet.extend_from_slice(b"u\0\x02xy");
        let parsed = parse_response(&packet).unwrap();
        assert_eq!(
            (parsed.auth.as_slice(), parsed.database),
            (&b"xy"[..], None)
        );
    }

    #[test]
    fn the_greeting_offers_the_accounts_plugin_and_a_20_byte_salt() {
        let salt = *b"abcdefghijklmnopqrst";
        let g = greeting(
            "8.0.36-sieve",
            7,
            &salt,
            45,
            SERVER_CAPABILITIES,
            AuthPlugin::CachingSha2,
        );
        assert_eq!(g[0], 10);
        assert!(g.ends_with(b"mnopqrst\0caching_sha2_password\0"));
    }
}
