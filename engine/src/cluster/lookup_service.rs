//! A worker's answer to coordinators' point lookups ([`crate::cluster::remote_lookup`]): an
//! Arrow Flight service beside datafusion-distributed's on the worker's port (gRPC tells the
//! two apart by name), behind the same TLS and cluster secret. A `DoAction` of type
//! [`LOOKUPS_ACTION`] carries one or more lookups ([`WireLookups`]) and is answered with one
//! [`WireAnswer`] per lookup, in order, each the lookup's rows as Arrow IPC or its error; a
//! call's lookups are answered side by side, each in a task of its own. Nothing else is
//! served.
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
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use prost::Message;
use sieve_storage::Storage;
use tonic::{Request, Response, Status, Streaming};

use crate::cluster::lookup_wire::{
    LOOKUPS_ACTION, WireAnswer, WireLookup, WireLookups, WireOutcome,
};
use crate::guard::memory::MemoryLimits;
use crate::session::{Engine, Session};

/// Serves the point lookups coordinators send a worker.
pub struct LookupService {
    /// Sessions of one engine (shared caches), by the asking session's settings that a scan
    /// reads from its own: `[sieve.routing][sieve.allow_full_scan]` (routing off is a
    /// differential baseline; a full scan is allowed by ALLOW FILTERING).
    sessions: Arc<[[Session; 2]; 2]>,
}

type Answer<T> =
    std::result::Result<Response<BoxStream<'static, std::result::Result<T, Status>>>, Status>;

impl LookupService {
    /// Lookups over `storage`, within `limits`.
    pub async fn new(storage: Storage, limits: MemoryLimits) -> Result<Self> {
        let engine = Engine::with_storage(storage)
            .await?
            .with_memory_limits(limits)?;
        let session = |routing: bool, allow_full_scan: bool| {
            let engine = engine.clone();
            async move {
                let session = engine.session()?;
                session
                    .execute(&format!("set sieve.routing = {routing}"))
                    .await?;
                session
                    .execute(&format!("set sieve.allow_full_scan = {allow_full_scan}"))
                    .await?;
                Ok::<_, datafusion::error::DataFusionError>(session)
            }
        };
        Ok(Self {
            sessions: Arc::new([
                [session(false, false).await?, session(false, true).await?],
                [session(true, false).await?, session(true, true).await?],
            ]),
        })
    }

    /// The gRPC service, to be added to the worker's server.
    pub fn into_server(self) -> FlightServiceServer<Self> {
        FlightServiceServer::new(self).max_encoding_message_size(usize::MAX)
    }
}

fn not_served<T>() -> std::result::Result<T, Status> {
    Err(Status::unimplemented(format!(
        "a Sieve worker serves only point lookups (the {LOOKUPS_ACTION} action) on its Flight \
         service"
    )))
}

/// The answer to one lookup of a call.
async fn answer(sessions: Arc<[[Session; 2]; 2]>, wire: WireLookup) -> arrow_flight::Result {
    let session = &sessions[usize::from(wire.routing)][usize::from(wire.allow_full_scan)];
    encoded(match rows(session, &wire).await {
        Ok(ipc) => WireOutcome::Rows(ipc.into()),
        Err(e) => WireOutcome::Error(e.to_string()),
    })
}

/// One lookup's outcome as the call's stream carries it.
fn encoded(outcome: WireOutcome) -> arrow_flight::Result {
    let answer = WireAnswer {
        outcome: Some(outcome),
    };
    arrow_flight::Result {
        body: answer.encode_to_vec().into(),
    }
}

/// The rows of `wire`'s lookup, as an Arrow IPC stream.
async fn rows(session: &Session, wire: &WireLookup) -> Result<Vec<u8>> {
    let rows = session.answer_owned(wire).await?;
    let mut ipc = StreamWriter::try_new(Vec::new(), &rows.schema())?;
    let batches: Vec<_> = rows.try_collect().await?;
    for batch in &batches {
        ipc.write(batch)?;
    }
    Ok(ipc.into_inner()?)
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

    async fn do_exchange(&self, _: Request<Streaming<FlightData>>) -> Answer<FlightData> {
        not_served()
    }

    async fn do_action(&self, request: Request<Action>) -> Answer<arrow_flight::Result> {
        let action = request.into_inner();
        if action.r#type != LOOKUPS_ACTION {
            return not_served();
        }
        let call = WireLookups::decode_body(&action.body)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        // Every answer is made before the response starts, not as hyper polls its body: the
        // response's headers would otherwise go out alone while the lookup runs, and the
        // coordinator would wake and read twice a call (headers, then answers and trailers).
        let answers = match <[WireLookup; 1]>::try_from(call.lookups) {
            // A lone lookup is answered on the call's own task.
            Ok([wire]) => vec![answer(self.sessions.clone(), wire).await],
            Err(lookups) => {
                let answering: Vec<_> = (lookups.into_iter())
                    .map(|wire| tokio::spawn(answer(self.sessions.clone(), wire)))
                    .collect();
                let mut answers = Vec::with_capacity(answering.len());
                for answering in answering {
                    answers.push(answering.await.unwrap_or_else(|e| {
                        encoded(WireOutcome::Error(format!(
                            "answering the lookup failed: {e}"
                        )))
                    }));
                }
                answers
            }
        };
        Ok(Response::new(
            futures::stream::iter(answers.into_iter().map(Ok)).boxed(),
        ))
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
    use datafusion::common::ScalarValue;

    use super::*;
    use crate::cluster::lookup_wire::{
        LOOKUP_WIRE_VERSION, WireColumn, WireNode, WireOp, WireValue,
    };

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
        let service = LookupService::new(storage, MemoryLimits::default())
            .await
            .unwrap();
        // `chosen`: the blocks a coordinator chose, and how many it listed.
        let ask = |version: u64, chosen: Option<(Vec<u32>, u64)>| {
            let values =
                ["49", "new"].map(|k| WireValue::of(&ScalarValue::Utf8(Some(k.into()))).unwrap());
            let wire = WireLookup {
                wire_version: LOOKUP_WIRE_VERSION,
                database: "default".into(),
                table: "t".into(),
                table_id: table_id.clone(),
                version,
                condition: vec![WireNode {
                    op: WireOp::In as i32,
                    column: "c2".into(),
                    values: values.to_vec(),
                }],
                columns: vec![WireColumn {
                    column: "c1".into(),
                    name: "c1".into(),
                }],
                all_columns: false,
                limit: None,
                placement: vec!["http://127.0.0.1:1".into()],
                worker: 0,
                pruning: true,
                locator: true,
                routing: true,
                // A chosen lookup's rows are not kept: its answers here depend on the choice.
                lookup_cache: chosen.is_none(),
                allow_full_scan: false,
                chosen: chosen.is_some(),
                blocks_listed: chosen.as_ref().map_or(0, |c| c.1),
                chosen_blocks: chosen.map(|c| c.0).unwrap_or_default(),
            };
            let session = &service.sessions[1][0];
            async move {
                let rows = session.answer_owned(&wire).await?;
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
