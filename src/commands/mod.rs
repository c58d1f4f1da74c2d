//! Commands: thin glue from the command line to the library. Each command module parses nothing
//! and prints its result; this module builds the context, dispatches, and maps errors to exit codes.

mod check;
mod compile;
mod config;
mod context;
mod convert;
mod forget;
mod init;
mod mcp;
mod protect;
mod read;
pub(crate) mod records;
pub(crate) mod save;
mod vote;
mod watch;

use crate::cli::{Cli, Command};
use crate::memories::index::Index;
use crate::memories::store::Store;
use crate::output::Style;
use crate::paths::Layout;
use crate::settings::Settings;
use anyhow::{Context as _, Result};
use chrono::{DateTime, Utc};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Everything a command needs, resolved once.
pub struct Ctx {
    pub layout: Layout,
    pub json: bool,
    pub style: Style,
    /// The clock: now, or `KB_NOW` (RFC 3339) when tests pin it.
    pub now: DateTime<Utc>,
}

impl Ctx {
    /// Loads the settings; an invalid value is an error naming where it came from.
    pub fn settings(&self) -> Result<Settings> {
        Ok(Settings::load(&self.layout, &env)?)
    }

    /// Returns the store with its settings.
    pub fn store(&self) -> Result<Store> {
        Ok(Store { layout: self.layout.clone(), settings: self.settings()? })
    }

    /// Returns `path` relative to the root when it is inside it, for messages.
    pub fn rel<'a>(&self, path: &'a Path) -> std::borrow::Cow<'a, str> {
        match path.strip_prefix(&self.layout.root) {
            Ok(r) if !r.as_os_str().is_empty() => r.to_string_lossy(),
            _ => path.to_string_lossy(),
        }
    }

    /// Warns on stderr about each memory file a read command skipped.
    pub fn warn_skipped(&self, index: &Index) {
        for p in index.problems() {
            let line = p.line.map_or(String::new(), |l| format!(":{l}"));
            let text = format!("skipped {}{line}: {}", self.rel(&p.path), p.message);
            self.style.warn(&crate::output::sanitize(&text));
        }
    }
}

/// Reads an environment variable; an empty value counts as unset where settings are concerned.
pub fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Runs kb and returns its exit status: 0 success, 1 error, 2 usage (from clap).
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    let style = Style::detect(env("NO_COLOR").is_some_and(|v| !v.is_empty()));
    match run(cli, style) {
        Ok(code) => code,
        Err(e) => {
            style.error(&error_message(&e));
            ExitCode::FAILURE
        }
    }
}

/// Returns the message kb prints after `error:`: the error and its causes, joined by `: `.
pub fn error_message(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        // thiserror variants often print their source already (`{path}: {source}`).
        let cause = cause.to_string();
        if !msg.ends_with(&cause) {
            msg.push_str(&format!(": {cause}"));
        }
    }
    msg
}

fn run(cli: Cli, style: Style) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let layout = Layout::resolve(cli.root.as_deref(), &env, &cwd);
    if (cli.root.is_some() || env("KB_ROOT").is_some_and(|v| !v.is_empty())) && !layout.root.is_dir() {
        let from = if cli.root.is_some() { "--root" } else { "KB_ROOT" };
        anyhow::bail!("{from} {}: no such folder", layout.root.display());
    }
    let now = match env("KB_NOW").filter(|v| !v.is_empty()) {
        Some(v) => {
            crate::format::time::parse(&v).map_err(|e| anyhow::anyhow!("invalid KB_NOW: {e}"))?.with_timezone(&Utc)
        }
        None => crate::format::time::now(),
    };
    let ctx = Ctx { layout, json: cli.json, style, now };
    dispatch(&ctx, cli.command)
}

/// Runs one command in a ready context (`kb mcp` runs the read commands this way, inside
/// `output::capture`).
pub fn dispatch(ctx: &Ctx, command: Command) -> Result<ExitCode> {
    match command {
        Command::Init(a) => init::run(ctx, a),
        Command::Save(a) => save::run(ctx, a),
        Command::Recall(a) => read::recall(ctx, a),
        Command::List(a) => read::list(ctx, a.store),
        Command::Show(a) => read::show(ctx, &a.id, a.store),
        Command::Forget(a) => forget::run(ctx, &a.id, a.store),
        Command::Protect(a) => protect::run(ctx, &a.id, true),
        Command::Unprotect(a) => protect::run(ctx, &a.id, false),
        Command::Check => check::run(ctx),
        Command::Config => config::run(ctx),
        Command::Vote(a) => vote::run(ctx, a),
        Command::Export(a) => convert::export(ctx, a),
        Command::Import(a) => convert::import(ctx, a),
        Command::Context(a) => context::run(ctx, a),
        Command::Compile => compile::run(ctx),
        Command::Watch(a) => watch::run(ctx, a),
        Command::Mcp => mcp::run(ctx),
    }
}

/// Returns the `action` of save JSON (SPEC §5).
pub fn save_action(consolidated: bool, dry_run: bool) -> &'static str {
    match (consolidated, dry_run) {
        (true, false) => "consolidated",
        (true, true) => "would_consolidate",
        (false, false) => "saved",
        (false, true) => "would_save",
    }
}

/// Parses a memory id the way people type it (` 7 `, `+7`, `007`).
pub fn parse_id(raw: &str) -> Result<u64> {
    let t = raw.trim();
    t.strip_prefix('+')
        .unwrap_or(t)
        .parse::<u64>()
        .map_err(|_| anyhow::anyhow!("invalid memory id '{raw}': expected a non-negative integer"))
}

/// Returns the absolute form of a path for JSON output.
pub fn abs(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
