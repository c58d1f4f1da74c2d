//! Black-box tests: run the `kb` binary in a temporary repository.

mod common;
mod compile;
mod context;
mod watch;
