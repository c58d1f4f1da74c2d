//! `kb compile`: write the context block into every target in `context_targets`, under the
//! repository lock. Also the one compile step that `kb watch` and `kb init --agents-md` reuse.

use super::Ctx;
use crate::context::targets::{self, Outcome, TargetError, Written};
use crate::context::{self, Block};
use crate::fsio;
use crate::output;
use anyhow::{Context as _, Result};
use serde::Serialize;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// What one compile did.
pub struct Report {
    pub block: Block,
    pub results: Vec<Result<Written, TargetError>>,
    /// Time taken, lock wait included.
    pub elapsed: Duration,
}

impl Report {
    /// Returns how many targets were written, left unchanged, and failed.
    pub fn counts(&self) -> (usize, usize, usize) {
        let ok = |o: Outcome| self.results.iter().filter(|r| r.as_ref().is_ok_and(|w| w.outcome == o)).count();
        let failed = self.results.iter().filter(|r| r.is_err()).count();
        (ok(Outcome::Written), ok(Outcome::Unchanged), failed)
    }
}

/// Compiles once: loads the settings (an invalid value is an error), takes the repository lock,
/// builds the block and writes `targets` (default: every `context_targets` entry).
pub fn compile_once(ctx: &Ctx) -> Result<Report> {
    let settings = ctx.settings()?;
    let start = Instant::now();
    let _lock = lock(ctx)?;
    Ok(compile_locked(ctx, &settings.context_targets.value, start))
}

fn lock(ctx: &Ctx) -> Result<fsio::Lock> {
    fsio::lock(&ctx.layout.lock(), fsio::LOCK_TIMEOUT)
        .with_context(|| format!("cannot lock {}", ctx.layout.lock().display()))
}

/// Builds the block and writes `targets`; the caller holds the lock.
fn compile_locked(ctx: &Ctx, targets: &[String], start: Instant) -> Report {
    let block = context::build(&ctx.layout, false);
    let results = targets::write_all(&ctx.layout, targets, block.text.as_deref());
    Report { block, results, elapsed: start.elapsed() }
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
    pub registered: Option<std::path::PathBuf>,
}

/// Adds `AGENTS.md` to the project's `context_targets` (after the targets in effect, so none is
/// lost; other keys and formatting kept) and writes the block into it, under the lock.
pub fn add_agents_md(ctx: &Ctx) -> Result<AgentsMd> {
    let settings = ctx.settings()?;
    let start = Instant::now();
    let _lock = lock(ctx)?;
    let root = &ctx.layout.root;
    let same = |t: &String| crate::paths::normalize(&root.join(t)) == crate::paths::normalize(&root.join(AGENTS_MD));
    let mut registered = None;
    if !settings.context_targets.value.iter().any(same) {
        let mut targets = settings.context_targets.value.clone();
        targets.push(AGENTS_MD.to_string());
        let path = ctx.layout.project_settings();
        register(&path, &targets)?;
        registered = Some(path);
    }
    let existed = root.join(AGENTS_MD).exists();
    let mut report = compile_locked(ctx, &[AGENTS_MD.to_string()], start);
    super::context::print_warnings(ctx, &report.block.warnings);
    let written = report.results.pop().context("no result for AGENTS.md")??;
    Ok(AgentsMd { written, existed, registered })
}

/// Sets `context_targets` in a settings file, creating it when missing, keeping everything else.
fn register(path: &std::path::Path, targets: &[String]) -> Result<()> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let list: Vec<String> = targets.iter().map(|t| serde_json::Value::from(t.as_str()).to_string()).collect();
    let new = crate::format::jsonedit::set_key(&text, "context_targets", &format!("[{}]", list.join(", ")))
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    fsio::write_atomic(path, new.as_bytes()).with_context(|| format!("cannot write {}", path.display()))
}

/// `kb compile --json`: `{"bytes":N, "truncated":bool, "warnings":[S...], "targets":[TARGET...]}`.
#[derive(Serialize)]
struct CompileJson {
    bytes: usize,
    truncated: bool,
    warnings: Vec<String>,
    targets: Vec<TargetJson>,
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

/// Returns the JSON form of each target's result.
pub fn targets_json(results: &[Result<Written, TargetError>]) -> Vec<TargetJson> {
    results
        .iter()
        .map(|r| match r {
            Ok(w) => TargetJson {
                target: w.target.raw.clone(),
                path: Some(super::abs(&w.target.path).display().to_string()),
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
        })
        .collect()
}

/// Prints each failed target as an error on stderr.
pub fn print_errors(ctx: &Ctx, results: &[Result<Written, TargetError>]) {
    for e in results.iter().filter_map(|r| r.as_ref().err()) {
        ctx.style.error(&e.to_string());
    }
}

pub fn run(ctx: &Ctx) -> Result<ExitCode> {
    let report = compile_once(ctx)?;
    let warnings = super::context::print_warnings(ctx, &report.block.warnings);
    print_errors(ctx, &report.results);
    if ctx.json {
        output::print_json(&CompileJson {
            bytes: report.block.bytes,
            truncated: report.block.truncated,
            warnings,
            targets: targets_json(&report.results),
        })?;
    } else {
        let mut text = String::new();
        for w in report.results.iter().flatten() {
            let kind = match w.kind {
                targets::Kind::Standalone => "standalone",
                targets::Kind::Managed => "managed block",
            };
            let mark = if w.outcome == Outcome::Written { ctx.style.ok("✓") } else { " ".to_string() };
            text.push_str(&format!(
                "{mark} {} {} ({kind}, {} bytes)\n",
                w.outcome.as_str(),
                ctx.rel(&w.target.path),
                w.bytes
            ));
        }
        if report.results.is_empty() {
            text.push_str("No compile targets: context_targets is empty.\n");
        }
        output::print(&text)?;
    }
    let (_, _, failed) = report.counts();
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
