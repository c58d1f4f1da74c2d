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

/// A record's strings, in the order they lie in its block: the two every pass reads first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    /// A problem's message, for a file that is not a valid memory.
    Content,
    Name,
    Created,
    Updated,
    Source,
    Agent,
    CreatedBy,
    UpdatedBy,
}

/// How many strings a record has.
pub(super) const FIELDS: usize = 8;

impl Field {
    /// Every field, in block order.
    pub(super) const ALL: [Field; FIELDS] = [
        Field::Content,
        Field::Name,
        Field::Created,
        Field::Updated,
        Field::Source,
        Field::Agent,
        Field::CreatedBy,
        Field::UpdatedBy,
    ];
}

/// One scanned file: a valid memory, or a problem (then its content is the message, and `id` the
/// highest id an `id: N` line of the file names, 0 for none: see [`Index::max_id`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Record {
    pub(super) stamp: Stamp,
    pub(super) id: u64,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    /// Where the record's block ([`Block`]: its strings and tags) starts in the arena.
    pub(super) text: u32,
    /// Problem line (0 = unknown).
    pub(super) line: u32,
    pub(super) valid: bool,
    pub(super) protected: bool,
    /// `type` as written: 0 absent, else 1 + its place in [`MemoryType::ALL`].
    pub(super) kind: u8,
    /// `importance` as written: 0 absent, else 1 + its place in [`Importance::ALL`].
    pub(super) importance: u8,
    /// Which timestamps were written in co-cli's own form, kept as their instant only (no text in
    /// the block): [`CREATED_ISO`], [`UPDATED_ISO`].
    pub(super) iso: u8,
    /// Whether the memory names an agent: most do not, and then every agent sees it without a look
    /// at its block.
    pub(super) owned: bool,
    /// The block's header length in bytes (0: 256 or more), then its content's and file name's
    /// lengths (`u8::MAX`: 255 or more): the two strings every pass reads, found without
    /// reading the header.
    pub(super) head: u8,
    pub(super) name_len: u8,
    pub(super) content_len: u32,
}

pub(super) const CREATED_ISO: u8 = 1;
pub(super) const UPDATED_ISO: u8 = 2;

// The size a long-running server pays per memory file: keep it from growing unnoticed.
const _: () = assert!(std::mem::size_of::<Record>() == 64);

impl Record {
    /// Returns the record's content and file name as they lie in `arena`, without reading its
    /// block's header when the record's lengths say where (always, but for a header of 256 bytes
    /// or more or a name of 255 bytes or more).
    #[inline]
    pub(super) fn content_and_name<'a>(&self, arena: &'a str) -> (&'a str, &'a str) {
        let start = self.text as usize + usize::from(self.head);
        let name = start + self.content_len as usize;
        match (self.head, self.name_len) {
            (0, _) | (_, u8::MAX) => {
                let b = Block::parse(arena, self.text as usize).unwrap_or_default();
                (b.get(Field::Content).unwrap_or_default(), b.get(Field::Name).unwrap_or_default())
            }
            (_, len) => (
                arena.get(start..name).unwrap_or_default(),
                arena.get(name..name + usize::from(len)).unwrap_or_default(),
            ),
        }
    }

    /// Sets the lengths [`Record::content_and_name`] reads, for a block whose header takes `head`
    /// bytes.
    pub(super) fn set_lengths(&mut self, head: usize, content: &str, name: &str) {
        self.head = u8::try_from(head).unwrap_or(0);
        self.name_len = u8::try_from(name.len()).unwrap_or(u8::MAX);
        self.content_len = content.len() as u32;
    }
}

/// A record's strings as they lie in the arena, parsed: each [`Field`] (`None` when the file does
/// not have it) and the tags.
///
/// A block is a header, then the fields' text back to back, then the tags' text. The header holds
/// numbers, each in base 64, low digits first, one byte per digit with 0x40 set when another digit
/// follows (so every byte is ASCII and the arena stays UTF-8): for each field 0 when absent or
/// its length + 1, then the number of tags and each tag's length.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Block<'a> {
    arena: &'a str,
    /// Each field's length, [`ABSENT`] when the file does not have it.
    lens: [u32; FIELDS],
    /// Where the fields' text starts in the arena.
    text: usize,
    tags: Tags<'a>,
    /// The bytes the block takes.
    pub(super) len: usize,
}

/// A field the file does not have.
const ABSENT: u32 = u32::MAX;

impl<'a> Block<'a> {
    /// Returns a field's text (`None` when absent, or when its bytes are not whole characters: a
    /// damaged cache, which the cache's check refuses before any use).
    pub(super) fn get(&self, f: Field) -> Option<&'a str> {
        let i = f as usize;
        if self.lens[i] == ABSENT {
            return None;
        }
        let before: usize = self.lens[..i].iter().filter(|&&l| l != ABSENT).map(|&l| l as usize).sum();
        let start = self.text + before;
        self.arena.get(start..start + self.lens[i] as usize)
    }

    /// Returns the tags.
    pub(super) fn tags(&self) -> Tags<'a> {
        self.tags
    }

    /// Appends a block of `fields` and `tags` to `arena`; returns the length of its header.
    pub(super) fn push(arena: &mut String, fields: [Option<&str>; FIELDS], tags: &[String]) -> usize {
        let start = arena.len();
        for f in fields {
            put_number(arena, f.map_or(0, |s| s.len() + 1));
        }
        put_number(arena, tags.len());
        for t in tags {
            put_number(arena, t.len());
        }
        let head = arena.len() - start;
        for f in fields.into_iter().flatten() {
            arena.push_str(f);
        }
        for t in tags {
            arena.push_str(t);
        }
        head
    }

    /// Reads the header of the block at `at` in `arena` (its text is sliced only when asked for);
    /// `None` when the header is damaged or the block would end past the arena.
    #[inline]
    pub(super) fn parse(arena: &'a str, at: usize) -> Option<Block<'a>> {
        let bytes = arena.as_bytes();
        let mut i = at;
        let mut lens = [ABSENT; FIELDS];
        let mut text_len = 0usize;
        for l in &mut lens {
            let code = take_number(bytes, &mut i)?;
            if code > 0 {
                *l = u32::try_from(code - 1).ok()?;
                text_len += code - 1;
            }
        }
        let count = take_number(bytes, &mut i)?;
        let lens_at = i;
        let mut tag_bytes = 0usize;
        for _ in 0..count {
            tag_bytes = tag_bytes.checked_add(take_number(bytes, &mut i)?)?;
        }
        let tags_at = i.checked_add(text_len)?;
        let end = tags_at.checked_add(tag_bytes)?;
        let tags = Tags { lens: bytes.get(lens_at..i)?, text: arena.get(tags_at..end)?, left: count };
        Some(Block { arena, lens, text: i, tags, len: end - at })
    }

    /// Returns whether every field and tag of the block is whole characters of the arena.
    pub(super) fn is_whole(&self) -> bool {
        Field::ALL.iter().all(|&f| self.lens[f as usize] == ABSENT || self.get(f).is_some())
            && self.tags().count() == self.tags.left
    }
}

/// A block's tags.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tags<'a> {
    /// The header's tag lengths not read yet.
    lens: &'a [u8],
    /// The text of the tags not read yet.
    text: &'a str,
    left: usize,
}

impl<'a> Iterator for Tags<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.left == 0 {
            return None;
        }
        let mut i = 0;
        let len = take_number(self.lens, &mut i)?;
        let tag = self.text.get(..len)?;
        (self.lens, self.text, self.left) = (&self.lens[i..], &self.text[len..], self.left - 1);
        Some(tag)
    }
}

/// Appends a number to a block's header (see [`Block`]).
fn put_number(out: &mut String, mut n: usize) {
    while n >= 64 {
        out.push(char::from(0x40 | (n & 63) as u8));
        n >>= 6;
    }
    out.push(char::from(n as u8));
}

/// Reads a number of a block's header at `*at`, moving past it.
#[inline(always)]
fn take_number(bytes: &[u8], at: &mut usize) -> Option<usize> {
    // Most numbers have one or two digits (below 4,096): read inline, on every view of a memory.
    match bytes.get(*at..*at + 2) {
        Some(&[low, _]) if low < 0x40 => {
            *at += 1;
            Some(usize::from(low))
        }
        Some(&[low, high]) if low < 0x80 && high < 0x40 => {
            *at += 2;
            Some(usize::from(low & 63) | usize::from(high) << 6)
        }
        _ => take_long_number(bytes, at),
    }
}

#[cold]
fn take_long_number(bytes: &[u8], at: &mut usize) -> Option<usize> {
    let mut n = 0usize;
    for shift in (0..64).step_by(6) {
        let digit = *bytes.get(*at)?;
        *at += 1;
        if digit >= 0x80 {
            return None;
        }
        n |= usize::from(digit & 63).checked_shl(shift).filter(|_| shift < 60)?;
        if digit & 0x40 == 0 {
            return Some(n);
        }
    }
    None
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
/// `created_by` and `updated_by`. 9: a record's strings and tags in one block, its stamp hashed.
/// 10: the folder's own stamp.)
const FORMAT: u32 = 10;

const HEADER: usize = 8 + 4 + 8 + 16 + 4 + 8;

/// Records read (and checksummed) per `read` of the cache's table.
const RECORDS_PER_READ: usize = 1024;

const RECORD: usize = 8 + 8 + 8 + 8 + 8 + 4 + 4 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 4;

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
    put(&r.line.to_le_bytes());
    put(&[r.valid as u8, r.protected as u8, r.kind, r.importance, r.iso, r.owned as u8, r.head, r.name_len]);
    put(&r.content_len.to_le_bytes());
    b
}

pub(super) fn decode(b: &[u8]) -> Option<Record> {
    let mut r = Reader { b };
    Some(Record {
        stamp: Stamp { newest_ns: r.i64()?, sig: r.u64()? },
        id: r.u64()?,
        created_at: r.i64()?,
        updated_at: r.i64()?,
        text: r.u32()?,
        line: r.u32()?,
        valid: r.u8()? == 1,
        protected: r.u8()? == 1,
        kind: r.u8().filter(|&c| type_of(c).is_some())?,
        importance: r.u8().filter(|&c| importance_of(c).is_some())?,
        iso: r.u8().filter(|&c| c <= CREATED_ISO | UPDATED_ISO)?,
        owned: r.u8()? == 1,
        head: r.u8()?,
        name_len: r.u8()?,
        content_len: r.u32()?,
    })
}

/// A cache file, loaded and verified.
pub(super) struct Cached {
    pub(super) cached_at_ns: i64,
    /// The memories folder's stamp when the scan began, when it was old enough then to trust
    /// (see `Index::scan_trusting`); a zero stamp in the file.
    pub(super) dir_stamp: Option<Stamp>,
    pub(super) records: Vec<Record>,
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
        let (Some(cached_at_ns), Some(newest_ns), Some(sig), Some(n_rec), Some(arena_len)) =
            (r.i64(), r.i64(), r.u64(), r.u32(), r.u64())
        else {
            return Err(bad("short header"));
        };
        let dir_stamp = Some(Stamp { newest_ns, sig }).filter(|s| *s != Stamp::default());
        let file_len = f.metadata()?.len();
        if file_len != (HEADER + n_rec as usize * RECORD) as u64 + arena_len + 8 {
            return Err(bad("wrong length"));
        }
        // Decoded as read, a run of records at a time (the table is not held twice, and the
        // checksum is fed large slices); nothing is used unless the checksum over everything
        // matches.
        let mut h = Xxh3::new();
        h.update(&head);
        let mut records = Vec::with_capacity(n_rec as usize);
        let mut run = vec![0u8; RECORDS_PER_READ * RECORD];
        let mut left = n_rec as usize;
        while left > 0 {
            let part = &mut run[..left.min(RECORDS_PER_READ) * RECORD];
            f.read_exact(part)?;
            h.update(part);
            for b in part.chunks_exact(RECORD) {
                records.push(decode(b).ok_or_else(|| bad("bad record"))?);
            }
            left -= part.len() / RECORD;
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
        let cached = Cached { cached_at_ns, dir_stamp, records, arena };
        cached.check_bounds().then_some(cached).ok_or_else(|| bad("span out of bounds"))
    }

    /// Verifies every record's block is whole and lies inside the arena on character boundaries,
    /// so lookups cannot panic.
    fn check_bounds(&self) -> bool {
        self.records.iter().all(|r| {
            Block::parse(&self.arena, r.text as usize).is_some_and(|b| {
                let (content, name) = (b.get(Field::Content), b.get(Field::Name));
                let mut expected = *r;
                expected.set_lengths(b.text - r.text as usize, content.unwrap_or_default(), name.unwrap_or_default());
                b.is_whole()
                    && name.is_some()
                    && content.is_some()
                    && (expected.head, expected.name_len, expected.content_len) == (r.head, r.name_len, r.content_len)
                    && (!r.valid || b.get(Field::Created).is_some() || r.iso & CREATED_ISO != 0)
                    && r.owned == b.get(Field::Agent).is_some()
            })
        })
    }
}

/// Writes the cache of a scan that started at `started_ns` (with the folder's trusted stamp then,
/// if any): atomically, not durably (a lost cache only costs time), in a folder ignored by git.
pub(super) fn write(
    path: &Path,
    started_ns: i64,
    dir_stamp: Option<Stamp>,
    records: &[Record],
    arena: &str,
) -> io::Result<()> {
    crate::paths::ensure_ignored_dir(path.parent().unwrap_or(Path::new(".")))?;
    // Derived state: atomic, but not fsynced (a lost cache only costs time).
    crate::fsio::write_atomic_streamed(path, false, |out| {
        let mut w = Checksummed::new(out);
        w.write_all(MAGIC)?;
        w.write_all(&FORMAT.to_le_bytes())?;
        w.write_all(&started_ns.to_le_bytes())?;
        let dir = dir_stamp.unwrap_or_default();
        w.write_all(&dir.newest_ns.to_le_bytes())?;
        w.write_all(&dir.sig.to_le_bytes())?;
        w.write_all(&(records.len() as u32).to_le_bytes())?;
        w.write_all(&(arena.len() as u64).to_le_bytes())?;
        for r in records {
            w.write_all(&encode(r))?;
        }
        w.write_all(arena.as_bytes())?;
        w.finish().map(drop)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_round_trips_its_fields_and_tags_and_a_cut_one_does_not_parse() {
        let long = "é".repeat(3000);
        let tags = ["python".to_string(), String::new(), "ünïcode".to_string()];
        let fields = [Some(long.as_str()), Some("001-a.md"), Some("2026-01-01"), None, Some(""), None, None, None];
        let mut arena = "x".to_string();
        Block::push(&mut arena, fields, &tags);
        let b = Block::parse(&arena, 1).unwrap();
        assert_eq!(Field::ALL.map(|f| b.get(f)), fields);
        assert!(b.is_whole());
        assert_eq!(b.tags().collect::<Vec<_>>(), ["python", "", "ünïcode"]);
        assert_eq!(b.len, arena.len() - 1);
        assert!(arena.is_char_boundary(1) && arena[1..].bytes().take(12).all(|c| c < 0x80), "an ASCII header");
        let middle = (20..).find(|&i| arena.is_char_boundary(i)).unwrap();
        for cut in [arena.len() - 1, 2, middle] {
            assert!(Block::parse(&arena[..cut], 1).is_none(), "cut at {cut}");
        }
        // A length that would end inside a character is refused, not sliced.
        let mut bad = String::new();
        Block::push(&mut bad, [Some(""), Some("é"), None, None, None, None, None, None], &[]);
        let bad = bad.replacen('\u{3}', "\u{2}", 1);
        assert!(bad.starts_with("\u{1}\u{2}"), "the name's length cut to one byte of its two");
        assert!(Block::parse(&bad, 0).is_none_or(|b| !b.is_whole()));
    }
}
