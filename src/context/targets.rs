//! Compile targets: where the always-loaded block is written (the setting `context_targets`; docs/formats.md,
//! Compile targets).
//!
//! A target is one of two kinds:
//!
//! - **managed block**: the block goes between `<!-- kb:context:begin -->` and
//!   `<!-- kb:context:end -->` and everything outside the markers is kept byte for byte. This is
//!   the kind of a file that already has the markers; of the instruction files agents read
//!   (`AGENTS.md`, `CLAUDE.md`, `CLAUDE.local.md`, `GEMINI.md`, `copilot-instructions.md`), existing
//!   or not; and of any existing, non-empty file that kb did not write whole (one that does not
//!   start with `## Internal Knowledge`), so that kb never overwrites what a person wrote. Without
//!   markers the block is appended after a blank line. Marker lines inside a code block are text,
//!   not markers.
//! - **standalone**: any other file (the default `.co-cli/knowledge/compiled.md`) is the block
//!   and a final newline, overwritten whole.
//!
//! With no context at all, a standalone file is empty (0 bytes) and a managed block is the two
//! marker lines with nothing between them. A target is rewritten only when its bytes change, and
//! atomically. A target must be inside the root or the global config folder, also after following
//! symlinks, and must not be one of kb's own inputs. Taking the repository lock is the caller's
//! business; nothing here prints.

use crate::context::HEADER;
use crate::context::markdown;
use crate::paths::{Layout, real_path, resolve_dots};
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The line that opens a managed block.
pub const BEGIN: &str = "<!-- kb:context:begin -->";
/// The line that closes a managed block.
pub const END: &str = "<!-- kb:context:end -->";

/// File names that always get a managed block: the instruction files agents read.
pub const WELL_KNOWN: [&str; 5] = ["AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", "copilot-instructions.md"];

/// How a target holds the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// The whole file is the block.
    Standalone,
    /// The block sits between the markers; the rest of the file is the user's.
    Managed,
}

impl TargetKind {
    /// Returns the name used in output: `standalone` or `managed_block`.
    pub fn as_str(self) -> &'static str {
        match self {
            TargetKind::Standalone => "standalone",
            TargetKind::Managed => "managed_block",
        }
    }
}

/// Whether a target's file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Written,
    Unchanged,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Written => "written",
            Outcome::Unchanged => "unchanged",
        }
    }
}

/// A target that could not be written, naming it as configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("target {target}: {message}")]
pub struct TargetError {
    /// The target as written in `context_targets`.
    pub target: String,
    pub message: String,
}

/// A resolved target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// As written in `context_targets`.
    pub raw: String,
    /// Absolute, `.` and `..` resolved, symlinks not followed.
    pub path: PathBuf,
    /// Where the bytes go: `path` with symlinks followed.
    pub real: PathBuf,
}

/// The result of writing one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub target: Target,
    pub kind: TargetKind,
    pub outcome: Outcome,
    /// The file's size after the write.
    pub bytes: usize,
}

/// Resolves a `context_targets` entry: relative to the root, inside the root or the config
/// folder (also once symlinks are followed), and not one of kb's inputs.
pub fn resolve(layout: &Layout, raw: &str) -> Result<Target, TargetError> {
    let fail = |message: String| TargetError { target: raw.to_string(), message };
    // `~/...` is the user's home, as a shell would read it (for targets in the config folder).
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let path = match (raw.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => resolve_dots(&home.join(rest)),
        _ => resolve_dots(&layout.root.join(raw)),
    };
    let bases: Vec<&PathBuf> = std::iter::once(&layout.root).chain(layout.config.as_ref()).collect();
    let allowed = |p: &Path, bases: &[PathBuf]| bases.iter().any(|b| p.starts_with(b) && p != b);
    let lexical: Vec<PathBuf> = bases.iter().map(|b| resolve_dots(b)).collect();
    if !allowed(&path, &lexical) {
        return Err(fail(format!("{} is outside {}: refused", path.display(), allowed_note(layout))));
    }
    let real = real_path(&path).map_err(|e| fail(format!("cannot resolve {}: {e}", path.display())))?;
    let real_bases: Vec<PathBuf> = bases.iter().filter_map(|b| real_path(b).ok()).collect();
    if !allowed(&real, &real_bases) {
        return Err(fail(format!(
            "{} leads through a symlink to {}, outside {}: refused",
            path.display(),
            real.display(),
            allowed_note(layout)
        )));
    }
    if let Some(input) = inputs(layout).iter().find(|i| is_input(&real, i)) {
        return Err(fail(format!("{} is kb's own input {}: refused", path.display(), input.display())));
    }
    // A committed settings file must not make kb write into git's own files (`.git/config`,
    // hooks) or kb's derived and local state.
    let real_root = real_path(&layout.root).unwrap_or_else(|_| layout.root.clone());
    for (folder, what) in FORBIDDEN {
        if path.starts_with(layout.root.join(folder)) || real.starts_with(real_root.join(folder)) {
            return Err(fail(format!("{} is inside {folder} ({what}): refused", path.display())));
        }
    }
    // Reading a FIFO or a device would block kb or never end.
    if std::fs::metadata(&real).is_ok_and(|m| !m.is_file()) {
        return Err(fail(format!("{} is not a regular file: refused", path.display())));
    }
    Ok(Target { raw: raw.to_string(), path, real })
}

/// Folders of the root a target may never be in, and why.
const FORBIDDEN: [(&str, &str); 3] =
    [(".git", "git's own files"), (".co-cli/cache", "kb's derived state"), (".co-cli/state", "kb's local state")];

/// Returns "the repository root R and the config folder C", naming where targets may go.
fn allowed_note(layout: &Layout) -> String {
    let root = format!("the repository root {}", layout.root.display());
    match &layout.config {
        Some(c) => format!("{root} and the config folder {}", c.display()),
        None => root,
    }
}

/// Returns the files and folders the block is built from (and the memories folder), which a
/// target must never overwrite.
fn inputs(layout: &Layout) -> Vec<PathBuf> {
    let mut v = vec![
        layout.project_context(),
        layout.project_settings(),
        layout.copilot_memories(),
        layout.memories(),
        layout.decisions(),
        layout.session(),
        layout.instructions(),
    ];
    v.extend(layout.global_context());
    v.extend(layout.global_settings());
    v
}

fn is_input(real: &Path, input: &Path) -> bool {
    real_path(input).is_ok_and(|i| real.starts_with(&i))
}

/// Returns the kind of a target from its name and current bytes (`None`: it does not exist).
pub fn kind_of(path: &Path, existing: Option<&[u8]>) -> TargetKind {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if WELL_KNOWN.iter().any(|w| w.eq_ignore_ascii_case(name)) {
        return TargetKind::Managed;
    }
    match existing {
        None => TargetKind::Standalone,
        Some(b"") => TargetKind::Standalone,
        Some(b) => match std::str::from_utf8(b) {
            Ok(t) if !matches!(find_markers(t), Ok(None)) => TargetKind::Managed,
            Ok(t) if t.starts_with(HEADER) => TargetKind::Standalone,
            _ => TargetKind::Managed,
        },
    }
}

/// The managed block's marker lines in a file, each with its line terminator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Markers {
    pub begin: Range<usize>,
    pub end: Range<usize>,
}

/// Finds the managed block: the first begin marker line outside code blocks and the first end
/// marker line after it. A marker line holds only the marker (surrounding spaces allowed).
///
/// Returns `Ok(None)` without markers, and an error naming the line for a begin marker with no
/// end, or an end marker before any begin.
pub fn find_markers(text: &str) -> Result<Option<Markers>, String> {
    if !text.contains("kb:context:") {
        return Ok(None);
    }
    let code = markdown::code_ranges(text, false);
    let mut begin: Option<(usize, Range<usize>)> = None;
    let mut off = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let range = off..off + line.len();
        off += line.len();
        let bare = line.trim_end_matches(['\n', '\r']);
        let trimmed = bare.trim();
        if trimmed != BEGIN && trimmed != END {
            continue;
        }
        let first = range.start + (bare.len() - bare.trim_start().len());
        if code.iter().any(|r| r.contains(&first)) {
            continue;
        }
        match (&begin, trimmed == BEGIN) {
            (None, true) => begin = Some((i + 1, range)),
            (None, false) => return Err(format!("line {}: end marker {END} without a begin marker before it", i + 1)),
            (Some((line, _)), true) => {
                return Err(format!("line {}: second begin marker; the one on line {line} is not closed", i + 1));
            }
            (Some((_, b)), false) => return Ok(Some(Markers { begin: b.clone(), end: range })),
        }
    }
    match begin {
        Some((line, _)) => Err(format!("line {line}: begin marker {BEGIN} has no end marker {END} after it")),
        None => Ok(None),
    }
}

/// Returns a standalone target's bytes: the block and a newline, or nothing without a block.
pub fn standalone(block: Option<&str>) -> String {
    block.map_or(String::new(), |b| format!("{b}\n"))
}

/// Returns `existing` with the managed block set to `block`: replaced between the markers, or
/// appended after a blank line when there are none. Everything outside the markers is kept byte
/// for byte; line ends follow the file (CRLF when its marker line, or else its text, uses CRLF).
///
/// Fails, naming the line, on unbalanced markers, and when the result would not be found again by
/// the next compile (a code fence left open before the block would swallow it).
pub fn splice(existing: &str, block: Option<&str>) -> Result<String, String> {
    let markers = find_markers(existing)?;
    let crlf = match &markers {
        Some(m) => existing[m.begin.clone()].ends_with("\r\n"),
        None => existing.contains("\r\n"),
    };
    let nl = if crlf { "\r\n" } else { "\n" };
    let mut region = format!("{BEGIN}{nl}");
    if let Some(b) = block {
        region.push_str(&if crlf { b.replace('\n', "\r\n") } else { b.to_string() });
        region.push_str(nl);
    }
    region.push_str(END);
    let (before, after) = match &markers {
        Some(m) => {
            let end_line = &existing[m.end.clone()];
            let term = &end_line[end_line.trim_end_matches(['\n', '\r']).len()..];
            (existing[..m.begin.start].to_string(), format!("{term}{}", &existing[m.end.end..]))
        }
        None => {
            let sep = if existing.is_empty() || existing.ends_with("\n\n") || existing.ends_with("\r\n\r\n") {
                ""
            } else if existing.ends_with('\n') {
                nl
            } else {
                if crlf { "\r\n\r\n" } else { "\n\n" }
            };
            (format!("{existing}{sep}"), nl.to_string())
        }
    };
    let out = format!("{before}{region}{after}");
    match find_markers(&out) {
        Ok(Some(m)) if m.begin.start == before.len() && m.end.end - m.begin.start >= region.len() => Ok(out),
        _ => Err(match markdown::open_fence(&before) {
            Some(f) => format!(
                "line {}: code fence '{}' is never closed, so kb's block after it would be code; close it",
                f.line, f.closer
            ),
            None => "the block's text contains a marker line, so it would not be found again".to_string(),
        }),
    }
}

/// Writes `block` into one target when its bytes change. Creates missing folders.
pub fn write_target(t: &Target, block: Option<&str>) -> Result<Written, TargetError> {
    let fail = |message: String| TargetError { target: t.raw.clone(), message };
    let existing = match std::fs::read(&t.real) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(fail(format!("cannot read {}: {e}", t.real.display()))),
    };
    let named_managed = kind_of(&t.path, None) == TargetKind::Managed;
    let kind = if named_managed { TargetKind::Managed } else { kind_of(&t.real, existing.as_deref()) };
    let new = match kind {
        TargetKind::Standalone => standalone(block),
        TargetKind::Managed => {
            let text = match &existing {
                Some(b) => std::str::from_utf8(b)
                    .map_err(|e| fail(format!("{} is not UTF-8 text ({e}); not touched", t.real.display())))?,
                None => "",
            };
            splice(text, block).map_err(|e| fail(format!("{}: {e}; not touched", t.real.display())))?
        }
    };
    let bytes = new.len();
    if existing.as_deref() == Some(new.as_bytes()) {
        return Ok(Written { target: t.clone(), kind, outcome: Outcome::Unchanged, bytes });
    }
    if let Some(dir) = t.real.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
    }
    crate::fsio::write_atomic(&t.real, new.as_bytes())
        .map_err(|e| fail(format!("cannot write {}: {e}", t.real.display())))?;
    Ok(Written { target: t.clone(), kind, outcome: Outcome::Written, bytes })
}

/// Resolves and writes every target (as written in `context_targets`, with its own block), in
/// order; a target that resolves to a file already written is skipped. One target's failure does
/// not stop the others.
pub fn write_all(layout: &Layout, targets: &[(&str, Option<&str>)]) -> Vec<Result<Written, TargetError>> {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut out = Vec::new();
    for &(raw, block) in targets {
        let t = match resolve(layout, raw) {
            Ok(t) => t,
            Err(e) => {
                out.push(Err(e));
                continue;
            }
        };
        if seen.contains(&t.real) {
            continue;
        }
        seen.push(t.real.clone());
        out.push(write_target(&t, block));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: &str = "## Internal Knowledge\n\n### Project Context\n\nhello";

    #[test]
    fn appends_and_replaces_keeping_the_rest() {
        let user = "# Agents\n\nBe nice.\n";
        let once = splice(user, Some(BLOCK)).unwrap();
        assert_eq!(once, format!("{user}\n{BEGIN}\n{BLOCK}\n{END}\n"));
        assert_eq!(splice(&once, Some(BLOCK)).unwrap(), once, "idempotent");
        let edited = once.replace("Be nice.", "Be nicer.") + "\n## After\n";
        let again = splice(&edited, Some("## Internal Knowledge\n\nnew")).unwrap();
        assert!(again.starts_with("# Agents\n\nBe nicer.\n\n"));
        assert!(again.ends_with(&format!("{END}\n\n## After\n")));
        assert!(again.contains("\nnew\n"));
        let empty = splice(&again, None).unwrap();
        assert!(empty.contains(&format!("{BEGIN}\n{END}\n")));
        assert_eq!(splice("", Some("x")).unwrap(), format!("{BEGIN}\nx\n{END}\n"));
    }

    #[test]
    fn crlf_and_missing_final_newline() {
        let user = "# A\r\n\r\nline\r\nlast";
        let out = splice(user, Some("## Internal Knowledge\n\nx")).unwrap();
        assert!(out.starts_with(user));
        assert_eq!(&out[user.len()..], format!("\r\n\r\n{BEGIN}\r\n## Internal Knowledge\r\n\r\nx\r\n{END}\r\n"));
        let again = splice(&out, Some("y")).unwrap();
        assert_eq!(again, format!("{user}\r\n\r\n{BEGIN}\r\ny\r\n{END}\r\n"));
        // An end marker at the very end without a newline keeps having none.
        let tight = format!("a\n{BEGIN}\nold\n{END}");
        assert_eq!(splice(&tight, Some("new")).unwrap(), format!("a\n{BEGIN}\nnew\n{END}"));
    }

    #[test]
    fn markers_in_code_are_text() {
        let user = format!("Docs:\n\n```\n{BEGIN}\nexample\n{END}\n```\n\n    {BEGIN}\n");
        assert_eq!(find_markers(&user), Ok(None));
        let out = splice(&user, Some("x")).unwrap();
        assert!(out.starts_with(&user));
        assert!(out.ends_with(&format!("\n\n{BEGIN}\nx\n{END}\n")));
        // The block's own code fences may show markers too.
        let block = format!("## Internal Knowledge\n\n```\n{END}\n```");
        let out2 = splice(&out, Some(&block)).unwrap();
        assert_eq!(splice(&out2, Some(&block)).unwrap(), out2);
    }

    #[test]
    fn bad_markers_are_errors() {
        assert!(find_markers(&format!("{BEGIN}\nx\n")).unwrap_err().contains("line 1"));
        assert!(find_markers(&format!("a\n{END}\n")).unwrap_err().contains("line 2"));
        assert!(find_markers(&format!("{BEGIN}\n{BEGIN}\n{END}")).is_err());
        let e = splice("```\nopen fence\n", Some("x")).unwrap_err();
        assert!(e.contains("line 1") && e.contains("never closed"), "{e}");
        let e = splice("", Some(&format!("a\n{END}\nb"))).unwrap_err();
        assert!(e.contains("marker"), "{e}");
    }

    #[test]
    fn kinds() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(kind_of(&p("AGENTS.md"), None), TargetKind::Managed);
        assert_eq!(kind_of(&p(".github/copilot-instructions.md"), None), TargetKind::Managed);
        assert_eq!(kind_of(&p("claude.md"), None), TargetKind::Managed);
        assert_eq!(kind_of(&p("out.md"), None), TargetKind::Standalone);
        assert_eq!(kind_of(&p("out.md"), Some(b"")), TargetKind::Standalone);
        assert_eq!(kind_of(&p("out.md"), Some(b"## Internal Knowledge\n\nx\n")), TargetKind::Standalone);
        assert_eq!(kind_of(&p("out.md"), Some(b"# Mine\n")), TargetKind::Managed);
        assert_eq!(
            kind_of(&p("out.md"), Some(format!("## Internal Knowledge\n{BEGIN}\n{END}\n").as_bytes())),
            TargetKind::Managed
        );
        assert_eq!(kind_of(&p("out.md"), Some(b"\xff")), TargetKind::Managed);
    }

    #[test]
    fn resolve_refuses_escapes_and_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let cfg = dir.path().join("cfg");
        std::fs::create_dir_all(&root).unwrap();
        let l = Layout { root: root.clone(), config: Some(cfg.clone()) };
        assert_eq!(resolve(&l, "AGENTS.md").unwrap().real, std::fs::canonicalize(&root).unwrap().join("AGENTS.md"));
        assert!(resolve(&l, "../x.md").unwrap_err().message.contains("outside"));
        assert!(resolve(&l, "/etc/x.md").is_err());
        assert!(resolve(&l, cfg.join("out.md").to_str().unwrap()).is_ok());
        assert!(resolve(&l, ".").is_err());
        assert!(resolve(&l, ".co-cli/knowledge/context.md").unwrap_err().message.contains("input"));
        assert!(resolve(&l, ".co-cli/knowledge/memories/x.md").is_err());
        std::os::unix::fs::symlink(dir.path(), root.join("out")).unwrap();
        assert!(resolve(&l, "out/x.md").unwrap_err().message.contains("symlink"));
        std::os::unix::fs::symlink(root.join("missing"), root.join("dangling.md")).unwrap();
        assert!(resolve(&l, "dangling.md").unwrap_err().message.contains("leads nowhere"));
    }

    #[test]
    fn writes_only_on_change() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout { root: dir.path().to_path_buf(), config: None };
        let x = Some("## Internal Knowledge\n\nx");
        let r = write_all(&l, &[("a/out.md", x), ("./a/out.md", x)]);
        assert_eq!(r.len(), 1);
        let w = r[0].as_ref().unwrap();
        assert_eq!((w.kind, w.outcome), (TargetKind::Standalone, Outcome::Written));
        assert_eq!(std::fs::read_to_string(dir.path().join("a/out.md")).unwrap(), "## Internal Knowledge\n\nx\n");
        let r = write_all(&l, &[("a/out.md", x)]);
        assert_eq!(r[0].as_ref().unwrap().outcome, Outcome::Unchanged);
        let r = write_all(&l, &[("a/out.md", None)]);
        assert_eq!(r[0].as_ref().unwrap().bytes, 0);
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]
            /// Whatever a file holds, splicing never panics, and when it succeeds the text before
            /// the block is kept and the block is found again.
            #[test]
            fn splice_is_total(
                user in "(?s)(.|```|<!-- kb:context:begin -->|<!-- kb:context:end -->|\r\n|\n){0,40}",
                block in "[a-z#`\n ]{0,40}",
            ) {
                if let Ok(out) = splice(&user, Some(&block)) {
                    let m = find_markers(&out).unwrap().unwrap();
                    match find_markers(&user).unwrap() {
                        None => prop_assert!(out.starts_with(&user)),
                        Some(old) => {
                            prop_assert_eq!(&out[..m.begin.start], &user[..old.begin.start]);
                            prop_assert_eq!(&out[m.end.end..], &user[old.end.end..]);
                        }
                    }
                    prop_assert_eq!(splice(&out, Some(&block)).unwrap(), out.clone());
                }
            }
        }
    }
}
