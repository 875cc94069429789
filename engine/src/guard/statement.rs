//! What a client's statement may not do to the server: nest deeper than the query threads' stacks
//! allow, or reach the server's filesystem.
//!
//! Depth: the SQL parser limits nesting through parentheses (a recursion counter), but chains of
//! infix operators — `a = 0 or a = 1 or …`, `1 + 1 + …`, `select … union all select …` — are
//! parsed in a loop into trees as deep as the chain is long, and the AST's drop, the planner and
//! the expression evaluator then recurse that deep. A stack overflow aborts the whole process, so
//! the bound is checked on the tokens, before any tree exists. Every level of such a tree needs
//! an operator token, so the operator count bounds the depth (up to the parser's own nesting
//! limit); literals, names, commas and parentheses do not count, so long IN lists are fine.
//!
//! Filesystem: COPY … TO and CREATE EXTERNAL TABLE read or write any path the server process can
//! (it often runs as root), and DataFusion's runtime settings move its spill directory anywhere.
//! Sieve's tables live in its storage only, so these are refused for every client.

use datafusion::common::plan_err;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::Result;
use datafusion::logical_expr::{DdlStatement, LogicalPlan, Statement as PlanStatement};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::dialect::tokens::Tokens;

/// Operators one statement may hold. Measured with a debug build on 16 MiB query-thread stacks
/// (`QUERY_THREAD_STACK`), `sieve sql`: chains of column additions plan in quadratic time in
/// DataFusion (1,000 terms: 2.5 s, 2,000: 10.5 s, 4,000: 45 s) and `OR` chains faster (4,000
/// terms: 7.8 s); none overflowed a stack up to 4,000. 2,000 operators keeps every kind of chain
/// to seconds; long lists belong in `IN (…)`, which costs no operators. (Integer arithmetic was
/// cubic and capped this at 1,000 until [`crate::dialect::checked_arithmetic`] made a tree one call.)
pub const MAX_OPERATORS: usize = 2_000;

/// The stack size of threads that run statements.
pub const QUERY_THREAD_STACK: usize = 16 << 20;

/// Refuses a statement whose operator chains could overflow a query thread's stack.
pub fn check_complexity(statement: &Tokens) -> Result<()> {
    let operators = statement.words().filter(|t| is_operator(t)).count();
    if operators > MAX_OPERATORS {
        return plan_err!(
            "statement too complex: {operators} operators, at most {MAX_OPERATORS}; \
             write long lists of alternatives as `column IN (v1, v2, …)`"
        );
    }
    Ok(())
}

/// Whether a token can add a level to an expression or query tree.
fn is_operator(token: &Token) -> bool {
    match token {
        Token::Word(word) => word.quote_style.is_none() && word.keyword != Keyword::NoKeyword,
        Token::EOF
        | Token::Number(..)
        | Token::Char(_)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::TripleSingleQuotedString(_)
        | Token::TripleDoubleQuotedString(_)
        | Token::DollarQuotedString(_)
        | Token::SingleQuotedByteStringLiteral(_)
        | Token::DoubleQuotedByteStringLiteral(_)
        | Token::TripleSingleQuotedByteStringLiteral(_)
        | Token::TripleDoubleQuotedByteStringLiteral(_)
        | Token::SingleQuotedRawStringLiteral(_)
        | Token::DoubleQuotedRawStringLiteral(_)
        | Token::TripleSingleQuotedRawStringLiteral(_)
        | Token::TripleDoubleQuotedRawStringLiteral(_)
        | Token::NationalStringLiteral(_)
        | Token::QuoteDelimitedStringLiteral(_)
        | Token::NationalQuoteDelimitedStringLiteral(_)
        | Token::EscapedStringLiteral(_)
        | Token::UnicodeStringLiteral(_)
        | Token::HexStringLiteral(_)
        | Token::Comma
        | Token::Whitespace(_)
        | Token::LParen
        | Token::RParen
        | Token::Period
        | Token::SemiColon
        | Token::Placeholder(_) => false,
        _ => true,
    }
}

/// Refuses plans that read or write outside Sieve's storage.
pub fn check_confined(plan: &LogicalPlan) -> Result<()> {
    let mut refused = None;
    plan.apply_with_subqueries(|node| {
        refused = match node {
            LogicalPlan::Copy(copy) => Some(format!(
                "COPY … TO '{}' is not available: Sieve does not write files outside its storage",
                copy.output_url
            )),
            LogicalPlan::Ddl(DdlStatement::CreateExternalTable(create)) => Some(format!(
                "CREATE EXTERNAL TABLE is not available: Sieve does not read files outside its \
                 storage ({}); load files with COPY INTO, or select from read_parquet(), from the \
                 locations the server's external_locations names",
                create.locations.join(", ")
            )),
            LogicalPlan::Statement(PlanStatement::SetVariable(set))
                if set
                    .variable
                    .to_ascii_lowercase()
                    .starts_with("datafusion.runtime.") =>
            {
                Some(format!(
                    "{} is a server setting; set memory limits in the server's configuration",
                    set.variable
                ))
            }
            _ => None,
        };
        Ok(if refused.is_some() {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    })?;
    match refused {
        Some(message) => datafusion::common::not_impl_err!("{message}"),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_count_and_lists_do_not() {
        let check = |sql: &str| check_complexity(&Tokens::new(sql).unwrap());
        let chain = |n: usize| {
            let terms: Vec<String> = (0..n).map(|i| format!("a = {i}")).collect();
            format!("select count(*) from t where {}", terms.join(" or "))
        };
        // select, count, *, from, where, then "=" and "or" per term.
        check(&chain(MAX_OPERATORS / 2 - 3)).unwrap();
        let error = check(&chain(MAX_OPERATORS)).unwrap_err();
        assert!(
            error.to_string().contains("statement too complex"),
            "{error}"
        );
        let list: Vec<String> = (0..100_000).map(|i| format!("'k{i}'")).collect();
        check(&format!("select * from t where c in ({})", list.join(","))).unwrap();
    }
}
