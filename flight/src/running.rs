//! Results a DoGet is streaming, by handle, so that a CancelFlightInfo can stop one. A cancelled
//! stream ends with CANCELLED, never with a clean end a client would take for the whole result;
//! the statement behind it is dropped with the stream, which cancels it.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use futures::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;
use tonic::Status;

type Streams = Arc<Mutex<HashMap<u64, (String, CancellationToken)>>>;

#[derive(Default)]
pub struct Running {
    streams: Streams,
}

/// Forgets its stream when the stream is dropped, whether it ended or not.
struct Tracked {
    streams: Streams,
    handle: u64,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.streams
            .lock()
            .expect("running lock")
            .remove(&self.handle);
    }
}

impl Running {
    /// `stream`, which [`Running::cancel`] with `token` and `handle` stops until it ends.
    pub fn track<T: Send + 'static>(
        &self,
        token: &str,
        handle: u64,
        stream: Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>,
    ) -> Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>> {
        let cancelled = CancellationToken::new();
        self.streams
            .lock()
            .expect("running lock")
            .insert(handle, (token.to_string(), cancelled.clone()));
        let tracked = Tracked {
            streams: self.streams.clone(),
            handle,
        };
        let told = cancelled.clone();
        let end = futures::stream::once(async move { told.is_cancelled() }).filter_map(
            |cancelled| async move {
                cancelled.then(|| {
                    Err(Status::cancelled(
                        "the query was cancelled (CancelFlightInfo)",
                    ))
                })
            },
        );
        stream
            .take_until(cancelled.cancelled_owned())
            .chain(end)
            .map(move |item| {
                let _ = &tracked;
                item
            })
            .boxed()
    }

    /// Stops the stream of `handle` if `token` is streaming it; whether it was.
    pub fn cancel(&self, token: &str, handle: u64) -> bool {
        let streams = self.streams.lock().expect("running lock");
        match streams.get(&handle) {
            Some((owner, cancelled)) if owner == token => {
                cancelled.cancel();
                true
            }
            _ => false,
        }
    }
}
