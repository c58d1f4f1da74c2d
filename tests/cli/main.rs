//! Black-box tests: run the `kb` binary in a temporary repository.

mod bad_input;
mod cache;
mod check;
mod common;
mod compile;
mod concurrency;
mod context;
mod copilot;
mod decay;
mod decisions;
mod dedup;
mod first_hour;
mod hostile;
mod forget_protect;
mod fresh_clone;
mod init_config;
mod mcp;
mod racy_cache;
mod read;
mod save;
mod sealed;
mod secrets;
mod temp_files;
mod watch;
mod yaml_compat;
