//! The always-loaded context (SPEC §8): reading the context files (`context.md`, global and
//! project) with their frontmatter rules, the `### Repository Memories` lines, and assembling them
//! into the one block agents load, within its byte budgets.
//!
//! A context file has expected frontmatter with `version` (an integer) and `updated` (an ISO 8601
//! timestamp). Problems are warnings for `kb context` and problems for `kb check`; the body is used
//! either way, without the YAML block. Where a block may be cut is `markdown`'s business; where it
//! is written is `compile`'s. Nothing here prints.

pub mod markdown;
pub mod targets;
pub mod watch;

use crate::error::{Diagnostic, Severity};
use crate::format::frontmatter::{self, SplitError};
use crate::format::time;
use crate::paths::Layout;
use serde_json::Value;
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
            // co-cli only asks for a `YYYY-MM-DDTHH:MM:SS` prefix here; a naive time is fine.
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

const WRAP_OPEN: &str = "<system-reminder>\n";
const WRAP_CLOSE: &str = "\n</system-reminder>";
/// What separates a section's heading from what comes before it: `"\n\n### "`.
const SECTION_SEP: &str = "\n\n### ";

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
}

/// Returns a warning about `path`.
fn warn_at(path: &Path, line: Option<usize>, message: impl Into<String>) -> Diagnostic {
    Diagnostic::warning(line, message).in_file(path)
}

/// What the block is built from: the non-empty sections in priority order, and the warnings
/// found while reading them.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub sections: Vec<Section>,
    pub warnings: Vec<Diagnostic>,
}

/// Reads every source of the block for `layout`: the global and project `context.md` and the
/// Copilot-style records. A missing file is no section and no warning; an unreadable one is a
/// warning.
pub fn load(layout: &Layout) -> Sources {
    let mut src = Sources::default();
    if let Some(path) = layout.global_context() {
        load_context_file(&path, crate::repo::boundary(layout, &path), SectionKind::Global, &mut src);
    }
    load_context_file(&layout.project_context(), &layout.root, SectionKind::Project, &mut src);
    load_repository_memories(&layout.copilot_memories(), &layout.root, &mut src);
    src
}

/// Returns a file's text, or `None` (with a warning unless the file does not exist).
fn read_text(path: &Path, within: &Path, warnings: &mut Vec<Diagnostic>) -> Option<String> {
    let bytes = match crate::repo::read_input(path, within) {
        Ok(Some(b)) => b,
        Ok(None) => return None,
        Err(e) => {
            warnings.push(warn_at(path, None, format!("cannot read: {e}; left out")));
            return None;
        }
    };
    match crate::memories::file::decode(&bytes) {
        Ok(t) => Some(t.to_string()),
        Err(p) => {
            warnings.push(warn_at(path, p.line, format!("{}; left out", p.message)));
            None
        }
    }
}

fn load_context_file(path: &Path, within: &Path, kind: SectionKind, src: &mut Sources) {
    let Some(text) = read_text(path, within, &mut src.warnings) else { return };
    let (body, problems) = read(&text);
    for p in problems {
        let message = if p.message.contains("frontmatter") { p.message } else { format!("frontmatter: {}", p.message) };
        src.warnings.push(warn_at(path, p.line, message));
    }
    // `body` is a suffix of `text`: the file line of the body's first non-blank line, for messages.
    let first_line = text[..text.len() - body.len()].matches('\n').count() + 1 + leading_lines(body);
    let mut body = normalize(body);
    if let Some(f) = markdown::open_fence(&body) {
        src.warnings.push(warn_at(
            path,
            Some(first_line + f.line - 1),
            format!("code fence '{}' is never closed; kb closes it at the end of the section", f.closer),
        ));
        body.push('\n');
        body.push_str(&f.closer);
    }
    if !body.is_empty() {
        src.sections.push(Section { kind, path: path.to_path_buf(), body });
    }
}

/// Returns how many lines of `text` hold only whitespace before its first other character:
/// the lines `normalize` strips from the front of a body.
fn leading_lines(text: &str) -> usize {
    let trimmed = text.trim_start_matches(frontmatter::py_isspace);
    text[..text.len() - trimmed.len()].matches('\n').count()
}

/// Returns a body with CRLF and lone CR turned into LF and surrounding whitespace removed (co-cli
/// strips the body too).
pub fn normalize(body: &str) -> String {
    let lf = if body.contains('\r') { body.replace("\r\n", "\n").replace('\r', "\n") } else { body.to_string() };
    frontmatter::py_strip(&lf).to_string()
}

/// One Copilot-style record, as the context needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoMemory {
    pub subject: String,
    pub fact: String,
    /// More down votes than up: left out of the block (SPEC §9).
    pub downvoted: bool,
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
        .map(|r| RepoMemory { subject: one_line(r.subject), fact: one_line(r.fact), downvoted: r.downvoted() })
        .collect();
    (records, problems)
}

/// Returns `s` on one line: runs of whitespace (newlines included) become one space.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Returns the Repository Memories body: one line `subject: fact` per record (SPEC §8), in file
/// order, leaving out records with more down than up votes.
///
/// The lines form one markdown paragraph; truncation still drops whole records, because a cut
/// inside a paragraph lands on a line break.
pub fn repository_memories_body(records: &[RepoMemory]) -> String {
    let mut out = String::new();
    for r in records.iter().filter(|r| !r.downvoted) {
        let line = if r.subject.is_empty() { r.fact.clone() } else { format!("{}: {}", r.subject, r.fact) };
        if !out.is_empty() {
            out.push('\n');
        }
        // A leading backtick or tilde run would open a code fence.
        if line.starts_with(['`', '~']) {
            out.push('\\');
        }
        out.push_str(&line);
    }
    out
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
    let (records, problems) = read_repository_memories(&file);
    for p in problems {
        src.warnings.push(warn_at(path, p.line, p.message));
    }
    let body = repository_memories_body(&records);
    if !body.is_empty() {
        src.sections.push(Section { kind: SectionKind::RepositoryMemories, path: path.to_path_buf(), body });
    }
}

/// How one section fared in the block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionReport {
    pub kind: SectionKind,
    pub path: PathBuf,
    /// Bytes of the section's body as read (before any truncation).
    pub bytes: usize,
    pub budget: Option<usize>,
    pub over_budget: bool,
    /// Bytes of the body that truncation removed (all of them when the section was left out).
    pub cut_bytes: usize,
}

/// The compiled block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The block, without a final newline; `None` when no section has content.
    pub text: Option<String>,
    /// UTF-8 bytes of `text` (0 without it).
    pub bytes: usize,
    /// Whether `text` was cut to `SIZE_LIMIT`.
    pub truncated: bool,
    pub sections: Vec<SectionReport>,
    pub warnings: Vec<Diagnostic>,
}

/// Returns the block for `layout`: `load` then `assemble`.
pub fn build(layout: &Layout, wrap: bool) -> Block {
    assemble(load(layout), wrap)
}

/// Returns the block built from `sources`, with budget warnings added: a section over its
/// budget, a block over `SIZE_TARGET`, and truncation to `SIZE_LIMIT`.
///
/// All sizes are UTF-8 bytes of the final text, `--wrap`'s `<system-reminder>` lines included.
pub fn assemble(sources: Sources, wrap: bool) -> Block {
    let Sources { sections, mut warnings } = sources;
    if sections.is_empty() {
        return Block { text: None, bytes: 0, truncated: false, sections: Vec::new(), warnings };
    }
    for s in &sections {
        if let Some(budget) = s.kind.budget().filter(|&b| s.body.len() > b) {
            warnings.push(warn_at(
                &s.path,
                None,
                format!(
                    "{} is {} bytes, over its {budget}-byte budget ({} KiB)",
                    s.kind.title(),
                    s.body.len(),
                    budget / 1024
                ),
            ));
        }
    }
    let parts: Vec<(&str, &str)> = sections.iter().map(|s| (s.kind.title(), s.body.as_str())).collect();
    let full = rendered_len(&parts, None, wrap);
    let fitted = fit(&parts, SIZE_LIMIT, wrap);
    let kept: Vec<(&str, &str)> = parts.iter().zip(&fitted.kept).map(|(&(t, b), &k)| (t, &b[..k])).collect();
    let text = render(&kept, fitted.marker.as_deref(), wrap);
    let truncated = fitted.marker.is_some();
    if truncated {
        // co-cli's wording, which its users (and their scripts) look for.
        warnings.push(Diagnostic::co_cli(
            Severity::Error,
            format!(
                "Knowledge size {full} bytes exceeds hard limit {SIZE_LIMIT} bytes. Truncating to limit \
                 ({} bytes; {}).",
                text.len(),
                fitted.summary(&parts)
            ),
        ));
    } else if full > SIZE_TARGET {
        warnings.push(Diagnostic::co_cli(
            Severity::Warning,
            format!(
                "Knowledge size {full} bytes exceeds target {SIZE_TARGET} bytes. Consider trimming \
                 context files to improve performance."
            ),
        ));
    }
    let reports = sections
        .iter()
        .zip(&fitted.kept)
        .map(|(s, &k)| SectionReport {
            kind: s.kind,
            path: s.path.clone(),
            bytes: s.body.len(),
            budget: s.kind.budget(),
            over_budget: s.kind.budget().is_some_and(|b| s.body.len() > b),
            cut_bytes: s.body.len() - k,
        })
        .collect();
    Block { bytes: text.len(), text: Some(text), truncated, sections: reports, warnings }
}

/// Returns the block text for `(title, body)` parts (empty bodies are left out), followed by a
/// truncation marker paragraph when given, wrapped in `<system-reminder>` lines when `wrap`.
///
/// Shape: `## Internal Knowledge` then, per section, a blank line, `### Title`, a blank line and
/// the body (co-cli's layout); no final newline.
pub fn render(parts: &[(&str, &str)], marker: Option<&str>, wrap: bool) -> String {
    let mut s = String::with_capacity(rendered_len(parts, marker, wrap));
    if wrap {
        s.push_str(WRAP_OPEN);
    }
    s.push_str(HEADER);
    for (title, body) in parts.iter().filter(|(_, b)| !b.is_empty()) {
        s.push_str(SECTION_SEP);
        s.push_str(title);
        s.push_str("\n\n");
        s.push_str(body);
    }
    if let Some(m) = marker {
        s.push_str("\n\n");
        s.push_str(m);
    }
    if wrap {
        s.push_str(WRAP_CLOSE);
    }
    s
}

/// Returns the byte length `render` would produce, without building it.
fn rendered_len(parts: &[(&str, &str)], marker: Option<&str>, wrap: bool) -> usize {
    frame_len(wrap)
        + parts.iter().filter(|(_, b)| !b.is_empty()).map(|(t, b)| section_len(t, b.len())).sum::<usize>()
        + marker.map_or(0, |m| 2 + m.len())
}

fn frame_len(wrap: bool) -> usize {
    HEADER.len() + if wrap { WRAP_OPEN.len() + WRAP_CLOSE.len() } else { 0 }
}

fn section_len(title: &str, body: usize) -> usize {
    SECTION_SEP.len() + title.len() + 2 + body
}

/// The outcome of fitting sections into a byte limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    /// Bytes kept of each part's body: a prefix, `0` when the part is left out.
    pub kept: Vec<usize>,
    /// The truncation marker, when anything was cut.
    pub marker: Option<String>,
}

impl Fitted {
    /// Returns what was cut, per section: `Project Context: last 40 of 900 bytes; ...`.
    fn summary(&self, parts: &[(&str, &str)]) -> String {
        cut_list(parts.iter().zip(&self.kept).map(|(&(t, b), &k)| (t, b.len() - k, b.len()))).1
    }
}

/// Returns the total of `(title, bytes cut, body bytes)` and the list `Title: all N bytes; Title:
/// last C of N bytes` of the sections that lost bytes.
fn cut_list<'a>(cuts: impl Iterator<Item = (&'a str, usize, usize)>) -> (usize, String) {
    let mut total = 0;
    let mut list = Vec::new();
    for (title, cut, len) in cuts.filter(|c| c.1 > 0) {
        total += cut;
        list.push(if cut == len {
            format!("{title}: all {len} bytes")
        } else {
            format!("{title}: last {cut} of {len} bytes")
        });
    }
    (total, list.join("; "))
}

/// Returns the truncation marker for `cuts` of `(title, bytes cut, body bytes)`.
fn marker_text<'a>(cuts: impl Iterator<Item = (&'a str, usize, usize)>, limit: usize) -> String {
    let (total, list) = cut_list(cuts);
    format!("[truncated by kb: {total} bytes cut to fit the {limit}-byte limit ({list})]")
}

/// Fits `parts` (in priority order) into `limit` bytes of rendered text.
///
/// Lower-priority content goes first: the last part is cut, or left out when nothing of it fits,
/// before the one above it is touched. A part is cut where `markdown::cut` allows (a block
/// boundary; never inside a UTF-8 character or a code block). When anything is cut, a marker
/// paragraph at the end says how many bytes went from which section. The result renders to at
/// most `limit` bytes whenever `limit` leaves room for the header and the marker (a few hundred
/// bytes; `SIZE_LIMIT` always does).
pub fn fit(parts: &[(&str, &str)], limit: usize, wrap: bool) -> Fitted {
    let lens: Vec<usize> = parts.iter().map(|(_, b)| b.len()).collect();
    if rendered_len(parts, None, wrap) <= limit {
        return Fitted { kept: lens, marker: None };
    }
    // The marker's longest possible form, so that the real one (fewer sections, smaller
    // numbers) always fits in the room kept for it.
    let worst = marker_text(parts.iter().map(|&(t, b)| (t, b.len(), b.len() + 1)), limit);
    let base = frame_len(wrap) + 2 + worst.len();
    let mut kept = vec![0; parts.len()];
    for i in (0..parts.len()).rev() {
        let before: usize = base
            + parts[..i].iter().map(|(t, b)| if b.is_empty() { 0 } else { section_len(t, b.len()) }).sum::<usize>();
        let head = section_len(parts[i].0, 0);
        if before + head >= limit {
            continue;
        }
        let k = markdown::cut(parts[i].1, limit - before - head);
        if k > 0 {
            kept[..i].copy_from_slice(&lens[..i]);
            kept[i] = k;
            break;
        }
    }
    let marker = marker_text(parts.iter().zip(&kept).map(|(&(t, b), &k)| (t, b.len() - k, b.len())), limit);
    Fitted { kept, marker: Some(marker) }
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
    fn context_frontmatter_rules() {
        let (body, p) = read("---\nversion: 1\nupdated: 2026-02-09T14:30:00Z\n---\n\n# Body\n");
        assert_eq!((body, p.len()), ("\n# Body\n", 0));
        let (_, p) = read("---\nversion: '1'\nupdated: 2026-02-09T14:30:00Z\n---\nx");
        assert_eq!(p[0].line, Some(2));
        assert!(p[0].message.contains("integer"));
        let (_, p) = read("---\nversion: 1\n---\nx");
        assert!(p[0].message.contains("updated"));
        let (_, p) = read("---\nversion: 1\nupdated: not-a-timestamp\n---\nx");
        assert!(p[0].message.contains("ISO 8601"));
        let (body, p) = read("---\ninvalid: [unclosed\n---\nBody");
        assert_eq!(body, "Body");
        assert!(p[0].message.contains("malformed"));
    }

    fn sources(parts: &[(SectionKind, &str)]) -> Sources {
        Sources {
            sections: parts
                .iter()
                .map(|&(kind, body)| Section { kind, path: PathBuf::from("/x"), body: body.to_string() })
                .collect(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn renders_co_cli_layout() {
        let b = assemble(sources(&[(SectionKind::Global, "g"), (SectionKind::Project, "p")]), false);
        assert_eq!(
            b.text.as_deref(),
            Some("## Internal Knowledge\n\n### Global Context\n\ng\n\n### Project Context\n\np")
        );
        assert_eq!(b.bytes, b.text.as_ref().unwrap().len());
        let w = assemble(sources(&[(SectionKind::Project, "p")]), true);
        assert_eq!(
            w.text.as_deref(),
            Some("<system-reminder>\n## Internal Knowledge\n\n### Project Context\n\np\n</system-reminder>")
        );
        let none = assemble(Sources::default(), true);
        assert_eq!((none.text, none.bytes, none.truncated), (None, 0, false));
    }

    /// A project body that makes the whole block exactly `total` bytes.
    fn project_of_total(total: usize) -> String {
        "x".repeat(total - render(&[("Project Context", "")], None, false).len() - "\n\n### Project Context\n\n".len())
    }

    #[test]
    fn total_size_boundaries() {
        for (total, warns, truncated) in
            [(10_240, false, false), (10_241, true, false), (20_480, true, false), (20_481, true, true)]
        {
            let body = project_of_total(total);
            let b = assemble(sources(&[(SectionKind::Project, &body)]), false);
            let size_warnings: Vec<_> = b.warnings.iter().filter(|w| w.path.is_none()).collect();
            assert_eq!(!size_warnings.is_empty(), warns, "{total}");
            assert_eq!(b.truncated, truncated, "{total}");
            assert!(b.bytes <= SIZE_LIMIT);
            if !truncated {
                assert_eq!(b.bytes, total);
            }
        }
    }

    #[test]
    fn section_budget_boundaries() {
        for (kind, budget) in [(SectionKind::Global, 3072), (SectionKind::Project, 7168)] {
            for (len, over) in [(budget, false), (budget + 1, true)] {
                let b = assemble(sources(&[(kind, &"y".repeat(len))]), false);
                assert_eq!(b.sections[0].over_budget, over);
                assert_eq!(b.warnings.iter().any(|w| w.message.contains("budget")), over, "{kind:?} {len}");
            }
        }
    }

    #[test]
    fn truncation_drops_lowest_priority_first() {
        let g = "g".repeat(2000);
        let p: String = (0..40).map(|i| format!("## P{i}\n\n{}\n\n", "p".repeat(300))).collect();
        let r: String = (0..400).map(|i| format!("- s{i}: {}\n", "r".repeat(40))).collect();
        let (p, r) = (normalize(&p), normalize(&r));
        let b = assemble(
            sources(&[(SectionKind::Global, &g), (SectionKind::Project, &p), (SectionKind::RepositoryMemories, &r)]),
            false,
        );
        let text = b.text.unwrap();
        assert!(b.truncated && text.len() <= SIZE_LIMIT);
        assert!(text.contains(&g) && text.contains(&p), "project and global stay whole");
        assert!(text.contains("### Repository Memories\n\n- s0: "));
        assert!(text.ends_with("bytes)]"), "{}", &text[text.len() - 200..]);
        assert!(text.contains("Repository Memories: last "));
        let kept = &text[text.find("### Repository Memories\n\n").unwrap() + 25..text.rfind("\n\n[truncated").unwrap()];
        assert!(r.starts_with(kept));
        assert_eq!(b.sections[2].cut_bytes, r.len() - kept.len());
        // Each record is kept whole or not at all.
        let last_line = text.lines().rev().find(|l| l.starts_with("- s")).unwrap();
        assert_eq!(last_line.len(), last_line.find(": ").unwrap() + 2 + 40);

        // Only the project section over the limit: repository memories go entirely, project is cut
        // at a heading.
        let big: String = (0..100).map(|i| format!("## H{i}\n\n{}\n\n", "p".repeat(300))).collect();
        let big = normalize(&big);
        let b = assemble(sources(&[(SectionKind::Project, &big), (SectionKind::RepositoryMemories, "- a: b")]), false);
        let text = b.text.unwrap();
        assert!(!text.contains("### Repository Memories"));
        assert!(text.contains("Repository Memories: all 6 bytes"));
        let before_marker = &text[..text.rfind("\n\n[truncated by kb").unwrap()];
        assert!(before_marker.ends_with(&"p".repeat(300)), "{}", &before_marker[before_marker.len() - 100..]);
        assert!(text.len() <= SIZE_LIMIT);
    }

    #[test]
    fn cjk_is_never_split() {
        let body = "漢字かな交じり文".repeat(1100); // 24 bytes × 1100 = 26,400 bytes, one paragraph
        let b = assemble(sources(&[(SectionKind::Project, &body)]), false);
        let text = b.text.unwrap();
        assert!(b.truncated && text.len() <= SIZE_LIMIT && text.len() > SIZE_LIMIT - 400);
    }

    #[test]
    fn repository_memories_reader_is_tolerant() {
        let jsonl = "\u{feff}{\"subject\":\"build\",\"fact\":\"run\\nmake\"}\n\nnot json\n[1]\n\
            {\"subject\":\"x\",\"fact\":\"down\",\"votes\":{\"up\":1,\"down\":2}}\n\
            {\"subject\":\"y\",\"fact\":\"tie\",\"votes\":{\"up\":2,\"down\":2}}\n{\"subject\":\"z\"}\n\
            {\"fact\":\"no subject\"}\r\n";
        let file = crate::copilot::JsonlFile::from_bytes(PathBuf::new(), jsonl.as_bytes().to_vec(), true);
        let (records, problems) = read_repository_memories(&file);
        assert_eq!(records.len(), 3);
        assert_eq!(problems.iter().map(|p| p.line.unwrap()).collect::<Vec<_>>(), [3, 4, 7, 8]);
        assert_eq!(repository_memories_body(&records), "build: run make\ny: tie");
        let fence = [RepoMemory { subject: String::new(), fact: "```no fence".into(), downvoted: false }];
        assert_eq!(repository_memories_body(&fence), "\\```no fence");
    }

    #[test]
    fn normalizes_bodies() {
        assert_eq!(normalize("\r\n\n a\r\nb \n\n"), "a\nb");
    }

    #[test]
    fn load_reads_files_and_warns_with_lines() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout { root: dir.path().join("repo"), config: Some(dir.path().join("cfg")) };
        std::fs::create_dir_all(l.knowledge()).unwrap();
        std::fs::write(
            l.project_context(),
            "---\nversion: x\nupdated: 2026-01-01T00:00:00Z\n---\n\n\nBody\n\n```\ncode\n",
        )
        .unwrap();
        let src = load(&l);
        assert_eq!(src.sections.len(), 1);
        assert_eq!(src.sections[0].body, "Body\n\n```\ncode\n```");
        let lines: Vec<_> = src.warnings.iter().map(|w| w.line).collect();
        assert_eq!(lines, [Some(2), Some(9)], "{:?}", src.warnings);
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        fn words() -> impl Strategy<Value = String> {
            prop::collection::vec(prop_oneof!["[a-z]{1,8}", "漢字|かな|한국어|中文", "😀|👍🏽|🇫🇷|é"], 1..12)
                .prop_map(|w| w.join(" "))
        }

        fn block() -> impl Strategy<Value = String> {
            prop_oneof![
                (1..7usize, words()).prop_map(|(n, w)| format!("{} {w}", "#".repeat(n))),
                prop::collection::vec(words(), 1..4).prop_map(|l| l.join("\n")),
                (words(), prop::collection::vec(words(), 0..5)).prop_map(|(info, l)| format!(
                    "```{}\n{}\n```",
                    info.replace(' ', ""),
                    l.join("\n\n")
                )),
                prop::collection::vec(words(), 1..5).prop_map(|l| l
                    .iter()
                    .map(|w| format!("- {w}"))
                    .collect::<Vec<_>>()
                    .join("\n")),
            ]
        }

        fn body() -> impl Strategy<Value = String> {
            prop::collection::vec(block(), 1..30).prop_map(|b| normalize(&b.join("\n\n")))
        }

        fn fences_balanced(s: &str) -> bool {
            s.lines().filter(|l| l.starts_with("```")).count() % 2 == 0
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]
            #[test]
            fn truncation_is_a_prefix_by_sections(
                bodies in prop::collection::vec(body(), 1..4),
                budget_frac in 0.0f64..1.2,
                wrap in any::<bool>(),
            ) {
                let titles = ["Global Context", "Project Context", "Repository Memories"];
                let parts: Vec<(&str, &str)> = titles.iter().zip(&bodies).map(|(t, b)| (*t, b.as_str())).collect();
                let full = render(&parts, None, wrap).len();
                let limit = 600 + (budget_frac * full as f64) as usize;
                let f = fit(&parts, limit, wrap);
                let kept: Vec<(&str, &str)> = parts.iter().zip(&f.kept).map(|(&(t, b), &k)| (t, &b[..k])).collect();
                let text = render(&kept, f.marker.as_deref(), wrap);
                prop_assert!(text.len() <= limit, "{} > {limit}", text.len());
                prop_assert!(std::str::from_utf8(text.as_bytes()).is_ok());
                prop_assert_eq!(f.marker.is_some(), full > limit);
                // Sections are kept whole, then at most one is cut, then the rest are left out.
                let mut seen_cut = false;
                for ((_, b), &k) in parts.iter().zip(&f.kept) {
                    prop_assert!(b.is_char_boundary(k));
                    if seen_cut { prop_assert_eq!(k, 0); }
                    if k < b.len() { seen_cut = true; }
                    prop_assert!(fences_balanced(&b[..k]), "unbalanced fence in {:?}", &b[..k]);
                }
                if let Some(m) = &f.marker {
                    let tail = format!("\n\n{m}{}", if wrap { "\n</system-reminder>" } else { "" });
                    prop_assert!(text.ends_with(&tail));
                    let cut: usize = parts.iter().zip(&f.kept).map(|((_, b), k)| b.len() - k).sum();
                    let expected = format!("[truncated by kb: {cut} bytes");
                    prop_assert!(m.starts_with(&expected));
                }
            }
        }
    }
}
