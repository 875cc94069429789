//! How many object-store requests a statement sent, and how many of them had to wait for
//! another: the depth of the longest chain of requests each sent after the previous one was
//! answered. A far object store (S3 across regions: ~20 ms a round trip) multiplies that depth,
//! not the count, so it is what a cold lookup's latency is made of.
//!
//! A trace is entered for the duration of a future or a poll ([`RequestTrace::scope`],
//! [`RequestTrace::enter`]); every request [`TracedStore`] sends meanwhile is recorded in it. A
//! tokio task-local carries it, so requests sent from a task the statement spawned are not
//! counted unless that task enters the trace too (Sieve's scan does, per poll).

use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::metrics::{answered, failed, sent, transferred};
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

tokio::task_local! {
    static TRACE: Arc<RequestTrace>;
}

#[derive(Debug, Default)]
pub struct RequestTrace {
    state: Mutex<Chains>,
}

/// Kept as requests come and go, so recording one costs O(1) whatever the count.
#[derive(Debug, Default)]
struct Chains {
    requests: u64,
    /// The longest chain ending in a request answered so far: a request sent now extends it.
    answered: u64,
    /// The longest chain of any request sent so far.
    longest: u64,
}

/// One request in flight: its chain's length; answered when dropped (also on error, or when
/// the caller gives up on it).
struct InFlight {
    trace: Arc<RequestTrace>,
    depth: u64,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut chains = self.trace.state.lock().unwrap();
        chains.answered = chains.answered.max(self.depth);
    }
}

impl RequestTrace {
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// Runs `future` with this trace entered. Boxed: a statement's future is large, and a
    /// scope holding it inline overflowed a test task's stack.
    pub fn scope<F: Future>(self: &Arc<Self>, future: F) -> impl Future<Output = F::Output> {
        TRACE.scope(self.clone(), Box::pin(future))
    }

    /// `future`, to be spawned, with the trace entered now (if any) entered while it runs: a
    /// check shared by concurrent queries counts in the trace of the query that sent it.
    pub fn carried<F: Future>(future: F) -> impl Future<Output = F::Output> {
        let trace = TRACE.try_with(Arc::clone).ok();
        async move {
            match trace {
                Some(trace) => TRACE.scope(trace, future).await,
                None => future.await,
            }
        }
    }

    /// Runs `f` (a poll) with this trace entered.
    pub fn enter<R>(self: &Arc<Self>, f: impl FnOnce() -> R) -> R {
        TRACE.sync_scope(self.clone(), f)
    }

    /// Requests sent.
    pub fn requests(&self) -> u64 {
        self.state.lock().unwrap().requests
    }

    /// The longest chain of requests each sent after the one before it was answered.
    pub fn sequential_requests(&self) -> u64 {
        self.state.lock().unwrap().longest
    }

    /// Records a request sent now in the entered trace, if any, and yields once. A remote
    /// store's request is never answered within the poll that sends it; a local directory's
    /// can be (its blocking read may finish before the first poll of its handle), which made
    /// requests sent side by side (`join!`) count as one after the other now and then. Yielding
    /// first lets every request of one poll be sent before any is answered, as over a network.
    async fn sent() -> Option<InFlight> {
        let request = Self::record();
        if request.is_some() {
            tokio::task::yield_now().await;
        }
        request
    }

    fn record() -> Option<InFlight> {
        TRACE
            .try_with(|trace| {
                let mut chains = trace.state.lock().unwrap();
                chains.requests += 1;
                let depth = chains.answered + 1;
                chains.longest = chains.longest.max(depth);
                InFlight {
                    trace: trace.clone(),
                    depth,
                }
            })
            .ok()
    }
}

/// An object store that records the requests it passes on in the entered [`RequestTrace`].
#[derive(Debug)]
pub struct TracedStore {
    inner: Arc<dyn ObjectStore>,
}

impl TracedStore {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self { inner }
    }
}

impl TracedStore {
    /// A listing, sent when first polled and answered when it ends (a long one is several
    /// pages, counted as one request).
    fn traced_listing(
        &self,
        list: impl FnOnce(&dyn ObjectStore) -> BoxStream<'static, Result<ObjectMeta>> + Send + 'static,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let inner = self.inner.clone();
        stream::once(async move {
            let request = RequestTrace::sent().await;
            // Streamed as listed (VACUUM lists every block); the request is answered when the
            // listing is dropped, at its end.
            sent("list", 1);
            list(inner.as_ref()).map(move |meta| {
                let _answered_when_dropped = &request;
                meta.inspect_err(|_| failed("list"))
            })
        })
        .flatten()
        .boxed()
    }
}

impl fmt::Display for TracedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

#[async_trait]
impl ObjectStore for TracedStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let _request = RequestTrace::sent().await;
        let bytes = payload.content_length() as u64;
        let put = answered("put", 1, self.inner.put_opts(location, payload, opts).await)?;
        transferred("put", bytes);
        Ok(put)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let upload = self.inner.put_multipart_opts(location, opts).await;
        answered("multipart", 1, upload)
    }

    /// Answered when the response's head has arrived: its body (a ranged read of a few pages,
    /// or a metadata file) follows on the same connection.
    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let _request = RequestTrace::sent().await;
        let operation = if options.head { "head" } else { "get" };
        let got = answered(operation, 1, self.inner.get_opts(location, options).await)?;
        if operation == "get" {
            transferred(operation, got.range.end - got.range.start);
        }
        Ok(got)
    }

    /// A request per range, sent at once: one round trip. (object_store may coalesce ranges
    /// near each other into fewer.)
    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let requests: Vec<Option<InFlight>> =
            ranges.iter().map(|_| RequestTrace::record()).collect();
        if requests.iter().any(Option::is_some) {
            tokio::task::yield_now().await;
        }
        let got = self.inner.get_ranges(location, ranges).await;
        let got = answered("get", ranges.len() as u64, got)?;
        transferred("get", got.iter().map(|b| b.len() as u64).sum());
        Ok(got)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner
            .delete_stream(locations)
            .map(|deleted| answered("delete", 1, deleted))
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let prefix = prefix.cloned();
        self.traced_listing(move |inner| inner.list(prefix.as_ref()))
    }

    /// Forwarded, not left to the trait's default (a whole listing filtered here): S3 lists
    /// from the offset on (`start-after`), and a local directory stats only the names after it.
    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let (prefix, offset) = (prefix.cloned(), offset.clone());
        self.traced_listing(move |inner| inner.list_with_offset(prefix.as_ref(), &offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let _request = RequestTrace::sent().await;
        answered("list", 1, self.inner.list_with_delimiter(prefix).await)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        let _request = RequestTrace::sent().await;
        answered("copy", 1, self.inner.copy_opts(from, to, options).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;
    use object_store::local::LocalFileSystem;

    #[tokio::test]
    async fn counts_requests_and_the_chains_among_them() {
        // A store whose requests yield before they are answered, as a remote one's do.
        let dir = tempfile::tempdir().unwrap();
        let local = LocalFileSystem::new_with_prefix(dir.path()).unwrap();
        let store = TracedStore::new(Arc::new(local));
        let (a, b) = (Path::from("a"), Path::from("b"));
        store
            .put(&a, Bytes::from_static(b"1").into())
            .await
            .unwrap();
        store
            .put(&b, Bytes::from_static(b"2").into())
            .await
            .unwrap();
        // Not entered: not counted.
        let trace = RequestTrace::new();
        trace
            .scope(async {
                // Two at once, then one after them, then one more.
                let (x, y) = futures::join!(store.get(&a), store.head(&b));
                x.unwrap();
                y.unwrap();
                store.get(&b).await.unwrap();
                let listed: Vec<_> = store.list(None).collect().await;
                assert_eq!(listed.len(), 2);
            })
            .await;
        assert_eq!(trace.requests(), 4);
        assert_eq!(trace.sequential_requests(), 3);
    }
}
