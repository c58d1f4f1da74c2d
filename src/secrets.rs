//! Secret detection and redaction for text kb is asked to store.
//!
//! This module owns the list of secret rules (ids such as `github-pat` or
//! `generic-api-key` are user-visible), the scanner that finds them in a text
//! ([`scan`]) and the redactor that replaces each one with
//! `[REDACTED:<rule>]` ([`redact`]). The patterns follow gitleaks and
//! detect-secrets, adapted to the `regex` crate.
//!
//! Cost model: every rule carries lowercase keywords; a rule's regex runs only
//! when one of its keywords occurs in an ASCII-lowercased copy of the text, so
//! ordinary prose runs few or no regexes. Each regex is compiled once, lazily,
//! the first time a scan needs it, so commands that never scan never pay for
//! compiling them.
//!
//! Every candidate is considered: when a rule's check rejects a match (a
//! placeholder, an identifier, an example key), the search resumes inside the
//! rejected match instead of after it, so a rejected capture can never hide a
//! real secret that overlaps it (`creds: aws_secret_access_key = <secret>`,
//! where `creds:` first captures the key's name).

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

/// One secret found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Id of the rule that matched, e.g. `github-pat`.
    pub rule: &'static str,
    /// Byte offset where the secret starts (always on a char boundary).
    pub start: usize,
    /// Byte offset just past the secret (always on a char boundary).
    pub end: usize,
}

/// How the matches of a rule's regex become findings.
///
/// For the kinds that check a match, the secret is capture group 1 if the
/// regex has one, else the whole match; a match whose secret fails the check
/// is dropped and the search resumes inside it (see [`scan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Each match is a finding.
    Plain,
    /// An AWS access key id, unless it ends in `EXAMPLE` as AWS's documented
    /// examples do (`AKIAIOSFODNN7EXAMPLE`; gitleaks allows `.+EXAMPLE$`).
    AwsAccessKey,
    /// A JWT, kept only if its header and payload decode to JSON objects.
    Jwt,
    /// A PEM private-key header; the finding runs to the block's END line,
    /// or to the end of the text when the block is truncated.
    KeyHeader,
    /// A PuTTY key-file header; the finding runs to the end of the
    /// `Private-MAC` line, or to the end of the text.
    PuttyHeader,
    /// The password of a URL's userinfo (`scheme://user:password@host`), kept
    /// unless it is a placeholder (see [`is_url_password`]). A fallback rule.
    UrlCredentials,
    /// The token of an HTTP `Bearer` authorization, kept only if it looks
    /// random (see [`plausible_bearer_token`]). A fallback rule.
    Bearer,
    /// gitleaks' generic assignment rule; group 1 is kept only if it passes
    /// [`plausible_generic_secret`]. A fallback rule.
    Generic,
}

impl Check {
    /// Whether a match whose secret is `value` is a finding.
    fn accepts(self, value: &str) -> bool {
        match self {
            Check::Plain | Check::KeyHeader | Check::PuttyHeader => true,
            Check::AwsAccessKey => !value.ends_with("EXAMPLE"),
            Check::Jwt => is_plausible_jwt(value),
            Check::UrlCredentials => is_url_password(value),
            Check::Bearer => plausible_bearer_token(value),
            Check::Generic => plausible_generic_secret(value),
        }
    }

    /// Whether the rule only fills in for the specific ones: its findings are
    /// dropped wherever they overlap a specific rule's finding, so a GitHub
    /// token in `GITHUB_TOKEN=…`, a URL or a `Bearer` header is reported as
    /// `github-pat`.
    fn is_fallback(self) -> bool {
        matches!(self, Check::UrlCredentials | Check::Bearer | Check::Generic)
    }
}

/// One detection rule.
struct Rule {
    /// User-visible rule id.
    id: &'static str,
    /// Lowercase substrings, one of which must occur in the lowercased text
    /// for the regex to run at all.
    keywords: &'static [&'static str],
    /// How matches become findings.
    kind: Check,
    /// The compiled regex, built on first use.
    regex: LazyLock<Regex>,
}

/// Compiles a built-in pattern. Every pattern is compiled by a unit test, so
/// the `expect` cannot fire in a tested build.
fn compile(pattern: &str) -> Regex {
    Regex::new(pattern).expect("built-in secret pattern compiles")
}

/// Builds a [`Rule`] whose regex is compiled lazily from a literal pattern.
macro_rules! rule {
    ($id:literal, $kind:expr, $keywords:expr, $pattern:literal) => {
        Rule { id: $id, keywords: $keywords, kind: $kind, regex: LazyLock::new(|| compile($pattern)) }
    };
}

/// Every rule, specific ones first, then the fallback ones (see
/// [`Check::is_fallback`]); on a tie the earlier rule wins.
///
/// Notes on the adaptation from gitleaks: `\b` is written `(?-u:\b)` (an
/// ASCII word boundary, so a token glued to CJK text is still found and the
/// fast DFA engine can be used), `\d` is `[0-9]` and `\w` is `[0-9A-Za-z_]`.
static RULES: [Rule; 25] = [
    rule!("github-pat", Check::Plain, &["ghp_"], r"ghp_[0-9a-zA-Z]{36}"),
    rule!("github-oauth", Check::Plain, &["gho_"], r"gho_[0-9a-zA-Z]{36}"),
    rule!("github-app-token", Check::Plain, &["ghu_", "ghs_"], r"(?:ghu|ghs)_[0-9a-zA-Z]{36}"),
    rule!("github-refresh-token", Check::Plain, &["ghr_"], r"ghr_[0-9a-zA-Z]{36}"),
    rule!("github-fine-grained-pat", Check::Plain, &["github_pat_"], r"github_pat_[0-9A-Za-z_]{82}"),
    rule!(
        "aws-access-token",
        Check::AwsAccessKey,
        &["a3t", "akia", "asia", "abia", "acca"],
        r"(?-u:\b)((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})(?-u:\b)"
    ),
    rule!(
        "private-key",
        Check::Plain,
        &["-----begin"],
        r"(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S-]{64,}?KEY(?: BLOCK)?-----"
    ),
    rule!(
        "private-key",
        Check::KeyHeader,
        &["-----begin"],
        r"(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
    ),
    rule!("private-key", Check::PuttyHeader, &["putty-user-key-file-"], r"PuTTY-User-Key-File-[0-9]+"),
    rule!("slack-bot-token", Check::Plain, &["xoxb-"], r"xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*"),
    rule!("slack-user-token", Check::Plain, &["xoxp-", "xoxe-"], r"xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}"),
    rule!("slack-app-token", Check::Plain, &["xapp-"], r"(?i)xapp-[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]+"),
    rule!("slack-legacy-token", Check::Plain, &["xoxo-", "xoxs-"], r"xox[os]-[0-9]+-[0-9]+-[0-9]+-[a-fA-F0-9]+"),
    rule!(
        "slack-webhook-url",
        Check::Plain,
        &["hooks.slack.com"],
        r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}"
    ),
    rule!(
        "jwt",
        Check::Jwt,
        &[".ey"],
        r"(?-u:\b)(ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9/\\_-]{17,}\.(?:[a-zA-Z0-9/\\_-]{10,}={0,2})?)"
    ),
    rule!(
        "openai-api-key",
        Check::Plain,
        &["t3blbkfj"],
        r"(?-u:\b)(sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})(?-u:\b)|sk-[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20})"
    ),
    rule!("anthropic-api-key", Check::Plain, &["sk-ant-"], r"(?-u:\b)(sk-ant-(?:api03|admin01)-[a-zA-Z0-9_\-]{93}AA)"),
    rule!("gitlab-pat", Check::Plain, &["glpat-"], r"glpat-[0-9A-Za-z_-]{20}"),
    rule!("npm-access-token", Check::Plain, &["npm_"], r"(?i-u)\b(npm_[a-z0-9]{36})"),
    rule!("gcp-api-key", Check::Plain, &["aiza"], r"(?-u:\b)(AIza[0-9A-Za-z_-]{35})"),
    rule!(
        "stripe-access-token",
        Check::Plain,
        &["sk_test_", "sk_live_", "sk_prod_", "rk_test_", "rk_live_", "rk_prod_"],
        r"(?-u:\b)((?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99})"
    ),
    rule!("huggingface-access-token", Check::Plain, &["hf_"], r"(?-u:\b)(hf_[a-zA-Z]{34})"),
    // detect-secrets' "Basic Auth Credentials": `://`, a user without `:` `@`
    // or delimiters, `:`, then the password (group 1) up to the authority's
    // last `@`. The password may hold `:`, `@` and sub-delimiters (real ones
    // do); placeholders are dropped by `is_url_password`.
    rule!("url-credentials", Check::UrlCredentials, &["://"], r#"://[^\s:/?#\[\]@'"\x60]*:([^\s/?#\[\]'"\x60]+)@"#),
    // RFC 6750's b64token after `Bearer`, 20 characters or more.
    rule!("bearer-token", Check::Bearer, &["bearer"], r"(?i-u)\bbearer[ \t]+([0-9A-Za-z._~+/-]{20,}=*)"),
    rule!(
        "generic-api-key",
        Check::Generic,
        &["access", "auth", "api", "cred", "key", "passw", "secret", "token"],
        r#"(?i-u)[0-9A-Za-z_.-]{0,50}?(?:access|auth|(?-i:[Aa]pi|API)|credential|creds|key|passw(?:or)?d|secret|token)(?:[ \t0-9A-Za-z_.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}([0-9A-Za-z_.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})(?:[\x60'"\s;]|\\[nr]|$)"#
    ),
];

/// The END line of a PEM private-key block (any flavour).
static PRIVATE_KEY_END: LazyLock<Regex> =
    LazyLock::new(|| compile(r"(?i)-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"));

/// The last line of a PuTTY key file.
static PUTTY_MAC_LINE: LazyLock<Regex> = LazyLock::new(|| compile(r"Private-MAC:[ \t]*[0-9A-Fa-f]+"));

/// Returns every secret in `text`, sorted by start, non-overlapping (on
/// overlap keep the earliest-starting, then longest).
///
/// A specific rule always beats a fallback rule (`generic-api-key`,
/// `url-credentials`, `bearer-token`) where the two overlap.
pub fn scan(text: &str) -> Vec<Finding> {
    if text.is_empty() {
        return Vec::new();
    }
    let lower = text.to_ascii_lowercase();
    let mut raw: Vec<Candidate> = Vec::new();
    for (priority, rule) in RULES.iter().enumerate() {
        if !rule.keywords.iter().any(|k| lower.contains(k)) {
            continue;
        }
        let fallback = rule.kind.is_fallback();
        let mut push = |start: usize, end: usize| raw.push(Candidate { priority, rule: rule.id, fallback, start, end });
        match rule.kind {
            Check::KeyHeader => {
                let ends: Vec<usize> = PRIVATE_KEY_END.find_iter(text).map(|m| m.end()).collect();
                for m in rule.regex.find_iter(text) {
                    push(m.start(), block_end(&ends, m.end(), text.len()));
                }
            }
            Check::PuttyHeader => {
                let ends: Vec<usize> = PUTTY_MAC_LINE.find_iter(text).map(|m| m.end()).collect();
                for m in rule.regex.find_iter(text) {
                    push(m.start(), block_end(&ends, m.end(), text.len()));
                }
            }
            _ => {
                for_each_accepted(rule, text, &mut push);
            }
        }
    }
    resolve(text, raw)
}

/// Calls `found` with the byte range of every secret of `rule` in `text`:
/// capture group 1 of each match (the whole match if the regex has no group),
/// when [`Check::accepts`] it.
///
/// After an accepted match the search goes on at its end, as `captures_iter`
/// would. After a rejected one it resumes where the rejected secret starts
/// (one character past the match's start when the secret is the whole
/// match), so a later match that overlaps the rejected one is still found:
/// in `creds: aws_secret_access_key = <secret>` the generic rule first
/// captures `aws_secret_access_key` after `creds:`, rejects it, then finds the
/// real value after `=`. Each retry starts strictly later than the one
/// before, so the loop ends.
///
/// Retries re-read text, so they draw on a budget that grows with the
/// distance scanned: the bytes re-read so far may not exceed
/// [`RETRY_BUDGET_PER_BYTE`] times the end of the current match plus
/// [`RETRY_BUDGET_BASE`]. Past that (only contrived text such as a long run of
/// `key=key=key=…` gets there) a rejected match is skipped whole, as
/// `captures_iter` would, so the scan stays linear; the budget comes back as
/// the scan moves on, so ordinary text after such a run is searched fully.
fn for_each_accepted(rule: &Rule, text: &str, mut found: impl FnMut(usize, usize)) {
    let mut locations = rule.regex.capture_locations();
    let mut reread_so_far = 0usize;
    let mut at = 0;
    while at <= text.len() {
        let Some(whole) = rule.regex.captures_read_at(&mut locations, text, at) else {
            break;
        };
        let (start, end) = locations.get(1).unwrap_or((whole.start(), whole.end()));
        let past = if whole.end() > whole.start() { whole.end() } else { next_char(text, whole.start()) };
        if rule.kind.accepts(&text[start..end]) {
            found(start, end);
            at = past;
            continue;
        }
        let retry = if start > whole.start() { start } else { next_char(text, whole.start()) };
        let reread = past.saturating_sub(retry);
        let budget = past.saturating_mul(RETRY_BUDGET_PER_BYTE).saturating_add(RETRY_BUDGET_BASE);
        if reread_so_far.saturating_add(reread) <= budget {
            reread_so_far += reread;
            at = retry;
        } else {
            at = past;
        }
    }
}

/// Bytes of re-reading allowed per byte of text, see [`for_each_accepted`].
const RETRY_BUDGET_PER_BYTE: usize = 2;

/// Bytes of re-reading allowed whatever the text's length, see
/// [`for_each_accepted`].
const RETRY_BUDGET_BASE: usize = 16 * 1024;

/// The byte offset of the char after the one at `at`, or past the end of
/// `text` when `at` is its end.
fn next_char(text: &str, at: usize) -> usize {
    text[at..].chars().next().map_or(text.len() + 1, |c| at + c.len_utf8())
}

/// Returns `text` with each finding replaced by `[REDACTED:<rule>]`.
pub fn redact(text: &str) -> String {
    let findings = scan(text);
    if findings.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for f in &findings {
        out.push_str(&text[last..f.start]);
        out.push_str("[REDACTED:");
        out.push_str(f.rule);
        out.push(']');
        last = f.end;
    }
    out.push_str(&text[last..]);
    out
}

/// A finding before overlaps are resolved.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    /// Index of the rule in [`RULES`]; lower wins ties.
    priority: usize,
    /// Rule id, as in [`Finding::rule`].
    rule: &'static str,
    /// Whether the rule is a fallback one ([`Check::is_fallback`]).
    fallback: bool,
    /// Byte range of the secret, as in [`Finding`].
    start: usize,
    end: usize,
}

/// Turns raw candidates into sorted, non-overlapping findings: fallback
/// candidates that overlap a specific one are dropped, then the
/// earliest-starting, longest, highest-priority candidate wins each overlap.
fn resolve(text: &str, mut raw: Vec<Candidate>) -> Vec<Finding> {
    raw.retain(|c| c.start < c.end && text.is_char_boundary(c.start) && text.is_char_boundary(c.end));
    let mut specific: Vec<(usize, usize)> = raw.iter().filter(|c| !c.fallback).map(|c| (c.start, c.end)).collect();
    specific.sort_unstable();
    // Merge into disjoint sorted intervals so each overlap test is a binary search.
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(specific.len());
    for (s, e) in specific {
        match merged.last_mut() {
            Some(last) if s < last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    raw.retain(|c| !c.fallback || !overlaps_any(&merged, c.start, c.end));
    raw.sort_unstable_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)).then(a.priority.cmp(&b.priority)));
    let mut out: Vec<Finding> = Vec::with_capacity(raw.len());
    let mut covered_to = 0;
    for c in raw {
        if c.start >= covered_to {
            covered_to = c.end;
            out.push(Finding { rule: c.rule, start: c.start, end: c.end });
        }
    }
    out
}

/// Whether `[start, end)` overlaps any of the disjoint, sorted `intervals`.
fn overlaps_any(intervals: &[(usize, usize)], start: usize, end: usize) -> bool {
    // First interval whose end is past `start`; it overlaps if it begins before `end`.
    let i = intervals.partition_point(|&(_, e)| e <= start);
    intervals.get(i).is_some_and(|&(s, _)| s < end)
}

/// End of a block whose header ends at `header_end`: the first of the sorted
/// `ends` at or after it, else `text_len`.
fn block_end(ends: &[usize], header_end: usize, text_len: usize) -> usize {
    let i = ends.partition_point(|&e| e < header_end);
    ends.get(i).copied().unwrap_or(text_len)
}

/// Minimum Shannon entropy (bits per char) of a generic secret value.
const GENERIC_MIN_ENTROPY: f64 = 3.5;

/// Lowercase substrings that mark a value as a placeholder, not a secret.
const GENERIC_STOP_WORDS: &[&str] = &[
    "example",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "changeit",
    "replaceme",
    "replace_me",
    "xxxxxxxx",
    "dummy",
    "sample",
    "redacted",
    "notasecret",
    "not_a_secret",
    "your_",
    "your-",
];

/// Whether a value captured by the generic rule looks like a real secret:
/// at least one digit (which also rules out all-lowercase names such as
/// `my_variable_name`), entropy of at least [`GENERIC_MIN_ENTROPY`], no
/// placeholder word, and not an identifier, dotted name or relative path.
///
/// Templates (`${VAR}`, `{{ var }}`), URLs and absolute paths never reach
/// this point: the pattern's value class has no `$`, `{`, `:` or leading `/`.
fn plausible_generic_secret(value: &str) -> bool {
    if !value.bytes().any(|b| b.is_ascii_digit()) {
        return false;
    }
    if shannon_entropy(value) < GENERIC_MIN_ENTROPY {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    if GENERIC_STOP_WORDS.iter().any(|w| lower.contains(w)) {
        return false;
    }
    !looks_like_identifier(value)
}

/// Whether the token after `Bearer` looks like a real credential rather than
/// documentation: like [`plausible_generic_secret`] (entropy, no placeholder
/// word, not an identifier), except that mixed case stands in for a digit, as
/// opaque tokens are often plain base64url. The regex already keeps
/// `Bearer token`, `Bearer <token>`, `Bearer $TOKEN` and `Bearer ${{ … }}`
/// out (too short, or `<` `$` `{` are not token characters).
fn plausible_bearer_token(value: &str) -> bool {
    let mixed_case = value.bytes().any(|b| b.is_ascii_uppercase()) && value.bytes().any(|b| b.is_ascii_lowercase());
    if !(mixed_case || value.bytes().any(|b| b.is_ascii_digit())) {
        return false;
    }
    if shannon_entropy(value) < GENERIC_MIN_ENTROPY {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    !GENERIC_STOP_WORDS.iter().any(|w| lower.contains(w)) && !looks_like_identifier(value)
}

/// Passwords that documentation writes in place of a real one, compared
/// ignoring ASCII case: `postgres://postgres:password@localhost` is a
/// placeholder, not a leak.
const URL_PLACEHOLDER_PASSWORDS: &[&str] = &["password", "passwd", "pass", "secret"];

/// Whether the password of a URL's userinfo is a real one. Any length counts
/// (a two-letter password is refused), but these placeholders are not:
///
/// - a variable or template: starts with `$` (`$PASSWORD`, `${PASSWORD}`,
///   `$(cat pw)`) or `{` (`{password}`, `{{ pw }}`), or holds `${`, `{{` or
///   `%(` (`%(password)s`);
/// - a description in angle brackets: `<password>`, `<see vault>`;
/// - a mask: only `*`, `x`, `X`, `.`, `•` or `…` (`****`, `xxx`, `...`);
/// - a word from [`URL_PLACEHOLDER_PASSWORDS`], or one holding a
///   placeholder word from [`GENERIC_STOP_WORDS`] (`your_password`,
///   `changeme`, `example`).
fn is_url_password(value: &str) -> bool {
    let templated = value.starts_with(['$', '{'])
        || ["${", "{{", "%("].iter().any(|t| value.contains(t))
        || (value.starts_with('<') && value.ends_with('>'));
    let masked = value.chars().all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '•' | '…'));
    let lower = value.to_ascii_lowercase();
    let worded =
        URL_PLACEHOLDER_PASSWORDS.contains(&lower.as_str()) || GENERIC_STOP_WORDS.iter().any(|w| lower.contains(w));
    !(templated || masked || worded)
}

/// Shannon entropy of `s` over its chars, in bits per char.
fn shannon_entropy(s: &str) -> f64 {
    let mut ascii = [0usize; 128];
    let mut other: HashMap<char, usize> = HashMap::new();
    let mut total = 0usize;
    for c in s.chars() {
        total += 1;
        if c.is_ascii() {
            ascii[c as usize] += 1;
        } else {
            *other.entry(c).or_insert(0) += 1;
        }
    }
    if total == 0 {
        return 0.0;
    }
    let n = total as f64;
    ascii
        .iter()
        .copied()
        .chain(other.into_values())
        .filter(|&k| k > 0)
        .map(|k| {
            let p = k as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// Whether `value` reads as a code identifier, dotted name or relative path
/// (`max_tokens_v2`, `GoogleOAuth2Provider`, `AWS_SECRET_NAME_V2`,
/// `config.prod.db2`, `home2/user/keys`, `claude-3-5-sonnet-20241022`)
/// rather than random characters.
///
/// The value is split at `_ - . /`, before a capital that follows a
/// lowercase letter or digit, and before the last capital of an acronym that
/// starts a word (`OAuth` → `O` `Auth`). It is an identifier when there are at
/// least two pieces averaging three or more characters, every piece has a
/// [`PieceShape`], and at most two pieces are words with trailing digits.
/// Random tokens almost always fail one of these tests.
fn looks_like_identifier(value: &str) -> bool {
    if value.contains(['+', '=']) {
        return false;
    }
    let bytes = value.as_bytes();
    let mut pieces = 0usize;
    let mut piece_chars = 0usize;
    let mut numbered_words = 0usize;
    let mut piece_start = 0usize;
    for i in 0..=bytes.len() {
        let boundary = match bytes.get(i) {
            None | Some(b'_' | b'-' | b'.' | b'/') => true,
            Some(b) if b.is_ascii_uppercase() && i > piece_start => {
                let prev = bytes[i - 1];
                let next_lower = bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase);
                prev.is_ascii_lowercase() || prev.is_ascii_digit() || (prev.is_ascii_uppercase() && next_lower)
            }
            Some(_) => false,
        };
        if !boundary {
            continue;
        }
        let piece = &bytes[piece_start..i];
        if !piece.is_empty() {
            match piece_shape(piece) {
                None => return false,
                Some(PieceShape::NumberedWord) => numbered_words += 1,
                Some(PieceShape::Word | PieceShape::Number) => {}
            }
            pieces += 1;
            piece_chars += piece.len();
        }
        // A separator is skipped; a capital starts the next piece.
        piece_start = match bytes.get(i) {
            Some(b) if b.is_ascii_uppercase() => i,
            _ => i + 1,
        };
    }
    pieces >= 2 && piece_chars >= 3 * pieces && numbered_words <= 2
}

/// The shapes a piece of an identifier may have (see [`looks_like_identifier`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PieceShape {
    /// `word`, `Word` or `WORD`.
    Word,
    /// A word followed by one or two digits: `v2`, `Auth2`, `DB10`.
    NumberedWord,
    /// One to eight digits alone, as in versions and dates.
    Number,
}

/// The shape of one identifier piece, or `None` if it has none.
fn piece_shape(piece: &[u8]) -> Option<PieceShape> {
    let letters = piece.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    let (word, digits) = piece.split_at(letters);
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let Some((_, rest)) = word.split_first() else {
        return (1..=8).contains(&digits.len()).then_some(PieceShape::Number);
    };
    if !(rest.iter().all(u8::is_ascii_lowercase) || word.iter().all(u8::is_ascii_uppercase)) {
        return None;
    }
    match digits.len() {
        0 => Some(PieceShape::Word),
        1 | 2 => Some(PieceShape::NumberedWord),
        _ => None,
    }
}

/// Whether a JWT-shaped string really is one: its header and payload must
/// base64url-decode to UTF-8 JSON objects.
fn is_plausible_jwt(token: &str) -> bool {
    let mut parts = token.split('.');
    let (Some(header), Some(payload)) = (parts.next(), parts.next()) else {
        return false;
    };
    decodes_to_json_object(header) && decodes_to_json_object(payload)
}

/// Whether `part` base64url-decodes to text shaped like a JSON object
/// (`{`, a `:`, then `}`, ignoring surrounding whitespace).
fn decodes_to_json_object(part: &str) -> bool {
    let Some(bytes) = base64url_decode(part) else {
        return false;
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return false;
    };
    let text = text.trim();
    text.starts_with('{') && text.ends_with('}') && text.contains(':')
}

/// Decodes unpadded (or `=`-padded) base64url; the standard alphabet's `+`
/// and `/` are accepted too. Returns `None` on any other character or an
/// impossible length.
fn base64url_decode(input: &str) -> Option<Vec<u8>> {
    let input = input.trim_end_matches('=');
    if input.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(input.len() / 4 * 3 + 2);
    let mut acc: u32 = 0;
    let mut bits: u32 = 0;
    for b in input.bytes() {
        let sextet = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(sextet);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// The secret filter over the fields of one write (docs/safety.md, Secrets): a field holding a secret is refused
/// (naming the field and the rule) or, when the person asked for `--redact` (and always over
/// MCP), stored with each secret replaced; the rules that fired are reported.
pub struct Screen {
    redact: bool,
    fired: Vec<&'static str>,
}

impl Screen {
    pub fn new(redact: bool) -> Screen {
        Screen { redact, fired: Vec::new() }
    }

    /// Returns `text` as it may be stored in `field`, or the refusal.
    pub fn field(&mut self, field: &str, text: String) -> Result<String, crate::error::KbError> {
        let found = scan(&text);
        match found.first() {
            None => Ok(text),
            Some(f) if !self.redact => Err(crate::error::KbError::Secret { field: field.to_string(), rule: f.rule }),
            Some(_) => {
                self.fired.extend(found.iter().map(|f| f.rule));
                Ok(redact(&text))
            }
        }
    }

    /// The rules whose matches were redacted, sorted, each once.
    pub fn redacted(mut self) -> Vec<&'static str> {
        self.fired.sort_unstable();
        self.fired.dedup();
        self.fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    // ---- helpers (fake secrets are always assembled at test time) ----

    /// Standard base64url without padding, for building fake JWTs.
    fn b64url(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk.iter().enumerate().fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
            let chars = chunk.len() + 1;
            for i in 0..chars {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            }
        }
        out
    }

    /// The rule ids `scan` reports for `text`, in order.
    fn rules_of(text: &str) -> Vec<&'static str> {
        scan(text).into_iter().map(|f| f.rule).collect()
    }

    /// Asserts that `secret`, embedded in `prefix + secret + suffix`, is found
    /// by exactly `rule` at its exact byte range, and redacts cleanly.
    fn assert_single(rule: &'static str, prefix: &str, secret: &str, suffix: &str) {
        let text = format!("{prefix}{secret}{suffix}");
        let start = prefix.len();
        let end = start + secret.len();
        assert_eq!(scan(&text), vec![Finding { rule, start, end }], "scan of {text:?}");
        assert_eq!(redact(&text), format!("{prefix}[REDACTED:{rule}]{suffix}"), "redact of {text:?}");
    }

    fn fake_ghp() -> String {
        format!("ghp_{}", "A1b2C3d4E5f6".repeat(3))
    }

    fn fake_aws() -> String {
        ["AKIA", "ZZZZEXAMPLE2345Q"].concat()
    }

    fn fake_jwt() -> String {
        let header = b64url(br#"{"alg":"HS256","typ":"JWT"}"#);
        let payload = b64url(br#"{"sub":"1234567890","name":"Kb Test"}"#);
        let signature = b64url(&(0u8..32).map(|i| i.wrapping_mul(37)).collect::<Vec<_>>());
        format!("{header}.{payload}.{signature}")
    }

    fn fake_pem(body_lines: usize) -> String {
        let dashes = "-----";
        let kind = "RSA PRIVATE KEY";
        let mut pem = format!("{dashes}BEGIN {kind}{dashes}\n");
        for i in 0..body_lines {
            pem.push_str(&format!("MIIEow{i:02}").repeat(8));
            pem.push('\n');
        }
        pem.push_str(&format!("{dashes}END {kind}{dashes}"));
        pem
    }

    fn fake_generic_value() -> String {
        ["Zx9Qw3Er7Ty1", "Ui5Op2As8Df4"].concat()
    }

    // ---- the rule table itself ----

    #[test]
    fn every_pattern_compiles() {
        for rule in &RULES {
            LazyLock::force(&rule.regex);
            assert!(!rule.keywords.is_empty(), "{}", rule.id);
            for k in rule.keywords {
                assert_eq!(*k, k.to_ascii_lowercase(), "keyword of {}", rule.id);
            }
        }
        LazyLock::force(&PRIVATE_KEY_END);
        LazyLock::force(&PUTTY_MAC_LINE);
        assert_eq!(RULES.last().map(|r| r.id), Some("generic-api-key"));
        // Fallback rules come after every specific one.
        let first_fallback = RULES.iter().position(|r| r.kind.is_fallback()).unwrap();
        assert!(RULES[first_fallback..].iter().all(|r| r.kind.is_fallback()));
    }

    // ---- one positive test per rule ----

    #[test]
    fn github_pat() {
        assert_single("github-pat", "export GH=", &fake_ghp(), " # mine");
    }

    #[test]
    fn github_oauth() {
        let t = format!("gho_{}", "Q9w8E7r6T5y4".repeat(3));
        assert_single("github-oauth", "oauth ", &t, "\n");
    }

    #[test]
    fn github_app_tokens() {
        for prefix in ["ghu_", "ghs_"] {
            let t = format!("{prefix}{}", "Z1x2C3v4B5n6".repeat(3));
            assert_single("github-app-token", "app=", &t, "");
        }
    }

    #[test]
    fn github_refresh_token() {
        let t = format!("ghr_{}", "M1n2B3v4C5x6".repeat(3));
        assert_single("github-refresh-token", "", &t, " refresh");
    }

    #[test]
    fn github_fine_grained_pat() {
        let t = format!("github_pat_{}_{}Z", "11ABCDEFG0".repeat(2), "aB3".repeat(20));
        assert_eq!(t.len(), "github_pat_".len() + 82);
        assert_single("github-fine-grained-pat", "use ", &t, " now");
    }

    #[test]
    fn aws_access_token() {
        assert_single("aws-access-token", "id ", &fake_aws(), ".");
        let asia = ["ASIA", "ABCDEFGHIJKLMNOP"].concat();
        assert_single("aws-access-token", "", &asia, "");
    }

    #[test]
    fn private_key_block() {
        let pem = fake_pem(4);
        assert_single("private-key", "key file:\n", &pem, "\nthat was it");
    }

    #[test]
    fn private_key_short_block_runs_to_end_line() {
        let pem = fake_pem(0);
        assert_single("private-key", "short: ", &pem, " after");
    }

    #[test]
    fn private_key_truncated_header_redacts_to_end_of_text() {
        let header = ["-----BEGIN OPENSSH PRIVATE ", "KEY-----"].concat();
        let rest = format!("{header}\nb3BlbnNzaC1rZXktdjEAAAAA\nand more notes");
        assert_single("private-key", "pasted: ", &rest, "");
    }

    #[test]
    fn private_key_pgp_block() {
        let dashes = "-----";
        let block = format!(
            "{dashes}BEGIN PGP PRIVATE KEY BLOCK{dashes}\n{}\n{dashes}END PGP PRIVATE KEY BLOCK{dashes}",
            "lQdGBF4".repeat(20)
        );
        assert_single("private-key", "", &block, "\n");
    }

    #[test]
    fn private_key_putty() {
        let file = [
            "PuTTY-User-Key-File-",
            "2: ssh-rsa\nEncryption: none\nComment: test\nPublic-Lines: 1\nAAAAB3Nza\n",
            "Private-Lines: 1\nAAAAgQC\nPrivate-MAC: ",
            &"0a1b2c3d".repeat(5),
        ]
        .concat();
        assert_single("private-key", "ppk:\n", &file, "\nend");
        // Truncated: runs to the end of the text.
        let cut = ["PuTTY-User-Key-File-", "3: ssh-ed25519\nEncryption: none"].concat();
        assert_single("private-key", "", &cut, "");
    }

    #[test]
    fn slack_bot_token() {
        let t = ["xoxb-", "1234567890", "-", "9876543210", "-", "AbCdEfGhIjKlMnOp"].concat();
        assert_single("slack-bot-token", "bot ", &t, " ok");
    }

    #[test]
    fn slack_user_token() {
        let t = ["xoxp-", "1234567890-1234567890-1234567890-", &"a1B2c3D4".repeat(4)].concat();
        assert_single("slack-user-token", "", &t, "");
    }

    #[test]
    fn slack_app_token() {
        let t = ["xapp-", "1-A0B1C2D3E4-1234567890-", &"ab12".repeat(8)].concat();
        assert_single("slack-app-token", "app: ", &t, "\n");
    }

    #[test]
    fn slack_legacy_token() {
        let t = ["xoxs-", "1234-5678-9012-", "abcdef0123456789"].concat();
        assert_single("slack-legacy-token", "legacy ", &t, "");
    }

    #[test]
    fn slack_webhook_url() {
        let url = ["https://hooks.slack.com/services/", "T00000000/B00000000/", &"XyZ12".repeat(5)].concat();
        assert_single("slack-webhook-url", "post to ", &url, " daily");
    }

    #[test]
    fn jwt() {
        assert_single("jwt", "Authorization: Bearer ", &fake_jwt(), "\n");
    }

    #[test]
    fn openai_api_key() {
        let legacy = ["sk-", &"aB3dE".repeat(4), "T3Blbk", "FJ", &"fG6hI".repeat(4)].concat();
        assert_single("openai-api-key", "OPENAI ", &legacy, " end");
        let project = ["sk-proj-", &"Ab1_Cd2-".repeat(7), "Ab", "T3Blbk", "FJ", &"Ef3-Gh4_".repeat(7), "Ef"].concat();
        assert_single("openai-api-key", "", &project, "");
    }

    #[test]
    fn anthropic_api_key() {
        let t = ["sk-ant-", "api03-", &"aB3_x".repeat(18), "Q9-", "AA"].concat();
        assert_eq!(t.len(), "sk-ant-api03-".len() + 95);
        assert_single("anthropic-api-key", "ANTHROPIC: ", &t, "\n");
    }

    #[test]
    fn gitlab_pat() {
        let t = ["glpat-", &"aB3-x".repeat(4)].concat();
        assert_single("gitlab-pat", "gitlab ", &t, "");
    }

    #[test]
    fn npm_access_token() {
        let t = ["npm_", &"a1B2c3".repeat(6)].concat();
        assert_single("npm-access-token", "//registry/:_authToken ", &t, "");
    }

    #[test]
    fn gcp_api_key() {
        let t = ["AIza", "Sy", &"A1b2C3d".repeat(4), "_-0x5"].concat();
        assert_eq!(t.len(), 39);
        assert_single("gcp-api-key", "maps ", &t, " ok");
    }

    #[test]
    fn stripe_access_token() {
        let t = ["sk_", "live_", &"a1B2c3D4".repeat(3)].concat();
        assert_single("stripe-access-token", "stripe ", &t, "");
        let r = ["rk_", "test_", "a1B2c3D4e5"].concat();
        assert_single("stripe-access-token", "", &r, "");
    }

    #[test]
    fn huggingface_access_token() {
        let t = ["hf_", &"aBcDeFgHiJkLmNoPqR".repeat(2)[..34]].concat();
        assert_single("huggingface-access-token", "HF ", &t, "");
    }

    #[test]
    fn generic_api_key_forms() {
        let v = fake_generic_value();
        assert_single("generic-api-key", "API_KEY=\"", &v, "\"");
        assert_single("generic-api-key", "db_password: ", &v, "\n");
        assert_single("generic-api-key", "{\"client_secret\": \"", &v, "\"}");
        assert_single("generic-api-key", "auth_token = '", &v, "';");
        assert_single("generic-api-key", "SECRET_KEY := ", &v, "");
        let hex: String = (0..32u32).filter_map(|i| char::from_digit((i * 7 + 3) % 16, 16)).collect();
        assert_single("generic-api-key", "webhook_secret=", &hex, " ");
    }

    #[test]
    fn generic_redacts_only_the_value() {
        let v = fake_generic_value();
        assert_eq!(redact(&format!("API_KEY=\"{v}\"")), "API_KEY=\"[REDACTED:generic-api-key]\"");
    }

    // ---- every candidate is considered ----

    /// A random-looking 40-character AWS secret access key (base64 with `/`).
    fn fake_aws_secret() -> String {
        ["q7Hd2LmX9vTc", "/R4pWz8KbN1sYe3Gf/", "Uo6Ja5QiVr"].concat()
    }

    #[test]
    fn a_rejected_capture_does_not_hide_a_later_secret() {
        let s = fake_aws_secret();
        assert_eq!(s.len(), 40);
        // `creds:` captures `aws_secret_access_key` (no digit: rejected); the value after `=`
        // must still be tried.
        assert_single("generic-api-key", "creds: aws_secret_access_key = ", &s, "");
        assert_single("generic-api-key", "my creds: aws_secret_access_key = ", &s, "\nregion: eu-west-1");
        let v = fake_generic_value();
        // `auth:` captures the identifier `api_key_v2` (rejected); `api_key_v2 = …` follows.
        assert_single("generic-api-key", "auth: api_key_v2 = ", &v, " # prod");
        // A rejected placeholder right before a real one.
        let text = format!("token=changeme1234567890abc token={v}");
        assert_eq!(rules_of(&text), ["generic-api-key"]);
        assert_eq!(redact(&text), "token=changeme1234567890abc token=[REDACTED:generic-api-key]");
        // Rejected matches of the other checked kinds are retried too.
        assert_single("aws-access-token", "AKIAIOSFODNN7EXAMPLE ", &fake_aws(), "");
        assert_single("url-credentials", "https://u:${PW}@a/ https://u:", "k9Qz", "@b/");
    }

    #[test]
    fn rejected_captures_are_retried_in_linear_time() {
        // Every match is rejected (no digit) and each rejected value holds the keyword of the
        // next one: `key=key=…` up to 150 characters, over and over.
        let group = format!("a_key={} ", "key=".repeat(36));
        let text = group.repeat(256 * 1024 / group.len() + 1);
        let started = Instant::now();
        assert!(scan(&text).is_empty());
        assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
        // The same with one real secret at the end, and one behind a rejected capture: the
        // retry budget grows again with the text scanned after the contrived run.
        let s = fake_aws_secret();
        let text = format!("{text}api_key={} creds: aws_secret_access_key = {s}", fake_generic_value());
        assert_eq!(rules_of(&text), ["generic-api-key", "generic-api-key"]);
        assert!(redact(&text).ends_with("creds: aws_secret_access_key = [REDACTED:generic-api-key]"));
    }

    // ---- url-credentials ----

    #[test]
    fn url_credentials() {
        // Any password counts, however short; only the password is redacted.
        assert_single("url-credentials", "postgres://user:", "pw", "@host/db");
        assert_single("url-credentials", "see https://u:", "p", "@example.com/x");
        let pw = ["S3cr", "3t-Pa55"].concat();
        assert_single("url-credentials", "DATABASE_URL=postgresql://app:", &pw, "@db.internal:5432/app?ssl=1");
        // No user, sub-delimiters, and `@` or `:` inside the password (up to the last `@`).
        assert_single("url-credentials", "redis://:", "k9!Q$z", "@cache:6379/0");
        assert_single("url-credentials", "mysql://root:", "p@ss:w0rd", "@db/x?a=b@c");
        assert_single("url-credentials", "(amqp://guest:", "g7Pq", "@rabbit/)");
        assert_single("url-credentials", "`https://bot:", "Zx9Qw3", "@git.corp/r.git`");
        // A known token as the password is reported by its own rule.
        let gh = fake_ghp();
        assert_single("github-pat", "https://x-access-token:", &gh, "@github.com/o/r.git");
    }

    #[test]
    fn urls_without_a_real_password_are_clean() {
        for text in [
            "https://example.com",
            "http://localhost:8080",
            "http://localhost:8080/api and bob@example.com",
            "http://[::1]:8080/health",
            "https://host.example.org:8443/path@v2",
            "git@github.com:org/repo.git",
            "ssh://git@github.com:22/org/repo.git",
            "user@host",
            "https://user@host/path",
            "mailto:alice@example.com",
            // Placeholders (see `is_url_password`).
            "https://user:${PASSWORD}@host",
            "https://user:$PASSWORD@host",
            "https://user:$(cat /run/pw)@host",
            "postgres://user:{password}@db/app",
            "redis://:{{redis_password}}@cache:6379",
            "https://user:{{ pw }}@host",
            "mysql://u:%(password)s@db",
            "the log shows ://user:****@ in place of the password",
            "https://user:xxx@host and https://user:...@host",
            "https://user:<password>@host",
            "postgres://postgres:password@localhost:5432/postgres",
            "amqp://guest:PASS@rabbit/",
            "https://user:your_password@host",
            "https://admin:changeme@host",
        ] {
            assert_eq!(scan(text), vec![], "{text:?}");
        }
    }

    // ---- bearer-token ----

    fn fake_bearer() -> String {
        ["Zk3qP9xT2mW7", "vB4nR8sY1cL6hJ5dF0gA"].concat()
    }

    #[test]
    fn bearer_token() {
        let t = fake_bearer();
        assert_single("bearer-token", "Authorization: Bearer ", &t, "\n");
        assert_single("bearer-token", "curl -H 'authorization: bearer ", &t, "' https://api");
        let b64 = ["dGhpc0lzQVJhbmRvbVRva2Vu", "MTIzNDU2Nzg5MA=="].concat();
        assert_single("bearer-token", "BEARER\t", &b64, "");
        // Mixed case stands in for a digit.
        let letters = ["QwErTyUiOpAsDfGhJkLzXcVb", "NmPlOkIjUh"].concat();
        assert_single("bearer-token", "Bearer ", &letters, "");
        let dotted = ["a1B2.c3D4_e5F6", "~g7H8+i9J0/k1L2-m3"].concat();
        assert_single("bearer-token", "{\"Authorization\": \"Bearer ", &dotted, "\"}");
        // A JWT or a GitHub token after Bearer is reported by its own rule.
        assert_single("jwt", "Authorization: Bearer ", &fake_jwt(), "");
        assert_single("github-pat", "Authorization: Bearer ", &fake_ghp(), "");
    }

    #[test]
    fn bearer_in_documentation_is_clean() {
        for text in [
            "Bearer token",
            "Authorization: Bearer <token>",
            "Authorization: Bearer <YOUR_ACCESS_TOKEN_HERE>",
            "Authorization: Bearer $TOKEN",
            "Authorization: Bearer ${API_TOKEN}",
            "Authorization: Bearer ${{ secrets.API_TOKEN }}",
            "Authorization: Bearer {{token}}",
            "Authorization: Bearer YOUR_ACCESS_TOKEN_HERE",
            "Authorization: Bearer abcdefghijklmnopqrstuvwxyz",
            "Authorization: Bearer aaaaaaaaaaaaaaaaaaaaaaaaa1",
            "Authorization: Bearer MyServiceAccessTokenV2",
            "Authorization: Bearer example-token-1234567890",
            "the bearer of this certificate is trusted",
            "Bearer: see the vault",
        ] {
            assert_eq!(scan(text), vec![], "{text:?}");
        }
    }

    // ---- allowed examples ----

    #[test]
    fn aws_documentation_examples_are_allowed() {
        for text in [
            "AKIAIOSFODNN7EXAMPLE",
            "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
            "ASIAIOSFODNN7EXAMPLE is the session flavour",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "creds: aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ] {
            assert_eq!(scan(text), vec![], "{text:?}");
        }
        // Only a key that ends in EXAMPLE is an example.
        assert_single("aws-access-token", "", &fake_aws(), "");
    }

    /// Benign texts that look a little like secrets (shared in spirit with the CLI tests).
    #[test]
    fn benign_look_alikes_are_clean() {
        for text in [
            "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 reverted the token change",
            "short sha 4c2109c touched the auth module",
            "uuid 123e4567-e89b-12d3-a456-426614174000 belongs to the api client",
            "request_id: 6f1c2d3e-4b5a-4c7d-8e9f-0a1b2c3d4e5f",
            "the secret header is aGVsbG8gd29ybGQ= (base64 of hello world)",
            "auth: dGVzdA== is just base64 of test",
            "api_key: c2VjcmV0 (base64 of secret)",
            "key file at /home/dev/.ssh/id_ed25519.pub",
            "credentials live in C:\\Users\\dev\\AppData\\Roaming\\app\\credentials.json",
            "token_path: /var/run/secrets/kubernetes.io/serviceaccount/token",
            "docs at https://example.com and https://docs.rs/regex/1.10.2/regex/#syntax",
            "clone git@github.com:org/repo.git or ssh://git@github.com:22/org/repo.git",
            "the server runs on http://localhost:8080/api/v1/token",
            "postgres://user:${PASSWORD}@db:5432/app reads the password from the env",
            "password: <see vault>",
            "api_version = 2024-10-01, key: v1.2.3-rc.4+build.567",
            "rustc 1.82.0 (f6e511eec 2024-10-15) builds the token parser",
            "auth_version: 3.11.2-beta.1",
            "send Authorization: Bearer <token>, or Bearer $TOKEN, never the word Bearer token",
            "cache key = sha1(path) = da39a3ee5e6b4b0d3255bfef95601890afd80709",
        ] {
            assert_eq!(scan(text), vec![], "{text:?}");
        }
    }

    // ---- negatives ----

    #[test]
    fn prose_about_secrets_is_clean() {
        for text in [
            "The API key lives in the vault; rotate the token monthly",
            "password: see 1Password entry",
            "auth: uses OAuth2 with PKCE",
            "Never commit secrets. The access token expires after 3600 seconds, refresh it.",
            "key: value pairs are stored as YAML; token count: 12345",
            "Use `kb add` to store a memory; the keyword, credentials2 and the secret sauce.",
            "token_limit = max_tokens_v2",
            "auth_provider = GoogleOAuth2Provider",
            "secret_name: AWS_SECRET_NAME_V2",
            "api_host = api2.internal.corp.local",
            "key_path: home2/user/keys/deploy",
            "api_version: 2023-06-01",
            "model key: claude-3-5-sonnet-20241022",
            "key: node-v20.11.1-linux-x64",
            "password = hunter2",
            "SECRET_KEY=changeme1234567890abc",
            "API_KEY=\"your_api_key_here_123\"",
            "token: EXAMPLE0123456789abcdefXYZ",
            "password=xxxxxxxxxxxx1",
            "API_TOKEN=${API_TOKEN_2}",
            "token: {{ secrets.GH_TOKEN_2 }}",
        ] {
            assert_eq!(scan(text), vec![], "{text:?}");
            assert_eq!(redact(text), text);
        }
    }

    #[test]
    fn code_identifiers_are_clean() {
        for text in [
            "max_token_count = 4096",
            "let api_key_len: usize = 40;",
            "fn refresh_token(&self) -> Result<Token, AuthError>",
            "const KEY_SIZE_BITS = 2048, TOKEN_TTL_SECS = 86400;",
            "access_log => /var/log/nginx/access2.log",
        ] {
            assert_eq!(scan(text), vec![], "{text:?}");
        }
    }

    #[test]
    fn git_shas_and_uuids_are_clean() {
        for text in [
            "commit a94a8fe5ccb19ba61c4c0873d391e987982fbbd3 fixed the auth flow",
            "Merged 3f2a9c1 into main after review of the token refresh",
            "request 550e8400-e29b-41d4-a716-446655440000 failed auth",
            "session_id=550e8400-e29b-41d4-a716-446655440000",
            "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ] {
            assert_eq!(scan(text), vec![], "{text:?}");
        }
    }

    #[test]
    fn jwt_needs_json_parts() {
        let not_json = b64url(b"{ this is not json at all, just braces and words");
        let fake = format!("{not_json}.{not_json}.{}", "abcdefghijkl");
        assert!(fake.starts_with("ey"));
        assert_eq!(rules_of(&fake), Vec::<&str>::new());
        // Right shape, random bytes.
        let junk = format!("eyQ{}.eyR{}.", "zzzzzzzzzzzzzzzzzz", "yyyyyyyyyyyyyyyyyy");
        assert_eq!(rules_of(&junk), Vec::<&str>::new());
        // Unsigned JWT (empty signature) still counts.
        let header = b64url(br#"{"alg":"none"}"#);
        let payload = b64url(br#"{"sub":"1234567890"}"#);
        let unsigned = format!("{header}.{payload}.");
        assert_single("jwt", "t ", &unsigned, " x");
    }

    #[test]
    fn too_short_or_wrong_prefix_is_clean() {
        for text in [
            format!("ghp_{}", "A1b2C3d4E5f6".repeat(2)),
            "ghp_ is the prefix of classic GitHub tokens".to_owned(),
            format!("xAKIA{}", "ZZZZEXAMPLE2345Q"),
            format!("glpat-{}", "short"),
            "sk_live_ is Stripe's live prefix".to_owned(),
            "hooks.slack.com/services/ is where webhooks go".to_owned(),
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----"
                .to_owned(),
        ] {
            assert_eq!(rules_of(&text), Vec::<&str>::new(), "{text:?}");
        }
    }

    #[test]
    fn empty_and_plain_inputs() {
        assert_eq!(scan(""), vec![]);
        assert_eq!(redact(""), "");
        assert_eq!(scan("\0\0\0"), vec![]);
        assert_eq!(redact("hello\0world"), "hello\0world");
    }

    // ---- combinations ----

    #[test]
    fn multiple_secrets_in_one_text() {
        let gh = fake_ghp();
        let aws = fake_aws();
        let jwt = fake_jwt();
        let v = fake_generic_value();
        let text = format!("a {gh} b {aws} c {jwt} d\nDB_PASSWORD=\"{v}\"\n");
        let found = scan(&text);
        let rules: Vec<_> = found.iter().map(|f| f.rule).collect();
        assert_eq!(rules, ["github-pat", "aws-access-token", "jwt", "generic-api-key"]);
        for f in &found {
            assert!(f.start < f.end);
        }
        assert!(found.windows(2).all(|w| w[0].end <= w[1].start));
        assert_eq!(
            redact(&text),
            "a [REDACTED:github-pat] b [REDACTED:aws-access-token] c [REDACTED:jwt] d\n\
             DB_PASSWORD=\"[REDACTED:generic-api-key]\"\n"
        );
    }

    #[test]
    fn specific_rule_beats_generic() {
        let gh = fake_ghp();
        assert_single("github-pat", "GITHUB_TOKEN=", &gh, "");
        assert_single("github-pat", "GITHUB_TOKEN=\"", &gh, "\"");
        let aws = fake_aws();
        assert_single("aws-access-token", "aws_access_key_id = ", &aws, "\n");
        assert_single("jwt", "id_token: ", &fake_jwt(), "\n");
        let stripe = ["sk_", "live_", &"a1B2c3D4".repeat(3)].concat();
        assert_single("stripe-access-token", "STRIPE_SECRET_KEY=", &stripe, "");
        // The generic value would extend past the GitHub token; the specific still wins.
        let text = format!("token={gh}EXTRA123");
        assert_eq!(rules_of(&text), ["github-pat"]);
    }

    #[test]
    fn overlapping_matches_keep_earliest_then_longest() {
        // A PEM block matches both the full-block and the header pattern.
        let pem = fake_pem(3);
        let found = scan(&pem);
        assert_eq!(found, vec![Finding { rule: "private-key", start: 0, end: pem.len() }]);
        // A secret inside a truncated key block is swallowed by the block.
        let header = ["-----BEGIN EC PRIVATE ", "KEY-----"].concat();
        let text = format!("{header}\n{}\n", fake_ghp());
        assert_eq!(rules_of(&text), ["private-key"]);
        assert_eq!(redact(&text), "[REDACTED:private-key]");
    }

    #[test]
    fn resolve_orders_and_dedupes() {
        let c =
            |priority, rule, start, end| Candidate { priority, rule, fallback: rule == "generic-api-key", start, end };
        let text = "x".repeat(40);
        let found = resolve(
            &text,
            vec![
                c(1, "b", 10, 20),
                c(0, "a", 10, 15),
                c(0, "a", 0, 5),
                c(2, "c", 12, 30),
                c(3, "generic-api-key", 18, 25),
                c(3, "generic-api-key", 30, 35),
                c(0, "a", 20, 22),
            ],
        );
        let ranges: Vec<_> = found.iter().map(|f| (f.rule, f.start, f.end)).collect();
        assert_eq!(ranges, [("a", 0, 5), ("b", 10, 20), ("a", 20, 22), ("generic-api-key", 30, 35)]);
    }

    #[test]
    fn unicode_around_secrets() {
        let gh = fake_ghp();
        assert_single("github-pat", "密钥是", &gh, "，请轮换 🔑");
        assert_single("aws-access-token", "🙂🙂", &fake_aws(), "日本語");
        let v = fake_generic_value();
        assert_single("generic-api-key", "🔐 api_key: ", &v, " ✅ ключ");
        let text = format!("ünïcödé {gh} 🎉 {}", fake_jwt());
        for f in scan(&text) {
            assert!(text.is_char_boundary(f.start) && text.is_char_boundary(f.end));
        }
        assert_eq!(redact(&text), "ünïcödé [REDACTED:github-pat] 🎉 [REDACTED:jwt]");
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let samples = [
            "key=".repeat(1000),
            ["-----BEGIN PRIVATE ", "KEY-----"].concat().repeat(100),
            "ey".repeat(500) + ".ey" + &"a".repeat(30) + ".",
            "api_key: \u{212A}\u{17F}".repeat(50),
            "token=\u{0}\u{0}a1b2c3d4e5f6g7h8\u{0}".to_owned(),
            format!("\u{FEFF}secret:\u{2003}{}\u{2003}", fake_generic_value()),
            "passwd=".to_owned() + &"Ab1+/".repeat(40_000) + "==",
            "://:@".repeat(1000),
            "https://u:".repeat(500) + "p@" + &"@".repeat(500),
            "Bearer ".repeat(1000) + &"a1B2".repeat(10_000),
            "creds: ".repeat(500) + "aws_secret_access_key = é" + &"ü".repeat(300),
        ];
        for s in &samples {
            let found = scan(s);
            for f in &found {
                assert!(s.is_char_boundary(f.start) && s.is_char_boundary(f.end));
            }
            let _ = redact(s);
        }
    }

    #[test]
    fn this_source_file_holds_no_secret() {
        // Every fake key in these tests is assembled at run time.
        assert_eq!(scan(include_str!("secrets.rs")), vec![]);
    }

    #[test]
    fn redaction_is_idempotent() {
        let text = format!(
            "GITHUB={} API_KEY=\"{}\" {} postgres://app:{}@db/x Authorization: Bearer {}",
            fake_ghp(),
            fake_generic_value(),
            fake_pem(2),
            fake_generic_value(),
            fake_bearer()
        );
        let once = redact(&text);
        for rule in ["github-pat", "generic-api-key", "private-key", "url-credentials", "bearer-token"] {
            assert!(once.contains(&format!("[REDACTED:{rule}]")), "{rule}: {once}");
        }
        assert_eq!(redact(&once), once);
        assert!(scan(&once).is_empty());
    }

    #[test]
    fn five_megabyte_text_is_fast() {
        let prose = "The API key lives in the vault; rotate the token monthly. \
                     Commit 3f2a9c1 fixed auth. 日本語 🔑\n";
        let mut text = prose.repeat(5 * 1024 * 1024 / prose.len() + 1);
        text.push_str(&format!("GITHUB_TOKEN={}\n", fake_ghp()));
        assert!(text.len() >= 5 * 1024 * 1024);
        let started = Instant::now();
        let found = scan(&text);
        let elapsed = started.elapsed();
        assert_eq!(found.iter().map(|f| f.rule).collect::<Vec<_>>(), ["github-pat"]);
        assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
        // Pathological: one long run of word characters.
        let blob = "a".repeat(5 * 1024 * 1024);
        let started = Instant::now();
        assert!(scan(&blob).is_empty());
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn short_text_scans_quickly_after_warm_up() {
        let text = "Remember: the deploy key for staging is in 1Password; ask in #ops. \
                    The build uses tokio and serde. Tests run with cargo nextest.";
        let _ = scan(text);
        let started = Instant::now();
        for _ in 0..100 {
            assert!(scan(text).is_empty());
        }
        // Generous even for an unoptimized build.
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    // ---- helpers' own behaviour ----

    #[test]
    fn base64url_round_trip() {
        for len in 0..20u8 {
            let data: Vec<u8> = (0..len).map(|i| i.wrapping_mul(97)).collect();
            assert_eq!(base64url_decode(&b64url(&data)), Some(data));
        }
        assert_eq!(base64url_decode("abcde"), None);
        assert_eq!(base64url_decode("ab!d"), None);
    }

    #[test]
    fn entropy_and_identifier_heuristics() {
        assert_eq!(shannon_entropy(""), 0.0);
        assert_eq!(shannon_entropy("aaaa"), 0.0);
        assert!((shannon_entropy("abcd") - 2.0).abs() < 1e-9);
        assert!(shannon_entropy(&fake_generic_value()) >= GENERIC_MIN_ENTROPY);
        for ident in
            ["max_tokens_v2", "GoogleOAuth2Provider", "AWS_SECRET_NAME_V2", "config.prod.db2", "home2/user/keys"]
        {
            assert!(looks_like_identifier(ident), "{ident}");
        }
        for random in [
            fake_generic_value().as_str(),
            "a1b2c3d4e5f6",
            "Xk9_aB3dE-fG7hJ2kL",
            "550e8400-e29b-41d4",
            "AbCdEfGh1JkLmNoP2QrStUv3",
            "single",
        ] {
            assert!(!looks_like_identifier(random), "{random}");
        }
    }
}
