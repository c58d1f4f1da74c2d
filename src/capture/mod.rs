//! Session capture (docs/hooks.md, The digest): what a coding agent's own transcript of a
//! finished session says (`transcript`: one tolerant reader per agent, into one shape) and the
//! checkpoint kb keeps of it (`checkpoint`: `.co-cli/state/checkpoints/<agent>-<session id>.md`,
//! local, never committed). It knows nothing of the spool, the inbox or proposals.

pub mod checkpoint;
pub mod transcript;
