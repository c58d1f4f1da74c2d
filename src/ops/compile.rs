//! `kb compile` (and the compile step of `kb watch` and `kb init --agents-md`): write the
//! always-loaded block into every target in `context_targets`, under the repository lock.

use super::agents::{self, Ownership, PlannedFile};
use super::{Report, View, abs};
use crate::context::Block;
use crate::context::targets::{self, Outcome, TargetError, TargetKind, Written};
use crate::error::Diagnostic;
use crate::fsio;
use crate::journal::{Change, Txn};
use crate::knowledge::Knowledge;
use crate::paths;
use crate::repo::{self, Repo};
use crate::settings::{self, Agent, TargetSpec};
use anyhow::{Context as _, Result};
use serde::Serialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What one compile did. JSON: `{"bytes":N, "truncated":bool, "warnings":[S...],
/// "targets":[TARGET...], "generated":[GENERATED...]}`, and with `--check`
/// `"check":[DRIFT...]`.
pub struct CompileReport {
    pub block: Block,
    pub results: Vec<Result<Written, TargetError>>,
    /// The agents' generated files: written, unchanged, deleted, or left alone.
    pub generated: Vec<GeneratedJson>,
    /// With `--check`: each file that is missing, stale, orphaned or not kb's.
    pub check: Option<Vec<Drift>>,
    /// Time taken, lock wait included.
    pub elapsed: Duration,
    /// The block's warnings as shown to people, paths relative to the root.
    warnings: Vec<String>,
}

/// One generated file: `{"path":REL, "agents":[S...], "status":"written"|"unchanged"|"deleted"|
/// "edited"|"foreign"|"error", "bytes":N, "error":S|null}` (`edited`: kb's file, edited by hand,
/// left alone).
#[derive(Debug, Clone, Serialize)]
pub struct GeneratedJson {
    pub path: String,
    pub agents: Vec<&'static str>,
    pub status: &'static str,
    pub bytes: usize,
    pub error: Option<String>,
}

/// One file `kb compile --check` found out of date: `{"path":REL, "state":"missing"|"stale"|
/// "orphaned"|"edited"|"foreign"|"error", "diff":[LINE...], "message":S|null}`.
#[derive(Debug, Clone, Serialize)]
pub struct Drift {
    pub path: String,
    pub state: &'static str,
    pub diff: Vec<String>,
    pub message: Option<String>,
}

/// The most lines of diff shown per file.
const DIFF_LINES: usize = 20;

impl CompileReport {
    /// Returns how many targets were written, left unchanged, and failed.
    pub fn counts(&self) -> (usize, usize, usize) {
        let ok = |o: Outcome| self.results.iter().filter(|r| r.as_ref().is_ok_and(|w| w.outcome == o)).count();
        let failed = self.results.iter().filter(|r| r.is_err()).count();
        let generated = |s: &str| self.generated.iter().filter(|g| g.status == s).count();
        (
            ok(Outcome::Written) + generated("written") + generated("deleted"),
            ok(Outcome::Unchanged) + generated("unchanged"),
            failed + ok(Outcome::Edited) + generated("edited") + generated("foreign") + generated("error"),
        )
    }

    /// Returns the JSON form of each target's result.
    pub fn targets_json(&self) -> Vec<TargetJson> {
        self.results.iter().map(TargetJson::new).collect()
    }
}

/// Compiles once: takes the repository lock, builds each target's block and writes every
/// `context_targets` entry and every file of the agents of `agents`, journaled as one entry.
pub fn compile(repo: &Repo) -> Result<CompileReport> {
    let start = Instant::now();
    let lock = repo.lock()?;
    Ok(compile_locked(repo, &repo.settings.context_targets.value, start, Some(lock)))
}

/// `kb compile --check`: computes everything `compile` writes and writes nothing; the report
/// lists each file that is missing, stale, orphaned, edited or not kb's, with a short diff.
pub fn check(repo: &Repo) -> Result<CompileReport> {
    Ok(compile_locked(repo, &repo.settings.context_targets.value, Instant::now(), None))
}

/// Returns the paths `kb compile` writes for `repo` (each target that resolves, as named and as
/// it resolves, and each agent's block file), for `kb watch` to create their folders first.
pub fn written_paths(repo: &Repo) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for spec in &repo.settings.context_targets.value {
        if let Ok(t) = targets::resolve(&repo.layout, &spec.path) {
            paths.push(t.path);
            paths.push(t.real);
        }
    }
    // The agents' files too (`.github/` for Copilot's): their folders are kb's own creations.
    for &agent in &repo.settings.agents.value {
        let (file, _) = crate::context::agents::block_file(agent);
        if let Ok(t) = targets::resolve(&repo.layout, file) {
            paths.push(t.path);
        }
    }
    paths
}

/// Builds each target's block (once per distinct request) and the agents' files, and writes
/// them under `lock` (the repository lock the caller took), every change journaled as one
/// `compile` entry, or, without a lock, compares them with the files. The report's block is the
/// first target's (the default block when there is none).
fn compile_locked(repo: &Repo, targets: &[TargetSpec], start: Instant, lock: Option<fsio::Lock>) -> CompileReport {
    let check_only = lock.is_none();
    // One reading of the repository for every target's block and every agent's files.
    let knowledge = Knowledge::read(repo);
    let plan = agents::plan(repo, &knowledge, targets);
    let layout = &repo.layout;
    let root = &layout.root;
    let mut block = plan.block;
    let mut results = Vec::new();
    let mut generated = Vec::new();
    let mut drift = Vec::new();
    if check_only {
        let mut seen: Vec<PathBuf> = Vec::new();
        for t in &plan.targets {
            let real = targets::resolve(layout, &t.raw).map(|r| r.real);
            if let Ok(r) = &real {
                if seen.contains(r) {
                    continue;
                }
                seen.push(r.clone());
            }
            match agents::render(repo, t) {
                Ok(targets::Rendered { new, existing, edited, .. }) => {
                    let old = existing.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
                    if let Some(mut d) = drift_of(&t.raw, existing.is_some(), &old, &new) {
                        if edited {
                            d.state = "edited";
                            d.message = Some(edited_target_message(&t.raw));
                        }
                        drift.push(d);
                    }
                }
                Err(e) => drift.push(Drift {
                    path: t.raw.clone(),
                    state: "error",
                    diff: Vec::new(),
                    message: Some(e.message),
                }),
            }
        }
        for g in &plan.generated {
            if let Some(folder) = agents::blocked_by(root, &g.rel) {
                drift.push(Drift {
                    path: g.rel.clone(),
                    state: "error",
                    diff: Vec::new(),
                    message: Some(blocked_message(&folder, &g.rel)),
                });
                continue;
            }
            let path = root.join(&g.rel);
            match agents::read_owned(&path, Some(&g.text)) {
                (Ownership::Foreign, _) => drift.push(foreign_drift(&g.rel)),
                (own, old) => {
                    let old = old.unwrap_or_default();
                    let exists = own != Ownership::Missing;
                    if let Some(mut d) = drift_of(&g.rel, exists, &String::from_utf8_lossy(&old), &g.text) {
                        if own == Ownership::Edited {
                            d.state = "edited";
                            d.message = Some(agents::edited_message(&g.rel, &old, false));
                        }
                        drift.push(d);
                    }
                }
            }
        }
        for (path, own) in &plan.orphans {
            let rel = super::rel(root, path).into_owned();
            let old = std::fs::read(path).unwrap_or_default();
            let mut diff = crate::format::diff::unified(&rel, &String::from_utf8_lossy(&old), "", DIFF_LINES);
            diff[1] = "+++ /dev/null".to_string();
            drift.push(match own {
                Ownership::Edited => Drift {
                    path: rel.clone(),
                    state: "edited",
                    diff: Vec::new(),
                    message: Some(agents::edited_message(&rel, &old, true)),
                },
                _ => Drift { path: rel, state: "orphaned", diff, message: None },
            });
        }
    } else if let Some(lock) = lock {
        // Every change is staged, then recorded in the journal at once (one sync) and made.
        let mut staged = Staged::new(root);
        let writes: Vec<(&str, Option<&str>)> =
            plan.targets.iter().map(|t| (t.raw.as_str(), t.block.as_deref())).collect();
        let (written, notes) =
            targets::write_all_with(layout, &writes, &mut |path, bytes| staged.stage(path, Some(bytes)));
        block.warnings.extend(notes.into_iter().map(|n| Diagnostic::warning(None, n)));
        results = written;
        let mut folders = Vec::new();
        for g in &plan.generated {
            let (written, edited) = write_generated(&mut staged, repo, g, &mut folders);
            block.warnings.extend(edited.map(|m| Diagnostic::warning(None, m)));
            generated.push(written);
        }
        for (path, own) in &plan.orphans {
            let rel = super::rel(root, path).into_owned();
            // Removed only while it is still kb's, as it was a moment ago.
            let (status, error) = match (own, agents::read_owned(path, None)) {
                (Ownership::Owned, (Ownership::Owned, _)) => match staged.stage(path, None) {
                    Ok(()) => ("deleted", None),
                    Err(e) => ("error", Some(format!("cannot delete {rel}: {e}"))),
                },
                (_, (Ownership::Edited, Some(old))) => {
                    block.warnings.push(Diagnostic::warning(None, agents::edited_message(&rel, &old, true)));
                    ("edited", None)
                }
                _ => ("unchanged", None),
            };
            generated.push(GeneratedJson { path: rel, agents: Vec::new(), status, bytes: 0, error });
        }
        let mut txn = Txn::begin(repo, lock, "compile", "compiled the context targets and the agents' files");
        let changes: Vec<Change<'_>> = staged
            .changes
            .iter()
            .map(|(p, b)| match b {
                Some(b) => Change::Write(p, b),
                None => Change::Remove(p),
            })
            .collect();
        let made = txn.apply(&changes).and_then(|()| txn.finish().map(drop));
        if let Err(e) = made {
            // Recorded first, so nothing (or not all) was written: every staged change is an error.
            let why = format!("not written: the undo journal or the write failed: {e}");
            for r in &mut results {
                if let Ok(w) = r
                    && w.outcome == Outcome::Written
                    && staged.holds(&w.target.real)
                {
                    *r = Err(TargetError { target: w.target.raw.clone(), message: why.clone() });
                }
            }
            for g in generated.iter_mut().filter(|g| matches!(g.status, "written" | "deleted")) {
                if staged.holds(&root.join(&g.path)) {
                    g.status = "error";
                    g.error = Some(format!("{}: {why}", g.path));
                }
            }
        }
    }
    // Copilot code review reads the first 4,000 characters of copilot-instructions.md.
    for t in plan.targets.iter().filter(|t| t.agents.contains(&Agent::Copilot)) {
        let Some(limit) = crate::context::agents::block_limit(Agent::Copilot) else { continue };
        let size = agents::render(repo, t).map_or(0, |r| limit.measure(&r.new));
        if size > limit.max {
            block.warnings.push(Diagnostic::warning(
                None,
                format!(
                    "{} is {size} characters: Copilot code review reads only the first {} (the chat agent reads more)",
                    t.raw, limit.max
                ),
            ));
        }
    }
    for t in results.iter().flatten().filter(|t| t.outcome == Outcome::Edited) {
        block.warnings.push(Diagnostic::warning(None, edited_target_message(&t.target.raw)));
    }
    for g in generated.iter().filter(|g| g.status == "foreign") {
        block.warnings.push(Diagnostic::warning(
            None,
            format!(
                "{} is not kb's (no kb marker line): left alone; move it away or rename it so kb can write its own",
                g.path
            ),
        ));
    }
    let warnings = block.warnings.iter().map(|w| w.render(|p| super::rel(root, p).into_owned())).collect();
    CompileReport { block, results, generated, check: check_only.then_some(drift), elapsed: start.elapsed(), warnings }
}

/// Returns the drift of a file whose text is `old` (`exists`: it is there) when compile would
/// write `new`; `None` when it is up to date.
fn drift_of(rel: &str, exists: bool, old: &str, new: &str) -> Option<Drift> {
    if exists && old == new {
        return None;
    }
    let mut diff = crate::format::diff::unified(rel, old, new, DIFF_LINES);
    if !exists && diff.len() > 1 {
        diff[0] = "--- /dev/null".to_string();
    }
    Some(Drift { path: rel.to_string(), state: if exists { "stale" } else { "missing" }, diff, message: None })
}

fn foreign_drift(rel: &str) -> Drift {
    Drift {
        path: rel.to_string(),
        state: "foreign",
        diff: Vec::new(),
        message: Some("not kb's (no kb marker line): kb leaves it alone".to_string()),
    }
}

/// Returns the warning for a standalone target a person edited (`raw`, as `context_targets`
/// names it).
fn edited_target_message(raw: &str) -> String {
    format!(
        "{raw} was edited by hand (its content no longer matches the hash in its kb marker line): left alone; \
         carry the change into the knowledge it is compiled from ({}: context.md, memories, decisions), then \
         delete {raw} and run kb compile",
        crate::context::agents::CONTEXT_SOURCE
    )
}

/// Returns the error for a generated file whose folder `folder` (root-relative) is a file.
fn blocked_message(folder: &str, rel: &str) -> String {
    format!("{folder} is a file, not a folder, so kb cannot write {rel} in it; move {folder} away")
}

/// The changes one compile makes to files inside the root, to be journaled together.
struct Staged<'a> {
    root: &'a Path,
    real_root: PathBuf,
    /// Each file (spelled from the root, symlinks followed) and its new bytes; `None`: removed.
    changes: Vec<(PathBuf, Option<Vec<u8>>)>,
}

impl<'a> Staged<'a> {
    fn new(root: &'a Path) -> Staged<'a> {
        Staged { root, real_root: paths::real_path(root).unwrap_or_else(|_| root.to_path_buf()), changes: Vec::new() }
    }

    /// Returns `path` spelled from the root when it is inside it.
    fn inside(&self, path: &Path) -> Option<PathBuf> {
        let rel = path.strip_prefix(&self.real_root).ok().or_else(|| path.strip_prefix(self.root).ok())?;
        Some(self.root.join(rel))
    }

    /// Stages writing `bytes` to `path` (`None`: removing it) when `path` is inside the root; a
    /// target in the config folder is written straight away (the journal holds the root's files
    /// only).
    fn stage(&mut self, path: &Path, bytes: Option<&[u8]>) -> io::Result<()> {
        match (self.inside(path), bytes) {
            (Some(p), b) => {
                self.changes.push((p, b.map(<[u8]>::to_vec)));
                Ok(())
            }
            (None, Some(b)) => fsio::write_atomic(path, b),
            (None, None) => std::fs::remove_file(path),
        }
    }

    /// Returns whether a change of `path` is staged.
    fn holds(&self, path: &Path) -> bool {
        self.inside(path).is_some_and(|p| self.changes.iter().any(|(c, _)| *c == p))
    }
}

/// Writes one generated file, journaled, when it is missing or kb's and its bytes change; a
/// file that is not kb's, or that a person edited, is left alone (the second value is then the
/// warning for the edit).
fn write_generated(
    staged: &mut Staged<'_>,
    repo: &Repo,
    g: &PlannedFile,
    folders: &mut Vec<(PathBuf, bool)>,
) -> (GeneratedJson, Option<String>) {
    let agents_of = g.agents.iter().map(|a| a.as_str()).collect();
    let out = |status: &'static str, error: Option<String>| GeneratedJson {
        path: g.rel.clone(),
        agents: agents_of,
        status,
        bytes: g.text.len(),
        error,
    };
    let root = &repo.layout.root;
    if let Some(folder) = agents::blocked_by(root, &g.rel) {
        return (out("error", Some(blocked_message(&folder, &g.rel))), None);
    }
    if !agents::folder_inside(root, &g.rel, folders) {
        let why = format!("{}: its folder leads out of the root through a symlink; refused", g.rel);
        return (out("error", Some(why)), None);
    }
    let path = root.join(&g.rel);
    match agents::read_owned(&path, Some(&g.text)) {
        (Ownership::Foreign, _) => return (out("foreign", None), None),
        (Ownership::Edited, old) => {
            let why = agents::edited_message(&g.rel, &old.unwrap_or_default(), false);
            return (out("edited", None), Some(why));
        }
        (Ownership::Owned, Some(b)) if b == g.text.as_bytes() => return (out("unchanged", None), None),
        _ => {}
    }
    if let Some(dir) = path.parent()
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        return (out("error", Some(format!("cannot create {}: {e}", dir.display()))), None);
    }
    let written = match staged.stage(&path, Some(g.text.as_bytes())) {
        Ok(()) => out("written", None),
        Err(e) => out("error", Some(format!("cannot write {}: {e}", g.rel))),
    };
    (written, None)
}

/// The target `kb init --agents-md` adds.
pub const AGENTS_MD: &str = "AGENTS.md";

/// What `kb init --agents-md` did.
pub struct AgentsMd {
    /// Writing the block into AGENTS.md.
    pub written: Written,
    /// Whether AGENTS.md existed before.
    pub existed: bool,
    /// The project settings file, when AGENTS.md had to be added to its `context_targets`.
    pub registered: Option<PathBuf>,
    /// The block's warnings.
    pub diagnostics: Vec<Diagnostic>,
}

impl AgentsMd {
    /// Returns `created`, `written` or `unchanged`.
    pub fn status(&self) -> &'static str {
        match self.written.outcome {
            Outcome::Unchanged => "unchanged",
            Outcome::Written if self.existed => "written",
            Outcome::Written => "created",
            Outcome::Edited => "edited",
        }
    }
}

/// Adds `AGENTS.md` to the project's `context_targets` (after the targets in effect, so none is
/// lost; other keys and formatting kept) and writes the block into it, under the lock.
pub fn add_agents_md(repo: &Repo) -> Result<AgentsMd> {
    let start = Instant::now();
    let lock = repo.lock()?;
    let root = &repo.layout.root;
    let agents = paths::resolve_dots(&root.join(AGENTS_MD));
    let mut registered = None;
    let current = &repo.settings.context_targets.value;
    let agents_spec = TargetSpec { path: AGENTS_MD.to_string(), ..TargetSpec::default() };
    if !current.iter().any(|t| paths::resolve_dots(&root.join(&t.path)) == agents) {
        let mut targets = current.clone();
        targets.push(agents_spec.clone());
        let path = repo.layout.project_settings();
        repo::guard(&repo.layout, &path)?;
        let list: Vec<String> = targets.iter().map(|t| t.to_json().to_string()).collect();
        settings::write_key(&path, "context_targets", &format!("[{}]", list.join(", ")))?;
        registered = Some(path);
    }
    let existed = root.join(AGENTS_MD).exists();
    let spec = current.iter().find(|t| paths::resolve_dots(&root.join(&t.path)) == agents).unwrap_or(&agents_spec);
    let report = compile_locked(repo, std::slice::from_ref(spec), start, Some(lock));
    let written = report.results.into_iter().next().context("no result for AGENTS.md")??;
    Ok(AgentsMd { written, existed, registered, diagnostics: report.block.warnings })
}

/// One target: `{"target":S, "path":ABS|null, "kind":"standalone"|"managed_block"|null,
/// "status":"written"|"unchanged"|"error", "bytes":N|null, "error":S|null}`.
#[derive(Serialize)]
pub struct TargetJson {
    target: String,
    path: Option<String>,
    kind: Option<&'static str>,
    status: &'static str,
    bytes: Option<usize>,
    error: Option<String>,
}

impl TargetJson {
    fn new(r: &Result<Written, TargetError>) -> TargetJson {
        match r {
            Ok(w) => TargetJson {
                target: w.target.raw.clone(),
                path: Some(abs(&w.target.path)),
                kind: Some(w.kind.as_str()),
                status: w.outcome.as_str(),
                bytes: Some(w.bytes),
                error: None,
            },
            Err(e) => TargetJson {
                target: e.target.clone(),
                path: None,
                kind: None,
                status: "error",
                bytes: None,
                error: Some(e.message.clone()),
            },
        }
    }
}

impl Serialize for CompileReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct CompileJson<'a> {
            bytes: usize,
            truncated: bool,
            warnings: &'a [String],
            targets: Vec<TargetJson>,
            generated: &'a [GeneratedJson],
            #[serde(skip_serializing_if = "Option::is_none")]
            check: Option<&'a [Drift]>,
        }
        CompileJson {
            bytes: self.block.bytes,
            truncated: self.block.truncated,
            warnings: &self.warnings,
            targets: self.targets_json(),
            generated: &self.generated,
            check: self.check.as_deref(),
        }
        .serialize(s)
    }
}

impl Report for CompileReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        if let Some(drift) = &self.check {
            for d in drift {
                writeln!(w, "{} {}", d.state, v.clean(&d.path))?;
                if let Some(m) = &d.message {
                    writeln!(w, "  {}", v.clean(m))?;
                }
                for line in &d.diff {
                    writeln!(w, "  {}", v.clean(line))?;
                }
            }
            if drift.is_empty() {
                writeln!(w, "Up to date: every target and agent file is as kb compile would write it.")?;
            } else {
                let n = drift.len();
                writeln!(w, "{} out of date; run kb compile.", super::plural(n, "file"))?;
            }
            return Ok(());
        }
        for t in self.results.iter().flatten() {
            // The size people ask about is kb's part: the block, and for a managed block the file too.
            let size = match t.kind {
                TargetKind::Standalone if t.outcome == Outcome::Edited => {
                    "standalone, edited by hand: left alone".into()
                }
                TargetKind::Standalone => format!("standalone, {} bytes", t.bytes),
                TargetKind::Managed => format!("managed block of {} bytes, file {} bytes", t.block_bytes, t.bytes),
            };
            let mark = if t.outcome == Outcome::Written { v.style.ok("✓") } else { " ".to_string() };
            writeln!(w, "{mark} {} {} ({size})", t.outcome.as_str(), v.rel(&t.target.path))?;
        }
        for g in self.generated.iter().filter(|g| g.status != "error") {
            let mark = if matches!(g.status, "written" | "deleted") { v.style.ok("✓") } else { " ".to_string() };
            let size = match g.status {
                "deleted" => "orphan".to_string(),
                "foreign" => "not kb's: left alone".to_string(),
                "edited" => "edited by hand: left alone".to_string(),
                _ => format!("generated, {} bytes", g.bytes),
            };
            writeln!(w, "{mark} {} {} ({size})", g.status, v.clean(&g.path))?;
        }
        if self.results.is_empty() && self.generated.is_empty() {
            writeln!(w, "No compile targets: context_targets is empty.")?;
        }
        Ok(())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.block.warnings
    }

    fn errors(&self) -> Vec<String> {
        let mut out: Vec<String> =
            self.results.iter().filter_map(|r| r.as_ref().err()).map(|e| e.to_string()).collect();
        out.extend(self.generated.iter().filter_map(|g| g.error.clone()));
        if let Some(n) = self.generated.iter().filter(|g| g.status == "foreign").count().checked_sub(1) {
            out.push(format!("{} not kb's left alone (see the warnings)", super::plural(n + 1, "agent file")));
        }
        let edited = self.results.iter().flatten().filter(|t| t.outcome == Outcome::Edited).count()
            + self.generated.iter().filter(|g| g.status == "edited").count();
        if edited > 0 {
            out.push(format!(
                "{} edited by hand left alone (see the warnings: carry each change into its source)",
                super::plural(edited, "generated file")
            ));
        }
        // The targets were written without them; the exit status is what makes CI notice.
        match self.block.conflicts.len() {
            0 => {}
            n => out.push(format!(
                "{n} source {} left out of the compiled context for git conflict markers; resolve the merge \
                 (`kb check` lists every marker line)",
                if n == 1 { "item was" } else { "items were" }
            )),
        }
        // Written without the stale memories and records, with the rest: CI notices.
        match self.block.stale.len() {
            0 => {}
            n => out.push(format!(
                "{} in the compiled context: a reference to a path, a line or a command no longer holds \
                 (see the warnings; `kb audit` checks every item)",
                super::plural(n, "stale item")
            )),
        }
        out
    }

    fn succeeded(&self) -> bool {
        if let Some(drift) = &self.check {
            return drift.is_empty() && self.block.conflicts.is_empty() && self.block.stale.is_empty();
        }
        self.counts().2 == 0 && self.block.conflicts.is_empty() && self.block.stale.is_empty()
    }
}
