//! Salient tokens: the parts of a fact that make it this fact and not a neighbour (a port, a
//! version, a path, an identifier). Dedup-on-write consolidates a new text into a similar memory
//! only when every salient token of the memory also occurs in the new text, so "listens on port
//! 8080" never turns into "listens on port 8081" however close the fuzzy score is.
//!
//! The tokens of a text, compared case-insensitively:
//! - every backticked span (`` `cargo nextest run` ``);
//! - every run of digits with its separators that stands as a word of its own (`8080`, `3.12.1`,
//!   `10:30`);
//! - every other word that contains a digit, `_`, `/`, `::` or an inner upper-case letter, whole
//!   (`v2`, `max_tokens`, `src/api`, `ApiError`). An inner upper-case letter is one that follows a
//!   lower-case letter (`ApiError`, `useEffect`, `iOS`): an all-capitals word (`README`, `ΟΔΟΣ`)
//!   is not salient for that alone.
//!
//! A token occurs in a text when it is found there ignoring case and backticks, with no letter or
//! digit right before or after it (`8080` does not occur in `18080`). Case is ignored by Unicode
//! lower-casing of the whole text (`str::to_lowercase`, which writes a final sigma where a word
//! ends), so `ΟΔΟΣ` occurs in `οδος`.

/// Returns the salient tokens of `text` in their first spelling, without backticks, each once
/// (compared case-insensitively), in the order they appear.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut push = |token: &str| {
        let token = token.trim();
        if !token.is_empty() && seen.insert(comparable(token)) {
            out.push(token.to_string());
        }
    };
    let (spans, rest) = backticked(text);
    for span in spans {
        push(span);
    }
    for word in rest.split_whitespace() {
        let word = trim_punctuation(word);
        if is_salient_word(word) {
            push(word);
        }
    }
    out
}

/// Returns a word without the sentence punctuation around it: quotes and brackets on either side,
/// and `,;!?` or a final `.` or `:` at its end (a path's `./`, `/` or `~/` and a trailing `::`
/// or `/` stay: they are part of the token).
fn trim_punctuation(word: &str) -> &str {
    let mut w = word.trim_start_matches(['"', '\'', '(', '[', '{', '<', '`']);
    loop {
        let before = w;
        w = w.trim_end_matches(['"', '\'', ')', ']', '}', '>', ',', ';', '!', '?', '`']);
        if w.ends_with(':') && !w.ends_with("::") || w.ends_with('.') {
            w = &w[..w.len() - 1];
        }
        if w == before {
            return w;
        }
    }
}

/// Returns the salient tokens of `existing` that do not occur in `new`, and those of `new` that
/// do not occur in `existing`: empty first list = `new` restates or refines `existing`.
pub fn differences(existing: &str, new: &str) -> (Vec<String>, Vec<String>) {
    Facts::new(existing).differences(&Facts::new(new))
}

/// A text's salient tokens with what [`differences`] looks them up in, read once for comparing
/// the text with many others (the text's comparable form only once another text's tokens are
/// looked up in it).
pub struct Facts<'t> {
    /// The tokens, and each in the form it is looked for in.
    tokens: Vec<(String, String)>,
    source: &'t str,
    text: std::sync::OnceLock<Comparable>,
}

impl<'t> Facts<'t> {
    pub fn new(text: &'t str) -> Facts<'t> {
        let tokens = self::tokens(text)
            .into_iter()
            .map(|t| {
                let c = comparable(&t);
                (t, c)
            })
            .collect();
        Facts { tokens, source: text, text: std::sync::OnceLock::new() }
    }

    fn text(&self) -> &Comparable {
        self.text.get_or_init(|| Comparable::new(self.source))
    }

    /// Returns the salient tokens, in their first spelling.
    pub fn tokens(&self) -> impl Iterator<Item = &str> {
        self.tokens.iter().map(|(t, _)| t.as_str())
    }

    /// Returns the tokens of this text that do not occur in `other`, in order.
    pub fn missing_from<'a>(&'a self, other: &'a Facts<'_>) -> impl Iterator<Item = &'a str> {
        self.tokens.iter().filter(|(_, c)| !other.text().holds_comparable(c)).map(|(t, _)| t.as_str())
    }

    /// Returns [`differences`] of this text (`existing`) and `new`.
    pub fn differences(&self, new: &Facts<'_>) -> (Vec<String>, Vec<String>) {
        let own = |a: &Facts<'_>, b: &Facts<'_>| a.missing_from(b).map(str::to_string).collect();
        (own(self, new), own(new, self))
    }
}

/// A text in the form tokens are looked for in (lower-cased, no backticks), with, when it is long,
/// its words (maximal runs of letters and digits): a token of letters and digits only occurs
/// exactly when it is one of them, found without scanning the text. A short text is scanned (a
/// set of its words would cost more than the scans, in time and memory).
struct Comparable {
    text: String,
    words: Option<std::collections::HashSet<String>>,
}

/// The length from which a text's words are put in a set.
const LONG_TEXT: usize = 4096;

impl Comparable {
    fn new(text: &str) -> Comparable {
        let text = comparable(text);
        let words = (text.len() >= LONG_TEXT).then(|| {
            text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_string).collect()
        });
        Comparable { text, words }
    }

    /// Returns whether `token` occurs in the text (see [`occurs`]).
    #[cfg(test)]
    fn holds(&self, token: &str) -> bool {
        self.holds_comparable(&comparable(token))
    }

    /// Returns whether `token`, in comparable form, occurs in the text.
    fn holds_comparable(&self, token: &str) -> bool {
        match &self.words {
            Some(words) if token.chars().all(char::is_alphanumeric) => token.is_empty() || words.contains(token),
            _ => occurs(token, &self.text),
        }
    }
}

/// Why a save left its best match alone and created a new memory (the near miss's `why`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// A salient token of the match is missing from the new text.
    DifferentFacts,
    /// The match is `decay_protected`.
    Protected,
    /// The match is a `core_context` memory.
    CoreContext,
    /// A save over MCP, and no agent wrote the match.
    WrittenByPerson,
}

impl Why {
    /// Returns the JSON value: `different facts`, `protected`, `core context`, `written by a person`.
    pub fn as_str(self) -> &'static str {
        match self {
            Why::DifferentFacts => "different facts",
            Why::Protected => "protected",
            Why::CoreContext => "core context",
            Why::WrittenByPerson => "written by a person",
        }
    }
}

/// A similar memory a save did not consolidate into, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct NearMiss {
    pub similarity: f64,
    /// Salient tokens of the existing memory the new text lacks.
    pub only_in_existing: Vec<String>,
    /// Salient tokens of the new text the existing memory lacks.
    pub only_in_new: Vec<String>,
    pub why: Why,
}

/// What a save does with its best match (a candidate over the similarity threshold).
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The new text restates or refines the match: consolidate into it.
    Consolidate,
    /// The match may not be rewritten and already says the same: write nothing.
    Exists,
    /// Create a new memory and report the match.
    NearMiss(NearMiss),
}

/// What a save did (or, in a dry run, would do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaveAction {
    /// Created a new memory or record.
    Create,
    /// Consolidated into an existing one.
    Consolidate,
    /// Wrote nothing: an existing one kb may not rewrite already says it.
    Exists,
}

impl SaveAction {
    /// Returns the JSON `action`: `saved`, `consolidated`, `exists`, or with `dry_run`
    /// `would_save`, `would_consolidate`, `exists`.
    pub fn as_str(self, dry_run: bool) -> &'static str {
        match (self, dry_run) {
            (SaveAction::Create, false) => "saved",
            (SaveAction::Create, true) => "would_save",
            (SaveAction::Consolidate, false) => "consolidated",
            (SaveAction::Consolidate, true) => "would_consolidate",
            (SaveAction::Exists, _) => "exists",
        }
    }
}

/// Judges a save whose best match says `existing` with score `similarity`; `kept` says why the
/// match may not be rewritten at all (protected, core context, written by a person), if so.
pub fn judge(existing: &str, new: &str, similarity: f64, kept: Option<Why>) -> Verdict {
    if kept.is_some() && same_words(existing, new) {
        return Verdict::Exists;
    }
    let (only_in_existing, only_in_new) = differences(existing, new);
    let why = match kept {
        Some(why) => why,
        None if only_in_existing.is_empty() => return Verdict::Consolidate,
        None => Why::DifferentFacts,
    };
    Verdict::NearMiss(NearMiss { similarity, only_in_existing, only_in_new, why })
}

/// Returns whether two texts are equal after lower-casing and collapsing white space.
pub fn same_words(a: &str, b: &str) -> bool {
    let words = |s: &str| s.split_whitespace().map(str::to_lowercase).collect::<Vec<_>>();
    words(a) == words(b)
}

/// Splits out the backticked spans of `text`: the spans' contents, and the text with every span
/// replaced by a space. An unpaired backtick is left in the text.
fn backticked(text: &str) -> (Vec<&str>, String) {
    let mut spans = Vec::new();
    let mut rest = String::with_capacity(text.len());
    let mut tail = text;
    while let Some(open) = tail.find('`') {
        let Some(len) = tail[open + 1..].find('`') else { break };
        rest.push_str(&tail[..open]);
        rest.push(' ');
        spans.push(&tail[open + 1..open + 1 + len]);
        tail = &tail[open + 1 + len + 1..];
    }
    rest.push_str(tail);
    (spans, rest)
}

/// Returns whether a word (its outer punctuation trimmed) is salient: a run of digits with its
/// separators, or a word holding a digit, `_`, `/`, `::` or an inner upper-case letter.
fn is_salient_word(word: &str) -> bool {
    if !word.chars().any(char::is_alphanumeric) {
        return false;
    }
    let has_digit = word.chars().any(|c| c.is_ascii_digit());
    // An upper-case letter right after a lower-case one (`ApiError`, `iOS`; not `README`).
    let inner_upper = word.chars().zip(word.chars().skip(1)).any(|(a, b)| a.is_lowercase() && b.is_uppercase());
    has_digit || inner_upper || word.contains('_') || word.contains('/') || word.contains("::")
}

/// Returns `text` with its backticks removed, lower-cased as a whole (a final sigma stays final):
/// the form occurrence is checked in.
fn comparable(text: &str) -> String {
    let unticked: std::borrow::Cow<'_, str> =
        if text.contains('`') { text.replace('`', "").into() } else { text.into() };
    unticked.to_lowercase()
}

/// Returns whether `token` (comparable form) occurs in `text` (comparable form) with no letter
/// or digit right before or after it.
fn occurs(token: &str, text: &str) -> bool {
    if token.is_empty() {
        return true;
    }
    let edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
    let needs_edge_before = token.chars().next().is_some_and(char::is_alphanumeric);
    let needs_edge_after = token.chars().next_back().is_some_and(char::is_alphanumeric);
    let mut from = 0;
    while let Some(at) = text[from..].find(token) {
        let start = from + at;
        let end = start + token.len();
        let before_ok = !needs_edge_before || edge(text[..start].chars().next_back());
        let after_ok = !needs_edge_after || edge(text[end..].chars().next());
        if before_ok && after_ok {
            return true;
        }
        // Step past the first character of this match.
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salient_tokens_are_numbers_identifiers_paths_and_code() {
        assert_eq!(tokens("The api service listens on port 8080."), ["8080"]);
        assert_eq!(tokens("Python 3.12.1 at 10:30, see v2 (not 2)"), ["3.12.1", "10:30", "v2", "2"]);
        assert_eq!(
            tokens("Set max_tokens in src/api for ApiError and std::io; run `cargo nextest run`"),
            ["cargo nextest run", "max_tokens", "src/api", "ApiError", "std::io"]
        );
        assert_eq!(tokens("plain words only, Capitalised at the start"), Vec::<String>::new());
        assert_eq!(tokens("8080 and 8080 and `8080`"), ["8080"], "each token once");
        assert_eq!(tokens("an unpaired ` backtick v1"), ["v1"]);
        assert_eq!(
            tokens("Run ./build.sh, then ./logs/ and /etc (see Foo::) at ~/.cache."),
            ["./build.sh", "./logs/", "/etc", "Foo::", "~/.cache"],
            "a path keeps its edges"
        );
        assert_eq!(tokens("a / b"), Vec::<String>::new(), "a lone slash is no token");
    }

    #[test]
    fn an_inner_capital_follows_a_lower_case_letter() {
        assert_eq!(tokens("ApiError in useEffect on iOS"), ["ApiError", "useEffect", "iOS"]);
        assert_eq!(tokens("Read the README on the ΟΔΟΣ page, see NASA"), Vec::<String>::new());
        assert_eq!(tokens("OAuth and McDonald"), ["McDonald"], "`OA` is two capitals; `cD` is an inner one");
    }

    #[test]
    fn case_is_folded_over_the_whole_text_final_sigma_included() {
        assert!(Comparable::new("η οδος είναι κλειστή").holds("ΟΔΟΣ"));
        assert!(Comparable::new("Η ΟΔΟΣ ΕΙΝΑΙ ΚΛΕΙΣΤΗ").holds("οδος"));
        let (old, new) = differences("Use `ΟΔΟΣ` for the street", "use `οδος` for the street");
        assert!(old.is_empty() && new.is_empty(), "{old:?} {new:?}");
        assert!(occurs(&comparable("ΟΔΟΣ"), &comparable("Η ΟΔΟΣ.")));
    }

    #[test]
    fn paths_that_differ_are_different_facts() {
        let (old, new) = differences("Run ./build.sh before every commit", "Run ./deploy.sh before every commit");
        assert_eq!((old, new), (vec!["./build.sh".to_string()], vec!["./deploy.sh".to_string()]));
        let (old, _) = differences("Logs go to ./logs/ daily", "Logs go to ./tmp/ daily");
        assert_eq!(old, ["./logs/"]);
        let (old, _) = differences("Run ./build.sh first.", "Always run `./build.sh` first");
        assert!(old.is_empty(), "{old:?}");
    }

    #[test]
    fn a_long_text_looks_words_up_as_a_short_one_scans_them() {
        let pad = " filler".repeat(LONG_TEXT / 7 + 1);
        for (token, text) in
            [("8080", "port 8080."), ("8080", "port 18080"), ("v2", "v2x v2"), ("é1", "xé1 y"), ("", "a")]
        {
            let (short, long) = (Comparable::new(text), Comparable::new(&format!("{text}{pad}")));
            assert!(short.words.is_none() && long.words.is_some());
            assert_eq!(short.holds(token), long.holds(token), "{token:?} in {text:?}");
        }
    }

    #[test]
    fn many_tokens_are_compared_by_lookup() {
        // 20,000 distinct numbers: a scan per token took 40 s here; a lookup takes milliseconds.
        let text: String = (0..20_000).map(|i| format!("{i} ")).collect();
        let (old, new) = differences(&text, &text);
        assert!(old.is_empty() && new.is_empty());
        let (old, new) = differences(&text, &text.replace("19999", "20000"));
        assert_eq!((old, new), (vec!["19999".to_string()], vec!["20000".to_string()]));
    }

    #[test]
    fn a_token_occurs_only_as_a_whole_word_ignoring_case_and_backticks() {
        assert!(occurs("8080", "port 8080."));
        assert!(!occurs("8080", "port 18080"));
        assert!(!occurs("8080", "port 80801"));
        assert!(occurs("apierror", "the apierror type"));
        assert!(occurs("max_tokens", "max_tokens_limit"), "an underscore is neither letter nor digit");
        assert!(occurs("cargo nextest run", &comparable("Run `cargo nextest run` in CI")));
        assert!(occurs("8080", "18080 or 8080"), "a later match counts");
        assert!(occurs("é1", "x é1 y") && !occurs("é1", "xé1"));
    }

    #[test]
    fn a_restatement_keeps_every_token_and_a_different_fact_does_not() {
        let (old, new) = differences("The api service listens on port 8080", "The web service listens on port 8081");
        assert_eq!((old, new), (vec!["8080".to_string()], vec!["8081".to_string()]));
        let (old, new) =
            differences("The API listens on port 8080", "The api service listens on port 8080 behind `nginx`");
        assert!(old.is_empty(), "a refinement keeps every token of the old text");
        assert_eq!(new, ["nginx"]);
        let (old, _) = differences("Use `ApiError` everywhere", "use apierror everywhere");
        assert!(old.is_empty(), "case and backticks are ignored");
    }

    #[test]
    fn the_verdict_follows_the_tokens_and_what_may_be_rewritten() {
        let api = "The api service listens on port 8080";
        assert_eq!(judge(api, "the API service listens on port 8080 (http)", 90.0, None), Verdict::Consolidate);
        let Verdict::NearMiss(miss) = judge(api, "The web service listens on port 8081", 86.1, None) else {
            panic!("a different port is a different fact")
        };
        assert_eq!(
            (miss.why, miss.only_in_existing, miss.only_in_new),
            (Why::DifferentFacts, vec!["8080".into()], vec!["8081".into()])
        );
        assert_eq!(judge(api, "the  API service\nlistens on port 8080", 99.0, Some(Why::Protected)), Verdict::Exists);
        let Verdict::NearMiss(miss) =
            judge(api, "The api service listens on port 8080 now", 95.0, Some(Why::CoreContext))
        else {
            panic!("a kept memory is never rewritten")
        };
        assert_eq!(miss.why, Why::CoreContext);
        assert!(miss.only_in_existing.is_empty());
    }
}
