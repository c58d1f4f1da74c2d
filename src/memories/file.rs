//! The memory model: one markdown file with YAML frontmatter, read and validated as co-cli (the
//! Python tool whose memory layout kb keeps) does, with kb's stricter rules where co-cli crashes or
//! misleads: timestamps must carry an offset, ids are non-negative integers (not booleans). The
//! format is in docs/formats.md (A memory), the differences in docs/co-cli-differences.md.
//!
//! Also the layer keys (`type`, `importance`, `agent`; docs/formats.md, Type, importance and
//! agent): their typed values ([`MemoryType`], [`Importance`]), the agent-name rule
//! ([`check_agent`]) and who may see a memory ([`visible`]).

use crate::error::Diagnostic;
use crate::format::frontmatter::{self, Fields};
use crate::format::text;
use crate::format::time::{self, Micros};
use crate::format::yaml11;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// Tags that mark how a memory was triggered, in co-cli's category priority order.
pub const SIGNAL_TAGS: [&str; 5] = ["preference", "correction", "decision", "context", "pattern"];

/// Returns `detected` when any tag is a signal tag, else `user-told`.
pub fn detect_source<S: AsRef<str>>(tags: &[S]) -> &'static str {
    if tags.iter().any(|t| SIGNAL_TAGS.contains(&t.as_ref())) { "detected" } else { "user-told" }
}

/// Returns the first signal tag present, in the fixed priority order, regardless of tag order.
pub fn detect_category<S: AsRef<str>>(tags: impl IntoIterator<Item = S>) -> Option<&'static str> {
    let rank = |t: S| SIGNAL_TAGS.iter().position(|s| *s == t.as_ref());
    tags.into_iter().filter_map(rank).min().map(|i| SIGNAL_TAGS[i])
}

/// The tag that makes a memory that names an agent visible to every agent.
pub const CROSS_TEAM_TAG: &str = "cross-team";

pub use crate::kinds::{Importance, MemoryType};

/// Returns whether a memory that names `owner` (`None`: every agent's) with `tags` is visible to
/// `agent`: when it names no agent, names that agent, or is tagged `cross-team`.
/// Without an agent, only memories that name none or are tagged `cross-team` are visible.
pub fn visible<S: AsRef<str>>(owner: Option<&str>, tags: impl IntoIterator<Item = S>, agent: Option<&str>) -> bool {
    match owner {
        None => true,
        Some(owner) if agent == Some(owner) => true,
        Some(_) => tags.into_iter().any(|t| t.as_ref() == CROSS_TEAM_TAG),
    }
}

/// A memory as read from its file.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    pub id: u64,
    pub created: String,
    pub created_at: Micros,
    pub updated: Option<String>,
    pub updated_at: Option<Micros>,
    pub tags: Vec<String>,
    pub source: Option<String>,
    pub decay_protected: bool,
    /// `type` as written; `None` when absent: a learning.
    pub memory_type: Option<MemoryType>,
    /// `importance` as written; `None` when absent (see [`Memory::effective_importance`]).
    pub importance: Option<Importance>,
    /// `agent` as written; `None` when absent: shared by every agent.
    pub agent: Option<String>,
    /// Who created it (provenance: docs/formats.md, Provenance); `None` when absent or not a string: a person's.
    pub created_by: Option<String>,
    /// Who last rewrote its content; `None` when absent or not a string.
    pub updated_by: Option<String>,
    /// The body, stripped.
    pub content: String,
}

impl Memory {
    /// Returns the memory's importance, `medium` when the file has none. (The index's
    /// [`MemoryRef`](crate::memories::index::MemoryRef) has the type and visibility too.)
    pub fn effective_importance(&self) -> Importance {
        self.importance.unwrap_or_default()
    }
}

/// Parses and validates a memory file's text.
pub fn parse(text: &str) -> Result<Memory, Diagnostic> {
    let (split, fields) = frontmatter::split_and_parse(text)?;
    if fields.is_empty() {
        return Err(Diagnostic::error(Some(1), "empty frontmatter: missing required field: id"));
    }
    let line_of_key = |key: &str| -> Option<usize> {
        frontmatter::raw_entries(split.yaml, &fields)
            .and_then(|es| es.into_iter().find(|e| e.key == key))
            .map(|e| e.line + split.yaml_line - 1)
            .or(Some(1))
    };
    let bad = |key: &str, msg: String| Diagnostic::error(line_of_key(key), msg);
    let plain = std::cell::OnceCell::new();
    let plain_text = || plain.get_or_init(|| PlainText::read(split.yaml));
    if let Some(tag) = python_tag(split.yaml) {
        // PyYAML's safe_load refuses them, so co-cli skips the file; kb would silently read a string.
        return Err(Diagnostic::error(
            line_of_key(tag.0),
            format!("unsupported YAML tag {}: co-cli cannot read this file", tag.1),
        ));
    }
    let memory = validate(&fields, id_line(split.yaml), &plain_text).map_err(|(key, msg)| bad(key, msg))?;
    // co-cli reads files with universal newlines: a CRLF (or CR) body is plain `\n` text.
    let body = frontmatter::py_strip(split.body);
    let content = if body.contains('\r') { body.replace("\r\n", "\n").replace('\r', "\n") } else { body.to_string() };
    Ok(Memory { content, ..memory })
}

/// Returns the value text of a top-level `id:` line as written (a cheap look, no YAML parse).
fn id_line(yaml: &str) -> Option<&str> {
    yaml.lines().find_map(|l| l.strip_prefix("id:")).map(|v| v.split('#').next().unwrap_or("").trim())
}

/// Returns whether `text` is a plain decimal integer as both YAML 1.1 and 1.2 read it: digits, no
/// leading zero (`007` is octal to PyYAML).
fn plain_decimal(text: Option<&str>) -> bool {
    text.is_some_and(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) && (t == "0" || !t.starts_with('0')))
}

/// Returns the key and tag of the first value with a `!!python/` tag, which PyYAML's safe_load
/// refuses. A tag starts a node: it follows `key:`, a `- ` item or a flow bracket or comma,
/// outside quotes; `!!python/` inside a quoted or plain string (an author, a tag, a client name)
/// is text, which PyYAML reads as it is.
fn python_tag(yaml: &str) -> Option<(&str, &str)> {
    if !yaml.contains("!!python/") {
        return None;
    }
    yaml.lines().find_map(|l| {
        let at = tag_at(l)?;
        let tag = l[at..].split_whitespace().next()?;
        let key = l.split(':').next().unwrap_or("").trim_start_matches([' ', '-']).trim();
        Some((key, tag))
    })
}

/// Returns where a `!!python/` tag starts a node on line `l`, if one does.
fn tag_at(l: &str) -> Option<usize> {
    let (mut single, mut double, mut escaped) = (false, false, false);
    for (i, c) in l.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if double => escaped = true,
            '"' if !single => double = !double,
            '\'' if !double => single = !single,
            '#' if !single && !double && (i == 0 || l[..i].ends_with([' ', '\t'])) => return None,
            '!' if !single && !double && l[i..].starts_with("!!python/") => {
                let before = l[..i].trim_end_matches([' ', '\t']);
                let spaced = before.len() < i;
                let starts = before.is_empty()
                    || before.ends_with(['[', '{', ','])
                    || (spaced && (before.ends_with(':') || before.ends_with('-') || before.ends_with('?')));
                if starts {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The known scalar fields re-read as the text written in the file, for values serde-saphyr
/// resolved to a type PyYAML would not (see `yaml11`). Read only when such a value turns up.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct PlainText {
    id: Option<String>,
    created: Option<String>,
    updated: Option<String>,
    source: Option<String>,
    auto_category: Option<String>,
    consolidation_reason: Option<String>,
    #[serde(rename = "type")]
    memory_type: Option<String>,
    importance: Option<String>,
    agent: Option<String>,
    #[serde(skip)]
    tags: Option<Vec<String>>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct PlainTags {
    tags: Option<Vec<String>>,
}

impl PlainText {
    fn read(yaml: &str) -> PlainText {
        let mut p: PlainText = serde_saphyr::from_str(yaml).unwrap_or_default();
        p.tags = serde_saphyr::from_str::<PlainTags>(yaml).ok().and_then(|t| t.tags);
        p
    }

    fn field(&self, key: &str) -> Option<&str> {
        match key {
            "id" => self.id.as_deref(),
            "created" => self.created.as_deref(),
            "updated" => self.updated.as_deref(),
            "source" => self.source.as_deref(),
            "auto_category" => self.auto_category.as_deref(),
            "consolidation_reason" => self.consolidation_reason.as_deref(),
            "type" => self.memory_type.as_deref(),
            "importance" => self.importance.as_deref(),
            "agent" => self.agent.as_deref(),
            _ => None,
        }
    }
}

/// Returns the string co-cli reads for a scalar saphyr did not read as a string: the text as
/// written when PyYAML resolves it to a string too, else `None` (the value is not a string).
fn yaml11_string(written: Option<&str>) -> Option<String> {
    written.filter(|t| yaml11::resolve(t) == yaml11::Resolved::Str).map(String::from)
}

/// Validates memory frontmatter; on failure returns the key at fault and a message.
///
/// `plain` gives the text of scalar fields as written, for values whose type saphyr and PyYAML
/// resolve differently.
fn validate<'p>(
    f: &Fields,
    id_text: Option<&str>,
    plain: &dyn Fn() -> &'p PlainText,
) -> Result<Memory, (&'static str, String)> {
    let id = match f.get("id") {
        None => return Err(("id", "missing required field: id".into())),
        // `id: 0o17` or `id: 1_0` are numbers to saphyr (YAML 1.2) but not to PyYAML: read the
        // text as written unless it is plain decimal digits.
        Some(Value::Number(n)) if n.as_u64().is_some() && plain_decimal(id_text) => n.as_u64().unwrap_or_default(),
        Some(Value::Number(n)) if n.as_u64().is_some() => match plain().id.as_deref().map(yaml11::resolve) {
            Some(yaml11::Resolved::Int(v)) if v >= 0 && v <= u64::MAX as i128 => v as u64,
            Some(yaml11::Resolved::Int(_)) => {
                return Err(("id", format!("'id' must be a non-negative integer, got {n}")));
            }
            Some(yaml11::Resolved::Str) => {
                let written = plain().id.clone().unwrap_or_default();
                return Err((
                    "id",
                    format!("'id' must be an integer, got the string '{written}' (as YAML 1.1 reads it)"),
                ));
            }
            _ => n.as_u64().unwrap_or_default(),
        },
        Some(Value::Number(n)) => match plain().id.as_deref().map(yaml11::resolve) {
            // `id: 007` (octal in YAML 1.1, as co-cli reads it).
            Some(yaml11::Resolved::Int(v)) if v >= 0 && v <= u64::MAX as i128 => v as u64,
            Some(yaml11::Resolved::Int(_)) => {
                return Err(("id", format!("'id' must be a non-negative integer, got {n}")));
            }
            _ if n.as_i64().is_some() => return Err(("id", format!("'id' must be a non-negative integer, got {n}"))),
            _ => return Err(("id", format!("'id' must be an integer, got the number {n}"))),
        },
        Some(other) => return Err(("id", format!("'id' must be an integer, got {}", frontmatter::describe(other)))),
    };
    let timestamp = |key: &'static str| -> Result<Option<(String, Micros)>, (&'static str, String)> {
        let text = match f.get(key) {
            None => return Ok(None),
            Some(Value::String(s)) => s.clone(),
            Some(other @ (Value::Number(_) | Value::Bool(_))) => match plain().field(key) {
                Some(t) => t.to_string(),
                None => return Err((key, format!("'{key}' must be a string, got {}", frontmatter::describe(other)))),
            },
            Some(other) => {
                return Err((key, format!("'{key}' must be a string, got {}", frontmatter::describe(other))));
            }
        };
        let at = time::parse_co_cli(&text).map_err(|e| (key, format!("'{key}': {e}")))?;
        Ok(Some((text, time::micros(at))))
    };
    let Some((created, created_at)) = timestamp("created")? else {
        return Err(("created", "missing required field: created".into()));
    };
    let (updated, updated_at) = timestamp("updated")?.map_or((None, None), |(t, at)| (Some(t), Some(at)));
    let tags = match f.get("tags") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, t)| match t {
                Value::String(s) => Ok(s.clone()),
                Value::Number(_) | Value::Bool(_) => {
                    let written = plain().tags.as_ref().and_then(|ts| ts.get(i)).map(String::as_str);
                    yaml11_string(written).ok_or_else(|| {
                        ("tags", format!("'tags' must contain only strings, got {}", frontmatter::describe(t)))
                    })
                }
                other => {
                    Err(("tags", format!("'tags' must contain only strings, got {}", frontmatter::describe(other))))
                }
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(("tags", format!("'tags' must be a list, got {}", frontmatter::describe(other)))),
    };
    let optional_string = |key: &'static str| -> Result<Option<String>, (&'static str, String)> {
        match f.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other @ (Value::Number(_) | Value::Bool(_))) => yaml11_string(plain().field(key))
                .map(Some)
                .ok_or_else(|| (key, format!("'{key}' must be a string, got {}", frontmatter::describe(other)))),
            Some(other) => Err((key, format!("'{key}' must be a string, got {}", frontmatter::describe(other)))),
        }
    };
    let source = optional_string("source")?;
    optional_string("auto_category")?;
    optional_string("consolidation_reason")?;
    let decay_protected = match f.get("decay_protected") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err((
                "decay_protected",
                format!("'decay_protected' must be true or false, got {}", frontmatter::describe(other)),
            ));
        }
    };
    // The layer keys: absent is the default; any other value, null included, makes
    // the file invalid. A value YAML 1.1 reads as a string (`agent: 0o17`) is that string.
    let layer_text = |key: &'static str, expected: &str| -> Result<Option<String>, (&'static str, String)> {
        match f.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other @ (Value::Number(_) | Value::Bool(_))) => yaml11_string(plain().field(key))
                .map(Some)
                .ok_or_else(|| (key, format!("'{key}' must be {expected}, got {}", frontmatter::describe(other)))),
            Some(other) => Err((key, format!("'{key}' must be {expected}, got {}", frontmatter::describe(other)))),
        }
    };
    let memory_type = layer_text("type", "core_context, learning, pattern or update")?
        .map(|t| MemoryType::parse(&t).map_err(|e| ("type", e)))
        .transpose()?;
    let importance = layer_text("importance", "high, medium or low")?
        .map(|t| Importance::parse(&t).map_err(|e| ("importance", e)))
        .transpose()?;
    let agent = layer_text("agent", "an agent's name (a string)")?;
    if let Some(a) = &agent {
        text::check_agent(a).map_err(|e| ("agent", e))?;
    }
    let (created_by, updated_by) = crate::provenance::authors(f);
    Ok(Memory {
        id,
        created,
        created_at,
        updated,
        updated_at,
        tags,
        source,
        decay_protected,
        memory_type,
        importance,
        agent,
        created_by,
        updated_by,
        content: String::new(),
    })
}

/// Returns a new memory file in co-cli's exact layout.
pub fn new_memory_file(id: u64, tags: &[String], source: Option<&str>, content: &str, now: DateTime<Utc>) -> String {
    new_memory_file_with(id, tags, source, content, &[], now)
}

/// Returns a new memory file in co-cli's exact layout with extra frontmatter keys (co-cli keeps
/// unknown keys), e.g. the `citations` and `reason` of an imported Copilot record. An extra key
/// never replaces one of the five co-cli keys.
pub fn new_memory_file_with(
    id: u64,
    tags: &[String],
    source: Option<&str>,
    content: &str,
    extra: &[(String, Value)],
    now: DateTime<Utc>,
) -> String {
    let category = if source.is_some() { None } else { detect_category(tags) };
    let source = source.unwrap_or_else(|| detect_source(tags));
    let mut entries = vec![
        ("auto_category".into(), frontmatter::entry("auto_category", &category.map_or(Value::Null, Value::from))),
        ("created".into(), entry_text("created", &Value::from(time::py_isoformat(now)))),
        ("id".into(), frontmatter::entry("id", &Value::from(id))),
        ("source".into(), frontmatter::entry("source", &Value::from(source))),
        ("tags".into(), frontmatter::entry("tags", &Value::from(tags.to_vec()))),
    ];
    for (k, v) in extra {
        if !entries.iter().any(|(have, _)| have == k) {
            entries.push((k.clone(), frontmatter::entry(k, v)));
        }
    }
    frontmatter::compose(&frontmatter::assemble(entries), content)
}

/// Returns a frontmatter entry; timestamps are single-quoted as PyYAML writes them.
pub fn entry_text(key: &str, value: &Value) -> String {
    match (key, value) {
        ("created" | "updated", Value::String(s)) if !s.contains('\'') => format!("{key}: '{s}'\n"),
        _ => frontmatter::entry(key, value),
    }
}

/// Returns the id after the highest one (1 for an empty store).
pub fn next_id(max: Option<u64>) -> Result<u64, crate::error::KbError> {
    match max {
        None => Ok(1),
        Some(m) => m.checked_add(1).ok_or_else(|| {
            crate::error::KbError::refused(
                "save",
                format!("no id left after {m}: give the memory with that id a smaller one"),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "---\nauto_category: preference\ncreated: '2026-11-22T14:27:04.330453+00:00'\nid: 7\nsource: detected\ntags:\n- preference\n- python\n---\n\nUser prefers pytest over unittest\n";

    #[test]
    fn parses_co_cli_file() {
        let m = parse(VALID).unwrap();
        assert_eq!(m.id, 7);
        assert_eq!(m.tags, ["preference", "python"]);
        assert_eq!(m.content, "User prefers pytest over unittest");
        assert_eq!(m.source.as_deref(), Some("detected"));
        assert!(!m.decay_protected);
    }

    #[test]
    fn accepts_bom_crlf_and_unquoted_timestamps() {
        let crlf = VALID.replace('\n', "\r\n");
        assert_eq!(parse(&format!("\u{feff}{crlf}")).unwrap().content, "User prefers pytest over unittest");
        let m = parse("---\nid: 1\ncreated: 2026-02-09T14:30:00Z\n---\nx").unwrap();
        assert_eq!(m.created, "2026-02-09T14:30:00Z");
    }

    fn problem(text: &str) -> Diagnostic {
        parse(text).unwrap_err()
    }

    #[test]
    fn validation_problems_name_the_line() {
        let p = problem("---\ncreated: '2026-01-01T00:00:00+00:00'\n---\nx");
        assert_eq!(p.message, "missing required field: id");
        let p = problem("---\nid: 1\ncreated: '2026-01-01T00:00:00+00:00'\ntags: not-a-list\n---\nx");
        assert_eq!((p.line, p.message.contains("must be a list")), (Some(4), true));
        let p = problem("---\nid: '57'\ncreated: '2026-01-01T00:00:00+00:00'\n---\nx");
        assert_eq!((p.line, p.message.contains("must be an integer")), (Some(2), true));
        assert!(problem("---\nid: true\ncreated: '2026-01-01T00:00:00+00:00'\n---\n").message.contains("boolean"));
        assert!(problem("---\nid: -3\ncreated: '2026-01-01T00:00:00+00:00'\n---\n").message.contains("non-negative"));
        assert!(problem("---\nid: 1\ncreated: 2026-01-01T00:00:00\n---\n").message.contains("no UTC offset"));
        assert!(problem("---\nid: 1\ncreated: 2026-01-01\n---\n").message.contains("date without a time"));
        assert!(problem("---\nid: 1\ncreated: garbage\n---\n").message.contains("not an ISO 8601"));
        assert!(
            problem("---\nid: 1\ncreated: '2026-01-01T00:00:00Z'\ntags: [ok, 123]\n---\n")
                .message
                .contains("only strings")
        );
        assert!(
            problem("---\nid: 1\ncreated: '2026-01-01T00:00:00Z'\nsource: 123\n---\n")
                .message
                .contains("'source' must be a string")
        );
        assert!(
            problem("---\nid: 1\ncreated: '2026-01-01T00:00:00Z'\nupdated: null\n---\n").message.contains("'updated'")
        );
        assert!(
            problem("---\nid: 1\ncreated: '2026-01-01T00:00:00Z'\ndecay_protected: 'yes'\n---\n")
                .message
                .contains("true or false")
        );
        assert_eq!(problem("---\n---\nBody").message, "empty frontmatter: missing required field: id");
        assert!(problem("no frontmatter").message.starts_with("no frontmatter"));
        assert!(problem("---\nid: 3\nBody").message.contains("not closed"));
        let p = problem("---\nid: 1\ncreated: {{invalid\n---\n");
        assert!(p.message.starts_with("malformed YAML"), "{p:?}");
    }

    #[test]
    fn reads_hand_written_yaml11_like_co_cli() {
        let m = parse("---\nid: 007\ncreated: '2026-01-01T00:00:00Z'\ntags: [y, n, 0o17, 1e3]\n---\nx").unwrap();
        assert_eq!((m.id, m.tags), (7, vec!["y".to_string(), "n".into(), "0o17".into(), "1e3".into()]));
        assert_eq!(parse("---\nid: 010\ncreated: '2026-01-01T00:00:00Z'\n---\nx").unwrap().id, 8);
        assert!(
            problem("---\nid: 1\ncreated: '2026-01-01T00:00:00Z'\ntags: [yes]\n---\n").message.contains("only strings")
        );
        assert!(
            problem("---\nid: 1\ncreated: '2026-01-01T00:00:00Z'\ntags: [123]\n---\n").message.contains("only strings")
        );
        assert!(problem("---\nid: 1.5\ncreated: '2026-01-01T00:00:00Z'\n---\n").message.contains("integer"));
        let m =
            parse("---\r\nid: 1\r\ncreated: '2026-01-01T00:00:00Z'\r\n---\r\n\r\nline one\r\nline two\r\n").unwrap();
        assert_eq!(m.content, "line one\nline two");
    }

    #[test]
    fn types_and_importance_parse_exactly_and_order() {
        for t in MemoryType::ALL {
            assert_eq!(MemoryType::parse(t.as_str()), Ok(t));
        }
        for i in Importance::ALL {
            assert_eq!(Importance::parse(i.as_str()), Ok(i));
        }
        assert_eq!(MemoryType::default(), MemoryType::Learning);
        assert_eq!(Importance::default(), Importance::Medium);
        assert!(Importance::High > Importance::Medium && Importance::Medium > Importance::Low);
        assert_eq!([Importance::Low, Importance::High, Importance::Medium].iter().max(), Some(&Importance::High));
        assert_eq!(
            MemoryType::parse("Core_Context").unwrap_err(),
            "unknown type 'Core_Context': expected core_context, learning, pattern or update"
        );
        assert_eq!(
            MemoryType::parse("core-context").unwrap_err().split(':').next(),
            Some("unknown type 'core-context'")
        );
        assert_eq!(
            Importance::parse("HIGH\n").unwrap_err(),
            "unknown importance 'HIGH\\n': expected high, medium or low"
        );
    }

    #[test]
    fn agent_names() {
        for ok in ["reviewer", "Code Reviewer", "agent-7", "日本語", "a.b_c@d", "x"] {
            assert_eq!(text::check_agent(ok), Ok(()), "{ok:?}");
        }
        let why = |name: &str| text::check_agent(name).unwrap_err();
        assert_eq!(why("a/b"), "invalid agent name 'a/b': an agent name cannot contain '/' or '\\'");
        assert!(why("a\\b").starts_with("invalid agent name 'a\\\\b': "), "{}", why("a\\b"));
        assert_eq!(
            why("a\nb"),
            "invalid agent name 'a\\nb': an agent name cannot contain a newline or another control character"
        );
        assert!(why("nul\0").contains("control character"));
        assert!(why("del\u{7f}").contains("control character"));
        assert!(why("").ends_with("an agent name cannot be empty or blank"));
        assert!(why(" \t ").ends_with("cannot be empty or blank"));
        assert!(why(" lead").ends_with("cannot start or end with whitespace"));
        assert!(why("trail\u{a0}").ends_with("cannot start or end with whitespace"));
    }

    #[test]
    fn visibility() {
        let cross = ["x", CROSS_TEAM_TAG];
        // Shared memories: visible to every agent and without one.
        assert!(visible::<&str>(None, [], Some("a")) && visible::<&str>(None, [], None));
        // An agent's own memory.
        assert!(visible::<&str>(Some("a"), [], Some("a")));
        assert!(!visible::<&str>(Some("a"), [], Some("b")) && !visible::<&str>(Some("a"), [], None));
        assert!(!visible::<&str>(Some("a"), [], Some("A")), "names are compared exactly");
        // Tagged cross-team: visible to everyone.
        assert!(visible(Some("a"), cross, Some("b")) && visible(Some("a"), cross, None));
        assert!(!visible(Some("a"), ["Cross-Team"], Some("b")), "the tag is matched exactly");
    }

    #[test]
    fn layer_keys_are_read_and_validated() {
        let head = "---\nid: 1\ncreated: '2026-01-01T00:00:00Z'\n";
        let m = parse(&format!("{head}---\nx")).unwrap();
        assert_eq!((m.memory_type, m.importance, m.agent.as_deref()), (None, None, None));
        assert_eq!(m.effective_importance(), Importance::Medium);
        let m = parse(&format!("{head}type: core_context\nimportance: low\nagent: 'yes'\n---\nx")).unwrap();
        assert_eq!(
            (m.memory_type, m.importance, m.agent.as_deref()),
            (Some(MemoryType::CoreContext), Some(Importance::Low), Some("yes"))
        );
        // YAML 1.1 reads these as strings, so they are names (co-cli's PyYAML agrees).
        assert_eq!(parse(&format!("{head}agent: 0o17\n---\nx")).unwrap().agent.as_deref(), Some("0o17"));
        let p = problem(&format!("{head}type: lesson\n---\nx"));
        assert_eq!(
            (p.line, p.message.as_str()),
            (Some(4), "unknown type 'lesson': expected core_context, learning, pattern or update")
        );
        let p = problem(&format!("{head}tags: []\nimportance: 2\n---\nx"));
        assert_eq!(
            (p.line, p.message.as_str()),
            (Some(5), "'importance' must be high, medium or low, got the number 2")
        );
        assert!(problem(&format!("{head}importance: on\n---\nx")).message.contains("got the boolean true"));
        assert!(problem(&format!("{head}type:\n---\nx")).message.contains("got null"));
        assert!(problem(&format!("{head}agent: yes\n---\nx")).message.contains("got the boolean true"));
        assert!(problem(&format!("{head}agent: 12\n---\nx")).message.contains("got the number 12"));
        assert!(problem(&format!("{head}agent: a/b\n---\nx")).message.contains("invalid agent name 'a/b'"));
        assert!(problem(&format!("{head}agent: \"a\\u0085b\"\n---\nx")).message.contains("control character"));
        assert!(problem(&format!("{head}agent: [a]\n---\nx")).message.contains("got a list"));
    }

    #[test]
    fn source_and_category() {
        assert_eq!(detect_category(["pattern", "preference"]), Some("preference"));
        assert_eq!(detect_category(["python"]), None);
        assert_eq!(detect_source(&["decision"]), "detected");
        assert_eq!(detect_source::<&str>(&[]), "user-told");
        assert_eq!(detect_source(&["Preference"]), "user-told");
    }
}
