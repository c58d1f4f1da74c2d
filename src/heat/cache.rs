//! The heat cache, `.co-cli/cache/heat.idx`: the tally of the access log up to a line break, and
//! where that is in the log, so that a command parses only the lines appended since (the log only
//! grows: `record` appends whole lines).
//!
//! Like the memory index, it is derived state, used only when intact (a checksum) and when the
//! log still begins with what it tallied: the same inode, at least as long, and either untouched
//! since (the same length, mtime and ctime, older than the cache by a margin) or with the same
//! bytes up to the cached position (their xxh3), so a log edited, truncated or replaced is read
//! whole again. Deleting it only costs time.

use super::log::{IdTally, Tally};
use crate::format::binary::{Checksummed, Reader, verified};
use crate::kinds::Store;
use rustc_hash::FxHashMap;
use std::fs::Metadata;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

const MAGIC: &[u8; 8] = b"kbheat\0\0";
const FORMAT: u32 = 2;
/// A log modified this close to the cache's writing is checked byte by byte even when its stamp
/// matches: a write in the same clock tick leaves the stamp as it was (git's "racy" problem).
const RACY_MARGIN_NS: i64 = 2_000_000_000;
/// A cache is never much larger than the log it tallies (every entry comes from a line of at
/// least 40 bytes); a larger one is not read at all.
const SLACK_BYTES: u64 = 1 << 20;

/// Where a cached tally ends in the log, and the log's stamp when it was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub dev: u64,
    pub ino: u64,
    /// The log's length, mtime and ctime (ns) when the cache was written.
    pub len: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    /// When the cache was written (ns since the epoch).
    pub written_ns: i64,
    /// Bytes of the log tallied: complete lines only.
    pub consumed: u64,
    /// Lines of the log tallied.
    pub lines: u64,
    /// The xxh3 of the log's first `consumed` bytes.
    pub check: u64,
}

fn nanos(secs: i64, nsec: i64) -> i64 {
    secs.saturating_mul(1_000_000_000).saturating_add(nsec)
}

impl Position {
    /// The position after `prefix`, the log's first bytes (complete lines, `lines` of them), in
    /// the log `meta` describes.
    pub fn new(meta: &Metadata, prefix: &[u8], lines: u64) -> Position {
        let written = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Position {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
            written_ns: i64::try_from(written.as_nanos()).unwrap_or(i64::MAX),
            consumed: prefix.len() as u64,
            lines,
            check: xxhash_rust::xxh3::xxh3_64(prefix),
        }
    }

    /// Whether the log `meta` describes may still begin with what this position tallied (the
    /// same file, at least as long); its bytes are then checked with [`Position::matches`],
    /// unless it is [`Position::unchanged`].
    pub fn may_continue(&self, meta: &Metadata) -> bool {
        meta.dev() == self.dev && meta.ino() == self.ino && meta.len() >= self.consumed
    }

    /// Whether the log has not been written since the cache: the same length, mtime and ctime,
    /// and a mtime older than the cache by the racy margin.
    pub fn unchanged(&self, meta: &Metadata) -> bool {
        meta.len() == self.len
            && nanos(meta.mtime(), meta.mtime_nsec()) == self.mtime_ns
            && nanos(meta.ctime(), meta.ctime_nsec()) == self.ctime_ns
            && self.mtime_ns < self.written_ns.saturating_sub(RACY_MARGIN_NS)
    }

    /// Whether `prefix`, the log's first `consumed` bytes, are the ones cached.
    pub fn matches(&self, prefix: &[u8]) -> bool {
        prefix.len() as u64 == self.consumed && xxhash_rust::xxh3::xxh3_64(prefix) == self.check
    }
}

/// Reads the cache at `path` for a log of `log_len` bytes: its position and its tally's bytes
/// (decoded by [`decode`]); `None` when missing, foreign, corrupt or far larger than the log.
pub fn load(path: &Path, log_len: u64) -> Option<(Position, Vec<u8>)> {
    // Only a regular file is a cache (a FIFO would block the read).
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > log_len.saturating_add(SLACK_BYTES) {
        return None;
    }
    let mut bytes = std::fs::read(path).ok()?;
    let body_len = verified(&bytes)?.len();
    let mut r = Reader { b: &bytes[..body_len] };
    if r.take(8)? != MAGIC || r.u32()? != FORMAT {
        return None;
    }
    let pos = Position {
        dev: r.u64()?,
        ino: r.u64()?,
        len: r.u64()?,
        mtime_ns: r.i64()?,
        ctime_ns: r.i64()?,
        written_ns: r.i64()?,
        consumed: r.u64()?,
        lines: r.u64()?,
        check: r.u64()?,
    };
    // A line is at least one byte.
    if pos.lines > pos.consumed || pos.consumed > pos.len {
        return None;
    }
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
        for v in [pos.dev, pos.ino, pos.len] {
            w.write_all(&v.to_le_bytes())?;
        }
        for v in [pos.mtime_ns, pos.ctime_ns, pos.written_ns] {
            w.write_all(&v.to_le_bytes())?;
        }
        for v in [pos.consumed, pos.lines, pos.check] {
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
            // The store's place in `Store` (md 0, copilot 1): the access log holds only those two.
            w.write_all(&[*store as u8])?;
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
