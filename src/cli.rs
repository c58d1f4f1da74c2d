//! The command line: global flags, one variant per command, one Args type per command.

use clap::{Args, Parser, Subcommand};
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
    /// Find memories whose text or tags contain QUERY (case-insensitive), newest first
    Recall(RecallArgs),
    /// List all memories by id
    List,
    /// Show one memory in full
    Show(IdArgs),
    /// Delete a memory by its frontmatter id
    Forget(IdArgs),
    /// Protect a memory from decay (sets decay_protected: true)
    Protect(IdArgs),
    /// Remove a memory's decay protection
    Unprotect(IdArgs),
    /// Validate every knowledge file; exit 1 when any has a problem
    Check,
    /// Show the effective settings and where each value came from
    Config,
    /// Print the always-loaded context block (global, project, repository memories)
    Context(ContextArgs),
    /// Write the context block into every file in context_targets
    Compile,
    /// Keep the context targets current: recompile whenever a context source changes
    Watch(WatchArgs),
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
    #[arg(short = 't', long = "tag", value_name = "TAG")]
    pub tag: Vec<String>,
    /// Comma-separated tags
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub tags: Vec<String>,
    /// Report what would happen and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Store text that contains a secret with the secret replaced by [REDACTED:<rule>]
    #[arg(long)]
    pub redact: bool,
}

#[derive(Debug, Args)]
pub struct RecallArgs {
    /// Text to look for (one substring, not separate words)
    pub query: String,
    /// Return at most N memories
    #[arg(short = 'n', long = "max-results", default_value_t = 5, value_name = "N")]
    pub max_results: usize,
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
