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
    /// Create .co-cli/knowledge/ (context.md, memories/) and gitignore .co-cli/cache/
    Init(InitArgs),
    /// Save a memory: dedup against recent ones, consolidate or create, decay old ones
    Save(SaveArgs),
    /// Find memories whose text or tags (a record's subject, fact, reason, citations) contain QUERY, newest first
    Recall(RecallArgs),
    /// List all memories by id (markdown memories, then Copilot records)
    List(ListArgs),
    /// Show one memory in full
    Show(LookupArgs),
    /// Delete a memory by its id (a markdown memory's frontmatter id, or a Copilot record's id)
    Forget(LookupArgs),
    /// Protect a memory from decay (sets decay_protected: true)
    Protect(IdArgs),
    /// Remove a memory's decay protection
    Unprotect(IdArgs),
    /// Validate every knowledge file; exit 1 when any has a problem
    Check,
    /// Show the effective settings and where each value came from
    Config,
    /// Count an up or down vote on a Copilot memory record
    Vote(VoteArgs),
    /// Copy the markdown memories into another store (with dedup; running it twice adds nothing)
    Export(ExportArgs),
    /// Copy another store's records into the markdown memories (with dedup; running it twice adds nothing)
    Import(ImportArgs),
    /// Print the always-loaded context block (global, project, repository memories)
    Context(ContextArgs),
    /// Write the context block into every file in context_targets
    Compile,
    /// Keep the context targets current: recompile whenever a context source changes
    Watch(WatchArgs),
    /// Serve the knowledge to agents over the Model Context Protocol (stdio)
    Mcp,
}

/// A memory store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StoreKind {
    /// Markdown memories in .co-cli/knowledge/memories/
    #[value(alias = "markdown")]
    Md,
    /// Copilot-style records in .github/copilot-memories.jsonl
    Copilot,
}

/// A store other than the markdown one, for export and import.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OtherStore {
    /// Copilot-style records in .github/copilot-memories.jsonl
    Copilot,
}

/// A vote's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VoteDirection {
    #[value(alias = "upvote")]
    Up,
    #[value(alias = "downvote")]
    Down,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Also add the context block to AGENTS.md (created when missing) and register it as a
    /// compile target in .co-cli/settings.json
    #[arg(long)]
    pub agents_md: bool,
}

#[derive(Debug, Args)]
pub struct ContextArgs {
    /// Put the whole block inside <system-reminder> ... </system-reminder>
    #[arg(long)]
    pub wrap: bool,
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
    // The help is an attribute, not a doc comment: rustdoc would read `[REDACTED:<rule>]` as a
    // link and an HTML tag.
    #[arg(long, help = "Store text that contains a secret with the secret replaced by [REDACTED:<rule>]")]
    pub redact: bool,
    /// The store to save into (default: md)
    #[arg(long, value_enum, value_name = "STORE")]
    pub store: Option<StoreKind>,
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
    /// Words to look for: a memory matches when every word is in its text or one of its tags
    pub query: String,
    /// Return at most N memories (N ≥ 1)
    #[arg(short = 'n', long = "max-results", default_value_t = 5, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_results: u64,
    /// Search only this store (default: both)
    #[arg(long, value_enum, value_name = "STORE")]
    pub store: Option<StoreKind>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// List only this store (default: both)
    #[arg(long, value_enum, value_name = "STORE")]
    pub store: Option<StoreKind>,
}

#[derive(Debug, Args)]
pub struct LookupArgs {
    /// The memory's id: an integer for a markdown memory, a string such as mem-1a2b3c4d for a
    /// Copilot record
    pub id: String,
    /// Look only in this store (default: an integer id is tried as a markdown memory first)
    #[arg(long, value_enum, value_name = "STORE")]
    pub store: Option<StoreKind>,
}

#[derive(Debug, Args)]
pub struct VoteArgs {
    /// The Copilot record's id
    pub id: String,
    /// up: the fact is useful; down: it is wrong or outdated
    #[arg(value_enum)]
    pub direction: VoteDirection,
    /// Why (kept in the record's last_vote)
    #[arg(long, value_name = "R")]
    pub reason: String,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The store to export the markdown memories to
    #[arg(long, value_enum, value_name = "STORE")]
    pub to: OtherStore,
    /// Report what would happen and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The store to import into the markdown memories
    #[arg(long, value_enum, value_name = "STORE")]
    pub from: OtherStore,
    /// Report what would happen and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct IdArgs {
    /// The memory's id (its frontmatter `id`)
    pub id: String,
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
