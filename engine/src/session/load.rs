//! LOAD DATA LOCAL INFILE: the statement is checked against its table before the client is
//! asked for the file (an unknown table or column costs no transfer), then loaded by
//! [`LocalLoad::run`] from what the client sends.

use datafusion::error::{DataFusionError, Result};

use super::Session;
use crate::access::privileges::{Object, Privilege};
use crate::error::to_df;
use crate::ingest::load_data::LoadData;
use crate::ingest::local_load::LocalLoad;
use crate::ingest::text_rows::TextRows;
use crate::sink::SieveSink;

pub(super) async fn open_load(session: &Session, statement: LoadData) -> Result<LocalLoad> {
    let name = &statement.table;
    session.require(
        Privilege::Insert,
        &Object::table(&name.database, &name.table),
    )?;
    let table = session
        .catalog
        .open_table(&name.database, &name.table)
        .await
        .map_err(to_df)?;
    let schema = table.def().schema.clone();
    let rows = TextRows::new(schema, &statement.columns, statement.skip_bad_rows)?;
    let sink = SieveSink::new(
        session.catalog.clone(),
        table,
        Some(session.progress.clone()),
    );
    session.progress.reset();
    Ok(LocalLoad {
        statement,
        rows,
        sink,
        context: session.ctx.task_ctx(),
        executor: session.executor(),
        tasks: session.tasks.clone(),
    })
}

/// Why a LOAD DATA reaching the SQL path cannot run: no client is there to send the file.
pub(super) fn needs_a_client() -> DataFusionError {
    DataFusionError::Plan(
        "LOAD DATA LOCAL INFILE needs a client that sends the file: the mysql client \
         (with --local-infile=1), a driver that allows local infile, or `sieve sql`"
            .into(),
    )
}
