//! SQL text as tokens: the one place Sieve tokenizes text and builds a parser, in MySQL's
//! dialect. A statement is tokenized once by [`crate::statement_text`]; the recognisers of what
//! DataFusion's parser does not know (account statements, SHOW, VACUUM, COPY INTO, LOAD DATA,
//! KILL), the complexity guard and the parser itself all work over those tokens, so no module
//! scans the text again.

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::{DFParser, DFParserBuilder, Statement as DFStatement};
use datafusion::sql::sqlparser::dialect::MySqlDialect;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::dialect::script::ByteOffsets;

static DIALECT: MySqlDialect = MySqlDialect {};

/// A text and its tokens, whitespace and comments included (as `Token::Whitespace`), each with
/// where it is in the text.
#[derive(Debug, Clone)]
pub struct Tokens<'a> {
    /// The text the tokens cover; shorter than what was tokenized once a suffix is cut off.
    text: &'a str,
    tokens: Vec<TokenWithSpan>,
}

impl<'a> Tokens<'a> {
    /// Fails as DataFusion's parser does on a text it cannot tokenize (an unclosed quote).
    pub fn new(text: &'a str) -> Result<Self> {
        let tokens = Tokenizer::new(&DIALECT, text)
            .tokenize_with_location()
            .map_err(|e| DataFusionError::SQL(Box::new(ParserError::from(e)), None))?;
        Ok(Self { text, tokens })
    }

    pub fn text(&self) -> &'a str {
        self.text
    }

    /// Every token, whitespace and comments included.
    pub fn all(&self) -> &[TokenWithSpan] {
        &self.tokens
    }

    /// The words, literals and punctuation, without whitespace, comments and semicolons.
    pub fn words(&self) -> impl Iterator<Item = &Token> {
        self.tokens
            .iter()
            .map(|t| &t.token)
            .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
    }

    /// Whether the first word is the unquoted keyword `keyword` (any case).
    pub fn starts_with(&self, keyword: &str) -> bool {
        is_keyword(self.words().next(), keyword)
    }

    /// [`Self::words`], each with the byte offset in the text where it starts.
    pub fn words_at(&self) -> Vec<(&Token, usize)> {
        let mut offsets = ByteOffsets::new(self.text);
        self.tokens
            .iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::SemiColon))
            .map(|t| (&t.token, offsets.of(t.span.start)))
            .collect()
    }

    /// Keeps the tokens before `at` (an index into [`Self::all`]), and the text up to where
    /// token `at` starts.
    pub fn truncate(&mut self, at: usize) {
        if let Some(cut) = self.tokens.get(at) {
            let end = ByteOffsets::new(self.text).of(cut.span.start);
            self.text = self.text[..end].trim_end();
            self.tokens.truncate(at);
        }
    }

    /// Drops the tokens `drop` says to (by index into [`Self::all`]); the text is kept, so
    /// only tokens and not text are read after this.
    pub fn remove(&mut self, drop: impl Fn(usize) -> bool) {
        let mut i = 0;
        self.tokens.retain(|_| {
            i += 1;
            !drop(i - 1)
        });
    }

    /// A parser over the tokens, for statements DataFusion's parser does not know.
    pub fn parser(&self) -> Parser<'static> {
        Parser::new(&DIALECT).with_tokens_with_locations(self.tokens.clone())
    }

    /// The one statement the tokens hold, parsed by DataFusion's parser.
    pub fn parse_one(self) -> Result<DFStatement> {
        let mut statements = self.statement_parser()?.parse_statements()?;
        match (statements.pop_front(), statements.is_empty()) {
            (Some(statement), true) => Ok(statement),
            (None, _) => datafusion::common::plan_err!("no statement to run"),
            (Some(_), false) => {
                datafusion::common::plan_err!("one statement expected; split scripts first")
            }
        }
    }

    fn statement_parser(self) -> Result<DFParser<'static>> {
        DFParserBuilder::new(self.tokens)
            .with_dialect(&DIALECT)
            .build()
    }
}

/// Whether `token` is the unquoted keyword `keyword` (any case).
pub fn is_keyword(token: Option<&Token>, keyword: &str) -> bool {
    matches!(token, Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(keyword))
}
