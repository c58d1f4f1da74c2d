//! The words ranked recall compares: lower-cased Unicode words, split at every character that is
//! not a letter or digit, and inside a word also at a lower→upper case change and at a
//! letter↔digit change, each part kept beside the whole word (`ApiError` → `apierror`, `api`,
//! `error`; `http2` → `http2`, `http`, `2`). A word matches another by its English Snowball stem
//! (`tests`, `testing` → `test`).

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashMap as HashMap;

/// Calls `each` with every token of `text`, lower-cased: each word, then its parts when it has
/// more than one.
///
/// Words of ASCII letters and digits (nearly every word of a repository's knowledge) take a
/// byte-wise path: lower-cased and cut in one pass, no character decoded, nothing allocated. A run
/// holding any other byte goes to the general path ([`each_token_general`]), which splits it as
/// it would the whole text: an ASCII byte that is not a letter or digit separates words in both.
pub fn each_token(text: &str, mut each: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut lower = String::new();
    let mut cuts: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii() && !bytes[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
            i += 1;
        }
        if i < bytes.len() && !bytes[i].is_ascii() {
            while i < bytes.len() && (!bytes[i].is_ascii() || bytes[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            // Both ends are at an ASCII byte or the text's ends: character boundaries.
            each_token_general(&text[start..i], &mut lower, &mut each);
            continue;
        }
        let word = &text[start..i];
        lower.clear();
        lower.push_str(word);
        lower.make_ascii_lowercase();
        each(&lower);
        cuts.clear();
        let w = word.as_bytes();
        for k in 1..w.len() {
            let (p, c) = (w[k - 1], w[k]);
            if (p.is_ascii_lowercase() && c.is_ascii_uppercase())
                || (p.is_ascii_alphabetic() && c.is_ascii_digit())
                || (p.is_ascii_digit() && c.is_ascii_alphabetic())
            {
                cuts.push(k);
            }
        }
        if cuts.is_empty() {
            continue;
        }
        let mut from = 0;
        for &to in cuts.iter().chain([&w.len()]) {
            each(&lower[from..to]);
            from = to;
        }
    }
}

/// [`each_token`] for any text: words split at every character that is not a letter or digit,
/// `lower` the buffer each token is lower-cased into.
fn each_token_general(text: &str, lower: &mut String, each: &mut impl FnMut(&str)) {
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        lower_into(word, lower);
        each(lower);
        if !has_cut(word) {
            continue;
        }
        let mut start = 0;
        for end in cuts(word).into_iter().chain([word.len()]) {
            lower_into(&word[start..end], lower);
            each(lower);
            start = end;
        }
    }
}

/// Writes `word` lower-cased into `out` (ASCII without decoding characters).
fn lower_into(word: &str, out: &mut String) {
    out.clear();
    if word.is_ascii() {
        out.push_str(word);
        out.make_ascii_lowercase();
    } else {
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
}

/// Returns whether `word` splits into parts (see [`cuts`]), without allocating.
fn has_cut(word: &str) -> bool {
    let mut prev: Option<char> = None;
    word.chars().any(|c| {
        let cut = prev.is_some_and(|p| {
            (p.is_lowercase() && c.is_uppercase())
                || (p.is_alphabetic() && c.is_numeric())
                || (p.is_numeric() && c.is_alphabetic())
        });
        prev = Some(c);
        cut
    })
}

/// Returns the byte offsets inside `word` where a part starts: a lower-case letter followed by an
/// upper-case one, or a letter next to a digit.
fn cuts(word: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut prev: Option<char> = None;
    for (i, c) in word.char_indices() {
        if let Some(p) = prev {
            let case = p.is_lowercase() && c.is_uppercase();
            let digit = (p.is_alphabetic() && c.is_numeric()) || (p.is_numeric() && c.is_alphabetic());
            if case || digit {
                out.push(i);
            }
        }
        prev = Some(c);
    }
    out
}

/// Returns the tokens of `text` (see [`each_token`]).
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_token(text, |t| out.push(t.to_string()));
    out
}

/// English words too common to say what a question is about (`how do we run the tests`: only
/// `run` and `tests` are), lower-cased and sorted for a binary search.
const STOP_WORDS: [&str; 129] = [
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does",
    "doing", "down", "during", "each", "few", "for", "from", "further", "good", "great", "had", "has", "have",
    "having", "he", "hello", "her", "here", "hers", "hey", "hi", "him", "his", "how", "i", "if", "in", "into", "is",
    "it", "its", "just", "me", "more", "most", "my", "no", "nor", "not", "now", "of", "off", "ok", "okay", "on",
    "once", "only", "or", "other", "our", "ours", "out", "over", "own", "please", "same", "she", "should", "so",
    "some", "such", "than", "thank", "thanks", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "through", "to", "too", "under", "until", "up", "us", "very", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "whom", "why", "will", "with", "would", "yes", "you", "your", "yours",
];

/// Returns whether `token` (lower-cased) is an English stop word (see [`STOP_WORDS`]).
pub fn is_stop_word(token: &str) -> bool {
    STOP_WORDS.binary_search(&token).is_ok()
}

/// The English Snowball stemmer, remembering the stems it computed (a corpus repeats its words).
pub struct Stems {
    stemmer: Stemmer,
    memo: HashMap<String, String>,
}

impl Default for Stems {
    fn default() -> Self {
        Stems { stemmer: Stemmer::create(Algorithm::English), memo: HashMap::default() }
    }
}

impl Stems {
    /// Returns the stem of a lower-cased token.
    pub fn stem(&mut self, token: &str) -> &str {
        if !self.memo.contains_key(token) {
            let stem = self.stemmer.stem(token).into_owned();
            self.memo.insert(token.to_string(), stem);
        }
        self.memo.get(token).map(String::as_str).unwrap_or_default()
    }

    /// Returns the stem of a lower-cased token without remembering it: for a corpus, whose
    /// vocabulary stems each word once anyway (a memo would hold a second copy of it).
    pub fn stem_once<'t>(&self, token: &'t str) -> std::borrow::Cow<'t, str> {
        self.stemmer.stem(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_and_found() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]), "sort STOP_WORDS");
        assert!(is_stop_word("the") && is_stop_word("thanks") && !is_stop_word("tests") && !is_stop_word("run"));
    }

    #[test]
    fn words_split_at_case_and_digit_changes_and_stay_whole() {
        assert_eq!(tokens("ApiError"), ["apierror", "api", "error"]);
        assert_eq!(tokens("http2 v2"), ["http2", "http", "2", "v2", "v", "2"]);
        assert_eq!(tokens("max_tokens src/api"), ["max", "tokens", "src", "api"]);
        assert_eq!(tokens("HTTP JSONParser"), ["http", "jsonparser"], "only a lower→upper change splits");
        assert_eq!(tokens("Run `cargo nextest run`."), ["run", "cargo", "nextest", "run"]);
        assert_eq!(tokens("Über café 3.12.1"), ["über", "café", "3", "12", "1"]);
        assert!(tokens(" -- ").is_empty());
    }

    /// The byte-wise path gives what the general one gives, on any mix of ASCII and other text.
    #[test]
    fn the_ascii_path_tokenizes_as_the_general_path() {
        use proptest::prelude::*;
        let general = |text: &str| {
            let mut out = Vec::new();
            each_token_general(text, &mut String::new(), &mut |t: &str| out.push(t.to_string()));
            out
        };
        proptest!(|(text in "[a-zA-Z0-9 _./:ÉéßİÅ١٢三-]{0,40}")| {
            prop_assert_eq!(tokens(&text), general(&text));
        });
        for text in ["ApiError2x", "x", "café3Latte HTTP2 über-v2", "İstanbul", "a\u{0301}b", "٣x"] {
            assert_eq!(tokens(text), general(text), "{text}");
        }
    }

    #[test]
    fn stems_are_english_snowball() {
        let mut s = Stems::default();
        for (word, stem) in [("tests", "test"), ("testing", "test"), ("running", "run"), ("deploys", "deploy")] {
            assert_eq!(s.stem(word), stem, "{word}");
        }
        assert_eq!(s.stem("8080"), "8080");
        assert_eq!(s.stem("nextest"), "nextest");
    }
}
