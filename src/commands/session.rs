//! `kb session start | update | end | show`: the text from the arguments or stdin ("-"), then
//! the session operations (`ops::session`).

use super::Ctx;
use crate::cli::{SessionAction, SessionArgs};
use crate::ops;
use anyhow::Result;
use std::process::ExitCode;

pub fn run(ctx: &Ctx, args: SessionArgs) -> Result<ExitCode> {
    match args.action {
        SessionAction::Start { focus, redact } => {
            ctx.emit(&ops::session::start(&ctx.repo()?, &focus.join(" "), redact)?)
        }
        SessionAction::Update { text, append, redact } => {
            let text = read_text(&text.join(" "))?;
            ctx.emit(&ops::session::update(&ctx.repo()?, &text, append, redact)?)
        }
        SessionAction::End { summary, redact } => {
            let summary = summary.as_deref().map(read_text).transpose()?;
            ctx.emit(&ops::session::end(&ctx.repo()?, summary.as_deref(), redact)?)
        }
        SessionAction::Show => ctx.emit(&ops::session::show(&ctx.layout)),
        SessionAction::Log { touching } => {
            let touching = match touching {
                Some(p) => match ops::instructions::for_paths(&ctx.layout, std::slice::from_ref(&p)) {
                    Ok(mut v) => v.pop(),
                    Err(msg) => anyhow::bail!("--touching {msg}: give a path inside the repository"),
                },
                None => None,
            };
            ctx.emit(&ops::session::log(&ctx.layout, touching.as_deref()))
        }
    }
}

/// Returns `text`, or stdin when it is "-".
fn read_text(text: &str) -> Result<String> {
    if text != "-" {
        return Ok(text.to_string());
    }
    super::read_stdin()
}
