//! The inbox (docs/formats.md, A proposal): what agents propose for a person to accept, one file
//! each in `.co-cli/knowledge/inbox/`, `P<n>-<slug>.md`, in the memory format with the id the
//! string `P<n>` and the proposal's own keys (`kind`, `proposed_by`, `session`, `reason`; for a
//! record `subject` and `citations`, for a decision `decision_type`).
//!
//! This module owns the file format, the tolerant reader (a broken file is a diagnostic naming
//! it, never a stop) and the one way a proposal is created (under the repository lock, never over
//! a file that exists, with a number never used before in this clone). Whether a proposal is
//! worth writing (the stores' dedup) and what accepting one does are `ops::inbox`'s business;
//! removing a proposal goes through the operation's `Txn`, so `kb undo` brings it back.

use crate::error::{Diagnostic, KbError, io_at};
use crate::format::frontmatter::{self, Fields};
use crate::format::text;
use crate::format::time::{self, Micros};
use crate::fsio;
use crate::journal::Txn;
use crate::kinds::DecisionKind;
use crate::paths::Layout;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::path::{Path, PathBuf};

type Result<T> = std::result::Result<T, KbError>;

/// What a proposal would become once accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProposalKind {
    /// A markdown memory.
    Memory,
    /// A Copilot-style record.
    Record,
    /// An active decision.
    Decision,
}

impl ProposalKind {
    pub const ALL: [ProposalKind; 3] = [ProposalKind::Memory, ProposalKind::Record, ProposalKind::Decision];

    pub fn as_str(self) -> &'static str {
        match self {
            ProposalKind::Memory => "memory",
            ProposalKind::Record => "record",
            ProposalKind::Decision => "decision",
        }
    }

    pub fn parse(text: &str) -> Option<ProposalKind> {
        ProposalKind::ALL.into_iter().find(|k| k.as_str() == text.trim())
    }
}

/// A proposal's contents, checked and screened by its operation, ready to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct NewProposal {
    pub kind: ProposalKind,
    pub content: String,
    /// `agent:<name>`.
    pub proposed_by: String,
    pub session: Option<String>,
    pub reason: Option<String>,
    pub tags: Vec<String>,
    pub source: Option<String>,
    /// Records only.
    pub subject: Option<String>,
    /// Records only.
    pub citations: Vec<String>,
    /// Decisions only.
    pub decision_type: Option<DecisionKind>,
}

/// One proposal as read from its file.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// `P<n>`.
    pub id: String,
    pub number: u64,
    pub path: PathBuf,
    /// `created` as written.
    pub created: String,
    pub created_at: Micros,
    pub fields: NewProposal,
}

/// The proposals read from the folder, and the files skipped.
#[derive(Debug, Default)]
pub struct Scan {
    /// Valid proposals, by number (then file name).
    pub entries: Vec<Entry>,
    /// One diagnostic per skipped file, and one per file of a duplicate id.
    pub problems: Vec<Diagnostic>,
    /// How many `.md` files were looked at.
    pub files: usize,
    /// The highest number of any file, valid or not (by its id or its name).
    max_number: Option<u64>,
}

impl Scan {
    /// Returns the only valid proposal with number `n`: not found, and an id two files claim,
    /// are errors naming it.
    pub fn by_number(&self, n: u64) -> Result<&Entry> {
        let found: Vec<&Entry> = self.entries.iter().filter(|e| e.number == n).collect();
        match found.as_slice() {
            [] => Err(KbError::not_found("proposal", format!("P{n}"))),
            [one] => Ok(one),
            many => {
                Err(KbError::duplicate_id("proposal", format!("P{n}"), many.iter().map(|e| name_of(&e.path)).collect()))
            }
        }
    }
}

/// Returns the file name of a proposal: `P<n>-<slug>.md`, the slug from the first 50 characters
/// of the text (as a memory's), `P<n>.md` when the text gives no slug.
pub fn file_name(number: u64, content: &str) -> String {
    let head: String = content.chars().take(50).collect();
    match text::slugify(&head) {
        s if s.is_empty() => format!("P{number}.md"),
        s => format!("P{number}-{s}.md"),
    }
}

/// Returns the number of a proposal's file name (`P12-x.md`, `P12.md`), if it is one.
fn number_of_name(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".md")?.strip_prefix('P')?;
    let digits = stem.split('-').next()?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

/// Returns the number of an id as people type it: `P12`, `p12` or `12`.
pub fn parse_id(raw: &str) -> Result<u64> {
    let t = raw.trim();
    let digits = t.strip_prefix(['P', 'p']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(KbError::rejected(
            "id",
            format!("invalid proposal id {raw:?}: a proposal id is P and a number (P3)"),
        ));
    }
    digits.parse().map_err(|_| KbError::not_found("proposal", t))
}

/// Returns how many proposal files wait in the inbox, by their names alone (one `read_dir`, no
/// file read): cheap enough for a hook at the start of every session. A missing or unreadable
/// folder counts none.
// Called by the session-start hook (`kb hook session-start`), through `ops::inbox::count`.
#[allow(dead_code)]
pub fn count(layout: &Layout) -> usize {
    let Ok(listing) = std::fs::read_dir(layout.inbox()) else { return 0 };
    listing.filter_map(|e| e.ok()).filter(|e| number_of_name(&e.file_name().to_string_lossy()).is_some()).count()
}

/// Reads every proposal file. A missing folder is an empty inbox; a broken file is skipped with
/// a diagnostic naming it; nothing is written.
pub fn scan(layout: &Layout) -> Result<Scan> {
    let dir = layout.inbox();
    let mut scan = Scan::default();
    let listing = match std::fs::read_dir(&dir) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(scan),
        Err(e) => return Err(io_at(&dir)(e)),
    };
    let mut paths: Vec<PathBuf> = Vec::new();
    for entry in listing {
        let entry = entry.map_err(io_at(&dir))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".md") && !name.starts_with('.') {
            paths.push(entry.path());
        }
    }
    paths.sort();
    for path in paths {
        scan.files += 1;
        let named = number_of_name(&name_of(&path));
        scan.max_number = scan.max_number.max(named);
        let bytes = match fsio::read_input(&path, &layout.root) {
            Ok(Some(b)) => b,
            Ok(None) => continue,
            Err(e) => {
                scan.problems.push(Diagnostic::error(None, format!("cannot read: {e}")).in_file(&path));
                continue;
            }
        };
        if bytes.len() as u64 > text::MAX_FILE_BYTES {
            let msg = format!("{} bytes: larger than a proposal file may be", bytes.len());
            scan.problems.push(Diagnostic::error(None, msg).in_file(&path));
            continue;
        }
        match text::decode(&bytes).and_then(parse) {
            Ok((number, created, created_at, fields)) => {
                scan.max_number = scan.max_number.max(Some(number));
                scan.entries.push(Entry { id: format!("P{number}"), number, path, created, created_at, fields });
            }
            Err(d) => scan.problems.push(d.in_file(&path)),
        }
    }
    scan.entries.sort_by(|a, b| a.number.cmp(&b.number).then_with(|| a.path.cmp(&b.path)));
    for e in &scan.entries {
        let others: Vec<String> = scan
            .entries
            .iter()
            .filter(|o| o.number == e.number && o.path != e.path)
            .map(|o| name_of(&o.path))
            .collect();
        if !others.is_empty() {
            let msg = format!(
                "duplicate proposal id {}: also used by {}; give one file another P number",
                e.id,
                others.join(", ")
            );
            scan.problems.push(Diagnostic::error(None, msg).in_file(&e.path));
        }
    }
    Ok(scan)
}

/// Parses a proposal file's text: its number, `created` (as written and as an instant) and its
/// fields. A problem is a diagnostic with the line when known (no path yet).
pub fn parse(text: &str) -> std::result::Result<(u64, String, Micros, NewProposal), Diagnostic> {
    let (split, f) = frontmatter::split_and_parse(text)?;
    let bad = |msg: String| Diagnostic::error(Some(split.yaml_line), msg);
    let id = string(&f, "id").map_err(bad)?.ok_or_else(|| bad("missing required field: id (P and a number)".into()))?;
    let number = id
        .strip_prefix('P')
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse::<u64>().ok())
        .ok_or_else(|| bad(format!("invalid id '{id}': a proposal's id is P and a number (P3)")))?;
    let kind_text = string(&f, "kind").map_err(bad)?.ok_or_else(|| bad("missing required field: kind".into()))?;
    let kind = ProposalKind::parse(&kind_text)
        .ok_or_else(|| bad(format!("invalid kind '{kind_text}': must be memory, record or decision")))?;
    let created = string(&f, "created").map_err(bad)?.ok_or_else(|| bad("missing required field: created".into()))?;
    let created_at = time::parse(&created).map(time::micros).map_err(|e| bad(format!("invalid created: {e}")))?;
    let proposed_by = string(&f, "proposed_by")
        .map_err(bad)?
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| bad("missing required field: proposed_by (agent:<name>)".into()))?;
    let tags = list(&f, "tags").map_err(bad)?;
    let citations = list(&f, "citations").map_err(bad)?;
    let subject = string(&f, "subject").map_err(bad)?.filter(|s| !s.trim().is_empty());
    if kind == ProposalKind::Record && subject.is_none() {
        return Err(bad("a record proposal needs a subject".into()));
    }
    let decision_type = match string(&f, "decision_type").map_err(bad)? {
        None if kind == ProposalKind::Decision => Some(DecisionKind::Process),
        None => None,
        Some(t) => Some(DecisionKind::parse(t.trim()).ok_or_else(|| {
            bad(format!("invalid decision_type '{t}': must be architectural, scope, process or technical"))
        })?),
    };
    let content = text::clean_body(split.body);
    if content.is_empty() {
        return Err(bad("the proposal has no text: its body is empty".into()));
    }
    let fields = NewProposal {
        kind,
        content,
        proposed_by,
        session: string(&f, "session").map_err(bad)?,
        reason: string(&f, "reason").map_err(bad)?.filter(|s| !s.trim().is_empty()),
        tags,
        source: string(&f, "source").map_err(bad)?,
        subject,
        citations,
        decision_type,
    };
    Ok((number, created, created_at, fields))
}

/// Returns the string value of `key` (`None` when absent or null; a number or boolean as its
/// text, as a hand-written `session: 12` means); a list or map is an error naming the key.
fn string(f: &Fields, key: &str) -> std::result::Result<Option<String>, String> {
    match f.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v.to_string())),
        Some(v) => Err(format!("invalid {key}: {} where a string was expected", frontmatter::describe(v))),
    }
}

/// Returns the strings of the list `key` (absent or null: empty; one string: a list of it).
fn list(f: &Fields, key: &str) -> std::result::Result<Vec<String>, String> {
    match f.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.clone()),
                Value::Number(_) | Value::Bool(_) => Ok(i.to_string()),
                other => Err(format!("invalid {key}: {} in the list", frontmatter::describe(other))),
            })
            .collect(),
        Some(v) => Err(format!("invalid {key}: {} where a list was expected", frontmatter::describe(v))),
    }
}

/// Returns a new proposal file: sorted keys, co-cli quoting, the stripped body.
pub fn new_file(number: u64, p: &NewProposal, now: DateTime<Utc>) -> String {
    let opt = |v: &Option<String>| v.as_deref().map_or(Value::Null, Value::from);
    let mut entries = vec![
        ("created".to_string(), format!("created: '{}'\n", time::py_isoformat(now))),
        ("id".to_string(), frontmatter::entry("id", &Value::from(format!("P{number}")))),
        ("kind".to_string(), frontmatter::entry("kind", &Value::from(p.kind.as_str()))),
        ("proposed_by".to_string(), frontmatter::entry("proposed_by", &Value::from(p.proposed_by.as_str()))),
        ("reason".to_string(), frontmatter::entry("reason", &opt(&p.reason))),
        ("session".to_string(), frontmatter::entry("session", &opt(&p.session))),
        ("source".to_string(), frontmatter::entry("source", &opt(&p.source))),
        ("tags".to_string(), frontmatter::entry("tags", &Value::from(p.tags.clone()))),
    ];
    if p.kind == ProposalKind::Record {
        entries.push(("subject".to_string(), frontmatter::entry("subject", &opt(&p.subject))));
        entries.push(("citations".to_string(), frontmatter::entry("citations", &Value::from(p.citations.clone()))));
    }
    if let (ProposalKind::Decision, Some(t)) = (p.kind, p.decision_type) {
        entries.push(("decision_type".to_string(), frontmatter::entry("decision_type", &Value::from(t.as_str()))));
    }
    frontmatter::compose(&frontmatter::assemble(entries), &p.content)
}

/// `<root>/.co-cli/state/inbox-last`: the highest proposal number this clone has given, so a
/// number is never given twice (a proposal accepted, then another made, then the accept undone
/// would otherwise bring back a second `P<n>`). Local state: deleting it also deletes the undo
/// journal, which is what could bring a number back.
fn last_file(layout: &Layout) -> PathBuf {
    layout.co_cli().join("state").join("inbox-last")
}

/// Returns the highest number [`last_file`] holds (a torn or hand-edited file: the highest number
/// in it, else none).
fn last_given(layout: &Layout) -> Option<u64> {
    let bytes = fsio::read_input(&last_file(layout), &layout.root).ok()??;
    String::from_utf8_lossy(&bytes).split(|c: char| !c.is_ascii_digit()).filter_map(|d| d.parse().ok()).max()
}

/// Writes the proposal `p` as `P<n>`, n one more than the highest number in the folder or ever
/// given in this clone, created atomically and never over a file that exists. `_held` is the
/// repository lock, which makes the number race-free. Returns the id and the path.
pub fn create(layout: &Layout, _held: &fsio::Lock, p: &NewProposal, now: DateTime<Utc>) -> Result<(String, PathBuf)> {
    let dir = layout.inbox();
    crate::repo::guard(layout, &dir)?;
    let scan = scan(layout)?;
    let highest = scan.max_number.max(last_given(layout)).unwrap_or(0);
    let number = highest
        .checked_add(1)
        .ok_or_else(|| KbError::refused("propose", format!("no proposal number left after P{highest}")))?;
    std::fs::create_dir_all(&dir).map_err(io_at(&dir))?;
    let path = dir.join(file_name(number, &p.content));
    crate::repo::guard(layout, &path)?;
    fsio::create_atomic(&path, new_file(number, p, now).as_bytes()).map_err(io_at(&path))?;
    // The number is given: a failure to note it only risks a reuse after an undo.
    let state = layout.co_cli().join("state");
    if crate::paths::ensure_ignored_dir(&state).is_ok() {
        let _ = fsio::write_atomic_with(&last_file(layout), format!("{number}\n").as_bytes(), false);
    }
    Ok((format!("P{number}"), path))
}

/// Removes the proposal `e` through `txn` (an accept or a reject, journaled by its operation).
pub fn remove(layout: &Layout, txn: &mut Txn, e: &Entry) -> Result<()> {
    crate::repo::guard(layout, &e.path)?;
    txn.remove(&e.path)?;
    Ok(())
}

fn name_of(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).unwrap()
    }

    fn memory(text: &str) -> NewProposal {
        NewProposal {
            kind: ProposalKind::Memory,
            content: text.into(),
            proposed_by: "agent:claude".into(),
            session: None,
            reason: None,
            tags: vec!["preference".into()],
            source: Some("detected".into()),
            subject: None,
            citations: Vec::new(),
            decision_type: None,
        }
    }

    #[test]
    fn a_new_file_has_sorted_quoted_keys_and_reads_back() {
        let text = new_file(3, &memory("User prefers pytest"), now());
        assert_eq!(
            text,
            "---\ncreated: '2026-11-22T12:00:00+00:00'\nid: P3\nkind: memory\nproposed_by: agent:claude\nreason: null\n\
             session: null\nsource: detected\ntags:\n- preference\n---\n\nUser prefers pytest\n"
        );
        let (n, created, _, fields) = parse(&text).unwrap();
        assert_eq!((n, created.as_str()), (3, "2026-11-22T12:00:00+00:00"));
        assert_eq!(fields, memory("User prefers pytest"));
        let record = NewProposal {
            kind: ProposalKind::Record,
            subject: Some("yes".into()),
            citations: vec!["src/a.rs:1".into()],
            reason: Some("on".into()),
            ..memory("Run make")
        };
        let text = new_file(4, &record, now());
        assert!(text.contains("subject: 'yes'\n") && text.contains("reason: 'on'\n"), "{text}");
        assert_eq!(parse(&text).unwrap().3, record);
        let decision = NewProposal {
            kind: ProposalKind::Decision,
            decision_type: Some(DecisionKind::Scope),
            ..memory("No Windows")
        };
        let text = new_file(5, &decision, now());
        assert!(text.contains("decision_type: scope\n"), "{text}");
        assert_eq!(parse(&text).unwrap().3, decision);
    }

    #[test]
    fn broken_files_are_diagnostics_with_their_reason() {
        let cases = [
            ("no frontmatter\n", "no frontmatter"),
            ("---\nid: 3\nkind: memory\n---\n\nx\n", "invalid id '3'"),
            ("---\nid: P3\nkind: thought\n---\n\nx\n", "invalid kind 'thought'"),
            ("---\nid: P3\nkind: memory\ncreated: '2026-11-22'\nproposed_by: agent:x\n---\n\nx\n", "invalid created"),
            ("---\nid: P3\nkind: memory\ncreated: '2026-11-22T12:00:00Z'\n---\n\nx\n", "proposed_by"),
            ("---\nid: P3\nkind: record\ncreated: '2026-11-22T12:00:00Z'\nproposed_by: a\n---\n\nx\n", "subject"),
            ("---\nid: P3\nkind: memory\ncreated: '2026-11-22T12:00:00Z'\nproposed_by: a\n---\n\n  \n", "empty"),
            (
                "---\nid: P3\nkind: memory\ncreated: '2026-11-22T12:00:00Z'\nproposed_by: a\ntags: {a: 1}\n---\n\nx\n",
                "tags",
            ),
        ];
        for (text, why) in cases {
            let d = parse(text).unwrap_err();
            assert!(d.message.contains(why), "{text:?}: {}", d.message);
        }
    }

    #[test]
    fn numbers_grow_past_every_file_and_every_number_given() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout { root: dir.path().to_path_buf(), config: None };
        let held = crate::repo::lock(&layout).unwrap();
        let (id, first) = create(&layout, &held, &memory("One"), now()).unwrap();
        assert_eq!((id.as_str(), name_of(&first).as_str()), ("P1", "P1-one.md"));
        std::fs::write(layout.inbox().join("P7-broken.md"), "not a proposal").unwrap();
        let (id, _) = create(&layout, &held, &memory("Two"), now()).unwrap();
        assert_eq!(id, "P8", "a broken file's number is taken too");
        assert_eq!(count(&layout), 3);
        for entry in std::fs::read_dir(layout.inbox()).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
        let (id, _) = create(&layout, &held, &memory("Three"), now()).unwrap();
        assert_eq!(id, "P9", "a number is never given twice");
        let s = scan(&layout).unwrap();
        assert_eq!((s.entries.len(), s.problems.len()), (1, 0));
        assert!(matches!(s.by_number(4), Err(KbError::NotFound { .. })));
        assert_eq!(s.by_number(9).unwrap().fields.content, "Three");
    }

    #[test]
    fn ids_as_typed() {
        assert_eq!(parse_id(" P12 ").unwrap(), 12);
        assert_eq!(parse_id("p3").unwrap(), 3);
        assert_eq!(parse_id("3").unwrap(), 3);
        assert!(parse_id("P").is_err() && parse_id("P-1").is_err() && parse_id("mem-1").is_err());
        assert_eq!(number_of_name("P12-x-y.md"), Some(12));
        assert_eq!(number_of_name("P12.md"), Some(12));
        assert_eq!(number_of_name("notes.md"), None);
    }
}
