//! The context files (`context.md`, global and project) as the block reads them: their
//! frontmatter rules, their sections and budgets, and the Copilot-style records as the block's
//! `### Repository Memories` lines (docs/formats.md, The compiled block). Also the rules a
//! conflict-marked item of any source follows (left out, with one warning naming it).
//!
//! A context file has expected frontmatter with `version` (an integer) and `updated` (an ISO 8601
//! timestamp). Problems are warnings for `kb context` and problems for `kb check`; the body is used
//! either way, without the YAML block and without the comments on lines of their own. Nothing here
//! prints or writes.

use crate::error::Diagnostic;
use crate::format::frontmatter::{self, SplitError};
use crate::format::markdown;
use crate::format::time;
use crate::paths::Layout;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// Returns the body of a context file (after its frontmatter, when it has one) and the problems
/// of its frontmatter.
pub fn read(text: &str) -> (&str, Vec<Diagnostic>) {
    let split = match frontmatter::split(text) {
        Ok(s) => s,
        Err(SplitError::Missing) => {
            let body = text.strip_prefix('\u{feff}').unwrap_or(text);
            return (body, vec![Diagnostic::warning(Some(1), "no frontmatter: 'version' and 'updated' are required")]);
        }
        Err(SplitError::Unclosed) => {
            return (
                text,
                vec![Diagnostic::warning(Some(1), "frontmatter is not closed: no '---' line after the opening one")],
            );
        }
    };
    let fields = match frontmatter::parse(split.yaml) {
        Ok(f) => f,
        Err(e) => {
            return (
                split.body,
                vec![Diagnostic::warning(e.line.map(|l| l + split.yaml_line - 1).or(Some(1)), e.message)],
            );
        }
    };
    let line_of = |key: &str| {
        frontmatter::raw_entries(split.yaml, &fields)
            .and_then(|es| es.into_iter().find(|e| e.key == key))
            .map_or(Some(1), |e| Some(e.line + split.yaml_line - 1))
    };
    let mut problems = Vec::new();
    match fields.get("version") {
        None => problems.push(Diagnostic::warning(Some(1), "missing required field: version")),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => {}
        Some(_) => problems.push(Diagnostic::warning(line_of("version"), "'version' must be an integer")),
    }
    match fields.get("updated") {
        None => problems.push(Diagnostic::warning(Some(1), "missing required field: updated")),
        Some(Value::String(s)) => {
            // co-cli (the Python tool whose file layout kb keeps) only asks for a `YYYY-MM-DDTHH:MM:SS` prefix
            // here; a naive time is fine.
            if let (Err(e), false) = (time::parse(s), co_cli_timestamp_prefix(s)) {
                problems.push(Diagnostic::warning(
                    line_of("updated"),
                    format!("'updated' must be ISO 8601 with an offset: {e}"),
                ));
            }
        }
        Some(_) => {
            problems.push(Diagnostic::warning(line_of("updated"), "'updated' must be an ISO 8601 timestamp string"))
        }
    }
    (split.body, problems)
}

/// The header of the compiled block.
pub const HEADER: &str = "## Internal Knowledge";
/// Budget of the global section, in bytes (3 KiB): more is a warning.
pub const GLOBAL_BUDGET: usize = 3 * 1024;
/// Budget of the project section, in bytes (7 KiB): more is a warning.
pub const PROJECT_BUDGET: usize = 7 * 1024;
/// Size of the whole block above which kb warns (co-cli's `SIZE_TARGET`).
pub const SIZE_TARGET: usize = 10_240;
/// Size of the whole block above which kb truncates (co-cli's `SIZE_LIMIT`).
pub const SIZE_LIMIT: usize = 20_480;

/// The sections of the block, in priority order: truncation removes the last one first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionKind {
    Global,
    Project,
    RepositoryMemories,
}

impl SectionKind {
    /// Returns the section's heading text (without `### `).
    pub fn title(self) -> &'static str {
        match self {
            SectionKind::Global => "Global Context",
            SectionKind::Project => "Project Context",
            SectionKind::RepositoryMemories => "Repository Memories",
        }
    }

    /// Returns the section's budget in bytes; Repository Memories has none of its own.
    pub fn budget(self) -> Option<usize> {
        match self {
            SectionKind::Global => Some(GLOBAL_BUDGET),
            SectionKind::Project => Some(PROJECT_BUDGET),
            SectionKind::RepositoryMemories => None,
        }
    }
}

/// One non-empty section: where it came from and its body as it goes into the block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub kind: SectionKind,
    pub path: PathBuf,
    /// LF line ends, no frontmatter, no surrounding whitespace, never empty.
    pub body: String,
    /// The hash of the whole file as read (`audit::verdicts::key`): the audit's verdict of it.
    pub key: u64,
}

/// Returns a warning about `path`.
fn warn_at(path: &Path, line: Option<usize>, message: impl Into<String>) -> Diagnostic {
    Diagnostic::warning(line, message).in_file(path)
}

/// What the Internal Knowledge part of the block is built from: the non-empty context files in priority order,
/// the Copilot-style records with their file, and the warnings found while reading them.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub sections: Vec<Section>,
    pub records: Option<(PathBuf, Vec<RepoMemory>)>,
    pub warnings: Vec<Diagnostic>,
    /// The items left out for their conflict markers, one warning each ([`conflict`]).
    pub conflicts: Vec<Diagnostic>,
}

/// Returns the warning for a source item left out of the block because it holds git
/// conflict-marker lines (docs/behaviour.md, Conflict markers): `what` names the item, `line` is
/// the file's first marker line. `kb compile` exits 1 when the block lost an item so.
pub fn conflict(path: &Path, line: Option<usize>, what: &str) -> Diagnostic {
    warn_at(
        path,
        line,
        format!(
            "git conflict markers: {what} left out of the context block until the conflict is resolved \
             (`kb check` lists every marker line)"
        ),
    )
}

/// Returns the 1-based line of the first conflict-marker line of `text` (`format::merge`'s
/// rules: a lone `=======` outside a conflict is a heading underline).
pub fn first_marker(text: &str) -> Option<usize> {
    if !crate::format::merge::may_have_markers(text) {
        return None;
    }
    crate::format::merge::markers(text).first().map(|&(line, _)| line)
}

/// Returns the first conflict-marker line of the file at `path` (read now, as kb reads its
/// inputs), or `None` when it has none or cannot be read.
pub fn file_marker(path: &Path, within: &Path) -> Option<usize> {
    let bytes = crate::fsio::read_input(path, within).ok()??;
    first_marker(&String::from_utf8_lossy(&bytes))
}

/// Reads every source of the block for `layout`: the global and project `context.md` and the
/// Copilot-style records. A missing file is no section and no warning; an unreadable one is a
/// warning.
pub fn load(layout: &Layout) -> Sources {
    let mut src = Sources::default();
    if let Some(path) = layout.global_context() {
        load_context_file(&path, layout.boundary(&path), SectionKind::Global, &mut src);
    }
    load_context_file(&layout.project_context(), &layout.root, SectionKind::Project, &mut src);
    load_repository_memories(&layout.copilot_memories(), &layout.root, &mut src);
    src
}

/// Returns a file's text, or `None` (with a warning unless the file does not exist).
fn read_text(path: &Path, within: &Path, warnings: &mut Vec<Diagnostic>) -> Option<String> {
    let bytes = match crate::fsio::read_input(path, within) {
        Ok(Some(b)) => b,
        Ok(None) => return None,
        Err(e) => {
            warnings.push(warn_at(path, None, format!("cannot read: {e}; left out")));
            return None;
        }
    };
    match crate::format::text::decode(&bytes) {
        Ok(t) => Some(t.to_string()),
        Err(p) => {
            warnings.push(warn_at(path, p.line, format!("{}; left out", p.message)));
            None
        }
    }
}

fn load_context_file(path: &Path, within: &Path, kind: SectionKind, src: &mut Sources) {
    let Some(text) = read_text(path, within, &mut src.warnings) else { return };
    // A half-merged file goes nowhere: not its frontmatter's problems, not a byte of its body.
    if let Some(line) = first_marker(&text) {
        src.conflicts.push(conflict(path, Some(line), "this context file is"));
        return;
    }
    let (body, problems) = read(&text);
    for p in problems {
        let message = if p.message.contains("frontmatter") { p.message } else { format!("frontmatter: {}", p.message) };
        src.warnings.push(warn_at(path, p.line, message));
    }
    // `body` is a suffix of `text`: the file line of the body's first non-blank line, for messages.
    let first_line = text[..text.len() - body.len()].matches('\n').count() + 1 + leading_lines(body);
    let mut body = crate::format::text::clean_body(body);
    if let Some(f) = markdown::open_fence(&body) {
        src.warnings.push(warn_at(
            path,
            Some(first_line + f.line - 1),
            format!("code fence '{}' is never closed; kb closes it at the end of the section", f.closer),
        ));
        body.push('\n');
        body.push_str(&f.closer);
    }
    // A comment on lines of its own is a note for the people who edit the file (the template's
    // guidance is one), not context for agents.
    if let Cow::Owned(stripped) = markdown::without_comments(&body) {
        body = crate::format::text::clean_body(&stripped);
    }
    if !body.is_empty() {
        src.sections.push(Section { kind, path: path.to_path_buf(), body, key: crate::audit::verdicts::key(&text) });
    }
}

/// Returns how many lines of `text` hold only whitespace before its first other character:
/// the lines `format::text::clean_body` strips from the front of a body.
fn leading_lines(text: &str) -> usize {
    let trimmed = text.trim_start_matches(frontmatter::py_isspace);
    text[..text.len() - trimmed.len()].matches('\n').count()
}

/// One Copilot-style record, as the context needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoMemory {
    pub subject: String,
    pub fact: String,
    /// More down votes than up: left out of the block.
    pub downvoted: bool,
    /// Up votes minus down votes: over a budget the lowest goes first.
    pub score: i64,
    /// `created`, when it parses: among equal scores the oldest goes first.
    pub created_at: Option<crate::format::time::Micros>,
    /// 1-based line in the file.
    pub line: usize,
    /// The id, as `kb list` shows it (for the warnings that name the record).
    pub id: String,
    /// Its `citations` (paths a stale check looks at).
    pub citations: Vec<String>,
    /// The hash of the fact as written (`audit::verdicts::key`): the audit's verdict of it.
    pub key: u64,
    /// The fact or subject as written holds git conflict-marker lines (escaped newlines in the
    /// JSON string): the record is left out like any conflicted item.
    pub marked: bool,
}

/// Reads Copilot-style records from JSONL text, tolerantly: blank lines are skipped, and a line
/// that is not a JSON object with a non-empty string `fact` is skipped and reported with its
/// 1-based line. `votes` (`{"up":N,"down":N}`) defaults to no votes.
///
pub fn read_repository_memories(file: &crate::copilot::JsonlFile) -> (Vec<RepoMemory>, Vec<Diagnostic>) {
    // The JSONL store's own reader, so the context sees exactly the records `kb list` shows.
    let all = crate::copilot::Records::parse(file);
    let problems = all
        .problems
        .iter()
        .filter(|p| p.skipped())
        .map(|p| Diagnostic::warning(p.line, format!("{}; skipped", p.message)))
        .collect();
    let records = all
        .iter()
        .filter(|r| !r.fact.trim().is_empty())
        .map(|r| RepoMemory {
            subject: one_line(r.subject),
            fact: one_line(r.fact),
            downvoted: r.downvoted(),
            score: i64::try_from(r.votes.up)
                .unwrap_or(i64::MAX)
                .saturating_sub(i64::try_from(r.votes.down).unwrap_or(i64::MAX)),
            created_at: r.created.and_then(|c| time::parse(c).ok()).map(time::micros),
            line: r.line(),
            id: r.id.to_string(),
            citations: citations_of(&all, &r),
            key: crate::audit::verdicts::key(r.fact),
            marked: first_marker(r.fact).is_some() || first_marker(r.subject).is_some(),
        })
        .collect();
    (records, problems)
}

/// Returns a record's citations; a line that names none is not parsed again.
fn citations_of(all: &crate::copilot::Records<'_>, r: &crate::copilot::Record<'_>) -> Vec<String> {
    match all.file.text(r.index) {
        Some(Ok(line)) if line.contains("\"citations\"") => {
            all.fields(r).citations.iter().map(|c| c.to_string()).collect()
        }
        _ => Vec::new(),
    }
}

/// Returns `s` on one line: runs of whitespace (newlines included) become one space.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Returns a record's line in the block: `subject: fact`, escaped so that it cannot
/// open a code fence.
pub fn record_line(r: &RepoMemory) -> String {
    let line = if r.subject.is_empty() { r.fact.clone() } else { format!("{}: {}", r.subject, r.fact) };
    // A leading backtick or tilde run would open a code fence.
    if line.starts_with(['`', '~']) { format!("\\{line}") } else { line }
}

fn load_repository_memories(path: &Path, within: &Path, src: &mut Sources) {
    let file = match crate::copilot::JsonlFile::read(path, within) {
        Ok(f) if f.exists => f,
        Ok(_) => return,
        Err(e) => {
            src.warnings.push(warn_at(path, None, format!("cannot read: {e}; left out")));
            return;
        }
    };
    let (mut records, problems) = read_repository_memories(&file);
    // The lines of each git conflict (from its `<<<<<<<` line to its `>>>>>>>` line; a leftover
    // marker is a conflict of its own line, an unclosed one runs to the end): records inside one
    // are a side of an unresolved merge, and are left out with the markers.
    let conflicts = conflict_regions(file.data());
    let in_conflict = |line: usize| conflicts.iter().any(|r| r.contains(&line));
    for r in &conflicts {
        let what = match r.end() - r.start() {
            0 => "this marker line is".to_string(),
            n => format!("the records of this conflict (lines {}-{}) are", r.start(), r.start() + n),
        };
        src.conflicts.push(conflict(path, Some(*r.start()), &what));
    }
    for p in problems {
        // A marker line is not JSON: the conflict's warning says what it is.
        if !p.line.is_some_and(in_conflict) {
            src.warnings.push(warn_at(path, p.line, p.message));
        }
    }
    records.retain(|r| {
        if in_conflict(r.line) {
            return false;
        }
        // A fact holding marker lines (as escaped newlines: the block would show them
        // flattened), or whose line would itself read as a marker line in the block.
        if r.marked || first_marker(&record_line(r)).is_some() {
            src.conflicts.push(conflict(path, Some(r.line), "this record is"));
            return false;
        }
        true
    });
    if records.iter().any(|r| !r.downvoted) {
        src.records = Some((path.to_path_buf(), records));
    }
}

/// Returns the line ranges (1-based, inclusive) of the git conflicts in `data`.
fn conflict_regions(data: &[u8]) -> Vec<std::ops::RangeInclusive<usize>> {
    use crate::format::merge::{self, Marker};
    let text = String::from_utf8_lossy(data);
    if !merge::may_have_markers(&text) {
        return Vec::new();
    }
    let last = text.split('\n').count();
    let mut out = Vec::new();
    let mut open: Option<usize> = None;
    for (line, m) in merge::markers(&text) {
        match (m, open) {
            (Marker::Start, Some(s)) => {
                out.push(s..=line - 1);
                open = Some(line);
            }
            (Marker::Start, None) => open = Some(line),
            (Marker::End, Some(s)) => {
                out.push(s..=line);
                open = None;
            }
            (Marker::End, None) => out.push(line..=line),
            _ => {}
        }
    }
    if let Some(s) = open {
        out.push(s..=last);
    }
    out
}

/// Returns whether `s` starts with `YYYY-MM-DDTHH:MM:SS`, co-cli's check for context files.
fn co_cli_timestamp_prefix(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| r.into_iter().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && b.get(10) == Some(&b'T')
        && digits(11..13)
        && b.get(13) == Some(&b':')
        && digits(14..16)
        && b.get(16) == Some(&b':')
        && digits(17..19)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_regions_run_from_start_to_end_marker() {
        let text = "a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> x\nd\n>>>>>>> y\ne\n<<<<<<< z\nf";
        assert_eq!(conflict_regions(text.as_bytes()), [2..=6, 8..=8, 10..=11]);
        assert!(conflict_regions(b"Title\n=======\n").is_empty());
        assert_eq!(first_marker("x\n||||||| base\n"), None);
        assert_eq!(first_marker("x\n<<<<<<< a\n||||||| base\n"), Some(2));
    }
}
