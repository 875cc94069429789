//! Transaction statements, answered without the engine. Sieve has no transactions (every
//! statement commits atomically on its own): BEGIN and COMMIT are accepted, and a ROLLBACK that
//! would have had something to undo says it cannot.

pub enum Transaction {
    /// BEGIN, START TRANSACTION
    Begin,
    /// COMMIT
    Commit,
    /// ROLLBACK
    Rollback,
}

/// Recognises a transaction statement; None means "run it in the engine".
pub fn transaction_statement(query: &str) -> Option<Transaction> {
    let lower = query.trim().trim_end_matches(';').to_ascii_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    match words.as_slice() {
        ["begin"] | ["begin", "work"] | ["start", "transaction", ..] => Some(Transaction::Begin),
        ["commit"] | ["commit", "work"] => Some(Transaction::Commit),
        ["rollback"] | ["rollback", "work"] => Some(Transaction::Rollback),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_statements() {
        assert!(matches!(
            transaction_statement("START TRANSACTION READ ONLY"),
            Some(Transaction::Begin)
        ));
        assert!(matches!(
            transaction_statement(" rollback;"),
            Some(Transaction::Rollback)
        ));
        assert!(transaction_statement("set autocommit=0").is_none());
        assert!(transaction_statement("select @@version").is_none());
    }
}
