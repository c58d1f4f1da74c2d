//! The command line: global flags, one variant per command, one Args type per command.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Keep a repository's agent knowledge as plain files: memories, Copilot records, context.
#[derive(Debug, Parser)]
#[command(name = "kb", version, about, max_term_width = 100)]
pub struct Cli {
    /// Repository root (default: $KB_ROOT, else the nearest folder with .co-cli/ or .git, else .)
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Print one JSON document on stdout instead of text
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create .co-cli/knowledge/ (context.md, memories/), gitignore .co-cli/cache/ and .co-cli/state/, union-merge the JSONL file
    #[command(after_help = "Examples:\n  kb init\n  kb init --agents claude,cursor,copilot\n  kb init --agents-md")]
    Init(InitArgs),
    /// Save a memory: dedup against recent ones, consolidate or create, decay old ones
    #[command(
        after_help = "Examples:\n  kb save \"We release from main only\" -t decision -t release\n  kb save \"Every PR needs a changelog line\" --type core_context --agent reviewer\n  echo \"User prefers pytest\" | kb save - -t preference\n  kb save --store copilot --subject build --citation Makefile:14 --reason \"CI uses it\" \"Run make test\""
    )]
    Save(SaveArgs),
    /// Find the memories, records, decisions and sessions that best answer QUERY, in your own words (--exact: every word must occur, newest first)
    #[command(
        after_help = "Examples:\n  kb recall how do we run the tests\n  kb recall \"what did we decide about pagination\" --store decision\n  kb recall nextest -n 10\n  kb recall --exact release branch"
    )]
    Recall(RecallArgs),
    /// List all memories by id (markdown memories, then Copilot records)
    #[command(
        after_help = "Examples:\n  kb list\n  kb list --store copilot\n  kb list --type core_context --agent reviewer\n  kb --json list"
    )]
    List(ListArgs),
    /// Show one memory in full
    #[command(after_help = "Examples:\n  kb show 7\n  kb show mem-1a2b3c4d")]
    Show(LookupArgs),
    /// Replace a memory's text (TEXT, or stdin with "-"); its frontmatter is kept and `updated` set
    #[command(
        after_help = "Examples:\n  kb update 7 \"CI runs cargo nextest, not cargo test\"\n  kb update 7 - < corrected.md"
    )]
    Update(UpdateArgs),
    /// Open a memory's file in $EDITOR (then $VISUAL, then vi); the edit is checked before it is kept
    #[command(after_help = "Examples:\n  kb edit 7\n  EDITOR=nano kb edit 7")]
    Edit(IdArgs),
    /// Delete a memory by its id (a markdown memory's frontmatter id, or a Copilot record's id)
    #[command(after_help = "Examples:\n  kb forget 7\n  kb forget --store copilot mem-1a2b3c4d")]
    Forget(LookupArgs),
    /// Protect a memory from decay (sets decay_protected: true)
    #[command(after_help = "Examples:\n  kb protect 7")]
    Protect(IdArgs),
    /// Remove a memory's decay protection
    #[command(after_help = "Examples:\n  kb unprotect 7")]
    Unprotect(IdArgs),
    /// Validate every knowledge file (and find what a git merge left); exit 1 when any has a problem
    #[command(after_help = "Examples:\n  kb check\n  kb check --fix\n  kb --json check")]
    Check(CheckArgs),
    /// Check that what the knowledge says still holds: cited paths, folders and lines, make/just/npm
    /// targets, cargo binaries/tests/features/packages, code symbols; and find near-identical
    /// memories that differ in a number or a path. Exit 1 when an item is stale or in conflict
    #[command(after_help = "Examples:\n  kb audit\n  kb audit 7 decision:2\n  kb audit --store md\n  kb --json audit")]
    Audit(AuditArgs),
    /// Show the effective settings and where each value came from; set or unset one
    #[command(
        after_help = "Examples:\n  kb config\n  kb config set context_targets '[\"AGENTS.md\",\"CLAUDE.md\"]'\n  kb config unset memory_max_count"
    )]
    Config(ConfigArgs),
    /// Count an up or down vote on a Copilot memory record
    #[command(after_help = "Examples:\n  kb vote mem-1a2b3c4d up --reason \"still true\"")]
    Vote(VoteArgs),
    /// Copy the markdown memories into another store (with dedup; running it twice adds nothing)
    #[command(after_help = "Examples:\n  kb export --to copilot --dry-run\n  kb export --to copilot")]
    Export(ExportArgs),
    /// Copy another store's records, or what an agent learned on its own, into the markdown memories (with dedup; running it twice adds nothing)
    #[command(
        after_help = "Examples:\n  kb import --from copilot\n  kb import --from claude --dry-run\n  kb import --from codex\n  kb import --from gemini --path ~/.gemini/GEMINI.md"
    )]
    Import(ImportArgs),
    /// Print the compiled context block: decisions, context files, records, instructions, memories, session
    #[command(
        after_help = "Hot Memories differ between kb context and the committed compile targets by design: heat comes\nfrom this clone's own access log (.co-cli/state/), so kb context includes them (unless --no-hot)\nand a compile target only with \"hot\": true.\n\nExamples:\n  kb context\n  kb context --agent reviewer --for src/api/routes.rs\n  kb context --max-tokens 8000 --wrap\n  kb context --decisions-only\n  kb --json context --agent reviewer"
    )]
    Context(ContextArgs),
    /// Write the context block into every file in context_targets and every file of the agents in agents
    #[command(after_help = "Examples:\n  kb compile\n  kb compile --check")]
    Compile(CompileArgs),
    /// Show what each agent of the setting agents reads from kb: files, sizes, limits, up to date or not
    #[command(after_help = "Examples:\n  kb agents\n  kb --json agents")]
    Agents,
    /// Keep the context targets current: recompile whenever a context source changes
    #[command(after_help = "Examples:\n  kb watch\n  kb watch --debounce 500")]
    Watch(WatchArgs),
    /// List the scoped instruction files (.github/instructions/**/*.instructions.md) and which apply
    #[command(
        after_help = "Examples:\n  kb instructions\n  kb instructions --for src/store/db.rs --for tests/store.rs\n  kb --json instructions --for web/app.tsx"
    )]
    Instructions(InstructionsArgs),
    /// Keep the current session's focus and running summary (.co-cli/knowledge/session.md)
    #[command(
        after_help = "Examples:\n  kb session start \"Fix the flaky parser tests\"\n  kb session update --append \"The race is in the lexer\"\n  kb session end --summary \"Fixed the race; parser tests pass\"\n  kb session show"
    )]
    Session(SessionArgs),
    /// Serve the knowledge to agents over the Model Context Protocol (stdio)
    #[command(after_help = "Examples:\n  claude mcp add kb -- kb mcp\n  kb mcp   # speaks MCP on stdin/stdout")]
    Mcp,
    /// Print a shell completion script
    #[command(
        after_help = "Examples:\n  kb completions bash > ~/.local/share/bash-completion/completions/kb\n  kb completions zsh > \"${fpath[1]}/_kb\"\n  kb completions fish > ~/.config/fish/completions/kb.fish"
    )]
    Completions(CompletionsArgs),
    /// Print the manual page (roff), or write one page per command into a folder
    #[command(
        after_help = "Examples:\n  kb manpage > ~/.local/share/man/man1/kb.1\n  kb manpage | man -l -\n  kb manpage --dir ~/.local/share/man/man1"
    )]
    Manpage(ManpageArgs),
    /// Record team decisions: add, list, show, supersede, archive, accept or reject one
    #[command(
        after_help = "Examples:\n  kb decision add \"Use PostgreSQL for all services\" --type architectural -t db\n  kb decision list --all\n  kb decision supersede 3 \"Use PostgreSQL 17\"\n  kb decision accept 4"
    )]
    Decision(DecisionArgs),
    /// Show how often each memory was recalled or shown lately (heat), and which are hot
    #[command(after_help = "Examples:\n  kb heat\n  kb heat --all\n  kb --json heat")]
    Heat(HeatArgs),
    /// Turn a memory into a scoped instruction file (.github/instructions/NAME.instructions.md)
    #[command(
        after_help = "Examples:\n  kb promote 7 --apply-to 'src/api/**/*.rs'\n  kb promote 12 --apply-to 'tests/**,**/*_test.rs' --name testing"
    )]
    Promote(PromoteArgs),
    /// The context board of this branch: a small scratchpad of reusable facts (at most 25 items)
    #[command(
        after_help = "Examples:\n  kb board\n  kb board add build-recipe --description \"How CI builds the workspace\" \"cargo nextest run --workspace\"\n  kb board get build-recipe\n  kb board remove build-recipe\n  kb board --branch main"
    )]
    Board(BoardArgs),
    /// Merge near-duplicate memories, drop stale downvoted Copilot records, prune the board
    #[command(
        after_help = "Examples:\n  kb consolidate --dry-run\n  kb consolidate\n  kb consolidate --summarizer 'llm -s \"Merge these notes into one\"'\n  kb undo"
    )]
    Consolidate(ConsolidateArgs),
    /// Undo the last command that changed or removed knowledge (--list shows what can be undone)
    #[command(after_help = "Examples:\n  kb undo\n  kb undo --list\n  kb --json undo --list\n  kb undo --drop")]
    Undo(UndoArgs),
    /// Review what agents proposed (.co-cli/knowledge/inbox/): list, show, accept or reject proposals
    #[command(
        after_help = "Examples:\n  kb inbox\n  kb inbox show P3\n  kb inbox accept P3 P4\n  kb inbox accept --all\n  kb inbox reject P5\n  kb undo   # takes an accept or a reject back"
    )]
    Inbox(InboxArgs),
    /// Run inside an agent's loop: kb hook session-start|prompt|pre-compact|session-end|stop --agent AGENT
    /// (reads the hook's JSON on stdin; always exits 0; problems go to .co-cli/state/hooks.log)
    #[command(
        after_help = "Examples:\n  echo '{\"session_id\":\"s1\",\"cwd\":\".\"}' | kb hook session-start --agent claude\n  echo '{\"session_id\":\"s1\",\"prompt\":\"how do we run the tests\"}' | kb hook prompt --agent codex"
    )]
    Hook(HookArgs),
    /// Install, check or remove kb's entries in each agent's own hook file (without a subcommand: where they stand)
    #[command(
        after_help = "Examples:\n  kb hooks\n  kb hooks install\n  kb hooks install claude codex --kb /usr/local/bin/kb\n  kb hooks install --check\n  kb hooks remove cursor"
    )]
    Hooks(HooksArgs),
    /// Read other kb repositories' knowledge (shared sources): add, remove, sync, propose (without a subcommand: list them)
    #[command(
        after_help = "Examples:\n  kb shared add org https://github.com/acme/knowledge.git --ref main\n  kb shared sync\n  kb shared\n  kb shared propose 12 org\n  kb shared remove org"
    )]
    Shared(SharedArgs),
    /// Compare the knowledge of two git revisions (default HEAD and the working tree): items added,
    /// removed and changed per store, and how each agent's compiled block changes
    #[command(
        after_help = "Examples:\n  kb diff\n  kb diff main\n  kb diff main HEAD --markdown\n  kb --json diff HEAD~1 HEAD\n  kb diff origin/main --exit-code"
    )]
    Diff(DiffArgs),
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The revision to compare from (a branch, tag or commit); default HEAD
    #[arg(value_name = "BASE")]
    pub base: Option<String>,
    /// The revision to compare to; default the working tree
    #[arg(value_name = "HEAD")]
    pub head: Option<String>,
    /// Print it as a pull-request comment (markdown)
    #[arg(long)]
    pub markdown: bool,
    /// Exit 1 when anything differs, as git diff --exit-code
    #[arg(long)]
    pub exit_code: bool,
}

#[derive(Debug, Args)]
pub struct InboxArgs {
    #[command(subcommand)]
    pub action: Option<InboxAction>,
}

#[derive(Debug, Subcommand)]
pub enum InboxAction {
    /// Show one proposal in full
    #[command(after_help = "Examples:\n  kb inbox show P3")]
    Show {
        /// The proposal's id (P3)
        id: String,
    },
    /// Save proposals through the normal save of their store (memory, Copilot record, active decision) and remove them
    #[command(after_help = "Examples:\n  kb inbox accept P3\n  kb inbox accept P3 P4\n  kb inbox accept --all")]
    Accept {
        /// The proposals' ids (P3)
        #[arg(required_unless_present = "all", value_name = "ID")]
        ids: Vec<String>,
        /// Every proposal in the inbox
        #[arg(long, conflicts_with = "ids")]
        all: bool,
    },
    /// Remove proposals without saving them
    #[command(after_help = "Examples:\n  kb inbox reject P5\n  kb inbox reject --all")]
    Reject {
        /// The proposals' ids (P3)
        #[arg(required_unless_present = "all", value_name = "ID")]
        ids: Vec<String>,
        /// Every proposal in the inbox
        #[arg(long, conflicts_with = "ids")]
        all: bool,
    },
    /// Read the agents' finished sessions the hooks spooled: a checkpoint each, a paragraph in the open session, proposals in the inbox
    #[command(
        after_help = "Examples:\n  kb inbox digest\n  kb inbox digest --session 1a2b3c4d --agent claude\n  kb inbox digest --summarizer 'llm -m haiku -s \"answer memory: lines\"'"
    )]
    Digest {
        /// Only this session (its id, or the start of it), digested again if it was
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Only this agent's sessions
        #[arg(long, value_name = "AGENT", value_parser = digest_agent)]
        agent: Option<crate::settings::Agent>,
        /// A command that reads the session as JSON on stdin and answers memory:/decision:/board NAME:/session: lines (default: the setting summarizer)
        #[arg(long, value_name = "CMD")]
        summarizer: Option<String>,
        /// Print nothing (how session-start runs it in the background)
        #[arg(long, hide = true)]
        quiet: bool,
    },
}

#[derive(Debug, Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    pub action: Option<HooksAction>,
}

#[derive(Debug, Subcommand)]
pub enum HooksAction {
    /// Write kb's hook entries into the agents' hook files (default: the agents of the setting agents that have hooks, else claude)
    #[command(
        after_help = "Examples:\n  kb hooks install\n  kb hooks install claude copilot cursor\n  kb hooks install codex --kb \"$(command -v kb)\"\n  kb hooks install --check"
    )]
    Install {
        /// The agents: claude, codex, copilot, cursor, gemini, cline
        #[arg(value_name = "AGENT", value_parser = hook_agent)]
        agents: Vec<crate::settings::Agent>,
        /// Write this path to kb into the hooks instead of `kb`, for agents started without kb on PATH (its file name must be kb)
        #[arg(long, value_name = "PATH", value_parser = kb_path)]
        kb: Option<PathBuf>,
        /// Write nothing: exit 1 when any agent's hooks are stale or missing (for CI)
        #[arg(long)]
        check: bool,
    },
    /// Take kb's hook entries out of the agents' hook files, and nothing else (default: every agent)
    #[command(after_help = "Examples:\n  kb hooks remove\n  kb hooks remove codex gemini")]
    Remove {
        /// The agents: claude, codex, copilot, cursor, gemini, cline
        #[arg(value_name = "AGENT", value_parser = hook_agent)]
        agents: Vec<crate::settings::Agent>,
    },
}

#[derive(Debug, Args)]
pub struct SharedArgs {
    #[command(subcommand)]
    pub action: Option<SharedAction>,
}

#[derive(Debug, Subcommand)]
pub enum SharedAction {
    /// Add a shared source to the project's settings (nothing is fetched until kb shared sync)
    #[command(
        after_help = "Examples:\n  kb shared add org https://github.com/acme/knowledge.git\n  kb shared add team git@github.com:acme/team-kb.git --ref stable\n  kb shared add local ../org-knowledge"
    )]
    Add {
        /// Its name, the prefix of its items' ids (org:12): 1 to 32 of a-z, 0-9 and -
        name: String,
        /// Where git finds it: https://, ssh://, git://, file://, host:path, or a plain path (read in place)
        url: String,
        /// The branch or tag to follow (default: the remote's default branch)
        #[arg(long = "ref", value_name = "REF")]
        reference: Option<String>,
    },
    /// Remove a shared source from the project's settings (its local copy stays)
    #[command(after_help = "Examples:\n  kb shared remove org")]
    Remove {
        /// The source's name
        name: String,
    },
    /// Clone or fetch the local copy of each shared source (the only kb command that uses the network)
    #[command(after_help = "Examples:\n  kb shared sync\n  kb shared sync org team")]
    Sync {
        /// The sources to sync (default: every one)
        #[arg(value_name = "NAME")]
        names: Vec<String>,
        /// Print nothing (for the background sync the session-start hook starts)
        #[arg(long)]
        quiet: bool,
    },
    /// Copy a project memory or Copilot record into a shared source, committed on a new branch of its copy for a pull request (kb never pushes)
    #[command(after_help = "Examples:\n  kb shared propose 12 org\n  kb shared propose mem-1a2b3c4d org")]
    Propose {
        /// The project memory's id (12) or Copilot record's id (mem-1a2b3c4d)
        id: String,
        /// The shared source's name
        name: String,
    },
}

/// Parses the agent of `kb inbox digest --agent`: one whose transcripts kb reads.
fn digest_agent(raw: &str) -> Result<crate::settings::Agent, String> {
    crate::ops::hooks::hooked_agent(raw)
}

/// Parses an agent of `kb hooks`: one that has hooks.
fn hook_agent(raw: &str) -> Result<crate::settings::Agent, String> {
    crate::ops::hooks::hooked_agent(raw)
}

/// Parses `--kb PATH`: made absolute, its file name `kb` (kb recognises its hook entries by the
/// program's name).
fn kb_path(raw: &str) -> Result<PathBuf, String> {
    let path = std::path::absolute(raw).map_err(|e| format!("{raw}: {e}"))?;
    if path.file_name() != Some(std::ffi::OsStr::new("kb")) {
        return Err(format!("{raw}: the file must be named kb (kb recognises its hook entries by that name)"));
    }
    Ok(path)
}

#[derive(Debug, Args)]
pub struct ConsolidateArgs {
    /// Print the plan and write nothing (no summarizer runs)
    #[arg(long)]
    pub dry_run: bool,
    /// A shell command that writes each merge group's body: JSON {"memories":[{"id","content","tags"}]} on stdin, the text on stdout (60 s limit)
    #[arg(long, value_name = "CMD")]
    pub summarizer: Option<String>,
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// List the journal's entries, newest first, instead of undoing one
    #[arg(long)]
    pub list: bool,
    /// Discard the last entry without restoring anything (for an entry that can no longer apply)
    #[arg(long, conflicts_with = "list")]
    pub drop: bool,
}

#[derive(Debug, Args)]
pub struct BoardArgs {
    /// The branch whose board to use (default: the checked-out branch)
    #[arg(long, global = true)]
    pub branch: Option<String>,
    #[command(subcommand)]
    pub action: Option<BoardAction>,
}

#[derive(Debug, Subcommand)]
pub enum BoardAction {
    /// Print an item's content (and count the read)
    Get {
        name: String,
        #[arg(long)]
        src: Option<Src>,
    },
    /// Create or overwrite a user item (CONTENT from the argument, or stdin with "-")
    Add {
        name: String,
        /// One line saying what the item is for (default: the content's first line, shortened)
        #[arg(long)]
        description: Option<String>,
        content: String,
        /// Store secrets as [REDACTED:<rule>] instead of refusing
        #[arg(long)]
        redact: bool,
    },
    /// Delete an item, whoever wrote it
    Remove {
        name: String,
        #[arg(long)]
        src: Option<Src>,
    },
}

#[derive(Debug, Args)]
pub struct HeatArgs {
    /// Every memory and record, cold ones too
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct PromoteArgs {
    /// The memory's id
    pub id: String,
    /// The glob(s) the instruction applies to, separated by commas (VS Code's applyTo)
    #[arg(long, value_name = "GLOB")]
    pub apply_to: String,
    /// The file's name, without .instructions.md (default: the memory's slug)
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long, help = "Write a memory that holds a secret with the secret replaced by [REDACTED:<rule>]")]
    pub redact: bool,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Audit only these memories, records or decisions (decision:N)
    #[arg(value_name = "ID")]
    pub ids: Vec<String>,
    /// Audit only this kind of item (repeatable; default: every kind)
    #[arg(long, value_name = "STORE", value_parser = Store::among(Store::AUDIT))]
    pub store: Vec<Store>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// First repair what a git merge left that kb can repair safely: memories sharing an id (the
    /// newer gets a new id), repeated JSONL lines, Copilot records sharing an id (merged)
    #[arg(long)]
    pub fix: bool,
}

#[derive(Debug, Args)]
pub struct DecisionArgs {
    #[command(subcommand)]
    pub action: DecisionAction,
}

#[derive(Debug, Subcommand)]
pub enum DecisionAction {
    /// Add an active decision (not added when an active or proposed one says nearly the same)
    #[command(
        after_help = "Examples:\n  kb decision add \"Use PostgreSQL for all services\" --type architectural -t db\n  echo \"Release from main only\" | kb decision add - --type process"
    )]
    Add {
        /// The decision, its first line the title; "-" reads it from stdin
        #[arg(value_name = "TEXT", required = true)]
        text: Vec<String>,
        /// What the decision is about
        #[arg(long = "type", value_enum, value_name = "TYPE")]
        kind: DecisionKind,
        /// A tag (repeatable)
        #[arg(short = 't', long = "tag", value_name = "TAG", allow_hyphen_values = true)]
        tag: Vec<String>,
        #[arg(long, help = "Store text that contains a secret with the secret replaced by [REDACTED:<rule>]")]
        redact: bool,
    },
    /// List the active and proposed decisions, oldest first
    #[command(
        after_help = "Examples:\n  kb decision list\n  kb decision list --all --type scope\n  kb --json decision list"
    )]
    List {
        /// Every decision, superseded, archived and rejected ones too
        #[arg(long)]
        all: bool,
        /// Only decisions of this type
        #[arg(long = "type", value_enum, value_name = "TYPE")]
        kind: Option<DecisionKind>,
    },
    /// Show one decision in full
    #[command(after_help = "Examples:\n  kb decision show 3")]
    Show {
        /// The decision's id
        id: String,
    },
    /// Replace an active decision with a new one; the old one becomes superseded
    #[command(
        after_help = "Examples:\n  kb decision supersede 3 \"Use PostgreSQL 17 for all services\"\n  kb decision supersede 3 - --type technical < new-decision.md"
    )]
    Supersede {
        /// The id of the active decision to replace
        id: String,
        /// The new decision; "-" reads it from stdin
        #[arg(value_name = "TEXT", required = true)]
        text: Vec<String>,
        /// The new decision's type (default: the old one's)
        #[arg(long = "type", value_enum, value_name = "TYPE")]
        kind: Option<DecisionKind>,
        /// A tag of the new decision (repeatable; default: the old one's tags)
        #[arg(short = 't', long = "tag", value_name = "TAG", allow_hyphen_values = true)]
        tag: Vec<String>,
        #[arg(long, help = "Store text that contains a secret with the secret replaced by [REDACTED:<rule>]")]
        redact: bool,
    },
    /// Archive an active or proposed decision
    #[command(after_help = "Examples:\n  kb decision archive 3")]
    Archive {
        /// The decision's id
        id: String,
    },
    /// Accept a proposed decision: it becomes active
    #[command(after_help = "Examples:\n  kb decision accept 4")]
    Accept {
        /// The decision's id
        id: String,
    },
    /// Reject a proposed decision
    #[command(after_help = "Examples:\n  kb decision reject 4")]
    Reject {
        /// The decision's id
        id: String,
    },
}

#[derive(Debug, Args)]
pub struct ManpageArgs {
    /// Write kb.1 and a page per command (kb-init.1, kb-session-start.1...) into DIR instead
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

pub use crate::kinds::{DecisionKind, Direction, Importance, MemoryType, Narrow, Src, Store};

/// Where `kb import` reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportSource {
    /// Copilot-style records in .github/copilot-memories.jsonl
    Copilot,
    /// Claude Code's auto memory (~/.claude/projects/<slug>/memory/) and .claude/agent-memory/
    Claude,
    /// Codex's memory handbook (~/.codex/memories/MEMORY.md), the blocks that apply to this root
    Codex,
    /// Gemini CLI's saved memories (GEMINI.md sections, ~/.gemini/tmp/*/memory/MEMORY.md)
    Gemini,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub action: Option<ConfigAction>,
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Set a setting in the project's .co-cli/settings.json (or the global one), validated
    #[command(
        after_help = "Examples:\n  kb config set memory_max_count 500\n  kb config set context_targets '[\"AGENTS.md\",\"CLAUDE.md\"]'\n  kb config set memory_decay_strategy cut --global"
    )]
    Set {
        /// The setting, e.g. memory_max_count
        key: String,
        /// Its value: JSON (500, ["AGENTS.md"]) or plain text (cut)
        value: String,
        /// Write the global settings file (<config>/settings.json) instead of the project's
        #[arg(long)]
        global: bool,
    },
    /// Remove a setting from the project's .co-cli/settings.json (or the global one)
    Unset {
        /// The setting, e.g. memory_max_count
        key: String,
        /// Edit the global settings file instead of the project's
        #[arg(long)]
        global: bool,
    },
}

#[derive(Debug, Args)]
pub struct SessionArgs {
    #[command(subcommand)]
    pub action: SessionAction,
}

#[derive(Debug, Subcommand)]
pub enum SessionAction {
    /// Open a session with its focus (exit 1 when one is already open)
    #[command(
        after_help = "Examples:\n  kb session start \"Fix the flaky parser tests\"\n  kb session start Migrate the CI to nextest"
    )]
    Start {
        /// What this session is about, one line (several words are joined by spaces)
        #[arg(value_name = "FOCUS", required = true)]
        focus: Vec<String>,
        #[arg(long, help = "Store a focus that contains a secret with the secret replaced by [REDACTED:<rule>]")]
        redact: bool,
    },
    /// Replace the open session's running summary, or append a paragraph to it
    #[command(
        after_help = "Examples:\n  kb session update \"Parser done; lexer next\"\n  kb session update --append \"The race is in the lexer\"\n  git log -1 --format=%B | kb session update --append -"
    )]
    Update {
        /// The summary; "-" reads it from stdin (several words are joined by spaces)
        #[arg(value_name = "TEXT", required = true)]
        text: Vec<String>,
        /// Add TEXT as a new paragraph after the running summary instead of replacing it
        #[arg(long)]
        append: bool,
        #[arg(long, help = "Store text that contains a secret with the secret replaced by [REDACTED:<rule>]")]
        redact: bool,
    },
    /// End the open session: move it to .co-cli/knowledge/sessions/ with `ended` set
    #[command(
        after_help = "Examples:\n  kb session end\n  kb session end --summary \"Fixed the race; parser tests pass\""
    )]
    End {
        /// The final summary, replacing the running one; "-" reads it from stdin
        #[arg(long, value_name = "TEXT")]
        summary: Option<String>,
        #[arg(long, help = "Store a summary that contains a secret with the secret replaced by [REDACTED:<rule>]")]
        redact: bool,
    },
    /// Show the open session (JSON: {"session":null} when none is open)
    #[command(after_help = "Examples:\n  kb session show\n  kb --json session show")]
    Show,
    /// List the agent sessions kb captured (checkpoints from kb inbox digest), newest first
    #[command(after_help = "Examples:\n  kb session log\n  kb session log --touching src/api/routes.rs")]
    Log {
        /// Only the sessions that changed this file (or a file under this folder)
        #[arg(long, value_name = "PATH")]
        touching: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Also add the context block to AGENTS.md (created when missing) and register it as a
    /// compile target in .co-cli/settings.json
    #[arg(long)]
    pub agents_md: bool,
    /// Write the knowledge into these agents' own files on every compile (sets `agents` in
    /// .co-cli/settings.json): claude, codex, copilot, cursor, gemini, windsurf, kiro, cline
    #[arg(long, value_name = "AGENT,...", value_parser = agent_list)]
    pub agents: Option<AgentList>,
}

/// The agents of `kb init --agents`.
#[derive(Debug, Clone)]
pub struct AgentList(pub Vec<crate::settings::Agent>);

/// Parses `--agents claude,cursor`: comma-separated agent names, each known.
fn agent_list(raw: &str) -> Result<AgentList, String> {
    let list = crate::settings::parse_agents(&serde_json::Value::String(raw.to_string()))
        .map_err(|why| format!("{why}: the agents are {}", crate::settings::Agent::names()))?;
    if list.is_empty() {
        return Err(format!("no agent named: the agents are {}", crate::settings::Agent::names()));
    }
    Ok(AgentList(list))
}

#[derive(Debug, Args)]
pub struct CompileArgs {
    /// Write nothing: list each target or agent file that is missing, stale or orphaned, with a
    /// short diff, and exit 1 when there is any (for CI and a pre-commit hook)
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Args)]
pub struct ContextArgs {
    /// Compile for this agent: its core-context memories and learnings, and the shared ones
    #[arg(long, value_name = "NAME", value_parser = agent_name)]
    pub agent: Option<String>,
    /// A file being worked on, relative to the root or absolute inside it (repeatable): scoped
    /// instructions whose applyTo matches it go in
    #[arg(long = "for", value_name = "PATH")]
    pub for_paths: Vec<PathBuf>,
    /// Only the Boundaries and Decisions section (for child workers)
    #[arg(long)]
    pub decisions_only: bool,
    /// Add the context board of the current branch
    #[arg(long)]
    pub board: bool,
    /// Leave out the Hot Memories (local heat: compile targets leave them out unless "hot": true)
    #[arg(long)]
    pub no_hot: bool,
    /// Fit the block into N o200k tokens (at least 100), removing whole items lowest priority first
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(i64::from(crate::settings::MIN_MAX_TOKENS)..))]
    pub max_tokens: Option<u32>,
    /// Put the whole block inside <system-reminder> ... </system-reminder>
    #[arg(long)]
    pub wrap: bool,
}

/// Parses an agent name (no `/`, `\\`, newline or other control character; not blank).
fn agent_name(raw: &str) -> Result<String, String> {
    crate::format::text::check_agent(raw).map(|()| raw.to_string())
}

#[derive(Debug, Args)]
pub struct InstructionsArgs {
    /// A file being worked on, relative to the root or absolute inside it (repeatable): an
    /// instruction applies when one of its applyTo globs matches one of these paths
    #[arg(long = "for", value_name = "PATH")]
    pub for_paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Wait this long after the last change before recompiling
    #[arg(long, value_name = "MS", default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub debounce: u64,
    /// Compile once and exit
    #[arg(long)]
    pub once: bool,
}

#[derive(Debug, Args)]
pub struct SaveArgs {
    /// The memory text; "-" (or nothing, with piped input) reads it from stdin
    #[arg(value_name = "TEXT")]
    pub text: Vec<String>,
    /// A tag (repeatable)
    #[arg(short = 't', long = "tag", value_name = "TAG", allow_hyphen_values = true)]
    pub tag: Vec<String>,
    /// Comma-separated tags
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub tags: Vec<String>,
    /// Report what would happen and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Save a new memory even when a recent one is similar (no consolidation)
    #[arg(long)]
    pub no_dedup: bool,
    /// The memory's type (default: none written, read as learning); core_context is saved protected
    #[arg(long = "type", value_enum, value_name = "TYPE")]
    pub memory_type: Option<MemoryType>,
    /// The memory's importance (default: none written, read as medium); a consolidation keeps the higher
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub importance: Option<Importance>,
    /// The agent the memory belongs to (default: shared by every agent); dedup stays within it
    #[arg(long, value_name = "NAME", value_parser = agent_name)]
    pub agent: Option<String>,
    // The help is an attribute, not a doc comment: rustdoc would read `[REDACTED:<rule>]` as a
    // link and an HTML tag.
    #[arg(long, help = "Store text that contains a secret with the secret replaced by [REDACTED:<rule>]")]
    pub redact: bool,
    /// The store to save into (default: md)
    #[arg(long, value_name = "STORE", value_parser = Store::among(Store::MEMORY))]
    pub store: Option<Store>,
    /// The record's subject, a topic label such as "build" (--store copilot)
    #[arg(long, value_name = "S", required_if_eq("store", "copilot"))]
    pub subject: Option<String>,
    /// A citation backing the fact, such as src/main.rs:12 (--store copilot; repeatable)
    #[arg(long = "citation", value_name = "C")]
    pub citation: Vec<String>,
    /// Why the fact matters (--store copilot)
    #[arg(long, value_name = "R", required_if_eq("store", "copilot"))]
    pub reason: Option<String>,
    /// The record's category, such as "general" (--store copilot)
    #[arg(long, value_name = "C")]
    pub category: Option<String>,
}

#[derive(Debug, Args)]
pub struct RecallArgs {
    /// Words to look for, as one argument or several. Ranked: the results share at least one word
    /// (or its stem: "tests" finds "testing"), the best first; with --exact every word must be in a
    /// memory's text or tags
    #[arg(required = true, value_name = "QUERY")]
    pub query: Vec<String>,
    /// Return at most N results (N ≥ 1)
    #[arg(short = 'n', long = "max-results", default_value_t = 5, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_results: u64,
    /// Search only this kind of knowledge (md, copilot, decision, session), only the shared
    /// sources (shared), or only one shared source by its name (repeatable; default: everything)
    #[arg(long, value_name = "STORE", value_parser = Narrow::parse)]
    pub store: Vec<Narrow>,
    /// co-cli's rule: every word a case-insensitive substring of a memory's text or a tag, newest
    /// first; markdown memories and Copilot records only
    #[arg(long)]
    pub exact: bool,
    /// Check each result's cited paths and make/just/npm targets now: "verified" is ok, stale or
    /// unverified (no such reference)
    #[arg(long)]
    pub verify: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// List only this store (default: both; --type, --importance and --agent list the markdown
    /// memories only)
    #[arg(long, value_name = "STORE", value_parser = Store::among(Store::MEMORY))]
    pub store: Option<Store>,
    /// Only memories of this type (a memory without one is a learning)
    #[arg(long = "type", value_enum, value_name = "TYPE")]
    pub memory_type: Option<MemoryType>,
    /// Only memories of this importance (a memory without one is medium)
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub importance: Option<Importance>,
    /// Only memories that name this agent
    #[arg(long, value_name = "NAME", value_parser = agent_name)]
    pub agent: Option<String>,
    /// Only memories and records whose created_by starts with PREFIX (--by agent: lists what
    /// agents wrote)
    #[arg(long, value_name = "PREFIX")]
    pub by: Option<String>,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// The memory's id (an integer)
    pub id: String,
    /// The new text: one argument, or several joined by spaces; "-" reads stdin
    #[arg(required = true, num_args = 1.., value_name = "TEXT|-")]
    pub text: Vec<String>,
    /// Store text that contains a secret with the secret replaced by [REDACTED:<rule>]
    #[arg(long)]
    pub redact: bool,
}

#[derive(Debug, Args)]
pub struct LookupArgs {
    /// The memory's id: an integer for a markdown memory, a string such as mem-1a2b3c4d for a
    /// Copilot record
    pub id: String,
    /// Look only in this store (default: an integer id is tried as a markdown memory first)
    #[arg(long, value_name = "STORE", value_parser = Store::among(Store::MEMORY))]
    pub store: Option<Store>,
}

#[derive(Debug, Args)]
pub struct VoteArgs {
    /// The Copilot record's id
    pub id: String,
    /// up: the fact is useful; down: it is wrong or outdated
    #[arg(value_enum)]
    pub direction: Direction,
    /// Why (kept in the record's last_vote)
    #[arg(long, value_name = "R")]
    pub reason: String,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The store to export the markdown memories to
    #[arg(long, value_name = "STORE", value_parser = Store::among(Store::EXPORT))]
    pub to: Store,
    /// Report what would happen and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Where to import from: the Copilot records, or what an agent learned on its own about this
    /// repository (Claude Code's auto memory, Codex's and Gemini CLI's memories)
    #[arg(long, value_enum, value_name = "SOURCE")]
    pub from: ImportSource,
    /// Read this folder or file instead of the agent's own place (claude, codex, gemini)
    #[arg(long, value_name = "P")]
    pub path: Option<PathBuf>,
    /// Report what would happen and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Also import a person's own memories (Claude's type user or scoped to the person, Gemini's
    /// global ~/.gemini/GEMINI.md), which otherwise stay home (claude, gemini)
    #[arg(long)]
    pub personal: bool,
    /// Store a fact that holds a secret with the secret replaced by [REDACTED:<rule>] instead of
    /// skipping it (claude, codex, gemini)
    #[arg(long)]
    pub redact: bool,
}

#[derive(Debug, Args)]
pub struct IdArgs {
    /// The memory's id (its frontmatter `id`)
    pub id: String,
}

/// `kb hook`: the words are read by kb itself, never by clap, so no argument makes it fail the
/// agent (a hook that exits 2 blocks Claude Code's prompt).
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The verb, then --agent AGENT
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0.., value_name = "VERB --agent AGENT")]
    pub words: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }
}
