//! `kb context`: print the always-loaded block, with its warnings on stderr.

use super::Ctx;
use crate::cli::ContextArgs;
use crate::context::{self, Block, Warning};
use crate::output;
use anyhow::Result;
use serde::Serialize;
use std::process::ExitCode;

/// `kb context --json`:
/// `{"text":S|null, "bytes":N, "truncated":bool, "sections":[SECTION...], "warnings":[S...]}`.
#[derive(Serialize)]
struct ContextJson {
    text: Option<String>,
    bytes: usize,
    truncated: bool,
    sections: Vec<SectionJson>,
    warnings: Vec<String>,
}

/// One section: `{"title", "path":ABS, "bytes", "budget":N|null, "over_budget", "cut_bytes"}`;
/// `bytes` is the body as read, `cut_bytes` what truncation removed from it.
#[derive(Serialize)]
struct SectionJson {
    title: &'static str,
    path: String,
    bytes: usize,
    budget: Option<usize>,
    over_budget: bool,
    cut_bytes: usize,
}

pub fn run(ctx: &Ctx, args: ContextArgs) -> Result<ExitCode> {
    let block = context::build(&ctx.layout, args.wrap);
    let warnings = print_warnings(ctx, &block.warnings);
    if ctx.json {
        output::print_json(&to_json(block, warnings))?;
    } else if let Some(text) = &block.text {
        output::print(&ctx.style.clean(text))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn to_json(block: Block, warnings: Vec<String>) -> ContextJson {
    ContextJson {
        bytes: block.bytes,
        truncated: block.truncated,
        sections: block
            .sections
            .iter()
            .map(|s| SectionJson {
                title: s.kind.title(),
                path: super::abs(&s.path).display().to_string(),
                bytes: s.bytes,
                budget: s.budget,
                over_budget: s.over_budget,
                cut_bytes: s.cut_bytes,
            })
            .collect(),
        text: block.text,
        warnings,
    }
}

/// Prints each warning on stderr, paths relative to the root; returns them as printed.
pub fn print_warnings(ctx: &Ctx, warnings: &[Warning]) -> Vec<String> {
    warnings
        .iter()
        .map(|w| {
            let text = w.render(|p| ctx.rel(p).into_owned());
            if text.starts_with("WARNING: ") || text.starts_with("ERROR: ") {
                // The size messages carry co-cli's own labels.
                eprintln!("{}", crate::output::sanitize(&text));
            } else {
                ctx.style.warn(&ctx.style.clean(&text));
            }
            text
        })
        .collect()
}
