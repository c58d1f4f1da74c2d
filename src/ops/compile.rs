//! `kb compile` (and the compile step of `kb watch` and `kb init --agents-md`): write the
//! always-loaded block into every target in `context_targets`, under the repository lock.

use super::context::Outside;
use super::{Report, View, abs};
use crate::context::targets::{self, Outcome, TargetError, TargetKind, Written};
use crate::context::{self, Block, BlockRequest};
use crate::error::Diagnostic;
use crate::paths;
use crate::repo::{self, Repo};
use crate::settings::{self, TargetSpec};
use anyhow::{Context as _, Result};
use serde::Serialize;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What one compile did. JSON: `{"bytes":N, "truncated":bool, "warnings":[S...],
/// "targets":[TARGET...]}`.
pub struct CompileReport {
    pub block: Block,
    pub results: Vec<Result<Written, TargetError>>,
    /// Time taken, lock wait included.
    pub elapsed: Duration,
    /// The block's warnings as shown to people, paths relative to the root.
    warnings: Vec<String>,
}

impl CompileReport {
    /// Returns how many targets were written, left unchanged, and failed.
    pub fn counts(&self) -> (usize, usize, usize) {
        let ok = |o: Outcome| self.results.iter().filter(|r| r.as_ref().is_ok_and(|w| w.outcome == o)).count();
        let failed = self.results.iter().filter(|r| r.is_err()).count();
        (ok(Outcome::Written), ok(Outcome::Unchanged), failed)
    }

    /// Returns the JSON form of each target's result.
    pub fn targets_json(&self) -> Vec<TargetJson> {
        self.results.iter().map(TargetJson::new).collect()
    }
}

/// Compiles once: takes the repository lock, builds each target's block and writes every
/// `context_targets` entry.
pub fn compile(repo: &Repo) -> Result<CompileReport> {
    let start = Instant::now();
    let _lock = repo.lock()?;
    Ok(compile_locked(repo, &repo.settings.context_targets.value, start))
}

/// Returns the block request of a target, checked ([`super::context::check`]). Settings
/// checked the target when they were read; a `for` path outside the root is left out.
pub fn request_of(repo: &Repo, spec: &TargetSpec) -> BlockRequest {
    // The settings checked the agent and the budget when they were read, so only a `for` path
    // can be wrong here, and one outside the root is left out.
    super::context::check(spec.block.clone(), &repo.layout.root, Outside::Skip).unwrap_or_default()
}

/// Builds each target's block (once per distinct request) and writes `targets`; the caller holds
/// the lock. The report's block is the first target's (the default block when there is none).
fn compile_locked(repo: &Repo, targets: &[TargetSpec], start: Instant) -> CompileReport {
    let requests: Vec<BlockRequest> = targets.iter().map(|t| request_of(repo, t)).collect();
    // One reading of the repository for every target's block.
    let knowledge = context::Knowledge::new(repo);
    let mut built: Vec<(BlockRequest, Block)> = Vec::new();
    for req in requests.iter().chain(requests.is_empty().then(|| request_of(repo, &TargetSpec::default())).as_ref()) {
        if !built.iter().any(|(r, _)| r == req) {
            built.push((req.clone(), context::build_from(&knowledge, req)));
        }
    }
    let block_of = |req: &BlockRequest| built.iter().find(|(r, _)| r == req).map(|(_, b)| b);
    let writes: Vec<(&str, Option<&str>)> = targets
        .iter()
        .zip(&requests)
        .map(|(t, req)| (t.path.as_str(), block_of(req).and_then(|b| b.text.as_deref())))
        .collect();
    let (results, notes) = targets::write_all(&repo.layout, &writes);
    // Every block's warnings, each once.
    let mut diagnostics: Vec<Diagnostic> = notes.into_iter().map(|n| Diagnostic::warning(None, n)).collect();
    let mut conflicts: Vec<Diagnostic> = Vec::new();
    for (_, b) in &built {
        for w in &b.warnings {
            if !diagnostics.contains(w) {
                diagnostics.push(w.clone());
            }
        }
        for c in &b.conflicts {
            if !conflicts.contains(c) {
                conflicts.push(c.clone());
            }
        }
    }
    let mut block = built.swap_remove(0).1;
    block.warnings = diagnostics;
    block.conflicts = conflicts;
    let warnings = block.warnings.iter().map(|w| w.render(|p| super::rel(&repo.layout.root, p).into_owned())).collect();
    CompileReport { block, results, elapsed: start.elapsed(), warnings }
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
        }
    }
}

/// Adds `AGENTS.md` to the project's `context_targets` (after the targets in effect, so none is
/// lost; other keys and formatting kept) and writes the block into it, under the lock.
pub fn add_agents_md(repo: &Repo) -> Result<AgentsMd> {
    let start = Instant::now();
    let _lock = repo.lock()?;
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
    let mut report = compile_locked(repo, std::slice::from_ref(spec), start);
    let written = report.results.pop().context("no result for AGENTS.md")??;
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
        }
        CompileJson {
            bytes: self.block.bytes,
            truncated: self.block.truncated,
            warnings: &self.warnings,
            targets: self.targets_json(),
        }
        .serialize(s)
    }
}

impl Report for CompileReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        for t in self.results.iter().flatten() {
            // The size people ask about is kb's part: the block, and for a managed block the file too.
            let size = match t.kind {
                TargetKind::Standalone => format!("standalone, {} bytes", t.bytes),
                TargetKind::Managed => format!("managed block of {} bytes, file {} bytes", t.block_bytes, t.bytes),
            };
            let mark = if t.outcome == Outcome::Written { v.style.ok("✓") } else { " ".to_string() };
            writeln!(w, "{mark} {} {} ({size})", t.outcome.as_str(), v.rel(&t.target.path))?;
        }
        if self.results.is_empty() {
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
        // The targets were written without them; the exit status is what makes CI notice.
        match self.block.conflicts.len() {
            0 => {}
            n => out.push(format!(
                "{n} source {} left out of the compiled context for git conflict markers; resolve the merge \
                 (`kb check` lists every marker line)",
                if n == 1 { "item was" } else { "items were" }
            )),
        }
        out
    }

    fn succeeded(&self) -> bool {
        self.counts().2 == 0 && self.block.conflicts.is_empty()
    }
}
