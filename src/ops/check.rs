//! `kb check`: validate every knowledge file — settings, context files, compile targets,
//! memories, the JSONL file — and report each problem (docs/behaviour.md, kb check), with what a
//! git merge leaves: conflict markers and duplicate ids, each with path and line (docs/safety.md,
//! Git merges). `kb check --fix` runs
//! the repairs of `ops::fix` first and then checks.

use super::{Report, View, abs, plural};
use crate::context::targets;
use crate::copilot::Records;
use crate::error::{Diagnostic, Severity};
use crate::format::merge::{self, Marker};
use crate::fsio;
use crate::knowledge::Knowledge;
use crate::paths::Layout;
use crate::repo::Repo;
use crate::settings::{Environment, Settings, Source};
use anyhow::Result;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What `kb check` says of a `.kb-tmp-*` file.
const TEMP_FILE: &str =
    "leftover temporary file from an interrupted write (kb removes it on the next write once it is a minute old)";

/// How every conflict-marker problem starts (and how `settle_conflicts` tells them apart).
const MARKER: &str = "merge conflict marker";

/// JSON: `{"files":N, "problems":[{"path":ABS|"env:NAME", "line":N|null, "message":S}...],
/// "fixed":[{"path":ABS, "line":N|null, "message":S}...]}`; `fixed` lists the repairs of
/// `--fix` (empty without it), each at its path and line as they were before the repair.
pub struct CheckReport {
    files: usize,
    problems: Vec<Diagnostic>,
    /// The shared source each problem is in, by position (`None`: this repository's).
    shared: Vec<Option<String>>,
    /// With `--fix`: what it repaired and what it left alone.
    fix: Option<super::fix::Fixed>,
    layout: Layout,
}

/// Runs the repairs of `kb check --fix` (under the lock), then checks every knowledge file: the
/// report lists the repairs and the problems that remain.
pub fn check_and_fix(layout: &Layout, now: chrono::DateTime<chrono::Utc>, env: &Environment) -> Result<CheckReport> {
    let fixed = super::fix::fix(layout, now, env)?;
    let mut report = check(layout, now, env)?;
    report.fix = Some(fixed);
    Ok(report)
}

/// Checks every knowledge file of the repository at `layout`, and the files of each shared
/// source on this machine, its problems named by the source (docs/shared.md).
pub fn check(layout: &Layout, now: chrono::DateTime<chrono::Utc>, env: &Environment) -> Result<CheckReport> {
    let mut report = check_one(layout, now, env)?;
    report.shared = vec![None; report.problems.len()];
    let (settings, _) = Settings::load_all(layout, &crate::settings::env);
    for source in crate::shared::sources(layout, &settings.shared.value, env.cache_home.as_deref()) {
        if !source.present() {
            continue;
        }
        // The source's own shared sources are its business: one level only, so that two
        // repositories sharing each other never loop.
        let theirs = check_one(&source.layout(), now, env)?;
        report.files += theirs.files;
        for d in theirs.problems {
            report.problems.push(d);
            report.shared.push(Some(source.spec.name.clone()));
        }
    }
    Ok(report)
}

/// Checks every knowledge file of the repository at `layout` alone.
fn check_one(layout: &Layout, now: chrono::DateTime<chrono::Utc>, env: &Environment) -> Result<CheckReport> {
    let mut files = 0;
    let mut problems: Vec<Diagnostic> = Vec::new();

    // Settings first: an invalid value is reported, and the defaults let the rest be checked.
    files += layout.global_settings().into_iter().chain([layout.project_settings()]).filter(|p| p.is_file()).count();
    let (settings, settings_errors) = Settings::load_all(layout, &crate::settings::env);
    problems.extend(settings_errors.iter().map(|e| e.diagnostic()));
    // Files that do not parse as a whole: when they hold conflict markers, the markers say why.
    let mut unparsed: HashSet<PathBuf> = settings_errors.iter().filter_map(|e| e.path.clone()).collect();
    for path in layout.global_settings().into_iter().chain([layout.project_settings()]) {
        problems.extend(markers_in_file(layout, &path));
    }

    for path in layout.global_context().into_iter().chain([layout.project_context()]) {
        match crate::fsio::read_input(&path, layout.boundary(&path)) {
            Ok(None) => {}
            Ok(Some(bytes)) => {
                files += 1;
                match crate::format::text::decode(&bytes) {
                    Ok(text) => {
                        problems.extend(
                            crate::knowledge::context_files::read(text).1.into_iter().map(|d| d.in_file(&path)),
                        );
                        problems.extend(markers_in(&path, text));
                    }
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
            for p in &spec.block.for_paths {
                if let Err(e) = crate::instructions::relative_path(&layout.root, Path::new(p)) {
                    let msg = format!("context_targets: {}: \"for\" {e}; it selects no instruction", spec.path);
                    problems.push(Diagnostic::warning(None, msg).in_file(settings_file));
                }
            }
        }
    }

    // The access log is local state, but a torn or foreign line in it is worth knowing about.
    problems.extend(crate::heat::read(layout, settings.heat_window_days.value, u64::MAX).problems);
    let repo = Repo { layout: layout.clone(), settings, now, env: env.clone() };
    let knowledge = Knowledge::read(&repo);
    let index = knowledge.memories()?;
    files += index.files();
    problems.extend(index.problems());
    // Markers in a file that does not parse, and in the body of a valid memory (found in the
    // index without reading the file, so a clean repository costs no extra read).
    let invalid = index.invalid_files();
    unparsed.extend(invalid.iter().map(|n| index.dir.join(n)));
    let mut marked: Vec<&str> = invalid;
    marked.extend(index.memories().filter(|m| merge::may_have_markers(m.content)).map(|m| m.file_name));
    marked.sort_unstable();
    for name in marked {
        problems.extend(markers_in_file(layout, &index.dir.join(name)));
    }
    problems.extend(memory_duplicates(layout, index));
    // Temporary files of writes that were killed: the memories folder's from the scan's own
    // listing, the other folders kb writes into read once. One younger than the sweep's minute
    // belongs to a write under way in another kb process, and is no problem.
    let mut temps = index.temp_files();
    temps.extend(layout.temp_file_dirs().iter().flat_map(|dir| fsio::temp_files_in(dir)));
    temps.retain(|p| fsio::is_stale_temp_file(p));
    temps.sort();
    problems.extend(temps.iter().map(|p| Diagnostic::warning(None, TEMP_FILE).in_file(p)));

    files += check_decisions(&knowledge, &mut problems, &mut unparsed);
    files += check_records(&knowledge, &mut problems);
    let instructions = knowledge.instructions();
    files += instructions.files.len();
    problems.extend(instructions.problems.iter().cloned());
    for i in &instructions.files {
        problems.extend(markers_in_file(layout, &i.path));
    }
    files += check_inbox(layout, &mut problems, &mut unparsed);
    files += crate::session::check(layout, &mut problems);
    for path in [layout.session()].into_iter().chain(crate::session::ended_files(layout)) {
        problems.extend(markers_in_file(layout, &path));
    }
    settle_conflicts(&mut problems, &unparsed);
    Ok(CheckReport { files, problems, shared: Vec::new(), fix: None, layout: layout.clone() })
}

/// Checks the decisions: files that do not parse (added to `unparsed`), duplicate ids, broken
/// `superseded_by`, conflict markers. Returns how many files were checked.
fn check_decisions(k: &Knowledge<'_>, problems: &mut Vec<Diagnostic>, unparsed: &mut HashSet<PathBuf>) -> usize {
    let repo = k.repo();
    let scan = match k.decisions() {
        Ok(scan) => scan,
        Err(e) => {
            let message = format!("cannot read the decisions folder: {e}");
            problems.push(Diagnostic::error(None, message).in_file(&repo.layout.decisions()));
            return 0;
        }
    };
    problems.extend(scan.problems.iter().cloned());
    unparsed.extend(scan.problems.iter().filter_map(|d| d.path.clone()));
    problems.extend(scan.consistency_problems());
    let mut paths: Vec<&Path> = scan.decisions.iter().map(|(p, _)| p.as_path()).collect();
    paths.extend(scan.problems.iter().filter_map(|d| d.path.as_deref()));
    paths.sort_unstable();
    paths.dedup();
    for path in paths {
        problems.extend(markers_in_file(&repo.layout, path));
    }
    scan.files
}

/// Checks the inbox's proposals: files that do not read as one (added to `unparsed`), ids two
/// files claim, conflict markers. Returns how many files were checked.
fn check_inbox(layout: &Layout, problems: &mut Vec<Diagnostic>, unparsed: &mut HashSet<PathBuf>) -> usize {
    let scan = match crate::inbox::scan(layout) {
        Ok(scan) => scan,
        Err(e) => {
            problems.push(Diagnostic::error(None, format!("cannot read the inbox: {e}")).in_file(&layout.inbox()));
            return 0;
        }
    };
    unparsed
        .extend(scan.problems.iter().filter(|d| !d.message.starts_with("duplicate")).filter_map(|d| d.path.clone()));
    problems.extend(scan.problems.iter().cloned());
    let mut paths: Vec<&Path> = scan.entries.iter().map(|e| e.path.as_path()).collect();
    paths.extend(scan.problems.iter().filter_map(|d| d.path.as_deref()));
    paths.sort_unstable();
    paths.dedup();
    for path in paths {
        problems.extend(markers_in_file(layout, path));
    }
    scan.files
}

/// Returns a problem for each conflict-marker line of `text`, the file at `path`.
fn markers_in(path: &Path, text: &str) -> Vec<Diagnostic> {
    merge::markers(text)
        .into_iter()
        .map(|(line, m)| {
            let message = match m {
                Marker::Start => format!(
                    "{MARKER} <<<<<<<: a git merge left a conflict here; keep the lines you want and delete the \
                     <<<<<<<, ======= and >>>>>>> lines"
                ),
                other => format!("{MARKER} {}", other.as_str()),
            };
            Diagnostic::error(Some(line), message).in_file(path)
        })
        .collect()
}

/// Returns the conflict-marker problems of the file at `path` (nothing when it does not exist
/// or is not a regular file inside the root: other checks report that).
fn markers_in_file(layout: &Layout, path: &Path) -> Vec<Diagnostic> {
    match crate::fsio::read_input(path, layout.boundary(path)) {
        Ok(Some(bytes)) => markers_in(path, &String::from_utf8_lossy(&bytes)),
        _ => Vec::new(),
    }
}

/// Returns the line of the `id` entry of the memory or decision file at `path`.
/// One problem per memory file whose id another file claims too (what a git merge leaves).
pub fn memory_duplicates(layout: &Layout, index: &crate::memories::index::Index) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    for (id, names) in index.duplicate_ids() {
        for name in &names {
            let others: Vec<&str> = names.iter().copied().filter(|n| n != name).collect();
            let message = format!(
                "duplicate id {id}: also used by {} (`kb check --fix` gives the newer file a new id)",
                others.join(", ")
            );
            let path = index.dir.join(name);
            problems.push(Diagnostic::error(id_line(layout, &path), message).in_file(&path));
        }
    }
    problems
}

/// One problem per line of the records file at `path` whose id another line holds too.
pub fn record_duplicates(all: &Records<'_>, path: &Path) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    for (id, lines) in all.duplicate_ids() {
        for &line in &lines {
            let others: Vec<String> = lines.iter().filter(|l| **l != line).map(|l| l.to_string()).collect();
            let message =
                format!("duplicate id {id}: also on line {} (`kb check --fix` merges them)", others.join(", "));
            problems.push(Diagnostic::error(Some(line), message).in_file(path));
        }
    }
    problems
}

fn id_line(layout: &Layout, path: &Path) -> Option<usize> {
    let bytes = crate::fsio::read_input(path, &layout.root).ok()??;
    merge::id_line(&String::from_utf8_lossy(&bytes))
}

/// Reports each conflict-marker line once: a marker stands in for the other problems of its
/// line (a JSONL line that is not JSON, a YAML error) and, in a file that does not parse as a
/// whole (`unparsed`), for the parse error; a problem that already names the conflict at a
/// marker line (the session's) stands in for that marker.
fn settle_conflicts(problems: &mut Vec<Diagnostic>, unparsed: &HashSet<PathBuf>) {
    let is_marker = |d: &Diagnostic| d.message.starts_with(MARKER);
    let mut marked: HashMap<PathBuf, HashSet<usize>> = HashMap::new();
    let mut named: HashSet<(PathBuf, usize)> = HashSet::new();
    for d in problems.iter() {
        let (Some(path), Some(line)) = (&d.path, d.line) else { continue };
        if is_marker(d) {
            marked.entry(path.clone()).or_default().insert(line);
        } else if d.message.contains("conflict") {
            named.insert((path.clone(), line));
        }
    }
    if marked.is_empty() {
        return;
    }
    problems.retain(|d| {
        let Some(path) = &d.path else { return true };
        if is_marker(d) {
            return !d.line.is_some_and(|l| named.contains(&(path.clone(), l)));
        }
        let Some(lines) = marked.get(path) else { return true };
        if d.message.contains("conflict") {
            return true;
        }
        let at_marker = d.line.is_some_and(|l| lines.contains(&l));
        let explained = unparsed.contains(path) && d.severity == Severity::Error;
        !(at_marker || explained)
    });
}

/// Checks the JSONL file: every problem line and each id written on more than one line. Returns
/// the number of files checked (0 or 1).
fn check_records(k: &Knowledge<'_>, problems: &mut Vec<Diagnostic>) -> usize {
    let path = k.repo().layout.copilot_memories();
    let file = match k.records() {
        Ok(f) if f.exists => f,
        Ok(_) => return 0,
        Err(e) => {
            problems.push(Diagnostic::error(None, format!("cannot read: {e}")).in_file(&path));
            return 1;
        }
    };
    let all = Records::parse_checked(file);
    let mut found: Vec<Diagnostic> = all.problems.iter().map(|p| p.clone().in_file(&path)).collect();
    found.extend(markers_in(&path, &String::from_utf8_lossy(file.data())));
    found.extend(record_duplicates(&all, &path));
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
            #[serde(skip_serializing_if = "Option::is_none")]
            shared: Option<&'a str>,
        }
        #[derive(Serialize)]
        struct CheckJson<'a> {
            files: usize,
            problems: Vec<Problem<'a>>,
            /// The root and the settings files read (existing or not).
            root: String,
            settings_files: Vec<String>,
            /// The repairs of `--fix`.
            fixed: Vec<Problem<'a>>,
        }
        fn shape(d: &Diagnostic) -> Problem<'_> {
            Problem { path: json_path(d.path.as_deref()), line: d.line, message: &d.message, shared: None }
        }
        let problems =
            self.problems.iter().enumerate().map(|(i, d)| Problem { shared: self.shared_of(i), ..shape(d) }).collect();
        let fixed = self.fix.iter().flat_map(|f| &f.fixed).map(shape).collect();
        let l = &self.layout;
        let settings_files = l.global_settings().into_iter().chain([l.project_settings()]).map(|p| abs(&p)).collect();
        CheckJson { files: self.files, problems, root: abs(&l.root), settings_files, fixed }.serialize(s)
    }
}

impl CheckReport {
    /// The shared source problem `i` is in, if it is one's.
    fn shared_of(&self, i: usize) -> Option<&str> {
        self.shared.get(i).and_then(Option::as_deref)
    }
}

impl Report for CheckReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        super::write_sources(&self.layout, w)?;
        writeln!(w)?;
        if let Some(fix) = &self.fix {
            for d in &fix.fixed {
                writeln!(w, "{} Fixed {}", v.style.ok("✓"), v.clean(&d.render(|p| v.rel(p).into_owned())))?;
            }
            if fix.fixed.is_empty() {
                writeln!(w, "Nothing to repair.")?;
            }
            writeln!(w)?;
        }
        if self.problems.is_empty() {
            return writeln!(w, "{} Checked {}: no problems.", v.style.ok("✓"), plural(self.files, "file"));
        }
        for (i, d) in self.problems.iter().enumerate() {
            let line = v.clean(&d.render(|p| v.rel(p).into_owned())).into_owned();
            match self.shared_of(i) {
                Some(name) => writeln!(w, "shared source {name}: {line}")?,
                None => writeln!(w, "{line}")?,
            }
        }
        writeln!(w, "\n{} in {} checked.", plural(self.problems.len(), "problem"), plural(self.files, "file"))
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        self.fix.as_ref().map_or(&[], |f| &f.left)
    }

    fn succeeded(&self) -> bool {
        self.problems.is_empty()
    }
}
