//! Frontmatter: splitting a markdown file into its YAML block and body, parsing the block, and
//! writing it back.
//!
//! Reading accepts what people and other tools write: a UTF-8 BOM, CRLF line ends, a `...`
//! closing line. Writing produces what co-cli (the Python tool whose file layout kb keeps) writes
//! (`---`, keys sorted, block lists, a blank line, the stripped body) and quotes every string that
//! PyYAML's YAML 1.1 resolver would read as another type. Keys kb does not change are written
//! back with their original text, so a rewrite shows in a diff only where something really
//! changed. This module knows nothing about memories.

use crate::format::yaml11;
use serde_json::Value;
use std::collections::BTreeMap;

/// A file split at its frontmatter.
#[derive(Debug, Clone, Copy)]
pub struct Split<'a> {
    /// The YAML text between the fences (may contain `\r`).
    pub yaml: &'a str,
    /// Everything after the closing fence line, byte for byte.
    pub body: &'a str,
    /// 1-based line number of the first YAML line in the file.
    pub yaml_line: usize,
}

/// Why a file has no usable frontmatter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SplitError {
    /// The file does not start with a `---` line.
    Missing,
    /// The opening `---` is never closed by a `---` or `...` line.
    Unclosed,
}

/// Splits `text` into frontmatter and body.
pub fn split(text: &str) -> Result<Split<'_>, SplitError> {
    let t = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first = t.split_inclusive('\n').next().ok_or(SplitError::Missing)?;
    if first.trim_end() != "---" {
        return Err(SplitError::Missing);
    }
    let start = first.len();
    let mut off = start;
    for line in t[start..].split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']).trim_end_matches([' ', '\t']);
        if bare == "---" || bare == "..." {
            return Ok(Split { yaml: &t[start..off], body: &t[off + line.len()..], yaml_line: 2 });
        }
        off += line.len();
    }
    Err(SplitError::Unclosed)
}

/// A YAML error with the 1-based line within the YAML text, when known.
#[derive(Debug, Clone, PartialEq)]
pub struct YamlError {
    pub line: Option<usize>,
    pub message: String,
}

/// Parsed frontmatter: top-level keys and their values.
pub type Fields = BTreeMap<String, Value>;

/// Parses a YAML block into a mapping. An empty or comment-only block is an empty mapping.
pub fn parse(yaml: &str) -> Result<Fields, YamlError> {
    if yaml.trim().is_empty() {
        return Ok(Fields::new());
    }
    if let Some(fields) = parse_simple(yaml) {
        return Ok(fields);
    }
    serde_saphyr::from_str::<Fields>(yaml).map_err(|e| {
        let line = e.location().map(|l| l.line() as usize).filter(|&l| l > 0);
        // A flow list or mapping left open (`tags: [bash`) swallows the lines after it, so the
        // parser stops further down: the line at fault is the one that opened it.
        match (line, unclosed_flow(yaml, line)) {
            (_, Some((open, bracket))) => YamlError {
                line: Some(open),
                message: format!(
                    "malformed YAML: unclosed bracket '{bracket}' (the list or mapping it opens is not closed)"
                ),
            },
            _ => YamlError { line, message: clean_yaml_message(&e.to_string()) },
        }
    })
}

/// Returns the 1-based line (and the bracket) of the first `[` or `{` outside quotes and comments
/// that is still open at the end of line `upto` (the whole block when `None`).
fn unclosed_flow(yaml: &str, upto: Option<usize>) -> Option<(usize, char)> {
    let mut open: Vec<(usize, char)> = Vec::new();
    for (n, line) in yaml.lines().enumerate().take(upto.unwrap_or(usize::MAX)) {
        let mut quote: Option<char> = None;
        let mut prev = ' ';
        for c in line.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '#') if prev == ' ' || prev == '\t' => break,
                (None, '[' | '{') => open.push((n + 1, c)),
                (None, ']' | '}') => {
                    open.pop();
                }
                _ => {}
            }
            prev = c;
        }
    }
    open.first().copied()
}

/// Parses the frontmatter shape kb and co-cli write — `key: scalar` lines and block lists of
/// scalars, keys sorted or not — without the general YAML parser, which is most of the cost of a
/// scan with no cache (a fresh clone reads every file). Returns `None` for anything else (quotes it
/// does not know, comments, flow collections, anchors, numbers other than plain decimal integers,
/// blank lines, duplicate keys...), and the caller uses serde-saphyr: the result is always exactly
/// what serde-saphyr would give (a property test compares the two).
fn parse_simple(yaml: &str) -> Option<Fields> {
    let mut out = Fields::new();
    let mut lines = yaml.lines().peekable();
    while let Some(line) = lines.next() {
        let (key, rest) = line.split_once(':')?;
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
            return None;
        }
        let value = if rest.is_empty() {
            let mut items = Vec::new();
            while let Some(item) = lines.peek().and_then(|l| l.strip_prefix("- ").or_else(|| l.strip_prefix("  - "))) {
                match simple_scalar(item)? {
                    v @ Value::String(_) => items.push(v),
                    // A number or boolean in a list: let the full parser and the validator decide.
                    _ => return None,
                }
                lines.next();
            }
            if items.is_empty() {
                return None;
            }
            Value::Array(items)
        } else {
            simple_scalar(rest.strip_prefix(' ')?)?
        };
        if out.insert(key.to_string(), value).is_some() {
            return None;
        }
    }
    Some(out)
}

/// Returns the value of a scalar in the simple shape: `null`, `true`, `false`, `[]`, a plain
/// decimal integer, a single-quoted string, or a plain lower-case word that every YAML reader takes
/// as that string.
fn simple_scalar(v: &str) -> Option<Value> {
    match v {
        "null" => return Some(Value::Null),
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        "[]" => return Some(Value::Array(Vec::new())),
        _ => {}
    }
    let b = v.as_bytes();
    if !b.is_empty() && b.len() <= 18 && b.iter().all(u8::is_ascii_digit) && (v == "0" || b[0] != b'0') {
        return v.parse::<u64>().ok().map(Value::from);
    }
    if let Some(inner) = v.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')) {
        // Inside single quotes only `''` is special; a lone quote ends the scalar early.
        if has_lone_quote(inner) || inner.bytes().any(|c| matches!(c, b'\n' | b'\r' | b'\t')) {
            return None;
        }
        if inner.chars().any(|c| c.is_control()) || inner.starts_with(' ') || inner.ends_with(' ') {
            return None;
        }
        return Some(Value::String(inner.replace("''", "'")));
    }
    let word = b.first().is_some_and(u8::is_ascii_lowercase)
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_' || *c == b'-');
    (word && crate::format::yaml11::is_plain_str(v)).then(|| Value::String(v.to_string()))
}

/// Splits and parses a knowledge file's frontmatter, as memories, decisions and sessions need
/// it: a missing or unclosed block, or YAML that does not parse, is an error diagnostic with its
/// file line (no path yet).
pub fn split_and_parse(text: &str) -> Result<(Split<'_>, Fields), crate::error::Diagnostic> {
    use crate::error::Diagnostic;
    let split = split(text).map_err(|e| match e {
        SplitError::Missing => Diagnostic::error(Some(1), "no frontmatter: the file must start with a '---' line"),
        SplitError::Unclosed => {
            Diagnostic::error(Some(1), "frontmatter is not closed: no '---' line after the opening one")
        }
    })?;
    let fields =
        parse(split.yaml).map_err(|e| Diagnostic::error(e.line.map(|l| l + split.yaml_line - 1), e.message))?;
    Ok((split, fields))
}

/// Describes a YAML value for an error message: `the string 'x'`, `a list`...
pub fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string '{s}'"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

/// Returns the first line of a serde-saphyr message without its "error: line N column M:" prefix
/// and its advice about parser options, which mean nothing to a kb user.
fn clean_yaml_message(raw: &str) -> String {
    let first = raw.lines().next().unwrap_or(raw).trim();
    let mut msg = first.strip_prefix("error:").unwrap_or(first).trim();
    if let Some((_, rest)) = msg.strip_prefix("line ").and_then(|rest| rest.split_once(": ")) {
        msg = rest;
    }
    let msg = msg.split(", set DuplicateKeyPolicy").next().unwrap_or(msg);
    if msg == "expected mapping start" || msg.starts_with("invalid type") {
        return "frontmatter is not a YAML mapping of keys to values".to_string();
    }
    format!("malformed YAML: {msg}")
}

/// One top-level `key: value` entry of a YAML block, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    pub key: String,
    /// The entry's lines, `\n`-terminated, CR removed: the comment and blank lines just before
    /// the key line, the key line, and its continuation lines.
    pub text: String,
    /// How many bytes of `text` are the leading comment and blank lines.
    pub lead: usize,
    /// 1-based line of the key within the YAML block.
    pub line: usize,
}

/// Splits a YAML block into its top-level entries, keeping each entry's exact text.
///
/// Comment and blank lines at column 0 go with the entry that follows them (the last entry keeps
/// trailing ones). Returns `None` when the block uses a construct this simple splitter does not
/// follow (complex keys, a top-level flow mapping, directives...) or when its keys disagree with
/// `fields`; callers must then not rewrite the file.
pub fn raw_entries(yaml: &str, fields: &Fields) -> Option<Vec<RawEntry>> {
    let mut entries: Vec<RawEntry> = Vec::new();
    let mut pending = String::new();
    for (i, line) in yaml.split_inclusive('\n').enumerate() {
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() || line.starts_with('#') {
            pending.push_str(line);
            pending.push('\n');
            continue;
        }
        let continuation = line.starts_with([' ', '\t']) || line == "-" || line.starts_with("- ");
        if continuation {
            // Lines inside a value (an indented block, or a list at the key's own indentation).
            let e = entries.last_mut()?;
            e.text.push_str(&std::mem::take(&mut pending));
            e.text.push_str(line);
            e.text.push('\n');
            continue;
        }
        let key = entry_key(line)?;
        let lead = pending.len();
        let text = format!("{}{line}\n", std::mem::take(&mut pending));
        entries.push(RawEntry { key, text, lead, line: i + 1 });
    }
    if let Some(last) = entries.last_mut() {
        last.text.push_str(&pending);
    }
    let same_keys = entries.len() == fields.len() && entries.iter().all(|e| fields.contains_key(&e.key));
    same_keys.then_some(entries)
}

/// Returns the key of a top-level `key: value` line, or `None` for anything unusual.
fn entry_key(line: &str) -> Option<String> {
    let first = line.chars().next()?;
    if first == '"' || first == '\'' {
        return quoted_key(line);
    }
    if "?&*!{[|>%@`-".contains(first) {
        return None;
    }
    let colon = line.find(": ").or_else(|| line.ends_with(':').then(|| line.len() - 1))?;
    let key = line[..colon].trim_end();
    if key.is_empty() || key.contains(" #") {
        return None;
    }
    Some(key.to_string())
}

/// Returns the key of a line that starts with a quoted key (`"id": 1`, `'my key': x`), for
/// keys without escapes other than `''`.
fn quoted_key(line: &str) -> Option<String> {
    let quote = line.chars().next()?;
    let body = &line[1..];
    let end = if quote == '\'' {
        let mut i = 0;
        loop {
            let at = body[i..].find('\'')? + i;
            if body[at + 1..].starts_with('\'') {
                i = at + 2;
            } else {
                break at;
            }
        }
    } else {
        let at = body.find('"')?;
        if body[..at].contains('\\') {
            return None;
        }
        at
    };
    let rest = &body[end + 1..];
    if !(rest.starts_with(": ") || rest == ":" || rest.starts_with(":\t")) {
        return None;
    }
    Some(body[..end].replace("''", "'"))
}

/// Returns a YAML block from `entries` with some keys changed, keeping every other entry's text,
/// comments and order. `changes` maps a key to its new entry text, or to `None` to remove it. A
/// key that is not there yet goes before the first key that sorts after it (so a sorted block
/// stays sorted), else at the end.
pub fn edit_entries(entries: Vec<RawEntry>, changes: &[(String, Option<String>)]) -> String {
    let mut out: Vec<(String, String)> = Vec::new();
    for e in entries {
        match changes.iter().find(|(k, _)| *k == e.key) {
            None => out.push((e.key, e.text)),
            Some((_, Some(new))) => out.push((e.key, format!("{}{new}", &e.text[..e.lead]))),
            Some((_, None)) => {
                // Keep the removed entry's leading comments with whatever follows.
                if e.lead > 0 {
                    out.push((String::new(), e.text[..e.lead].to_string()));
                }
            }
        }
    }
    for (key, new) in changes {
        let (Some(text), false) = (new, out.iter().any(|(k, _)| k == key)) else { continue };
        let at = out.iter().position(|(k, _)| !k.is_empty() && k.as_str() > key.as_str()).unwrap_or(out.len());
        out.insert(at, (key.clone(), text.clone()));
    }
    out.into_iter().map(|(_, t)| t).collect()
}

/// Returns a YAML document whose keys are sorted, from entries of `(key, text)` where each text
/// is a complete `key: value` entry ending in a newline.
pub fn assemble(mut entries: Vec<(String, String)>) -> String {
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.into_iter().map(|(_, t)| t).collect()
}

/// Returns `text` with `old`, its YAML between the fences (a slice of `text`, as [`split`] gives
/// it), replaced by `yaml`: the fences and the body keep their exact bytes, and a CRLF file stays
/// CRLF.
pub fn replace_yaml(text: &str, old: &str, yaml: &str) -> String {
    let yaml = if old.contains("\r\n") { yaml.replace('\n', "\r\n") } else { yaml.to_string() };
    let start = old.as_ptr() as usize - text.as_ptr() as usize;
    let end = start + old.len();
    format!("{}{}{}", &text[..start], yaml, &text[end..])
}

/// Returns a whole markdown file in co-cli's layout: fences, YAML, blank line, stripped body.
pub fn compose(yaml: &str, body: &str) -> String {
    format!("---\n{yaml}---\n\n{}\n", py_strip(body))
}

/// Python's `str.isspace()`: Unicode White_Space plus the four information separators.
pub fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()` with no argument.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

/// Returns `key: value\n` (or a block list) for a value, quoted for YAML 1.1 readers.
pub fn entry(key: &str, value: &Value) -> String {
    let mut out = String::new();
    out.push_str(&scalar_key(key));
    out.push(':');
    write_value(&mut out, value, 0);
    out
}

fn scalar_key(key: &str) -> String {
    quote(key)
}

/// Appends ` value\n` or a nested block to `out`, for a value that follows `key:`.
fn write_value(out: &mut String, value: &Value, indent: usize) {
    match value {
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            for item in items {
                out.push_str(&" ".repeat(indent));
                out.push('-');
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        // A mapping inside a list: first key on the dash line.
                        let mut first = true;
                        for (k, v) in m {
                            if first {
                                out.push(' ');
                                first = false;
                            } else {
                                out.push_str(&" ".repeat(indent + 2));
                            }
                            out.push_str(&scalar_key(k));
                            out.push(':');
                            write_value(out, v, indent + 4);
                        }
                    }
                    Value::Array(inner) if !inner.is_empty() => {
                        out.push(' ');
                        out.push_str(&flow(item));
                        out.push('\n');
                    }
                    _ => write_value(out, item, indent + 2),
                }
            }
        }
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            for (k, v) in m {
                out.push_str(&" ".repeat(indent + 2));
                out.push_str(&scalar_key(k));
                out.push(':');
                write_value(out, v, indent + 4);
            }
        }
        _ => {
            out.push(' ');
            out.push_str(&flow(value));
            out.push('\n');
        }
    }
}

/// Returns a value in flow style on one line.
fn flow(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(flow).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(m) => {
            let parts: Vec<String> = m.iter().map(|(k, v)| format!("{}: {}", quote(k), flow(v))).collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// Returns a number as PyYAML writes it: floats always have a dot or an exponent with a sign.
fn number(n: &serde_json::Number) -> String {
    if n.is_f64() {
        let f = n.as_f64().unwrap_or(0.0);
        if f.is_nan() {
            return ".nan".to_string();
        }
        if f.is_infinite() {
            return if f > 0.0 { ".inf".to_string() } else { "-.inf".to_string() };
        }
        let s = format!("{f:?}");
        if let Some((mantissa, exp)) = s.split_once('e') {
            let mantissa = if mantissa.contains('.') { mantissa.to_string() } else { format!("{mantissa}.0") };
            let exp = if exp.starts_with('-') { exp.to_string() } else { format!("+{exp}") };
            return format!("{mantissa}e{exp}");
        }
        return s;
    }
    n.to_string()
}

/// Returns `s` as a YAML scalar that a YAML 1.1 reader (PyYAML `safe_load`) and a YAML 1.2
/// reader both read back as exactly this string.
///
/// Plain when it is obviously a word; single-quoted when every character may appear raw; else
/// double-quoted with escapes.
pub fn quote(s: &str) -> String {
    if is_plain_safe(s) {
        return s.to_string();
    }
    if s.chars().all(single_quotable) {
        return format!("'{}'", s.replace('\'', "''"));
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if single_quotable(c) => out.push(c),
            c if (c as u32) <= 0xff => out.push_str(&format!("\\x{:02X}", c as u32)),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// A character PyYAML's reader accepts raw and that is not a line break or tab in any YAML version.
fn single_quotable(c: char) -> bool {
    matches!(c, '\u{20}'..='\u{7e}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
        && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

/// Whether single-quoted text holds a quote that is not half of a `''` (which would end the
/// scalar early), without building the text with the pairs taken out.
fn has_lone_quote(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\'' {
            if b.get(i + 1) != Some(&b'\'') {
                return true;
            }
            i += 1;
        }
        i += 1;
    }
    false
}

/// True for strings every YAML reader takes as the same plain string: a letter, `_` or `/` first,
/// then letters, digits, `_ . / -` and single inner spaces (no YAML syntax), and a string to
/// YAML 1.1's resolver (`yaml11::is_plain_str`).
fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else { return false };
    if !(first.is_ascii_alphabetic() || first == '_' || first == '/') {
        return false;
    }
    if s.ends_with(' ') || s.contains("  ") {
        return false;
    }
    if !s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b' ' | b'_' | b'.' | b'/' | b'-' | b'@' | b':')) {
        return false;
    }
    // A colon is plain only inside a word (`agent:claude-code`), as PyYAML writes it: `: ` or a
    // final `:` would make a key.
    if s.contains(": ") || s.ends_with(':') {
        return false;
    }
    yaml11::is_plain_str(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The simple parser gives exactly what serde-saphyr gives, or stands aside.
    mod simple_parser {
        use super::super::*;
        use proptest::prelude::*;

        fn scalar() -> impl Strategy<Value = String> {
            prop_oneof![
                Just("null".to_string()),
                Just("true".to_string()),
                Just("False".to_string()),
                Just("[]".to_string()),
                Just("yes".to_string()),
                Just("y".to_string()),
                Just("~".to_string()),
                Just("007".to_string()),
                Just("0o17".to_string()),
                Just("1_000".to_string()),
                Just("12345678901234567890123".to_string()),
                "[0-9]{1,20}",
                "[a-z][a-z0-9_-]{0,12}",
                "[a-zA-Z0-9 ._:#'-]{0,16}",
                "'[a-zA-Z0-9 ._:#-]{0,16}'",
                "'[a-z]{0,4}''[a-z]{0,4}'",
                "'[a-z ]{0,4}'[a-z]{0,3}",
                Just("'2026-11-22T14:27:04.330453+00:00'".to_string()),
                Just("2026-11-22T14:27:04Z".to_string()),
                Just("\"double\"".to_string()),
            ]
        }

        fn line() -> impl Strategy<Value = String> {
            let key = prop_oneof![Just("id"), Just("created"), Just("tags"), Just("source"), Just("x_y"), Just("Key")];
            let items = proptest::collection::vec(scalar(), 0..3);
            (key, scalar(), items, 0..3u8).prop_map(|(k, v, items, form)| match form {
                0 => format!("{k}: {v}"),
                1 => format!("{k}:{}", items.iter().map(|i| format!("\n- {i}")).collect::<String>()),
                _ => format!("{k}:{}", items.iter().map(|i| format!("\n  - {i}")).collect::<String>()),
            })
        }

        proptest! {
            #[test]
            fn agrees_with_saphyr(lines in proptest::collection::vec(line(), 1..6)) {
                let yaml = lines.join("\n");
                if let Some(fast) = parse_simple(&yaml) {
                    let full = serde_saphyr::from_str::<Fields>(&yaml);
                    prop_assert!(full.is_ok(), "{yaml:?}: saphyr fails but the simple parser took it");
                    prop_assert_eq!(fast, full.unwrap(), "{:?}", yaml);
                }
            }
        }

        #[test]
        fn takes_the_shape_kb_writes() {
            let yaml = "auto_category: preference\ncreated: '2026-11-22T14:27:04.330453+00:00'\nid: 7\nsource: detected\ntags:\n- preference\n- python";
            let f = parse_simple(yaml).expect("the simple shape");
            assert_eq!(f["id"], 7);
            assert_eq!(f["tags"], serde_json::json!(["preference", "python"]));
            assert_eq!(Some(f), serde_saphyr::from_str::<Fields>(yaml).ok());
            assert!(parse_simple("id: 1\ntags: []\nauto_category: null\ndecay_protected: true").is_some());
            assert!(parse_simple("id: 1 # c").is_none());
            assert!(parse_simple("id: 1\nid: 2").is_none());
            assert!(parse_simple("a: 'it''s'").is_some_and(|f| f["a"] == "it's"));
        }
    }
    use serde_json::json;

    #[test]
    fn split_plain_bom_crlf_dots() {
        let s = split("---\nid: 1\n---\n\nBody\n").unwrap();
        assert_eq!((s.yaml, s.body), ("id: 1\n", "\nBody\n"));
        let s = split("\u{feff}---\r\nid: 1\r\n---\r\nBody").unwrap();
        assert_eq!((s.yaml, s.body), ("id: 1\r\n", "Body"));
        let s = split("---\nid: 1\n...\nBody").unwrap();
        assert_eq!(s.body, "Body");
        let s = split("---\n---\nBody").unwrap();
        assert_eq!((s.yaml, s.body), ("", "Body"));
    }

    #[test]
    fn split_errors() {
        assert_eq!(split("").unwrap_err(), SplitError::Missing);
        assert_eq!(split("abc").unwrap_err(), SplitError::Missing);
        assert_eq!(split("\n---\nid: 1\n---\n").unwrap_err(), SplitError::Missing);
        assert_eq!(split("---\nid: 3\nBody").unwrap_err(), SplitError::Unclosed);
    }

    #[test]
    fn a_lone_quote_is_found_as_taking_the_pairs_out_would_find_it() {
        for s in ["", "a", "'", "''", ", '", ", '", "a''b", "a'b", "it''s", "''x'", "é''é'"] {
            assert_eq!(has_lone_quote(s), s.replace("''", "").contains('\''), "{s:?}");
        }
    }

    #[test]
    fn parse_reports_lines() {
        let e = parse("id: 1\ncreated: {{invalid\n").unwrap_err();
        assert!(e.message.starts_with("malformed YAML"), "{e:?}");
        let e = parse("a: 1\na: 2\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("duplicate"), "{e:?}");
        assert!(parse("- a\n").unwrap_err().message.contains("not a YAML mapping"));
        assert!(parse("# only a comment\n").unwrap().is_empty());
    }

    #[test]
    fn raw_entries_keep_text() {
        let yaml = "b: 2\ntags:\n- x\n- y\n# note\nzz: |\n  lit\n\n  more\na: 'q'\n";
        let fields = parse(yaml).unwrap();
        let e = raw_entries(yaml, &fields).unwrap();
        let keys: Vec<_> = e.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["b", "tags", "zz", "a"]);
        assert_eq!(e[1].text, "tags:\n- x\n- y\n");
        assert_eq!((e[2].text.as_str(), e[2].lead), ("# note\nzz: |\n  lit\n\n  more\n", 7));
        assert_eq!(e[3].line, 10);
        assert!(raw_entries("? complex\n: v\n", &parse("? complex\n: v\n").unwrap()).is_none());
        let quoted = "\"id\": 2\n'it''s': x\n";
        let keys: Vec<String> =
            raw_entries(quoted, &parse(quoted).unwrap()).unwrap().into_iter().map(|e| e.key).collect();
        assert_eq!(keys, ["id", "it's"]);
    }

    #[test]
    fn edits_keep_order_and_comments() {
        let yaml = "# top\nauto_category: null\ncreated: x\n# about tags\ntags: []\nzz: 1\n";
        let e = raw_entries(yaml, &parse(yaml).unwrap()).unwrap();
        let out = edit_entries(
            e.clone(),
            &[
                ("tags".into(), Some("tags:\n- a\n".into())),
                ("decay_protected".into(), Some("decay_protected: true\n".into())),
            ],
        );
        assert_eq!(
            out,
            "# top\nauto_category: null\ncreated: x\ndecay_protected: true\n# about tags\ntags:\n- a\nzz: 1\n"
        );
        let out = edit_entries(e, &[("auto_category".into(), None), ("zz".into(), None)]);
        assert_eq!(out, "# top\ncreated: x\n# about tags\ntags: []\n");
    }

    #[test]
    fn quoting_protects_yaml11_types() {
        for s in [
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "null",
            "~",
            "1_000",
            "12:30:00",
            "2026-01-01",
            "=",
            "<<",
            " lead",
            "trail ",
            "#x",
            "a: b",
            "",
            "57",
            "-1",
            ".inf",
            "0o17",
            "a:",
            "@at",
            ":x",
        ] {
            assert_ne!(quote(s), s, "{s:?} must be quoted");
        }
        // As PyYAML writes an author: a colon or an at sign inside a word stays plain.
        assert_eq!(quote("agent:claude-code"), "agent:claude-code");
        assert_eq!(quote("dev@example.com"), "dev@example.com");
        assert_eq!(quote("python"), "python");
        assert_eq!(quote("web dev"), "web dev");
        assert_eq!(quote("_consolidated"), "_consolidated");
        assert_eq!(quote("it's"), "'it''s'");
        assert_eq!(quote("日本語"), "'日本語'");
        assert_eq!(quote("a\nb"), "\"a\\nb\"");
        assert_eq!(quote("tab\there"), "\"tab\\there\"");
        assert_eq!(quote("nel\u{85}"), "\"nel\\x85\"");
        assert_eq!(quote("\u{feff}bom"), "\"\\uFEFFbom\"");
    }

    #[test]
    fn entries_round_trip_through_the_parser() {
        let v = json!({"tags": ["yes", "a: b", "agent:x", "a@b.c", "日本", "🎉", "multi\nline"], "n": null, "f": 1e20, "i": 3, "b": true,
                       "nested": {"k": [1, 2], "e": []}, "list": [{"a": 1, "b": "x"}, [1, 2]]});
        let yaml: String = v.as_object().unwrap().iter().map(|(k, v)| entry(k, v)).collect();
        let back = parse(&yaml).unwrap();
        assert_eq!(serde_json::to_value(back).unwrap(), v, "{yaml}");
        assert_eq!(entry("tags", &json!([])), "tags: []\n");
        assert_eq!(entry("tags", &json!(["a", "b"])), "tags:\n- a\n- b\n");
    }
}
