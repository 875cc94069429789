//! A statement's `read_parquet` calls, resolved before it is planned (see ingest/read_parquet.rs).

use datafusion::error::Result;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion_distributed::DistributedConfig;

use super::Session;
use crate::access::privileges::Object;

/// Holds a statement's resolved calls until it is planned: dropped, the session forgets them
/// and plans with its workers again.
pub(super) struct ResolvedFiles<'a> {
    session: &'a Session,
    /// The workers' task cap to restore: with files to read, every stage was one task.
    max_tasks: Option<usize>,
}

impl Drop for ResolvedFiles<'_> {
    fn drop(&mut self) {
        self.session.read_parquet.forget();
        if let Some(max_tasks) = self.max_tasks {
            set_max_tasks_per_stage(self.session, max_tasks);
        }
    }
}

/// Resolves `statement`'s read_parquet calls; the guard is to be kept until it is planned.
pub(super) async fn resolve_files<'a>(
    session: &'a Session,
    statement: &DFStatement,
) -> Result<ResolvedFiles<'a>> {
    let state = session.ctx.state();
    let any = session
        .read_parquet
        .resolve(statement, &session.external, &state, || {
            // It reads files the server may read, as COPY INTO does (MySQL's FILE privilege).
            session.require_all_for("read_parquet", &Object::global())
        })
        .await?;
    // Workers hold Sieve's storage only, not the locations' credentials: a statement that
    // reads files is planned in one task per stage, which datafusion-distributed runs in
    // this process (a stage and its consumer of one task each lose the boundary between
    // them). Every part of it then runs here, Sieve's scans too.
    let max_tasks = match any && session.cluster.is_some() {
        true => set_max_tasks_per_stage(session, 1),
        false => None,
    };
    Ok(ResolvedFiles { session, max_tasks })
}

/// Sets datafusion-distributed's cap on tasks per stage; the one it replaces, if the
/// session plans with workers.
fn set_max_tasks_per_stage(session: &Session, max_tasks: usize) -> Option<usize> {
    let state = session.ctx.state_ref();
    let mut state = state.write();
    let config = state.config_mut().options_mut();
    let distributed = config.extensions.get_mut::<DistributedConfig>()?;
    Some(std::mem::replace(
        &mut distributed.max_tasks_per_stage,
        max_tasks,
    ))
}
