//! TLS between a coordinator and its workers: tonic over rustls with ring (the provider the MySQL
//! port and object storage already use). A coordinator verifies each worker's certificate
//! against a CA it is given and, for workers that require one (mutual TLS), presents its own.
//! A plain link is only for loopback: beyond it, the cluster secret and every row would travel
//! in clear, so a coordinator refuses `http://` workers elsewhere and a worker refuses to listen
//! there without a certificate (the CLI's `sieve worker` checks that).

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use datafusion::error::{DataFusionError, Result};
use tonic::transport::{Certificate, ClientTlsConfig, Identity};
use url::Url;

/// What a coordinator trusts, and presents, on its links to workers.
#[derive(Debug, Clone)]
pub struct WorkerTls {
    /// The CA (PEM) that signed the workers' certificates.
    pub ca: PathBuf,
    /// The coordinator's own certificate and key (PEM), for workers that require one.
    pub identity: Option<(PathBuf, PathBuf)>,
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        DataFusionError::Configuration(format!("cannot read {what} {}: {e}", path.display()))
    })
}

impl WorkerTls {
    /// The files read and checked now, so a coordinator with a bad path does not start.
    pub(crate) fn client_config(&self) -> Result<ClientTlsConfig> {
        let ca = read(&self.ca, "the workers' CA")?;
        if !String::from_utf8_lossy(&ca).contains("-----BEGIN CERTIFICATE-----") {
            return Err(DataFusionError::Configuration(format!(
                "{}: not a PEM certificate",
                self.ca.display()
            )));
        }
        let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca));
        if let Some((cert, key)) = &self.identity {
            let cert = read(cert, "the coordinator's certificate")?;
            let key = read(key, "the coordinator's key")?;
            config = config.identity(Identity::from_pem(cert, key));
        }
        Ok(config)
    }
}

/// Whether `url`'s host is this machine's loopback (`localhost` included).
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host_str() {
        Some("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for (url, loopback) in [
            ("http://127.0.0.1:7100", true),
            ("http://localhost:7100", true),
            ("http://[::1]:7100", true),
            ("http://10.0.0.2:7100", false),
            ("http://worker-1:7100", false),
        ] {
            assert_eq!(is_loopback(&Url::parse(url).unwrap()), loopback, "{url}");
        }
    }
}
