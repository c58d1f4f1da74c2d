//! The heat cache, `.co-cli/cache/heat.idx`: the tally of the access log up to a line break, and
//! where that is in the log, so that a command reads only the lines appended since (the log only
//! grows: `record` appends whole lines).
//!
//! Like the memory index, it is derived state, used only when intact (a checksum) and when the
//! log is still the one it was built from: the same inode, at least as long, and the same bytes
//! just before the cached position (so a log rewritten, truncated or replaced is read whole
//! again). Deleting it only costs time.

use super::Store;
use super::log::{IdTally, Tally};
use crate::format::binary::{Checksummed, Reader, verified};
use rustc_hash::FxHashMap;
use std::fs::Metadata;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

const MAGIC: &[u8; 8] = b"kbheat\0\0";
const FORMAT: u32 = 1;
/// How many bytes before the cached position must match.
pub const CHECK_BYTES: u64 = 4096;

/// Where a cached tally ends in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub dev: u64,
    pub ino: u64,
    /// Bytes of the log tallied: complete lines only.
    pub consumed: u64,
    /// Lines of the log tallied.
    pub lines: u64,
    /// The xxh3 of the `CHECK_BYTES` (or fewer) bytes before `consumed`.
    pub check: u64,
}

impl Position {
    /// The position of `consumed` bytes and `lines` lines into the log `meta` describes, whose
    /// bytes before `consumed` end with `before`.
    pub fn new(meta: &Metadata, consumed: u64, lines: u64, before: &[u8]) -> Position {
        let from = before.len().saturating_sub(CHECK_BYTES as usize);
        Position {
            dev: meta.dev(),
            ino: meta.ino(),
            consumed,
            lines,
            check: xxhash_rust::xxh3::xxh3_64(&before[from..]),
        }
    }

    /// How many bytes before `consumed` the check covers.
    pub fn check_len(&self) -> u64 {
        self.consumed.min(CHECK_BYTES)
    }

    /// Whether the log `meta` describes may still begin with what this position tallied: the
    /// bytes themselves are checked by the caller, with [`Position::matches`].
    pub fn may_continue(&self, meta: &Metadata) -> bool {
        meta.dev() == self.dev && meta.ino() == self.ino && meta.len() >= self.consumed
    }

    /// Whether `check_bytes`, the `check_len` bytes before `consumed`, are the ones cached.
    pub fn matches(&self, check_bytes: &[u8]) -> bool {
        xxhash_rust::xxh3::xxh3_64(check_bytes) == self.check
    }
}

/// Reads the cache at `path`: its position and its tally's bytes (decoded by
/// [`decode`]); `None` when missing, foreign or corrupt.
pub fn load(path: &Path) -> Option<(Position, Vec<u8>)> {
    // Only a regular file is a cache (a FIFO would block the read).
    if !std::fs::symlink_metadata(path).ok()?.is_file() {
        return None;
    }
    let mut bytes = std::fs::read(path).ok()?;
    let body_len = verified(&bytes)?.len();
    let mut r = Reader { b: &bytes[..body_len] };
    if r.take(8)? != MAGIC || r.u32()? != FORMAT {
        return None;
    }
    let pos = Position { dev: r.u64()?, ino: r.u64()?, consumed: r.u64()?, lines: r.u64()?, check: r.u64()? };
    let header = body_len - r.b.len();
    bytes.truncate(body_len);
    bytes.drain(..header);
    Some((pos, bytes))
}

/// Decodes the tally of a cache's body; `None` when it does not hold one.
pub fn decode(body: &[u8]) -> Option<Tally<'_>> {
    let mut r = Reader { b: body };
    let mut tally = Tally::default();
    for _ in 0..r.u32()? {
        tally.days.push(r.str()?);
    }
    for _ in 0..r.u32()? {
        tally.bad_lines.push(r.u64()?);
    }
    let ids = r.u32()? as usize;
    // Bounded by what the body can hold, so a corrupt count cannot make a huge allocation.
    tally.ids = FxHashMap::with_capacity_and_hasher(ids.min(body.len() / 16), Default::default());
    for _ in 0..ids {
        let store = match r.u8()? {
            0 => Store::Md,
            1 => Store::Copilot,
            _ => return None,
        };
        let (id, last) = (r.str()?, r.str()?);
        let n = r.u32()? as usize;
        let mut days = Vec::with_capacity(n.min(r.b.len() / 12));
        for _ in 0..n {
            let day = *tally.days.get(r.u32()? as usize)?;
            days.push((day, r.u64()?));
        }
        tally.ids.insert((store, id), IdTally { last, days });
    }
    r.b.is_empty().then_some(tally)
}

/// Writes `tally`, which holds the log up to `pos`, to `path` (atomically, not durably: a lost
/// cache only costs time).
pub fn save(path: &Path, pos: &Position, tally: &Tally<'_>) -> io::Result<()> {
    crate::paths::ensure_ignored_dir(path.parent().unwrap_or(Path::new(".")))?;
    let mut days: Vec<&str> = tally.days.clone();
    days.sort_unstable();
    days.dedup();
    crate::fsio::write_atomic_streamed(path, false, |out| {
        let mut w = Checksummed::new(out);
        w.write_all(MAGIC)?;
        w.write_all(&FORMAT.to_le_bytes())?;
        for v in [pos.dev, pos.ino, pos.consumed, pos.lines, pos.check] {
            w.write_all(&v.to_le_bytes())?;
        }
        w.write_all(&count(days.len())?.to_le_bytes())?;
        for day in &days {
            w.put_str(day)?;
        }
        w.write_all(&count(tally.bad_lines.len())?.to_le_bytes())?;
        for line in &tally.bad_lines {
            w.write_all(&line.to_le_bytes())?;
        }
        w.write_all(&count(tally.ids.len())?.to_le_bytes())?;
        for ((store, id), t) in &tally.ids {
            w.write_all(&[match store {
                Store::Md => 0,
                Store::Copilot => 1,
            }])?;
            w.put_str(id)?;
            w.put_str(t.last)?;
            w.write_all(&count(t.days.len())?.to_le_bytes())?;
            for (day, n) in &t.days {
                let index = days.binary_search(day).map_err(|_| io::Error::other("a day missing from the tally"))?;
                w.write_all(&count(index)?.to_le_bytes())?;
                w.write_all(&n.to_le_bytes())?;
            }
        }
        w.finish().map(drop)
    })
}

/// A count as the cache writes it.
fn count(n: usize) -> io::Result<u32> {
    u32::try_from(n).map_err(|_| io::Error::other("too many entries for the heat cache"))
}
