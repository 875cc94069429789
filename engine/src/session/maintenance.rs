//! VACUUM and OPTIMIZE as session statements: they resolve the table and answer with one row of
//! what they did; the work itself is in `crate::maintenance`.

use datafusion::common::plan_err;
use datafusion::error::Result;
use sieve_storage::Table;

use super::{Session, index_statements};
use crate::access::privileges::Object;
use crate::catalog::table_name::TableName;
use crate::error::to_df;
use crate::maintenance::optimize::{self, Optimize};
use crate::maintenance::vacuum::{self, Vacuum};
use crate::options::SieveOptions;
use crate::session::query_stream::QueryStream;

/// VACUUM: answers with what it removed.
pub(super) async fn vacuum(session: &Session, vacuum: Vacuum) -> Result<QueryStream> {
    let checked = session
        .ctx
        .state()
        .config_options()
        .extensions
        .get::<SieveOptions>()
        .is_none_or(|o| o.vacuum_retention_check);
    if checked && vacuum.retain < vacuum::MIN_RETAIN {
        return plan_err!(
            "VACUUM keeps at least {} hour of versions: a write running longer than the \
             retention would lose the blocks it has uploaded. When none runs, SET \
             sieve.vacuum_retention_check = false first",
            vacuum::MIN_RETAIN.as_secs() / 3600
        );
    }
    let table = open_named(session, &vacuum.table, "VACUUM").await?;
    let done = table.vacuum(vacuum.retain).await.map_err(to_df)?;
    session
        .run_sql(&format!(
            "select {} as files_removed, {} as bytes_removed, {} as versions_kept",
            done.files_removed, done.bytes_removed, done.versions_kept
        ))
        .await
}

/// OPTIMIZE: answers with what it rewrote (for an attached table, what it did to the indexes).
pub(super) async fn optimize(session: &Session, optimize: Optimize) -> Result<QueryStream> {
    if index_statements::names_attached(session, &optimize.table) {
        return index_statements::optimize(session, &optimize.table).await;
    }
    let table = open_named(session, &optimize.table, "OPTIMIZE").await?;
    session.progress.reset();
    let done = optimize::optimize(&table, &session.ctx.task_ctx(), &session.progress).await?;
    session
        .run_sql(&format!(
            "select {} as blocks_removed, {} as blocks_written, {} as rows_written, \
         {} as rows_purged, {} as sidecars_rebuilt, {} as groups_merged",
            done.blocks_removed,
            done.blocks_written,
            done.rows_written,
            done.rows_purged,
            done.sidecars_rebuilt,
            done.groups_merged
        ))
        .await
}

/// The table `command` (OPTIMIZE, VACUUM) names (`table` or `database.table`), if the
/// session's account holds ALL on it.
pub(super) async fn open_named(
    session: &Session,
    parts: &[String],
    command: &str,
) -> Result<Table> {
    let name = TableName::from_parts(parts, &session.database())?;
    session.require_all_for(command, &Object::table(&name.database, &name.table))?;
    session
        .catalog
        .open_table(&name.database, &name.table)
        .await
        .map_err(to_df)
}
