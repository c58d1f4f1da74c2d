//! kb: a repository's agent knowledge as plain files.
//!
//! The library holds every domain module; `commands` turns them into the command line, and
//! `main.rs` only maps the outcome to an exit code.

pub mod cli;
pub mod commands;
pub mod compile;
pub mod context;
pub mod convert;
pub mod copilot;
pub mod frontmatter;
pub mod fsio;
pub mod index;
pub mod jsonedit;
pub mod markdown;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod memory;
pub mod output;
pub mod paths;
pub mod secrets;
pub mod settings;
pub mod similarity;
pub mod store;
pub mod time;
pub mod watch;
pub mod yaml11;
