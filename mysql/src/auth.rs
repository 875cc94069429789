//! The one account a server has, and the proofs a client gives that it knows the password:
//! `mysql_native_password`'s SHA1 scramble, `caching_sha2_password`'s SHA256 scramble (checked
//! against the digest the account caches after a full login, as MySQL 8 does), or the password
//! itself where it travelled inside TLS or encrypted to the server's RSA key.

use std::sync::Mutex;

use rsa::sha2::{Digest as _, Sha256};
use sha1::Sha1;

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
            .find(|p| p.name() == name)
    }
}

/// What a client sent to prove it knows the password.
#[derive(Debug, PartialEq, Eq)]
pub enum Proof {
    /// `mysql_native_password`'s answer to the salt; empty for no password.
    NativeScramble(Vec<u8>),
    /// A `caching_sha2_password` scramble that matched the account's cached digest.
    FastAuthenticated,
    /// The password itself (received over TLS, or decrypted with the server's RSA key).
    Password(Vec<u8>),
}

pub struct Account {
    pub user: String,
    password: String,
    pub plugin: AuthPlugin,
    /// SHA256(SHA256(password)) once a full `caching_sha2_password` login has succeeded: what
    /// lets the next logins take the fast path. MySQL keeps it in memory only, as here, so the
    /// first login after a start proves the password itself.
    sha2_digest: Mutex<Option<[u8; 32]>>,
}

fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut hasher = Sha1::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// Equal bytes, compared without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Account {
    pub fn new(user: String, password: String, plugin: AuthPlugin) -> Self {
        Self {
            user,
            password,
            plugin,
            sha2_digest: Mutex::new(None),
        }
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    /// Whether `proof` from `user`, answering `salt`, logs in. A password that does remembers
    /// its digest for the fast path.
    pub fn verify(&self, user: &[u8], salt: &[u8], proof: &Proof) -> bool {
        if user != self.user.as_bytes() {
            return false;
        }
        match proof {
            Proof::NativeScramble(scramble) if self.password.is_empty() => scramble.is_empty(),
            Proof::NativeScramble(scramble) => {
                // SHA1(password) XOR SHA1(salt + SHA1(SHA1(password)))
                let stage1 = sha1(&[self.password.as_bytes()]);
                let mask = sha1(&[&salt[..salt.len().min(20)], &sha1(&[&stage1])]);
                let expected: Vec<u8> = stage1.iter().zip(mask).map(|(a, m)| a ^ m).collect();
                same(scramble, &expected)
            }
            Proof::FastAuthenticated => true,
            Proof::Password(password) => {
                let ok = same(password, self.password.as_bytes());
                if ok && !password.is_empty() {
                    let digest = sha256(&[&sha256(&[password])]);
                    *self.sha2_digest.lock().expect("digest lock") = Some(digest);
                }
                ok
            }
        }
    }

    /// Whether a full login has cached the digest the fast path checks scrambles against.
    pub fn has_sha2_digest(&self) -> bool {
        self.sha2_digest.lock().expect("digest lock").is_some()
    }

    /// `caching_sha2_password`'s fast path: `scramble` is SHA256(password) XOR
    /// SHA256(SHA256(SHA256(password)) + salt); it proves the password only to a server that
    /// holds SHA256(SHA256(password)), which this account does after a full login.
    pub fn fast_sha2(&self, user: &[u8], salt: &[u8], scramble: &[u8]) -> bool {
        let Some(digest) = *self.sha2_digest.lock().expect("digest lock") else {
            return false;
        };
        if user != self.user.as_bytes() || scramble.len() != 32 {
            return false;
        }
        let mask = sha256(&[&digest, &salt[..salt.len().min(20)]]);
        let stage1: Vec<u8> = scramble.iter().zip(mask).map(|(s, m)| s ^ m).collect();
        same(&sha256(&[&stage1]), &digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SALT: &[u8] = b"0123456789abcdefghij";

    fn native(password: &str) -> Proof {
        let stage1 = sha1(&[password.as_bytes()]);
        let mask = sha1(&[SALT, &sha1(&[&stage1])]);
        Proof::NativeScramble(stage1.iter().zip(mask).map(|(a, m)| a ^ m).collect())
    }

    /// As clients compute it (go-sql-driver's `scrambleSHA256Password`).
    fn sha2_scramble(password: &str) -> Vec<u8> {
        let stage1 = sha256(&[password.as_bytes()]);
        let mask = sha256(&[&sha256(&[&stage1]), SALT]);
        stage1.iter().zip(mask).map(|(a, m)| a ^ m).collect()
    }

    #[test]
    fn native_password() {
        let account = Account::new("root".into(), "secret".into(), AuthPlugin::Native);
        assert!(account.verify(b"root", SALT, &native("secret")));
        assert!(!account.verify(b"root", SALT, &native("wrong")));
        assert!(!account.verify(b"other", SALT, &native("secret")));
        assert!(!account.verify(b"root", SALT, &Proof::NativeScramble(vec![])));
        let open = Account::new("root".into(), String::new(), AuthPlugin::Native);
        assert!(open.verify(b"root", SALT, &Proof::NativeScramble(vec![])));
        assert!(!open.verify(b"root", SALT, &native("x")));
    }

    #[test]
    fn the_sha2_fast_path_opens_only_after_a_full_login() {
        let account = Account::new("root".into(), "secret".into(), AuthPlugin::CachingSha2);
        assert!(!account.fast_sha2(b"root", SALT, &sha2_scramble("secret")));
        assert!(!account.verify(b"root", SALT, &Proof::Password(b"wrong".to_vec())));
        assert!(!account.fast_sha2(b"root", SALT, &sha2_scramble("secret")));
        assert!(account.verify(b"root", SALT, &Proof::Password(b"secret".to_vec())));
        assert!(account.fast_sha2(b"root", SALT, &sha2_scramble("secret")));
        assert!(!account.fast_sha2(b"root", SALT, &sha2_scramble("wrong")));
        assert!(!account.fast_sha2(b"other", SALT, &sha2_scramble("secret")));
        assert!(!account.fast_sha2(b"root", b"another salt 012345", &sha2_scramble("secret")));
        assert!(!account.fast_sha2(b"root", SALT, &sha2_scramble("secret")[..31]));
    }
}
