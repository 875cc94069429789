//! What MySQL drivers ask a server on connect (`select @@version_comment limit 1`, …), answered
//! without the engine; `SET` goes to the engine, which knows which variables exist. Sieve has no
//! transactions (every statement commits atomically on its own): BEGIN and COMMIT are accepted,
//! and a ROLLBACK that would have had something to undo says it cannot.

pub const VERSION: &str = concat!("8.0.36-sieve-", env!("CARGO_PKG_VERSION"));

/// A statement that needs no engine.
pub enum Chatter {
    /// BEGIN, START TRANSACTION
    Begin,
    /// COMMIT
    Commit,
    /// ROLLBACK
    Rollback,
    /// One row of system variables.
    Row(Vec<(String, Option<String>)>),
}

fn variable(name: &str, database: &str) -> Option<String> {
    let name = name
        .trim_start_matches("@@")
        .trim_start_matches("session.")
        .trim_start_matches("global.");
    let value = match name.to_ascii_lowercase().as_str() {
        "version_comment" => "Sieve".to_string(),
        "version" => VERSION.to_string(),
        "max_allowed_packet" => "67108864".into(),
        "autocommit" | "auto_increment_increment" => "1".into(),
        "transaction_isolation" | "tx_isolation" => "REPEATABLE-READ".into(),
        "transaction_read_only" | "tx_read_only" | "lower_case_table_names" => "0".into(),
        "character_set_client"
        | "character_set_connection"
        | "character_set_results"
        | "character_set_server" => "utf8mb4".into(),
        "collation_connection" | "collation_server" => "utf8mb4_general_ci".into(),
        "sql_mode" => String::new(),
        "time_zone" | "system_time_zone" => "UTC".into(),
        "wait_timeout" | "interactive_timeout" => "28800".into(),
        "database" => return Some(database.to_string()),
        _ => return None,
    };
    Some(value)
}

/// Recognises driver chatter; None means "run it in the engine".
pub fn answer(query: &str, database: &str) -> Option<Chatter> {
    let q = query.trim().trim_end_matches(';').trim();
    let lower = q.to_ascii_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    match words.as_slice() {
        ["begin"] | ["begin", "work"] | ["start", "transaction", ..] => Some(Chatter::Begin),
        ["commit"] | ["commit", "work"] => Some(Chatter::Commit),
        ["rollback"] | ["rollback", "work"] => Some(Chatter::Rollback),
        ["select", ..] if lower.contains("@@") || lower.starts_with("select database()") => {
            let body = q[6..].trim();
            let body = match body.to_ascii_lowercase().find(" limit ") {
                Some(at) => &body[..at],
                None => body,
            };
            let mut row = Vec::new();
            for term in body.split(',') {
                let term = term.trim();
                let (expr, alias) = match term.to_ascii_lowercase().find(" as ") {
                    Some(at) => (
                        term[..at].trim(),
                        term[at + 4..].trim().trim_matches('`').to_string(),
                    ),
                    None => (term, term.to_string()),
                };
                let value = if expr.eq_ignore_ascii_case("database()") {
                    Some(database.to_string())
                } else if expr.starts_with("@@") {
                    variable(expr, database)
                } else {
                    return None;
                };
                row.push((alias, value));
            }
            Some(Chatter::Row(row))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_chatter() {
        let Some(Chatter::Row(row)) = answer("select @@version_comment limit 1", "default") else {
            panic!()
        };
        assert_eq!(
            row,
            vec![("@@version_comment".to_string(), Some("Sieve".to_string()))]
        );
        let Some(Chatter::Row(row)) =
            answer("SELECT DATABASE(), @@session.autocommit AS ac", "shop")
        else {
            panic!()
        };
        assert_eq!(row[0].1.as_deref(), Some("shop"));
        assert_eq!(row[1], ("ac".to_string(), Some("1".to_string())));
        assert!(matches!(
            answer("START TRANSACTION", "d"),
            Some(Chatter::Begin)
        ));
        assert!(matches!(answer("rollback;", "d"), Some(Chatter::Rollback)));
        assert!(answer("set autocommit=0", "d").is_none());
        assert!(answer("select * from t", "d").is_none());
    }
}
