//! Text formats and the pure functions over them: YAML frontmatter and kb's YAML writer
//! (`frontmatter`), PyYAML's YAML 1.1 resolver (`yaml11`), timestamps as co-cli (the Python tool
//! whose file layout kb keeps) writes them (`time`), RapidFuzz's similarity (`similarity`) and
//! near-duplicate groups by it (`neardup`), surgical JSON edits (`jsonedit`), an ordered JSON tree
//! written back in a file's own layout (`jsonorder`), what a git merge leaves in a file (`merge`), where a markdown text may be cut and its comment blocks (`markdown`) and the binary encoding of the caches (`binary`).
//! Nothing here touches the file system.

pub mod binary;
pub mod diff;
pub mod frontmatter;
pub mod jsonedit;
pub mod jsonorder;
pub mod markdown;
pub mod merge;
pub mod neardup;
pub mod salient;
pub mod similarity;
pub mod text;
pub mod time;
pub mod tokens;
pub mod yaml11;
