//! `kb save`: store a memory with dedup, consolidation and decay.

use super::{Ctx, records};
use crate::cli::{SaveArgs, StoreKind};
use crate::memories::store::{SaveOutcome, SaveRequest};
use crate::output;
use anyhow::{Context as _, Result, bail};
use serde::Serialize;
use std::io::{IsTerminal, Read};
use std::process::ExitCode;

/// `save` JSON (SPEC §5).
#[derive(Serialize)]
pub struct SaveJson {
    action: &'static str,
    memory_id: u64,
    path: String,
    similarity: Option<f64>,
    decayed: usize,
    decay_strategy: Option<&'static str>,
    redacted: Vec<&'static str>,
    store: &'static str,
}

pub fn run(ctx: &Ctx, args: SaveArgs) -> Result<ExitCode> {
    if let Some(code) = misplaced_flags(&args) {
        return Ok(code);
    }
    let content = read_text(&args.text)?;
    if args.store == Some(StoreKind::Copilot) {
        return records::save(ctx, args, content);
    }
    // `--tags a, b` is a list typed by a person: trim around the commas. `-t` values are verbatim.
    let tags: Vec<String> =
        args.tag.into_iter().chain(args.tags.iter().map(|t| t.trim().to_string()).filter(|t| !t.is_empty())).collect();
    let store = ctx.store()?;
    let req = SaveRequest { content, tags, dry_run: args.dry_run, redact: args.redact };
    let out = store.save(req, ctx.now)?;
    for w in &out.warnings {
        ctx.style.warn(w);
    }
    if !out.redacted.is_empty() {
        ctx.style.warn(&format!("redacted secrets matching: {}", out.redacted.join(", ")));
    }
    let (text, json) = report(ctx, out);
    if ctx.json {
        output::print_json(&json)?;
    } else {
        output::print(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Returns what a save prints: co-cli's display text, and SPEC's JSON. `kb mcp` returns both.
pub fn report(ctx: &Ctx, out: SaveOutcome) -> (String, SaveJson) {
    let file_name = out.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mark = ctx.style.ok("✓");
    let location = super::abs(&out.path).display().to_string();
    let mut text = match (out.consolidated, out.dry_run) {
        (true, false) => {
            format!("{mark} Updated memory {} (consolidated duplicate)\nLocation: {location}", out.memory_id)
        }
        (true, true) => format!(
            "Would update memory {} (consolidated duplicate, similarity {:.1})\nLocation: {location}",
            out.memory_id,
            out.similarity.unwrap_or_default()
        ),
        (false, false) => format!("{mark} Saved memory {}: {file_name}\nLocation: {location}", out.memory_id),
        (false, true) => format!("Would save memory {}: {file_name}\nLocation: {location}", out.memory_id),
    };
    if let Some(strategy) = out.decay_strategy {
        let verb = if out.dry_run { "Would decay" } else { "Decayed" };
        text.push_str(&format!("\n♻️ {verb} {} old memories ({})", out.decayed, strategy.as_str()));
    }
    let json = SaveJson {
        action: super::save_action(out.consolidated, out.dry_run),
        memory_id: out.memory_id,
        path: location,
        similarity: out.similarity,
        decayed: out.decayed,
        decay_strategy: out.decay_strategy.map(|s| s.as_str()),
        redacted: out.redacted,
        store: "md",
    };
    (text, json)
}

/// Reports a flag that belongs to the other store as a usage error (exit 2), as clap would.
fn misplaced_flags(args: &SaveArgs) -> Option<ExitCode> {
    let copilot = args.store == Some(StoreKind::Copilot);
    let wrong = if copilot {
        (!args.tag.is_empty() || !args.tags.is_empty())
            .then_some("--tag/--tags apply to the markdown store; a Copilot record has --subject")
    } else {
        (args.subject.is_some() || !args.citation.is_empty() || args.reason.is_some() || args.category.is_some())
            .then_some("--subject, --citation, --reason and --category need --store copilot")
    };
    let msg = wrong?;
    let mut root = <crate::cli::Cli as clap::CommandFactory>::command();
    root.build();
    let err = match root.find_subcommand_mut("save") {
        Some(save) => save.error(clap::error::ErrorKind::ArgumentConflict, msg),
        None => root.error(clap::error::ErrorKind::ArgumentConflict, msg),
    };
    let _ = err.print();
    Some(ExitCode::from(2))
}

/// Returns the memory text: the arguments joined by spaces, or stdin for `-` or piped input.
fn read_text(words: &[String]) -> Result<String> {
    let from_stdin = match words {
        [only] if only == "-" => true,
        [] if !std::io::stdin().is_terminal() => true,
        [] => bail!("nothing to save: give the text as an argument, or \"-\" to read it from stdin"),
        _ => false,
    };
    if !from_stdin {
        return Ok(words.join(" "));
    }
    let mut buf = Vec::new();
    std::io::stdin().read_to_end(&mut buf).context("cannot read stdin")?;
    String::from_utf8(buf)
        .map_err(|e| anyhow::anyhow!("stdin is not valid UTF-8 (at byte {})", e.utf8_error().valid_up_to()))
}
