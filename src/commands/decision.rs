//! `kb decision ...`: the text from the arguments or stdin (`-`), then the decision operations
//! (`ops::decision`).

use super::Ctx;
use crate::cli::{DecisionAction, DecisionArgs};
use crate::ops::decision;
use crate::ops::decision::Change;
use anyhow::Result;
use std::process::ExitCode;

pub fn run(ctx: &Ctx, args: DecisionArgs) -> Result<ExitCode> {
    let repo = ctx.repo()?;
    match args.action {
        DecisionAction::Add { text, kind, tag, redact } => {
            ctx.emit(&decision::add(&repo, read_text(&text)?, kind, tag, redact)?)
        }
        DecisionAction::List { all, kind } => ctx.emit(&decision::list(&repo, all, kind)?),
        DecisionAction::Show { id } => ctx.emit(&decision::show(&repo, &id)?),
        DecisionAction::Supersede { id, text, kind, tag, redact } => {
            ctx.emit(&decision::supersede(&repo, &id, read_text(&text)?, kind, tag, redact)?)
        }
        DecisionAction::Archive { id } => ctx.emit(&decision::change(&repo, &id, Change::Archive)?),
        DecisionAction::Accept { id } => ctx.emit(&decision::change(&repo, &id, Change::Accept)?),
        DecisionAction::Reject { id } => ctx.emit(&decision::change(&repo, &id, Change::Reject)?),
    }
}

/// Returns whether the decision command writes (everything but list and show).
pub fn writes(args: &DecisionArgs) -> bool {
    !matches!(args.action, DecisionAction::List { .. } | DecisionAction::Show { .. })
}

/// Returns the decision text: the arguments joined by spaces, or stdin for `-`.
fn read_text(words: &[String]) -> Result<String> {
    if !matches!(words, [only] if only == "-") {
        return Ok(words.join(" "));
    }
    super::read_stdin()
}
