//! `kb mcp`: serve the knowledge base to agents over MCP on stdio (see `crate::mcp`).
//!
//! The root is resolved once, at start, by the same rules as every command; the settings are
//! read again on each call. Built without the `mcp` feature, the command says so and exits 1.

use super::Ctx;
use anyhow::Result;
use std::process::ExitCode;

#[cfg(feature = "mcp")]
pub fn run(ctx: &Ctx) -> Result<ExitCode> {
    // A pinned clock (tests) stays pinned for the whole session; otherwise each call reads the time.
    let pinned_now = crate::repo::env("KB_NOW").filter(|v| !v.is_empty()).map(|_| ctx.now);
    crate::mcp::serve(crate::mcp::Server {
        layout: ctx.layout.clone(),
        found: ctx.found,
        pinned_now,
        style: ctx.style,
    })?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "mcp"))]
pub fn run(_ctx: &Ctx) -> Result<ExitCode> {
    anyhow::bail!("this kb was built without MCP support: rebuild it with the `mcp` feature (on by default)")
}
