//! The two shapes of trouble in kb: an error that stops an operation (`KbError`), and a
//! diagnostic that does not (`Diagnostic`: a file kb skipped, a line it could not read, a budget
//! exceeded). Every module reports problems in these shapes; `output::Style` prints them, and
//! `message` is the one rendering of an error with its causes.

use std::fmt;
use std::path::{Path, PathBuf};

/// What can go wrong in a store or repository operation. Each message names the value or file
/// at fault. Code that treats an error specially matches its variant (or, outside Rust, its
/// [`KbError::kind`]), never its text.
#[derive(Debug, thiserror::Error)]
pub enum KbError {
    /// No memory, record, decision or board item has this id (`thing` names which: "memory",
    /// "decision", "board item"); `branch` is the branch whose board was searched, for a board
    /// item.
    #[error("{thing} {id} not found{}", branch.as_ref().map(|b| format!(" on branch {b}")).unwrap_or_default())]
    NotFound { thing: &'static str, id: String, branch: Option<String> },
    /// Several files claim one id, or (with `lines`) several records of the one file in `files`.
    #[error("{}", duplicate_text(thing, id, files, lines))]
    DuplicateId { thing: &'static str, id: String, files: Vec<String>, lines: Vec<usize> },
    /// A text to store holds a secret, and `--redact` was not given.
    #[error(
        "refusing to store a secret: the {field} matches the {rule} rule (use --redact to store it with the secret replaced)"
    )]
    Secret { field: String, rule: &'static str },
    /// A decision is not in the status the action needs.
    #[error("decision {id} is {status}: only {allowed} decision can be {action}")]
    WrongStatus { id: u64, status: &'static str, allowed: String, action: String },
    /// What the command reads is not on this machine (a shared source's copy never synced):
    /// `why` is the whole message, saying how to get it.
    #[error("{why}")]
    Absent { why: String },
    /// A command needs an open session and none is open.
    #[error("no open session: start one with `kb session start FOCUS`")]
    NoOpenSession,
    /// A value the user or an agent gave that kb will not take: an empty text, a blank tag, a
    /// bad agent name, id, glob or setting. `what` names the argument or field at fault as kb's
    /// faces name it (`text`, `tag`, `agent`, `id`, `--apply-to`, `max_tokens`, a setting's
    /// key); `why` is the whole message, naming the value.
    #[error("{why}")]
    Rejected { what: &'static str, why: String },
    /// An operation kb will not carry out in the state the repository is in: an undo whose files
    /// changed since, a full board, a session already open, no id left. `action` names the
    /// operation as the command does (`undo`, `board add`, `session start`); `why` is the whole
    /// message, saying what is in the way.
    #[error("{why}")]
    Refused { action: &'static str, why: String },
    #[error("cannot lock {}: {source}", path.display())]
    Lock { path: PathBuf, source: std::io::Error },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A file kb must read to go on is malformed.
    #[error("{0}")]
    BadFile(Diagnostic),
    /// Something kb itself got wrong (a value it made that does not serialise or parse back):
    /// a bug, never the user's doing, so nothing branches on it.
    #[error("internal error: {0}")]
    Internal(String),
}

impl KbError {
    /// A problem with a file kb was asked to read or change, at `line`.
    pub fn bad_file(path: &Path, line: Option<usize>, message: &str) -> KbError {
        KbError::BadFile(Diagnostic::error(line, message).in_file(path))
    }

    /// No `thing` ("memory", "decision") has `id`.
    pub fn not_found(thing: &'static str, id: impl ToString) -> KbError {
        KbError::NotFound { thing, id: id.to_string(), branch: None }
    }

    /// Several files (named in `files`) claim `id`.
    pub fn duplicate_id(thing: &'static str, id: impl ToString, files: Vec<String>) -> KbError {
        KbError::DuplicateId { thing, id: id.to_string(), files, lines: Vec::new() }
    }

    /// A value kb will not take: `what` is the argument or field, `why` the whole message.
    pub fn rejected(what: &'static str, why: impl Into<String>) -> KbError {
        KbError::Rejected { what, why: why.into() }
    }

    /// An operation kb will not do now: `action` names it, `why` is the whole message.
    pub fn refused(action: &'static str, why: impl Into<String>) -> KbError {
        KbError::Refused { action, why: why.into() }
    }

    /// Returns the error's kind: a stable snake_case word for a face that reports errors as data
    /// (the `kind` of a `--json` error, docs/behaviour.md) and a caller that is not Rust. Kinds group the
    /// variants by what a script would do about them: `not_found` (nothing has that id, no open
    /// session), `invalid` (a value or a file kb will not take), `secret`, `conflict` (the state
    /// forbids it: an id two files claim, a decision's status, a refusal, a lock held), `io`,
    /// `internal`. Clap's own errors are `usage`; an error with no kind is `error`.
    pub fn kind(&self) -> &'static str {
        match self {
            KbError::NotFound { .. } | KbError::Absent { .. } | KbError::NoOpenSession => "not_found",
            KbError::Rejected { .. } | KbError::BadFile(_) => "invalid",
            KbError::Secret { .. } => "secret",
            KbError::DuplicateId { .. }
            | KbError::WrongStatus { .. }
            | KbError::Refused { .. }
            | KbError::Lock { .. } => "conflict",
            KbError::Io { .. } => "io",
            KbError::Internal(_) => "internal",
        }
    }
}

/// Returns the message of [`KbError::DuplicateId`]: the files that claim the id, or the lines
/// of the one file of records that repeats it.
fn duplicate_text(thing: &str, id: &str, files: &[String], lines: &[usize]) -> String {
    if lines.is_empty() {
        return format!(
            "{thing} id {id} is used by {} files ({}); run `kb check` and give each file its own id",
            files.len(),
            files.join(", ")
        );
    }
    let lines: Vec<String> = lines.iter().map(usize::to_string).collect();
    format!(
        "{thing} id {id} is used by {} records in {} (lines {}); run `kb check` and give each record its own id",
        lines.len(),
        files.join(", "),
        lines.join(", ")
    )
}

/// Returns a closure that wraps an IO error with the path it happened on.
pub(crate) fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> KbError + '_ {
    move |source| KbError::Io { path: path.to_path_buf(), source }
}

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Something was read, but not all of it as written (a key of the wrong type, a section over
    /// its budget).
    Warning,
    /// Something could not be used at all and was left out (a file or line kb skipped).
    Error,
}

/// A problem that does not stop the operation: where (a file and line, when known), how bad, and
/// what. A diagnostic without a path belongs to the whole operation; a parser returns one without
/// a path and its caller adds the file with [`Diagnostic::in_file`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub path: Option<PathBuf>,
    /// 1-based.
    pub line: Option<usize>,
    pub severity: Severity,
    pub message: String,
    /// The message carries the upper-case label (`WARNING:`/`ERROR:`) of co-cli (the Python tool
    /// whose file layout kb keeps), which its users and their scripts look for, instead of kb's
    /// `warning:` prefix.
    pub co_cli_label: bool,
}

impl Diagnostic {
    /// Returns a diagnostic of `severity` at `line` of no file yet.
    pub fn new(severity: Severity, line: Option<usize>, message: impl Into<String>) -> Diagnostic {
        Diagnostic { path: None, line, severity, message: message.into(), co_cli_label: false }
    }

    /// Returns an error-severity diagnostic (the thing was skipped) at `line` of no file yet.
    pub fn error(line: Option<usize>, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, line, message)
    }

    /// Returns a warning-severity diagnostic at `line` of no file yet.
    pub fn warning(line: Option<usize>, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, line, message)
    }

    /// Returns a diagnostic worded and labelled as co-cli words it (`WARNING: ...`).
    pub fn co_cli(severity: Severity, message: impl Into<String>) -> Diagnostic {
        Diagnostic { co_cli_label: true, ..Diagnostic::new(severity, None, message) }
    }

    /// Returns the diagnostic placed in `path`.
    pub fn in_file(mut self, path: &Path) -> Diagnostic {
        self.path = Some(path.to_path_buf());
        self
    }

    /// Returns whether the thing it is about was left out.
    pub fn skipped(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Returns `path:line: message` (`path: message` without a line), with the path shown by
    /// `show`; co-cli's labelled messages come back as `WARNING: message`.
    pub fn render(&self, show: impl Fn(&Path) -> String) -> String {
        if self.co_cli_label {
            let label = match self.severity {
                Severity::Warning => "WARNING",
                Severity::Error => "ERROR",
            };
            return format!("{label}: {}", self.message);
        }
        match (&self.path, self.line) {
            (Some(p), Some(l)) => format!("{}:{l}: {}", show(p), self.message),
            (Some(p), None) => format!("{}: {}", show(p), self.message),
            (None, Some(l)) => format!("line {l}: {}", self.message),
            (None, None) => self.message.clone(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(|p| p.display().to_string()))
    }
}

/// Returns the kind of `e` (see [`KbError::kind`]): its own or its first cause's that has one;
/// a settings file kb will not take is `invalid`, an input/output failure `io`, anything else
/// `error`.
pub fn kind_of(e: &anyhow::Error) -> &'static str {
    e.chain()
        .find_map(|cause| {
            // A settings file kb will not take is invalid input, as a value is.
            let settings = || cause.is::<crate::settings::SettingsError>().then_some("invalid");
            cause
                .downcast_ref::<KbError>()
                .map(KbError::kind)
                .or_else(settings)
                .or_else(|| cause.is::<std::io::Error>().then_some("io"))
        })
        .unwrap_or("error")
}

/// Returns the message kb prints after `error:`: the error and its causes, joined by `: `.
pub fn message(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        // thiserror variants often print their source already (`{path}: {source}`).
        let cause = cause.to_string();
        if !msg.ends_with(&cause) {
            msg.push_str(&format!(": {cause}"));
        }
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_where_and_what() {
        let d = Diagnostic::error(Some(3), "bad key").in_file(Path::new("/r/a.md"));
        assert_eq!(d.render(|p| p.file_name().unwrap().to_string_lossy().into_owned()), "a.md:3: bad key");
        assert_eq!(Diagnostic::warning(None, "x").in_file(Path::new("b")).to_string(), "b: x");
        assert_eq!(Diagnostic::co_cli(Severity::Warning, "Knowledge size").to_string(), "WARNING: Knowledge size");
        assert_eq!(Diagnostic::co_cli(Severity::Error, "too big").to_string(), "ERROR: too big");
        assert!(Diagnostic::error(None, "").skipped() && !Diagnostic::warning(None, "").skipped());
    }

    #[test]
    fn message_joins_causes_once() {
        let e = anyhow::Error::from(std::io::Error::other("disk full")).context("cannot write a.md");
        assert_eq!(message(&e), "cannot write a.md: disk full");
        let e = anyhow::Error::from(KbError::Io { path: "a.md".into(), source: std::io::Error::other("gone") });
        assert_eq!(message(&e), "a.md: gone");
    }

    #[test]
    fn typed_kinds_say_what_they_said_as_text() {
        let e = KbError::rejected("tag", "invalid tag ' ': a tag cannot be blank");
        assert_eq!(e.to_string(), "invalid tag ' ': a tag cannot be blank");
        assert!(matches!(e, KbError::Rejected { what: "tag", .. }));
        let e = KbError::refused("undo", "nothing to undo: the journal is empty");
        assert_eq!(e.to_string(), "nothing to undo: the journal is empty");
        assert!(matches!(e, KbError::Refused { action: "undo", .. }));
        let board = KbError::NotFound { thing: "board item", id: "nope".into(), branch: Some("main".into()) };
        assert_eq!(board.to_string(), "board item nope not found on branch main");
        let memory = KbError::NotFound { thing: "memory", id: "7".into(), branch: None };
        assert_eq!(memory.to_string(), "memory 7 not found");
        let files = KbError::DuplicateId {
            thing: "memory",
            id: "3".into(),
            files: vec!["003-a.md".into(), "003-b.md".into()],
            lines: Vec::new(),
        };
        assert_eq!(
            files.to_string(),
            "memory id 3 is used by 2 files (003-a.md, 003-b.md); run `kb check` and give each file its own id"
        );
        let records = KbError::DuplicateId {
            thing: "memory",
            id: "m-1".into(),
            files: vec!["r.jsonl".into()],
            lines: vec![2, 5],
        };
        assert_eq!(
            records.to_string(),
            "memory id m-1 is used by 2 records in r.jsonl (lines 2, 5); run `kb check` and give each record its own id"
        );
        assert_eq!(
            KbError::Internal("key must be a string".into()).to_string(),
            "internal error: key must be a string"
        );
    }

    #[test]
    fn each_variant_has_a_stable_kind() {
        let io = || std::io::Error::other("x");
        let all = [
            (KbError::NotFound { thing: "memory", id: "1".into(), branch: None }, "not_found"),
            (KbError::DuplicateId { thing: "memory", id: "1".into(), files: vec![], lines: vec![] }, "conflict"),
            (KbError::Secret { field: "text".into(), rule: "aws" }, "secret"),
            (
                KbError::WrongStatus {
                    id: 1,
                    status: "active",
                    allowed: "a proposed".into(),
                    action: "accepted".into(),
                },
                "conflict",
            ),
            (KbError::NoOpenSession, "not_found"),
            (KbError::rejected("agent", "x"), "invalid"),
            (KbError::refused("undo", "x"), "conflict"),
            (KbError::Lock { path: "l".into(), source: io() }, "conflict"),
            (KbError::Io { path: "f".into(), source: io() }, "io"),
            (KbError::bad_file(Path::new("f"), Some(1), "x"), "invalid"),
            (KbError::Internal("x".into()), "internal"),
        ];
        for (e, kind) in &all {
            assert_eq!(e.kind(), *kind, "{e:?}");
            let snake = kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
            assert!(snake, "{kind}");
        }
    }
}
