//! Text point lookups recognised once. Reading a statement's text (the front door: tokenizing,
//! parsing, rewriting for MySQL) and recognising its lookup on every execution would cost a
//! served text lookup about as much CPU as everything else the short path does for it. The
//! lookup a text was recognised as is kept by the exact text, shared by the engine's sessions,
//! and an execution of the same text goes straight to [`Session::short_path`], which binds it
//! to the table's current version as a prepared lookup is. Keyed by the text rather than its shape with the
//! literals taken out: finding the shape would mean tokenizing it, most of a parse's cost.
//!
//! What a recognised lookup means does not depend on the session (an unqualified table is
//! resolved against the session's database when it runs), except through identifier
//! normalisation, which the entry records and a session with the other setting does not use.

use quick_cache::Weighter;
use quick_cache::sync::Cache;

use crate::session::short_path::PointLookup;

/// Texts kept, at most: a server's hot lookup texts (a thousand hot keys are a thousand texts).
const TEXTS: usize = 10_000;
/// Bytes of text kept, at most.
const TEXT_BYTES: u64 = 8 << 20;
/// A longer text is not kept: it is not a lookup worth the memory (an IN list of thousands).
pub const MAX_TEXT: usize = 2048;

/// What a text was recognised as.
#[derive(Debug, Clone)]
pub(crate) struct Recognized {
    pub lookup: PointLookup,
    /// Whether the text ended with ALLOW FILTERING.
    pub allow_filtering: bool,
    /// The identifier normalisation it was recognised with.
    pub normalize: bool,
}

#[derive(Clone)]
struct TextBytes;

impl Weighter<String, Recognized> for TextBytes {
    fn weight(&self, text: &String, _: &Recognized) -> u64 {
        // The lookup holds names and literals of about the text's size.
        2 * text.len() as u64 + 64
    }
}

pub(crate) struct RecognizedTexts {
    cache: Cache<String, Recognized, TextBytes>,
}

impl Default for RecognizedTexts {
    fn default() -> Self {
        Self {
            cache: Cache::with_weighter(TEXTS, TEXT_BYTES, TextBytes),
        }
    }
}

impl std::fmt::Debug for RecognizedTexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecognizedTexts")
            .field("texts", &self.cache.len())
            .finish()
    }
}

impl RecognizedTexts {
    pub fn get(&self, text: &str, normalize: bool) -> Option<Recognized> {
        self.cache.get(text).filter(|r| r.normalize == normalize)
    }

    pub fn insert(&self, text: &str, recognized: Recognized) {
        if text.len() <= MAX_TEXT {
            self.cache.insert(text.to_string(), recognized);
        }
    }

    pub fn remove(&self, text: &str) {
        self.cache.remove(text);
    }
}
