//! The memory index cache, `.co-cli/cache/memories.idx`: its binary layout (a magic, a format
//! number, the time the scan started, one fixed-size record per file, the tag spans, the string
//! arena, an XXH3 checksum over everything), its writer and its verified reader. A cache that does
//! not verify is never used: it costs a rescan, never a result.

use crate::format::binary::{Checksummed, Reader};
use crate::memories::file::{Importance, MemoryType};
use std::fs;
use std::io::{self, Read, Write};
use std::path::Path;
use xxhash_rust::xxh3::Xxh3;

/// A string in the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Span {
    pub(super) start: u32,
    pub(super) len: u32,
}

pub(super) const NONE: Span = Span { start: u32::MAX, len: u32::MAX };

/// The part of `stat` that says whether a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Stamp {
    pub(super) size: u64,
    pub(super) mtime_ns: i64,
    /// ctime catches an edit whose mtime was set back (`touch -r`, `cp -p`, `rsync -t`).
    pub(super) ctime_ns: i64,
    pub(super) ino: u64,
}

/// One scanned file: a valid memory, or a problem (then `content` holds the message, and `id` the
/// highest id an `id: N` line of the file names, 0 for none: see [`Index::max_id`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Record {
    pub(super) name: Span,
    pub(super) stamp: Stamp,
    pub(super) valid: bool,
    pub(super) id: u64,
    pub(super) created: Span,
    pub(super) created_at: i64,
    pub(super) updated: Span,
    pub(super) updated_at: i64,
    pub(super) source: Span,
    pub(super) protected: bool,
    /// `type` as written: 0 absent, else 1 + its place in [`MemoryType::ALL`].
    pub(super) kind: u8,
    /// `importance` as written: 0 absent, else 1 + its place in [`Importance::ALL`].
    pub(super) importance: u8,
    pub(super) agent: Span,
    pub(super) created_by: Span,
    pub(super) updated_by: Span,
    pub(super) tags_start: u32,
    pub(super) tags_len: u32,
    pub(super) content: Span,
    /// Problem line (0 = unknown).
    pub(super) line: u32,
}

/// Returns the cache code of a `type` as written.
pub(super) fn type_code(t: Option<MemoryType>) -> u8 {
    t.and_then(|t| MemoryType::ALL.iter().position(|&x| x == t)).map_or(0, |i| i as u8 + 1)
}

/// Returns the `type` a cache code stands for; `None` for a code no cache holds.
pub(super) fn type_of(code: u8) -> Option<Option<MemoryType>> {
    match code {
        0 => Some(None),
        c => MemoryType::ALL.get(usize::from(c) - 1).map(|&t| Some(t)),
    }
}

/// Returns the cache code of an `importance` as written.
pub(super) fn importance_code(i: Option<Importance>) -> u8 {
    i.and_then(|i| Importance::ALL.iter().position(|&x| x == i)).map_or(0, |i| i as u8 + 1)
}

/// Returns the `importance` a cache code stands for; `None` for a code no cache holds.
pub(super) fn importance_of(code: u8) -> Option<Option<Importance>> {
    match code {
        0 => Some(None),
        c => Importance::ALL.get(usize::from(c) - 1).map(|&i| Some(i)),
    }
}

const MAGIC: &[u8; 8] = b"KBIDX\0\0\x01";

/// Bump when the record layout, the parsing rules or the checksum change, so old caches are
/// ignored. (3: the checksum is XXH3-64; it guards against torn or edited cache files, not
/// against an adversary. 4: the layer keys `type`, `importance` and `agent`. 5: an invalid file's
/// record holds the id its `id: N` lines name, so a new id never reuses it. 6: provenance,
/// `created_by` and `updated_by`.)
const FORMAT: u32 = 6;

const HEADER: usize = 8 + 4 + 8 + 4 + 4 + 8;

const RECORD: usize = 8 + 8 + 8 + 8 + 8 + 1 + 8 + 8 + 8 + 8 + 8 + 8 + 1 + 1 + 1 + 8 + 8 + 8 + 4 + 4 + 8 + 4;

pub(super) fn encode(r: &Record) -> [u8; RECORD] {
    let mut b = [0u8; RECORD];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        b[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    let span = |s: Span| [s.start.to_le_bytes(), s.len.to_le_bytes()].concat();
    put(&span(r.name));
    put(&r.stamp.size.to_le_bytes());
    put(&r.stamp.mtime_ns.to_le_bytes());
    put(&r.stamp.ctime_ns.to_le_bytes());
    put(&r.stamp.ino.to_le_bytes());
    put(&[r.valid as u8]);
    put(&r.id.to_le_bytes());
    put(&span(r.created));
    put(&r.created_at.to_le_bytes());
    put(&span(r.updated));
    put(&r.updated_at.to_le_bytes());
    put(&span(r.source));
    put(&[r.protected as u8]);
    put(&[r.kind]);
    put(&[r.importance]);
    put(&span(r.agent));
    put(&span(r.created_by));
    put(&span(r.updated_by));
    put(&r.tags_start.to_le_bytes());
    put(&r.tags_len.to_le_bytes());
    put(&span(r.content));
    put(&r.line.to_le_bytes());
    b
}

/// Reads a span (start and length in the arena).
fn span_of(r: &mut Reader<'_>) -> Option<Span> {
    Some(Span { start: r.u32()?, len: r.u32()? })
}

pub(super) fn decode(b: &[u8]) -> Option<Record> {
    let mut r = Reader { b };
    Some(Record {
        name: span_of(&mut r)?,
        stamp: Stamp { size: r.u64()?, mtime_ns: r.i64()?, ctime_ns: r.i64()?, ino: r.u64()? },
        valid: r.u8()? == 1,
        id: r.u64()?,
        created: span_of(&mut r)?,
        created_at: r.i64()?,
        updated: span_of(&mut r)?,
        updated_at: r.i64()?,
        source: span_of(&mut r)?,
        protected: r.u8()? == 1,
        kind: r.u8().filter(|&c| type_of(c).is_some())?,
        importance: r.u8().filter(|&c| importance_of(c).is_some())?,
        agent: span_of(&mut r)?,
        created_by: span_of(&mut r)?,
        updated_by: span_of(&mut r)?,
        tags_start: r.u32()?,
        tags_len: r.u32()?,
        content: span_of(&mut r)?,
        line: r.u32()?,
    })
}

/// A cache file, loaded and verified.
pub(super) struct Cached {
    pub(super) cached_at_ns: i64,
    pub(super) records: Vec<Record>,
    pub(super) tags: Vec<Span>,
    pub(super) arena: String,
}

impl Cached {
    pub(super) fn load(path: &Path) -> io::Result<Cached> {
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("cache {}: {what}", path.display()));
        // A FIFO in place of the cache would block `open`: only a regular file is a cache.
        if !fs::metadata(path)?.is_file() {
            return Err(bad("not a regular file"));
        }
        let mut f = fs::File::open(path)?;
        if !f.metadata()?.is_file() {
            return Err(bad("not a regular file"));
        }
        let mut head = [0u8; HEADER];
        f.read_exact(&mut head)?;
        let mut r = Reader { b: &head };
        if r.take(8) != Some(MAGIC.as_slice()) || r.u32() != Some(FORMAT) {
            return Err(bad("foreign format"));
        }
        let (cached_at_ns, n_rec, n_tags, arena_len) = (r.i64(), r.u32(), r.u32(), r.u64());
        let (Some(cached_at_ns), Some(n_rec), Some(n_tags), Some(arena_len)) = (cached_at_ns, n_rec, n_tags, arena_len)
        else {
            return Err(bad("short header"));
        };
        let table_len = n_rec as usize * RECORD + n_tags as usize * 8;
        let file_len = f.metadata()?.len();
        if file_len != (HEADER + table_len) as u64 + arena_len + 8 {
            return Err(bad("wrong length"));
        }
        // Decoded as read (the table is not held twice); nothing is used unless the checksum
        // over everything matches.
        let mut f = io::BufReader::with_capacity(1 << 16, f);
        let mut h = Xxh3::new();
        h.update(&head);
        let mut records = Vec::with_capacity(n_rec as usize);
        let mut buf = [0u8; RECORD];
        for _ in 0..n_rec {
            f.read_exact(&mut buf)?;
            h.update(&buf);
            records.push(decode(&buf).ok_or_else(|| bad("bad record"))?);
        }
        let mut tags = Vec::with_capacity(n_tags as usize);
        for _ in 0..n_tags {
            let mut b = [0u8; 8];
            f.read_exact(&mut b)?;
            h.update(&b);
            tags.push(span_of(&mut Reader { b: &b }).ok_or_else(|| bad("bad tag"))?);
        }
        let mut arena = vec![0u8; arena_len as usize];
        f.read_exact(&mut arena)?;
        h.update(&arena);
        let mut sum = [0u8; 8];
        f.read_exact(&mut sum)?;
        if h.digest() != u64::from_le_bytes(sum) {
            return Err(bad("checksum mismatch"));
        }
        let arena = String::from_utf8(arena).map_err(|_| bad("not UTF-8"))?;
        let cached = Cached { cached_at_ns, records, tags, arena };
        cached.check_bounds().then_some(cached).ok_or_else(|| bad("span out of bounds"))
    }

    /// Verifies every span lies inside the arena on character boundaries, so lookups cannot panic.
    fn check_bounds(&self) -> bool {
        let ok = |s: Span| {
            s == NONE || self.arena.get(s.start as usize..(s.start as usize).saturating_add(s.len as usize)).is_some()
        };
        self.tags.iter().all(|&t| ok(t) && t != NONE)
            && self.records.iter().all(|r| {
                ok(r.name)
                    && r.name != NONE
                    && ok(r.created)
                    && ok(r.updated)
                    && ok(r.source)
                    && ok(r.agent)
                    && ok(r.created_by)
                    && ok(r.updated_by)
                    && ok(r.content)
                    && r.content != NONE
                    && (!r.valid || r.created != NONE)
                    && (r.tags_start as usize)
                        .checked_add(r.tags_len as usize)
                        .is_some_and(|end| end <= self.tags.len())
            })
    }
}

/// Writes the cache of a scan that started at `started_ns`: atomically, not durably (a lost cache
/// only costs time), in a folder ignored by git.
pub(super) fn write(path: &Path, started_ns: i64, records: &[Record], tags: &[Span], arena: &str) -> io::Result<()> {
    crate::paths::ensure_ignored_dir(path.parent().unwrap_or(Path::new(".")))?;
    // Derived state: atomic, but not fsynced (a lost cache only costs time).
    crate::fsio::write_atomic_streamed(path, false, |out| {
        let mut w = Checksummed::new(out);
        w.write_all(MAGIC)?;
        w.write_all(&FORMAT.to_le_bytes())?;
        w.write_all(&started_ns.to_le_bytes())?;
        w.write_all(&(records.len() as u32).to_le_bytes())?;
        w.write_all(&(tags.len() as u32).to_le_bytes())?;
        w.write_all(&(arena.len() as u64).to_le_bytes())?;
        for r in records {
            w.write_all(&encode(r))?;
        }
        for t in tags {
            w.write_all(&t.start.to_le_bytes())?;
            w.write_all(&t.len.to_le_bytes())?;
        }
        w.write_all(arena.as_bytes())?;
        w.finish().map(drop)
    })
}
