//! kb: a repository's agent knowledge as plain files.
//!
//! The library holds every domain module; `commands` turns them into the command line, and
//! `main.rs` only maps the outcome to an exit code.

pub mod cli;
pub mod commands;
pub mod context;
pub mod copilot;
pub mod error;
pub mod format;
pub mod fsio;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod memories;
pub mod ops;
pub mod output;
pub mod paths;
pub mod repo;
pub mod secrets;
pub mod settings;

pub use format::similarity;
