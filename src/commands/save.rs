//! `kb save`: the text from the arguments or stdin, the flags of each store checked, then the
//! save operation (`ops::save`).

use super::Ctx;
use crate::cli::{SaveArgs, Store};
use crate::ops;
use crate::ops::save::{RecordRequest, SaveRequest};
use anyhow::{Result, bail};
use std::io::IsTerminal;
use std::process::ExitCode;

pub fn run(ctx: &Ctx, args: SaveArgs) -> Result<ExitCode> {
    if let Some(code) = misplaced_flags(ctx, &args) {
        return Ok(code);
    }
    let content = read_text(&args.text)?;
    let repo = ctx.repo()?;
    if args.store == Some(Store::Copilot) {
        let req = RecordRequest {
            subject: args.subject.unwrap_or_default(),
            fact: content,
            citations: args.citation,
            reason: args.reason.unwrap_or_default(),
            category: args.category,
            dry_run: args.dry_run,
            redact: args.redact,
            no_dedup: args.no_dedup,
        };
        return ctx.emit(&ops::save::save_record(&repo, req)?);
    }
    // `--tags a, b` is a list typed by a person: trim around the commas. `-t` values are verbatim.
    let tags: Vec<String> =
        args.tag.into_iter().chain(args.tags.iter().map(|t| t.trim().to_string()).filter(|t| !t.is_empty())).collect();
    let req = SaveRequest {
        content,
        tags,
        dry_run: args.dry_run,
        redact: args.redact,
        no_dedup: args.no_dedup,
        memory_type: args.memory_type,
        importance: args.importance,
        agent: args.agent,
    };
    ctx.emit(&ops::save::save(&repo, req)?)
}

/// Reports a flag that belongs to the other store as a usage error (exit 2), as clap would.
fn misplaced_flags(ctx: &Ctx, args: &SaveArgs) -> Option<ExitCode> {
    let copilot = args.store == Some(Store::Copilot);
    let layered = args.memory_type.is_some() || args.importance.is_some() || args.agent.is_some();
    let wrong = if copilot {
        (!args.tag.is_empty() || !args.tags.is_empty())
            .then_some("--tag/--tags apply to the markdown store; a Copilot record has --subject")
            .or(layered
                .then_some("--type, --importance and --agent apply to the markdown store; a Copilot record has none"))
    } else {
        (args.subject.is_some() || !args.citation.is_empty() || args.reason.is_some() || args.category.is_some())
            .then_some("--subject, --citation, --reason and --category need --store copilot")
    };
    Some(super::usage_error(ctx, "save", clap::error::ErrorKind::ArgumentConflict, wrong?))
}

/// Returns the memory text: the arguments joined by spaces, or stdin for `-` or piped input.
pub(super) fn read_text(words: &[String]) -> Result<String> {
    let from_stdin = match words {
        [only] if only == "-" => true,
        [] if !std::io::stdin().is_terminal() => true,
        [] => bail!("nothing to save: give the text as an argument, or \"-\" to read it from stdin"),
        _ => false,
    };
    if !from_stdin {
        return Ok(words.join(" "));
    }
    super::read_stdin()
}
