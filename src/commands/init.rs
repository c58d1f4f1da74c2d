//! `kb init`: create the knowledge folder from the embedded templates. Never overwrites.

use super::Ctx;
use crate::cli::InitArgs;
use crate::format::time::py_isoformat;
use crate::output;
use anyhow::{Context as _, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The project context template, embedded in the binary.
const CONTEXT_TEMPLATE: &str = include_str!("../../templates/context.md");

/// The line kb adds to the root `.gitignore`.
const CACHE_IGNORE: &str = ".co-cli/cache/";

#[derive(Serialize)]
struct InitJson {
    root: String,
    created: Vec<String>,
    existing: Vec<String>,
    /// With `--agents-md`: `{"path":ABS, "status":"created"|"written"|"unchanged", "settings":ABS|null}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    agents_md: Option<AgentsMdJson>,
}

#[derive(Serialize)]
struct AgentsMdJson {
    path: String,
    status: &'static str,
    settings: Option<String>,
}

pub fn run(ctx: &Ctx, args: InitArgs) -> Result<ExitCode> {
    let l = &ctx.layout;
    let mut created: Vec<PathBuf> = Vec::new();
    let mut existing: Vec<PathBuf> = Vec::new();

    let memories = l.memories();
    for path in [&memories, &l.project_context(), &l.root.join(".gitignore")] {
        crate::paths::check_inside(&l.root, path)?;
    }
    if memories.is_dir() {
        existing.push(memories.clone());
    } else {
        std::fs::create_dir_all(&memories).with_context(|| format!("cannot create {}", memories.display()))?;
        created.push(memories);
    }

    let context = l.project_context();
    if context.exists() {
        existing.push(context);
    } else {
        let text = CONTEXT_TEMPLATE.replace("{{updated}}", &py_isoformat(ctx.now));
        create_new(&context, &text)?;
        created.push(context);
    }

    // The cache folder (derived state; it ignores itself in git) lets read commands keep an index.
    l.ensure_cache().with_context(|| format!("cannot create {}", l.cache().display()))?;

    let gitignore = l.root.join(".gitignore");
    if ignore_cache(&gitignore)? {
        created.push(gitignore);
    } else {
        existing.push(gitignore);
    }

    let agents = if args.agents_md { Some(super::compile::add_agents_md(ctx)?) } else { None };
    if ctx.json {
        let show = |v: &[PathBuf]| v.iter().map(|p| super::abs(p).display().to_string()).collect();
        output::print_json(&InitJson {
            root: super::abs(&l.root).display().to_string(),
            created: show(&created),
            existing: show(&existing),
            agents_md: agents.as_ref().map(|a| AgentsMdJson {
                path: super::abs(&a.written.target.path).display().to_string(),
                status: agents_status(a),
                settings: a.registered.as_ref().map(|p| super::abs(p).display().to_string()),
            }),
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = String::new();
    for p in &created {
        let what = if p.ends_with(".gitignore") { "Updated" } else { "Created" };
        text.push_str(&format!("{} {what} {}\n", ctx.style.ok("✓"), ctx.rel(p)));
    }
    let agents_changed = agents.as_ref().is_some_and(|a| agents_status(a) != "unchanged" || a.registered.is_some());
    if created.is_empty() && !agents_changed {
        text.push_str(&format!("Already initialized in {}: nothing to do.\n", l.root.display()));
    }
    if let Some(a) = &agents {
        let name = ctx.rel(&a.written.target.path);
        match agents_status(a) {
            "created" => text.push_str(&format!("{} Created {name} with the context block\n", ctx.style.ok("✓"))),
            "written" => text.push_str(&format!("{} Added the context block to {name}\n", ctx.style.ok("✓"))),
            _ => text.push_str(&format!("{name} already has the current context block\n")),
        }
        if let Some(p) = &a.registered {
            text.push_str(&format!("{} Registered {name} in context_targets of {}\n", ctx.style.ok("✓"), ctx.rel(p)));
        }
    }
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn agents_status(a: &super::compile::AgentsMd) -> &'static str {
    match a.written.outcome {
        crate::context::targets::Outcome::Unchanged => "unchanged",
        crate::context::targets::Outcome::Written if a.existed => "written",
        crate::context::targets::Outcome::Written => "created",
    }
}

/// Writes a file that must not exist yet (never overwrites, even in a race).
fn create_new(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Adds `.co-cli/cache/` to the `.gitignore`; returns whether it changed the file.
fn ignore_cache(gitignore: &Path) -> Result<bool> {
    let current = match std::fs::read_to_string(gitignore) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", gitignore.display())),
    };
    let covered = current.lines().map(str::trim).any(|l| {
        matches!(
            l,
            ".co-cli/cache/"
                | ".co-cli/cache"
                | "/.co-cli/cache/"
                | "/.co-cli/cache"
                | ".co-cli/"
                | ".co-cli"
                | "/.co-cli/"
        )
    });
    if covered {
        return Ok(false);
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(CACHE_IGNORE);
    text.push('\n');
    crate::fsio::write_atomic(gitignore, text.as_bytes())
        .with_context(|| format!("cannot write {}", gitignore.display()))?;
    Ok(true)
}
