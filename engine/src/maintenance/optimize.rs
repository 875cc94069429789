//! `OPTIMIZE [TABLE] t`: writes again the blocks whose rows DELETEs have thinned out and the
//! small blocks small INSERTs left, and rebuilds the xor, fuse and bloom entries that still hold
//! deleted keys, all in one commit ([`sieve_storage::OptimizePlan`] says what is chosen and why,
//! [`sieve_storage::Table::commit_rewrite`] how it lands beside concurrent writers). Recognised
//! before parsing ([`crate::maintenance::table_statement`]); MySQL's `NO_WRITE_TO_BINLOG`/`LOCAL` and
//! `TABLES` are accepted.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::sql::sqlparser::tokenizer::Token;
use futures::{StreamExt, TryStreamExt};
use sieve_storage::{Optimized, Rewrite, RoaringBitmap, StorageError, Table, TableWriter};

use crate::dialect::tokens::{Tokens, is_keyword};
use crate::error::to_df;
use crate::maintenance::delete::{key_changes, live_rows};
use crate::maintenance::table_statement::{after_keyword, table_name};
use crate::progress::WriteProgress;

const SYNTAX: &str = "OPTIMIZE [NO_WRITE_TO_BINLOG | LOCAL] [TABLE] <table>";

/// Times an OPTIMIZE plans again after another one rewrote blocks it was rewriting.
const MAX_PLANS: usize = 5;

/// Sidecars rebuilt at once.
const REBUILDS_IN_FLIGHT: usize = 4;

/// `table` or `database.table`.
#[derive(Debug, PartialEq)]
pub struct Optimize {
    pub table: Vec<String>,
}

/// The OPTIMIZE statement `statement` holds; None if it is another statement.
pub fn parse(statement: &Tokens) -> Option<Result<Optimize>> {
    let tokens = after_keyword(statement, "optimize")?;
    let mut rest = tokens.as_slice();
    if is_keyword(rest.first(), "no_write_to_binlog") || is_keyword(rest.first(), "local") {
        rest = &rest[1..];
    }
    if is_keyword(rest.first(), "table") || is_keyword(rest.first(), "tables") {
        rest = &rest[1..];
    }
    Some(match (table_name(&mut rest), rest) {
        (Some(table), []) => Ok(Optimize { table }),
        (Some(_), [Token::Comma, ..]) => Err(DataFusionError::Plan(
            "OPTIMIZE takes one table at a time".into(),
        )),
        _ => Err(DataFusionError::Plan(format!("OPTIMIZE syntax: {SYNTAX}"))),
    })
}

/// Optimizes `table` (see the module's documentation), counting the rows it writes in
/// `progress`.
pub async fn optimize(
    table: &Table,
    context: &Arc<TaskContext>,
    progress: &WriteProgress,
) -> Result<Optimized> {
    let mut plans = 0;
    loop {
        let base = table.snapshot().await.map_err(to_df)?;
        let blocks = table.blocks(&base).await.map_err(to_df)?;
        let plan = blocks.optimize_plan(table.def());
        if plan.rewrite.is_empty() && plan.rebuild.is_empty() {
            return merge_groups(table, Optimized::default()).await;
        }
        // Block by block, in the plan's order: the commit places rows deleted meanwhile by
        // where they were written.
        let mut writer = TableWriter::new(table.clone());
        for &i in &plan.rewrite {
            let Some(mut rows) = live_rows(table, &blocks, i, None, None, context)? else {
                continue;
            };
            while let Some(batch) = rows.next().await {
                let batch = batch?;
                progress.add(batch.num_rows() as u64);
                writer.write(batch).await.map_err(to_df)?;
            }
        }
        let (written, _) = writer.upload().await.map_err(to_df)?;
        let sidecars: HashMap<usize, String> = futures::stream::iter(plan.rebuild)
            .map(|i| {
                let (table, blocks, context) = (table.clone(), blocks.clone(), context.clone());
                async move {
                    let none = RoaringBitmap::new();
                    let live = key_changes(&table, &blocks, i, &none, &context).await?;
                    // Any key without a live row is one too many now.
                    let rebuilt = table.rewrite_sidecar(&blocks, i, &live, 0.0).await;
                    Ok::<_, DataFusionError>(rebuilt.map_err(to_df)?.map(|name| (i, name)))
                }
            })
            .buffered(REBUILDS_IN_FLIGHT)
            .try_filter_map(|rebuilt| async move { Ok(rebuilt) })
            .try_collect()
            .await?;
        let rewrite = Rewrite {
            base,
            rewritten: plan.rewrite,
            written,
            sidecars,
        };
        match table.commit_rewrite(rewrite).await {
            Err(StorageError::Rewritten(_)) if plans + 1 < MAX_PLANS => plans += 1,
            done => return merge_groups(table, done.map_err(to_df)?).await,
        }
    }
}

/// Once the rewrite is in, merges the table's locator groups by tiers, in a commit of its own.
async fn merge_groups(table: &Table, done: Optimized) -> Result<Optimized> {
    let groups_merged = table.merge_locator_groups().await.map_err(to_df)?;
    Ok(Optimized {
        groups_merged,
        ..done
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(sql: &str) -> Option<Result<Optimize>> {
        super::parse(&Tokens::new(sql).unwrap())
    }

    #[test]
    fn parses_optimize_and_nothing_else() {
        let table = |sql: &str| parse(sql).unwrap().unwrap().table;
        assert_eq!(table("OPTIMIZE TABLE db.t;"), ["db", "t"]);
        assert_eq!(table("optimize local table t"), ["t"]);
        assert_eq!(table("optimize no_write_to_binlog tables `t`"), ["t"]);
        assert_eq!(table("optimize t"), ["t"]);
        // An attached table, its namespace's levels joined.
        assert_eq!(table("optimize table lake.ns.t"), ["lake", "ns", "t"]);
        assert_eq!(table("optimize table lake.a.b.t"), ["lake", "a.b", "t"]);
        for bad in ["optimize", "optimize table", "optimize t full"] {
            assert!(parse(bad).unwrap().is_err(), "{bad}");
        }
        let many = parse("optimize table a, b").unwrap().unwrap_err();
        assert!(many.to_string().contains("one table"), "{many}");
        assert!(parse("select 1").is_none());
        assert!(parse("select optimize from t").is_none());
    }
}
