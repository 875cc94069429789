//! MySQL's account statements, recognised before SQL parsing (DataFusion's parser knows none of
//! them in MySQL's form): CREATE USER, DROP USER, ALTER USER … IDENTIFIED BY, GRANT, REVOKE and
//! SHOW GRANTS. Accounts are `'user'@'host'` (host `%` when left out).

use datafusion::common::DataFusionError;
use datafusion::error::Result;
use datafusion::sql::sqlparser::parser::ParserError;
use datafusion::sql::sqlparser::tokenizer::Token;

use super::password::AuthPlugin;
use super::privileges::{Object, Privilege};
use crate::dialect::tokens::Tokens;

/// `'user'@'host'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserName {
    pub user: String,
    pub host: String,
}

#[derive(Debug, PartialEq)]
pub enum UserStatement {
    Create {
        if_not_exists: bool,
        users: Vec<(UserName, Option<Identified>)>,
    },
    Drop {
        if_exists: bool,
        users: Vec<UserName>,
    },
    Alter {
        if_exists: bool,
        user: UserName,
        identified: Identified,
    },
    /// GRANT (`grant`) or REVOKE.
    Privileges {
        grant: bool,
        privileges: Vec<Privilege>,
        on: On,
        users: Vec<UserName>,
    },
    ShowGrants {
        user: Option<UserName>,
    },
}

/// `IDENTIFIED [WITH plugin] BY 'password'`; no plugin: the server's default.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Identified {
    pub plugin: Option<AuthPlugin>,
    pub password: String,
}

/// What a GRANT or REVOKE names: `*.*`, `db.*`, `db.t`, or (in the current database) `*`, `t`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct On {
    pub db: Option<Option<String>>,
    pub table: Option<String>,
}

impl On {
    /// The object, with `database` for a name without one.
    pub fn object(&self, database: &str) -> Object {
        let db = match &self.db {
            Some(db) => db.clone(),
            None => Some(database.to_string()),
        };
        Object {
            db,
            table: self.table.clone(),
        }
    }
}

const SYNTAX: &str = "CREATE USER [IF NOT EXISTS] 'u'@'h' IDENTIFIED [WITH plugin] BY 'password', \
     DROP USER [IF EXISTS] 'u'@'h', ALTER USER 'u'@'h' IDENTIFIED BY 'password', \
     GRANT {SELECT | INSERT | DELETE | ALL} ON {*.* | db.* | db.t} TO 'u'@'h', \
     REVOKE … FROM 'u'@'h', SHOW GRANTS [FOR 'u'@'h']";

/// MySQL's syntax error (1064), saying what the account statements look like.
fn syntax_error(what: &str) -> DataFusionError {
    let message = format!("{what}; the account statements are {SYNTAX}");
    DataFusionError::SQL(Box::new(ParserError::ParserError(message)), None)
}

/// The words account statements start with: the words of other statements are not copied.
const FIRST_WORDS: [&str; 6] = ["create", "drop", "alter", "grant", "revoke", "show"];

/// The account statement `tokens` hold; None if it is another statement.
pub fn parse(tokens: &Tokens) -> Option<Result<UserStatement>> {
    if !FIRST_WORDS.iter().any(|w| tokens.starts_with(w)) {
        return None;
    }
    let tokens: Vec<Token> = tokens.words().cloned().collect();
    let mut rest = Rest(&tokens);
    let statement = if rest.keywords(&["create", "user"]) {
        let if_not_exists = rest.keywords(&["if", "not", "exists"]);
        Some(
            rest.list(|r| Ok((r.user()?, r.identified()?)))
                .map(|users| UserStatement::Create {
                    if_not_exists,
                    users,
                }),
        )
    } else if rest.keywords(&["drop", "user"]) {
        let if_exists = rest.keywords(&["if", "exists"]);
        Some(
            rest.list(Rest::user)
                .map(|users| UserStatement::Drop { if_exists, users }),
        )
    } else if rest.keywords(&["alter", "user"]) {
        let if_exists = rest.keywords(&["if", "exists"]);
        Some((|| {
            let user = rest.user()?;
            let identified = rest.identified()?;
            if identified.is_none() {
                return Err(syntax_error("ALTER USER changes only the password"));
            }
            Ok(UserStatement::Alter {
                if_exists,
                user,
                identified: identified.unwrap_or_default(),
            })
        })())
    } else if rest.keywords(&["grant"]) {
        Some(rest.privileges(true))
    } else if rest.keywords(&["revoke"]) {
        Some(rest.privileges(false))
    } else if rest.keywords(&["show", "grants"]) {
        Some((|| {
            let user = if rest.keywords(&["for"]) {
                Some(rest.user()?)
            } else {
                None
            };
            Ok(UserStatement::ShowGrants { user })
        })())
    } else {
        return None;
    };
    Some(statement?.and_then(|s| {
        if rest.0.is_empty() {
            Ok(s)
        } else {
            Err(syntax_error(&format!("unexpected {}", rest.0[0])))
        }
    }))
}

struct Rest<'a>(&'a [Token]);

impl Rest<'_> {
    fn peek_keyword(&self, offset: usize, k: &str) -> bool {
        matches!(self.0.get(offset), Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k))
    }

    /// Skips `words` if the tokens start with all of them.
    fn keywords(&mut self, words: &[&str]) -> bool {
        if words
            .iter()
            .enumerate()
            .all(|(i, k)| self.peek_keyword(i, k))
        {
            self.0 = &self.0[words.len()..];
            true
        } else {
            false
        }
    }

    fn next(&mut self) -> Option<&Token> {
        let (first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(first)
    }

    fn skip(&mut self, token: &Token) -> bool {
        if self.0.first() == Some(token) {
            self.0 = &self.0[1..];
            true
        } else {
            false
        }
    }

    /// A name or a string.
    fn text(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::SingleQuotedString(s) | Token::DoubleQuotedString(s)) => Ok(s.clone()),
            Some(Token::Word(w)) => Ok(w.value.clone()),
            other => Err(syntax_error(&format!(
                "expected a name, found {}",
                other.map_or("the end".to_string(), |t| t.to_string())
            ))),
        }
    }

    /// `'user'@'host'`, `user@host` or `'user'`.
    fn user(&mut self) -> Result<UserName> {
        // Unquoted, `user@host` is one word to the tokenizer.
        if let Some(Token::Word(w)) = self.0.first()
            && w.quote_style.is_none()
            && let Some((user, host)) = w.value.split_once('@')
            && !user.is_empty()
        {
            let name = UserName {
                user: user.to_string(),
                host: host.to_string(),
            };
            self.0 = &self.0[1..];
            return Ok(name);
        }
        let user = self.text()?;
        // Unquoted, `@host` is one word to the tokenizer.
        if let Some(Token::Word(w)) = self.0.first()
            && w.quote_style.is_none()
            && let Some(host) = w.value.strip_prefix('@')
        {
            let host = host.to_string();
            self.0 = &self.0[1..];
            return Ok(UserName { user, host });
        }
        let host = if self.skip(&Token::AtSign) {
            self.text()?
        } else {
            "%".to_string()
        };
        if user.is_empty() {
            return Err(syntax_error("an account needs a user name"));
        }
        Ok(UserName { user, host })
    }

    /// `IDENTIFIED [WITH plugin] [BY 'password']`, if there.
    fn identified(&mut self) -> Result<Option<Identified>> {
        if !self.keywords(&["identified"]) {
            return Ok(None);
        }
        let mut identified = Identified::default();
        if self.keywords(&["with"]) {
            let name = self.text()?;
            identified.plugin = Some(AuthPlugin::named(&name).ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "unknown authentication plugin {name}: Sieve has caching_sha2_password and mysql_native_password"
                ))
            })?);
        }
        if self.keywords(&["by"]) {
            match self.next() {
                Some(Token::SingleQuotedString(s) | Token::DoubleQuotedString(s)) => {
                    identified.password = s.clone();
                }
                _ => return Err(syntax_error("IDENTIFIED BY takes the password as a string")),
            }
        }
        Ok(Some(identified))
    }

    fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> Result<T>) -> Result<Vec<T>> {
        let mut items = vec![item(self)?];
        while self.skip(&Token::Comma) {
            items.push(item(self)?);
        }
        Ok(items)
    }

    /// After GRANT (`grant`) or REVOKE: `privileges ON object {TO | FROM} users`.
    fn privileges(&mut self, grant: bool) -> Result<UserStatement> {
        let direction = if grant { "to" } else { "from" };
        let privileges = self.list(|r| {
            if r.keywords(&["all", "privileges"]) || r.keywords(&["all"]) {
                return Ok(Privilege::All);
            }
            match r.next() {
                Some(Token::Word(w)) => Privilege::named(&w.value).ok_or_else(|| {
                    DataFusionError::NotImplemented(format!(
                        "privilege {}: Sieve grants SELECT, INSERT, DELETE and ALL",
                        w.value
                    ))
                }),
                _ => Err(syntax_error("expected a privilege")),
            }
        })?;
        if !self.keywords(&["on"]) {
            return Err(syntax_error("expected ON"));
        }
        self.keywords(&["table"]);
        let on = self.on()?;
        if !self.keywords(&[direction]) {
            return Err(syntax_error(&format!(
                "expected {}",
                direction.to_uppercase()
            )));
        }
        let users = self.list(Rest::user)?;
        Ok(UserStatement::Privileges {
            grant,
            privileges,
            on,
            users,
        })
    }

    fn part(&mut self) -> Result<Option<String>> {
        if self.skip(&Token::Mul) {
            return Ok(None);
        }
        match self.next() {
            // Stored grants write `*` for "every"; a name `*` would read back as that.
            Some(Token::Word(w)) if w.value == "*" => Err(DataFusionError::NotImplemented(
                "privileges on a database or table named * cannot be granted".into(),
            )),
            Some(Token::Word(w)) => Ok(Some(w.value.clone())),
            _ => Err(syntax_error(
                "expected *.*, db.*, db.table or table after ON",
            )),
        }
    }

    fn on(&mut self) -> Result<On> {
        let first = self.part()?;
        if self.skip(&Token::Period) {
            let second = self.part()?;
            if first.is_none() && second.is_some() {
                return Err(syntax_error("*.table names no database"));
            }
            return Ok(On {
                db: Some(first),
                table: second,
            });
        }
        Ok(On {
            db: None,
            table: first,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(sql: &str) -> Option<Result<UserStatement>> {
        super::parse(&Tokens::new(sql).unwrap())
    }

    fn user(user: &str, host: &str) -> UserName {
        UserName {
            user: user.into(),
            host: host.into(),
        }
    }

    #[test]
    fn parses_the_account_statements() {
        assert_eq!(
            parse("CREATE USER 'app'@'%' IDENTIFIED BY 'pw'")
                .unwrap()
                .unwrap(),
            UserStatement::Create {
                if_not_exists: false,
                users: vec![(
                    user("app", "%"),
                    Some(Identified {
                        plugin: None,
                        password: "pw".into()
                    })
                )],
            }
        );
        assert_eq!(
            parse("create user if not exists app@localhost identified with mysql_native_password by 'x'")
                .unwrap()
                .unwrap(),
            UserStatement::Create {
                if_not_exists: true,
                users: vec![(
                    user("app", "localhost"),
                    Some(Identified {
                        plugin: Some(AuthPlugin::Native),
                        password: "x".into()
                    })
                )],
            }
        );
        assert_eq!(
            parse("drop user 'a', 'b'@'10.0.%';").unwrap().unwrap(),
            UserStatement::Drop {
                if_exists: false,
                users: vec![user("a", "%"), user("b", "10.0.%")],
            }
        );
        assert_eq!(
            parse("GRANT SELECT, insert ON db.* TO 'r'@'%'")
                .unwrap()
                .unwrap(),
            UserStatement::Privileges {
                grant: true,
                privileges: vec![Privilege::Select, Privilege::Insert],
                on: On {
                    db: Some(Some("db".into())),
                    table: None
                },
                users: vec![user("r", "%")],
            }
        );
        assert_eq!(
            parse("revoke all privileges on *.* from r")
                .unwrap()
                .unwrap(),
            UserStatement::Privileges {
                grant: false,
                privileges: vec![Privilege::All],
                on: On {
                    db: Some(None),
                    table: None
                },
                users: vec![user("r", "%")],
            }
        );
        assert_eq!(
            parse("grant delete on t to r").unwrap().unwrap(),
            UserStatement::Privileges {
                grant: true,
                privileges: vec![Privilege::Delete],
                on: On {
                    db: None,
                    table: Some("t".into())
                },
                users: vec![user("r", "%")],
            }
        );
        assert_eq!(
            parse("show grants for 'r'@'%'").unwrap().unwrap(),
            UserStatement::ShowGrants {
                user: Some(user("r", "%"))
            }
        );
        assert!(parse("select 1").is_none());
        assert!(parse("grant update on t to r").unwrap().is_err());
        assert!(
            parse("create user 'a' identified by 'x' extra")
                .unwrap()
                .is_err()
        );
        assert!(parse("alter user a").unwrap().is_err());
        assert!(parse("grant select on `*`.* to a").unwrap().is_err());
        assert!(parse("  Show Grants").is_some());
        assert!(parse("create table t (a int)").is_none());
        assert!(matches!(
            parse("grant select on to a").unwrap(),
            Err(DataFusionError::SQL(..))
        ));
    }
}
