//! Statements about one table that Sieve recognises before parsing SQL (VACUUM, OPTIMIZE), as
//! DataFusion's parser knows neither in MySQL's dialect: their words, and the table they name.

use datafusion::sql::sqlparser::tokenizer::Token;

use crate::dialect::nested_names::table_levels;
use crate::dialect::tokens::Tokens;

/// The words after `keyword` when the statement starts with it (without whitespace and
/// semicolons); None if it does not.
pub fn after_keyword(statement: &Tokens, keyword: &str) -> Option<Vec<Token>> {
    statement
        .starts_with(keyword)
        .then(|| statement.words().skip(1).cloned().collect())
}

/// `table`, `database.table` or `catalog.namespace.table` (an attached table, its namespace's
/// levels joined) at the start of `rest`, which it then skips; None if there is no such name.
pub fn table_name(rest: &mut &[Token]) -> Option<Vec<String>> {
    let mut table = Vec::new();
    loop {
        match rest.first() {
            Some(Token::Word(w)) => table.push(w.value.clone()),
            _ => return None,
        }
        *rest = &rest[1..];
        match rest.first() {
            Some(Token::Period) => *rest = &rest[1..],
            _ => break,
        }
    }
    Some(table_levels(table))
}
