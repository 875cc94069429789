//! Statements about the connection that sends them, which a front end answers itself: KILL
//! (the MySQL server holds the connections it names) and the transaction statements. Sieve has
//! no transactions (every statement commits atomically on its own): BEGIN and COMMIT are
//! accepted, and a ROLLBACK that would have had something to undo says it cannot.

use datafusion::sql::sqlparser::tokenizer::Token;

use crate::dialect::tokens::{Tokens, is_keyword};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionStatement {
    /// `KILL [QUERY | CONNECTION] id`: what JDBC's `Statement.cancel()` and the mysql client's
    /// Ctrl-C send, on a second connection.
    Kill { id: u32, query_only: bool },
    /// BEGIN [WORK], START TRANSACTION …
    Begin,
    /// COMMIT [WORK]
    Commit,
    /// ROLLBACK [WORK]
    Rollback,
}

/// The connection statement `tokens` hold; None for every other statement.
pub fn recognise(tokens: &Tokens) -> Option<ConnectionStatement> {
    const FIRST_WORDS: [&str; 5] = ["kill", "begin", "start", "commit", "rollback"];
    if !FIRST_WORDS.iter().any(|w| tokens.starts_with(w)) {
        return None;
    }
    let words: Vec<&Token> = tokens.words().collect();
    let word = |i: usize, w: &str| is_keyword(words.get(i).copied(), w);
    let id = |i: usize| match words.get(i) {
        Some(Token::Number(n, false)) if i + 1 == words.len() => n.parse().ok(),
        _ => None,
    };
    let only = |n: usize| words.len() == n;
    if word(0, "kill") {
        let (query_only, at) = match () {
            () if word(1, "query") => (true, 2),
            () if word(1, "connection") => (false, 2),
            () => (false, 1),
        };
        return Some(ConnectionStatement::Kill {
            id: id(at)?,
            query_only,
        });
    }
    let work = |first: &str| word(0, first) && (only(1) || (only(2) && word(1, "work")));
    if work("begin") || (word(0, "start") && word(1, "transaction")) {
        Some(ConnectionStatement::Begin)
    } else if work("commit") {
        Some(ConnectionStatement::Commit)
    } else if work("rollback") {
        Some(ConnectionStatement::Rollback)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recognised(sql: &str) -> Option<ConnectionStatement> {
        recognise(&Tokens::new(sql).unwrap())
    }

    #[test]
    fn kill_statements() {
        let kill = |id, query_only| Some(ConnectionStatement::Kill { id, query_only });
        assert_eq!(recognised("KILL QUERY 12"), kill(12, true));
        assert_eq!(recognised("kill 7;"), kill(7, false));
        assert_eq!(recognised("kill connection 7"), kill(7, false));
        assert_eq!(recognised("kill /* who */ 7"), kill(7, false));
        assert_eq!(recognised("kill query x"), None);
        assert_eq!(recognised("kill 7 8"), None);
        assert_eq!(recognised("select 1"), None);
    }

    #[test]
    fn transaction_statements() {
        assert_eq!(
            recognised("START TRANSACTION READ ONLY"),
            Some(ConnectionStatement::Begin)
        );
        assert_eq!(recognised("begin work"), Some(ConnectionStatement::Begin));
        assert_eq!(recognised("commit"), Some(ConnectionStatement::Commit));
        assert_eq!(
            recognised(" rollback;"),
            Some(ConnectionStatement::Rollback)
        );
        assert_eq!(recognised("set autocommit=0"), None);
        assert_eq!(recognised("select @@version"), None);
        assert_eq!(recognised("commit and chain"), None);
    }
}
