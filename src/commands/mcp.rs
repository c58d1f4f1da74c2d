//! `kb mcp`: serve the knowledge base to agents over MCP on stdio (see `crate::mcp`).
//!
//! The root is resolved once, at start, by the same rules as every command; the settings are
//! read again on each call. Built without the `mcp` feature, the command says so and exits 1.
//!
//! Run by hand on a terminal, it says on stderr what it is for (`HINT`) and serves as usual;
//! started by an agent (stdin a pipe), it says nothing.

use super::Ctx;
use anyhow::Result;
use std::process::ExitCode;

/// What `kb mcp` says on stderr when stdin is a terminal: a person typed it, most likely to see
/// what it does. One line; the server still runs, and Ctrl-D (end of input) ends it.
#[cfg(feature = "mcp")]
const HINT: &str = "kb mcp speaks MCP on stdin/stdout; register it with your agent: \
claude mcp add kb -- kb mcp (see docs/mcp.md). Ctrl-D ends it.";

#[cfg(feature = "mcp")]
pub fn run(ctx: &Ctx) -> Result<ExitCode> {
    use std::io::{IsTerminal as _, Write as _};
    if std::io::stdin().is_terminal() {
        // One write, so the line arrives whole; a closed stderr is no reason not to serve.
        let _ = std::io::stderr().write_all(format!("{HINT}\n").as_bytes());
    }
    // A pinned clock (tests) stays pinned for the whole session; otherwise each call reads the time.
    let pinned_now = crate::settings::env("KB_NOW").map(|_| ctx.now);
    crate::mcp::serve(crate::mcp::Server::new(ctx.layout.clone(), ctx.found, pinned_now, ctx.style, ctx.env.clone()))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "mcp"))]
pub fn run(_ctx: &Ctx) -> Result<ExitCode> {
    anyhow::bail!("this kb was built without MCP support: rebuild it with the `mcp` feature (on by default)")
}
