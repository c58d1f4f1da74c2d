//! Voting on a Copilot record: `votes: {"up":N,"down":N}` in the record (SPEC §9).

use super::read::COPILOT;
use super::{Report, View, abs};
use crate::copilot::Direction;
use crate::copilot::record::Votes;
use crate::error::KbError;
use crate::repo::{Repo, parse_id};
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};

/// JSON: `{"id":S, "direction":"up"|"down", "votes":{"up":N,"down":N}, "path":ABS, "line":N,
/// "store":"copilot"}`.
#[derive(Serialize)]
pub struct VoteReport {
    id: String,
    direction: &'static str,
    votes: Votes,
    path: String,
    line: usize,
    store: &'static str,
}

/// Counts a vote on the record `raw_id`; an id that names a markdown memory gets an error that
/// says votes are for records.
pub fn vote(repo: &Repo, raw_id: &str, direction: Direction, reason: &str) -> Result<VoteReport> {
    let id = raw_id.trim();
    let out = match repo.records().vote(id, direction, reason) {
        Err(KbError::NotFound(_)) if markdown_has(repo, id) => anyhow::bail!(
            "memory {id} is a markdown memory; votes apply to Copilot records (see `kb list --store copilot`)"
        ),
        other => other?,
    };
    Ok(VoteReport {
        id: out.id,
        direction: direction.as_str(),
        votes: out.votes,
        path: abs(&out.path),
        line: out.line,
        store: COPILOT,
    })
}

/// Returns whether a markdown memory has this integer id.
fn markdown_has(repo: &Repo, id: &str) -> bool {
    let Ok(n) = parse_id(id) else { return false };
    repo.memories().scan().is_ok_and(|index| !index.by_id(n).is_empty())
}

impl Report for VoteReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        writeln!(
            w,
            "{} Voted {} on Copilot memory {}: {} up, {} down",
            v.style.ok("✓"),
            self.direction,
            v.clean(&self.id),
            self.votes.up,
            self.votes.down
        )
    }
}
