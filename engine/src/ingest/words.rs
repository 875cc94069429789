//! Walking a statement sqlparser does not know (LOAD DATA, COPY INTO) over its tokens: bare
//! words in any case, quoted strings (unescaped as MySQL does: `'\t'` is a tab), names; errors
//! say which statement expected what.

use datafusion::common::plan_err;
use datafusion::error::Result;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Word};

use crate::catalog::table_name::TableName;
use crate::dialect::tokens::{Tokens, is_keyword};

pub struct Words {
    pub parser: Parser<'static>,
    statement: &'static str,
}

/// Whether the statement starts with the two words `first` and `second`: a statement of the
/// kind [`Words`] walks.
pub fn starts_with(statement: &Tokens, first: &str, second: &str) -> bool {
    let mut words = statement.words();
    is_keyword(words.next(), first) && is_keyword(words.next(), second)
}

impl Words {
    pub fn new(tokens: &Tokens, statement: &'static str) -> Self {
        Self {
            parser: tokens.parser(),
            statement,
        }
    }

    /// Takes the next token if it is the bare word `word` (any case).
    pub fn word(&mut self, word: &str) -> bool {
        let is = matches!(
            self.parser.peek_token().token,
            Token::Word(Word { ref value, quote_style: None, .. }) if value.eq_ignore_ascii_case(word)
        );
        if is {
            self.parser.next_token();
        }
        is
    }

    pub fn expect(&mut self, word: &str) -> Result<()> {
        if self.word(word) {
            return Ok(());
        }
        self.expected(word)
    }

    pub fn expected<T>(&mut self, what: &str) -> Result<T> {
        let found = self.parser.peek_token();
        plan_err!("{}: expected {what}, found {found}", self.statement)
    }

    pub fn string(&mut self, what: &str) -> Result<String> {
        match self.parser.next_token().token {
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Ok(s),
            found => plan_err!(
                "{}: expected {what} as a quoted string, found {found}",
                self.statement
            ),
        }
    }

    /// A string of at most one character (MySQL's rule for ENCLOSED BY and ESCAPED BY).
    pub fn character(&mut self, clause: &str) -> Result<Option<u8>> {
        let text = self.string(clause)?;
        match text.as_bytes() {
            [] => Ok(None),
            [c] => Ok(Some(*c)),
            _ => plan_err!("{clause} takes one character (or ''), got '{text}'"),
        }
    }

    /// An identifier, a `@variable`, or a word.
    pub fn name(&mut self, what: &str) -> Result<String> {
        match self.parser.next_token().token {
            Token::Word(word) => Ok(word.value),
            Token::SingleQuotedString(s) => Ok(s),
            found => plan_err!("{}: expected {what}, found {found}", self.statement),
        }
    }

    /// A table's name, `table` or `database.table`.
    pub fn table_name(&mut self, default_database: &str) -> Result<TableName> {
        let name = self.parser.parse_object_name(false)?;
        let parts: Vec<String> = name
            .0
            .iter()
            .filter_map(|p| p.as_ident())
            .map(|i| i.value.clone())
            .collect();
        TableName::from_parts(&parts, default_database)
    }

    /// The statement's end (semicolons allowed).
    pub fn end(&mut self) -> Result<()> {
        while self.parser.consume_token(&Token::SemiColon) {}
        if self.parser.peek_token().token != Token::EOF {
            return self.expected("the end of the statement");
        }
        Ok(())
    }
}
