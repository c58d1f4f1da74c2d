//! `kb check`: validate every knowledge file — settings, context files, compile targets,
//! memories, the JSONL file — and report each problem (SPEC §3).

use super::{Report, View, abs, plural};
use crate::context::{self, targets};
use crate::copilot::Records;
use crate::copilot::jsonl::JsonlFile;
use crate::error::Diagnostic;
use crate::fsio;
use crate::memories::file;
use crate::paths::Layout;
use crate::repo::{self, Repo};
use crate::settings::{Settings, Source};
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What `kb check` says of a `.kb-tmp-*` file.
const TEMP_FILE: &str =
    "leftover temporary file from an interrupted write (kb removes it on the next write once it is a minute old)";

/// JSON: `{"files":N, "problems":[{"path":ABS|"env:NAME", "line":N|null, "message":S}...]}`.
pub struct CheckReport {
    files: usize,
    problems: Vec<Diagnostic>,
    layout: Layout,
}

/// Checks every knowledge file of the repository at `layout`.
pub fn check(layout: &Layout, now: chrono::DateTime<chrono::Utc>) -> Result<CheckReport> {
    let mut files = 0;
    let mut problems: Vec<Diagnostic> = Vec::new();

    // Settings first: an invalid value is reported, and the defaults let the rest be checked.
    files += layout.global_settings().into_iter().chain([layout.project_settings()]).filter(|p| p.is_file()).count();
    let (settings, settings_errors) = Settings::load_all(layout, &repo::env);
    problems.extend(settings_errors.iter().map(|e| e.diagnostic()));

    for path in layout.global_context().into_iter().chain([layout.project_context()]) {
        match repo::read_input(&path, repo::boundary(layout, &path)) {
            Ok(None) => {}
            Ok(Some(bytes)) => {
                files += 1;
                match file::decode(&bytes) {
                    Ok(text) => problems.extend(context::read(text).1.into_iter().map(|d| d.in_file(&path))),
                    Err(d) => problems.push(d.in_file(&path)),
                }
            }
            Err(e) => problems.push(Diagnostic::error(None, format!("cannot read: {e}")).in_file(&path)),
        }
    }

    // A compile target kb would refuse (outside the root, an input file...) is a settings problem.
    if let Source::File(settings_file) = &settings.context_targets.source {
        for spec in &settings.context_targets.value {
            if let Err(e) = targets::resolve(layout, &spec.path) {
                problems
                    .push(Diagnostic::error(None, format!("context_targets: {}", e.message)).in_file(settings_file));
            }
            for p in &spec.for_paths {
                if let Err(e) = crate::instructions::relative_path(&layout.root, Path::new(p)) {
                    let msg = format!("context_targets: {}: \"for\" {e}; it selects no instruction", spec.path);
                    problems.push(Diagnostic::warning(None, msg).in_file(settings_file));
                }
            }
        }
    }

    // The access log is local state, but a torn or foreign line in it is worth knowing about.
    problems.extend(crate::heat::read(layout, settings.heat_window_days.value).problems);
    let repo = Repo { layout: layout.clone(), settings, now };
    let index = repo.memories().scan()?;
    files += index.files();
    problems.extend(index.problems());
    for (id, names) in index.duplicate_ids() {
        for name in &names {
            let others: Vec<&str> = names.iter().copied().filter(|n| n != name).collect();
            let message = format!("duplicate id {id}: also used by {}", others.join(", "));
            problems.push(Diagnostic::error(None, message).in_file(&index.dir.join(name)));
        }
    }
    // Temporary files of writes that were killed (or are under way), whatever their age: the
    // memories folder's from the scan's own listing, the other folders kb writes into read once.
    let mut temps = index.temp_files();
    temps.extend(layout.temp_file_dirs().iter().flat_map(|dir| fsio::temp_files_in(dir)));
    temps.sort();
    problems.extend(temps.iter().map(|p| Diagnostic::warning(None, TEMP_FILE).in_file(p)));

    files += super::decision::check(&repo, &mut problems);
    files += check_records(layout, &mut problems);
    files += crate::instructions::check(layout, &mut problems);
    files += crate::session::check(layout, &mut problems);
    Ok(CheckReport { files, problems, layout: layout.clone() })
}

/// Checks the JSONL file: every problem line and each id written on more than one line. Returns
/// the number of files checked (0 or 1).
fn check_records(layout: &Layout, problems: &mut Vec<Diagnostic>) -> usize {
    let path = layout.copilot_memories();
    let file = match JsonlFile::read(&path, &layout.root) {
        Ok(f) if f.exists => f,
        Ok(_) => return 0,
        Err(e) => {
            problems.push(Diagnostic::error(None, format!("cannot read: {e}")).in_file(&path));
            return 1;
        }
    };
    let all = Records::parse_checked(&file);
    let mut found: Vec<Diagnostic> = all.problems.iter().map(|p| p.clone().in_file(&path)).collect();
    for (id, lines) in all.duplicate_ids() {
        for &line in &lines {
            let others: Vec<String> = lines.iter().filter(|l| **l != line).map(|l| l.to_string()).collect();
            let message = format!("duplicate id {id}: also on line {}", others.join(", "));
            found.push(Diagnostic::error(Some(line), message).in_file(&path));
        }
    }
    found.sort_by_key(|d| d.line);
    problems.extend(found);
    1
}

/// Returns a problem's path for JSON: absolute, or `env:NAME` for an environment variable.
fn json_path(path: Option<&Path>) -> String {
    match path {
        Some(p) if p.is_relative() && p.to_string_lossy().starts_with("env:") => p.display().to_string(),
        Some(p) => abs(p),
        None => abs(&PathBuf::from("(settings)")),
    }
}

impl Serialize for CheckReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Problem<'a> {
            path: String,
            line: Option<usize>,
            message: &'a str,
        }
        #[derive(Serialize)]
        struct CheckJson<'a> {
            files: usize,
            problems: Vec<Problem<'a>>,
            /// The root and the settings files read (existing or not).
            root: String,
            settings_files: Vec<String>,
        }
        let problems = self
            .problems
            .iter()
            .map(|d| Problem { path: json_path(d.path.as_deref()), line: d.line, message: &d.message })
            .collect();
        let l = &self.layout;
        let settings_files = l.global_settings().into_iter().chain([l.project_settings()]).map(|p| abs(&p)).collect();
        CheckJson { files: self.files, problems, root: abs(&l.root), settings_files }.serialize(s)
    }
}

impl Report for CheckReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        super::write_sources(&self.layout, w)?;
        writeln!(w)?;
        if self.problems.is_empty() {
            return writeln!(w, "{} Checked {}: no problems.", v.style.ok("✓"), plural(self.files, "file"));
        }
        for d in &self.problems {
            writeln!(w, "{}", v.clean(&d.render(|p| v.rel(p).into_owned())))?;
        }
        writeln!(w, "\n{} in {} checked.", plural(self.problems.len(), "problem"), plural(self.files, "file"))
    }

    fn succeeded(&self) -> bool {
        self.problems.is_empty()
    }
}
