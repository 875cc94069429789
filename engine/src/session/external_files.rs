//! A statement's `read_parquet` calls, resolved before it is planned (see ingest/read_parquet.rs).

use datafusion::error::Result;
use datafusion::sql::parser::Statement as DFStatement;

use super::Session;
use crate::access::privileges::Object;

impl Session {
    pub(super) async fn resolve_files(&self, statement: &DFStatement) -> Result<()> {
        let state = self.ctx.state();
        self.read_parquet
            .resolve(statement, &self.external, &state, || {
                // It reads files the server may read, as COPY INTO does (MySQL's FILE privilege).
                self.require_all_for("read_parquet", &Object::global())
            })
            .await
    }
}
