//! Statement texts as logs, the query log and the processlist show them: a password typed in
//! an account statement (`IDENTIFIED BY '…'`, `IDENTIFIED WITH plugin AS '…'`, `SET PASSWORD =
//! '…'`, `PASSWORD('…')`) becomes `<secret>`, as MySQL rewrites them for its logs. It works on
//! tokens, not on a parsed statement, so forms Sieve refuses are hidden too; a text the
//! tokenizer cannot read is cut before the first word that may introduce a password.

use std::borrow::Cow;
use std::sync::LazyLock;

use datafusion::sql::sqlparser::tokenizer::Token;
use regex::Regex;

use crate::dialect::tokens::Tokens;

/// The words after which a string may be a password. Only texts holding one are tokenized,
/// so a lookup or a large INSERT pays one scan for them.
static MAY_HOLD_PASSWORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new("(?i)identified|password").expect("a valid pattern"));

const SECRET: &str = "<secret>";

/// `sql` with its passwords replaced.
pub fn redacted(sql: &str) -> Cow<'_, str> {
    let Some(first) = MAY_HOLD_PASSWORD.find(sql) else {
        return Cow::Borrowed(sql);
    };
    let Ok(tokens) = Tokens::new(sql) else {
        return Cow::Owned(format!("{}{SECRET}", &sql[..first.start()]));
    };
    let tokens: Vec<&Token> = tokens.all().iter().map(|t| &t.token).collect();
    let mut out = String::with_capacity(sql.len());
    let mut masked = false;
    let is_set = tokens
        .iter()
        .find(|t| !matches!(t, Token::Whitespace(_)))
        .is_some_and(|t| matches!(t, Token::Word(w) if w.value.eq_ignore_ascii_case("set")));
    // The last two tokens that were not whitespace: a password follows BY, AS, PASSWORD,
    // `PASSWORD(`, or in SET PASSWORD `=`.
    let mut last: [Option<&Token>; 2] = [None, None];
    for &token in &tokens {
        let introduced = match last {
            [_, Some(Token::Word(w))] => {
                w.quote_style.is_none()
                    && ["by", "as", "password"]
                        .iter()
                        .any(|k| w.value.eq_ignore_ascii_case(k))
            }
            [_, Some(Token::Eq)] => is_set,
            [Some(Token::Word(w)), Some(Token::LParen)] => {
                w.quote_style.is_none() && w.value.eq_ignore_ascii_case("password")
            }
            _ => false,
        };
        match token {
            Token::SingleQuotedString(_) | Token::DoubleQuotedString(_) if introduced => {
                out.push_str(SECRET);
                masked = true;
            }
            other => out.push_str(&other.to_string()),
        }
        if !matches!(token, Token::Whitespace(_)) {
            last = [last[1], Some(token)];
        }
    }
    if masked {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(sql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_a_log() {
        for (sql, kept) in [
            ("CREATE USER 'app'@'%' IDENTIFIED BY 'hunter2'", "'app'@'%'"),
            (
                "create user a identified with mysql_native_password by 'hunter2' password expire",
                "create user a",
            ),
            (
                "alter user a identified by \"hunter2\" require ssl",
                "alter user a",
            ),
            (
                "grant select on *.* to u identified by 'hunter2'",
                "grant select",
            ),
            ("set password for u = 'hunter2'", "set password for u"),
            ("SET PASSWORD = PASSWORD('hunter2')", "SET PASSWORD"),
            (
                "create user a identified with caching_sha2_password as 'hunter2'",
                "create",
            ),
            ("create user a identified by 'hunter2", "create user a "),
        ] {
            let text = redacted(sql);
            assert!(!text.contains("hunter2"), "{text}");
            assert!(text.contains(kept), "{text}");
        }
    }

    #[test]
    fn other_statements_are_kept_as_typed() {
        for sql in [
            "select c1 from t10b where c2 = 'hunter2'",
            "insert into t values (1, 'x')",
            "select 'my password' = 'x'",
        ] {
            assert!(matches!(redacted(sql), Cow::Borrowed(_)), "{sql}");
        }
    }
}
