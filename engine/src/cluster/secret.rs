//! The secret a cluster's coordinators and workers share. A worker runs whatever plan fragment it
//! is sent, reading the table storage with its own credentials, so one reachable beyond loopback
//! must refuse callers that are not its cluster's. Coordinators send the secret as a bearer token
//! on every gRPC call (datafusion-distributed's passthrough headers), workers send it on the calls
//! they make to each other (shuffles), and a worker's interceptor refuses any call without it,
//! before the call reaches datafusion-distributed. The token travels in clear: on a network that
//! is not private, put the workers behind TLS.

use std::fmt;
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use http::{HeaderMap, HeaderValue, header::AUTHORIZATION};
use subtle::ConstantTimeEq;
use tonic::{Request, Status};

/// What a worker answers a caller without the secret; the coordinator shows it as it is.
pub const REFUSED: &str = "this worker refuses calls without its cluster secret: give every \
     coordinator and worker the same --cluster-secret (or SIEVE_CLUSTER_SECRET)";

#[derive(Clone)]
pub struct ClusterSecret(Arc<HeaderValue>);

impl fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClusterSecret(…)")
    }
}

impl ClusterSecret {
    /// A secret of at least 16 visible ASCII characters (it goes in an HTTP header).
    pub fn new(text: &str) -> Result<Self> {
        if text.len() < 16 || !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(DataFusionError::Configuration(
                "the cluster secret must be at least 16 visible ASCII characters".into(),
            ));
        }
        let value = HeaderValue::try_from(format!("Bearer {text}"))
            .map_err(|e| DataFusionError::Configuration(format!("cluster secret: {e}")))?;
        Ok(Self(Arc::new(value)))
    }

    /// The headers every call to a worker carries.
    pub(crate) fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, (*self.0).clone());
        headers
    }

    /// A worker's gRPC interceptor: the call if it carries the secret, else `Unauthenticated`.
    pub fn check(&self, request: Request<()>) -> Result<Request<()>, Status> {
        let sent = request
            .metadata()
            .get(AUTHORIZATION.as_str())
            .map(|v| v.as_bytes())
            .unwrap_or_default();
        match bool::from(sent.ct_eq(self.0.as_bytes())) {
            true => Ok(request),
            false => Err(Status::unauthenticated(REFUSED)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_secret_passes() {
        let secret = ClusterSecret::new("0123456789abcdef").unwrap();
        let mut request = Request::new(());
        *request.metadata_mut() = tonic::metadata::MetadataMap::from_headers(secret.headers());
        assert!(secret.check(request).is_ok());
        let refused = secret.check(Request::new(())).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
        let other = ClusterSecret::new("0123456789abcdeX").unwrap();
        let mut request = Request::new(());
        *request.metadata_mut() = tonic::metadata::MetadataMap::from_headers(other.headers());
        assert!(secret.check(request).is_err());
        assert!(ClusterSecret::new("short").is_err());
        assert!(ClusterSecret::new("sixteen chars but spaces").is_err());
        assert!(!format!("{secret:?}").contains("0123"));
    }
}
