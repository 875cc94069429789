//! The proofs a client gives that it knows an account's password: `mysql_native_password`'s
//! SHA1 scramble (checked against the account's stored SHA1(SHA1(password))),
//! `caching_sha2_password`'s SHA256 scramble (checked against the digest the account caches
//! after a full login, as MySQL 8 does), or the password itself where it travelled inside TLS
//! or encrypted to the server's RSA key (checked against the account's stored hash).

use rsa::sha2::{Digest as _, Sha256};
use sieve_engine::Account;
use sieve_engine::access::password::sha1;

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

/// Whether `proof`, answering `salt`, logs in as `account`. A password that does is
/// remembered as its digest for the fast path.
pub fn verify(account: &Account, salt: &[u8], proof: &Proof) -> bool {
    match proof {
        Proof::NativeScramble(scramble) if account.credential.is_empty() => scramble.is_empty(),
        Proof::NativeScramble(scramble) => {
            // The scramble is SHA1(password) XOR SHA1(salt + SHA1(SHA1(password))): unmasked
            // with the stored SHA1(SHA1(password)), it must hash to that again.
            let Some(stage2) = account.credential.native_stage2() else {
                return false;
            };
            if scramble.len() != 20 {
                return false;
            }
            let mask = sha1(&[&salt[..salt.len().min(20)], stage2]);
            let stage1: Vec<u8> = scramble.iter().zip(mask).map(|(s, m)| s ^ m).collect();
            same(&sha1(&[&stage1]), stage2)
        }
        Proof::FastAuthenticated => true,
        Proof::Password(password) => {
            let ok = account.credential.matches(password);
            if ok && !password.is_empty() {
                account.remember_sha2_digest(sha256(&[&sha256(&[password])]));
            }
            ok
        }
    }
}

/// `caching_sha2_password`'s fast path: `scramble` is SHA256(password) XOR
/// SHA256(SHA256(SHA256(password)) + salt); it proves the password only to a server that
/// holds SHA256(SHA256(password)), which an account does after a full login.
pub fn fast_sha2(account: &Account, salt: &[u8], scramble: &[u8]) -> bool {
    let Some(digest) = account.sha2_digest() else {
        return false;
    };
    if scramble.len() != 32 {
        return false;
    }
    let mask = sha256(&[&digest, &salt[..salt.len().min(20)]]);
    let stage1: Vec<u8> = scramble.iter().zip(mask).map(|(s, m)| s ^ m).collect();
    same(&sha256(&[&stage1]), &digest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_engine::{AuthPlugin, Credential};

    const SALT: &[u8] = b"0123456789abcdefghij";

    fn account(plugin: AuthPlugin, password: &str) -> Account {
        Account::new(
            "root".into(),
            "%".into(),
            plugin,
            Credential::hash(plugin, password),
        )
    }

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
        let account = account(AuthPlugin::Native, "secret");
        assert!(verify(&account, SALT, &native("secret")));
        assert!(!verify(&account, SALT, &native("wrong")));
        assert!(!verify(&account, SALT, &Proof::NativeScramble(vec![])));
        let open = self::account(AuthPlugin::Native, "");
        assert!(verify(&open, SALT, &Proof::NativeScramble(vec![])));
        assert!(!verify(&open, SALT, &native("x")));
    }

    #[test]
    fn the_sha2_fast_path_opens_only_after_a_full_login() {
        let account = account(AuthPlugin::CachingSha2, "secret");
        assert!(!fast_sha2(&account, SALT, &sha2_scramble("secret")));
        assert!(!verify(&account, SALT, &Proof::Password(b"wrong".to_vec())));
        assert!(!fast_sha2(&account, SALT, &sha2_scramble("secret")));
        assert!(verify(&account, SALT, &Proof::Password(b"secret".to_vec())));
        assert!(fast_sha2(&account, SALT, &sha2_scramble("secret")));
        assert!(!fast_sha2(&account, SALT, &sha2_scramble("wrong")));
        assert!(!fast_sha2(
            &account,
            b"another salt 012345",
            &sha2_scramble("secret")
        ));
        assert!(!fast_sha2(&account, SALT, &sha2_scramble("secret")[..31]));
    }
}
