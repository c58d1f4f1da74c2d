//! The always-loaded context (docs/formats.md, The compiled block): the layers of one request
//! gathered from a [`Knowledge`](crate::knowledge::Knowledge), fitted into a token budget or the
//! block's byte limits (`block`, `layers`), written into compile targets and managed blocks
//! (`targets`), and each agent's own files (`agents`). It reads knowledge only through
//! `crate::knowledge` and writes none; where a target is written is `ops::compile`'s business.

pub mod agents;
pub mod block;
pub mod layers;
pub mod targets;

pub use crate::knowledge::context_files::{
    HEADER, RepoMemory, SIZE_LIMIT, SIZE_TARGET, SectionKind, conflict, file_marker, first_marker, record_line,
};
pub use block::{Block, BlockRequest, build};
