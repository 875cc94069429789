//! A worker's answer to coordinators' point lookups ([`crate::cluster::remote_lookup`]): an
//! Arrow Flight service beside datafusion-distributed's on the worker's port (gRPC tells the
//! two apart by name), behind the same TLS and cluster secret. Each coordinator keeps one
//! `DoExchange` open ([`crate::cluster::lookup_stream`]); each message on it is a lookup
//! ([`WireLookup`], its id in the message's app metadata) and is answered by a message with the
//! same id holding its [`WireAnswer`]: the lookup's rows as Arrow IPC, or its error. Lookups
//! are answered side by side, as they come, each in a task of its own. Nothing else is served.
//!
//! The worker runs the lookup through the same short path as one process
//! ([`Session::answer_owned`]): its routing filters, locator pages, data cache and kept
//! results are those of the groups it owns, which is what partitions memory by owner.

use std::sync::Arc;

use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::{
    Action, ActionType, Criteria, Empty, FlightData, FlightDescriptor, FlightInfo,
    HandshakeRequest, HandshakeResponse, PollInfo, PutResult, SchemaResult, Ticket,
};
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::error::Result;
use futures::FutureExt;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use prost::Message;
use tokio::sync::{OnceCell, watch};
use tonic::{Request, Response, Status, Streaming};

use crate::cluster::lookup_wire::{WireAnswer, WireLookup, WireOutcome, WireRead};
use crate::session::query_stream::ScanStats;
use crate::session::short_path::OwnedRows;
use crate::session::{Engine, Session};

/// Lookups of one exchange answered at once at most; the next is read when one is answered.
const LOOKUPS_AT_ONCE: usize = 1024;

/// Serves the point lookups coordinators send a worker.
pub struct LookupService {
    sessions: Arc<SessionsBySettings>,
    /// Set when the worker stops: each exchange then reads no more lookups and ends once those
    /// read are answered, so the server's graceful shutdown, which waits for every open
    /// stream, is not held up by coordinators that keep theirs open.
    closing: Arc<watch::Sender<bool>>,
}

/// The asking session's settings that a worker's read takes from the session it runs in, as
/// a lookup carries them: routing off is a differential baseline, a full scan is allowed by
/// ALLOW FILTERING, the data cache and direct reads have their baselines too.
const SETTINGS: [(&str, fn(&WireLookup) -> bool); 4] = [
    ("routing", |w| w.routing),
    ("allow_full_scan", |w| w.allow_full_scan),
    ("data_cache", |w| w.data_cache),
    ("direct_reads", |w| w.direct_reads),
];

/// Sessions of one engine (shared caches), one for each combination of [`SETTINGS`], each
/// made when a lookup first asks for it (most workers only ever see the defaults).
struct SessionsBySettings {
    engine: Engine,
    made: [OnceCell<Session>; 1 << SETTINGS.len()],
}

impl SessionsBySettings {
    /// The session with the settings `wire` asks for.
    async fn of(&self, wire: &WireLookup) -> Result<&Session> {
        let index = (SETTINGS.iter().enumerate()).fold(0, |index, (bit, (_, on))| {
            index | usize::from(on(wire)) << bit
        });
        self.made[index]
            .get_or_try_init(|| async {
                let session = self.engine.session()?;
                for (name, on) in SETTINGS {
                    let set = format!("set sieve.{name} = {}", on(wire));
                    session.execute(&set).await?;
                }
                Ok(session)
            })
            .await
    }
}

type Answer<T> =
    std::result::Result<Response<BoxStream<'static, std::result::Result<T, Status>>>, Status>;

impl LookupService {
    /// Lookups answered by `engine`'s sessions: its storage, memory limits and attached
    /// catalogs (an attached table's lookup reads the catalog's warehouse).
    pub fn new(engine: Engine) -> Self {
        Self {
            sessions: Arc::new(SessionsBySettings {
                engine,
                made: Default::default(),
            }),
            closing: Arc::new(watch::Sender::new(false)),
        }
    }

    /// What ends this service's exchanges when called (on the worker's shutdown).
    pub fn closer(&self) -> impl FnOnce() + Send + 'static {
        let closing = self.closing.clone();
        move || {
            closing.send_replace(true);
        }
    }

    /// The gRPC service, to be added to the worker's server.
    pub fn into_server(self) -> FlightServiceServer<Self> {
        FlightServiceServer::new(self).max_encoding_message_size(usize::MAX)
    }
}

fn not_served<T>() -> std::result::Result<T, Status> {
    Err(Status::unimplemented(format!(
        "a Sieve worker serves only point lookups (an exchange of lookups) on its Flight \
         service"
    )))
}

/// The answer to one lookup (a message of an exchange), as the message that carries it back
/// under the lookup's id.
async fn answer_message(sessions: Arc<SessionsBySettings>, message: FlightData) -> FlightData {
    let answer = match WireLookup::decode_body(&message.data_body) {
        Ok(wire) => answer(&sessions, &wire).await,
        Err(e) => error(e.to_string()),
    };
    reply(message.app_metadata, answer)
}

/// The message carrying `answer` back to the lookup `id`.
fn reply(id: bytes::Bytes, answer: WireAnswer) -> FlightData {
    FlightData {
        app_metadata: id,
        data_body: answer.encode_to_vec().into(),
        ..Default::default()
    }
}

/// The answer to `wire`'s lookup.
async fn answer(sessions: &SessionsBySettings, wire: &WireLookup) -> WireAnswer {
    let rows = match sessions.of(wire).await {
        Ok(session) => rows(session, wire).await,
        Err(e) => Err(e),
    };
    match rows {
        Ok((ipc, read)) => WireAnswer {
            outcome: Some(WireOutcome::Rows(ipc.into())),
            read,
        },
        Err(e) => error(e.to_string()),
    }
}

/// The answer of a lookup that failed: why.
fn error(why: String) -> WireAnswer {
    WireAnswer {
        outcome: Some(WireOutcome::Error(why)),
        read: None,
    }
}

/// The rows of `wire`'s lookup, as an Arrow IPC stream, and what reading them cost (nothing
/// for kept rows).
async fn rows(session: &Session, wire: &WireLookup) -> Result<(Vec<u8>, Option<WireRead>)> {
    let OwnedRows { rows, scan } = session.answer_owned(wire).await?;
    let mut ipc = StreamWriter::try_new(Vec::new(), &rows.schema())?;
    let batches: Vec<_> = rows.try_collect().await?;
    for batch in &batches {
        ipc.write(batch)?;
    }
    let read = scan.map(|scan| WireRead::from(&ScanStats::of(&scan)));
    Ok((ipc.into_inner()?, read))
}

#[tonic::async_trait]
impl FlightService for LookupService {
    type HandshakeStream = BoxStream<'static, std::result::Result<HandshakeResponse, Status>>;
    type ListFlightsStream = BoxStream<'static, std::result::Result<FlightInfo, Status>>;
    type DoGetStream = BoxStream<'static, std::result::Result<FlightData, Status>>;
    type DoPutStream = BoxStream<'static, std::result::Result<PutResult, Status>>;
    type DoActionStream = BoxStream<'static, std::result::Result<arrow_flight::Result, Status>>;
    type ListActionsStream = BoxStream<'static, std::result::Result<ActionType, Status>>;
    type DoExchangeStream = BoxStream<'static, std::result::Result<FlightData, Status>>;

    async fn do_get(&self, _: Request<Ticket>) -> Answer<FlightData> {
        not_served()
    }

    async fn handshake(
        &self,
        _: Request<Streaming<HandshakeRequest>>,
    ) -> Answer<HandshakeResponse> {
        not_served()
    }

    async fn list_flights(&self, _: Request<Criteria>) -> Answer<FlightInfo> {
        not_served()
    }

    async fn get_flight_info(
        &self,
        _: Request<FlightDescriptor>,
    ) -> std::result::Result<Response<FlightInfo>, Status> {
        not_served()
    }

    async fn poll_flight_info(
        &self,
        _: Request<FlightDescriptor>,
    ) -> std::result::Result<Response<PollInfo>, Status> {
        not_served()
    }

    async fn get_schema(
        &self,
        _: Request<FlightDescriptor>,
    ) -> std::result::Result<Response<SchemaResult>, Status> {
        not_served()
    }

    async fn do_put(&self, _: Request<Streaming<FlightData>>) -> Answer<PutResult> {
        not_served()
    }

    async fn do_exchange(&self, request: Request<Streaming<FlightData>>) -> Answer<FlightData> {
        let sessions = self.sessions.clone();
        let mut closing = self.closing.subscribe();
        let stopping = async move {
            let _ = closing.wait_for(|closing| *closing).await;
        };
        // Read by the task that sends the answers (hyper's, polling the response): no task
        // between the two. Each lookup is answered in a task of its own, so a slow one holds
        // up no other; the exchange ends once the coordinator ends its side (or the worker
        // stops) and every lookup read is answered.
        let answers = (request.into_inner())
            .take_until(stopping)
            .take_while(|message| std::future::ready(message.is_ok()))
            .filter_map(|message| std::future::ready(message.ok()))
            .map(move |message| {
                let id = message.app_metadata.clone();
                tokio::spawn(answer_message(sessions.clone(), message)).map(|answered| {
                    Ok(answered
                        .unwrap_or_else(|e| reply(id, error(format!("answering failed: {e}")))))
                })
            })
            .buffer_unordered(LOOKUPS_AT_ONCE);
        Ok(Response::new(answers.boxed()))
    }

    async fn do_action(&self, _: Request<Action>) -> Answer<arrow_flight::Result> {
        not_served()
    }

    async fn list_actions(&self, _: Request<Empty>) -> Answer<ActionType> {
        not_served()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::Duration;

    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::UInt64Type;
    use sieve_storage::Storage;

    use super::*;

    /// A worker answers a lookup at exactly the version its coordinator asked: a newer one than
    /// it has seen (a stale worker), an older one after it has read a newer, and none that does
    /// not exist yet, which it refuses instead of answering from the newest it knows.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_worker_answers_at_the_version_asked_and_refuses_one_not_committed() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap()).unwrap();
        let engine = Engine::with_storage(storage.clone()).await.unwrap();
        let writer = engine.session().unwrap();
        let mut versions = Vec::new();
        for statement in [
            "create table t as select number as c1, cast(number * 7 as varchar) as c2 from numbers(1000)",
            "insert into t values (5000, 'new')",
            "delete from t where c1 = 7",
        ] {
            writer.execute(statement).await.unwrap();
            let table = engine.open_table("t").await.unwrap();
            versions.push(table.snapshot_within(Duration::ZERO).await.unwrap().version);
        }
        let table_id = engine.open_table("t").await.unwrap().def().id.clone();
        // An engine of its own: the worker is another process, which has seen none of it.
        let worker = Engine::with_storage(storage).await.unwrap();
        let service = LookupService::new(worker);
        // `chosen`: the blocks a coordinator chose, and how many it listed.
        let ask = |version: u64, chosen: Option<(Vec<u32>, u64)>| {
            let wire = WireLookup {
                // A chosen lookup's rows are not kept: its answers here depend on the choice.
                lookup_cache: chosen.is_none(),
                chosen: chosen.is_some(),
                blocks_listed: chosen.as_ref().map_or(0, |c| c.1),
                chosen_blocks: chosen.map(|c| c.0).unwrap_or_default(),
                ..WireLookup::c1_where_c2_in(&table_id, version, &["49", "new"])
            };
            let service = &service;
            async move {
                let session = service.sessions.of(&wire).await?;
                let rows = session.answer_owned(&wire).await?.rows;
                let batches: Vec<_> = rows.try_collect().await?;
                let mut found = BTreeSet::new();
                for batch in batches {
                    let c1 = batch.column(0).as_primitive::<UInt64Type>();
                    found.extend((0..c1.len()).map(|i| c1.value(i)));
                }
                Ok::<_, datafusion::error::DataFusionError>(found)
            }
        };
        let [v1, v2, v3] = versions[..] else {
            unreachable!("three statements, three versions")
        };
        // The oldest first; then the newest, which this worker has not seen (it is stale); then
        // older ones it has moved past.
        for (version, expected) in [
            (v1, vec![7]),
            (v3, vec![5000]),
            (v2, vec![7, 5000]),
            (v1, vec![7]),
        ] {
            let found = ask(version, None).await.unwrap();
            assert_eq!(found, expected.into_iter().collect(), "version {version}");
        }
        // Version 2 lists two blocks, the CTAS's (with 7) and the INSERT's (with 5000). A
        // worker reads the blocks its coordinator chose, and no other; a choice made from
        // another list is refused.
        for (chosen, expected) in [(vec![0, 1], vec![7, 5000]), (vec![1], vec![5000])] {
            let found = ask(v2, Some((chosen.clone(), 2))).await.unwrap();
            assert_eq!(found, expected.into_iter().collect(), "chosen {chosen:?}");
        }
        for (chosen, listed) in [(vec![1], 3), (vec![2], 2)] {
            let refused = ask(v2, Some((chosen, listed)))
                .await
                .unwrap_err()
                .to_string();
            assert!(
                refused.contains(&format!("chose among {listed} blocks, this worker lists 2")),
                "{refused}"
            );
        }
        let refused = ask(v3 + 1, None).await.unwrap_err().to_string();
        assert!(
            refused.contains(&format!("version {} of default.t is not committed", v3 + 1)),
            "{refused}"
        );
    }
}
