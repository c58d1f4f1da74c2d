//! The recall index, `.co-cli/cache/recall.idx`: the tokenized documents of the last recall, so
//! the next one tokenizes only what changed. Derived state: each document is keyed by the hash of
//! its text and reused only when the text is the same, so the index is never trusted over the
//! files; a file of another format or with a bad checksum is ignored and rewritten.
//!
//! Layout (little-endian, xxh3 checksum at the end): magic `KBRI`, format, the text arena (every
//! term, stem and key), the terms (span, stem id), the stems (span), the documents (key span,
//! hash, weighted length, range of pairs) and the pairs (term id, weighted frequency). Loading it
//! is a few bulk reads: no per-term allocation.

use super::{Corpus, DocTerms, Span};
use crate::format::binary::{Checksummed, Reader, verified};
use rustc_hash::FxHashMap as HashMap;
use std::io::{self, Write};
use std::path::Path;

const MAGIC: &[u8; 4] = b"KBRI";
/// Bumped whenever the layout or the tokenizer changes: an index of another format is rebuilt.
const FORMAT: u32 = 2;

/// Reads the index at `path`; `None` when it is missing, of another format or corrupt. The pairs
/// stay in the file's bytes, read in place.
pub fn load(path: &Path) -> Option<Corpus> {
    let bytes = std::fs::read(path).ok()?;
    let body_len = verified(&bytes)?.len();
    let (mut c, pairs_at) = decode(&bytes[..body_len])?;
    c.raw_start = pairs_at;
    c.raw = bytes;
    Some(c)
}

/// Reads one pair: a term id and a weighted frequency, 4 bytes each.
pub fn pair(p: &[u8]) -> (u32, f32) {
    let word = |i: usize| p.get(i..i + 4).and_then(|b| b.try_into().ok()).map_or(0, u32::from_le_bytes);
    (word(0), f32::from_bits(word(4)))
}

/// Reads a count of items of `size` bytes each, refusing one the rest of the file cannot hold.
fn count(r: &mut Reader<'_>, size: usize) -> Option<usize> {
    let n = r.u32()? as usize;
    (n <= r.b.len() / size).then_some(n)
}

fn span(r: &mut Reader<'_>, arena: usize) -> Option<Span> {
    let s = Span { start: r.u32()?, len: r.u32()? };
    ((s.start as usize).checked_add(s.len as usize)? <= arena).then_some(s)
}

/// Decodes everything but the pairs; returns the corpus and where its pairs start in `body`.
fn decode(body: &[u8]) -> Option<(Corpus, usize)> {
    let mut r = Reader { b: body };
    if r.take(4)? != MAGIC || r.u32()? != FORMAT {
        return None;
    }
    let arena_len = usize::try_from(r.u64()?).ok()?;
    let arena = std::str::from_utf8(r.take(arena_len)?).ok()?.to_string();
    let mut c = Corpus { arena, ..Corpus::default() };
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
    let n_docs = count(&mut r, 28)?;
    c.docs.reserve(n_docs);
    for _ in 0..n_docs {
        let key = span(&mut r, arena_len)?;
        let hash = r.u64()?;
        let len = f32::from_bits(r.u32()?);
        let (start, end) = (r.u32()?, r.u32()?);
        c.docs.push(DocTerms { key, hash, len, start, end });
    }
    let n_pairs = count(&mut r, 8)?;
    let pairs_at = body.len() - r.b.len();
    let raw = r.take(n_pairs * 8)?;
    c.raw_count = n_pairs;
    let ok = r.b.is_empty()
        && raw.chunks_exact(8).all(|p| (pair(p).0 as usize) < n_terms)
        && c.docs.iter().all(|d| d.start <= d.end && d.end as usize <= n_pairs);
    ok.then_some((c, pairs_at))
}

/// Writes `corpus` to `path`, keeping only the terms, stems and pairs its documents use:
/// atomically, not durably (a lost index only costs time), in a folder ignored by git.
pub fn write(path: &Path, corpus: &Corpus) -> io::Result<()> {
    // Renumber the terms in use (and their stems) into a fresh arena, so that removed documents'
    // words do not pile up.
    let mut arena = String::new();
    let mut push = |text: &str| {
        let s = Span { start: arena.len() as u32, len: text.len() as u32 };
        arena.push_str(text);
        s
    };
    let mut term_map: HashMap<u32, u32> = HashMap::default();
    let mut stem_map: HashMap<u32, u32> = HashMap::default();
    let mut terms: Vec<(Span, u32)> = Vec::new();
    let mut stems: Vec<Span> = Vec::new();
    let mut docs: Vec<DocTerms> = Vec::with_capacity(corpus.docs.len());
    let mut pairs: Vec<(u32, f32)> = Vec::new();
    for d in &corpus.docs {
        let start = pairs.len() as u32;
        for (t, f) in corpus.doc_terms(d) {
            let id = *term_map.entry(t).or_insert_with(|| {
                let stem = corpus.stem_of[t as usize];
                let s = *stem_map.entry(stem).or_insert_with(|| {
                    stems.push(push(corpus.text(corpus.stems[stem as usize])));
                    stems.len() as u32 - 1
                });
                terms.push((push(corpus.text(corpus.terms[t as usize])), s));
                terms.len() as u32 - 1
            });
            pairs.push((id, f));
        }
        let key = push(corpus.text(d.key));
        docs.push(DocTerms { key, start, end: pairs.len() as u32, ..*d });
    }
    crate::paths::ensure_ignored_dir(path.parent().unwrap_or(Path::new(".")))?;
    crate::fsio::write_atomic_streamed(path, false, |out| {
        let mut w = Checksummed::new(io::BufWriter::new(out));
        w.write_all(MAGIC)?;
        w.write_all(&FORMAT.to_le_bytes())?;
        w.write_all(&(arena.len() as u64).to_le_bytes())?;
        w.write_all(arena.as_bytes())?;
        w.write_all(&(terms.len() as u32).to_le_bytes())?;
        for (s, stem) in &terms {
            for v in [s.start, s.len, *stem] {
                w.write_all(&v.to_le_bytes())?;
            }
        }
        w.write_all(&(stems.len() as u32).to_le_bytes())?;
        for s in &stems {
            w.write_all(&s.start.to_le_bytes())?;
            w.write_all(&s.len.to_le_bytes())?;
        }
        w.write_all(&(docs.len() as u32).to_le_bytes())?;
        for d in &docs {
            for v in [d.key.start, d.key.len] {
                w.write_all(&v.to_le_bytes())?;
            }
            w.write_all(&d.hash.to_le_bytes())?;
            for v in [d.len.to_bits(), d.start, d.end] {
                w.write_all(&v.to_le_bytes())?;
            }
        }
        w.write_all(&(pairs.len() as u32).to_le_bytes())?;
        for (t, f) in &pairs {
            w.write_all(&t.to_le_bytes())?;
            w.write_all(&f.to_bits().to_le_bytes())?;
        }
        w.finish()?.flush()
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Doc, Ranking, corpus, rank};
    use super::*;

    fn doc(key: &str, text: &str) -> Doc<'static> {
        Doc { key: key.into(), fields: [text.to_string().into(), "".into(), "".into()] }
    }

    #[test]
    fn the_index_round_trips_drops_unused_terms_and_rejects_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache/recall.idx");
        let (c, _) = corpus(&[doc("a", "Run the tests"), doc("b", "gone words")], None, Ranking::Full);
        let (c, _) = corpus(&[doc("a", "Run the tests")], Some(c), Ranking::Full);
        write(&path, &c).unwrap();
        let back = load(&path).unwrap();
        let terms: Vec<&str> = back.terms.iter().map(|&t| back.text(t)).collect();
        assert_eq!(terms, ["run", "the", "tests"], "the removed document's terms are gone");
        let (again, fresh) = corpus(&[doc("a", "Run the tests")], Some(back), Ranking::Full);
        assert_eq!(fresh, 0);
        assert_eq!(rank(&again, "testing", Ranking::Full, |_| true).len(), 1);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 9;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(load(&path).is_none());
        assert_eq!(std::fs::read_to_string(dir.path().join("cache/.gitignore")).unwrap(), "*\n");
    }
}
