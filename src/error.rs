//! The two shapes of trouble in kb: an error that stops an operation (`KbError`), and a
//! diagnostic that does not (`Diagnostic`: a file kb skipped, a line it could not read, a budget
//! exceeded). Every module reports problems in these shapes; `output::Style` prints them, and
//! `message` is the one rendering of an error with its causes.

use std::fmt;
use std::path::{Path, PathBuf};

/// What can go wrong in a store or repository operation. Each message names the value or file
/// at fault.
#[derive(Debug, thiserror::Error)]
pub enum KbError {
    /// No memory, record or decision has this id (`thing` names which: "memory", "decision").
    #[error("{thing} {id} not found")]
    NotFound { thing: &'static str, id: String },
    /// Several files claim one id.
    #[error("{thing} id {id} is used by {} files ({}); run `kb check` and give each file its own id", files.len(), files.join(", "))]
    DuplicateId { thing: &'static str, id: u64, files: Vec<String> },
    #[error(
        "refusing to store a secret: the {field} matches the {rule} rule (use --redact to store it with the secret replaced)"
    )]
    Secret { field: String, rule: &'static str },
    #[error("decision {id} is {status}: only {allowed} decision can be {action}")]
    WrongStatus { id: u64, status: &'static str, allowed: String, action: String },
    #[error("no open session: start one with `kb session start FOCUS`")]
    NoOpenSession,
    #[error("{0}")]
    Invalid(String),
    #[error("cannot lock {}: {source}", path.display())]
    Lock { path: PathBuf, source: std::io::Error },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A file kb must read to go on is malformed.
    #[error("{0}")]
    BadFile(Diagnostic),
}

impl KbError {
    /// A problem with a file kb was asked to read or change, at `line`.
    pub fn bad_file(path: &Path, line: Option<usize>, message: &str) -> KbError {
        KbError::BadFile(Diagnostic::error(line, message).in_file(path))
    }
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
}
