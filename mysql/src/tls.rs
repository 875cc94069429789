//! TLS on the MySQL port, as MySQL does it: the greeting offers `CLIENT_SSL`, a client that wants
//! TLS answers with a 32-byte SSL request instead of its login, both sides run the TLS handshake
//! on the same socket, and the login continues inside it. rustls (with ring, already in the
//! tree for object storage) does the TLS; the certificate is the operator's (PEM files), or one
//! the server makes at first start and keeps, as MySQL 8 does: a CA and a server certificate it
//! signed (`ca.pem`, `server-cert.pem`, `server-key.pem`), so a client can verify the server
//! against `ca.pem`.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::ring;

/// A certificate chain and its key, as PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The acceptor for `files`.
pub fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, String> {
    let read = |path: &Path, what: &str| {
        std::fs::read(path)
            .map_err(|e| format!("cannot read the TLS {what} {}: {e}", path.display()))
    };
    let cert_pem = read(&files.cert, "certificate")?;
    let key_pem = read(&files.key, "key")?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: not a PEM certificate: {e}", files.cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{}: no certificate in it", files.cert.display()));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| format!("{}: not a PEM private key: {e}", files.key.display()))?;
    let config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
        .map_err(|e| format!("{} and {}: {e}", files.cert.display(), files.key.display()))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The certificate the server made in `dir` at an earlier start, or a new one: a CA
/// (`ca.pem`, its key `ca-key.pem`) and a server certificate it signed for `names` (host names
/// or IP addresses), valid for ten years.
pub fn self_signed(dir: &Path, names: &[String]) -> Result<TlsFiles, String> {
    let files = TlsFiles {
        cert: dir.join("server-cert.pem"),
        key: dir.join("server-key.pem"),
    };
    if files.cert.exists() && files.key.exists() {
        return Ok(files);
    }
    let failed = |e: rcgen::Error| format!("cannot make a TLS certificate: {e}");
    let now = time::OffsetDateTime::now_utc();
    let dated = |params: &mut CertificateParams| {
        params.not_before = now - time::Duration::days(1);
        params.not_after = now + time::Duration::days(3650);
    };
    let ca_key = KeyPair::generate().map_err(failed)?;
    let mut ca = CertificateParams::default();
    ca.distinguished_name
        .push(DnType::CommonName, "Sieve auto-generated CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    dated(&mut ca);
    let ca_cert = ca.self_signed(&ca_key).map_err(failed)?;
    let issuer = Issuer::new(ca, &ca_key);
    let key = KeyPair::generate().map_err(failed)?;
    let mut server = CertificateParams::default();
    server.distinguished_name.push(
        DnType::CommonName,
        "Sieve auto-generated server certificate",
    );
    server.subject_alt_names = names
        .iter()
        .map(|name| match name.parse() {
            Ok(ip) => Ok(SanType::IpAddress(ip)),
            Err(_) => name.clone().try_into().map(SanType::DnsName),
        })
        .collect::<Result<_, _>>()
        .map_err(failed)?;
    dated(&mut server);
    let cert = server.signed_by(&key, &issuer).map_err(failed)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // Keys first and private; the certificate last, as the mark that all are there.
    for (name, text, private) in [
        ("ca-key.pem", ca_key.serialize_pem(), true),
        ("ca.pem", ca_cert.pem(), false),
        ("server-key.pem", key.serialize_pem(), true),
        ("server-cert.pem", cert.pem(), false),
    ] {
        write_file(&dir.join(name), text.as_bytes(), private)?;
    }
    log::info!(
        "made a TLS certificate for {} in {} (clients can verify it against ca.pem)",
        names.join(", "),
        dir.display()
    );
    Ok(files)
}

fn write_file(path: &Path, bytes: &[u8], private: bool) -> Result<(), String> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    options
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Whether a client's first packet asks for TLS: MySQL's SSLRequest is the fixed part of a
/// login (capabilities, maximum packet, character set, filler) and nothing more.
pub(crate) fn is_ssl_request(payload: &[u8]) -> bool {
    payload.len() == 32
        && u32::from_le_bytes([payload[0], payload[1], payload[2], payload[3]])
            & crate::handshake::capability::SSL
            != 0
}

/// A socket with bytes already read from it in front: a client sends its TLS hello right
/// after its SSL request, so one read may have taken both.
pub(crate) struct Prefixed<S> {
    prefix: BytesMut,
    inner: S,
}

impl<S> Prefixed<S> {
    pub(crate) fn new(prefix: BytesMut, inner: S) -> Self {
        Self { prefix, inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.prefix.has_remaining() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_made_certificate_loads_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let names = ["localhost".to_string(), "127.0.0.1".to_string()];
        let files = self_signed(dir.path(), &names).unwrap();
        acceptor(&files).unwrap();
        let first = std::fs::read(&files.cert).unwrap();
        // Kept: the next start uses the same one.
        let again = self_signed(dir.path(), &names).unwrap();
        assert_eq!(std::fs::read(&again.cert).unwrap(), first);
        let bad = TlsFiles {
            cert: files.key.clone(),
            key: files.key.clone(),
        };
        let error = acceptor(&bad).err().unwrap();
        assert!(error.contains("no certificate"), "{error}");
    }
}
