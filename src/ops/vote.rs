//! Voting on a Copilot record: `votes: {"up":N,"down":N}` in the record (docs/behaviour.md, Votes).

use super::read::COPILOT;
use super::{Report, View, abs};
pub use crate::copilot::VoteTarget;
use crate::copilot::record::Votes;
use crate::error::KbError;
use crate::journal::Txn;
use crate::kinds::Direction;
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
    /// Secret rules redacted from the reason (MCP only: `kb vote` refuses a secret).
    #[serde(skip)]
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    redacted: Vec<&'static str>,
}

impl VoteReport {
    /// Returns the secret rules whose matches were redacted from the reason.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub fn redacted(&self) -> &[&'static str] {
        &self.redacted
    }
}

/// Counts a vote on the record `raw_id`; an id that names a markdown memory gets an error that
/// says votes are for records.
pub fn vote(repo: &Repo, raw_id: &str, direction: Direction, reason: &str) -> Result<VoteReport> {
    super::read::refuse_shared(repo, raw_id)?;
    vote_on(repo, VoteTarget::Id(raw_id), direction, reason, false)
}

/// Counts a vote on the record named by its id or its exact fact (MCP `vote_memory`); with
/// `redact`, a secret in the reason is stored as `[REDACTED:<rule>]` instead of refused.
pub fn vote_on(
    repo: &Repo,
    target: VoteTarget<'_>,
    direction: Direction,
    reason: &str,
    redact: bool,
) -> Result<VoteReport> {
    let target = match target {
        VoteTarget::Id(id) => VoteTarget::Id(id.trim()),
        fact => fact,
    };
    let (reason, redacted) = crate::copilot::vote_reason(reason, redact)?;
    let mut txn = Txn::unrecorded(repo.lock()?);
    let voted = crate::copilot::RecordStore::new(repo).vote(&mut txn, target, direction, &reason, redacted);
    drop(txn);
    let out = match (voted, target) {
        (Err(KbError::NotFound { .. }), VoteTarget::Id(id)) if markdown_has(repo, id) => {
            return Err(MarkdownVote { id: id.to_string() }.into());
        }
        (other, _) => other?,
    };
    Ok(VoteReport {
        id: out.id,
        direction: direction.as_str(),
        votes: out.votes,
        path: abs(&out.path),
        line: out.line,
        store: COPILOT,
        redacted: out.redacted,
    })
}

/// A vote on an id that names a markdown memory: votes are for Copilot records. Typed, so that a
/// face can word it for its own users (MCP points to its tools, not to `kb list`).
#[derive(Debug, thiserror::Error)]
#[error("memory {id} is a markdown memory; votes apply to Copilot records (see `kb list --store copilot`)")]
pub struct MarkdownVote {
    pub id: String,
}

/// Returns whether a markdown memory has this integer id.
fn markdown_has(repo: &Repo, id: &str) -> bool {
    let Ok(n) = parse_id(id) else { return false };
    crate::memories::store::MemoryStore::new(repo).scan().is_ok_and(|index| !index.by_id(n).is_empty())
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
