//! A script (a MySQL multi-statement query, a `sieve sql` file) cut into its statements' own
//! text at the semicolons between them. The text is kept as written, not re-rendered from the
//! syntax tree, so what only the text carries (`… ALLOW FILTERING`, comments) reaches each
//! statement. The tokenizer finds the semicolons, so one inside a string, a quoted name or a
//! comment does not cut.

use datafusion::error::Result;
use datafusion::sql::sqlparser::tokenizer::{Location, Token};

use crate::dialect::tokens::Tokens;

/// The statements of `sql`, each trimmed; stretches holding only whitespace and comments are
/// not statements.
pub fn statement_texts(sql: &str) -> Result<Vec<&str>> {
    let tokens = Tokens::new(sql)?;
    let mut offsets = ByteOffsets::new(sql);
    let mut statements = Vec::new();
    let (mut start, mut has_content) = (0, false);
    for token in tokens.all() {
        match token.token {
            Token::SemiColon => {
                let end = offsets.of(token.span.start);
                if has_content {
                    statements.push(sql[start..end].trim());
                }
                (start, has_content) = (end + 1, false);
            }
            Token::Whitespace(_) => {}
            _ => has_content = true,
        }
    }
    if has_content {
        statements.push(sql[start..].trim());
    }
    Ok(statements)
}

/// Turns the tokenizer's (line, column in characters) locations into byte offsets. Locations
/// asked in order (as tokens come) cost one walk over the text in all: a statement of one long
/// line (150,000 nested parentheses) must not cost a walk from the line's start per token.
pub(crate) struct ByteOffsets<'a> {
    sql: &'a str,
    line_starts: Vec<usize>,
    /// The last location found: its line, its column and its byte offset.
    cursor: (usize, usize, usize),
    /// Characters walked over, for the tests.
    #[cfg(test)]
    steps: usize,
}

impl<'a> ByteOffsets<'a> {
    pub(crate) fn new(sql: &'a str) -> Self {
        let line_starts = std::iter::once(0)
            .chain(sql.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        Self {
            sql,
            line_starts,
            cursor: (0, 0, 0),
            #[cfg(test)]
            steps: 0,
        }
    }

    pub(crate) fn of(&mut self, location: Location) -> usize {
        let line = (location.line as usize).saturating_sub(1);
        let column = (location.column as usize).saturating_sub(1);
        let Some(&line_start) = self.line_starts.get(line) else {
            return self.sql.len();
        };
        let (from_column, from) = match self.cursor {
            (l, c, at) if l == line && c <= column => (c, at),
            _ => (0, line_start),
        };
        let found = self.sql[from..].char_indices().nth(column - from_column);
        #[cfg(test)]
        {
            self.steps += column - from_column;
        }
        let at = found.map_or(self.sql.len(), |(at, _)| from + at);
        self.cursor = (line, column, at);
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semicolons_in_strings_names_and_comments_do_not_cut() {
        let sql = "select 'a;b', `c;d` from t; -- x;y\n select \"é;\" /* ; */ ;\n\n select 3 allow filtering;  -- end";
        assert_eq!(
            statement_texts(sql).unwrap(),
            [
                "select 'a;b', `c;d` from t",
                "-- x;y\n select \"é;\" /* ; */",
                "select 3 allow filtering"
            ]
        );
        assert!(statement_texts(" ; -- nothing\n;").unwrap().is_empty());
        assert_eq!(statement_texts("select 1").unwrap(), ["select 1"]);
    }

    #[test]
    fn offsets_in_order_walk_the_text_once() {
        let n = 150_000;
        let sql = format!("select {}é{};\nselect 2;", "(".repeat(n), ")".repeat(n));
        let tokens = Tokens::new(&sql).unwrap();
        let mut offsets = ByteOffsets::new(&sql);
        for token in tokens.all() {
            let at = offsets.of(token.span.start);
            if token.token == Token::SemiColon {
                assert_eq!(&sql[at..at + 1], ";");
            }
        }
        assert!(
            offsets.steps <= sql.chars().count(),
            "{} steps",
            offsets.steps
        );
        // Out of order still answers right, from the line's start.
        let first_paren = Location::new(1, 8);
        assert_eq!(offsets.of(first_paren), 7);
    }
}
