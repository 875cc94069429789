//! Statements about databases and tables as names in the catalog: CREATE/DROP DATABASE,
//! CREATE/DROP TABLE (CTAS commits its rows before the table is published), DESCRIBE.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{TableReference, exec_err, plan_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{DdlStatement, LogicalPlan};
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{CreateTable, ObjectName, ShowStatementFilter, Statement};
use sieve_storage::{StorageError, Table, TableDef, TableOptions};

use super::{Session, object_parts};
use crate::access::privileges::Object;
use crate::catalog::table_name::TableName;
use crate::catalog::table_options::{table_options, take_key_constraints, take_table_options};
use crate::dialect::describe::{columns_of, columns_of_schema};
use crate::dialect::information_schema;
use crate::error::to_df;
use crate::iceberg::catalog as iceberg_catalog;
use crate::session::query_stream::QueryStream;
use crate::sink::write_stream;

/// DESCRIBE / SHOW COLUMNS: an unknown table is MySQL's error, not an empty list.
pub(super) async fn describe(
    session: &Session,
    name: &ObjectName,
    full: bool,
    filter: Option<ShowStatementFilter>,
) -> Result<QueryStream> {
    // An attached Iceberg table, `lake.ns.t` or `\`lake.ns\`.t` (or `t` after USE `lake.ns`).
    let attached = match object_parts(name).as_slice() {
        [catalog, namespace, table] => iceberg_catalog::named(&session.iceberg, catalog)
            .map(|c| (c.name().to_string(), namespace.clone(), table.clone())),
        _ => resolve(session, name).ok().and_then(|(db, table)| {
            let (catalog, namespace) = iceberg_catalog::namespace_named(&session.iceberg, &db)?;
            Some((catalog.name().to_string(), namespace.to_string(), table))
        }),
    };
    if let Some((catalog, namespace, table)) = attached {
        // Its provider checks the privilege and asks the catalog.
        let name = TableReference::full(catalog, namespace, table);
        let provider = session.ctx.table_provider(name).await?;
        let frame = columns_of_schema(&session.ctx, &provider.schema(), full, filter)?;
        return session.run_plan(frame.into_unoptimized_plan()).await;
    }
    let (db, table) = resolve(session, name)?;
    // Refused before looking, as MySQL does: a refusal says nothing of existence.
    session
        .principal()
        .require_visible(&Object::table(&db, &table))?;
    session.catalog.table(&db, &table).await.map_err(to_df)?;
    let frame = columns_of(&session.ctx, &db, &table, full, filter).await?;
    session.run_plan(frame.into_unoptimized_plan()).await
}

pub(super) async fn create_database(
    session: &Session,
    name: &[String],
    if_not_exists: bool,
) -> Result<QueryStream> {
    let [name] = name else {
        return plan_err!("a database name has one part");
    };
    if name.eq_ignore_ascii_case(information_schema::NAME) {
        return plan_err!("{name} is MySQL's catalog of the server; it cannot be created");
    }
    // `lake` and `lake.ns` name an attached catalog and its namespaces: such a database could
    // never be reached.
    let catalog = name
        .split_once('.')
        .map_or(name.as_str(), |(catalog, _)| catalog);
    if iceberg_catalog::named(&session.iceberg, catalog).is_some() {
        return plan_err!(
            "{name} would be hidden by the attached Iceberg catalog {catalog}: choose another name"
        );
    }
    session.require_all_for("CREATE", &Object::database(name))?;
    match session.catalog.create_database(name).await {
        Ok(()) => Ok(session.affected(1)),
        Err(StorageError::DatabaseExists(_)) if if_not_exists => Ok(session.affected(0)),
        Err(e) => Err(to_df(e)),
    }
}

pub(super) async fn drop_databases(
    session: &Session,
    names: &[ObjectName],
    if_exists: bool,
) -> Result<QueryStream> {
    for name in names {
        let [db] = object_parts(name)
            .try_into()
            .map_err(|_| DataFusionError::Plan(format!("bad database name {name}")))?;
        session.require_all_for("DROP", &Object::database(&db))?;
        match session.catalog.drop_database(&db).await {
            Ok(()) => {}
            Err(StorageError::UnknownDatabase(_)) if if_exists => {}
            Err(e) => return Err(to_df(e)),
        }
    }
    Ok(session.affected(0))
}

pub(super) fn resolve(session: &Session, name: &ObjectName) -> Result<(String, String)> {
    let name = TableName::from_parts(&object_parts(name), &session.database())?;
    Ok((name.database, name.table))
}

pub(super) async fn drop_tables(
    session: &Session,
    names: &[ObjectName],
    if_exists: bool,
) -> Result<QueryStream> {
    for name in names {
        let (db, table) = resolve(session, name)?;
        session.require_all_for("DROP", &Object::table(&db, &table))?;
        match session.catalog.drop_table(&db, &table).await {
            Ok(()) => {}
            Err(StorageError::UnknownTable(..)) if if_exists => {}
            Err(e) => return Err(to_df(e)),
        }
    }
    Ok(session.affected(0))
}

/// CREATE TABLE, with Sieve's options; CREATE TABLE … AS SELECT writes and commits the rows
/// before the table is published, so a failed CTAS leaves no table behind.
pub(super) async fn create_table(
    session: &Session,
    mut create: CreateTable,
) -> Result<QueryStream> {
    let mut pairs = take_table_options(&mut create.table_options)?;
    take_key_constraints(&mut create.constraints, &mut pairs)?;
    let (db, name) = resolve(session, &create.name)?;
    session.require_all_for("CREATE", &Object::table(&db, &name))?;
    let if_not_exists = create.if_not_exists;
    if create.or_replace {
        return plan_err!("CREATE OR REPLACE TABLE is not supported; DROP TABLE first");
    }
    match session.catalog.table(&db, &name).await {
        Ok(_) if if_not_exists => return Ok(session.affected(0)),
        Ok(_) => return Err(to_df(StorageError::TableExists(db, name))),
        Err(StorageError::UnknownTable(..)) => {}
        Err(e) => return Err(to_df(e)),
    }
    let has_query = create.query.is_some();
    let plan = session
        .ctx
        .state()
        .statement_to_plan(DFStatement::Statement(Box::new(Statement::CreateTable(
            create,
        ))))
        .await?;
    let LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(create)) = plan else {
        return exec_err!("unexpected plan for CREATE TABLE");
    };
    // The table takes the physical plan's types: they can be wider than the logical plan's
    // (DataFusion 55 plans `bigint unsigned + 5` as Decimal(20, 0) but computes Decimal(21, 0)).
    let physical = if has_query {
        let frame = session
            .ctx
            .execute_logical_plan(create.input.as_ref().clone())
            .await?;
        Some(frame.create_physical_plan().await?)
    } else {
        None
    };
    let schema: SchemaRef = match &physical {
        Some(plan) => plan.schema(),
        None => Arc::new(create.input.schema().as_arrow().clone()),
    };
    let options = table_options(TableOptions::defaults_for(&schema), &pairs)?;
    let def = TableDef::new(&db, &name, schema, options).map_err(to_df)?;
    let mut rows = 0;
    if let Some(plan) = physical {
        let table = Table::new(session.catalog.storage().clone(), def.clone());
        let stream = datafusion::physical_plan::execute_stream(plan, session.ctx.task_ctx())?;
        rows = write_stream(
            &table,
            stream,
            Some(&session.progress),
            &session.ctx.task_ctx(),
            None,
        )
        .await?;
    }
    match session.catalog.create_table(&def).await {
        Ok(()) => Ok(session.affected(rows)),
        Err(StorageError::TableExists(..)) if if_not_exists => Ok(session.affected(0)),
        Err(e) => Err(to_df(e)),
    }
}
