//! The markdown memory store (`.co-cli/knowledge/memories/*.md`, SPEC §2–§3): one file per
//! memory (`file`), the cached scanner (`index`), and the operations that change the folder
//! (`store`: save with dedup, consolidation and decay; forget; protect).

pub mod cache;
pub mod decay;
pub mod dedup;
pub mod file;
pub mod index;
pub mod store;
