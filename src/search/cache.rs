//! The recall index, `.co-cli/cache/recall.idx`: the tokenized documents of the last recall, so
//! the next one tokenizes only what changed. Derived state: each document is keyed by the hash of
//! its text and reused only when the text is the same, so the index is never trusted over the
//! files; a file of another format or with a bad checksum is ignored and rewritten.
//!
//! Layout (little-endian, xxh3 checksum at the end): magic `KBRI`, format, the terms (each its
//! text and stem id), the stems, then the documents (key, hash, weighted length, and each term id
//! with its weighted frequency).

use super::{Corpus, DocTerms};
use crate::format::binary::{Checksummed, Reader, verified};
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

const MAGIC: &[u8; 4] = b"KBRI";
/// Bumped whenever the layout or the tokenizer changes: an index of another format is rebuilt.
const FORMAT: u32 = 1;

/// Reads the index at `path`; `None` when it is missing, of another format or corrupt.
pub fn load(path: &Path) -> Option<Corpus> {
    let bytes = std::fs::read(path).ok()?;
    decode(verified(&bytes)?)
}

fn decode(body: &[u8]) -> Option<Corpus> {
    let mut r = Reader { b: body };
    if r.take(4)? != MAGIC || r.u32()? != FORMAT {
        return None;
    }
    let mut c = Corpus::default();
    let n_terms = r.u32()? as usize;
    // Each term takes at least 8 bytes: a corrupt count must not allocate the world.
    if n_terms > r.b.len() / 8 {
        return None;
    }
    for id in 0..n_terms {
        let term = r.str()?.to_string();
        c.stem_of.push(r.u32()?);
        c.term_ids.insert(term.clone(), id as u32);
        c.terms.push(term);
    }
    let n_stems = r.u32()? as usize;
    if n_stems > r.b.len() / 4 {
        return None;
    }
    for id in 0..n_stems {
        let stem = r.str()?.to_string();
        c.stem_ids.insert(stem.clone(), id as u32);
        c.stems.push(stem);
    }
    if c.stem_of.iter().any(|&s| s as usize >= n_stems) {
        return None;
    }
    let n_docs = r.u32()? as usize;
    if n_docs > r.b.len() / 20 {
        return None;
    }
    for _ in 0..n_docs {
        let key = r.str()?.to_string();
        let hash = r.u64()?;
        let len = f32::from_bits(r.u32()?);
        let n = r.u32()? as usize;
        if n > r.b.len() / 8 {
            return None;
        }
        let mut terms = Vec::with_capacity(n);
        for _ in 0..n {
            let t = r.u32()?;
            if t as usize >= n_terms {
                return None;
            }
            terms.push((t, f32::from_bits(r.u32()?)));
        }
        c.docs.push(DocTerms { key, hash, len, terms });
    }
    r.b.is_empty().then_some(c)
}

/// Writes `corpus` to `path`, keeping only the terms and stems its documents use: atomically,
/// not durably (a lost index only costs time), in a folder ignored by git.
pub fn write(path: &Path, corpus: &Corpus) -> io::Result<()> {
    // Renumber the terms in use (and their stems), so removed documents' words do not pile up.
    let mut term_map: HashMap<u32, u32> = HashMap::new();
    let mut stem_map: HashMap<u32, u32> = HashMap::new();
    let mut terms: Vec<(&str, u32)> = Vec::new();
    let mut stems: Vec<&str> = Vec::new();
    for d in &corpus.docs {
        for &(t, _) in &d.terms {
            term_map.entry(t).or_insert_with(|| {
                let stem = corpus.stem_of[t as usize];
                let s = *stem_map.entry(stem).or_insert_with(|| {
                    stems.push(&corpus.stems[stem as usize]);
                    stems.len() as u32 - 1
                });
                terms.push((&corpus.terms[t as usize], s));
                terms.len() as u32 - 1
            });
        }
    }
    crate::paths::ensure_ignored_dir(path.parent().unwrap_or(Path::new(".")))?;
    crate::fsio::write_atomic_streamed(path, false, |out| {
        let mut w = Checksummed::new(io::BufWriter::new(out));
        w.write_all(MAGIC)?;
        w.write_all(&FORMAT.to_le_bytes())?;
        w.write_all(&(terms.len() as u32).to_le_bytes())?;
        for (term, stem) in &terms {
            w.put_str(term)?;
            w.write_all(&stem.to_le_bytes())?;
        }
        w.write_all(&(stems.len() as u32).to_le_bytes())?;
        for stem in &stems {
            w.put_str(stem)?;
        }
        w.write_all(&(corpus.docs.len() as u32).to_le_bytes())?;
        for d in &corpus.docs {
            w.put_str(&d.key)?;
            w.write_all(&d.hash.to_le_bytes())?;
            w.write_all(&d.len.to_bits().to_le_bytes())?;
            w.write_all(&(d.terms.len() as u32).to_le_bytes())?;
            let mut renumbered: Vec<(u32, f32)> = d.terms.iter().map(|&(t, f)| (term_map[&t], f)).collect();
            renumbered.sort_unstable_by_key(|(t, _)| *t);
            for (t, f) in renumbered {
                w.write_all(&t.to_le_bytes())?;
                w.write_all(&f.to_bits().to_le_bytes())?;
            }
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
        assert_eq!(back.terms.len(), 3, "the removed document's terms are gone: {:?}", back.terms);
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
