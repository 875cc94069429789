//! CREATE INDEX, DROP INDEX and OPTIMIZE TABLE over an attached Iceberg table, as session
//! statements: the table resolved and the account's ALL on it checked, then the index built by
//! the indexer over every data file, its definition written last; or, for OPTIMIZE, the
//! indexer's pass over the table's indexes run at once.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use datafusion::common::not_impl_err;
use datafusion::error::{DataFusionError, Result};
use sieve_iceberg::{DataFile, IcebergCatalog, TableScan};
use sieve_index::{FilterKind, is_hashable};
use sieve_storage::{AttachedIndexDef, StorageError};

use super::Session;
use crate::catalog::schemas::CATALOG_NAME;
use crate::error::{Classified, ErrorClass, external, to_df};
use crate::iceberg::catalog::{named, namespace_named, object};

use crate::iceberg::index_statement::IndexStatement;
use crate::iceberg::indexer::{Updated, index_into, update};
use crate::session::query_stream::QueryStream;

/// What MySQL numbers among CREATE and DROP INDEX's refusals, in its words.
#[derive(Debug, thiserror::Error)]
enum IndexRefusal {
    #[error("Duplicate key name '{0}'")]
    Duplicate(String),
    #[error("Key column '{0}' doesn't exist in table")]
    NoColumn(String),
    #[error("Can't DROP '{0}'; check that column/key exists")]
    NotThere(String),
    #[error("Unknown database '{0}': no catalog of that name is attached (attached: {1})")]
    NoCatalog(String, String),
}

impl Classified for IndexRefusal {
    fn class(&self) -> ErrorClass {
        match self {
            Self::Duplicate(_) => ErrorClass::DuplicateKeyName,
            Self::NoColumn(_) => ErrorClass::KeyColumnMissing,
            Self::NotThere(_) => ErrorClass::CannotDropKey,
            Self::NoCatalog(..) => ErrorClass::UnknownDatabase,
        }
    }
}

/// An attached table a statement names, with its current scan.
struct Attached {
    catalog: Arc<IcebergCatalog>,
    namespace: String,
    table: String,
    scan: Arc<TableScan>,
    table_uuid: String,
}

pub(super) async fn run(session: &Session, statement: IndexStatement) -> Result<QueryStream> {
    match statement {
        IndexStatement::Create {
            name,
            table,
            columns,
            filter,
        } => create(session, name, &table, columns, filter).await,
        IndexStatement::Drop { name, table } => drop(session, &name, &table).await,
    }
}

/// Whether `parts` name a table of an attached catalog, or of a catalog not attached
/// (`nocat.ns.t`, which [`resolve`] refuses as such), not one of Sieve's own.
pub(super) fn names_attached(session: &Session, parts: &[String]) -> bool {
    !matches!(attached_name(session, parts), Ok(None))
}

/// The attached catalog, namespace and table `parts` name: `lake.ns.t`; `` `lake.ns`.t `` as
/// tools quote back the database SHOW DATABASES lists; `t` after `USE lake.ns`. None for a
/// table of Sieve's own; an error for a catalog not attached.
fn attached_name(
    session: &Session,
    parts: &[String],
) -> Result<Option<(Arc<IcebergCatalog>, String, String)>> {
    let in_database = |database: &str, table: &String| {
        namespace_named(&session.iceberg, database)
            .map(|(c, namespace)| (c.clone(), namespace.to_string(), table.clone()))
    };
    Ok(match parts {
        [catalog, namespace, table] if !catalog.eq_ignore_ascii_case(CATALOG_NAME) => {
            let Some(catalog) = named(&session.iceberg, catalog) else {
                let names: Vec<&str> = session.iceberg.iter().map(|c| c.name()).collect();
                let refusal = IndexRefusal::NoCatalog(catalog.clone(), names.join(", "));
                return Err(external(refusal));
            };
            Some((catalog.clone(), namespace.clone(), table.clone()))
        }
        [database, table] => in_database(database, table),
        [table] => in_database(&session.database(), table),
        _ => None,
    })
}

async fn resolve(session: &Session, parts: &[String], command: &str) -> Result<Attached> {
    let Some((catalog, namespace, table)) = attached_name(session, parts)? else {
        return not_impl_err!(
            "{command} works on attached Iceberg tables (catalog.namespace.table); a Sieve \
             table indexes the columns its index_columns option names (CREATE TABLE … WITH \
             (index_columns = '…'))"
        );
    };
    session.require_all_for(command, &object(catalog.name(), &namespace, &table))?;
    let scan = (catalog.scan(&namespace, &table).await)
        .map_err(external)?
        .ok_or_else(|| {
            to_df(StorageError::UnknownTable(
                format!("{}.{namespace}", catalog.name()),
                table.clone(),
            ))
        })?;
    let Some(table_uuid) = scan.table_uuid.clone() else {
        return not_impl_err!(
            "{}.{namespace}.{table} has no table-uuid in its metadata (a format v1 table \
             written without one), which Sieve keys its indexes by",
            catalog.name()
        );
    };
    Ok(Attached {
        catalog,
        namespace,
        table,
        scan,
        table_uuid,
    })
}

/// The filter an attached table's index gets unless CREATE INDEX says USING. Not the default
/// of Sieve's own tables (binary_fuse8): a false positive there reads a 4096-row slice, here a
/// whole row group of another engine's file (a million rows, megabytes). At 100M rows in 1M-row
/// row groups, binary_fuse16 took uniform absent lookups from 55 to 943 per second and present
/// ones from 16 to 17 (23 to 34 at 16 connections), at twice the filter's bits
/// (docs/benchmarks.md).
const ATTACHED_DEFAULT_FILTER: FilterKind = FilterKind::BinaryFuse16;

async fn create(
    session: &Session,
    name: String,
    table: &[String],
    columns: Vec<String>,
    filter: Option<FilterKind>,
) -> Result<QueryStream> {
    let attached = resolve(session, table, "CREATE INDEX").await?;
    let schema = &attached.scan.schema;
    let mut ids = Vec::with_capacity(columns.len());
    for column in &columns {
        let Ok(field) = schema.field_with_name(column) else {
            return Err(external(IndexRefusal::NoColumn(column.clone())));
        };
        if sieve_iceberg::is_variant(field) {
            return not_impl_err!(
                "column {column} is a variant, which Sieve's filters do not index"
            );
        }
        if !is_hashable(field.data_type()) {
            return not_impl_err!(
                "column {column} has type {}, which Sieve's filters do not index",
                field.data_type()
            );
        }
        ids.push(sieve_iceberg::field_id(field).unwrap_or(-1));
    }
    let indexes = &session.file_indexes;
    let exists = (indexes.store().definitions(&attached.table_uuid).await)
        .map_err(to_df)?
        .iter()
        .any(|d| d.name == name);
    if exists {
        return Err(external(IndexRefusal::Duplicate(name)));
    }
    let def = AttachedIndexDef {
        name,
        id: uuid::Uuid::new_v4().simple().to_string(),
        catalog: attached.catalog.name().to_string(),
        namespace: attached.namespace,
        table: attached.table,
        table_uuid: attached.table_uuid,
        columns,
        field_ids: ids,
        filter: filter.unwrap_or(ATTACHED_DEFAULT_FILTER),
        created_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64),
    };
    session.progress.reset();
    let files: Vec<&DataFile> = attached.scan.files.iter().collect();
    let made = async {
        let indexed = index_into(
            indexes,
            &attached.catalog,
            &def,
            &attached.scan,
            &files,
            session.progress.clone(),
            &session.ctx.task_ctx().memory_pool().clone(),
        )
        .await?;
        indexes.store().create(&def).await.map_err(to_df)?;
        Ok::<_, DataFusionError>(indexed)
    };
    let indexed = match made.await {
        Ok(indexed) => indexed,
        Err(e) => {
            // Parts no definition names are never read; removed so they take no space.
            if let Err(removing) = indexes.store().remove_parts(&def).await {
                log::warn!("parts of the failed index {} left: {removing}", def.name);
            }
            return Err(e);
        }
    };
    indexes.changed(&def.table_uuid).await;
    session
        .run_sql(&format!(
            "select {} as files_indexed, {} as rows_indexed, {} as index_bytes",
            indexed.files, indexed.rows, indexed.bytes
        ))
        .await
}

/// OPTIMIZE TABLE: the indexer's pass over the table's indexes, now rather than at its next
/// interval (the files new snapshots added indexed, small parts merged, parts whose files the
/// table no longer has removed), answered with what it did.
pub(super) async fn optimize(session: &Session, table: &[String]) -> Result<QueryStream> {
    let attached = resolve(session, table, "OPTIMIZE").await?;
    let indexes = &session.file_indexes;
    let defs = (indexes.store().definitions(&attached.table_uuid).await).map_err(to_df)?;
    session.progress.reset();
    let pool = session.ctx.task_ctx().memory_pool().clone();
    let mut done = Updated::default();
    // One index failing (a column it covers dropped from the table) holds up none of the
    // others, as in the indexer's pass; the statement then fails naming it.
    let (mut failed, mut failures) = (None, 0);
    for def in &defs {
        let progress = session.progress.clone();
        let updated = update(
            indexes,
            &attached.catalog,
            def,
            &attached.scan,
            progress,
            &pool,
        );
        match updated.await {
            Ok(updated) => done += updated,
            Err(e) => {
                log::warn!("OPTIMIZE: index {} not brought up to date: {e}", def.name);
                failures += 1;
                failed = failed.or(Some((&def.name, e)));
            }
        }
    }
    if let Some((name, e)) = failed {
        let others = match (defs.len(), failures) {
            (1, _) => String::new(),
            (_, 1) => " (the table's other indexes were brought up to date)".into(),
            (n, f) => format!(" ({f} of the table's {n} indexes were not, each logged)"),
        };
        return Err(e.context(format!("index {name} was not brought up to date{others}")));
    }
    session
        .run_sql(&format!(
            "select {} as files_indexed, {} as rows_indexed, {} as parts_merged, \
             {} as files_indexed_again, {} as parts_removed, {} as parts",
            done.indexed.files,
            done.indexed.rows,
            done.merged,
            done.reindexed,
            done.removed,
            done.parts
        ))
        .await
}

async fn drop(session: &Session, name: &str, table: &[String]) -> Result<QueryStream> {
    let attached = resolve(session, table, "DROP INDEX").await?;
    let indexes = &session.file_indexes;
    let dropped = (indexes.store().drop(&attached.table_uuid, name).await).map_err(to_df)?;
    if !dropped {
        return Err(external(IndexRefusal::NotThere(name.to_string())));
    }
    indexes.changed(&attached.table_uuid).await;
    Ok(session.affected(0))
}
