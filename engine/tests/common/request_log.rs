//! An object store that records every request it passes on, so tests can assert what a statement
//! fetched (counts, not timings), and how many of them had to wait for another: the depth of the
//! chain of requests each sent after the one before it had answered, which is what a far object
//! store multiplies by its round trip.

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

#[derive(Debug, Clone)]
pub struct RequestLog {
    inner: Arc<dyn ObjectStore>,
    requests: Arc<Mutex<Vec<Request>>>,
}

#[derive(Debug)]
struct Request {
    what: String,
    sent: Instant,
    /// When its answer had been read in full; None while it is in flight.
    answered: Option<Instant>,
}

impl RequestLog {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            requests: Arc::default(),
        })
    }

    /// Records a request as sent; returns its number, for [`Self::answered`].
    fn record(&self, what: &str, path: impl fmt::Display) -> usize {
        let mut requests = self.requests.lock().unwrap();
        requests.push(Request {
            what: format!("{what} {path}"),
            sent: Instant::now(),
            answered: None,
        });
        requests.len() - 1
    }

    fn answered(&self, request: usize) {
        if let Some(r) = self.requests.lock().unwrap().get_mut(request) {
            r.answered = Some(Instant::now());
        }
    }

    /// The requests since the last call, as "GET tables/…/x.sidecar" lines.
    pub fn take(&self) -> Vec<String> {
        self.take_timed().0
    }

    /// The requests since the last call, and the longest chain among them of requests each sent
    /// after the previous one had been answered: the sequential round trips they cost.
    pub fn take_timed(&self) -> (Vec<String>, usize) {
        let requests = std::mem::take(&mut *self.requests.lock().unwrap());
        let mut depth = vec![0usize; requests.len()];
        for (i, r) in requests.iter().enumerate() {
            // Recorded in the order sent, so every request r waited for comes before it.
            depth[i] = 1 + requests[..i]
                .iter()
                .zip(&depth)
                .filter(|(q, _)| q.answered.is_some_and(|a| a <= r.sent))
                .map(|(_, d)| *d)
                .max()
                .unwrap_or(0);
        }
        let chain = depth.iter().copied().max().unwrap_or(0);
        (requests.into_iter().map(|r| r.what).collect(), chain)
    }
}

impl fmt::Display for RequestLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestLog({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for RequestLog {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.record("PUT", location);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.record("PUT", location);
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let request = self.record(if options.head { "HEAD" } else { "GET" }, location);
        let found = self.inner.get_opts(location, options).await;
        let Ok(found) = found else {
            self.answered(request);
            return found;
        };
        // Read in full here, so the request counts as answered when its bytes have arrived.
        let (meta, range, attributes) = (
            found.meta.clone(),
            found.range.clone(),
            found.attributes.clone(),
        );
        let bytes = found.bytes().await;
        self.answered(request);
        let bytes = bytes?;
        Ok(GetResult {
            payload: GetResultPayload::Stream(stream::once(async move { Ok(bytes) }).boxed()),
            meta,
            range,
            attributes,
        })
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let requests: Vec<usize> = ranges
            .iter()
            .map(|_| self.record("GET", location))
            .collect();
        let found = self.inner.get_ranges(location, ranges).await;
        for request in requests {
            self.answered(request);
        }
        found
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.record("DELETE", "…");
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        // A list is sent when it is first polled; it counts as answered when it has ended.
        let this = self.clone();
        let prefix = prefix.cloned();
        stream::once(async move {
            let request = this.record(
                "LIST",
                prefix.as_ref().map(|p| p.to_string()).unwrap_or_default(),
            );
            let listed: Vec<Result<ObjectMeta>> = this.inner.list(prefix.as_ref()).collect().await;
            this.answered(request);
            stream::iter(listed)
        })
        .flatten()
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let request = self.record("LIST", prefix.map(|p| p.to_string()).unwrap_or_default());
        let listed = self.inner.list_with_delimiter(prefix).await;
        self.answered(request);
        listed
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.record("COPY", format!("{from} → {to}"));
        self.inner.copy_opts(from, to, options).await
    }
}
