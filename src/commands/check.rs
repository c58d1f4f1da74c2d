//! `kb check`: validate every knowledge file and report each problem; exit 1 when any.

use super::Ctx;
use crate::output;
use crate::settings::Settings;
use anyhow::Result;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// One problem in `check` JSON.
#[derive(Serialize, Clone)]
pub struct CheckProblem {
    pub path: String,
    pub line: Option<usize>,
    pub message: String,
}

#[derive(Serialize)]
struct CheckJson {
    files: usize,
    problems: Vec<CheckProblem>,
}

pub fn run(ctx: &Ctx) -> Result<ExitCode> {
    let mut files = 0;
    let mut problems: Vec<(PathBuf, Option<usize>, String)> = Vec::new();

    // Settings first: an invalid value is reported, and the defaults let the rest be checked.
    let settings_files: Vec<PathBuf> =
        ctx.layout.global_settings().into_iter().chain([ctx.layout.project_settings()]).collect();
    files += settings_files.iter().filter(|p| p.is_file()).count();
    let (settings, settings_errors) = Settings::load_all(&ctx.layout, &super::env);
    for e in settings_errors {
        // An environment variable is named as such; it has no file.
        let path = match (&e.path, e.var) {
            (Some(p), _) => p.clone(),
            (None, Some(var)) => PathBuf::from(format!("env:{var}")),
            (None, None) => PathBuf::from("(settings)"),
        };
        problems.push((path, e.line, e.detail));
    }

    for path in ctx.layout.global_context().into_iter().chain([ctx.layout.project_context()]) {
        match std::fs::read(&path) {
            Ok(bytes) => {
                files += 1;
                match crate::memories::file::decode(&bytes) {
                    Ok(text) => {
                        for p in crate::context::read(text).1 {
                            problems.push((path.clone(), p.line, p.message));
                        }
                    }
                    Err(p) => problems.push((path.clone(), p.line, p.message)),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => problems.push((path.clone(), None, format!("cannot read: {e}"))),
        }
    }

    // A compile target kb would refuse (outside the root, an input file...) is a settings problem.
    if let crate::settings::Source::File(settings_file) = &settings.context_targets.source {
        for raw in &settings.context_targets.value {
            if let Err(e) = crate::context::targets::resolve(&ctx.layout, raw) {
                problems.push((settings_file.clone(), None, format!("context_targets: {}", e.message)));
            }
        }
    }

    let store = crate::memories::store::Store { layout: ctx.layout.clone(), settings };
    let index = store.scan()?;
    files += index.files();
    for p in index.problems() {
        problems.push((p.path, p.line, p.message));
    }
    for (id, names) in index.duplicate_ids() {
        for name in &names {
            let others: Vec<&str> = names.iter().copied().filter(|n| n != name).collect();
            problems.push((
                index.dir.join(name),
                None,
                format!("duplicate id {id}: also used by {}", others.join(", ")),
            ));
        }
    }

    files += super::records::check(ctx, &mut problems);

    let problems: Vec<CheckProblem> = problems
        .into_iter()
        .map(|(path, line, message)| CheckProblem { path: abs_display(&path), line, message })
        .collect();
    if ctx.json {
        output::print_json(&CheckJson { files, problems: problems.clone() })?;
    } else if problems.is_empty() {
        output::print(&format!("{} Checked {}: no problems.", ctx.style.ok("✓"), plural(files, "file")))?;
    } else {
        let mut text = String::new();
        for p in &problems {
            let line = p.line.map_or(String::new(), |l| format!(":{l}"));
            let entry = format!("{}{line}: {}", ctx.rel(Path::new(&p.path)), p.message);
            text.push_str(&ctx.style.clean(&entry));
            text.push('\n');
        }
        text.push_str(&format!("\n{} in {} checked.", plural(problems.len(), "problem"), plural(files, "file")));
        output::print(&text)?;
    }
    Ok(if problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Returns "1 file", "2 files".
fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

fn abs_display(path: &Path) -> String {
    if path.is_relative() && path.to_string_lossy().starts_with("env:") {
        return path.display().to_string();
    }
    super::abs(path).display().to_string()
}
