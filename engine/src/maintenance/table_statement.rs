//! Statements about one table that Sieve recognises before parsing SQL (VACUUM, OPTIMIZE), as
//! DataFusion's parser knows neither in MySQL's dialect: their words, and the table they name.

use datafusion::sql::sqlparser::dialect::MySqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// The tokens after `keyword` when `sql` starts with it (without whitespace and semicolons);
/// None if it does not.
pub fn after_keyword(sql: &str, keyword: &str) -> Option<Vec<Token>> {
    let tokens = Tokenizer::new(&MySqlDialect {}, sql).tokenize().ok()?;
    let mut words = tokens
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon));
    match words.next() {
        Some(Token::Word(w)) if w.value.eq_ignore_ascii_case(keyword) => Some(words.collect()),
        _ => None,
    }
}

/// Whether `token` is the unquoted keyword `k`.
pub fn is_keyword(token: Option<&Token>, k: &str) -> bool {
    matches!(token, Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k))
}

/// `table` or `database.table` at the start of `rest`, which it then skips; None if there is
/// no such name.
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
    (table.len() <= 2).then_some(table)
}
