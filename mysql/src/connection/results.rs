//! Sending a statement's result: column definitions, rows as they come, and its errors in
//! MySQL's codes.

use super::*;

pub(super) const INTERRUPTED: &str = "Query execution was interrupted";

/// Sends a statement's result as it is produced, one batch in memory at a time; returns how it
/// ended and the rows sent or affected. An error before the first row is a plain error packet,
/// a later one ends the result set with it.
pub(super) async fn send<W: AsyncWrite + Unpin>(
    mut output: QueryStream,
    format: RowFormat,
    capabilities: u32,
    status: u16,
    w: &mut Writer<W>,
    mut killed: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>,
) -> io::Result<(Outcome, u64)> {
    if let Some(affected) = output.affected_rows() {
        w.packet(&ok_packet(affected, status));
        return Ok((Outcome::Done, affected));
    }
    let mut next = tokio::select! {
        next = output.next() => next,
        () = killed.as_mut() => Some(Err(DataFusionError::Execution(INTERRUPTED.into()))),
    };
    if let Some(Err(e)) = &next {
        let (code, message) = interrupted_or(e);
        w.packet(&error_payload(code, &message));
        return Ok((Outcome::Failed, 0));
    }
    let mut count = Vec::new();
    crate::wire::put_lenenc_int(&mut count, output.schema().fields().len() as u64);
    w.packet(&count);
    for (i, field) in output.schema().fields().iter().enumerate() {
        w.packet(&ColumnDefinition::new(field, output.origin(i)).encode());
    }
    if capabilities & capability::DEPRECATE_EOF == 0 {
        w.packet(&eof_packet(status));
    }
    let mut sent = 0;
    while let Some(batch) = next {
        match batch {
            Ok(batch) => {
                encode_rows(&batch, format, |row| w.packet(row))?;
                w.flush_if_full().await?;
                sent += batch.num_rows() as u64;
            }
            Err(e) => {
                let (code, message) = interrupted_or(&e);
                w.packet(&error_payload(code, &message));
                return Ok((Outcome::Failed, sent));
            }
        }
        next = tokio::select! {
            next = output.next() => next,
            () = killed.as_mut() => Some(Err(DataFusionError::Execution(INTERRUPTED.into()))),
        };
    }
    w.packet(&end_of_rows(capabilities, status));
    Ok((Outcome::Done, sent))
}

/// KILL QUERY's error for the interruption, the statement's own otherwise.
pub(super) fn interrupted_or(e: &DataFusionError) -> (u16, String) {
    match e {
        DataFusionError::Execution(m) if m == INTERRUPTED => {
            (error::QUERY_INTERRUPTED, INTERRUPTED.to_string())
        }
        e => mysql_error(e),
    }
}

pub(super) fn mysql_error(e: &DataFusionError) -> (u16, String) {
    let code = match classify(e) {
        ErrorClass::Syntax => error::PARSE,
        ErrorClass::UnknownTable => error::NO_SUCH_TABLE,
        ErrorClass::UnknownDatabase => error::BAD_DB,
        ErrorClass::TableExists => error::TABLE_EXISTS,
        ErrorClass::DatabaseExists => error::DB_CREATE_EXISTS,
        ErrorClass::NotSupported => error::NOT_SUPPORTED_YET,
        // MySQL answers 3024 (ER_QUERY_TIMEOUT) since 5.7; clients know 1317 as
        // "interrupted" from every version.
        ErrorClass::Timeout => error::QUERY_INTERRUPTED,
        ErrorClass::OutOfMemory => error::OUT_OF_RESOURCES,
        ErrorClass::UnknownVariable => error::UNKNOWN_SYSTEM_VARIABLE,
        ErrorClass::OutOfRange => error::DATA_OUT_OF_RANGE,
        ErrorClass::TableAccessDenied => error::TABLE_ACCESS_DENIED,
        ErrorClass::DatabaseAccessDenied => error::DB_ACCESS_DENIED,
        ErrorClass::GlobalAccessDenied => error::SPECIFIC_ACCESS_DENIED,
        ErrorClass::CannotUser => error::CANNOT_USER,
        ErrorClass::NoSuchGrant => error::NONEXISTING_GRANT,
        ErrorClass::GrantCreates => error::CANT_CREATE_USER_WITH_GRANT,
        ErrorClass::DuplicateKeyName => error::DUP_KEYNAME,
        ErrorClass::KeyColumnMissing => error::KEY_COLUMN_DOES_NOT_EXIST,
        ErrorClass::CannotDropKey => error::CANT_DROP_FIELD_OR_KEY,
        ErrorClass::Other => error::UNKNOWN,
    };
    let message = match code {
        // MySQL's own words, without DataFusion's "External error: ".
        error::TABLE_ACCESS_DENIED
        | error::DB_ACCESS_DENIED
        | error::SPECIFIC_ACCESS_DENIED
        | error::CANNOT_USER
        | error::NONEXISTING_GRANT
        | error::CANT_CREATE_USER_WITH_GRANT
        | error::BAD_DB
        | error::DUP_KEYNAME
        | error::KEY_COLUMN_DOES_NOT_EXIST
        | error::CANT_DROP_FIELD_OR_KEY => match e.find_root() {
            DataFusionError::External(inner) => inner.to_string(),
            root => root.to_string(),
        },
        _ => e.to_string(),
    };
    (code, message)
}
