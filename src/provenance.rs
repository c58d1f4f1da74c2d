//! Provenance: who wrote a memory, a record or a decision. kb writes `created_by` when it creates
//! one and `updated_by` when it rewrites its content. Over MCP the author is `agent:` and the
//! client's name; on the command line `$KB_AUTHOR`, else git's `user.email`, else `$USER`.
//! Hand-written files carry no `created_by`: they count as a person's.

use crate::settings::Environment;
use std::path::Path;

/// The frontmatter (or record) key naming who created an item.
pub const CREATED_BY: &str = "created_by";
/// The key naming who last rewrote an item's content.
pub const UPDATED_BY: &str = "updated_by";
/// The key naming the person who accepted an agent's proposal (`kb inbox accept`): the item's
/// `created_by` is then the agent that proposed it.
pub const ACCEPTED_BY: &str = "accepted_by";
/// The prefix of an agent's name: only a `created_by` starting with it counts as an agent's.
pub const AGENT_PREFIX: &str = "agent:";

pub use crate::kinds::Actor;

/// Returns the author of the changes a command run with `env` in the repository at `root` makes:
/// `agent:NAME` over MCP (`agent:unknown` when the client sent no name); on the command line
/// `$KB_AUTHOR`, else git's `user.email`, else `$USER`; `None` when none of them is known.
pub fn author(env: &Environment, root: &Path) -> Option<String> {
    match &env.actor {
        Actor::Agent(name) => Some(format!("{AGENT_PREFIX}{}", name.as_deref().unwrap_or("unknown"))),
        Actor::Person => env.kb_author.clone().or_else(|| crate::git::user_email(root)).or_else(|| env.user.clone()),
    }
}

/// Returns the `created_by` and `updated_by` a file's frontmatter names. They are read leniently:
/// co-cli's reader ignores these keys, so a value that is not a string never makes the file
/// invalid; it is simply not an author.
pub fn authors(f: &crate::format::frontmatter::Fields) -> (Option<String>, Option<String>) {
    use serde_json::Value;
    let author = |key: &str| match f.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        _ => None,
    };
    (author(CREATED_BY), author(UPDATED_BY))
}

/// Returns whether an item with this `created_by` was written by an agent.
pub fn by_agent(created_by: Option<&str>) -> bool {
    created_by.is_some_and(|c| c.starts_with(AGENT_PREFIX))
}

/// Refuses an agent's change (`action`: `update`, `forget`) of `what` (`memory 7`, `Copilot
/// memory mem-1`), created by `created_by`, when no agent wrote it (docs/mcp.md, Who may write):
/// the message names who did and the command a person runs instead (`commands`). A person's
/// change is never refused here.
pub fn agent_may_change(
    actor: &Actor,
    created_by: Option<&str>,
    action: &'static str,
    what: &str,
    commands: &str,
) -> Result<(), crate::error::KbError> {
    if !actor.is_agent() || by_agent(created_by) {
        return Ok(());
    }
    let who = created_by.map_or("a person (it has no created_by)".to_string(), |a| format!("{a}, a person"));
    Err(crate::error::KbError::refused(
        action,
        format!("{what} was written by {who}; an agent may change only what an agent wrote: a person runs {commands}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_agent_prefix_counts_as_an_agent() {
        assert!(by_agent(Some("agent:claude-code")));
        assert!(!by_agent(Some("dev@example.com")) && !by_agent(None) && !by_agent(Some("Agent:x")));
        assert_eq!(Actor::agent(Some(" claude\ncode ")), Actor::Agent(Some("claudecode".into())));
        assert_eq!(Actor::agent(Some("")), Actor::Agent(None));
    }
}
