//! The Flight SQL service: statements run at GetFlightInfo (so the answer carries their schema)
//! and stream at DoGet; prepared statements bind parameters sent by DoPut; catalogs, schemas
//! (Sieve's databases) and tables answer ADBC's and JDBC's metadata calls.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::metadata::{SqlInfoData, SqlInfoDataBuilder};
use arrow_flight::sql::server::{FlightSqlService, PeekableFlightDataStream};
use arrow_flight::sql::{
    ActionCancelQueryRequest, ActionCancelQueryResult, ActionClosePreparedStatementRequest,
    ActionCreatePreparedStatementRequest, ActionCreatePreparedStatementResult, Any,
    CommandGetCatalogs, CommandGetDbSchemas, CommandGetSqlInfo, CommandGetTables,
    CommandPreparedStatementQuery, CommandPreparedStatementUpdate, CommandStatementQuery,
    CommandStatementUpdate, DoPutPreparedStatementResult, ProstMessageExt, SqlInfo,
    TicketStatementQuery,
};
use arrow_flight::{
    Action, ActionType, CancelFlightInfoRequest, CancelFlightInfoResult, CancelStatus,
    FlightDescriptor, FlightEndpoint, FlightInfo, HandshakeRequest, HandshakeResponse, IpcMessage,
    SchemaAsIpc, Ticket, decode::FlightRecordBatchStream,
};
use datafusion::arrow::array::{RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef};
use datafusion::arrow::ipc::writer::IpcWriteOptions;
use datafusion::common::ScalarValue;
use datafusion::error::DataFusionError;
use futures::{Stream, StreamExt, TryStreamExt};
use prost::Message;
use sieve_engine::{
    Engine, ErrorClass, MYSQL_VERSION, Prepared, QueryStream, Session, classify, quoted,
};
use tonic::metadata::MetadataValue;
use tonic::transport::ServerTlsConfig;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status, Streaming};

use crate::logins::Logins;
use crate::pending::Pending;
use crate::running::Running;

/// The Flight RPC action that cancels a FlightInfo's query (Arrow Flight's, not Flight SQL's).
const CANCEL_FLIGHT_INFO: &str = "CancelFlightInfo";

/// Where the service listens (it lets in the engine's accounts).
pub struct FlightSettings {
    pub address: SocketAddr,
    /// TLS for every connection (gRPC has no upgrade from plain), or none.
    pub tls: Option<ServerTlsConfig>,
}

/// Binds `settings.address` (an error if it cannot) and serves Flight SQL there until the
/// returned future is dropped.
pub fn serve(
    engine: Engine,
    settings: FlightSettings,
) -> Result<impl Future<Output = Result<(), String>>, String> {
    let incoming = TcpIncoming::bind(settings.address)
        .map_err(|e| format!("cannot listen on {} for Flight SQL: {e}", settings.address))?
        .with_nodelay(Some(true));
    let service = SieveFlight {
        logins: Logins::new(engine),
        results: Pending::default(),
        running: Running::default(),
        prepared: Pending::default(),
        info: sql_info(),
    };
    let mut server = tonic::transport::Server::builder();
    let server_has_tls = settings.tls.is_some();
    if let Some(tls) = settings.tls {
        server = server
            .tls_config(tls)
            .map_err(|e| format!("Flight SQL's TLS: {e}"))?;
    }
    log::info!(
        "serving Arrow Flight SQL on {} ({})",
        settings.address,
        if server_has_tls { "TLS" } else { "plain" }
    );
    Ok(async move {
        server
            .add_service(FlightServiceServer::new(service))
            .serve_with_incoming(incoming)
            .await
            .map_err(|e| format!("Flight SQL server: {e}"))
    })
}

fn sql_info() -> SqlInfoData {
    let mut builder = SqlInfoDataBuilder::new();
    builder.append(SqlInfo::FlightSqlServerName, "Sieve");
    builder.append(SqlInfo::FlightSqlServerVersion, MYSQL_VERSION);
    builder.append(SqlInfo::FlightSqlServerArrowVersion, "1.3");
    builder.append(SqlInfo::FlightSqlServerReadOnly, false);
    builder.build().expect("static SQL info")
}

/// A prepared statement and the parameters bound to it so far. The statement is shared, not
/// copied, by each execution.
#[derive(Clone)]
struct Bound {
    prepared: Arc<Prepared>,
    values: Vec<ScalarValue>,
}

struct SieveFlight {
    logins: Logins,
    results: Pending<QueryStream>,
    /// Results being streamed, which CancelFlightInfo can stop.
    running: Running,
    prepared: Pending<Bound>,
    info: SqlInfoData,
}

type DoGetStream = <SieveFlight as FlightService>::DoGetStream;

/// A statement's error as a gRPC status: the client's mistakes as such, with MySQL's wording.
fn status(e: DataFusionError) -> Status {
    let message = e.to_string();
    match classify(&e) {
        ErrorClass::UnknownTable | ErrorClass::UnknownDatabase | ErrorClass::CannotDropKey => {
            Status::not_found(message)
        }
        ErrorClass::Syntax
        | ErrorClass::TableExists
        | ErrorClass::DatabaseExists
        | ErrorClass::UnknownVariable
        | ErrorClass::OutOfRange
        | ErrorClass::DuplicateKeyName
        | ErrorClass::KeyColumnMissing => Status::invalid_argument(message),
        ErrorClass::NotSupported => Status::unimplemented(message),
        ErrorClass::Timeout => Status::deadline_exceeded(message),
        ErrorClass::OutOfMemory => Status::resource_exhausted(message),
        ErrorClass::TableAccessDenied
        | ErrorClass::DatabaseAccessDenied
        | ErrorClass::GlobalAccessDenied => Status::permission_denied(message),
        ErrorClass::CannotUser | ErrorClass::NoSuchGrant | ErrorClass::GrantCreates => {
            Status::failed_precondition(message)
        }
        ErrorClass::Other => Status::internal(message),
    }
}

fn handle_of(bytes: &[u8]) -> Result<u64, Status> {
    <[u8; 8]>::try_from(bytes)
        .map(u64::from_le_bytes)
        .map_err(|_| Status::invalid_argument("not a handle this server gave"))
}

/// The schema of what a client fetches: the rows' or, for a statement that wrote, its count.
fn result_schema(output: &QueryStream) -> SchemaRef {
    match output.affected_rows() {
        Some(_) => affected_schema(),
        None => without_views(output.schema()),
    }
}

/// `schema` with Arrow's view types as their plain forms, at any depth (a list of strings
/// from `array_agg`, a struct's fields). Scans produce string and binary views, which Arrow
/// Java 18 (the Flight SQL JDBC driver) cannot read, and every client reads the plain types;
/// results are sent as those.
fn without_views(schema: &Schema) -> SchemaRef {
    let fields: Vec<FieldRef> = schema.fields().iter().map(plain_field).collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

fn plain_field(field: &FieldRef) -> FieldRef {
    match plain(field.data_type()) {
        Some(data_type) => Arc::new(field.as_ref().clone().with_data_type(data_type)),
        None => field.clone(),
    }
}

/// `data_type` without views, if it holds any.
fn plain(data_type: &DataType) -> Option<DataType> {
    match data_type {
        DataType::Utf8View => Some(DataType::Utf8),
        DataType::BinaryView => Some(DataType::Binary),
        DataType::List(f) => plain(f.data_type()).map(|_| DataType::List(plain_field(f))),
        DataType::LargeList(f) => plain(f.data_type()).map(|_| DataType::LargeList(plain_field(f))),
        DataType::FixedSizeList(f, n) => {
            plain(f.data_type()).map(|_| DataType::FixedSizeList(plain_field(f), *n))
        }
        DataType::Map(f, sorted) => {
            plain(f.data_type()).map(|_| DataType::Map(plain_field(f), *sorted))
        }
        DataType::Struct(fields) => fields
            .iter()
            .any(|f| plain(f.data_type()).is_some())
            .then(|| DataType::Struct(fields.iter().map(plain_field).collect())),
        _ => None,
    }
}

/// `batch` as `schema` ([`without_views`] of its own) says.
fn as_sent(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, FlightError> {
    if batch.schema_ref() == schema {
        return Ok(batch);
    }
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| datafusion::arrow::compute::cast(column, field.data_type()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

fn affected_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "rows_affected",
        DataType::UInt64,
        false,
    )]))
}

/// A result's rows as Flight data, produced as the client reads them.
fn flight_data(output: QueryStream) -> DoGetStream {
    let schema = result_schema(&output);
    let batches: Pin<Box<dyn Stream<Item = Result<RecordBatch, FlightError>> + Send>> =
        match output.affected_rows() {
            Some(rows) => {
                let batch = RecordBatch::try_new(
                    schema.clone(),
                    vec![Arc::new(UInt64Array::from(vec![rows]))],
                )
                .map_err(FlightError::from);
                futures::stream::once(async move { batch }).boxed()
            }
            None => {
                let sent = schema.clone();
                futures::stream::unfold(output, |mut output| async move {
                    let next = output.next().await?;
                    Some((
                        next.map_err(|e| FlightError::ExternalError(Box::new(e))),
                        output,
                    ))
                })
                .map(move |batch| as_sent(batch?, &sent))
                .boxed()
            }
        };
    FlightDataEncoderBuilder::new()
        .with_schema(schema)
        .build(batches)
        .map_err(Status::from)
        .boxed()
}

/// One batch of metadata as Flight data.
fn one_batch<E: Into<FlightError> + Send + 'static>(
    schema: SchemaRef,
    batch: Result<RecordBatch, E>,
) -> DoGetStream {
    FlightDataEncoderBuilder::new()
        .with_schema(schema)
        .build(futures::stream::once(
            async move { batch.map_err(Into::into) },
        ))
        .map_err(Status::from)
        .boxed()
}

/// What a statement run for its count (DoPut) reports: the rows it wrote, or those it returned.
async fn affected(mut output: QueryStream) -> Result<i64, Status> {
    if let Some(rows) = output.affected_rows() {
        return Ok(rows as i64);
    }
    let mut rows = 0;
    while let Some(batch) = output.next().await {
        rows += batch.map_err(status)?.num_rows() as i64;
    }
    Ok(rows)
}

impl SieveFlight {
    /// CancelFlightInfo: a result not fetched yet is dropped, one being streamed is stopped
    /// (either way its statement is cancelled); a query this token is not running is not found.
    fn cancel(&self, token: &str, info: &FlightInfo) -> Result<CancelStatus, Status> {
        let mut cancelled = false;
        for ticket in info.endpoint.iter().filter_map(|e| e.ticket.as_ref()) {
            let Some(handle) = Any::decode(ticket.ticket.clone())
                .ok()
                .and_then(|any| any.unpack::<TicketStatementQuery>().ok().flatten())
                .and_then(|t| handle_of(&t.statement_handle).ok())
            else {
                continue;
            };
            cancelled |=
                self.results.take(token, handle).is_some() || self.running.cancel(token, handle);
        }
        match cancelled {
            true => Ok(CancelStatus::Cancelled),
            false => Err(Status::not_found(
                "no such query running: it ended, or was never this login's",
            )),
        }
    }

    /// Keeps `output` for the DoGet that fetches it; the FlightInfo that names it.
    fn pending(
        &self,
        token: &str,
        output: QueryStream,
        descriptor: FlightDescriptor,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = result_schema(&output);
        let handle = self.results.put(token, output);
        let ticket = TicketStatementQuery {
            statement_handle: handle.to_le_bytes().to_vec().into(),
        };
        let info = FlightInfo::new()
            .try_with_schema(&schema)
            .map_err(|e| Status::internal(e.to_string()))?
            .with_endpoint(
                FlightEndpoint::new().with_ticket(Ticket::new(ticket.as_any().encode_to_vec())),
            )
            .with_descriptor(descriptor);
        Ok(Response::new(info))
    }

    /// A FlightInfo whose ticket is the metadata command itself, answered at DoGet.
    fn metadata_info(
        command: impl ProstMessageExt,
        schema: &Schema,
        descriptor: FlightDescriptor,
    ) -> Result<Response<FlightInfo>, Status> {
        let ticket = Ticket::new(command.as_any().encode_to_vec());
        let info = FlightInfo::new()
            .try_with_schema(schema)
            .map_err(|e| Status::internal(e.to_string()))?
            .with_endpoint(FlightEndpoint::new().with_ticket(ticket))
            .with_descriptor(descriptor);
        Ok(Response::new(info))
    }

    /// The prepared statement `handle` of `token`'s login.
    fn prepared(&self, token: &str, handle: u64) -> Result<Bound, Status> {
        self.prepared
            .get(token, handle)
            .ok_or_else(|| Status::not_found("no such prepared statement"))
    }

    /// The rows of parameters `data` carries for `bound`, in order: one per execution.
    async fn parameter_rows(
        bound: &Bound,
        data: PeekableFlightDataStream,
    ) -> Result<Vec<Vec<ScalarValue>>, Status> {
        let data = data.map_err(FlightError::from);
        let batches: Vec<RecordBatch> = FlightRecordBatchStream::new_from_flight_data(data)
            .try_collect()
            .await
            .map_err(Status::from)?;
        let mut rows = Vec::new();
        for batch in batches.iter().filter(|b| b.num_rows() > 0) {
            if batch.num_columns() != bound.values.len() {
                return Err(Status::invalid_argument(format!(
                    "the statement takes {} parameters, {} were sent",
                    bound.values.len(),
                    batch.num_columns()
                )));
            }
            for row in 0..batch.num_rows() {
                let values = batch
                    .columns()
                    .iter()
                    .map(|c| ScalarValue::try_from_array(c, row))
                    .collect::<Result<_, _>>()
                    .map_err(status)?;
                rows.push(values);
            }
        }
        Ok(rows)
    }

    /// The first column of a statement's rows, as text.
    async fn names(session: &Session, sql: &str) -> Result<Vec<String>, Status> {
        let output = session.execute(sql).await.map_err(status)?;
        let mut names = Vec::new();
        for batch in &output.batches {
            let column = datafusion::arrow::compute::cast(batch.column(0), &DataType::Utf8)
                .map_err(|e| Status::internal(e.to_string()))?;
            let column = column
                .as_any()
                .downcast_ref::<StringArray>()
                .expect("cast to Utf8");
            names.extend(column.iter().flatten().map(str::to_string));
        }
        Ok(names)
    }
}

/// SQL's LIKE, as Flight SQL's filter patterns are.
fn like(pattern: Option<&str>, name: &str) -> bool {
    fn matches(p: &[char], n: &[char]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some(('%', rest)) => (0..=n.len()).any(|i| matches(rest, &n[i..])),
            Some(('_', rest)) => !n.is_empty() && matches(rest, &n[1..]),
            Some((c, rest)) => n.first() == Some(c) && matches(rest, &n[1..]),
        }
    }
    pattern.is_none_or(|p| {
        let (p, n): (Vec<char>, Vec<char>) = (p.chars().collect(), name.chars().collect());
        matches(&p, &n)
    })
}

#[tonic::async_trait]
impl FlightSqlService for SieveFlight {
    type FlightService = SieveFlight;

    async fn do_handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<
        Response<Pin<Box<dyn Stream<Item = Result<HandshakeResponse, Status>> + Send>>>,
        Status,
    > {
        // Unknown only for transports without addresses; then no host pattern but `%` matches.
        let peer = request
            .remote_addr()
            .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |a| a.ip());
        let token = self.logins.login(request.metadata(), peer).await?;
        let reply = HandshakeResponse {
            protocol_version: 0,
            payload: token.clone().into(),
        };
        let mut response: Response<Pin<Box<dyn Stream<Item = _> + Send>>> =
            Response::new(futures::stream::once(async { Ok(reply) }).boxed());
        let bearer = MetadataValue::try_from(format!("Bearer {token}"))
            .map_err(|e| Status::internal(e.to_string()))?;
        response.metadata_mut().insert("authorization", bearer);
        Ok(response)
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let (token, session) = self.logins.session(request.metadata())?;
        let output = session.query(&query.query).await.map_err(status)?;
        self.pending(&token, output, request.into_inner())
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let (token, _) = self.logins.session(request.metadata())?;
        let handle = handle_of(&ticket.statement_handle)?;
        // Registered first: a cancel finds the result waiting, or its stream.
        let started = self.running.start(&token, handle);
        let output = self
            .results
            .take(&token, handle)
            .ok_or_else(|| Status::not_found("no such result: fetched already, or dropped"))?;
        Ok(Response::new(started.stream(flight_data(output))))
    }

    async fn do_put_statement_update(
        &self,
        command: CommandStatementUpdate,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let (_, session) = self.logins.session(request.metadata())?;
        let output = session.query(&command.query).await.map_err(status)?;
        affected(output).await
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        let (token, session) = self.logins.session(request.metadata())?;
        let prepared = session.prepare(&query.query).await.map_err(status)?;
        let encode = |schema: &Schema| -> Result<bytes::Bytes, Status> {
            let IpcMessage(bytes) = SchemaAsIpc::new(schema, &IpcWriteOptions::default())
                .try_into()
                .map_err(|e: datafusion::arrow::error::ArrowError| {
                    Status::internal(e.to_string())
                })?;
            Ok(bytes)
        };
        let dataset = without_views(&Schema::new(prepared.result_fields.clone()));
        let parameters = without_views(&Schema::new(
            prepared
                .param_types
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    Field::new(
                        format!("${}", i + 1),
                        t.clone().unwrap_or(DataType::Utf8),
                        true,
                    )
                })
                .collect::<Vec<_>>(),
        ));
        let (dataset_schema, parameter_schema) = (encode(&dataset)?, encode(&parameters)?);
        let values = vec![ScalarValue::Null; prepared.param_types.len()];
        let prepared = Arc::new(prepared);
        let handle = self.prepared.put(&token, Bound { prepared, values });
        Ok(ActionCreatePreparedStatementResult {
            prepared_statement_handle: handle.to_le_bytes().to_vec().into(),
            dataset_schema,
            parameter_schema,
        })
    }

    async fn do_put_prepared_statement_query(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<DoPutPreparedStatementResult, Status> {
        let (token, _) = self.logins.session(request.metadata())?;
        let handle = handle_of(&query.prepared_statement_handle)?;
        let mut bound = self.prepared(&token, handle)?;
        // A query binds one row of parameters: the first sent.
        let rows = Self::parameter_rows(&bound, request.into_inner()).await?;
        if let Some(values) = rows.into_iter().next() {
            bound.values = values;
        }
        self.prepared.replace(&token, handle, bound);
        Ok(DoPutPreparedStatementResult {
            prepared_statement_handle: Some(query.prepared_statement_handle),
        })
    }

    /// A prepared statement that writes (or any other a client runs this way: the Flight SQL
    /// JDBC driver sends every `execute` and `executeUpdate` here), run once per row of
    /// parameters the client sends along: the count of rows of all the runs.
    async fn do_put_prepared_statement_update(
        &self,
        query: CommandPreparedStatementUpdate,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let (token, session) = self.logins.session(request.metadata())?;
        let handle = handle_of(&query.prepared_statement_handle)?;
        let bound = self.prepared(&token, handle)?;
        // A batch (JDBC's executeBatch) sends a row of parameters per execution.
        let mut rows = Self::parameter_rows(&bound, request.into_inner()).await?;
        if rows.is_empty() {
            rows.push(bound.values.clone());
        }
        let mut count = 0;
        for values in rows {
            let output = session
                .execute_prepared(&bound.prepared, values)
                .await
                .map_err(status)?;
            count += affected(output).await?;
        }
        Ok(count)
    }

    async fn get_flight_info_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let (token, session) = self.logins.session(request.metadata())?;
        let handle = handle_of(&query.prepared_statement_handle)?;
        let bound = self.prepared(&token, handle)?;
        let output = session
            .execute_prepared(&bound.prepared, bound.values)
            .await
            .map_err(status)?;
        self.pending(&token, output, request.into_inner())
    }

    /// Flight SQL's own cancel action, which CancelFlightInfo replaced; older clients send it.
    async fn do_action_cancel_query(
        &self,
        query: ActionCancelQueryRequest,
        request: Request<Action>,
    ) -> Result<ActionCancelQueryResult, Status> {
        let (token, _) = self.logins.session(request.metadata())?;
        let info = FlightInfo::decode(query.info)
            .map_err(|_| Status::invalid_argument("not a serialized FlightInfo"))?;
        self.cancel(&token, &info)?;
        // Its CancelResult is not exported by arrow-flight; CancelFlightInfo's CancelStatus, which
        // replaced it, numbers the same outcomes the same way (CANCELLED = 1).
        Ok(ActionCancelQueryResult {
            result: CancelStatus::Cancelled as i32,
        })
    }

    async fn list_custom_actions(&self) -> Option<Vec<Result<ActionType, Status>>> {
        Some(vec![Ok(ActionType {
            r#type: CANCEL_FLIGHT_INFO.into(),
            description: "Cancel a query: CancelFlightInfoRequest in, CancelFlightInfoResult out"
                .into(),
        })])
    }

    async fn do_action_fallback(
        &self,
        request: Request<Action>,
    ) -> Result<Response<<Self as FlightService>::DoActionStream>, Status> {
        if request.get_ref().r#type != CANCEL_FLIGHT_INFO {
            return Err(Status::invalid_argument(format!(
                "unknown action {:?}",
                request.get_ref().r#type
            )));
        }
        let (token, _) = self.logins.session(request.metadata())?;
        let info = CancelFlightInfoRequest::decode(request.get_ref().body.clone())
            .ok()
            .and_then(|r| r.info)
            .ok_or_else(|| Status::invalid_argument("not a CancelFlightInfoRequest"))?;
        let result = CancelFlightInfoResult::new(self.cancel(&token, &info)?);
        let body = arrow_flight::Result::new(result.encode_to_vec());
        Ok(Response::new(futures::stream::iter([Ok(body)]).boxed()))
    }

    async fn do_action_close_prepared_statement(
        &self,
        query: ActionClosePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<(), Status> {
        let (token, _) = self.logins.session(request.metadata())?;
        let handle = handle_of(&query.prepared_statement_handle)?;
        self.prepared.take(&token, handle);
        Ok(())
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder(&self.info).schema();
        Self::metadata_info(query, &schema, request.into_inner())
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        _request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let builder = query.into_builder(&self.info);
        Ok(Response::new(one_batch(builder.schema(), builder.build())))
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.logins.session(request.metadata())?;
        let schema = query.into_builder().schema();
        Self::metadata_info(query, &schema, request.into_inner())
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.logins.session(request.metadata())?;
        let mut builder = query.into_builder();
        builder.append("sieve");
        Ok(Response::new(one_batch(builder.schema(), builder.build())))
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.logins.session(request.metadata())?;
        let schema = query.clone().into_builder().schema();
        Self::metadata_info(query, &schema, request.into_inner())
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let (_, session) = self.logins.session(request.metadata())?;
        let databases = Self::names(&session, "show databases").await?;
        let mut builder = query.into_builder();
        for database in databases {
            builder.append("sieve", database);
        }
        Ok(Response::new(one_batch(builder.schema(), builder.build())))
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.logins.session(request.metadata())?;
        let schema = query.clone().into_builder().schema();
        Self::metadata_info(query, &schema, request.into_inner())
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let (_, session) = self.logins.session(request.metadata())?;
        let wanted_types = query.table_types.clone();
        let (database_pattern, table_pattern) = (
            query.db_schema_filter_pattern.clone(),
            query.table_name_filter_pattern.clone(),
        );
        let include_schema = query.include_schema;
        let mut builder = query.into_builder();
        let table_type = "TABLE";
        if wanted_types.is_empty() || wanted_types.iter().any(|t| t == table_type) {
            for database in Self::names(&session, "show databases").await? {
                if database.eq_ignore_ascii_case("information_schema")
                    || !like(database_pattern.as_deref(), &database)
                {
                    continue;
                }
                let tables =
                    Self::names(&session, &format!("show tables from {}", quoted(&database)))
                        .await?;
                for table in tables {
                    if !like(table_pattern.as_deref(), &table) {
                        continue;
                    }
                    let schema = if include_schema {
                        let sql = format!(
                            "select * from {}.{} limit 0",
                            quoted(&database),
                            quoted(&table)
                        );
                        session
                            .query(&sql)
                            .await
                            .map_err(status)?
                            .schema()
                            .as_ref()
                            .clone()
                    } else {
                        Schema::empty()
                    };
                    builder
                        .append("sieve", &database, &table, table_type, &schema)
                        .map_err(Status::from)?;
                }
            }
        }
        Ok(Response::new(one_batch(builder.schema(), builder.build())))
    }

    async fn do_get_fallback(
        &self,
        _request: Request<Ticket>,
        message: Any,
    ) -> Result<Response<DoGetStream>, Status> {
        Err(Status::unimplemented(format!(
            "{} is not supported",
            message.type_url
        )))
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_patterns_are_sql_like() {
        assert!(like(None, "anything"));
        assert!(like(Some("fl_%"), "fl_t") && like(Some("fl_%"), "flat"));
        assert!(like(Some("f_t"), "fat") && !like(Some("f_t"), "flat"));
        assert!(like(Some("%"), "") && !like(Some("t"), "T"));
    }

    #[test]
    fn handles_are_eight_bytes() {
        assert_eq!(handle_of(&7u64.to_le_bytes()).unwrap(), 7);
        assert!(handle_of(b"short").is_err());
    }
}
