//! The tools' arguments: what each tool takes, with the JSON Schema agents see, and the lenient
//! forms agents send (a number as a string, a list as a comma-separated string, null for false).

use rmcp::schemars;
use serde::{Deserialize, Deserializer};

/// `save_memory` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SaveMemoryArgs {
    /// The fact to remember: one self-contained statement, e.g. "User prefers pytest over unittest"
    pub content: String,
    /// Tags: a signal type first when one applies (preference, correction, decision, context,
    /// pattern), then the domain, e.g. ["preference", "python"]. May be empty.
    #[serde(default, deserialize_with = "list_or_csv")]
    pub tags: Vec<String>,
    /// The memory's type: core_context (a fact every session must start with: always loaded,
    /// never decayed), learning (the default), pattern (a recurring way of working) or update
    /// (news about the project's state). Leave it out for an ordinary fact.
    #[serde(default, rename = "type")]
    #[schemars(schema_with = "memory_type_schema")]
    pub memory_type: Option<String>,
    /// How much the memory matters: high (loaded into the context at session start when its
    /// type is learning or pattern), medium (the default) or low. A merge with a near-duplicate
    /// keeps the higher one.
    #[serde(default)]
    #[schemars(schema_with = "importance_schema")]
    pub importance: Option<String>,
    /// Your agent name, when the fact only matters to you (e.g. "reviewer"); leave it out for
    /// knowledge every agent shares. No "/", "\\" or control characters.
    #[serde(default)]
    pub agent: Option<String>,
}

/// The schema of `save_memory`'s `type`: one of the four types, inline.
fn memory_type_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "null"], "enum": ["core_context", "learning", "pattern", "update", null] })
}

/// The schema of `save_memory`'s `importance`: one of the three levels, inline.
fn importance_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "null"], "enum": ["high", "medium", "low", null] })
}

/// `recall_memory` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RecallMemoryArgs {
    /// Words to look for in the memories' text and tags, case-insensitive; a memory matches
    /// when every word occurs in it, e.g. "pytest" or "release branch"
    pub query: String,
    /// Return at most this many memories, newest first (default 5)
    #[serde(default)]
    pub max_results: Option<usize>,
}

/// How many memories `recall_memory` returns when the client does not say (as `kb recall`).
pub const DEFAULT_MAX_RESULTS: usize = 5;

/// `forget_memory` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ForgetMemoryArgs {
    /// The id, as list_memories and recall_memory show it: an integer for a memory (7 or "7"),
    /// a string such as "mem-1a2b3c4d" for a Copilot record
    #[serde(deserialize_with = "string_or_integer")]
    #[schemars(schema_with = "id_schema")]
    pub id: String,
}

/// The schema of an id: an integer (a memory) or a string (a memory or a record), inline.
fn id_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["integer", "string"] })
}

/// `store_memory` arguments (Copilot's `store_memory` tool).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct StoreMemoryArgs {
    /// The topic the fact belongs to, a short label such as "testing", "build" or "naming"
    pub subject: String,
    /// The fact itself, one statement that can be checked against the code
    pub fact: String,
    /// Where the fact can be verified: file paths, with line numbers when they help
    /// (e.g. ["src/store.rs:120", "Makefile:14"]). A comma-separated string is accepted too.
    /// May be empty, but a fact a later reader can check is worth more.
    #[serde(default, deserialize_with = "list_or_csv")]
    pub citations: Vec<String>,
    /// Why the fact matters for future work in this repository
    pub reason: String,
}

/// `propose_decision` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ProposeDecisionArgs {
    /// The decision, one self-contained statement whose first line is its title, e.g. "We use
    /// PostgreSQL for every service; no MySQL"
    pub text: String,
    /// What the decision is about: architectural (structure, components, technologies), scope
    /// (what the project does and does not do), process (how the team works), technical
    /// (standards and conventions in the code)
    #[serde(rename = "type")]
    pub kind: DecisionType,
}

/// `get_context`'s arguments: `kb context`'s flags.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct GetContextArgs {
    /// Your agent name (e.g. "reviewer"): your own core-context memories and learnings come in,
    /// besides the shared ones
    #[serde(default)]
    pub agent: Option<String>,
    /// The files you work on, relative to the repository root: scoped instructions whose applyTo
    /// matches them come in
    #[serde(default, rename = "for", deserialize_with = "list_or_csv")]
    pub for_paths: Vec<String>,
    /// Only the Boundaries and Decisions section (for a child worker)
    #[serde(default)]
    pub decisions_only: bool,
    /// A token budget (at least 100): whole items are left out, lowest priority first
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

/// A decision's type, as `kb decision add --type` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum DecisionType {
    Architectural,
    Scope,
    Process,
    Technical,
}

impl DecisionType {
    pub(super) fn kind(self) -> crate::decisions::file::DecisionKind {
        use crate::decisions::file::DecisionKind;
        match self {
            DecisionType::Architectural => DecisionKind::Architectural,
            DecisionType::Scope => DecisionKind::Scope,
            DecisionType::Process => DecisionKind::Process,
            DecisionType::Technical => DecisionKind::Technical,
        }
    }
}

/// `update_session` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct UpdateSessionArgs {
    /// The session's running summary: where the work stands (done, in progress, next). Replaces
    /// the summary, unless append is true
    pub summary: String,
    /// Add the text as a new paragraph after the running summary instead of replacing it
    /// (default false)
    #[serde(default, deserialize_with = "bool_or_null")]
    pub append: bool,
}

/// `vote_memory` arguments (Copilot's `vote_memory` tool, plus the record's id).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct VoteMemoryArgs {
    /// The record's id, e.g. "mem-1a2b3c4d" (list_memories shows it). Give this or fact
    #[serde(default)]
    pub id: Option<String>,
    /// The record's fact, exactly as stored (Copilot's way to name a memory). Give this or id
    #[serde(default)]
    pub fact: Option<String>,
    /// up: the fact is right and useful; down: it is wrong or outdated ("upvote" and "downvote"
    /// are accepted too)
    pub direction: VoteDirection,
    /// Why, e.g. "Moved to tests/snapshots/ in this branch"; kept in the record's last_vote
    pub reason: String,
}

/// Which way a vote goes; Copilot's spellings are accepted too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum VoteDirection {
    #[serde(alias = "upvote")]
    Up,
    #[serde(alias = "downvote")]
    Down,
}

impl VoteDirection {
    pub(super) fn direction(self) -> crate::copilot::Direction {
        match self {
            VoteDirection::Up => crate::copilot::Direction::Up,
            VoteDirection::Down => crate::copilot::Direction::Down,
        }
    }
}

/// `context_board` arguments: the names GitHub Copilot CLI's own `context_board` tool uses.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ContextBoardArgs {
    /// What to do: get_board (list the items), get (one item's content: src and name), add
    /// (create or overwrite an agent item: name, description, context), prune (delete an agent
    /// item: name)
    pub command: BoardCommand,
    /// Who wrote the item, for get: agent or user
    #[serde(default)]
    pub src: Option<String>,
    /// The item's name, short kebab-case, e.g. "release-checklist" (get, add, prune)
    #[serde(default)]
    pub name: Option<String>,
    /// One line saying what the item holds (add)
    #[serde(default)]
    pub description: Option<String>,
    /// The item's content (add)
    #[serde(default)]
    pub context: Option<String>,
}

/// The `context_board` commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum BoardCommand {
    GetBoard,
    Get,
    Add,
    Prune,
}

/// Accepts a boolean, or `null` for false.
fn bool_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

/// Accepts a list of strings or one comma-separated string (how Copilot's CLI sends
/// citations); blank items are dropped from the string form.
fn list_or_csv<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrCsv {
        List(Vec<String>),
        Csv(String),
    }
    // `null` is what many clients send for an optional argument they leave out.
    match Option::<ListOrCsv>::deserialize(d)
        .map_err(|_| serde::de::Error::custom("expected a list of strings or a comma-separated string"))?
    {
        None => Ok(Vec::new()),
        Some(ListOrCsv::List(items)) => Ok(items),
        Some(ListOrCsv::Csv(s)) => {
            Ok(s.split(',').map(str::trim).filter(|t| !t.is_empty()).map(String::from).collect())
        }
    }
}

/// Accepts an id as a string or as a non-negative integer.
fn string_or_integer<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        Integer(u64),
        String(String),
    }
    match Id::deserialize(d).map_err(|_| serde::de::Error::custom("expected an id (an integer or a string)"))? {
        Id::Integer(n) => Ok(n.to_string()),
        Id::String(s) => Ok(s),
    }
}
