//! CancelFlightInfo, as a client sends it for a FlightInfo it got: a result not fetched yet is
//! dropped, a result being streamed ends with CANCELLED (never a clean, short end), and only the
//! login that ran the query can cancel it.

use std::net::SocketAddr;

use arrow_flight::sql::client::FlightSqlServiceClient;
use arrow_flight::sql::{ActionCancelQueryRequest, ActionCancelQueryResult, Any, ProstMessageExt};
use arrow_flight::{
    Action, CancelFlightInfoRequest, CancelFlightInfoResult, CancelStatus, FlightInfo,
};
use futures::StreamExt;
use prost::Message;
use sieve_engine::Engine;
use sieve_flight::{FlightSettings, serve};
use tonic::Code;
use tonic::transport::Channel;

const BIG: &str = "select * from numbers(100000000)";

async fn start() -> SocketAddr {
    let address = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let engine = Engine::open("memory://").await.unwrap();
    let serving = serve(engine, FlightSettings { address, tls: None }).unwrap();
    tokio::spawn(serving);
    address
}

async fn login(address: SocketAddr) -> FlightSqlServiceClient<Channel> {
    let channel = Channel::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = FlightSqlServiceClient::new(channel);
    client.handshake("root", "").await.unwrap();
    client
}

/// The status CancelFlightInfo answers, or the error it fails with.
async fn cancel(
    client: &mut FlightSqlServiceClient<Channel>,
    info: &FlightInfo,
) -> Result<CancelStatus, Code> {
    let body = CancelFlightInfoRequest::new(info.clone()).encode_to_vec();
    let action = Action::new("CancelFlightInfo", body);
    let mut results = match client.do_action(action).await {
        Ok(results) => results,
        Err(arrow_flight::error::FlightError::Tonic(status)) => return Err(status.code()),
        Err(e) => panic!("{e}"),
    };
    let body = results.next().await.expect("one result").unwrap();
    let result = CancelFlightInfoResult::decode(body.body).unwrap();
    Ok(CancelStatus::try_from(result.status).unwrap())
}

fn ticket(info: &FlightInfo) -> arrow_flight::Ticket {
    info.endpoint[0].ticket.clone().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_is_cancelled_before_and_while_it_streams() {
    let address = start().await;
    let mut client = login(address).await;

    // Not fetched yet: dropped, so the ticket fetches nothing.
    let info = client.execute(BIG.into(), None).await.unwrap();
    assert_eq!(
        cancel(&mut client, &info).await,
        Ok(CancelStatus::Cancelled)
    );
    let fetched = client.do_get(ticket(&info)).await;
    assert!(
        matches!(&fetched, Err(arrow_flight::error::FlightError::Tonic(s)) if s.code() == Code::NotFound),
        "{:?}",
        fetched.err()
    );
    assert_eq!(cancel(&mut client, &info).await, Err(Code::NotFound));

    // Streaming: it stops, and says so. A second fetch of the same ticket finds nothing, and
    // takes nothing of the first's.
    let info = client.execute(BIG.into(), None).await.unwrap();
    let mut stream = client.do_get(ticket(&info)).await.unwrap();
    let first = stream.next().await.expect("a first batch").unwrap();
    assert!(client.do_get(ticket(&info)).await.is_err());
    let mut rows = first.num_rows();
    assert_eq!(
        cancel(&mut client, &info).await,
        Ok(CancelStatus::Cancelled)
    );
    let ended = loop {
        match stream.next().await {
            Some(Ok(batch)) => rows += batch.num_rows(),
            Some(Err(e)) => break e.to_string(),
            None => panic!("the cancelled stream ended cleanly after {rows} rows"),
        }
    };
    assert!(ended.contains("the query was cancelled"), "{ended}");
    assert!(rows < 100_000_000);
    assert_eq!(cancel(&mut client, &info).await, Err(Code::NotFound));

    // Flight SQL's older CancelQuery action does the same.
    let info = client.execute(BIG.into(), None).await.unwrap();
    let request = ActionCancelQueryRequest {
        info: info.encode_to_vec().into(),
    };
    let action = Action::new("CancelQuery", request.as_any().encode_to_vec());
    let body = client
        .do_action(action)
        .await
        .unwrap()
        .next()
        .await
        .unwrap()
        .unwrap();
    let result: ActionCancelQueryResult =
        Any::decode(body.body).unwrap().unpack().unwrap().unwrap();
    assert_eq!(result.result, CancelStatus::Cancelled as i32);
    assert!(client.do_get(ticket(&info)).await.is_err());

    // Another login cannot cancel it; its own login still fetches it whole.
    let info = client
        .execute("select count(*) from numbers(1000)".into(), None)
        .await
        .unwrap();
    let mut stranger = login(address).await;
    assert_eq!(cancel(&mut stranger, &info).await, Err(Code::NotFound));
    let mut stream = client.do_get(ticket(&info)).await.unwrap();
    let batch = stream.next().await.unwrap().unwrap();
    assert_eq!(batch.num_rows(), 1);
}
