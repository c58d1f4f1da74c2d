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
//! `isError: true` and the CLI's message, and so is a wrong argument, in a plain sentence naming it
//! (`args`); only a request the server cannot route at all (an unknown tool or resource, a
//! malformed message) is a JSON-RPC error. Nothing a client sends ends the
//! server: it stops when its stdin closes.

mod args;
mod live;
mod stdio;
mod tools;

pub use args::*;
use stdio::guarded_stdio;

pub use tools::{Reply, Server};

use anyhow::Context as _;
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{
    CacheScope, CallToolResult, ContentBlock, Implementation, InitializeRequestParams, InitializeResult,
    ListResourcesResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer, ServerInitializeError};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use std::sync::Arc;
use std::time::Duration;

/// The URI of the compiled always-loaded context.
pub const CONTEXT_URI: &str = "kb://context";

/// What the server tells a client about itself (`initialize` and `server/discover`).
const INSTRUCTIONS: &str = "kb keeps this repository's knowledge for agents as plain files committed with the code: \
the team's decisions, memories (.co-cli/knowledge/memories/), Copilot-style records \
(.github/copilot-memories.jsonl) and the current work session.

At the start of a task, call get_context with the files you are about to work on (for): it returns the team's \
decisions, which take precedence over everything else, the project context, the memories and records that apply, \
the scoped instructions for those files and the session's notes. Call it again when you move to other files.

Then: recall_memory to look up specifics (what was said before about a library, a command, a convention), and \
get_memory to read one memory, record or decision in full. save_memory keeps a durable fact about the repository, \
the team or the user for later sessions; store_memory instead when the fact is about the code and you can cite \
where it holds (file:line citations, Copilot's record format). propose_decision proposes a boundary the whole team \
should follow; a person accepts it. update_session records progress in a session a person opened; vote_memory \
marks a Copilot record right or wrong; forget_memory deletes a memory or record that is wrong; context_board keeps \
short notes for the agents working on the same git branch. A secret in anything saved is stored as \
[REDACTED:<rule>], and the result says which rule fired. When the repository's setting agent_writes is propose, \
save_memory, store_memory and propose_decision write a proposal that a person accepts (kb inbox accept), and the \
result says so; when it is deny, they and the other writing tools (but context_board) are refused.

The resource kb://context is the always-loaded block: what get_context returns with no arguments.";

const SAVE_MEMORY: &str = "Save a durable fact about the user, the team or this project, so later sessions know it. \
It becomes a markdown file in the repository (.co-cli/knowledge/memories/), reviewed and committed like code. \
For a fact about the code that you can back with file:line citations, use store_memory instead. A near-duplicate of a recent memory is merged into it rather than saved twice, and when the store is full the \
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

const RECALL_MEMORY: &str = "Search what this repository knows: the saved memories, the Copilot records, the \
team's active and proposed decisions and the work sessions. Ask in plain words, as you would ask a colleague \
(\"how do we run the tests\", \"what did we decide about pagination\", \"where do fixtures live\"): results \
are ranked by how well they match, the best first, and words match their other forms (\"tests\" finds \
\"testing\", \"ApiError\" finds \"api error\"). Worth calling without being asked, after get_context at the \
start of a task and before choices where the user's preferences, past corrections, team decisions or project \
conventions may apply. store narrows the search to md (memories), copilot (records), decision or session, or a \
list of them. No match is a normal, empty result; the result says how many matched in all.";

const LIST_MEMORIES: &str = "List the saved memories by id, with their date, category ([preference], \
[decision]...), a lock mark when protected from decay, and their whole first line; then the Copilot records, \
with their ids (mem-...), subjects and votes. At most limit items (default 50), the memories first; the result \
always gives the total. Filter with store (md or copilot), type and agent (these two: markdown memories only). \
For an overview of what is known or to find an id: recall_memory searches by words, get_memory reads one in full.";

const GET_MEMORY: &str = "Read one memory, Copilot record or decision in full, by its id: an integer for a \
memory (as list_memories and recall_memory show it), mem-... for a Copilot record, decision:N for a decision \
(as propose_decision returns it). For when a list line or a search result is not enough: the whole text, tags, \
type, importance, agent and dates of a memory; the citations, reason and votes of a record; the type and status \
of a decision. Reading a memory or record counts as a use of it, as a recall result does.";

const AUDIT: &str = "Check whether what the knowledge says still holds, as `kb audit` does: the paths and lines it \
cites exist, the make/just/npm targets it names are defined, the code symbols it names occur in the repository; and \
whether two near-identical memories may contradict each other. Give ids (an integer for a memory, mem-... for a \
Copilot record, decision:N for a decision) to check only those; none: everything. Each item comes back ok, stale (with \
what no longer holds, e.g. a file renamed since) or unverified (it names nothing that can be checked). Fix or forget \
a stale memory rather than trusting it. Reads only.";

const FORGET_MEMORY: &str = "Delete one saved memory or Copilot record by its id, as list_memories and \
recall_memory show it: an integer for a memory, an id such as mem-1a2b3c4d for a record. For when the user asks \
to forget something, or a memory turned out wrong or outdated (save the corrected fact as well). The memory's \
file, or the record's line, is removed; git history still has it. Only what an agent wrote can be deleted this way; \
for a person's memory or record the answer names who wrote it and the command the user can run instead.";

const UPDATE_MEMORY: &str = "Replace the text of a saved memory (by its integer id, as list_memories and \
recall_memory show it) when what it says changed or was wrong: the memory keeps its id, tags and type, and its \
updated time is set. Only a memory an agent wrote can be changed this way; for a person's memory the answer names \
who wrote it and the command the user can run instead. A Copilot record is corrected with store_memory and \
forget_memory instead.";

const STORE_MEMORY: &str = "Store a fact about this repository's codebase as a Copilot-style memory record \
(.github/copilot-memories.jsonl). Use it rather than save_memory when the fact is about the code and you can cite \
where it holds (file:line); save_memory is for preferences, decisions and facts about the team or project. The records go into the always-loaded context of the agents that work in this \
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
you work on, the core-context memories, Hot Memories and high-importance learnings for your agent, and the current \
session's notes. Call it first, at the start of a task, with the files you are about to work on in `for`; again \
when you move to other files; and for a child worker you hand work to (decisions_only true gives it the decisions \
alone). max_tokens (at least 100) fits the block into that many o200k tokens, leaving out whole items lowest \
priority first; decisions are never left out.";

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
Copilot's vote_memory does); a fact that matches no record, or several, is an error. Votes apply to Copilot records \
only: a markdown memory that turned out wrong is corrected with save_memory and removed with forget_memory. The reason says why, e.g. \
\"Moved to tests/snapshots/ in this branch\". Votes are counted in the record. A secret in the reason is stored \
as [REDACTED:<rule>].";

const CONTEXT_BOARD: &str = "The dynamic context board of the current git branch (Copilot CLI's context_board): at \
most 25 short named notes of reusable facts, recipes and lessons for the work on this branch. There is one board \
per branch: items added on one branch are not seen from another, and the board is local to this clone, never \
committed. Commands: get_board lists the items (src, name, description, read_count, count); get returns one item's \
full content (give its name; src, agent or user, only when an agent item and a user item share the name) and \
counts the read; add creates or overwrites one of your items (name in kebab-case, a one-line description, and the \
context); prune deletes one of your items by name. Items a person wrote (src user) can be read but never pruned by \
you. Add what the next agent on this branch would otherwise rediscover; prune what is stale. From 23 items on, \
prune to 18 or fewer. A secret is stored as [REDACTED:<rule>].";

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
        let mut tool_router = Self::tool_router();
        for route in tool_router.map.values_mut() {
            let mut schema = serde_json::Value::Object((*route.attr.input_schema).clone());
            args::plain_schema(&mut schema);
            if let serde_json::Value::Object(plain) = schema {
                route.attr.input_schema = Arc::new(plain);
            }
        }
        KbServer { repo: Arc::new(repo), turn: Arc::default(), tool_router }
    }

    #[tool(
        description = SAVE_MEMORY,
        annotations(title = "Save a memory", read_only_hint = false, destructive_hint = true, open_world_hint = false)
    )]
    async fn save_memory(
        &self,
        Parameters(args): Parameters<Checked<SaveMemoryArgs>>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self
            .call(args, move |args| {
                let SaveMemoryArgs { content, tags, memory_type, importance, agent } = args;
                repo.save(content, tags, memory_type.as_deref(), importance.as_deref(), agent)
            })
            .await)
    }

    #[tool(
        description = RECALL_MEMORY,
        annotations(title = "Recall memories", read_only_hint = true, open_world_hint = false)
    )]
    async fn recall_memory(
        &self,
        Parameters(args): Parameters<Checked<RecallMemoryArgs>>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.call(args, move |args| repo.recall(args)).await)
    }

    #[tool(description = LIST_MEMORIES, annotations(title = "List memories", read_only_hint = true, open_world_hint = false))]
    async fn list_memories(
        &self,
        Parameters(args): Parameters<Checked<ListMemoriesArgs>>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.call(args, move |args| repo.list(args)).await)
    }

    #[tool(description = GET_MEMORY, annotations(title = "Read a memory", read_only_hint = true, open_world_hint = false))]
    async fn get_memory(
        &self,
        Parameters(args): Parameters<Checked<GetMemoryArgs>>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.call(args, move |args| repo.get(&args.id)).await)
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
    async fn forget_memory(
        &self,
        Parameters(args): Parameters<Checked<ForgetMemoryArgs>>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.call(args, move |args| repo.forget(&args.id)).await)
    }

    #[tool(
        description = UPDATE_MEMORY,
        annotations(
            title = "Update a memory",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn update_memory(
        &self,
        Parameters(args): Parameters<Checked<UpdateMemoryArgs>>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.call(args, move |args| repo.update(&args.id, &args.content)).await)
    }

    #[tool(
        description = STORE_MEMORY,
        annotations(title = "Store a repository fact", read_only_hint = false, destructive_hint = true, open_world_hint = false)
    )]
    async fn store_memory(
        &self,
        Parameters(args): Parameters<Checked<StoreMemoryArgs>>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.call(args, move |args| repo.store(args)).await)
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
        Parameters(args): Parameters<Checked<ProposeDecisionArgs>>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.call(args, move |args| repo.propose_decision(args.text, args.kind)).await)
    }

    #[tool(
        description = GET_CONTEXT,
        annotations(title = "Get the compiled context", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_context(
        &self,
        Parameters(args): Parameters<Checked<GetContextArgs>>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.call(args, move |args| repo.get_context(args)).await)
    }

    #[tool(
        description = UPDATE_SESSION,
        annotations(title = "Update the session summary", read_only_hint = false, destructive_hint = true, open_world_hint = false)
    )]
    async fn update_session(
        &self,
        Parameters(args): Parameters<Checked<UpdateSessionArgs>>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.call(args, move |args| repo.update_session(&args.summary, args.append)).await)
    }

    #[tool(
        description = VOTE_MEMORY,
        annotations(title = "Vote on a Copilot memory", read_only_hint = false, destructive_hint = false, open_world_hint = false)
    )]
    async fn vote_memory(
        &self,
        Parameters(args): Parameters<Checked<VoteMemoryArgs>>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self
            .call(args, move |args| repo.vote(args.id.as_deref(), args.fact.as_deref(), args.direction, &args.reason))
            .await)
    }

    #[tool(description = AUDIT, annotations(title = "Audit memories", read_only_hint = true, open_world_hint = false))]
    async fn audit(&self, Parameters(args): Parameters<Checked<AuditArgs>>) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.call(args, move |args| repo.audit(args.ids)).await)
    }

    #[tool(
        description = CONTEXT_BOARD,
        annotations(title = "Context board", read_only_hint = false, destructive_hint = true, open_world_hint = false)
    )]
    async fn context_board(
        &self,
        Parameters(args): Parameters<Checked<ContextBoardArgs>>,
    ) -> Result<CallToolResult, McpError> {
        let repo = self.repo.clone();
        Ok(self.call(args, move |args| repo.context_board(args)).await)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for KbServer {
    /// Answers `initialize` as rmcp does, keeping the client's name: the author of what this
    /// session saves.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let _ = self.repo.client_name.set(request.client_info.name.clone());
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

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
            "The always-loaded context block, as kb context compiles it (what get_context returns with no \
             arguments): the team's active decisions, the global and project context files and the Copilot \
             records (Internal Knowledge), the scoped instructions that apply to every file, the memories \
             (Core Context, Hot Memories, high-importance Learnings) and the current session's notes",
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

    /// Runs one tool operation on its arguments; arguments that did not read are a tool error
    /// saying which one is wrong, and nothing runs.
    async fn call<T: Send + 'static>(
        &self,
        args: Checked<T>,
        f: impl FnOnce(T) -> anyhow::Result<Reply> + Send + 'static,
    ) -> CallToolResult {
        match args.0 {
            Ok(args) => {
                let repo = self.repo.clone();
                self.run(move || repo.tool(|| f(args))).await
            }
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        }
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

/// Serves MCP on stdin/stdout until the client closes stdin.
pub fn serve(repo: Server) -> anyhow::Result<()> {
    // One thread is plenty: requests come one line at a time, and file work runs in
    // `spawn_blocking`, where the store's lock keeps concurrent calls safe.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    live::start(&repo);
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
    use super::stdio::*;
    use super::*;

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
    fn a_line_that_is_no_json_rpc_message_gets_invalid_request_with_an_id_member() {
        use serde_json::json;
        let error = |line: &str| -> serde_json::Value {
            let text = invalid_request(&serde_json::from_str(line).unwrap()).expect("an error");
            serde_json::from_str(&text).unwrap()
        };
        for (line, id) in [("5", json!(null)), (r#"{"foo":1}"#, json!(null)), ("[]", json!(null))] {
            let e = error(line);
            assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (id, json!(-32600)), "{line}: {e}");
        }
        assert_eq!(error(r#"{"jsonrpc":"2.0","id":7}"#)["id"], 7, "the message's own id when it has one");
        assert_eq!(error(r#"{"jsonrpc":"1.0","id":"a","method":"x"}"#)["id"], "a");
        assert_eq!(error(r#"{"jsonrpc":"2.0","id":{"x":1},"method":5}"#)["id"], json!(null));
        for fine in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":"s1","result":{}}"#,
        ] {
            assert!(invalid_request(&serde_json::from_str(fine).unwrap()).is_none(), "{fine}");
        }
        // The SDK's own error without an id gets one; every other reply passes as it is.
        let patched = with_error_id(br#"{"jsonrpc":"2.0","error":{"code":-32600}}"#.to_vec());
        assert_eq!(patched, br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600}}"#);
        let reply = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601}}"#.to_vec();
        assert_eq!(with_error_id(reply.clone()), reply);
    }

    #[test]
    fn requests_count_until_answered_and_a_cancellation_gives_its_place_back() {
        use serde_json::json;
        assert_eq!(in_flight_change(&json!({"jsonrpc":"2.0","id":1,"method":"tools/list"})), InFlight::Request);
        assert_eq!(in_flight_change(&json!({"jsonrpc":"2.0","method":"notifications/initialized"})), InFlight::Neither);
        let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}});
        assert_eq!(in_flight_change(&cancel), InFlight::Cancelled);
        assert_eq!(in_flight_change(&json!({"jsonrpc":"2.0","id":"s1","result":{}})), InFlight::Neither);
        assert!(is_response(br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#));
        assert!(is_response(br#"{"jsonrpc":"2.0","id":"a","error":{"code":-32601}}"#));
        assert!(!is_response(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#));
        assert!(!is_response(br#"{"jsonrpc":"2.0","id":4,"method":"ping","params":{"result":1}}"#));
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
