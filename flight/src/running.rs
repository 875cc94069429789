//! Results a DoGet is streaming, by handle, so that a CancelFlightInfo can stop one. A cancelled
//! stream ends with CANCELLED, never with a clean end a client would take for the whole result;
//! the statement behind it is dropped with the stream, which cancels it.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;
use tonic::Status;

/// By a number of their own (a ticket fetched twice makes two DoGets, one of which finds
/// nothing): the result's handle, the token that fetched it, what cancels it.
type Streams = Arc<Mutex<HashMap<u64, (u64, String, CancellationToken)>>>;

#[derive(Default)]
pub struct Running {
    streams: Streams,
    started: AtomicU64,
}

/// Forgets its stream when the stream is dropped, whether it ended or not.
struct Tracked {
    streams: Streams,
    id: u64,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.streams.lock().expect("running lock").remove(&self.id);
    }
}

/// A stream registered before it exists, so that a cancel arriving while a DoGet takes its
/// result is not lost; dropped unused, it is forgotten.
pub struct Started {
    cancelled: CancellationToken,
    tracked: Tracked,
}

impl Started {
    /// `stream`, which [`Running::cancel`] stops until it ends.
    pub fn stream<T: Send + 'static>(
        self,
        stream: Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>,
    ) -> Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>> {
        let Self { cancelled, tracked } = self;
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
}

impl Running {
    /// Registers the stream `token` is about to make of `handle`'s result.
    pub fn start(&self, token: &str, handle: u64) -> Started {
        let cancelled = CancellationToken::new();
        let id = self.started.fetch_add(1, Ordering::Relaxed);
        self.streams
            .lock()
            .expect("running lock")
            .insert(id, (handle, token.to_string(), cancelled.clone()));
        Started {
            cancelled,
            tracked: Tracked {
                streams: self.streams.clone(),
                id,
            },
        }
    }

    /// Stops the stream of `handle` if `token` is streaming it; whether it was.
    pub fn cancel(&self, token: &str, handle: u64) -> bool {
        let streams = self.streams.lock().expect("running lock");
        let mut found = false;
        for (of, owner, cancelled) in streams.values() {
            if *of == handle && owner == token {
                cancelled.cancel();
                found = true;
            }
        }
        found
    }
}
