//! The one account a server has, checked with MySQL's `mysql_native_password` handshake: the
//! client proves it knows the password without sending it.

use sha1::{Digest, Sha1};

#[derive(Debug, Clone)]
pub struct Account {
    pub user: String,
    pub password: String,
}

fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut hasher = Sha1::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

impl Account {
    /// `scramble` is SHA1(password) XOR SHA1(salt + SHA1(SHA1(password))); empty for no password.
    pub fn verify(&self, user: &[u8], salt: &[u8], scramble: &[u8]) -> bool {
        if user != self.user.as_bytes() {
            return false;
        }
        if self.password.is_empty() {
            return scramble.is_empty();
        }
        let stage1 = sha1(&[self.password.as_bytes()]);
        let stage2 = sha1(&[&stage1]);
        let mask = sha1(&[&salt[..salt.len().min(20)], &stage2]);
        scramble.len() == 20
            && scramble
                .iter()
                .zip(stage1.iter().zip(mask))
                .all(|(s, (a, m))| *s == a ^ m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scramble(password: &str, salt: &[u8]) -> Vec<u8> {
        let stage1 = sha1(&[password.as_bytes()]);
        let mask = sha1(&[salt, &sha1(&[&stage1])]);
        stage1.iter().zip(mask).map(|(a, m)| a ^ m).collect()
    }

    #[test]
    fn native_password() {
        let account = Account {
            user: "root".into(),
            password: "secret".into(),
        };
        let salt = b"0123456789abcdefghij";
        assert!(account.verify(b"root", salt, &scramble("secret", salt)));
        assert!(!account.verify(b"root", salt, &scramble("wrong", salt)));
        assert!(!account.verify(b"other", salt, &scramble("secret", salt)));
        assert!(!account.verify(b"root", salt, b""));
        let open = Account {
            user: "root".into(),
            password: String::new(),
        };
        assert!(open.verify(b"root", salt, b""));
    }
}
