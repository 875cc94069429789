//! Server-side prepared statements: MySQL's `?` placeholders become DataFusion parameters
//! (`$1`, `$2`, … in the order they appear), and each execution binds typed values to the plan.
//! A value is never pasted into SQL text, so none can change what a statement means, and
//! `LIMIT ?` works where DataFusion takes an expression.
//!
//! The parser keeps `?` as a placeholder named `?`, which DataFusion cannot number; the
//! placeholders are renamed here by their position in the text (their spans), since the order
//! in which a visitor meets them is not the order a client binds them in.

use std::ops::ControlFlow;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{ScalarValue, plan_err};
use datafusion::error::Result;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{
    Expr, LimitClause, Query, Statement, Value, Visit, Visitor, visit_expressions_mut,
};
use datafusion::sql::sqlparser::tokenizer::Location;
use sieve_storage::RequestTrace;

use super::statement_end::Finished;
use super::{Session, external_files};
use crate::access::redact::redacted;
use crate::guard::panic;
use crate::metrics::statement_kind;
use crate::scan::lossless_cast::lossless_cast;
use crate::session::query_stream::QueryStream;
use crate::session::short_path::PointLookup;
use crate::statement_text;

/// A parsed statement whose `?` are numbered, and what its parameters are.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub(crate) body: Body,
    /// Per parameter, in order, the type DataFusion infers for it from the plan, if it can.
    pub param_types: Vec<Option<DataType>>,
    /// The columns a query returns, when planning it to type the parameters told them; empty
    /// for other statements.
    pub result_fields: Vec<FieldRef>,
    /// Written with `… ALLOW FILTERING`.
    pub(crate) allow_full_scan: bool,
    /// The session's database when it was prepared: names resolve there, as in MySQL, even
    /// after a USE.
    pub(crate) database: String,
    /// The statement's shape, recognised once, when it is a point lookup the short path plans.
    pub(crate) lookup: Option<PointLookup>,
    /// What /metrics counts its executions as, and the query log shows (its text, with `?`).
    pub(crate) kind: &'static str,
    pub(crate) text: String,
}

/// What runs when a prepared statement executes.
#[derive(Debug, Clone)]
pub(crate) enum Body {
    Parsed(DFStatement),
    /// A statement Sieve recognises before parsing (OPTIMIZE, GRANT, SHOW, KILL …): it takes
    /// no parameters and runs as its text does.
    Text(String),
}

impl Prepared {
    pub fn params(&self) -> usize {
        self.param_types.len()
    }

    /// The values as the types the plan expects of them where that loses nothing (a string for
    /// a `Utf8View` column, `5` for an unsigned one); the others as given, for DataFusion to
    /// coerce as it would the same literal in SQL text (`-1` against an unsigned column).
    pub(crate) fn bind(&self, values: Vec<ScalarValue>) -> Vec<ScalarValue> {
        values
            .into_iter()
            .zip(&self.param_types)
            .map(|(value, expected)| {
                expected
                    .as_ref()
                    .filter(|t| value.data_type() != **t)
                    .and_then(|t| lossless_cast(&value, t))
                    .unwrap_or(value)
            })
            .collect()
    }
}

/// A statement's parameters, once numbered.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Placeholders {
    pub count: usize,
    /// The parameters (from 0) that are a LIMIT or an OFFSET: row counts, whatever type a
    /// driver sends them as (mysql2 sends every number as a DOUBLE).
    pub row_counts: Vec<usize>,
}

/// Renames the statement's `?` placeholders to `$1 … $n` in text order. Only statements
/// DataFusion plans may have any: Sieve's own (CREATE TABLE, SET, SHOW, …) take none.
pub(crate) fn number_placeholders(statement: &mut DFStatement) -> Result<Placeholders> {
    let inner: &mut Statement = match statement {
        DFStatement::Statement(inner) => inner,
        DFStatement::Explain(explain) => return number_placeholders(&mut explain.statement),
        _ => return Ok(Placeholders::default()),
    };
    let mut found: Vec<Location> = Vec::new();
    let _ = visit_expressions_mut(inner, |expr| {
        if let Some(span) = question_mark(expr) {
            found.push(span);
        }
        ControlFlow::<()>::Continue(())
    });
    if found.is_empty() {
        return Ok(Placeholders::default());
    }
    if !matches!(inner, Statement::Query(_) | Statement::Insert(_)) {
        return plan_err!("parameters (?) are only allowed in SELECT, INSERT and EXPLAIN");
    }
    let key = |l: &Location| (l.line, l.column);
    found.sort_by_key(key);
    if found.windows(2).any(|w| key(&w[0]) == key(&w[1])) {
        return plan_err!("cannot tell this statement's parameters apart by position");
    }
    let mut limits = RowCounts(Vec::new());
    let _ = inner.visit(&mut limits);
    let mut row_counts: Vec<usize> = limits
        .0
        .iter()
        .filter_map(|at| found.binary_search_by_key(&key(at), key).ok())
        .collect();
    row_counts.sort_unstable();
    let _ = visit_expressions_mut(inner, |expr| {
        if let Some(at) = question_mark(expr) {
            let number = found.binary_search_by_key(&key(&at), key).expect("seen") + 1;
            if let Expr::Value(value) = expr {
                value.value = Value::Placeholder(format!("${number}"));
            }
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(Placeholders {
        count: found.len(),
        row_counts,
    })
}

/// Collects where the `?` of every LIMIT and OFFSET (in subqueries too) are.
struct RowCounts(Vec<Location>);

impl Visitor for RowCounts {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        let exprs: Vec<&Expr> = match &query.limit_clause {
            Some(LimitClause::LimitOffset { limit, offset, .. }) => limit
                .iter()
                .chain(offset.iter().map(|o| &o.value))
                .collect(),
            Some(LimitClause::OffsetCommaLimit { offset, limit }) => vec![offset, limit],
            None => Vec::new(),
        };
        self.0.extend(exprs.into_iter().filter_map(question_mark));
        ControlFlow::Continue(())
    }
}

/// Where a `?` placeholder starts, if `expr` is one.
fn question_mark(expr: &Expr) -> Option<Location> {
    match expr {
        Expr::Value(v) if v.value == Value::Placeholder("?".into()) => Some(v.span.start),
        _ => None,
    }
}

impl Session {
    /// Parses a statement whose `?` placeholders are bound at each [`Self::execute_prepared`];
    /// fails as the statement would (bad SQL, unknown table) before anything runs.
    pub async fn prepare(&self, sql: &str) -> Result<Prepared> {
        let (mut statement, allow_full_scan) = match statement_text::read(sql, &self.database())? {
            statement_text::Statement::Sql {
                statement,
                allow_filtering,
            } => (statement, allow_filtering),
            _ => {
                return Ok(Prepared {
                    body: Body::Text(sql.to_string()),
                    param_types: Vec::new(),
                    result_fields: Vec::new(),
                    allow_full_scan: false,
                    database: self.database(),
                    lookup: None,
                    kind: statement_kind(sql),
                    text: redacted(sql).into_owned(),
                });
            }
        };
        let placeholders = number_placeholders(&mut statement)?;
        let params = placeholders.count;
        let lookup = PointLookup::recognize(&statement, self.normalizes_identifiers());
        // A query is planned even without parameters, for the columns it returns: Flight SQL
        // clients (its JDBC driver) tell a query from an update by them.
        let query = matches!(&statement, DFStatement::Statement(inner) if matches!(**inner, Statement::Query(_)));
        if params == 0 && !query {
            return Ok(Prepared {
                body: Body::Parsed(statement),
                param_types: Vec::new(),
                result_fields: Vec::new(),
                allow_full_scan,
                database: self.database(),
                lookup,
                kind: statement_kind(sql),
                text: redacted(sql).into_owned(),
            });
        }
        let files = external_files::resolve_files(self, &statement).await?;
        let plan = self
            .ctx
            .state()
            .statement_to_plan(statement.clone())
            .await?;
        drop(files);
        let types = plan.get_parameter_types()?;
        let param_types = (1..=params)
            .map(|n| match types.get(&format!("${n}")).cloned().flatten() {
                None if placeholders.row_counts.contains(&(n - 1)) => Some(DataType::Int64),
                inferred => inferred,
            })
            .collect();
        let result_fields = match plan {
            LogicalPlan::Dml(_) | LogicalPlan::Ddl(_) | LogicalPlan::Statement(_) => Vec::new(),
            query => query.schema().fields().to_vec(),
        };
        Ok(Prepared {
            body: Body::Parsed(statement),
            param_types,
            result_fields,
            allow_full_scan,
            database: self.database(),
            lookup,
            kind: statement_kind(sql),
            text: redacted(sql).into_owned(),
        })
    }

    /// Runs a prepared statement with one value per parameter. The values are bound to the
    /// plan as literals of their own types (DataFusion coerces them as it would a literal in
    /// the text), never spliced into SQL.
    pub async fn execute_prepared(
        &self,
        prepared: &Prepared,
        params: Vec<ScalarValue>,
    ) -> Result<QueryStream> {
        if params.len() != prepared.params() {
            return plan_err!(
                "the statement has {} parameters, {} given",
                prepared.params(),
                params.len()
            );
        }
        let finished = Finished::start(self, prepared.kind, prepared.text.clone(), Some(&params));
        let params = prepared.bind(params);
        let run = async move {
            if let Some(lookup) = &prepared.lookup
                && let Some(rows) = self.short_path(lookup, &prepared.database, &params).await?
            {
                return Ok(rows);
            }
            let statement = match &prepared.body {
                Body::Parsed(statement) => statement.clone(),
                Body::Text(text) => return self.run_read(self.read(text).await).await,
            };
            if params.is_empty() {
                return self.execute_statement(statement).await;
            }
            self.progress.reset();
            let _files = external_files::resolve_files(self, &statement).await?;
            let mut state = self.ctx.state();
            state.config_mut().options_mut().catalog.default_schema = prepared.database.clone();
            let plan = state.statement_to_plan(statement).await?;
            self.run_plan(plan.with_param_values(params)?).await
        };
        let planning = RequestTrace::new();
        let run = planning.scope(self.allowing_full_scan(prepared.allow_full_scan, run));
        let output = panic::catch(run).await;
        self.counted(output, planning, finished)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::tokens::Tokens;

    fn numbered(sql: &str) -> Result<(usize, String)> {
        let mut statement = Tokens::new(sql)?.parse_one()?;
        let n = number_placeholders(&mut statement)?.count;
        Ok((n, statement.to_string()))
    }

    #[test]
    fn placeholders_are_numbered_in_text_order() {
        let (n, sql) = numbered(
            "select a from t where b = ? and c in (?, '?', \"?\") /* ? */ and d = ? limit ?",
        )
        .unwrap();
        assert_eq!(n, 4);
        assert_eq!(
            sql,
            "SELECT a FROM t WHERE b = $1 AND c IN ($2, '?', \"?\") AND d = $3 LIMIT $4"
        );
        // A subquery the visitor may reach in another order.
        let (_, sql) =
            numbered("select ? + (select max(x) from u where y = ?) from t where z = ?").unwrap();
        assert_eq!(
            sql,
            "SELECT $1 + (SELECT max(x) FROM u WHERE y = $2) FROM t WHERE z = $3"
        );
        let (n, _) = numbered("explain select * from t where a = ?").unwrap();
        assert_eq!(n, 1);
        assert_eq!(numbered("insert into t values (?, ?)").unwrap().0, 2);
        assert_eq!(numbered("select 'a?' from t").unwrap().0, 0);
    }

    #[test]
    fn row_counts_are_known() {
        let sql = "select a from t where b = ? and c in (select d from u limit ?) limit ?, ?";
        let mut statement = Tokens::new(sql).and_then(|t| t.parse_one()).unwrap();
        let numbered = number_placeholders(&mut statement).unwrap();
        assert_eq!(numbered.count, 4);
        assert_eq!(numbered.row_counts, [1, 2, 3]);
    }

    #[test]
    fn statements_sieve_runs_itself_take_no_parameters() {
        assert!(numbered("set @x = ?").is_err());
        assert!(numbered("delete from t where a = ?").is_err());
    }
}
