//! Calls to one worker that each carry every point lookup waiting for it. A call costs both
//! ends more than the lookup it carries (gRPC's framing and tonic's service stack on each
//! side, a wake-up of each process: about a third of a cluster's CPU per uniform lookup,
//! docs/benchmarks.md), so under load lookups for one worker share a call, as group commit
//! shares a write (`sieve_storage`'s `group_commit`).
//!
//! Up to [`CALLS_IN_FLIGHT`] calls to a worker run at once; a lookup that finds a slot free is
//! sent at once, alone or with those waiting, so a lone lookup waits for nothing and no timer
//! holds one back. Lookups that arrive while every slot is busy wait and go together in the
//! next call a slot sends. Calls run in tasks of their own: a statement cancelled while its
//! lookup waits or is in a call drops only its own answer (a waiting one is not sent), never
//! the others' call.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// Calls in flight to one worker at most. Two: while one call's answers travel back and are
/// read, the next is already being answered. A worker answers a call's lookups side by side
/// (`lookup_service`), so more calls would add no parallelism, only calls.
pub const CALLS_IN_FLIGHT: usize = 2;

/// The lookups waiting for one worker, and its calls in flight.
pub(crate) struct CallBatches<Q, A> {
    state: Mutex<State<Q, A>>,
}

struct State<Q, A> {
    waiting: Vec<(Q, oneshot::Sender<A>)>,
    in_flight: usize,
}

impl<Q: Send + 'static, A: Send + 'static> CallBatches<Q, A> {
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State {
                waiting: Vec::new(),
                in_flight: 0,
            }),
        }
    }

    /// `item`'s answer from the call that carries it: `call` is handed one or more items and
    /// answers each, in order. None if that call ended without answering (it panicked).
    pub async fn ask<C, F>(self: &Arc<Self>, item: Q, call: C) -> Option<A>
    where
        C: Fn(Vec<Q>) -> F + Send + 'static,
        F: Future<Output = Vec<A>> + Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let send = {
            let mut state = lock(&self.state);
            state.waiting.push((item, answer));
            let free = state.in_flight < CALLS_IN_FLIGHT;
            state.in_flight += usize::from(free);
            free
        };
        if send {
            tokio::spawn(self.clone().send_waiting(call));
        }
        answered.await.ok()
    }

    /// Sends whatever waits, one call at a time, until nothing does; then frees its slot.
    async fn send_waiting<C, F>(self: Arc<Self>, call: C)
    where
        C: Fn(Vec<Q>) -> F,
        F: Future<Output = Vec<A>>,
    {
        let slot = Slot(&self.state);
        loop {
            let (items, answers): (Vec<Q>, Vec<oneshot::Sender<A>>) = {
                let mut state = lock(&self.state);
                let waiting = std::mem::take(&mut state.waiting);
                // A lookup whose statement was dropped while it waited is not sent.
                let live: Vec<_> = (waiting.into_iter())
                    .filter(|(_, answer)| !answer.is_closed())
                    .collect();
                if live.is_empty() {
                    state.in_flight -= 1;
                    std::mem::forget(slot);
                    return;
                }
                live.into_iter().unzip()
            };
            for (answer, to) in call(items).await.into_iter().zip(answers) {
                let _ = to.send(answer);
            }
        }
    }
}

/// A call's slot, freed if its task panics (a bug): the lookups waiting then fail instead of
/// waiting for a call that never comes, and the next lookup finds the slot free.
struct Slot<'a, Q, A>(&'a Mutex<State<Q, A>>);

impl<Q, A> Drop for Slot<'_, Q, A> {
    fn drop(&mut self) {
        let mut state = lock(self.0);
        state.in_flight -= 1;
        state.waiting.clear();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The call queues of a coordinator's workers, by worker URL.
pub(crate) struct WorkerCalls<Q, A> {
    by_worker: Mutex<HashMap<String, Arc<CallBatches<Q, A>>>>,
}

impl<Q: Send + 'static, A: Send + 'static> WorkerCalls<Q, A> {
    pub fn new() -> Self {
        Self {
            by_worker: Mutex::default(),
        }
    }

    /// The calls to the worker at `url`.
    pub fn to(&self, url: &str) -> Arc<CallBatches<Q, A>> {
        let mut by_worker = lock(&self.by_worker);
        if let Some(calls) = by_worker.get(url) {
            return calls.clone();
        }
        let calls = Arc::new(CallBatches::new());
        by_worker.insert(url.to_string(), calls.clone());
        calls
    }
}

impl<Q, A> std::fmt::Debug for WorkerCalls<Q, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let workers = lock(&self.by_worker).len();
        f.debug_struct("WorkerCalls")
            .field("workers", &workers)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;

    use futures::poll;
    use tokio::sync::Semaphore;

    use super::*;

    /// A worker whose calls each wait for a permit, recording what each carried.
    fn held_worker() -> (
        Arc<Semaphore>,
        Arc<Mutex<Vec<Vec<u32>>>>,
        impl Fn(Vec<u32>) -> futures::future::BoxFuture<'static, Vec<u32>> + Clone + Send + 'static,
    ) {
        let permits = Arc::new(Semaphore::new(0));
        let calls = Arc::new(Mutex::new(Vec::new()));
        let call = {
            let (permits, calls) = (permits.clone(), calls.clone());
            move |items: Vec<u32>| {
                let (permits, calls) = (permits.clone(), calls.clone());
                Box::pin(async move {
                    lock(&calls).push(items.clone());
                    permits.acquire().await.unwrap().forget();
                    items.iter().map(|i| i * 10).collect()
                }) as futures::future::BoxFuture<'static, Vec<u32>>
            }
        };
        (permits, calls, call)
    }

    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    /// Lookups that arrive while every slot is busy go in one call, each gets its own answer,
    /// and one whose statement was dropped while it waited is not sent.
    #[tokio::test(flavor = "current_thread")]
    async fn lookups_waiting_for_a_busy_worker_share_its_next_call() {
        let (permits, calls, call) = held_worker();
        let batches = Arc::new(CallBatches::new());
        // Two lookups, one after the other, take the two slots, each alone.
        let mut first = pin!(batches.ask(1, call.clone()));
        let mut second = pin!(batches.ask(2, call.clone()));
        assert!(poll!(&mut first).is_pending());
        settle().await;
        assert!(poll!(&mut second).is_pending());
        settle().await;
        assert_eq!(*lock(&calls), [vec![1], vec![2]]);
        // Three more wait; one of them is dropped before a slot frees.
        let mut third = pin!(batches.ask(3, call.clone()));
        let mut dropped = Box::pin(batches.ask(4, call.clone()));
        let mut fifth = pin!(batches.ask(5, call.clone()));
        assert!(poll!(&mut third).is_pending());
        assert!(poll!(&mut dropped).is_pending());
        assert!(poll!(&mut fifth).is_pending());
        drop(dropped);
        settle().await;
        assert_eq!(lock(&calls).len(), 2, "no slot was free");
        permits.add_permits(1);
        assert_eq!(first.await, Some(10));
        settle().await;
        assert_eq!(*lock(&calls), [vec![1], vec![2], vec![3, 5]]);
        permits.add_permits(2);
        assert_eq!(second.await, Some(20));
        assert_eq!(third.await, Some(30));
        assert_eq!(fifth.await, Some(50));
        settle().await;
        assert_eq!(lock(&batches.state).in_flight, 0, "idle slots are freed");
        // A lone lookup on an idle worker is sent at once.
        permits.add_permits(1);
        assert_eq!(batches.ask(6, call.clone()).await, Some(60));
        assert_eq!(lock(&calls).last(), Some(&vec![6]));
    }

    /// A call that panics fails its lookups and those waiting, and frees its slot.
    #[tokio::test(flavor = "current_thread")]
    async fn a_call_that_panics_fails_its_lookups_and_frees_its_slot() {
        let batches = Arc::new(CallBatches::<u32, u32>::new());
        let panics = |_: Vec<u32>| async { panic!("a bug in the call") };
        assert_eq!(batches.ask(1, panics).await, None);
        settle().await;
        assert_eq!(lock(&batches.state).in_flight, 0);
        assert_eq!(
            batches.ask(2, |items: Vec<u32>| async move { items }).await,
            Some(2)
        );
    }
}
