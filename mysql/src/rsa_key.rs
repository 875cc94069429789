//! The RSA key pair a `caching_sha2_password` client encrypts its password to when it logs in
//! without TLS: MySQL's `private_key.pem` and `public_key.pem`, made at first need and kept
//! beside the TLS certificate, so a client that pinned the public key
//! (`--server-public-key-path`) keeps working over restarts.
//!
//! RustCrypto's `rsa` 0.10 does the arithmetic: its constant-time big integers are what fixed
//! the timing leak of 0.9's decryption (RUSTSEC-2023-0071); ring has no RSA decryption, and
//! OpenSSL would add a C library to the build. Failed logins are throttled besides, which bounds
//! how many decryptions an attacker can time.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use rsa::{PrivateKey, traits::PublicKeyParts};
use sha1::Sha1;
use tokio::sync::OnceCell;

/// MySQL's size for the keys it makes.
const BITS: usize = 2048;

pub struct RsaKey {
    dir: PathBuf,
    pair: OnceCell<Arc<KeyPair>>,
}

pub struct KeyPair {
    private: PrivateKey,
    /// SubjectPublicKeyInfo PEM ("BEGIN PUBLIC KEY"), as clients parse it.
    pub public_pem: String,
}

impl RsaKey {
    /// The key kept in `dir`, read or made when first asked for.
    pub fn in_dir(dir: PathBuf) -> Self {
        Self {
            dir,
            pair: OnceCell::new(),
        }
    }

    pub async fn pair(&self) -> Result<Arc<KeyPair>, String> {
        self.pair
            .get_or_try_init(|| {
                let dir = self.dir.clone();
                async move {
                    // Making a key takes a CPU for a moment: off the connections' threads.
                    tokio::task::spawn_blocking(move || KeyPair::kept_in(&dir).map(Arc::new))
                        .await
                        .map_err(|e| format!("making the RSA key failed: {e}"))?
                }
            })
            .await
            .cloned()
    }
}

impl KeyPair {
    fn kept_in(dir: &Path) -> Result<Self, String> {
        let private_path = dir.join("private_key.pem");
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            format!("{what} {}: {e}", private_path.display())
        };
        let private = match std::fs::read_to_string(&private_path) {
            Ok(pem) => PrivateKey::from_pkcs8_pem(&pem)
                .map_err(|e| failed("not a PKCS#8 RSA private key:", &e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = PrivateKey::new(&mut getrandom::SysRng, BITS)
                    .map_err(|e| failed("cannot make the RSA key", &e))?;
                let pem = key
                    .to_pkcs8_pem(LineEnding::LF)
                    .map_err(|e| failed("cannot encode", &e))?;
                // Written whole under another name first: a server stopped mid-write leaves no
                // half key for the next start to refuse. A folder that cannot be written costs
                // only the key's keeping (this process uses it still), not a new key per login.
                let partial = dir.join(format!("private_key.pem.{}", std::process::id()));
                let kept = std::fs::create_dir_all(dir)
                    .and_then(|()| write_private(&partial, pem.as_bytes()))
                    .and_then(|()| std::fs::rename(&partial, &private_path));
                if let Err(e) = kept {
                    log::warn!("{}", failed("cannot keep the RSA key in", &e));
                }
                key
            }
            Err(e) => return Err(failed("cannot read", &e)),
        };
        let public_pem = private
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| failed("cannot encode the public key of", &e))?;
        if let Err(e) = std::fs::write(dir.join("public_key.pem"), &public_pem) {
            log::warn!("{}", failed("cannot write the public key beside", &e));
        }
        Ok(Self {
            private,
            public_pem,
        })
    }

    /// The password a client sent encrypted: RSA-OAEP (SHA1) of the password and a NUL, XORed
    /// with the salt repeated. None if it does not decrypt.
    pub fn decrypt_password(&self, salt: &[u8], ciphertext: &[u8]) -> Option<Vec<u8>> {
        if ciphertext.len() != self.private.size() || salt.is_empty() {
            return None;
        }
        let mut plain = self.private.oaep_decrypt::<Sha1>(ciphertext).ok()?;
        for (byte, mask) in plain.iter_mut().zip(salt.iter().cycle()) {
            *byte ^= mask;
        }
        (plain.pop() == Some(0)).then_some(plain)
    }

    /// The size of what a client sends: one block of the key.
    pub fn block_len(&self) -> usize {
        self.private.size()
    }
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?
        .write_all(bytes)
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsa::pkcs8::DecodePublicKey;

    #[tokio::test]
    async fn a_password_encrypted_as_clients_do_decrypts_and_the_key_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let pair = RsaKey::in_dir(dir.path().to_path_buf())
            .pair()
            .await
            .unwrap();
        let salt = b"0123456789abcdefghij";
        let public = rsa::PublicKey::from_public_key_pem(&pair.public_pem).unwrap();
        let mut message = b"secret\0".to_vec();
        for (byte, mask) in message.iter_mut().zip(salt.iter().cycle()) {
            *byte ^= mask;
        }
        let sealed = public.oaep_encrypt::<Sha1>(&message).unwrap();
        assert_eq!(sealed.len(), pair.block_len());
        assert_eq!(pair.decrypt_password(salt, &sealed).unwrap(), b"secret");
        assert_eq!(pair.decrypt_password(b"another salt 012345", &sealed), None);
        assert_eq!(pair.decrypt_password(salt, &sealed[1..]), None);
        let again = RsaKey::in_dir(dir.path().to_path_buf())
            .pair()
            .await
            .unwrap();
        assert_eq!(again.public_pem, pair.public_pem);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("public_key.pem")).unwrap(),
            pair.public_pem
        );
    }
}
