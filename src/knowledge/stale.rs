//! Stale facts never reach an agent as facts (docs/behaviour.md, What reaches an agent): every
//! item the block would include has its path, line and command references checked, as `kb
//! audit` finds them (`audit::refs::extract`) and checks them, but by `stat` alone
//! (`audit::Mode::Stat`: no git, no file list, no symbol search), and its symbol references by
//! the verdicts of the last full audit when it has one for the item's text
//! (`audit::verdicts`). A stale memory or record is left out; a stale decision, context file,
//! instruction file or session is kept. Either way a warning names the item and the failing
//! references, and `kb compile` exits 1.

use crate::audit::refs;
use crate::audit::verdicts::{self, Verdicts};
use crate::audit::{Checker, Kind, Mode, Problem};
use crate::error::Diagnostic;
use crate::repo::Repo;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The check of the items a block includes, against the repository at one root, for one
/// [`Knowledge`](super::Knowledge) view (every block of a compile; one MCP request). Each
/// reference is looked at once, however many items and blocks cite it; the audit's verdicts are
/// read on first need.
pub struct Stale {
    checker: Checker,
    cache: Option<PathBuf>,
    verdicts: OnceLock<Verdicts>,
}

impl Stale {
    pub fn new(repo: &Repo) -> Stale {
        Stale::at(&repo.layout.root, repo.layout.cache_file("audit.json"))
    }

    /// Returns the check against the files at `root`, the audit's verdicts read from `cache`:
    /// for a view of files copied out of a revision (`kb diff`), checked against the working
    /// tree they came from.
    pub fn at(root: &Path, cache: Option<PathBuf>) -> Stale {
        Stale { checker: Checker::new(root, Mode::Stat, Vec::new()), cache, verdicts: OnceLock::new() }
    }

    /// Returns the failing references of an item whose text is `text` (with a record's
    /// `citations`); none when it holds.
    pub fn problems(&self, text: &str, citations: &[&str]) -> Vec<Problem> {
        self.problems_keyed(text, citations, verdicts::key(text))
    }

    /// [`Stale::problems`], the audit's verdict looked up by `key` (the hash of the text as the
    /// audit read it, when the block shows it otherwise: a record's fact on one line).
    pub fn problems_keyed(&self, text: &str, citations: &[&str], key: u64) -> Vec<Problem> {
        let found = refs::extract(text, citations);
        if found.is_empty() {
            return Vec::new();
        }
        let mut problems = self.checker.check(std::slice::from_ref(&found)).pop().unwrap_or_default().problems;
        // Symbols: only what the last audit found, for exactly this text.
        let symbolic = found.iter().any(|r| match r {
            refs::Ref::Symbol { .. } => true,
            refs::Ref::Path { path, .. } => !path.contains('/'),
            refs::Ref::Command { .. } | refs::Ref::Cargo { .. } => false,
        });
        if symbolic {
            let v = self.verdicts.get_or_init(|| verdicts::load(self.cache.as_deref()));
            if !v.is_empty() {
                problems.extend(verdicts::problems(v, key, &found));
            }
        }
        problems.retain(|p| p.kind != Kind::Conflict);
        problems
    }
}

/// Returns the messages of `problems`, one clause each.
fn clauses(problems: &[Problem]) -> String {
    problems.iter().map(|p| p.message.as_str()).collect::<Vec<_>>().join("; ")
}

/// Returns the warning for a stale item left out of the block (a memory, a record): `what`
/// names it (`memory 3`), `path` and `line` are where it is.
pub fn left_out(path: &Path, line: Option<usize>, what: &str, problems: &[Problem]) -> Diagnostic {
    Diagnostic::warning(
        line,
        format!(
            "stale: {what} left out of the context block: {} (`kb audit` checks it; fix or forget it)",
            clauses(problems)
        ),
    )
    .in_file(path)
}

/// Returns the warning for a stale item kept in the block (a decision, a context file, an
/// instruction file, the session: people own them, and one dead path must not drop a whole file).
pub fn kept(path: &Path, line: Option<usize>, what: &str, problems: &[Problem]) -> Diagnostic {
    Diagnostic::warning(
        line,
        format!("stale: {what} is kept in the context block, but {} (fix the reference)", clauses(problems)),
    )
    .in_file(path)
}
