//! The memory index cache, `.co-cli/cache/memories.idx`: its binary layout (a magic, a format
//! number, the time the scan started, one fixed-size record per file, the tag spans, the string
//! arena, an XXH3 checksum over everything), its writer and its verified reader. A cache that does
//! not verify is never used: it costs a rescan, never a result.
//!
//! A record is what the index holds in memory too, so it is kept small (96 bytes; a long-running
//! server holds 100,000 of them): its strings lie back to back in the arena, named by one offset
//! and their lengths, and its stat stamp is the time of the last change and a hash of the rest.

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

/// The part of `stat` that says whether a file changed: the later of its mtime and ctime (which
/// says whether the cache may trust it yet), and a hash of its size, mtime, ctime and inode.
/// ctime catches an edit whose mtime was set back (`touch -r`, `cp -p`, `rsync -t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Stamp {
    pub(super) newest_ns: i64,
    pub(super) sig: u64,
}

impl Stamp {
    pub(super) fn new(size: u64, mtime_ns: i64, ctime_ns: i64, ino: u64) -> Stamp {
        let mut h = Xxh3::new();
        for v in [size, mtime_ns as u64, ctime_ns as u64, ino] {
            h.update(&v.to_le_bytes());
        }
        Stamp { newest_ns: mtime_ns.max(ctime_ns), sig: h.digest() }
    }
}

/// A record's strings, in the order they lie in the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    Name,
    Created,
    Updated,
    Source,
    Agent,
    CreatedBy,
    UpdatedBy,
    /// A problem's message, for a file that is not a valid memory.
    Content,
}

/// How many strings a record has.
pub(super) const FIELDS: usize = 8;

/// The length of a string the file does not have.
pub(super) const ABSENT: u32 = u32::MAX;

/// One scanned file: a valid memory, or a problem (then its content is the message, and `id` the
/// highest id an `id: N` line of the file names, 0 for none: see [`Index::max_id`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Record {
    pub(super) stamp: Stamp,
    pub(super) id: u64,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    /// Where the record's strings start in the arena ([`Field`] order, back to back).
    pub(super) text: u32,
    /// Each string's length, [`ABSENT`] for one the file does not have.
    pub(super) lens: [u32; FIELDS],
    pub(super) tags_start: u32,
    pub(super) tags_len: u32,
    /// Problem line (0 = unknown).
    pub(super) line: u32,
    pub(super) valid: bool,
    pub(super) protected: bool,
    /// `type` as written: 0 absent, else 1 + its place in [`MemoryType::ALL`].
    pub(super) kind: u8,
    /// `importance` as written: 0 absent, else 1 + its place in [`Importance::ALL`].
    pub(super) importance: u8,
}

// The size a long-running server pays per memory file: keep it from growing unnoticed.
const _: () = assert!(std::mem::size_of::<Record>() == 96);

impl Record {
    /// Returns where string `f` lies in the arena ([`NONE`] when absent).
    pub(super) fn span(&self, f: Field) -> Span {
        let i = f as usize;
        if self.lens[i] == ABSENT {
            return NONE;
        }
        let before: u32 = self.lens[..i].iter().filter(|&&l| l != ABSENT).fold(0u32, |a, &l| a.wrapping_add(l));
        Span { start: self.text.wrapping_add(before), len: self.lens[i] }
    }

    /// Returns how many bytes of the arena the record's strings take.
    pub(super) fn text_len(&self) -> usize {
        self.lens.iter().filter(|&&l| l != ABSENT).map(|&l| l as usize).sum()
    }
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
/// `created_by` and `updated_by`. 7: a record's strings back to back, its stamp hashed.)
const FORMAT: u32 = 7;

const HEADER: usize = 8 + 4 + 8 + 4 + 4 + 8;

const RECORD: usize = 8 + 8 + 8 + 8 + 8 + 4 + 4 * FIELDS + 4 + 4 + 4 + 1 + 1 + 1 + 1;

pub(super) fn encode(r: &Record) -> [u8; RECORD] {
    let mut b = [0u8; RECORD];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        b[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    put(&r.stamp.newest_ns.to_le_bytes());
    put(&r.stamp.sig.to_le_bytes());
    put(&r.id.to_le_bytes());
    put(&r.created_at.to_le_bytes());
    put(&r.updated_at.to_le_bytes());
    put(&r.text.to_le_bytes());
    for l in r.lens {
        put(&l.to_le_bytes());
    }
    put(&r.tags_start.to_le_bytes());
    put(&r.tags_len.to_le_bytes());
    put(&r.line.to_le_bytes());
    put(&[r.valid as u8, r.protected as u8, r.kind, r.importance]);
    b
}

/// Reads a span (start and length in the arena).
fn span_of(r: &mut Reader<'_>) -> Option<Span> {
    Some(Span { start: r.u32()?, len: r.u32()? })
}

pub(super) fn decode(b: &[u8]) -> Option<Record> {
    let mut r = Reader { b };
    let stamp = Stamp { newest_ns: r.i64()?, sig: r.u64()? };
    let (id, created_at, updated_at, text) = (r.u64()?, r.i64()?, r.i64()?, r.u32()?);
    let mut lens = [0u32; FIELDS];
    for l in &mut lens {
        *l = r.u32()?;
    }
    Some(Record {
        stamp,
        id,
        created_at,
        updated_at,
        text,
        lens,
        tags_start: r.u32()?,
        tags_len: r.u32()?,
        line: r.u32()?,
        valid: r.u8()? == 1,
        protected: r.u8()? == 1,
        kind: r.u8().filter(|&c| type_of(c).is_some())?,
        importance: r.u8().filter(|&c| importance_of(c).is_some())?,
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
        let fields = [
            Field::Name,
            Field::Created,
            Field::Updated,
            Field::Source,
            Field::Agent,
            Field::CreatedBy,
            Field::UpdatedBy,
            Field::Content,
        ];
        self.tags.iter().all(|&t| ok(t) && t != NONE)
            && self.records.iter().all(|r| {
                (r.text as usize).checked_add(r.text_len()).is_some_and(|end| end <= self.arena.len())
                    && fields.iter().all(|&f| ok(r.span(f)))
                    && r.lens[Field::Name as usize] != ABSENT
                    && r.lens[Field::Content as usize] != ABSENT
                    && (!r.valid || r.lens[Field::Created as usize] != ABSENT)
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
