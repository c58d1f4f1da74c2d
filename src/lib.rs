//! kb: a repository's agent knowledge as plain files.
//!
//! The modules are crate-private: `commands` (the command line) and `mcp` (the MCP server) call
//! `ops` (the use-cases), which call the stores (`memories`, `copilot`), the context compiler
//! (`context`) and the shared pieces (`repo`, `settings`, `format`, `fsio`, `paths`, `secrets`,
//! `output`, `error`). `docs/architecture.md` draws the layers. The few items below are public
//! for `main.rs`, the benchmarks and the tests.

// The warm server's own code (live indexes, revalidation) is called only by `kb mcp`: a build
// without the `mcp` feature leaves it unused rather than gating each piece.
#![cfg_attr(not(feature = "mcp"), allow(dead_code))]

pub(crate) mod audit;
pub(crate) mod board;
pub(crate) mod capture;
pub(crate) mod cli;
pub(crate) mod commands;
pub(crate) mod context;
pub(crate) mod copilot;
pub(crate) mod decisions;
pub(crate) mod error;
pub(crate) mod format;
pub(crate) mod fsio;
pub(crate) mod git;
pub(crate) mod heap;
pub(crate) mod heat;
pub(crate) mod hooks;
pub(crate) mod inbox;
pub(crate) mod instructions;
pub(crate) mod journal;
pub(crate) mod kinds;
pub(crate) mod knowledge;
#[cfg(feature = "mcp")]
pub(crate) mod mcp;
pub(crate) mod memories;
pub(crate) mod ops;
pub(crate) mod output;
pub(crate) mod paths;
pub(crate) mod provenance;
pub(crate) mod repo;
pub(crate) mod revision;
pub(crate) mod search;
pub(crate) mod secrets;
pub(crate) mod session;
pub(crate) mod settings;
pub(crate) mod shared;

/// Runs kb with the process's arguments and environment; returns its exit status.
pub use commands::main;
/// Builds the default block of the repository at `layout` (benchmarks): no agent, no `--for`,
/// the settings' budget.
pub fn build_context(layout: &Layout, wrap: bool) -> anyhow::Result<context::Block> {
    let repo = repo::Repo::open(layout.clone(), format::time::now(), settings::Environment::from_process())?;
    let knowledge = knowledge::Knowledge::read(&repo);
    Ok(context::build(
        &knowledge,
        &settings::BlockRequest { wrap, hot: true, global: true, session: true, ..Default::default() },
    ))
}
/// Writes the block into compile targets (benchmarks).
pub use context::targets::write_all as write_targets;
/// RapidFuzz's similarity, as dedup uses it (parity tests).
pub use format::similarity;
/// A memory file's name and text, as `kb save` writes them (benchmarks).
pub use format::text::file_name as memory_file_name;
/// `o200k_base` token count, as tiktoken counts (benchmarks).
pub use format::tokens::count as count_tokens;
pub use memories::file::new_memory_file;
/// Where a repository's files are.
pub use paths::Layout;
/// Ranked recall's tokens, stop words and stemmer (the recall benchmark checks its paraphrase
/// questions with them).
pub use search::tokens as recall_tokens;
/// The default compile target.
pub use settings::DEFAULT_CONTEXT_TARGET;
