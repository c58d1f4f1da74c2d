//! `kb vote ID up|down --reason R`: count a vote in a Copilot record.

use super::{Ctx, records};
use crate::cli::{VoteArgs, VoteDirection};
use crate::copilot::Direction;
use crate::copilot::record::Votes;
use crate::output;
use anyhow::Result;
use serde::Serialize;
use std::process::ExitCode;

/// `vote` JSON.
#[derive(Serialize)]
struct VoteJson {
    id: String,
    direction: &'static str,
    votes: Votes,
    path: String,
    line: usize,
    store: &'static str,
}

pub fn run(ctx: &Ctx, args: VoteArgs) -> Result<ExitCode> {
    let direction = match args.direction {
        VoteDirection::Up => Direction::Up,
        VoteDirection::Down => Direction::Down,
    };
    let id = args.id.trim();
    let out = match records::store(ctx)?.vote(id, direction, &args.reason, ctx.now) {
        Err(crate::memories::store::StoreError::NotFound(_))
            if super::parse_id(id).is_ok() && markdown_has(ctx, id) =>
        {
            anyhow::bail!(
                "memory {id} is a markdown memory; votes apply to Copilot records (see `kb list --store copilot`)"
            )
        }
        other => other?,
    };
    if ctx.json {
        output::print_json(&VoteJson {
            id: out.id,
            direction: direction.as_str(),
            votes: out.votes,
            path: super::abs(&out.path).display().to_string(),
            line: out.line,
            store: records::STORE,
        })?;
    } else {
        output::print(&format!(
            "{} Voted {} on Copilot memory {}: {} up, {} down",
            ctx.style.ok("✓"),
            direction.as_str(),
            ctx.style.clean(&out.id),
            out.votes.up,
            out.votes.down
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Returns whether a markdown memory has this integer id, to explain a vote that found no record.
fn markdown_has(ctx: &Ctx, id: &str) -> bool {
    let (Ok(n), Ok(store)) = (super::parse_id(id), ctx.store()) else { return false };
    store.scan().is_ok_and(|index| !index.by_id(n).is_empty())
}
