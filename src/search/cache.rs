//! The recall index, `.co-cli/cache/recall.idx`: the tokenized documents of the last recall, so
//! the next one tokenizes only what changed. Derived state: each document is keyed by the hash of
//! its text and reused only when the text is the same, so the index is never trusted over the
//! files; a file of another format or with a bad checksum is ignored and rewritten.
//!
//! Layout (little-endian, xxh3 checksum at the end): magic `KBRI`, format, the length of the head,
//! then the head: the corpus's [`Basis`](super::Basis) (a digest and a count of documents), the
//! text arena (every term and stem), the terms (span, stem id), the stems
//! (span), the documents (key, hash, weighted length, range of slots); then the slots of the pairs
//! (term id and weighted frequency, packed as [`super::packed`] says), in document order; then the
//! inverted lists ([`super::postings`]): the count of terms, an offset per term and one past the
//! last, and the runs. A recall reads the head, then only the lists of its query's terms (or, when
//! documents changed, streams the slots), so a large index is never held whole.

use super::packed::Slots;
use super::{Corpus, DocTerms, Inverted, Lists, Span, packed, postings};
use crate::format::binary::{Checksummed, Reader};
use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

const MAGIC: &[u8; 4] = b"KBRI";
/// Bumped whenever the layout or the tokenizer changes: an index of another format is rebuilt.
const FORMAT: u32 = 6;
/// Magic, format and the head's length.
const PREAMBLE: usize = 16;

/// The slots of an index file: the file (kept open, so a concurrent rewrite, which replaces the
/// file, cannot change what is read), where slot 0 starts, and how many there are.
#[derive(Debug)]
pub struct PairsFile {
    file: File,
    offset: u64,
    pub count: usize,
}

impl PairsFile {
    /// Returns a reader of the slots, positioned before slot 0.
    pub fn reader(&self) -> PairsReader<'_> {
        PairsReader { pairs: self, inner: BufReader::with_capacity(64 * 1024, &self.file), at: None }
    }
}

/// Reads ranges of slots, seeking only when a range does not follow the last one.
pub struct PairsReader<'f> {
    pairs: &'f PairsFile,
    inner: BufReader<&'f File>,
    /// The slot the reader stands before; `None` before the first read.
    at: Option<usize>,
}

impl PairsReader<'_> {
    /// Reads slots `start..end` into `out` (replacing its contents).
    pub fn read(&mut self, start: usize, end: usize, out: &mut Vec<u32>) -> io::Result<()> {
        out.clear();
        if end > self.pairs.count || start > end {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a document's pairs lie outside the index"));
        }
        match self.at {
            Some(at) if at <= start => self.inner.seek_relative(((start - at) * 4) as i64)?,
            _ => {
                self.inner.seek(SeekFrom::Start(self.pairs.offset + start as u64 * 4))?;
            }
        }
        let mut bytes = [0u8; 4];
        for _ in start..end {
            if let Err(e) = self.inner.read_exact(&mut bytes) {
                self.at = None;
                return Err(e);
            }
            out.push(u32::from_le_bytes(bytes));
        }
        self.at = Some(end);
        Ok(())
    }
}

/// Reads the index at `path` (a regular file inside `root`): the checksum over the whole file
/// (streamed), then the head; the pairs stay in the file. `None` when it is missing, not a regular
/// file, of another format or corrupt.
pub fn load(path: &Path, root: &Path) -> Option<Corpus> {
    let mut file = crate::fsio::open_input(path, root).ok().flatten()?;
    let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
    let body_len = len.checked_sub(8)?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = body_len;
    let mut reader = BufReader::new(&file);
    while left > 0 {
        let n = left.min(buf.len());
        reader.read_exact(&mut buf[..n]).ok()?;
        hasher.update(&buf[..n]);
        left -= n;
    }
    let mut sum = [0u8; 8];
    reader.read_exact(&mut sum).ok()?;
    drop(reader);
    if hasher.digest().to_le_bytes() != sum {
        return None;
    }
    file.seek(SeekFrom::Start(0)).ok()?;
    let mut preamble = [0u8; PREAMBLE];
    file.read_exact(&mut preamble).ok()?;
    let mut r = Reader { b: &preamble };
    if r.take(4)? != MAGIC || r.u32()? != FORMAT {
        return None;
    }
    let head_len = usize::try_from(r.u64()?).ok()?.checked_sub(PREAMBLE)?;
    if head_len > body_len {
        return None;
    }
    let mut head = vec![0u8; head_len + 4];
    file.read_exact(&mut head).ok()?;
    let mut c = decode(&head[..head_len])?;
    let n_pairs = u32::from_le_bytes(head[head_len..].try_into().ok()?) as usize;
    let offset = (PREAMBLE + head_len + 4) as u64;
    // The inverted lists follow the slots: the count of terms, the offsets, the runs.
    let lists_at = (offset as usize).checked_add(n_pairs.checked_mul(4)?)?;
    let word_at = |at: usize| -> Option<usize> {
        let mut word = [0u8; 4];
        file.read_exact_at(&mut word, at as u64).ok()?;
        Some(u32::from_le_bytes(word) as usize)
    };
    let n_terms = word_at(lists_at)?;
    let offsets_at = (lists_at + 4) as u64;
    let runs_at = (offsets_at as usize).checked_add(n_terms.checked_add(1)?.checked_mul(4)?)?;
    // The offset past the last run: how many bytes the runs take.
    let bytes_len = word_at(runs_at - 4)?;
    // The names follow the runs: their count, `count + 1` offsets, their text.
    let names_at = runs_at.checked_add(bytes_len)?;
    let n_names = word_at(names_at)?;
    let name_offsets_at = names_at + 4;
    let text_at = name_offsets_at.checked_add(n_names.checked_add(1)?.checked_mul(4)?)?;
    let text_len = word_at(text_at - 4)?;
    if n_terms != c.terms.len()
        || text_at.checked_add(text_len)? != body_len
        || (n_names != 0 && n_names != c.basis.docs as usize)
        || c.docs.iter().any(|d| {
            d.start > d.end
                || d.end as usize > n_pairs
                || d.terms > d.end - d.start
                || !(d.len.is_finite() && d.len >= 0.0)
        })
    {
        return None;
    }
    let lists = postings::PostingsFile {
        file: file.try_clone().ok()?,
        offsets_at,
        terms: n_terms,
        bytes_len: bytes_len as u64,
    };
    c.inverted = Some(Inverted { lists: Lists::File(lists), covered: c.docs.len(), changed: Vec::new(), replaced: 0 });
    if n_names > 0 {
        let file = file.try_clone().ok()?;
        c.names = Some(Names { file, offsets_at: name_offsets_at as u64, count: n_names, text_len });
    }
    c.file = Some(PairsFile { file, offset, count: n_pairs });
    Some(c)
}

/// Reads a count of items of `size` bytes each, refusing one the rest of the head cannot hold.
fn count(r: &mut Reader<'_>, size: usize) -> Option<usize> {
    let n = r.u32()? as usize;
    (n <= r.b.len() / size).then_some(n)
}

fn span(r: &mut Reader<'_>, arena: usize) -> Option<Span> {
    let s = Span { start: r.u32()?, len: r.u32()? };
    ((s.start as usize).checked_add(s.len as usize)? <= arena).then_some(s)
}

/// Decodes the head (after the preamble).
fn decode(head: &[u8]) -> Option<Corpus> {
    let mut r = Reader { b: head };
    let digest = u128::from_le_bytes(r.take(16)?.try_into().ok()?);
    let docs = r.u32()?;
    let folder = u128::from_le_bytes(r.take(16)?.try_into().ok()?);
    let basis = super::Basis { digest, docs, folder };
    let arena_len = usize::try_from(r.u64()?).ok()?;
    let arena = std::str::from_utf8(r.take(arena_len)?).ok()?.to_string();
    let mut c = Corpus { arena, basis, ..Corpus::default() };
    let n_terms = count(&mut r, 12)?;
    c.terms.reserve(n_terms);
    c.stem_of.reserve(n_terms);
    for _ in 0..n_terms {
        c.terms.push(span(&mut r, arena_len)?);
        c.stem_of.push(r.u32()?);
    }
    let n_stems = count(&mut r, 8)?;
    c.stems.reserve(n_stems);
    for _ in 0..n_stems {
        c.stems.push(span(&mut r, arena_len)?);
    }
    if c.stem_of.iter().any(|&s| s as usize >= n_stems) {
        return None;
    }
    let n_docs = count(&mut r, 32)?;
    c.docs.reserve(n_docs);
    for _ in 0..n_docs {
        let key = r.u64()?;
        let hash = r.u64()?;
        let len = f32::from_bits(r.u32()?);
        let (start, end, terms) = (r.u32()?, r.u32()?, r.u32()?);
        c.docs.push(DocTerms { key, hash, len, start, end, terms });
    }
    (r.b.is_empty() && c.basis.docs as usize <= c.docs.len()).then_some(c)
}

/// Writes `corpus` to `path`, keeping only the terms, stems and pairs its documents use, with
/// the `names` of its first documents (none, or one per document its basis counts):
/// atomically, not durably (a lost index only costs time), in a folder ignored by git.
pub fn write(path: &Path, corpus: &Corpus, names: &[&str]) -> io::Result<()> {
    let names = if names.len() == corpus.basis.docs as usize { names } else { &[] };
    match Written::in_place(corpus) {
        Some(whole) => write_parts(path, &whole, names),
        None => write_parts(path, &Written::renumbered(corpus)?, names),
    }
}

/// The names of an index file's first documents ([`write`]), read one at a time from the file
/// (kept open, as the slots are).
#[derive(Debug)]
pub struct Names {
    file: File,
    /// Where the offsets start: `count + 1` of them, then the text.
    offsets_at: u64,
    pub count: usize,
    text_len: usize,
}

impl Names {
    /// Returns the name of document `i`, `None` past the last or when the file cannot be read.
    pub fn get(&self, i: usize) -> Option<String> {
        if i >= self.count {
            return None;
        }
        let mut two = [0u8; 8];
        self.file.read_exact_at(&mut two, self.offsets_at + i as u64 * 4).ok()?;
        let start = u32::from_le_bytes(two[..4].try_into().ok()?) as usize;
        let end = u32::from_le_bytes(two[4..].try_into().ok()?) as usize;
        if start > end || end > self.text_len {
            return None;
        }
        let mut text = vec![0u8; end - start];
        let text_at = self.offsets_at + (self.count as u64 + 1) * 4;
        self.file.read_exact_at(&mut text, text_at + start as u64).ok()?;
        String::from_utf8(text).ok()
    }
}

/// What an index file holds: a corpus's text, vocabulary, documents and slots.
struct Written<'c> {
    arena: Cow<'c, str>,
    terms: Cow<'c, [Span]>,
    stem_of: Cow<'c, [u32]>,
    stems: Cow<'c, [Span]>,
    docs: Cow<'c, [DocTerms]>,
    pairs: Cow<'c, [u32]>,
    basis: super::Basis,
}

impl<'c> Written<'c> {
    /// The corpus as it is, when it holds nothing its documents do not use: its slots all in
    /// memory and each document's right after the last's, every term and stem in use (a corpus
    /// just tokenized). Then nothing is copied.
    fn in_place(c: &'c Corpus) -> Option<Written<'c>> {
        if c.file.is_some() {
            return None;
        }
        let mut next = 0;
        let laid_out = c.docs.iter().all(|d| {
            let follows = d.start == next && d.end >= d.start;
            next = d.end;
            follows
        });
        if !laid_out || next as usize != c.pairs.len() {
            return None;
        }
        let mut term_used = vec![false; c.terms.len()];
        for d in &c.docs {
            let slots = Slots::new(c.pairs.get(d.start as usize..d.end as usize)?, d.terms as usize);
            if !slots.valid(c.terms.len()) {
                return None;
            }
            for (t, _) in slots.pairs() {
                term_used[t as usize] = true;
            }
        }
        let mut stem_used = vec![false; c.stems.len()];
        for &s in &c.stem_of {
            *stem_used.get_mut(s as usize)? = true;
        }
        let text: usize = c.terms.iter().chain(&c.stems).map(|s| s.len as usize).sum();
        let whole = term_used.into_iter().all(|u| u) && stem_used.into_iter().all(|u| u) && text == c.arena.len();
        whole.then(|| Written {
            arena: Cow::Borrowed(&c.arena),
            terms: Cow::Borrowed(&c.terms),
            stem_of: Cow::Borrowed(&c.stem_of),
            stems: Cow::Borrowed(&c.stems),
            docs: Cow::Borrowed(&c.docs),
            pairs: Cow::Borrowed(&c.pairs),
            basis: c.basis,
        })
    }

    /// The terms in use (and their stems) renumbered into a fresh arena, and the documents' slots
    /// packed, so that removed documents' words and slots do not pile up.
    fn renumbered(corpus: &Corpus) -> io::Result<Written<'static>> {
        let mut arena = String::new();
        let mut push = |text: &str| {
            let s = Span { start: arena.len() as u32, len: text.len() as u32 };
            arena.push_str(text);
            s
        };
        // Each old term's and stem's new id (`UNMAPPED`: none yet).
        const UNMAPPED: u32 = u32::MAX;
        let mut term_map = vec![UNMAPPED; corpus.terms.len()];
        let mut stem_map = vec![UNMAPPED; corpus.stems.len()];
        let (mut terms, mut stem_of, mut stems) = (Vec::new(), Vec::new(), Vec::new());
        let mut docs: Vec<DocTerms> = Vec::with_capacity(corpus.docs.len());
        let mut pairs: Vec<u32> = Vec::new();
        let all: Vec<usize> = (0..corpus.docs.len()).collect();
        let mut renamed: Vec<(u32, f32)> = Vec::new();
        corpus.each_doc(&all, |i, slots| {
            let start = pairs.len() as u32;
            renamed.clear();
            for (t, f) in slots.pairs() {
                // Slots read from a file are checked; the ones in memory are the tokenizer's.
                let (Some(&mapped), Some(&stem)) = (term_map.get(t as usize), corpus.stem_of.get(t as usize)) else {
                    continue;
                };
                let (mut id, stem) = (mapped, stem as usize);
                if id == UNMAPPED {
                    if stem_map[stem] == UNMAPPED {
                        stem_map[stem] = stems.len() as u32;
                        stems.push(push(corpus.text(corpus.stems[stem])));
                    }
                    id = terms.len() as u32;
                    term_map[t as usize] = id;
                    terms.push(push(corpus.text(corpus.terms[t as usize])));
                    stem_of.push(stem_map[stem]);
                }
                renamed.push((id, f));
            }
            let terms = packed::push(&mut pairs, &renamed) as u32;
            docs.push(DocTerms { start, end: pairs.len() as u32, terms, ..corpus.docs[i] });
        })?;
        Ok(Written {
            arena: Cow::Owned(arena),
            terms: Cow::Owned(terms),
            stem_of: Cow::Owned(stem_of),
            stems: Cow::Owned(stems),
            docs: Cow::Owned(docs),
            pairs: Cow::Owned(pairs),
            basis: corpus.basis,
        })
    }
}

/// The lists are written a part of about this many bytes at a time.
const LISTS_PART_BYTES: usize = 1 << 20;

/// Writes the index file of `c` to `path`, with its inverted lists and the `names` of its first
/// documents.
fn write_parts(path: &Path, c: &Written<'_>, names: &[&str]) -> io::Result<()> {
    crate::paths::ensure_ignored_dir(path.parent().unwrap_or(Path::new(".")))?;
    // The lists come last in the file: they are built on a thread of their own while the rest
    // is written.
    std::thread::scope(|scope| {
        // A part of the lists at a time, so that only a part is ever held beside the corpus.
        let (sent, received) = std::sync::mpsc::sync_channel(1);
        let lists = scope.spawn(move || {
            let each = |add: &mut dyn FnMut(u32, Slots<'_>)| {
                for (i, d) in c.docs.iter().enumerate() {
                    let slots = c.pairs.get(d.start as usize..d.end as usize).unwrap_or_default();
                    add(i as u32, Slots::new(slots, d.terms as usize));
                }
                Ok(())
            };
            // The writer gone (it failed), the lists are not needed.
            let emit = |piece| sent.send(piece).map_err(|_| io::Error::other("the index is not written"));
            postings::build_in_parts(c.terms.len(), LISTS_PART_BYTES, each, emit)
        });
        crate::fsio::write_atomic_streamed(path, false, |out| {
            let mut w = Checksummed::new(out);
            let (arena, terms, stems, docs) = (&c.arena, &c.terms, &c.stems, &c.docs);
            let head_len =
                PREAMBLE + 36 + 8 + arena.len() + 4 + terms.len() * 12 + 4 + stems.len() * 8 + 4 + docs.len() * 32;
            w.write_all(MAGIC)?;
            w.write_all(&FORMAT.to_le_bytes())?;
            w.write_all(&(head_len as u64).to_le_bytes())?;
            w.write_all(&c.basis.digest.to_le_bytes())?;
            w.write_all(&c.basis.docs.to_le_bytes())?;
            w.write_all(&c.basis.folder.to_le_bytes())?;
            w.write_all(&(arena.len() as u64).to_le_bytes())?;
            w.write_all(arena.as_bytes())?;
            w.write_all(&(terms.len() as u32).to_le_bytes())?;
            let vocabulary = terms.iter().zip(c.stem_of.iter()).flat_map(|(s, &stem)| [s.start, s.len, stem]);
            w.put_u32s(vocabulary)?;
            w.write_all(&(stems.len() as u32).to_le_bytes())?;
            w.put_u32s(stems.iter().flat_map(|s| [s.start, s.len]))?;
            w.write_all(&(docs.len() as u32).to_le_bytes())?;
            // A u64 is its two halves, low first, as little-endian bytes.
            let halves = |v: u64| [v as u32, (v >> 32) as u32];
            let fields = |d: &DocTerms| [d.len.to_bits(), d.start, d.end, d.terms];
            w.put_u32s(docs.iter().flat_map(|d| halves(d.key).into_iter().chain(halves(d.hash)).chain(fields(d))))?;
            w.write_all(&(c.pairs.len() as u32).to_le_bytes())?;
            w.put_u32s(c.pairs.iter().copied())?;
            w.write_all(&(terms.len() as u32).to_le_bytes())?;
            for piece in received {
                match piece {
                    postings::Piece::Offsets(offsets) => w.put_u32s(offsets)?,
                    postings::Piece::Bytes(bytes) => w.write_all(&bytes)?,
                }
            }
            lists.join().unwrap_or_else(|e| std::panic::resume_unwind(e))?;
            w.write_all(&(names.len() as u32).to_le_bytes())?;
            let mut end = 0u32;
            w.write_all(&end.to_le_bytes())?;
            for n in names {
                end += n.len() as u32;
                w.write_all(&end.to_le_bytes())?;
            }
            for n in names {
                w.write_all(n.as_bytes())?;
            }
            w.finish().map(drop)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Doc, Ranking, corpus, rank};
    use super::*;

    fn doc(name: &str, text: &str) -> Doc<'static> {
        Doc { key: super::super::tests::key(name), fields: [text.to_string().into(), "".into(), "".into()] }
    }

    #[test]
    fn a_corpus_just_tokenized_is_written_as_it_is_and_as_a_renumbered_one_would_be() {
        let dir = tempfile::tempdir().unwrap();
        let docs = [doc("a", "Run the tests"), doc("b", "ApiError retries"), doc("c", "the tests again")];
        let (c, _) = corpus(&docs, None, Ranking::Full);
        let whole = Written::in_place(&c).expect("nothing unused");
        let (one, two) = (dir.path().join("one.idx"), dir.path().join("two.idx"));
        write_parts(&one, &whole, &[]).unwrap();
        write_parts(&two, &Written::renumbered(&c).unwrap(), &[]).unwrap();
        assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&two).unwrap());
        // A document replaced leaves its old slots behind: renumbered, not written as it is.
        let (c, _) = corpus(
            &[doc("a", "Run the tests"), doc("b", "other words"), doc("c", "the tests again")],
            Some(c),
            Ranking::Full,
        );
        assert!(Written::in_place(&c).is_none());
        write(&one, &c, &[]).unwrap();
        let back = load(&one, dir.path()).unwrap();
        assert_eq!(back.docs.len(), 3);
        assert_eq!(rank(&back, "other", Ranking::Full, |_| true).unwrap().len(), 1);
    }

    #[test]
    fn the_index_round_trips_drops_unused_terms_and_rejects_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache/recall.idx");
        let (c, _) = corpus(&[doc("a", "Run the tests"), doc("b", "gone words")], None, Ranking::Full);
        let (mut c, _) = corpus(&[doc("a", "Run the tests")], Some(c), Ranking::Full);
        c.basis = super::super::Basis { digest: u128::MAX - 7, docs: 1, folder: 3 << 70 };
        write(&path, &c, &["001-é.md"]).unwrap();
        let back = load(&path, dir.path()).unwrap();
        assert_eq!(back.basis, c.basis, "what the documents were made from is kept");
        let names = back.names.as_ref().unwrap();
        assert_eq!((names.get(0).as_deref(), names.get(1)), (Some("001-é.md"), None));
        let terms: Vec<&str> = back.terms.iter().map(|&t| back.text(t)).collect();
        assert_eq!(terms, ["run", "the", "tests"], "the removed document's terms are gone");
        let (again, fresh) = corpus(&[doc("a", "Run the tests")], Some(back), Ranking::Full);
        assert_eq!(fresh, 0);
        assert_eq!(rank(&again, "testing", Ranking::Full, |_| true).unwrap().len(), 1);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 9;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(load(&path, dir.path()).is_none());
        assert_eq!(std::fs::read_to_string(dir.path().join("cache/.gitignore")).unwrap(), "*\n");
    }

    #[test]
    fn a_forged_pair_or_list_is_refused_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recall.idx");
        let docs = [doc("a", "alpha beta"), doc("b", "gamma")];
        let (c, _) = corpus(&docs, None, Ranking::Full);
        write(&path, &c, &[]).unwrap();
        // Three terms of one document each: lists of two bytes, after the count and four offsets;
        // then no names (a count and one offset).
        let names_len = 4 + 4;
        let lists_len = 4 + 4 * 4 + 3 * 2 + names_len;
        let forge = |at_from_end: usize, bytes: &[u8]| {
            let mut file = std::fs::read(&path).unwrap();
            let body = file.len() - 8;
            let at = body - at_from_end;
            file[at..at + bytes.len()].copy_from_slice(bytes);
            // The checksum sealed again (xxh3 is no signature).
            let sum = xxhash_rust::xxh3::xxh3_64(&file[..body]).to_le_bytes();
            file[body..].copy_from_slice(&sum);
            std::fs::write(&path, &file).unwrap();
        };
        // A list naming document 126 of two.
        forge(6 + names_len, &[0x7f]);
        let forged = load(&path, dir.path()).unwrap();
        assert!(rank(&forged, "alpha", Ranking::Full, |_| true).is_err(), "scoring refuses the list");
        // A pair naming term 1,000,000.
        write(&path, &c, &[]).unwrap();
        forge(lists_len + c.pairs.len() * 4, &1_000_000u32.to_le_bytes());
        // A changed document makes the corpus read the pairs into memory: refused, rebuilt.
        let forged = load(&path, dir.path()).unwrap();
        let changed = [doc("a", "alpha beta"), doc("b", "gamma delta")];
        let (rebuilt, fresh) = corpus(&changed, Some(forged), Ranking::Full);
        assert_eq!(fresh, 2);
        assert_eq!(rank(&rebuilt, "alpha", Ranking::Full, |_| true).unwrap().len(), 1);
        write(&path, &rebuilt, &[]).unwrap();
    }

    #[test]
    fn ranking_from_the_lists_equals_ranking_from_every_document() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recall.idx");
        let texts = [
            "Run the tests with cargo nextest before a commit",
            "The tests of the parser live in tests/parser.rs",
            "Deploys go out on Tuesdays after the release notes",
            "Checks run on every pull request; the suite takes ten minutes",
            "Release notes are written in the changelog by the author",
        ];
        let docs: Vec<Doc<'static>> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| Doc { key: i as u64, fields: [t.to_string().into(), "release".into(), "tests".into()] })
            .collect();
        let (c, _) = corpus(&docs, None, Ranking::Full);
        write(&path, &c, &[]).unwrap();
        let listed = load(&path, dir.path()).unwrap();
        assert!(listed.inverted.is_some());
        let mut scanned = load(&path, dir.path()).unwrap();
        scanned.inverted = None;
        let mut memory = load(&path, dir.path()).unwrap();
        memory.invert().unwrap();
        for query in ["tests", "release notes", "verify the suite", "nextest", "test", "how do we deploy"] {
            for candidate in [&(|_: usize| true) as &dyn Fn(usize) -> bool, &|i: usize| i.is_multiple_of(2)] {
                let a = rank(&listed, query, Ranking::Full, candidate).unwrap();
                let b = rank(&scanned, query, Ranking::Full, candidate).unwrap();
                let m = rank(&memory, query, Ranking::Full, candidate).unwrap();
                assert_eq!(a, b, "{query}");
                assert_eq!(m, b, "{query}");
            }
        }
        // A document put since the lists were made is scored from its own terms.
        let (i, changed) = (1, Doc { key: 1, fields: ["nothing about it now".into(), "".into(), "".into()] });
        memory.put(Some(i), &changed, Ranking::Full);
        let mut fresh_docs = docs.clone();
        fresh_docs[i] = changed;
        let (fresh, _) = corpus(&fresh_docs, None, Ranking::Full);
        for query in ["tests", "nothing", "release"] {
            assert_eq!(
                rank(&memory, query, Ranking::Full, |_| true).unwrap(),
                rank(&fresh, query, Ranking::Full, |_| true).unwrap(),
                "{query}"
            );
        }
    }
}
