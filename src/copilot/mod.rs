//! The Copilot-style record store: `.github/copilot-memories.jsonl` (docs/formats.md, A Copilot record).
//!
//! One JSON object per line: `{"id","subject","fact","citations","reason","category"?,
//! "source":{"agent":"kb"},"created",...}`. The same lifecycle as the markdown store: the secret
//! filter on every field, dedup-on-write on `fact` within a subject with the markdown store's
//! scorer and threshold, consolidation that keeps the id, votes, forget. Every write holds the
//! repository lock and rewrites the whole file atomically, keeping untouched lines byte for byte
//! (`jsonl`); reading is tolerant (`record`). No printing and no clap here.
//!
//! Identity: a record is addressed by its `id`. A record without one (another tool may drop or
//! never write ids) gets the id kb would have given it, `mem-` + 8 hex digits of a hash of its
//! subject and fact, so it stays addressable by (subject, fact), and a kb record whose id another
//! tool stripped keeps the same id. kb writes that id into the record the first time it changes it.

pub mod jsonl;
pub mod merge;
pub mod record;
pub mod records;
pub mod store;

pub use jsonl::JsonlFile;
pub use records::{Query, Record, Records, draw_id};
pub use store::{
    Draft, RecordRequest, RecordSaveOutcome, RecordStore, VoteTarget, edit_line, json_str, screen, vote_reason,
};
