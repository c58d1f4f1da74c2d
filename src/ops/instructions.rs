//! `kb instructions [--for PATH]...`: list the scoped instruction files (docs/formats.md, Scoped
//! instructions) and say which apply to the paths being worked on.

use super::{Report, View, abs};
use crate::error::Diagnostic;
use crate::instructions;
use crate::paths::Layout;
use serde::Serialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// JSON: `{"instructions":[{"path":ABS, "apply_to":[GLOB...], "description":S|null,
/// "applies":bool, "matched":GLOB|null}...]}`, files in path order.
#[derive(Serialize)]
pub struct InstructionsReport {
    instructions: Vec<Entry>,
    /// Whether files were given (`--for`): without, the text says where each file applies.
    #[serde(skip)]
    for_given: bool,
    #[serde(skip)]
    diagnostics: Vec<Diagnostic>,
}

#[derive(Serialize)]
struct Entry {
    path: String,
    apply_to: Vec<String>,
    description: Option<String>,
    applies: bool,
    matched: Option<String>,
    #[serde(skip)]
    file: PathBuf,
}

/// Turns the `--for` paths into root-relative ones; `Err` names the first path outside the root
/// (a usage error at the command line).
pub fn for_paths(layout: &Layout, given: &[PathBuf]) -> Result<Vec<String>, String> {
    given.iter().map(|p| instructions::relative_path(&layout.root, p)).collect()
}

/// Lists every instruction file of the repository and whether it applies to one of `paths`
/// (root-relative, from [`for_paths`]).
pub fn instructions(layout: &Layout, paths: &[String]) -> InstructionsReport {
    let found = instructions::load(layout);
    let instructions = found
        .files
        .into_iter()
        .map(|i| {
            let matched = i.matched(paths).map(str::to_string);
            Entry {
                path: abs(&i.path),
                apply_to: i.apply_to,
                description: i.description,
                applies: matched.is_some(),
                matched,
                file: i.path,
            }
        })
        .collect();
    InstructionsReport { instructions, for_given: !paths.is_empty(), diagnostics: found.problems }
}

impl Report for InstructionsReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        if self.instructions.is_empty() {
            let dir = v.rel(Path::new(".github/instructions")).into_owned();
            return writeln!(w, "No scoped instructions ({dir}/**/*{}).", instructions::SUFFIX);
        }
        for e in &self.instructions {
            let path = v.clean(&v.rel(&e.file)).into_owned();
            let globs = v.clean(&e.apply_to.join(", ")).into_owned();
            let (mark, why) = match &e.matched {
                Some(g) => (v.style.ok("✓ applies    "), format!("matched {}", v.clean(g))),
                None if e.apply_to.is_empty() => ("- not applied".to_string(), "no usable applyTo".to_string()),
                // Without files there is nothing to apply to: say where the file applies.
                None if !self.for_given => ("-".to_string(), format!("applies to: {globs}")),
                None => ("- not applied".to_string(), format!("applyTo {globs}")),
            };
            match &e.description {
                Some(d) => {
                    let one_line = d.split_whitespace().collect::<Vec<_>>().join(" ");
                    writeln!(w, "{mark}  {path}  ({why}): {}", v.clean(&one_line))?
                }
                None => writeln!(w, "{mark}  {path}  ({why})")?,
            }
        }
        Ok(())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}
