//! `kb mcp`: the knowledge base served to agents over the Model Context Protocol, on stdio.
//!
//! Owns the protocol side only: the tool and resource definitions (names, descriptions, JSON
//! Schemas), turning results into MCP results, and the runtime. The work itself is the CLI's own
//! operations (`crate::ops`, called by `tools`): the same dedup, consolidation, decay, secret
//! filter and lock, the same texts and JSON. rmcp answers both protocol eras: the `initialize` handshake (2025-11-25 and earlier)
//! and the stateless 2026-07-28 revision with `server/discover`.
//!
//! stdout carries protocol messages only. Warnings (a skipped memory file, a context file with
//! bad frontmatter) go to stderr, as in the CLI. A failed operation is a tool result with
//! `isError: true` and the CLI's message; only a request the server cannot route at all (an
//! unknown resource, a malformed message) is a JSON-RPC error. Nothing a client sends ends the
//! server: it stops when its stdin closes.

mod tools;

pub use tools::{Reply, Server};

use anyhow::Context as _;
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{
    CacheScope, CallToolResult, ContentBlock, Implementation, ListResourcesResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer, ServerInitializeError};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::{Deserialize, Deserializer};
use std::sync::Arc;
use std::time::Duration;

/// The URI of the compiled always-loaded context.
pub const CONTEXT_URI: &str = "kb://context";

/// What the server tells a client about itself (`initialize` and `server/discover`).
const INSTRUCTIONS: &str = "kb keeps this repository's agent knowledge as plain files committed with the code: \
memories (markdown files in .co-cli/knowledge/memories/) and Copilot-style records (.github/copilot-memories.jsonl). \
recall_memory looks up what the user and the team have said before (preferences, corrections, decisions, \
conventions); it is worth a call at the start of a task. save_memory keeps a durable fact about the user or the \
project for later sessions; store_memory keeps a verified fact about the codebase, with citations; vote_memory \
marks a Copilot record as right or wrong. propose_decision proposes a team decision for a person to accept; \
update_session records where the work session a person opened stands. A secret in anything saved is stored as \
[REDACTED:<rule>], and the result says which rule fired. The resource kb://context is the always-loaded context \
block (the global and project context files and the repository's Copilot records).";

const SAVE_MEMORY: &str = "Save a durable fact about the user, the team or this project, so later sessions know it. \
It becomes a markdown file in the repository (.co-cli/knowledge/memories/), reviewed and committed like code. \
A near-duplicate of a recent memory is merged into it rather than saved twice, and when the store is full the \
oldest unprotected memories are summarized or cut.

Signals worth saving, with the tags they usually carry (the first tag sets the memory's category):
- preference: \"I prefer\", \"I like\", \"I use\", \"I favor\" -> tags [\"preference\", domain]
- correction: \"Actually\", \"No wait\", \"That's wrong\", \"I meant\" -> tags [\"correction\", domain]
- decision: \"We decided\", \"We chose\", \"We implemented\" -> tags [\"decision\", domain]
- context: factual statements about the team, the project or its environment -> tags [\"context\", domain]
- pattern: \"We always\", \"When we do X\", \"Never do Y\" -> tags [\"pattern\", domain]
Similar phrasings carry the same signals.

Not worth saving:
- questions (\"Should we use X?\", \"What if we tried Y?\");
- speculation and uncertain statements (\"Maybe we should...\", \"I think...\", \"Could we...\");
- details that only matter for the current task or session (a file being edited, a failing test right now);
- what is already in the context files or obvious from reading the code;
- secrets (tokens, keys, passwords): a secret in the text is stored as [REDACTED:<rule>], never as itself.

Write one self-contained statement that will still make sense months later, e.g. content \"User prefers pytest \
over unittest\" with tags [\"preference\", \"python\"], or \"The team decided to release from the main branch \
only\" with tags [\"decision\", \"release\"].

Optional layers, all left out for an ordinary fact: type core_context for a fact every session must start with \
(always loaded into the context, protected from decay; keep these few), pattern for a recurring way of working, \
update for news about the project's state, learning (the default) for anything else; importance high for a \
learning or pattern that should be loaded into the context at session start, low for a minor detail (medium is the \
default); agent your own agent name when the fact only matters to you (e.g. a reviewer's checklist), left out for \
knowledge every agent shares. A near-duplicate is only merged into a memory of the same type and agent.";

const RECALL_MEMORY: &str = "Search the saved memories (text and tags) and the Copilot records (subject, fact, \
reason, citations) for the query, case-insensitive; newest first. Worth calling without being asked, at the start of a task and before choices \
where the user's preferences, past corrections, team decisions or project conventions may apply: e.g. \"test\" \
before writing tests, \"deploy\" before touching CI, a library's name before using it. A memory matches when every \
word of the query occurs in it, so a few distinctive words find the most. No match is a normal, empty result.";

const LIST_MEMORIES: &str = "List every saved memory by id, with its date, its category ([preference], \
[decision]...), a lock mark when it is protected from decay, and its first line; then the Copilot records, with \
their ids (mem-...) and subjects. Useful for an overview of what is known, or to find the id of a memory to \
forget; recall_memory searches.";

const FORGET_MEMORY: &str = "Delete one saved memory or Copilot record by its id, as list_memories and \
recall_memory show it: an integer for a memory, an id such as mem-1a2b3c4d for a record. For when the user asks \
to forget something, or a memory turned out wrong or outdated (save the corrected fact as well). The memory's \
file, or the record's line, is removed; git history still has it.";

const STORE_MEMORY: &str = "Store a fact about this repository's codebase as a Copilot-style memory record \
(.github/copilot-memories.jsonl). The records go into the always-loaded context of the agents that work in this \
repository, so they suit facts that help future coding and review: conventions, build and test commands, \
architecture and its invariants, constraints. Each fact needs citations that let a later reader check it against \
the code (file paths with line numbers), and a reason it matters. A record with the same subject and a nearly \
identical fact is merged into the existing one.

Not for: the user's personal preferences (save_memory), facts that only hold for the current task, guesses not \
verified in the code, anything obvious from a glance at the code, or secrets (a secret in any field is stored as \
[REDACTED:<rule>], never as itself).

Example: subject \"testing\", fact \"Integration tests run the kb binary in a temporary repository with a pinned \
clock (KB_NOW)\", citations [\"tests/cli/common.rs:1\"], reason \"New tests should reuse TestEnv instead of \
touching the real HOME\".";

const PROPOSE_DECISION: &str = "Propose a team decision: a boundary that every agent and person working in this \
repository should follow. It is written as a decision file with status proposed (.co-cli/knowledge/decisions/) and \
has no effect until a person accepts it (kb decision accept ID); accepted architectural and scope decisions then \
head every agent's always-loaded context, above everything else. Agents propose; people decide.

Worth proposing: a choice the user states or agrees to that should bind future work, e.g. \"We use PostgreSQL, not \
MySQL\" (architectural), \"The CLI does not support Windows\" (scope), \"Every change needs a CHANGELOG line\" \
(process), \"All timestamps are UTC with an explicit offset\" (technical).

Not for: the user's personal preferences or corrections (save_memory), facts about the code with citations \
(store_memory), your own guesses or suggestions nobody agreed to, or details of the current task. One decision per \
call; its first line is its title. When an active or proposed decision already says nearly the same, nothing is \
added and that decision's id comes back (action exists). A secret in the text is stored as [REDACTED:<rule>].";

const GET_CONTEXT: &str = "Get the compiled context for your task: the team's active decisions (which take \
precedence over everything else), the project context and Copilot records, the scoped instructions for the files \
you work on, the core-context memories and high-importance learnings for your agent, and the current session's \
focus. Call it at the start of a task, or when you move to other files (pass them in `for`) or hand work to a \
child worker (decisions_only true gives it the decisions alone). max_tokens (at least 100) fits the block into \
that many o200k tokens, leaving out whole items lowest priority first; decisions are never left out.";

const UPDATE_SESSION: &str = "Record where the current work session stands, in the session a person opened with \
kb session start FOCUS (.co-cli/knowledge/session.md). The summary is the session's running notes: it goes into the \
always-loaded context under Current Session, so the next agent or the next conversation picks up from it. Call it at \
milestones: after finishing a step, when the plan changes, before stopping or handing over.

By default the summary replaces the running one, so write the whole current state (done, in progress, next, open \
questions); with append true it is added as a new paragraph (a short progress note). Only people start and end \
sessions: with no open session this is an error, and you can ask the user to start one. A secret in the text is \
stored as [REDACTED:<rule>].";

const VOTE_MEMORY: &str = "Vote on a Copilot-style memory record (.github/copilot-memories.jsonl, the records \
store_memory writes and the always-loaded context lists under Repository Memories): up when it proved right and \
useful, down when it is wrong, outdated or conflicts with the code. Treat records as possibly stale: when the code \
says otherwise, trust the code and vote the record down. A record with more down than up votes leaves the \
always-loaded context; forget_memory deletes it outright, and store_memory can add the corrected fact.

Name the record by its id (mem-..., as list_memories and recall_memory show it) or by its fact, copied exactly (as \
Copilot's vote_memory does); a fact that matches no record, or several, is an error. The reason says why, e.g. \
\"Moved to tests/snapshots/ in this branch\". Votes are counted in the record. A secret in the reason is stored \
as [REDACTED:<rule>].";

const CONTEXT_BOARD: &str = "The dynamic context board of this repository and branch (Copilot CLI's \
context_board): at most 25 short named notes of reusable facts, recipes and lessons for the work on this branch, \
local to this clone. Commands: get_board lists the items (src, name, description, read_count, count); get returns \
one item's full content (give src and name) and counts the read; add creates or overwrites one of your items \
(name in kebab-case, a one-line description, and the context); prune deletes one of your items by name. Items a \
person wrote (src user) can be read but never pruned by you. Add what the next agent on this branch would otherwise \
rediscover; prune what is stale. From 23 items on, prune to 18 or fewer. A secret is stored as [REDACTED:<rule>].";

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
    fn kind(self) -> crate::decisions::file::DecisionKind {
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
    fn direction(self) -> crate::copilot::Direction {
        match self {
            VoteDirection::Up => crate::copilot::Direction::Up,
            VoteDirection::Down => crate::copilot::Direction::Down,
        }
    }
}

/// `context_board` arguments: Copilot CLI's own names (SPEC §12.2).
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

/// The MCP server: the repository, and the tool router built once.
#[derive(Clone)]
pub struct KbServer {
    repo: Arc<Server>,
    /// Calls run one at a time, in the order they arrived (tokio's mutex is fair): a client
    /// that sends `save_memory` and then `recall_memory` without waiting still finds what it
    /// saved. The store's file lock already keeps concurrent writers safe; this keeps order.
    turn: Arc<tokio::sync::Mutex<()>>,
    tool_router: ToolRouter<KbServer>,
}

#[tool_router]
impl KbServer {
    pub fn new(repo: Server) -> KbServer {
        KbServer { repo: Arc::new(repo), turn: Arc::default(), tool_router: Self::tool_router() }
    }

    #[tool(
        description = SAVE_MEMORY,
        annotations(title = "Save a memory", read_only_hint = false, destructive_hint = true, open_world_hint = false)
    )]
    async fn save_memory(&self, Parameters(args): Parameters<SaveMemoryArgs>) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self
            .run(move || {
                let SaveMemoryArgs { content, tags, memory_type, importance, agent } = args;
                repo.save(content, tags, memory_type.as_deref(), importance.as_deref(), agent)
            })
            .await)
    }

    #[tool(
        description = RECALL_MEMORY,
        annotations(title = "Recall memories", read_only_hint = true, open_world_hint = false)
    )]
    async fn recall_memory(&self, Parameters(args): Parameters<RecallMemoryArgs>) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        let max_results = args.max_results.unwrap_or(DEFAULT_MAX_RESULTS);
        if max_results == 0 {
            return Ok(CallToolResult::error(vec![ContentBlock::text("max_results must be at least 1")]));
        }
        Ok(self.run(move || repo.recall(&args.query, max_results)).await)
    }

    #[tool(description = LIST_MEMORIES, annotations(title = "List memories", read_only_hint = true, open_world_hint = false))]
    async fn list_memories(&self) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.run(move || repo.list()).await)
    }

    #[tool(
        description = FORGET_MEMORY,
        annotations(
            title = "Forget a memory",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn forget_memory(&self, Parameters(args): Parameters<ForgetMemoryArgs>) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.run(move || repo.forget(&args.id)).await)
    }

    #[tool(
        description = STORE_MEMORY,
        annotations(title = "Store a repository fact", read_only_hint = false, destructive_hint = true, open_world_hint = false)
    )]
    async fn store_memory(&self, Parameters(args): Parameters<StoreMemoryArgs>) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.run(move || repo.store(args.subject, args.fact, args.citations, args.reason)).await)
    }

    #[tool(
        description = PROPOSE_DECISION,
        annotations(
            title = "Propose a decision",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn propose_decision(
        &self,
        Parameters(args): Parameters<ProposeDecisionArgs>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.run(move || repo.propose_decision(args.text, args.kind.kind())).await)
    }

    #[tool(
        description = GET_CONTEXT,
        annotations(title = "Get the compiled context", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_context(&self, Parameters(args): Parameters<GetContextArgs>) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.run(move || repo.get_context(args)).await)
    }

    #[tool(
        description = UPDATE_SESSION,
        annotations(title = "Update the session summary", read_only_hint = false, destructive_hint = true, open_world_hint = false)
    )]
    async fn update_session(
        &self,
        Parameters(args): Parameters<UpdateSessionArgs>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.run(move || repo.update_session(&args.summary, args.append)).await)
    }

    #[tool(
        description = VOTE_MEMORY,
        annotations(title = "Vote on a Copilot memory", read_only_hint = false, destructive_hint = false, open_world_hint = false)
    )]
    async fn vote_memory(&self, Parameters(args): Parameters<VoteMemoryArgs>) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        let direction = args.direction.direction();
        Ok(self.run(move || repo.vote(args.id.as_deref(), args.fact.as_deref(), direction, &args.reason)).await)
    }

    #[tool(
        description = CONTEXT_BOARD,
        annotations(title = "Context board", read_only_hint = false, destructive_hint = true, open_world_hint = false)
    )]
    async fn context_board(&self, Parameters(args): Parameters<ContextBoardArgs>) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.run(move || repo.context_board(args)).await)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for KbServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let repo = self.repo.clone();
        let text = self.blocking(move || repo.context()).await?;
        let mut result = ListResourcesResult::with_all_items(vec![context_resource(text.len())]);
        if supports_cache_hints(&context) {
            // The files can change at any moment: the list is stale at once, and private to this repository.
            result = result.with_ttl_ms(0).with_cache_scope(CacheScope::Private);
        }
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if request.uri != CONTEXT_URI {
            let message = format!("no resource {}: kb serves {CONTEXT_URI} only", request.uri);
            return Err(McpError::resource_not_found(message, None));
        }
        let repo = self.repo.clone();
        let text = self.blocking(move || repo.context()).await?;
        let mut result =
            ReadResourceResult::new(vec![ResourceContents::text(text, CONTEXT_URI).with_mime_type("text/markdown")]);
        if supports_cache_hints(&context) {
            result = result.with_ttl_ms(0).with_cache_scope(CacheScope::Private);
        }
        Ok(result.into())
    }
}

/// Returns the context resource's description, with its current size in bytes.
fn context_resource(size: usize) -> Resource {
    Resource::new(CONTEXT_URI, "context")
        .with_title("Always-loaded context")
        .with_description(
            "The compiled always-loaded context, as agents load it at session start: the global and \
             project context.md files and the repository's Copilot records, under '## Internal Knowledge'",
        )
        .with_mime_type("text/markdown")
        .with_size(size as u64)
}

/// Returns whether the request uses the 2026-07-28 revision, whose list results carry cache hints.
fn supports_cache_hints(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

impl KbServer {
    /// Runs blocking file work off the protocol task, in its turn. A panic in it (a bug)
    /// becomes an internal error for this request, not the end of the server.
    async fn blocking<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T, McpError> {
        let _turn = self.turn.lock().await;
        tokio::task::spawn_blocking(f).await.map_err(|e| McpError::internal_error(format!("internal error: {e}"), None))
    }

    /// Runs one tool operation: its text and JSON on success, else a tool error carrying the
    /// message the CLI prints after `error:`.
    async fn run(&self, f: impl FnOnce() -> anyhow::Result<Reply> + Send + 'static) -> CallToolResult {
        match self.blocking(f).await {
            Ok(Ok(reply)) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(reply.text)]);
                result.structured_content = Some(reply.json);
                result
            }
            Ok(Err(e)) => CallToolResult::error(vec![ContentBlock::text(tools::error_message(&e))]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.message.into_owned())]),
        }
    }
}

/// The longest request line the server reads, in bytes, its newline excluded: 4 MiB.
///
/// A real MCP request is small: a tool call carries a sentence or a paragraph, and a client
/// that sends a whole file as a memory still stays far below this. Without a limit a runaway or
/// hostile client could make the server hold a line of any length (a 400 MB line took 827 MB and
/// never got a reply); with it, memory stays bounded by the limit whatever arrives. A longer line
/// is read to its end without being kept and answered with the error [`too_large`] builds; the
/// server then reads on. (rmcp's own transport drops lines over 16 MiB silently; this limit is
/// below it, so that never happens.) docs/mcp.md documents the limit.
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// How much of stdin is read at a time.
const READ_CHUNK: usize = 64 << 10;

/// What [`read_line`] found.
#[derive(Debug, PartialEq)]
enum Line {
    /// A line within the limit, now in the buffer without its newline.
    Whole,
    /// A line of `size` bytes (newline excluded), over the limit: the buffer holds its first
    /// [`MAX_LINE_BYTES`] bytes, the rest was dropped as it was read.
    TooLong { size: u64 },
    /// The end of the input.
    End,
}

/// Reads the next line into `line`, never holding more than [`MAX_LINE_BYTES`] of it: the
/// rest of a longer line is read and dropped chunk by chunk. A last line without a newline
/// counts as a line.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R, line: &mut Vec<u8>) -> std::io::Result<Line> {
    use tokio::io::AsyncBufReadExt;
    line.clear();
    let mut size = 0u64;
    let finished = |size: u64| if size > MAX_LINE_BYTES as u64 { Line::TooLong { size } } else { Line::Whole };
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if size == 0 { Line::End } else { finished(size) });
        }
        let newline = memchr::memchr(b'\n', available);
        let part = &available[..newline.unwrap_or(available.len())];
        let keep = MAX_LINE_BYTES.saturating_sub(line.len()).min(part.len());
        line.extend_from_slice(&part[..keep]);
        size += part.len() as u64;
        let used = part.len() + usize::from(newline.is_some());
        reader.consume(used);
        if newline.is_some() {
            return Ok(finished(size));
        }
    }
}

/// Returns the JSON-RPC error for a line of `size` bytes, over the limit: Invalid Request
/// (-32600), since the line was never parsed and so cannot be called invalid JSON. Its id is
/// the request's when `head` (the line's start) shows it, else null; `data` gives the line's
/// size and the limit.
fn too_large(size: u64, head: &[u8]) -> String {
    let message = format!(
        "Request too large: a line of {size} bytes, over the limit of {MAX_LINE_BYTES} bytes (4 MiB) per message; \
         the line was discarded"
    );
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": leading_id(head),
        "error": {"code": -32600, "message": message, "data": {"size": size, "limit": MAX_LINE_BYTES}}
    })
    .to_string()
}

/// Returns the top-level `"id"` of the JSON-RPC message that starts with `head`, when it comes
/// before the end of `head` and is a string or a number (as JSON-RPC ids are); else null. The
/// members before it are skipped by serde_json, strings and nesting included, so an `"id"` in
/// the params is never taken for the request's.
fn leading_id(head: &[u8]) -> serde_json::Value {
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
    use serde_json::Value;
    struct Find<'a>(&'a mut Value);
    impl<'de> DeserializeSeed<'de> for Find<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Find<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON-RPC message")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == "id" {
                    let id: Value = map.next_value()?;
                    if id.is_string() || id.is_number() {
                        *self.0 = id;
                    }
                    // Found: the rest of the message (cut short anyway) does not matter.
                    return Ok(());
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let mut id = Value::Null;
    // The head is cut short, so the parse ends in an error; what it found before that stands.
    let _ = Find(&mut id).deserialize(&mut serde_json::Deserializer::from_slice(head));
    id
}

/// Returns the stdio transport with a guard in front of it. The guard reads stdin a line at a
/// time, holding at most [`MAX_LINE_BYTES`] of a line: a longer line gets the Invalid Request
/// error of [`too_large`] and never reaches the SDK. A line that is not JSON gets the JSON-RPC
/// parse error (-32700, `id: null`) the protocol asks for, instead of silence. Every other line
/// passes through; all output goes through one writer, so replies and errors never interleave
/// mid-line.
fn guarded_stdio() -> ((tokio::io::DuplexStream, tokio::io::DuplexStream), tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (server_in, mut feed) = tokio::io::duplex(1 << 16);
    let (server_out, replies) = tokio::io::duplex(1 << 16);
    let (errors_tx, mut errors_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut stdin = BufReader::with_capacity(READ_CHUNK, tokio::io::stdin());
        let mut line = Vec::new();
        loop {
            match read_line(&mut stdin, &mut line).await {
                Ok(Line::Whole) => {}
                Ok(Line::TooLong { size }) => {
                    let _ = errors_tx.send(too_large(size, &line));
                    continue;
                }
                Ok(Line::End) | Err(_) => break,
            }
            let text = String::from_utf8_lossy(&line);
            if text.trim().is_empty() {
                continue;
            }
            if serde_json::from_str::<serde_json::Value>(&text).is_err() {
                let error = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": null,
                    "error": {"code": -32700, "message": "Parse error: the line is not JSON"}
                });
                let _ = errors_tx.send(error.to_string());
                continue;
            }
            if feed.write_all(&line).await.is_err() || feed.write_all(b"\n").await.is_err() {
                break;
            }
        }
        // End of input: closing the feed ends the session.
        let _ = feed.shutdown().await;
    });
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let mut replies = BufReader::new(replies).split(b'\n');
        loop {
            let line = tokio::select! {
                r = replies.next_segment() => match r {
                    Ok(Some(l)) => l,
                    _ => break,
                },
                Some(e) = errors_rx.recv() => e.into_bytes(),
            };
            if stdout.write_all(&line).await.is_err() || stdout.write_all(b"\n").await.is_err() {
                break;
            }
            let _ = stdout.flush().await;
        }
    });
    ((server_in, server_out), writer)
}

/// Serves MCP on stdin/stdout until the client closes stdin.
pub fn serve(repo: Server) -> anyhow::Result<()> {
    // One thread is plenty: requests come one line at a time, and file work runs in
    // `spawn_blocking`, where the store's lock keeps concurrent calls safe.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    let result = runtime.block_on(async move {
        let (transport, writer) = guarded_stdio();
        let running = match KbServer::new(repo).serve(transport).await {
            Ok(running) => running,
            // The client went away before its first request: nothing to serve, not an error.
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(anyhow::anyhow!("the MCP session did not start: {e}")),
        };
        running.waiting().await.context("the MCP session ended abnormally")?;
        // The session is over and its transport dropped: let the last replies reach stdout.
        let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
        Ok(())
    });
    // tokio's stdin reader is a blocking thread that may still sit in read(); do not wait on it
    // for ever, but give a tool call in flight time to finish its write.
    runtime.shutdown_timeout(Duration::from_secs(5));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_accept_the_forms_agents_send() {
        let a: SaveMemoryArgs = serde_json::from_str(r#"{"content":"c","tags":"a, b,,"}"#).unwrap();
        assert_eq!(a.tags, ["a", "b"]);
        let a: SaveMemoryArgs = serde_json::from_str(r#"{"content":"c"}"#).unwrap();
        assert!(a.tags.is_empty());
        let a: StoreMemoryArgs =
            serde_json::from_str(r#"{"subject":"s","fact":"f","citations":["x.rs:1"],"reason":"r"}"#).unwrap();
        assert_eq!(a.citations, ["x.rs:1"]);
        let a: ForgetMemoryArgs = serde_json::from_str(r#"{"id":7}"#).unwrap();
        assert_eq!(a.id, "7");
        let a: ForgetMemoryArgs = serde_json::from_str(r#"{"id":"mem-1a"}"#).unwrap();
        assert_eq!(a.id, "mem-1a");
        assert!(serde_json::from_str::<ForgetMemoryArgs>(r#"{"id":-1}"#).is_err());
        assert!(serde_json::from_str::<SaveMemoryArgs>(r#"{"content":"c","tags":[1]}"#).is_err());
        let a: RecallMemoryArgs = serde_json::from_str(r#"{"query":"q"}"#).unwrap();
        assert_eq!(a.max_results, None);
        // Clients often send null for an optional argument they leave out.
        let a: RecallMemoryArgs = serde_json::from_str(r#"{"query":"q","max_results":null}"#).unwrap();
        assert_eq!(a.max_results, None);
        let a: SaveMemoryArgs = serde_json::from_str(r#"{"content":"c","tags":null}"#).unwrap();
        assert!(a.tags.is_empty());
        let a: StoreMemoryArgs = serde_json::from_str(r#"{"subject":"s","fact":"f","reason":"r"}"#).unwrap();
        assert!(a.citations.is_empty());
    }

    #[test]
    fn the_new_tools_accept_copilots_spellings_and_nulls() {
        let a: VoteMemoryArgs = serde_json::from_str(r#"{"fact":"f","direction":"downvote","reason":"r"}"#).unwrap();
        assert_eq!((a.id, a.fact.as_deref(), a.direction), (None, Some("f"), VoteDirection::Down));
        let a: VoteMemoryArgs =
            serde_json::from_str(r#"{"id":"mem-1","fact":null,"direction":"up","reason":"r"}"#).unwrap();
        assert_eq!((a.id.as_deref(), a.direction), (Some("mem-1"), VoteDirection::Up));
        assert!(serde_json::from_str::<VoteMemoryArgs>(r#"{"id":"m","direction":"Up","reason":"r"}"#).is_err());
        let a: UpdateSessionArgs = serde_json::from_str(r#"{"summary":"s","append":null}"#).unwrap();
        assert!(!a.append);
        let a: UpdateSessionArgs = serde_json::from_str(r#"{"summary":"s","append":true}"#).unwrap();
        assert!(a.append);
        let a: ProposeDecisionArgs = serde_json::from_str(r#"{"text":"t","type":"scope"}"#).unwrap();
        assert_eq!(a.kind.kind(), crate::decisions::file::DecisionKind::Scope);
        assert!(serde_json::from_str::<ProposeDecisionArgs>(r#"{"text":"t","type":"Scope"}"#).is_err());
        let a: ContextBoardArgs = serde_json::from_str(r#"{"command":"get_board"}"#).unwrap();
        assert_eq!(a.command, BoardCommand::GetBoard);
        for schema in [
            schemars::schema_for!(ProposeDecisionArgs),
            schemars::schema_for!(VoteMemoryArgs),
            schemars::schema_for!(ContextBoardArgs),
        ] {
            let text = serde_json::to_string(&schema).unwrap();
            assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
        }
    }

    #[test]
    fn forget_accepts_integer_or_string_ids_in_its_schema() {
        let schema = serde_json::to_string(&schemars::schema_for!(ForgetMemoryArgs)).unwrap();
        assert!(schema.contains("integer") && schema.contains("string"), "{schema}");
    }

    /// Runs `read_line` over `input`, read `chunk` bytes at a time, until the end.
    fn lines(input: &[u8], chunk: usize) -> Vec<(Line, usize, Vec<u8>)> {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut reader = tokio::io::BufReader::with_capacity(chunk, input);
        let mut line = Vec::new();
        let mut out = Vec::new();
        loop {
            let got = runtime.block_on(read_line(&mut reader, &mut line)).unwrap();
            if got == Line::End {
                return out;
            }
            let start = line[..line.len().min(8)].to_vec();
            out.push((got, line.len(), start));
        }
    }

    #[test]
    fn lines_over_the_limit_are_cut_to_their_start_and_measured() {
        let mut input = b"a\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 5));
        input.extend_from_slice(b"\n\n");
        input.extend(std::iter::repeat_n(b'y', MAX_LINE_BYTES));
        input.extend_from_slice(b"\nz\r\nlast");
        let max = MAX_LINE_BYTES;
        for chunk in [1000, 64 << 10, 1 << 20] {
            assert_eq!(
                lines(&input, chunk),
                [
                    (Line::Whole, 1, b"a".to_vec()),
                    (Line::TooLong { size: max as u64 + 5 }, max, b"xxxxxxxx".to_vec()),
                    (Line::Whole, 0, vec![]),
                    (Line::Whole, max, b"yyyyyyyy".to_vec()),
                    (Line::Whole, 2, b"z\r".to_vec()),
                    (Line::Whole, 4, b"last".to_vec()),
                ],
                "chunk {chunk}"
            );
        }
        let mut input = vec![b'x'; MAX_LINE_BYTES + 1];
        assert_eq!(lines(&input, 4096), [(Line::TooLong { size: max as u64 + 1 }, max, b"xxxxxxxx".to_vec())]);
        input.clear();
        assert_eq!(lines(&input, 4096), []);
    }

    #[test]
    fn the_id_of_an_oversized_request_is_found_at_its_start() {
        use serde_json::json;
        let id = |head: &str| leading_id(head.as_bytes());
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"argu"#), json!(7));
        assert_eq!(id(r#" { "method" : "x", "id" : "a\"b" , "params": "#), json!("a\"b"));
        // An "id" inside the params, or a key that only contains it, is not the request's.
        assert_eq!(id(r#"{"params":{"id":1,"x":["id"]},"jsonrpc":"2.0","id":-2.5,"#), json!(-2.5));
        assert_eq!(id(r#"{"jsonrpc":"2.0","method":"tools/call","params":{"id":1,"content":"ab"#), json!(null));
        assert_eq!(id(r#"{"\"id\"":3,"#), json!(null));
        // Not an id JSON-RPC allows, not an object, not JSON, nothing.
        assert_eq!(id(r#"{"id":{"n":1},"#), json!(null));
        assert_eq!(id(r#"{"id":null,"#), json!(null));
        assert_eq!(id(r#"[{"id":1}"#), json!(null));
        assert_eq!(id("id: 1"), json!(null));
        assert_eq!(id(""), json!(null));
        let error: serde_json::Value = serde_json::from_str(&too_large(5 << 20, br#"{"id":"r1","#)).unwrap();
        assert_eq!(
            error,
            json!({"jsonrpc": "2.0", "id": "r1", "error": {"code": -32600, "message": format!(
                "Request too large: a line of {} bytes, over the limit of {MAX_LINE_BYTES} bytes (4 MiB) per message; \
                 the line was discarded", 5 << 20), "data": {"size": 5 << 20, "limit": MAX_LINE_BYTES}}})
        );
    }

    #[test]
    fn the_context_resource_reports_its_size() {
        let r = context_resource(1234);
        assert_eq!((r.uri.as_str(), r.mime_type.as_deref(), r.size), (CONTEXT_URI, Some("text/markdown"), Some(1234)));
    }
}
