//! What an account keeps of its password: MySQL's hash for the account's login plugin, never
//! the password.
//!
//! - `mysql_native_password`: `*` and the hex of SHA1(SHA1(password)), MySQL's own string. It is
//!   what a native scramble is checked against (the scramble proves SHA1(password) to a holder
//!   of SHA1(SHA1(password))).
//! - `caching_sha2_password`: SHA-256-crypt of 5000 rounds, the function MySQL uses for it,
//!   written in crypt's own layout (`$5$rounds=5000$<salt>$<hash>`, RustCrypto's `sha-crypt`) rather than
//!   MySQL's `$A$005$`, whose 20-byte salt that crate (following the crypt spec) cuts to 16.
//!   A full login (the password inside TLS or encrypted to the server's RSA key) is checked
//!   against it; the fast path checks scrambles against SHA256(SHA256(password)), which only a
//!   full login teaches the server (kept in memory, as MySQL does).

use sha_crypt::{Algorithm, Params, PasswordHasher as _, PasswordVerifier as _, ShaCrypt};
use sha1::{Digest as _, Sha1};
use subtle::ConstantTimeEq;

/// The login an account uses; a client that answers for another one is switched to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthPlugin {
    /// MySQL 8's default: SHA256, a fast path from a cached digest, a full login otherwise.
    CachingSha2,
    /// SHA1 challenge and response; dropped by MySQL 9, kept for clients that know no other.
    Native,
}

impl AuthPlugin {
    pub fn name(self) -> &'static str {
        match self {
            Self::CachingSha2 => "caching_sha2_password",
            Self::Native => "mysql_native_password",
        }
    }

    /// The plugin named `name` (MySQL's `default_authentication_plugin` values).
    pub fn named(name: &str) -> Option<Self> {
        [Self::CachingSha2, Self::Native]
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }
}

/// SHA-256-crypt's rounds for `caching_sha2_password`, as MySQL's `$A$005$` (5 × 1000).
const SHA2_ROUNDS: u32 = 5000;

/// The stored proof of a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// An account without a password.
    Empty,
    /// SHA1(SHA1(password)).
    Native([u8; 20]),
    /// SHA-256-crypt's string.
    Sha2Crypt(String),
}

pub fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut hasher = Sha1::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

impl Credential {
    /// The hash `plugin` keeps of `password`.
    pub fn hash(plugin: AuthPlugin, password: &str) -> Self {
        if password.is_empty() {
            return Self::Empty;
        }
        match plugin {
            AuthPlugin::Native => Self::Native(sha1(&[&sha1(&[password.as_bytes()])])),
            AuthPlugin::CachingSha2 => {
                let salt: [u8; 12] = rand::random();
                let params = Params::new(SHA2_ROUNDS).expect("5000 rounds are in range");
                let hash = ShaCrypt::new(Algorithm::Sha256Crypt, params)
                    .hash_password_with_salt(password.as_bytes(), &salt)
                    .expect("a 12-byte salt encodes");
                Self::Sha2Crypt(hash.to_string())
            }
        }
    }

    /// The credential stored as `authentication_string` for `plugin`; None if it is not one.
    pub fn stored(plugin: AuthPlugin, authentication_string: &str) -> Option<Self> {
        if authentication_string.is_empty() {
            return Some(Self::Empty);
        }
        match plugin {
            AuthPlugin::Native => {
                let hex = authentication_string.strip_prefix('*')?;
                let mut stage2 = [0u8; 20];
                for (i, byte) in stage2.iter_mut().enumerate() {
                    *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
                }
                (hex.len() == 40).then_some(Self::Native(stage2))
            }
            AuthPlugin::CachingSha2 => authentication_string
                .starts_with("$5$")
                .then(|| Self::Sha2Crypt(authentication_string.to_string())),
        }
    }

    /// What `mysql.user.authentication_string` would hold.
    pub fn authentication_string(&self) -> String {
        match self {
            Self::Empty => String::new(),
            Self::Native(stage2) => {
                let hex: String = stage2.iter().map(|b| format!("{b:02X}")).collect();
                format!("*{hex}")
            }
            Self::Sha2Crypt(hash) => hash.clone(),
        }
    }

    /// Whether `password` is the one hashed.
    pub fn matches(&self, password: &[u8]) -> bool {
        match self {
            Self::Empty => password.is_empty(),
            Self::Native(stage2) => bool::from(sha1(&[&sha1(&[password])]).ct_eq(stage2)),
            Self::Sha2Crypt(hash) => {
                !password.is_empty()
                    && ShaCrypt::default()
                        .verify_password(password, hash.as_str())
                        .is_ok()
            }
        }
    }

    /// SHA1(SHA1(password)), which native scrambles are checked against.
    pub fn native_stage2(&self) -> Option<&[u8; 20]> {
        match self {
            Self::Native(stage2) => Some(stage2),
            _ => None,
        }
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, Self::Empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_check_the_password_they_were_made_from() {
        for plugin in [AuthPlugin::Native, AuthPlugin::CachingSha2] {
            let credential = Credential::hash(plugin, "s3cret");
            assert!(credential.matches(b"s3cret"), "{plugin:?}");
            assert!(!credential.matches(b"s3creT"), "{plugin:?}");
            assert!(!credential.matches(b""), "{plugin:?}");
            let stored = credential.authentication_string();
            assert!(!stored.contains("s3cret"));
            assert_eq!(Credential::stored(plugin, &stored), Some(credential));
        }
        assert!(Credential::hash(AuthPlugin::CachingSha2, "").matches(b""));
        assert!(!Credential::Empty.matches(b"x"));
    }

    /// Strings other implementations made: `SELECT PASSWORD('password')` in MySQL 5.7, and
    /// `openssl passwd -5 -salt saltstring 'Hello world!'` (the first vector of Drepper's
    /// SHA-crypt specification).
    #[test]
    fn hashes_are_the_published_ones() {
        let native = Credential::hash(AuthPlugin::Native, "password");
        assert_eq!(
            native.authentication_string(),
            "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19"
        );
        let drepper = Credential::stored(
            AuthPlugin::CachingSha2,
            "$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5",
        )
        .expect("a crypt string");
        assert!(drepper.matches(b"Hello world!"));
        assert!(!drepper.matches(b"Hello world"));
        assert_eq!(Credential::stored(AuthPlugin::Native, "*12"), None);
        assert_eq!(Credential::stored(AuthPlugin::CachingSha2, "plain"), None);
    }
}
