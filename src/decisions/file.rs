//! One decision file (docs/formats.md, A decision): markdown with YAML frontmatter in the memories'
//! layout (keys sorted, `+00:00` timestamps, strings quoted as for co-cli, the Python tool whose file layout kb keeps).
//! Keys: `id`, `created`, `type`, `status`, `tags`, optional `updated` and `superseded_by`; the body
//! is the decision, its first line the title.

use crate::error::Diagnostic;
use crate::format::frontmatter::{self, Fields};
use crate::format::time::{self, Micros};
use crate::provenance::{ACCEPTED_BY, CREATED_BY};
use chrono::{DateTime, Utc};
use serde_json::Value;

pub use crate::kinds::DecisionKind;

/// Where a decision is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Proposed,
    Active,
    Superseded,
    Archived,
    Rejected,
}

impl Status {
    pub const ALL: [Status; 5] =
        [Status::Proposed, Status::Active, Status::Superseded, Status::Archived, Status::Rejected];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Proposed => "proposed",
            Status::Active => "active",
            Status::Superseded => "superseded",
            Status::Archived => "archived",
            Status::Rejected => "rejected",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether the decision is still in force or waiting for a person (list's default, dedup).
    pub fn is_open(self) -> bool {
        matches!(self, Status::Active | Status::Proposed)
    }
}

/// A decision as read from its file.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub id: u64,
    pub created: String,
    pub created_at: Micros,
    pub updated: Option<String>,
    pub kind: DecisionKind,
    pub status: Status,
    pub tags: Vec<String>,
    pub superseded_by: Option<u64>,
    /// Who created it (provenance); `None` when absent or not a string: a person's.
    pub created_by: Option<String>,
    /// Who last rewrote it (supersede, accept, reject, archive).
    pub updated_by: Option<String>,
    /// The body, stripped, with `\n` line ends.
    pub content: String,
}

impl Decision {
    /// The first line of the body.
    pub fn title(&self) -> &str {
        self.content.lines().next().unwrap_or("")
    }

    /// The order of `kb decision list`: oldest first, then by id.
    pub fn age_key(&self) -> (Micros, u64) {
        (self.created_at, self.id)
    }
}

/// Parses and validates a decision file's text. A problem names the line of the key at fault.
pub fn parse(text: &str) -> Result<Decision, Diagnostic> {
    let (split, fields) = frontmatter::split_and_parse(text)?;
    let entries = frontmatter::raw_entries(split.yaml, &fields);
    let line_of = |key: &str| -> Option<usize> {
        entries
            .as_ref()
            .and_then(|es| es.iter().find(|e| e.key == key))
            .map(|e| e.line + split.yaml_line - 1)
            .or(Some(1))
    };
    let decision = validate(&fields).map_err(|(key, msg)| Diagnostic::error(line_of(key), msg))?;
    let body = frontmatter::py_strip(split.body);
    let content = if body.contains('\r') { body.replace("\r\n", "\n").replace('\r', "\n") } else { body.to_string() };
    Ok(Decision { content, ..decision })
}

type Invalid = (&'static str, String);

fn validate(f: &Fields) -> Result<Decision, Invalid> {
    let integer = |key: &'static str| -> Result<Option<u64>, Invalid> {
        match f.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => {
                n.as_u64().map(Some).ok_or_else(|| (key, format!("'{key}' must be a non-negative integer, got {n}")))
            }
            Some(other) => Err((key, format!("'{key}' must be an integer, got {}", frontmatter::describe(other)))),
        }
    };
    let string = |key: &'static str| -> Result<Option<&str>, Invalid> {
        match f.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err((key, format!("'{key}' must be a string, got {}", frontmatter::describe(other)))),
        }
    };
    let required = |key: &'static str| (key, format!("missing required field: {key}"));
    let id = integer("id")?.ok_or_else(|| required("id"))?;
    let timestamp = |key: &'static str| -> Result<Option<(String, Micros)>, Invalid> {
        let Some(text) = string(key)? else { return Ok(None) };
        let at = time::parse_co_cli(text).map_err(|e| (key, format!("'{key}': {e}")))?;
        Ok(Some((text.to_string(), time::micros(at))))
    };
    let (created, created_at) = timestamp("created")?.ok_or_else(|| required("created"))?;
    let updated = timestamp("updated")?.map(|(t, _)| t);
    let kind_text = string("type")?.ok_or_else(|| required("type"))?;
    let kind = DecisionKind::parse(kind_text).ok_or_else(|| {
        ("type", format!("unknown type '{kind_text}': expected architectural, scope, process or technical"))
    })?;
    let status_text = string("status")?.ok_or_else(|| required("status"))?;
    let status = Status::parse(status_text).ok_or_else(|| {
        (
            "status",
            format!("unknown status '{status_text}': expected proposed, active, superseded, archived or rejected"),
        )
    })?;
    let tags = match f.get("tags") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|t| match t {
                Value::String(s) => Ok(s.clone()),
                other => {
                    Err(("tags", format!("'tags' must contain only strings, got {}", frontmatter::describe(other))))
                }
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(("tags", format!("'tags' must be a list, got {}", frontmatter::describe(other)))),
    };
    let superseded_by = integer("superseded_by")?;
    let (created_by, updated_by) = crate::provenance::authors(f);
    Ok(Decision {
        id,
        created,
        created_at,
        updated,
        kind,
        status,
        tags,
        superseded_by,
        created_by,
        updated_by,
        content: String::new(),
    })
}

/// Returns a timestamp entry, single-quoted as PyYAML writes it.
pub fn timestamp_entry(key: &str, at: DateTime<Utc>) -> String {
    format!("{key}: '{}'\n", time::py_isoformat(at))
}

/// Returns a new decision file: sorted keys, co-cli quoting, the stripped body; `created_by`
/// when the author is known, `accepted_by` for a proposal a person accepted.
#[allow(clippy::too_many_arguments)]
pub fn new_file(
    id: u64,
    kind: DecisionKind,
    status: Status,
    tags: &[String],
    content: &str,
    author: Option<&str>,
    accepted_by: Option<&str>,
    now: DateTime<Utc>,
) -> String {
    let mut entries = vec![
        ("created".to_string(), timestamp_entry("created", now)),
        ("id".to_string(), frontmatter::entry("id", &Value::from(id))),
        ("status".to_string(), frontmatter::entry("status", &Value::from(status.as_str()))),
        ("tags".to_string(), frontmatter::entry("tags", &Value::from(tags.to_vec()))),
        ("type".to_string(), frontmatter::entry("type", &Value::from(kind.as_str()))),
    ];
    if let Some(author) = author {
        entries.push((CREATED_BY.to_string(), frontmatter::entry(CREATED_BY, &Value::from(author))));
    }
    if let Some(person) = accepted_by {
        entries.push((ACCEPTED_BY.to_string(), frontmatter::entry(ACCEPTED_BY, &Value::from(person))));
    }
    frontmatter::compose(&frontmatter::assemble(entries), content)
}

/// Returns the file name of a decision: `{id:03}-{slug}.md`, as memories are named.
pub fn file_name(id: u64, content: &str) -> String {
    crate::format::text::file_name(id, content)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        time::parse(text).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn writes_sorted_quoted_keys_and_reads_them_back() {
        let tags = vec!["db".to_string(), "yes".to_string()];
        let text = new_file(
            3,
            DecisionKind::Architectural,
            Status::Active,
            &tags,
            "  Use PostgreSQL\n\nNot MySQL.  ",
            Some("dev@example.com"),
            None,
            at("2026-11-24T10:00:00Z"),
        );
        assert_eq!(
            text,
            "---\ncreated: '2026-11-24T10:00:00+00:00'\ncreated_by: dev@example.com\nid: 3\nstatus: active\ntags:\n- db\n- 'yes'\ntype: architectural\n---\n\nUse PostgreSQL\n\nNot MySQL.\n"
        );
        let d = parse(&text).unwrap();
        assert_eq!(
            (d.id, d.kind, d.status, d.title()),
            (3, DecisionKind::Architectural, Status::Active, "Use PostgreSQL")
        );
        assert_eq!(d.tags, tags);
        assert_eq!((d.updated, d.superseded_by), (None, None));
        assert_eq!(d.content, "Use PostgreSQL\n\nNot MySQL.");
        let empty =
            new_file(1, DecisionKind::Scope, Status::Proposed, &[], "x", None, None, at("2026-11-24T10:00:00.5Z"));
        assert!(empty.contains("tags: []\n") && empty.contains("created: '2026-11-24T10:00:00.500000+00:00'"));
    }

    #[test]
    fn optional_keys_crlf_and_unknown_keys() {
        let d = parse("---\r\ncreated: '2026-01-01T00:00:00+00:00'\r\nid: 2\r\nowner: ana\r\nstatus: superseded\r\nsuperseded_by: 5\r\ntype: process\r\nupdated: '2026-02-01T00:00:00+00:00'\r\n---\r\n\r\nA\r\nB\r\n")
            .unwrap();
        assert_eq!(
            (d.superseded_by, d.updated.as_deref(), d.content.as_str()),
            (Some(5), Some("2026-02-01T00:00:00+00:00"), "A\nB")
        );
        assert!(d.tags.is_empty());
    }

    fn problem(text: &str) -> Diagnostic {
        parse(text).unwrap_err()
    }

    #[test]
    fn problems_name_the_key_line() {
        let head = "---\ncreated: '2026-01-01T00:00:00+00:00'\nid: 1\n";
        let p = problem(&format!("{head}status: active\ntype: cultural\n---\nx"));
        assert_eq!((p.line, p.message.contains("unknown type 'cultural'")), (Some(5), true));
        let p = problem(&format!("{head}status: done\ntype: scope\n---\nx"));
        assert_eq!((p.line, p.message.contains("unknown status 'done'")), (Some(4), true));
        let p = problem(&format!("{head}type: scope\n---\nx"));
        assert_eq!(p.message, "missing required field: status");
        let p = problem("---\nid: 1\nstatus: active\ntype: scope\n---\nx");
        assert_eq!(p.message, "missing required field: created");
        let p = problem("---\ncreated: '2026-01-01T00:00:00+00:00'\nstatus: active\ntype: scope\n---\nx");
        assert_eq!(p.message, "missing required field: id");
        let p = problem(&format!("{head}status: active\ntype: scope\nsuperseded_by: two\n---\nx"));
        assert!(p.message.contains("'superseded_by' must be an integer"), "{p:?}");
        let p = problem(&format!("{head}status: active\ntype: scope\ntags: a\n---\nx"));
        assert!(p.message.contains("must be a list"));
        let p = problem("---\nid: 1\ncreated: {{bad\n---\nx");
        assert!(p.message.starts_with("malformed YAML"), "{p:?}");
        assert!(problem("no frontmatter").message.starts_with("no frontmatter"));
        assert!(
            problem("---\nid: 1\ncreated: 2026-01-01T00:00:00\nstatus: active\ntype: scope\n---\n")
                .message
                .contains("offset")
        );
    }

    #[test]
    fn kinds_and_statuses() {
        assert_eq!(DecisionKind::parse("technical"), Some(DecisionKind::Technical));
        assert_eq!(DecisionKind::parse("Technical"), None);
        assert!(Status::Proposed.is_open() && Status::Active.is_open() && !Status::Archived.is_open());
        assert_eq!(file_name(3, "Use PostgreSQL for everything"), "003-use-postgresql-for-everything.md");
    }
}
