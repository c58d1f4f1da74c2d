//! The session store (docs/behaviour.md, Sessions): `.co-cli/knowledge/session.md` is the one open session, and
//! `.co-cli/knowledge/sessions/` keeps the ended ones. Every write takes the repository lock
//! for its whole read-modify-write, guards its paths and replaces files atomically; ending a
//! session writes the archived file first and only then removes `session.md`, so a crash never
//! loses the session. A `session.md` kb cannot read is never rewritten: commands that need it
//! stop with an error naming the file and line, reads report it.

pub mod file;

use crate::error::{Diagnostic, KbError, io_at};
use crate::format::text::{MAX_FILE_BYTES, decode};
use crate::format::{frontmatter, time};
use crate::journal::Txn;
use crate::paths::Layout;
use crate::repo::Repo;
use crate::secrets;
use file::Session;
use std::path::{Path, PathBuf};

type Result<T> = std::result::Result<T, KbError>;

/// A summary (or a focus) holds at most this many bytes, so the file stays readable.
pub const MAX_TEXT_BYTES: usize = MAX_FILE_BYTES as usize - 64 * 1024;

/// A session and the file it is in.
#[derive(Debug, Clone)]
pub struct Located {
    pub path: PathBuf,
    pub session: Session,
}

/// What a write did: the session as written, where, and which secret rules were redacted.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub located: Located,
    pub redacted: Vec<&'static str>,
}

/// Reads the session file at `path`: `Ok(None)` when there is none, else the session or the
/// problem (placed in the file).
pub fn read_file(layout: &Layout, path: &Path) -> std::result::Result<Option<Located>, Diagnostic> {
    let bytes = match crate::fsio::read_input(path, &layout.root) {
        Ok(None) => return Ok(None),
        Ok(Some(b)) => b,
        Err(e) => return Err(Diagnostic::error(None, format!("cannot read: {e}")).in_file(path)),
    };
    if bytes.len() as u64 > MAX_FILE_BYTES {
        let msg = format!("{} bytes: a session file holds at most {MAX_FILE_BYTES} bytes", bytes.len());
        return Err(Diagnostic::error(None, msg).in_file(path));
    }
    let text = decode(&bytes).map_err(|d| d.in_file(path))?;
    let session = file::parse(text).map_err(|d| d.in_file(path))?;
    Ok(Some(Located { path: path.to_path_buf(), session }))
}

/// Reads the open session for a read command: the session, or nothing and the problem that
/// kept it from being read.
pub fn current(layout: &Layout) -> (Option<Located>, Vec<Diagnostic>) {
    match read_file(layout, &layout.session()) {
        Ok(found) => (found, Vec::new()),
        Err(d) => (None, vec![d]),
    }
}

/// Reads the open session for a command that needs it; a file kb cannot read is an error.
fn open_session(layout: &Layout) -> Result<Option<Located>> {
    read_file(layout, &layout.session()).map_err(KbError::BadFile)
}

/// The error of a command that needs an open session when there is none.
fn none_open() -> KbError {
    KbError::NoOpenSession
}

/// Returns a text to store: stripped, one that is not empty, without NUL bytes, within the size
/// limit, and screened for secrets (refused, or redacted with `redact`).
fn screen(field: &'static str, raw: &str, filter: &mut secrets::Screen) -> Result<String> {
    let text = frontmatter::py_strip(raw);
    let text = if text.contains('\r') { text.replace("\r\n", "\n").replace('\r', "\n") } else { text.to_string() };
    if text.is_empty() {
        return Err(KbError::rejected(field, format!("the {field} is empty")));
    }
    if text.contains('\0') {
        return Err(KbError::rejected(field, format!("the {field} contains a NUL byte: sessions are text files")));
    }
    if text.len() > MAX_TEXT_BYTES {
        return Err(KbError::rejected(
            field,
            format!("the {field} is {} bytes; a session holds at most {MAX_TEXT_BYTES} bytes", text.len()),
        ));
    }
    filter.field(field, text)
}

/// A text checked and screened for a session, before the lock ([`check_text`]).
pub struct Checked {
    text: String,
    redacted: Vec<&'static str>,
}

/// Checks a focus (`field` "focus", one line) or a summary ("summary"): stripped, not empty, no
/// NUL byte, within the size limit, and screened for secrets (refused, or redacted with
/// `redact`).
pub fn check_text(field: &'static str, raw: &str, redact: bool) -> Result<Checked> {
    let mut filter = secrets::Screen::new(redact);
    let text = screen(field, raw, &mut filter)?;
    if let Some(line) = file::conflict_line(&text) {
        // The session reader refuses a file with such a line: storing it would break the session.
        return Err(KbError::rejected(
            field,
            format!("the {field} holds a git conflict-marker line (its line {line}): a session cannot store one"),
        ));
    }
    if field == "focus" && text.contains('\n') {
        return Err(KbError::rejected("focus", "the focus is one line: put the details in the summary"));
    }
    Ok(Checked { text, redacted: filter.redacted() })
}

/// Opens a session with `focus` (checked by [`check_text`]) through `txn`. Fails when one is open,
/// naming its focus and start.
pub fn start(repo: &Repo, txn: &mut Txn, focus: Checked) -> Result<Outcome> {
    let Checked { text: focus, redacted } = focus;
    let layout = &repo.layout;
    if let Some(open) = open_session(layout)? {
        let s = &open.session;
        return Err(KbError::refused(
            "session start",
            format!(
                "a session is already open: \"{}\", started {} ({}); end it first with `kb session end`",
                s.focus,
                s.started,
                open.path.display()
            ),
        ));
    }
    let path = layout.session();
    let knowledge = layout.knowledge();
    repo.guard(&path)?;
    std::fs::create_dir_all(&knowledge).map_err(io_at(&knowledge))?;
    let text = file::new_file(&focus, repo.now);
    // kb never writes what its own reader rejects.
    let session = file::parse(&text).map_err(|d| KbError::BadFile(d.in_file(&path)))?;
    txn.write(&path, text.as_bytes())?;
    Ok(Outcome { located: Located { path, session }, redacted })
}

/// Replaces the running summary with `text` (checked by [`check_text`]), or appends it as a
/// paragraph; sets `updated`. Writes through `txn`.
pub fn update(repo: &Repo, txn: &mut Txn, text: Checked, append: bool) -> Result<Outcome> {
    let Checked { text, redacted } = text;
    let open = open_session(&repo.layout)?.ok_or_else(none_open)?;
    let summary = if append { file::append(&open.session.summary, &text) } else { text };
    if summary.len() > MAX_TEXT_BYTES {
        return Err(KbError::rejected(
            "summary",
            format!("the summary would be {} bytes; a session holds at most {MAX_TEXT_BYTES} bytes", summary.len()),
        ));
    }
    let now = time::py_isoformat(repo.now);
    let new = open.session.rewrite(&[("updated", &now)], &summary);
    repo.guard(&open.path)?;
    let session = file::parse(&new).map_err(|d| KbError::BadFile(d.in_file(&open.path)))?;
    txn.write(&open.path, new.as_bytes())?;
    Ok(Outcome { located: Located { path: open.path, session }, redacted })
}

/// Ends the open session: `summary` (when given) replaces the running one, which is kept below it
/// under `## Notes` (docs/behaviour.md, Sessions: the notes are what happened, the summary what it came to), `ended` is set, and
/// the file moves to `sessions/<started>-<slug of focus>.md` (`-2`, `-3`... when that name is
/// taken). The new file is written before `session.md` is removed, through `txn`.
pub fn end(repo: &Repo, txn: &mut Txn, summary: Option<Checked>) -> Result<Outcome> {
    let (summary, redacted) = match summary {
        Some(Checked { text, redacted }) => (Some(text), redacted),
        None => (None, Vec::new()),
    };
    let layout = &repo.layout;
    let open = open_session(layout)?.ok_or_else(none_open)?;
    let s = &open.session;
    let summary = match summary {
        Some(given) => file::with_notes(&given, &s.summary),
        None => s.summary.clone(),
    };
    let now = time::py_isoformat(repo.now);
    let text = s.rewrite(&[("ended", &now)], &summary);
    let dir = layout.sessions();
    repo.guard(&dir)?;
    std::fs::create_dir_all(&dir).map_err(io_at(&dir))?;
    let target = crate::paths::free_path(&dir, &file::archive_name(s.started_at, &s.focus));
    repo.guard(&target)?;
    let session = file::parse(&text).map_err(|d| KbError::BadFile(d.in_file(&target)))?;
    txn.write(&target, text.as_bytes())?;
    repo.guard(&open.path)?;
    txn.remove(&open.path)?;
    Ok(Outcome { located: Located { path: target, session }, redacted })
}

/// Returns the ended session files (`sessions/*.md`), sorted.
pub fn ended_files(layout: &Layout) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = match std::fs::read_dir(layout.sessions()) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                name.ends_with(".md") && !name.starts_with('.')
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

/// Checks `session.md` and every ended session in `sessions/` (an ended one must have `ended`).
/// Adds their problems to `problems`; returns how many files were checked.
pub fn check(layout: &Layout, problems: &mut Vec<Diagnostic>) -> usize {
    let mut files = 0;
    let session = layout.session();
    if std::fs::symlink_metadata(&session).is_ok() {
        files += 1;
        if let Err(d) = read_file(layout, &session) {
            problems.push(d);
        }
    }
    for path in ended_files(layout) {
        files += 1;
        match read_file(layout, &path) {
            Ok(Some(l)) if l.session.ended.is_none() => {
                problems.push(Diagnostic::error(Some(1), "missing required field: ended").in_file(&path));
            }
            Ok(_) => {}
            Err(d) => problems.push(d),
        }
    }
    files
}
