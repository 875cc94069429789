//! One long-lived Flight exchange per worker, carrying a coordinator's point lookups to it as
//! messages, each tagged with an id its answer carries back.
//!
//! A gRPC call per batch of lookups cost each end more writes and wake-ups than the lookup
//! (docs/benchmarks.md, "Calls as messages of one exchange"): h2 holds a new stream's data
//! until its HEADERS are sent, so a call's request went out in two or three writes (HEADERS,
//! the message, the end of the stream), and its answer in two (HEADERS and the message, then
//! the trailers, which h2 does not put behind a data frame over 256 bytes), each waking the
//! other process to read it; and each call had a stream set up, routed by tonic and run in a
//! task of its own on the worker. On an open stream a lookup is one DATA frame each way, and
//! lookups sent or answered together share a write: h2 writes every frame queued when its
//! connection task runs. So lookups are not batched into calls here (a batch waited for a
//! task of its own to send it and hand out its answers: one more wake-up per call, and more
//! CPU than the messages it saved, docs/benchmarks.md).
//!
//! The exchange is opened when the worker is first called, with the cluster secret, over the
//! worker's lookup channel. When it fails (the worker gone, restarted, or refusing) every lookup
//! waiting on it fails alike and the next one opens a new exchange.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_flight::FlightData;
use arrow_flight::flight_service_client::FlightServiceClient;
use futures::channel::mpsc;
use prost::Message;
use tokio::sync::oneshot;
use tonic::transport::Channel;

use crate::cluster::channels::lock;
use crate::cluster::lookup_wire::{WireAnswer, WireLookup};
use crate::cluster::remote_lookup::{Failure, failure};
use crate::cluster::secret::ClusterSecret;

/// The lookups to one worker: sent on its exchange, answered by id.
pub(crate) struct LookupStream {
    lookups: mpsc::UnboundedSender<FlightData>,
    waiting: Arc<Mutex<Waiting>>,
}

/// The lookups sent and not yet answered, by id; and, once the exchange has ended, why.
#[derive(Default)]
struct Waiting {
    next: u64,
    answers: HashMap<u64, oneshot::Sender<Answer>>,
    ended: Option<Failure>,
}

type Answer = std::result::Result<WireAnswer, Failure>;

impl LookupStream {
    /// Opens the exchange with the worker at the other end of `channel` (connected when first
    /// used); its answers are read by a task of its own.
    pub fn open(channel: Channel, secret: Option<&ClusterSecret>) -> Self {
        let (lookups, sent) = mpsc::unbounded();
        let mut request = tonic::Request::new(sent);
        if let Some(secret) = secret {
            *request.metadata_mut() = tonic::metadata::MetadataMap::from_headers(secret.headers());
        }
        let waiting = Arc::new(Mutex::new(Waiting::default()));
        tokio::spawn(read_answers(channel, request, waiting.clone()));
        Self { lookups, waiting }
    }

    /// Whether the exchange has ended: the next lookup needs a new one.
    pub fn ended(&self) -> bool {
        lock(&self.waiting).ended.is_some()
    }

    /// The worker's answer to `lookup`, sent as a message of the exchange.
    pub async fn call(&self, lookup: WireLookup) -> Answer {
        let (answer, answered) = oneshot::channel();
        let id = {
            let mut waiting = lock(&self.waiting);
            if let Some(ended) = &waiting.ended {
                return Err(ended.clone());
            }
            let id = waiting.next;
            waiting.next += 1;
            waiting.answers.insert(id, answer);
            id
        };
        let message = FlightData {
            app_metadata: id.to_le_bytes().to_vec().into(),
            data_body: lookup.encode_to_vec().into(),
            ..Default::default()
        };
        if self.lookups.unbounded_send(message).is_err() {
            lock(&self.waiting).answers.remove(&id);
        }
        // Ended before it was answered: `read_answers` failed it, or dropped it unsent.
        answered.await.unwrap_or_else(|_| {
            Err(lock(&self.waiting)
                .ended
                .clone()
                .unwrap_or_else(|| Failure::Lost("the exchange with the worker ended".into())))
        })
    }
}

/// Reads the exchange's answers and hands each to its lookup, until the exchange ends; then
/// fails the lookups still waiting with the reason.
async fn read_answers(
    channel: Channel,
    request: tonic::Request<mpsc::UnboundedReceiver<FlightData>>,
    waiting: Arc<Mutex<Waiting>>,
) {
    let mut client = FlightServiceClient::new(channel).max_decoding_message_size(usize::MAX);
    let ended = match client.do_exchange(request).await {
        Err(status) => failure(status),
        Ok(response) => {
            let mut answers = response.into_inner();
            loop {
                match answers.message().await {
                    Ok(Some(message)) => answer(&waiting, message),
                    Ok(None) => break Failure::Lost("the worker ended the exchange".into()),
                    Err(status) => break failure(status),
                }
            }
        }
    };
    let mut waiting = lock(&waiting);
    for (_, lookup) in waiting.answers.drain() {
        let _ = lookup.send(Err(ended.clone()));
    }
    waiting.ended = Some(ended);
}

/// Hands `message`'s answer to the lookup it names (gone if that was dropped).
fn answer(waiting: &Mutex<Waiting>, message: FlightData) {
    let Ok(id) = <[u8; 8]>::try_from(message.app_metadata.as_ref()) else {
        log::warn!("a worker's answer names no lookup; ignored");
        return;
    };
    let Some(lookup) = lock(waiting).answers.remove(&u64::from_le_bytes(id)) else {
        return;
    };
    let answer = WireAnswer::decode(message.data_body.as_ref())
        .map_err(|e| Failure::Refused(format!("a malformed answer: {e}")));
    let _ = lookup.send(answer);
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::UInt64Type;
    use datafusion::arrow::ipc::reader::StreamReader;
    use sieve_storage::Storage;
    use tonic::transport::server::TcpIncoming;
    use tonic::transport::{Endpoint, Server};

    use super::*;
    use crate::cluster::lookup_service::LookupService;
    use crate::cluster::lookup_wire::{LOOKUP_WIRE_VERSION, WireOutcome};
    use crate::session::Engine;

    /// The c1 values of an answer's rows.
    fn c1s(answer: &WireAnswer) -> Vec<u64> {
        let Some(WireOutcome::Rows(ipc)) = &answer.outcome else {
            panic!("no rows: {:?}", answer.outcome)
        };
        let rows = StreamReader::try_new(std::io::Cursor::new(ipc), None).unwrap();
        rows.flat_map(|batch| {
            let batch = batch.unwrap();
            batch
                .column(0)
                .as_primitive::<UInt64Type>()
                .values()
                .to_vec()
        })
        .collect()
    }

    fn refused_or_lost(failure: Failure) -> String {
        match failure {
            Failure::Lost(why) => format!("lost: {why}"),
            Failure::Refused(why) => format!("refused: {why}"),
        }
    }

    /// Lookups sent at once on one exchange each get their own answer; a lookup the worker
    /// cannot read is refused and the exchange stays open; a worker told to stop ends its
    /// exchanges (its shutdown does not wait for the coordinator), and the lookups then fail as
    /// a lost worker's do, to be asked again of the live ones.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lookups_on_one_exchange_get_their_own_answers_until_the_worker_stops() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap()).unwrap();
        let engine = Engine::with_storage(storage.clone()).await.unwrap();
        let create = "create table t as select number as c1, cast(number * 7 as varchar) as c2 \
                      from numbers(1000)";
        engine.session().unwrap().execute(create).await.unwrap();
        let table = engine.open_table("t").await.unwrap();
        let version = table.snapshot_within(Duration::ZERO).await.unwrap().version;
        let id = table.def().id.clone();
        // An engine of its own: the worker is another process, which has seen none of it.
        let worker = Engine::with_storage(storage).await.unwrap();
        let service = LookupService::new(worker);
        let close = service.closer();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(
            Server::builder()
                .add_service(service.into_server())
                .serve_with_incoming_shutdown(TcpIncoming::from(listener), async move {
                    let _ = stopped.await;
                    close();
                }),
        );
        let channel = Endpoint::from_shared(format!("http://{address}"))
            .unwrap()
            .connect_lazy();
        let stream = Arc::new(LookupStream::open(channel, None));
        let lookup = |n: u64| WireLookup::c1_where_c2_in(&id, version, &[&(n * 7).to_string()]);

        // Lookups sent together, each answered by its own key's row.
        let lookups = (0..40u64).map(|n| {
            let stream = stream.clone();
            async move {
                let answer = (stream.call(lookup(n)).await)
                    .unwrap_or_else(|f| panic!("lookup {n}: {}", refused_or_lost(f)));
                assert_eq!(c1s(&answer), [n], "lookup {n}");
            }
        });
        futures::future::join_all(lookups).await;

        let other = WireLookup {
            wire_version: LOOKUP_WIRE_VERSION + 1,
            ..lookup(1)
        };
        match stream.call(other).await.map_err(refused_or_lost).unwrap() {
            WireAnswer {
                outcome: Some(WireOutcome::Error(why)),
                ..
            } => assert!(why.contains("wire version"), "{why}"),
            answer => panic!("a lookup of another wire version was answered: {answer:?}"),
        }
        assert!(!stream.ended(), "a lookup refused ended the exchange");
        let answer = stream.call(lookup(3)).await;
        assert_eq!(c1s(&answer.map_err(refused_or_lost).unwrap()), [3]);

        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(30), server)
            .await
            .expect("the worker's shutdown waited for the coordinator's open exchange")
            .unwrap()
            .unwrap();
        match stream.call(lookup(5)).await {
            Err(Failure::Lost(_)) => {}
            Err(refused) => panic!("{}", refused_or_lost(refused)),
            Ok(_) => panic!("a stopped worker answered"),
        }
        assert!(stream.ended());
    }
}
