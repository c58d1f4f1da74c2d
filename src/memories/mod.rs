//! The markdown memory store (`.co-cli/knowledge/memories/*.md`): one file per memory (`file`),
//! the cached scanner (`index`), and the operations that change the folder (`store`: save with
//! dedup, consolidation and decay; forget; protect). The file format is in docs/formats.md (A
//! memory), the rules in docs/behaviour.md (Memories).

pub mod cache;
pub mod decay;
pub mod dedup;
pub mod file;
pub mod index;
pub mod store;
