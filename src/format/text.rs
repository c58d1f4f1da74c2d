//! The rules every knowledge file shares, whatever its store: how bytes become text, how large a
//! file and a text may be, how a text becomes a slug and a numbered file name, which texts, tags
//! and agent names are accepted, and how a search query is split and matched.

use crate::error::{Diagnostic, KbError};
use crate::format::frontmatter;

/// Memory files larger than this are reported and skipped: they are not notes, and reading them
/// into every recall would hurt.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Decodes file bytes as text, refusing binary content.
pub fn decode(bytes: &[u8]) -> Result<&str, Diagnostic> {
    if let Some(pos) = memchr::memchr(0, bytes) {
        return Err(Diagnostic::error(Some(line_of(bytes, pos)), "contains NUL bytes: not a text file"));
    }
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        Diagnostic::error(Some(line_of(bytes, at)), format!("invalid UTF-8 at byte {at}"))
    })
}

fn line_of(bytes: &[u8], pos: usize) -> usize {
    memchr::memchr_iter(b'\n', &bytes[..pos.min(bytes.len())]).count() + 1
}

/// Checks an agent name (the frontmatter `agent`, `--agent`, MCP `agent`): not empty or blank, no
/// whitespace at either end, no `/` or `\`, no newline or other control character. The error
/// names the value (escaped) and what is wrong with it.
pub fn check_agent(name: &str) -> Result<(), String> {
    let why = if name.trim().is_empty() {
        "an agent name cannot be empty or blank"
    } else if name.contains(['/', '\\']) {
        "an agent name cannot contain '/' or '\\'"
    } else if name.chars().any(char::is_control) {
        "an agent name cannot contain a newline or another control character"
    } else if name.trim() != name {
        "an agent name cannot start or end with whitespace"
    } else {
        return Ok(());
    };
    Err(format!("invalid agent name '{}': {why}", name.escape_debug()))
}

/// Returns the file name co-cli (the Python tool whose file layout kb keeps) gives a memory: `{id:03}-{slug}.md`,
/// the slug from the first 50 characters of the text (docs/formats.md, A memory).
pub fn file_name(id: u64, text: &str) -> String {
    let head: String = text.chars().take(50).collect();
    format!("{id:03}-{}.md", slugify(&head))
}

/// Lowercases and replaces every run of characters outside `[a-z0-9]` with one `-`, trimmed,
/// at most 50 characters.
pub fn slugify(text: &str) -> String {
    let mut slug = String::new();
    for c in text.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_matches('-');
    slug.chars().take(50).collect::<String>().trim_end_matches('-').to_string()
}

/// The longest text a memory may hold: what fits, with its frontmatter, in `MAX_FILE_BYTES`.
pub const MAX_TEXT_BYTES: usize = MAX_FILE_BYTES as usize - 64 * 1024;

/// Checks a text to store, as memories and decisions share the rules: stripped as co-cli strips
/// it, not empty (`empty` is the message), no NUL byte in it or its tags, at most
/// `MAX_TEXT_BYTES`. `what` names what holds the text, singular and plural ("memory",
/// "memories").
pub fn checked_text(raw: &str, tags: &[String], what: (&str, &str), empty: &str) -> Result<String, KbError> {
    let (one, many) = what;
    let content = frontmatter::py_strip(raw).to_string();
    if content.is_empty() {
        return Err(KbError::rejected("text", empty));
    }
    if content.contains('\0') || tags.iter().any(|t| t.contains('\0')) {
        let what = if content.contains('\0') { "text" } else { "tag" };
        return Err(KbError::rejected(what, format!("the text contains a NUL byte: {many} are text files")));
    }
    if content.len() > MAX_TEXT_BYTES {
        return Err(KbError::rejected(
            "text",
            format!("the text is {} bytes; a {one} holds at most {MAX_TEXT_BYTES} bytes", content.len()),
        ));
    }
    Ok(content)
}

/// Returns the tags to store: each once, kept exactly as given (co-cli does too); a blank one is
/// refused.
pub fn checked_tags(tags: &[String]) -> Result<Vec<String>, KbError> {
    let mut kept: Vec<String> = Vec::new();
    for t in tags {
        if t.trim().is_empty() {
            return Err(KbError::rejected("tag", format!("invalid tag '{t}': a tag cannot be blank")));
        }
        if !kept.contains(t) {
            kept.push(t.clone());
        }
    }
    Ok(kept)
}

/// Returns the words of a recall query, lower-cased (a memory matches when every word
/// is in its content or one of its tags). A blank query is one empty word, which matches all.
pub fn query_words(query: &str) -> Vec<String> {
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    if words.is_empty() { vec![String::new()] } else { words }
}

/// Returns whether `haystack.to_lowercase()` contains `needle_lower`, without allocating for
/// ASCII text.
pub fn contains_lower(haystack: &str, needle_lower: &str) -> bool {
    if needle_lower.is_empty() {
        return true;
    }
    if haystack.is_ascii() && needle_lower.is_ascii() {
        let (h, n) = (haystack.as_bytes(), needle_lower.as_bytes());
        return h.windows(n.len()).any(|w| w.iter().zip(n).all(|(a, b)| a.to_ascii_lowercase() == *b));
    }
    haystack.to_lowercase().contains(needle_lower)
}

/// Returns a body with CRLF and lone CR turned into LF and surrounding whitespace removed (co-cli
/// strips the body too).
pub fn clean_body(body: &str) -> String {
    let lf = if body.contains('\r') { body.replace("\r\n", "\n").replace('\r', "\n") } else { body.to_string() };
    frontmatter::py_strip(&lf).to_string()
}

/// Returns at most the first `n` characters (Python `s[:n]`).
pub fn chars_prefix(s: &str, n: usize) -> &str {
    // No more characters than bytes; and where the first n bytes are ASCII, they are the first n
    // characters.
    if s.len() <= n {
        return s;
    }
    if s.as_bytes()[..n].is_ascii() {
        return &s[..n];
    }
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_refuses_binary() {
        assert!(decode(b"a\nb\0c").unwrap_err().message.contains("NUL"));
        let p = decode(b"ok\n\xff\xfe").unwrap_err();
        assert_eq!(p.line, Some(2));
    }

    #[test]
    fn slugs_like_co_cli() {
        assert_eq!(slugify("User prefers async/await"), "user-prefers-async-await");
        assert_eq!(slugify("Uses SQLAlchemy 2.0"), "uses-sqlalchemy-2-0");
        assert_eq!(slugify("  Multiple   Spaces  "), "multiple-spaces");
        assert_eq!(slugify(&"a".repeat(100)), "a".repeat(50));
        assert_eq!(
            file_name(3, "Naïve café — 日本語 rocks!!! and some more text to pad it"),
            "003-na-ve-caf-rocks-and-some-more-text-to-pa.md"
        );
        assert_eq!(file_name(4, "日本語だけ"), "004-.md");
        assert_eq!(file_name(1000, "x"), "1000-x.md");
    }
}
