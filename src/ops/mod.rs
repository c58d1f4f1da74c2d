//! The use-cases of kb, shared by the command line and the MCP server.
//!
//! Each operation takes a [`Repo`](crate::repo::Repo) (or, where settings are not needed, a
//! [`Layout`](crate::paths::Layout)) and returns a report: a value that serialises to the
//! command's `--json` document and renders its human text ([`Report`]). Operations never print;
//! the problems they met along the way travel in the report as diagnostics. `commands/` prints
//! reports for a terminal, `mcp/` turns them into tool results, and neither knows the other.

pub mod agents;
pub mod audit;
pub mod board;
pub mod check;
pub mod compile;
pub mod config;
pub mod consolidate;
pub mod context;
pub mod convert;
pub mod decision;
pub mod diff;
pub mod digest;
pub mod fix;
pub mod forget;
pub mod heat;
pub mod hook;
pub mod hooks;
pub mod inbox;
pub mod init;
pub mod instructions;
pub mod learned;
pub mod protect;
pub mod read;
pub mod recall;
pub mod save;
pub mod session;
pub mod shared;
pub mod undo;
pub mod update;
pub mod vote;

use crate::error::Diagnostic;
pub use crate::knowledge::Knowledge;
use crate::output::Style;
use serde::Serialize;
use std::borrow::Cow;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What an operation returns: its JSON document (`Serialize`) and its human text.
pub trait Report: Serialize {
    /// Writes the human text, each line ending in `\n` (nothing at all for an empty result that
    /// prints nothing).
    fn render(&self, view: &View, w: &mut dyn Write) -> io::Result<()>;

    /// Writes the human text with each item's verdict (`verdicts[i]` the `i`-th item's, as
    /// [`audit::verified`] checks them), a report of several items placing each within that
    /// item's own lines; by default (one item) after the text.
    fn render_verified(&self, view: &View, w: &mut dyn Write, verdicts: &[String]) -> io::Result<()> {
        self.render(view, w)?;
        writeln!(w, "\nVerified (paths and commands):")?;
        for line in verdicts {
            writeln!(w, "  {}", view.clean(line))?;
        }
        Ok(())
    }

    /// The problems met that did not stop the operation, to show once on stderr.
    fn diagnostics(&self) -> &[Diagnostic] {
        &[]
    }

    /// Parts of the operation that failed while the rest went on (a compile target that could
    /// not be written), to show as errors.
    fn errors(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether the operation succeeded (`kb check` with problems and `kb compile` with a failed
    /// target report fully, then exit 1).
    fn succeeded(&self) -> bool {
        true
    }
}

/// How a report is rendered: the style (colour, escaping) and the root that paths are shown
/// relative to.
#[derive(Debug, Clone)]
pub struct View {
    pub style: Style,
    pub root: PathBuf,
    /// The reader is an agent over MCP: advice names MCP tools, not kb commands.
    pub agent: bool,
}

impl View {
    /// Returns `path` relative to the root when it is inside it, for messages.
    pub fn rel<'a>(&self, path: &'a Path) -> Cow<'a, str> {
        rel(&self.root, path)
    }

    /// Returns untrusted text made safe for the terminal.
    pub fn clean<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.style.clean(text)
    }
}

/// Returns `path` relative to `root` when it is inside it.
pub fn rel<'a>(root: &Path, path: &'a Path) -> Cow<'a, str> {
    match path.strip_prefix(root) {
        Ok(r) if !r.as_os_str().is_empty() => r.to_string_lossy(),
        _ => path.to_string_lossy(),
    }
}

/// Returns the absolute form of a path for JSON output.
pub fn abs(path: &Path) -> String {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string()
}

/// Returns "1 file", "2 files".
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// Writes where a command read its settings from (`kb config` and `kb check` say so):
/// the root, then each settings file, marked when it does not exist.
pub fn write_sources(layout: &crate::paths::Layout, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "root: {}", layout.root.display())?;
    for path in layout.global_settings().into_iter().chain([layout.project_settings()]) {
        let missing = if path.is_file() { "" } else { " (not found)" };
        writeln!(w, "settings: {}{missing}", path.display())?;
    }
    Ok(())
}

/// Returns the file name of `path` for messages.
pub fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}
