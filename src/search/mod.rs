//! Ranked recall (docs/behaviour.md, Recall): BM25 with field weights over every kind of
//! knowledge (memories, Copilot records, decisions, sessions), words matched by their English stem,
//! and co-cli's substring rule (`test` finds `nextest`) as a half-weight fallback for a query word
//! that matches nothing by stem. English stop words are left out of the query unless it holds
//! nothing else ([`tokens::is_stop_word`]), and a query word also matches the words related to it
//! in kb's thesaurus ([`thesaurus`]) at half weight, where it does not match directly.
//!
//! A document has three fields: its text (weight 1), its labels (tags, a record's subject: 2) and
//! its notes (a record's reason and citations: 0.5). Its weighted term frequency and length are
//! the sums over the fields times their weights; the score is BM25's (k1 = 1.2, b = 0.75) with
//! `idf = ln((N − n + 0.5) / (n + 0.5) + 1)` over the candidates.
//!
//! The tokenized documents are derived state, kept in `.co-cli/cache/recall.idx` ([`cache`]) and
//! reused for every document whose text did not change.

pub mod cache;
pub mod packed;
pub mod postings;
pub mod thesaurus;
pub mod tokens;

use packed::Slots;
use rustc_hash::FxHashMap as HashMap;
use std::borrow::Cow;
use tokens::Stems;

/// BM25's term-frequency saturation.
pub const K1: f64 = 1.2;
/// BM25's length normalisation.
pub const B: f64 = 0.75;
/// The weights of a document's fields: text, labels, notes.
pub const WEIGHTS: [f32; 3] = [1.0, 2.0, 0.5];
/// A query word that matches no token by stem matches the tokens containing it at this weight.
pub const FALLBACK_WEIGHT: f64 = 0.5;
/// The fewest characters a query word needs to match inside other words.
pub const FALLBACK_MIN_CHARS: usize = 3;

/// One document to rank: a key naming it (a hash of what it is: the caller's choice, unique among
/// the documents) and its fields' text.
#[derive(Debug, Clone, Default)]
pub struct Doc<'a> {
    pub key: u64,
    /// Text, labels, notes (see [`WEIGHTS`]).
    pub fields: [Cow<'a, str>; 3],
}

impl Doc<'_> {
    /// Returns the hash of the fields: a cached document is reused only when it matches.
    pub fn hash(&self) -> u64 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for f in &self.fields {
            h.update(&(f.len() as u64).to_le_bytes());
            h.update(f.as_bytes());
        }
        h.digest()
    }
}

pub use crate::kinds::Ranking;

/// A document as ranking needs it: its key and text hash (to reuse it), its weighted length, and
/// its terms: slots `start..end` of the corpus's pairs, the first `terms` of them one per term
/// (a term once), then the weights that did not fit ([`packed`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DocTerms {
    pub key: u64,
    pub hash: u64,
    pub len: f32,
    pub start: u32,
    pub end: u32,
    pub terms: u32,
}

/// A placeholder, replaced before the corpus is used.
const EMPTY_DOC: DocTerms = DocTerms { key: 0, hash: 0, len: 0.0, start: 0, end: 0, terms: 0 };

fn damaged() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, "a pair of the recall index is damaged")
}

/// Returns a piece of `arena` (empty when the span lies outside it).
fn span_text(arena: &str, span: Span) -> &str {
    arena.get(span.start as usize..(span.start as usize).saturating_add(span.len as usize)).unwrap_or_default()
}

/// A piece of a corpus's text arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: u32,
    pub len: u32,
}

/// The tokenized documents and their vocabulary (every token as written, lower-cased, and its
/// stem), stored flat so that the index loads with a few allocations.
#[derive(Debug, Default)]
pub struct Corpus {
    /// The text of every term and stem.
    pub arena: String,
    pub terms: Vec<Span>,
    /// The stem id of each term.
    pub stem_of: Vec<u32>,
    pub stems: Vec<Span>,
    pub docs: Vec<DocTerms>,
    /// The slots still in the index file, read as documents are scored (so a large index is never
    /// held whole): the first `file.count` slots.
    pub file: Option<cache::PairsFile>,
    /// The slots in memory ([`packed`]): slot `file.count + i` is `pairs[i]`.
    pub pairs: Vec<u32>,
    /// Term and stem ids by text, built when a document must be tokenized.
    ids: Option<Ids>,
    /// The inverted lists, when the corpus has them ([`postings`]).
    pub inverted: Option<Inverted>,
    /// What the corpus's first documents were made from, when its maker said.
    pub basis: Basis,
    /// The names of the first documents, in the index file, when its maker wrote them.
    pub names: Option<cache::Names>,
}

/// What a corpus's first `docs` documents were made from, as a digest of their maker's inputs
/// (zero `docs`: nothing said). A reader whose inputs have the same digest takes those
/// documents' keys and hashes from the corpus instead of making each document again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Basis {
    pub digest: u128,
    pub docs: u32,
    /// A stamp of the folder the inputs were read from, when the maker trusted it (0: none): a
    /// reader that finds the folder with the same stamp may take the documents as they are
    /// without reading the inputs, and read only the documents it shows, by their names.
    pub folder: u128,
}

/// A corpus's inverted lists: they cover documents `0..covered` as they were when the lists were
/// made; a document put since (`changed`) is scored from its own terms instead.
#[derive(Debug)]
pub struct Inverted {
    pub lists: Lists,
    pub covered: usize,
    /// Documents replaced since the lists were made, by position (empty: none).
    pub changed: Vec<bool>,
    /// How many `changed` holds.
    pub replaced: usize,
}

/// Where the lists are.
#[derive(Debug)]
pub enum Lists {
    File(postings::PostingsFile),
    Memory(postings::Postings),
}

impl Inverted {
    /// Whether document `i` is scored from the lists.
    fn covers(&self, i: usize) -> bool {
        i < self.covered && !self.changed.get(i).copied().unwrap_or(false)
    }

    /// Calls `f` with each document of `term`'s list and its weight.
    fn each(&self, term: usize, buf: &mut Vec<u8>, f: impl FnMut(usize, f32)) -> std::io::Result<()> {
        let run = match &self.lists {
            Lists::File(file) => {
                file.run(term, buf)?;
                &buf[..]
            }
            Lists::Memory(m) => m.run(term),
        };
        postings::decode(run, self.covered, f).ok_or_else(damaged)
    }
}

/// Term and stem ids found by their text in the arena (a table of ids, not of strings).
#[derive(Debug, Default)]
struct Ids {
    terms: hashbrown::HashTable<u32>,
    stems: hashbrown::HashTable<u32>,
}

fn text_hash(text: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(text.as_bytes())
}

impl Corpus {
    /// Returns a piece of the arena.
    pub fn text(&self, span: Span) -> &str {
        span_text(&self.arena, span)
    }

    /// Returns the bytes the corpus holds on the heap: (pairs, everything else).
    pub fn heap_bytes(&self) -> (usize, usize) {
        use std::mem::size_of;
        let ids = self.ids.as_ref().map_or(0, |ids| (ids.terms.capacity() + ids.stems.capacity()) * 5);
        let rest = self.arena.capacity()
            + (self.terms.capacity() + self.stems.capacity()) * size_of::<Span>()
            + self.stem_of.capacity() * 4
            + self.docs.capacity() * size_of::<DocTerms>()
            + ids
            + self.inverted.as_ref().map_or(0, |inv| match &inv.lists {
                Lists::Memory(m) => m.heap_bytes() + inv.changed.capacity(),
                Lists::File(_) => inv.changed.capacity(),
            });
        (self.pairs.capacity() * size_of::<u32>(), rest)
    }

    /// Returns how many slots the corpus holds.
    fn pairs_len(&self) -> usize {
        self.file.as_ref().map_or(0, |f| f.count) + self.pairs.len()
    }

    /// Calls `f` with each of `docs` (ascending) and its packed terms, reading the slots still in
    /// the index file in one pass. Slots naming no term, or missing a weight, are an error (a
    /// damaged file).
    pub fn each_doc(&self, docs: &[usize], mut f: impl FnMut(usize, Slots<'_>)) -> std::io::Result<()> {
        let in_file = self.file.as_ref().map_or(0, |f| f.count);
        let mut reader = self.file.as_ref().map(cache::PairsFile::reader);
        let mut buf: Vec<u32> = Vec::new();
        for &i in docs {
            let Some(d) = self.docs.get(i) else { continue };
            let (start, end) = (d.start as usize, d.end as usize);
            if end <= in_file {
                let Some(r) = reader.as_mut() else { continue };
                r.read(start, end, &mut buf)?;
                let slots = Slots::new(&buf, d.terms as usize);
                if !slots.valid(self.terms.len()) {
                    return Err(damaged());
                }
                f(i, slots);
            } else {
                let owned = self.pairs.get(start.saturating_sub(in_file)..end - in_file).unwrap_or_default();
                f(i, Slots::new(owned, d.terms as usize));
            }
        }
        Ok(())
    }

    /// Reads the slots still in the index file into memory, so that documents can be added.
    pub fn materialize(&mut self) -> std::io::Result<()> {
        let Some(file) = self.file.take() else { return Ok(()) };
        let mut pairs = Vec::with_capacity(file.count + self.pairs.len());
        file.reader().read(0, file.count, &mut pairs)?;
        let valid = |d: &DocTerms| {
            let slots = pairs.get(d.start as usize..d.end as usize).unwrap_or_default();
            Slots::new(slots, d.terms as usize).valid(self.terms.len())
        };
        if !self.docs.iter().filter(|d| d.end as usize <= file.count).all(valid) {
            return Err(damaged());
        }
        pairs.append(&mut self.pairs);
        self.pairs = pairs;
        Ok(())
    }

    /// Puts `doc` at position `at`, replacing the document there, or after the last one; returns
    /// its position. A document whose text is the same as the one it replaces keeps its terms.
    pub fn put(&mut self, at: Option<usize>, doc: &Doc<'_>, ranking: Ranking) -> usize {
        let hash = doc.hash();
        let at = at.filter(|&i| i < self.docs.len());
        if let Some(i) = at.filter(|&i| self.docs[i].hash == hash) {
            return i;
        }
        let terms = self.tokenize(doc, hash, &Stems::default(), ranking);
        self.basis = Basis::default();
        match at {
            Some(i) => {
                self.docs[i] = terms;
                if let Some(inv) = self.inverted.as_mut().filter(|inv| i < inv.covered) {
                    inv.changed.resize(inv.covered, false);
                    if !std::mem::replace(&mut inv.changed[i], true) {
                        inv.replaced += 1;
                    }
                }
                i
            }
            None => {
                self.docs.push(terms);
                self.docs.len() - 1
            }
        }
    }

    /// Keeps only the documents `keep` names, their pairs packed in memory (replaced documents
    /// leave their pairs behind). Returns each old position's new one.
    pub fn compact(&mut self, keep: impl Fn(usize) -> bool) -> std::io::Result<Vec<Option<usize>>> {
        self.materialize()?;
        self.inverted = None;
        self.basis = Basis::default();
        let old = std::mem::take(&mut self.docs);
        let mut pairs = Vec::with_capacity(self.pairs.len());
        let mut moved = vec![None; old.len()];
        for (i, d) in old.into_iter().enumerate() {
            if !keep(i) {
                continue;
            }
            let start = pairs.len() as u32;
            pairs.extend_from_slice(self.pairs.get(d.start as usize..d.end as usize).unwrap_or_default());
            moved[i] = Some(self.docs.len());
            self.docs.push(DocTerms { start, end: pairs.len() as u32, ..d });
        }
        self.pairs = pairs;
        Ok(moved)
    }

    /// Makes the inverted lists again when more than an eighth of the documents are not in them
    /// (put since they were made), or when there are none.
    pub fn invert_if_stale(&mut self) -> std::io::Result<()> {
        let unlisted = match &self.inverted {
            Some(inv) => inv.replaced + self.docs.len().saturating_sub(inv.covered),
            None => usize::MAX,
        };
        if unlisted == 0 || (self.inverted.is_some() && unlisted <= self.docs.len() / 8) {
            return Ok(());
        }
        self.invert()
    }

    /// Makes the inverted lists of every document, in memory (a long-running reader's).
    pub fn invert(&mut self) -> std::io::Result<()> {
        let all: Vec<usize> = (0..self.docs.len()).collect();
        let lists = postings::build(self.terms.len(), |add| self.each_doc(&all, |i, slots| add(i as u32, slots)))?;
        let covered = self.docs.len();
        self.inverted = Some(Inverted { lists: Lists::Memory(lists), covered, changed: Vec::new(), replaced: 0 });
        Ok(())
    }

    /// Returns how many pairs the documents use, and how many the corpus holds.
    pub fn pairs_use(&self) -> (usize, usize) {
        (self.docs.iter().map(|d| (d.end - d.start) as usize).sum(), self.pairs_len())
    }

    /// Adds `text` to the arena.
    fn push_text(&mut self, text: &str) -> Span {
        let span = Span { start: self.arena.len() as u32, len: text.len() as u32 };
        self.arena.push_str(text);
        span
    }

    /// Returns the id of `stem`, if a term has it: from the id table when a long-running reader
    /// built it, else by a look at each stem (a command ranks once).
    fn stem_id(&self, stem: &str) -> Option<usize> {
        match &self.ids {
            Some(ids) => {
                ids.stems.find(text_hash(stem), |&i| self.text(self.stems[i as usize]) == stem).map(|&i| i as usize)
            }
            None => self.stems.iter().position(|&sp| self.text(sp) == stem),
        }
    }

    /// Builds the tables of term and stem ids.
    fn ids(&self) -> Ids {
        let mut ids = Ids {
            terms: hashbrown::HashTable::with_capacity(self.terms.len()),
            stems: hashbrown::HashTable::with_capacity(self.stems.len()),
        };
        for (table, spans) in [(&mut ids.terms, &self.terms), (&mut ids.stems, &self.stems)] {
            for (i, &span) in spans.iter().enumerate() {
                table.insert_unique(text_hash(self.text(span)), i as u32, |&j| text_hash(self.text(spans[j as usize])));
            }
        }
        ids
    }

    /// Returns the id of `term` (lower-cased token), adding it with its stem when new.
    fn term_id_in(&mut self, ids: &mut Ids, term: &str, stems: &Stems, ranking: Ranking) -> u32 {
        let hash = text_hash(term);
        if let Some(&id) = ids.terms.find(hash, |&i| self.text(self.terms[i as usize]) == term) {
            return id;
        }
        let stem = match ranking {
            Ranking::Full => stems.stem_once(term),
            Ranking::Plain => std::borrow::Cow::Borrowed(term),
        };
        self.add_term(ids, term, hash, &stem)
    }

    /// Returns the id of `term`, adding it with `stem` when new.
    fn intern(&mut self, ids: &mut Ids, term: &str, stem: &str) -> u32 {
        let hash = text_hash(term);
        match ids.terms.find(hash, |&i| self.text(self.terms[i as usize]) == term) {
            Some(&id) => id,
            None => self.add_term(ids, term, hash, stem),
        }
    }

    /// Adds `term` (not in the corpus; `hash` its [`text_hash`]) with `stem`, and returns its id.
    fn add_term(&mut self, ids: &mut Ids, term: &str, hash: u64, stem: &str) -> u32 {
        let stem_hash = text_hash(stem);
        let known = ids.stems.find(stem_hash, |&i| self.text(self.stems[i as usize]) == stem).copied();
        let stem_id = match known {
            Some(s) => s,
            None => {
                let s = self.stems.len() as u32;
                let span = self.push_text(stem);
                self.stems.push(span);
                let (arena, spans) = (&self.arena, &self.stems);
                ids.stems.insert_unique(stem_hash, s, |&j| text_hash(span_text(arena, spans[j as usize])));
                s
            }
        };
        let id = self.terms.len() as u32;
        let span = self.push_text(term);
        self.terms.push(span);
        self.stem_of.push(stem_id);
        let (arena, spans) = (&self.arena, &self.terms);
        ids.terms.insert_unique(hash, id, |&j| text_hash(span_text(arena, spans[j as usize])));
        id
    }

    /// Tokenizes `doc` into this corpus (its vocabulary and pairs) and returns it.
    fn tokenize(&mut self, doc: &Doc<'_>, hash: u64, stems: &Stems, ranking: Ranking) -> DocTerms {
        let mut found: Vec<(u32, f32)> = Vec::new();
        let mut len = 0.0f32;
        let mut ids = self.ids.take().unwrap_or_else(|| self.ids());
        for (field, text) in doc.fields.iter().enumerate() {
            let weight = match ranking {
                Ranking::Full => WEIGHTS[field],
                Ranking::Plain => 1.0,
            };
            let mut add = |token: &str| {
                found.push((self.term_id_in(&mut ids, token, stems, ranking), weight));
                len += weight;
            };
            match ranking {
                Ranking::Full => tokens::each_token(text, &mut add),
                Ranking::Plain => {
                    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
                        add(&word.to_lowercase());
                    }
                }
            }
        }
        self.ids = Some(ids);
        // Each term once, its weights summed (in order of the fields, for the same sum every time).
        found.sort_by_key(|(id, _)| *id);
        let mut terms: Vec<(u32, f32)> = Vec::with_capacity(found.len());
        for (id, w) in found {
            match terms.last_mut() {
                Some((last, sum)) if *last == id => *sum += w,
                _ => terms.push((id, w)),
            }
        }
        let start = self.pairs_len() as u32;
        let n = packed::push(&mut self.pairs, &terms);
        DocTerms { key: doc.key, hash, len, start, end: self.pairs_len() as u32, terms: n as u32 }
    }

    /// Adds the vocabulary of `other` (a corpus whose pairs are all in memory) and the pairs of
    /// its documents `docs`, and returns those documents as this corpus holds them.
    fn append(&mut self, other: &Corpus, docs: &[DocTerms]) -> Vec<DocTerms> {
        let mut ids = self.ids.take().unwrap_or_else(|| self.ids());
        let ours: Vec<u32> = (0..other.terms.len())
            .map(|t| {
                let stem = other.stem_of.get(t).and_then(|&s| other.stems.get(s as usize)).copied().unwrap_or_default();
                self.intern(&mut ids, other.text(other.terms[t]), other.text(stem))
            })
            .collect();
        self.ids = Some(ids);
        let mut pairs: Vec<(u32, f32)> = Vec::new();
        docs.iter()
            .map(|d| {
                let slots = other.pairs.get(d.start as usize..d.end as usize).unwrap_or_default();
                pairs.clear();
                pairs.extend(Slots::new(slots, d.terms as usize).pairs().map(|(t, f)| (ours[t as usize], f)));
                pairs.sort_by_key(|(id, _)| *id);
                let start = self.pairs_len() as u32;
                let terms = packed::push(&mut self.pairs, &pairs) as u32;
                DocTerms { start, end: self.pairs_len() as u32, terms, ..*d }
            })
            .collect()
    }
}

/// Documents to tokenize from which a second thread takes every other chunk.
const PARALLEL_DOCS: usize = if cfg!(test) { 8 } else { 2048 };

/// The documents a thread tokenizes at a time into a corpus of its own.
const CHUNK_DOCS: usize = if cfg!(test) { 2 } else { 1024 };

/// Builds the corpus of `docs` for `ranking`: each document reused from `cached` when its key and
/// hash match there, else tokenized. Returns the corpus (documents in the order of `docs`) and
/// how many documents were tokenized anew.
#[cfg(test)]
pub fn corpus(docs: &[Doc<'_>], cached: Option<Corpus>, ranking: Ranking) -> (Corpus, usize) {
    let keys: Vec<(u64, u64)> = docs.iter().map(|d| (d.key, d.hash())).collect();
    corpus_of(&keys, |i| &docs[i], cached, ranking)
}

/// Builds the corpus of the documents `keys` names for `ranking`: each document reused from
/// `cached` when its key and hash match there, else made (`doc(i)`) and tokenized. Returns the
/// corpus (documents in the order of `keys`) and how many documents were tokenized anew. `keys`
/// holds each document's key and [`Doc::hash`]: a document is made only to be tokenized, so the
/// documents of 100,000 memories are never held at once.
pub fn corpus_of<'d, D: std::borrow::Borrow<Doc<'d>>>(
    keys: &[(u64, u64)],
    doc: impl Fn(usize) -> D + Sync,
    cached: Option<Corpus>,
    ranking: Ranking,
) -> (Corpus, usize) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    corpus_on(keys, doc, cached, ranking, threads)
}

/// [`corpus_of`], tokenizing on two threads when `threads` allows and there are many documents.
fn corpus_on<'d, D: std::borrow::Borrow<Doc<'d>>>(
    keys: &[(u64, u64)],
    doc: impl Fn(usize) -> D + Sync,
    cached: Option<Corpus>,
    ranking: Ranking,
    threads: usize,
) -> (Corpus, usize) {
    let mut c = cached.unwrap_or_default();
    let same = |c: &Corpus, j: usize, i: usize| c.docs.get(j).is_some_and(|d| (d.key, d.hash) == keys[i]);
    // The usual case: the documents of the last recall, in the same order.
    if c.docs.len() == keys.len() && (0..keys.len()).all(|i| same(&c, i, i)) {
        return (c, 0);
    }
    // Documents change: the cached pairs move into memory, where new ones join them (an index
    // that cannot be read is started afresh); the documents move, so the lists and the basis no
    // longer hold.
    c.inverted = None;
    c.basis = Basis::default();
    if c.materialize().is_err() {
        c = Corpus::default();
    }
    let old_docs = std::mem::take(&mut c.docs);
    let by_key: HashMap<u64, usize> = old_docs.iter().enumerate().map(|(i, d)| (d.key, i)).collect();
    // Each document as the cache holds it, or a placeholder for one to tokenize (`todo`).
    let mut todo: Vec<usize> = Vec::new();
    let mut out: Vec<DocTerms> = keys
        .iter()
        .enumerate()
        .map(|(i, &(key, hash))| {
            let at = if old_docs.get(i).is_some_and(|d| d.key == key) { Some(i) } else { by_key.get(&key).copied() };
            match at.map(|j| old_docs[j]).filter(|d| d.hash == hash) {
                Some(d) => d,
                None => {
                    todo.push(i);
                    EMPTY_DOC
                }
            }
        })
        .collect();
    drop((by_key, old_docs));
    let stems = Stems::default();
    let chunks: Vec<&[usize]> = todo.chunks(CHUNK_DOCS).collect();
    // With two threads, every other chunk on the second one, each into a small corpus of its own
    // that joins this one as soon as it is done (the term ids differ from one thread's, the
    // scores do not: every weight is a whole number of halves, so their sums do not depend on
    // the order). Chunks join in their order, so the ids do not depend on the threads' timing;
    // and only a few chunks are ever apart, not half the corpus.
    let parallel = threads >= 2 && todo.len() >= PARALLEL_DOCS;
    let theirs = |n: usize| parallel && n % 2 == 1;
    std::thread::scope(|scope| {
        let (sent, received) = std::sync::mpsc::sync_channel::<(Corpus, Vec<DocTerms>)>(2);
        let doc = &doc;
        let chunks = &chunks;
        let other = parallel.then(|| {
            scope.spawn(move || {
                let stems = Stems::default();
                for chunk in (0..chunks.len()).filter(|&n| theirs(n)).map(|n| chunks[n]) {
                    let mut part = Corpus::default();
                    let terms = chunk.iter().map(|&i| part.tokenize(doc(i).borrow(), keys[i].1, &stems, ranking));
                    let terms = terms.collect();
                    if sent.send((part, terms)).is_err() {
                        return;
                    }
                }
            })
        });
        for (n, chunk) in chunks.iter().enumerate() {
            if !theirs(n) {
                for &i in *chunk {
                    out[i] = c.tokenize(doc(i).borrow(), keys[i].1, &stems, ranking);
                }
                continue;
            }
            // A closed channel: the other thread panicked, which the join below passes on.
            let Ok((part, terms)) = received.recv() else { break };
            for (&i, d) in chunk.iter().zip(c.append(&part, &terms)) {
                out[i] = d;
            }
        }
        if let Some(other) = other {
            other.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        }
    });
    c.docs = out;
    (c, todo.len())
}

/// One ranked result: the document's position in the corpus and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    pub doc: usize,
    pub score: f64,
}

/// Scores the candidate documents (`candidate(i)` says whether document `i` is one) for `query`:
/// every candidate that at least one query word matches, unordered.
/// Fails only when the index file cannot be read (the caller ranks again without it).
pub fn rank(
    corpus: &Corpus,
    query: &str,
    ranking: Ranking,
    candidate: impl Fn(usize) -> bool,
) -> std::io::Result<Vec<Scored>> {
    let candidates = Candidates::of(corpus.docs.len(), candidate);
    if candidates.count == 0 {
        return Ok(Vec::new());
    }
    let words = query_words(query, ranking);
    let mut stems = Stems::default();
    let word_stems: Vec<String> = words
        .iter()
        .map(|word| match ranking {
            Ranking::Full => stems.stem(word).to_string(),
            Ranking::Plain => word.clone(),
        })
        .collect();
    // Each query word: the terms its stem matches, if it has any.
    let by_stem: Vec<Option<Vec<bool>>> = word_stems
        .iter()
        .map(|stem| {
            let s = corpus.stem_id(stem)?;
            Some(corpus.stem_of.iter().map(|&st| st as usize == s).collect())
        })
        .collect();
    // A word falls back to the terms that contain it (co-cli's rule, at half weight) when it is
    // long enough and no candidate holds its stem.
    let substring = |word: &str| -> Option<(Vec<bool>, f64)> {
        if ranking != Ranking::Full || word.chars().count() < FALLBACK_MIN_CHARS {
            return None;
        }
        let finder = memchr::memmem::Finder::new(word);
        let hits: Vec<bool> = corpus.terms.iter().map(|&t| finder.find(corpus.text(t).as_bytes()).is_some()).collect();
        hits.contains(&true).then_some((hits, FALLBACK_WEIGHT))
    };
    // Every matcher, and the query word it is for: directly (its stem, or the substring
    // fallback), or through the thesaurus.
    let mut matchers: Vec<(Vec<bool>, f64)> = Vec::new();
    let mut owners: Vec<(usize, Via)> = Vec::new();
    // First the stems, and the fallback of the words no document's stem matches at all.
    let mut stem_matcher: Vec<Option<usize>> = Vec::new();
    for (w, (word, hits)) in words.iter().zip(&by_stem).enumerate() {
        match hits {
            Some(hits) => {
                stem_matcher.push(Some(matchers.len()));
                matchers.push((hits.clone(), 1.0));
                owners.push((w, Via::Direct));
            }
            None => {
                stem_matcher.push(None);
                if let Some(m) = substring(word) {
                    matchers.push(m);
                    owners.push((w, Via::Direct));
                }
            }
        }
    }
    if ranking == Ranking::Full {
        for (w, hits) in related_terms(corpus, &word_stems).into_iter().enumerate() {
            if let Some(hits) = hits {
                matchers.push((hits, thesaurus::RELATED_WEIGHT));
                owners.push((w, Via::Related));
            }
        }
    }
    // Per candidate and query word, the weighted frequency of the matched terms.
    let mut freqs = term_frequencies(corpus, &candidates, &matchers)?;
    // A stem only other documents hold (removed ones, or another store's): that word falls back
    // too, and the candidates are read again (rare).
    let unmatched: Vec<usize> =
        stem_matcher.iter().enumerate().filter_map(|(w, q)| q.filter(|&q| freqs.df(q) == 0).map(|_| w)).collect();
    if !unmatched.is_empty() {
        let dropped: Vec<usize> = unmatched.iter().filter_map(|&w| stem_matcher[w]).collect();
        let kept = |q: &usize| !dropped.contains(q);
        owners = owners.into_iter().enumerate().filter(|(q, _)| kept(q)).map(|(_, o)| o).collect();
        matchers = matchers.into_iter().enumerate().filter(|(q, _)| kept(q)).map(|(_, m)| m).collect();
        for &w in &unmatched {
            if let Some(m) = substring(&words[w]) {
                matchers.push(m);
                owners.push((w, Via::Direct));
            }
        }
        freqs = term_frequencies(corpus, &candidates, &matchers)?;
    }
    if matchers.is_empty() {
        return Ok(Vec::new());
    }
    let n = candidates.count as f64;
    let avgdl = candidates.iter().map(|i| f64::from(corpus.docs[i].len)).sum::<f64>() / n;
    let idf: Vec<f64> = (0..matchers.len())
        .map(|q| {
            let df = freqs.df(q) as f64;
            ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
        })
        .collect();
    Ok(freqs
        .rows()
        .map(|(i, tf)| {
            let dl = f64::from(corpus.docs[i].len);
            let norm = K1 * (1.0 - B + B * dl / avgdl.max(f64::MIN_POSITIVE));
            // A word matched directly counts only so: its related words add nothing then.
            let direct =
                |w: usize| owners.iter().zip(tf).any(|(&(o, via), &f)| o == w && via == Via::Direct && f > 0.0);
            let score = tf
                .iter()
                .enumerate()
                .filter(|(q, f)| **f > 0.0 && (owners[*q].1 == Via::Direct || !direct(owners[*q].0)))
                .map(|(q, &f)| {
                    let f = f64::from(f);
                    matchers[q].1 * idf[q] * f * (K1 + 1.0) / (f + norm)
                })
                .sum();
            Scored { doc: i, score }
        })
        .collect())
}

/// How a matcher matches its query word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    /// By the word's stem, or the substring fallback.
    Direct,
    /// By a word related to it in the thesaurus.
    Related,
}

/// For each query word (by its stem), the terms whose stem is related to it in the thesaurus and
/// is neither its own nor another query word's (those match directly), if any: one pass over the
/// corpus's stems for the whole query.
fn related_terms(corpus: &Corpus, word_stems: &[String]) -> Vec<Option<Vec<bool>>> {
    let t = thesaurus::shipped();
    let mut wanted: HashMap<&str, Vec<usize>> = HashMap::default();
    for (w, stem) in word_stems.iter().enumerate() {
        for r in t.related(stem).iter().filter(|r| !word_stems.contains(r)) {
            wanted.entry(r.as_str()).or_default().push(w);
        }
    }
    let mut out = vec![None; word_stems.len()];
    if wanted.is_empty() {
        return out;
    }
    // Which query words each stem of the corpus is related to, one bit each (words past the 64th
    // of a query get no related words).
    let mut of_stem: Vec<u64> = vec![0; corpus.stems.len()];
    for (s, &span) in corpus.stems.iter().enumerate() {
        if let Some(ws) = wanted.get(corpus.text(span)) {
            of_stem[s] = ws.iter().filter(|&&w| w < 64).fold(0, |m, &w| m | 1 << w);
        }
    }
    for (t, &s) in corpus.stem_of.iter().enumerate() {
        let mut m = of_stem.get(s as usize).copied().unwrap_or(0);
        while m != 0 {
            let w = m.trailing_zeros() as usize;
            out[w].get_or_insert_with(|| vec![false; corpus.terms.len()])[t] = true;
            m &= m - 1;
        }
    }
    out
}

/// For each candidate that a matcher matches, the weighted frequency of each matcher's terms in
/// it, in one flat table (no allocation per document): row `k` belongs to document `docs[k]`.
struct Freqs {
    docs: Vec<usize>,
    tf: Vec<f32>,
    width: usize,
}

impl Freqs {
    /// Each matched document and its row.
    fn rows(&self) -> impl Iterator<Item = (usize, &[f32])> {
        self.docs.iter().copied().zip(self.tf.chunks_exact(self.width.max(1)))
    }

    /// How many documents matcher `q` matches.
    fn df(&self, q: usize) -> usize {
        self.rows().filter(|(_, tf)| tf[q] > 0.0).count()
    }
}

/// The candidate documents of a ranking, one bit each (a list of 100,000 positions would be
/// 800 KB for each query of a long-running server).
struct Candidates {
    bits: Vec<u64>,
    count: usize,
}

impl Candidates {
    /// The documents `0..docs` that `candidate` takes.
    fn of(docs: usize, candidate: impl Fn(usize) -> bool) -> Candidates {
        let mut bits = vec![0u64; docs.div_ceil(64)];
        let mut count = 0;
        for i in (0..docs).filter(|&i| candidate(i)) {
            bits[i >> 6] |= 1 << (i & 63);
            count += 1;
        }
        Candidates { bits, count }
    }

    fn has(&self, i: usize) -> bool {
        self.bits.get(i >> 6).is_some_and(|w| w >> (i & 63) & 1 == 1)
    }

    /// The candidates, ascending.
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.bits.iter().enumerate().flat_map(|(w, &word)| {
            let mut m = word;
            std::iter::from_fn(move || {
                (m != 0).then(|| {
                    let i = w * 64 + m.trailing_zeros() as usize;
                    m &= m - 1;
                    i
                })
            })
        })
    }
}

/// Which matchers each matched term belongs to, as a bit mask, by term (ascending): only the
/// terms some matcher holds, not one mask per term of the corpus.
fn term_masks(matchers: &[(Vec<bool>, f64)]) -> Vec<(u32, u64)> {
    let mut masks: Vec<(u32, u64)> = Vec::new();
    for (q, (hits, _)) in matchers.iter().enumerate() {
        masks.extend(hits.iter().enumerate().filter(|(_, h)| **h).map(|(t, _)| (t as u32, 1u64 << q)));
    }
    masks.sort_unstable_by_key(|&(t, _)| t);
    masks.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 |= later.1;
        }
        same
    });
    masks
}

/// Reads the candidates' terms and returns their frequencies for each matcher.
fn term_frequencies(corpus: &Corpus, candidates: &Candidates, matchers: &[(Vec<bool>, f64)]) -> std::io::Result<Freqs> {
    let width = matchers.len();
    let mut freqs = Freqs { docs: Vec::new(), tf: Vec::new(), width };
    if width == 0 {
        return Ok(freqs);
    }
    // Which matchers each term belongs to, as a bit mask: most terms belong to none, so a pair
    // costs one bit lookup (a query of more than 64 words looks each matcher up instead).
    let masks: Option<Vec<(u32, u64)>> = (width <= 64).then(|| term_masks(matchers));
    let mask_of = |masks: &[(u32, u64)], t: usize| match masks.binary_search_by_key(&(t as u32), |&(t, _)| t) {
        Ok(k) => masks[k].1,
        Err(_) => 0,
    };
    // The terms any matcher holds, one bit each.
    let mut any = vec![0u64; corpus.terms.len().div_ceil(64)];
    for &(t, _) in masks.iter().flatten() {
        if let Some(w) = any.get_mut(t as usize >> 6) {
            *w |= 1 << (t & 63);
        }
    }
    // With inverted lists, the candidates they cover are read from the lists of the matched
    // terms alone; the rest (documents put since) from their own terms. Each matched document's
    // row, by document: the rows are put in the documents' order at the end (as a scan of the
    // candidates makes them).
    let mut row_of: Option<Vec<u32>> = None;
    let rest: Vec<usize> = match (&corpus.inverted, &masks) {
        (Some(inv), Some(masks)) => {
            let rows = row_of.insert(vec![u32::MAX; corpus.docs.len()]);
            let mut buf = Vec::new();
            for &(t, mask) in masks {
                inv.each(t as usize, &mut buf, |i, f| {
                    if !(candidates.has(i) && inv.covers(i)) {
                        return;
                    }
                    if rows[i] == u32::MAX {
                        rows[i] = freqs.docs.len() as u32;
                        freqs.docs.push(i);
                        freqs.tf.resize(freqs.tf.len() + width, 0.0);
                    }
                    let row = rows[i] as usize * width;
                    let mut m = mask;
                    while m != 0 {
                        freqs.tf[row + m.trailing_zeros() as usize] += f;
                        m &= m - 1;
                    }
                })?;
            }
            candidates.iter().filter(|&i| !inv.covers(i)).collect()
        }
        _ => candidates.iter().collect(),
    };
    corpus.each_doc(&rest, |i, slots| {
        let row = freqs.tf.len();
        freqs.tf.resize(row + width, 0.0);
        let mut matched = false;
        match &masks {
            Some(masks) => {
                // The hot loop: one bit per slot, from a set small enough to stay in the nearest
                // cache (12 KiB for 100,000 terms); the mask and the weight only for a match.
                let mut wide = 0;
                for &slot in slots.terms {
                    let t = Slots::term(slot) as usize;
                    if any.get(t >> 6).is_none_or(|w| w >> (t & 63) & 1 == 0) {
                        wide += usize::from(Slots::is_wide(slot));
                        continue;
                    }
                    let mut m = mask_of(masks, t);
                    if m != 0 {
                        let f = slots.weight(slot, wide);
                        while m != 0 {
                            freqs.tf[row + m.trailing_zeros() as usize] += f;
                            m &= m - 1;
                        }
                        matched = true;
                    }
                    wide += usize::from(Slots::is_wide(slot));
                }
            }
            None => {
                for (t, f) in slots.pairs() {
                    for (q, (hits, _)) in matchers.iter().enumerate() {
                        if hits.get(t as usize).copied().unwrap_or(false) {
                            freqs.tf[row + q] += f;
                            matched = true;
                        }
                    }
                }
            }
        }
        if matched {
            if let Some(rows) = &mut row_of {
                rows[i] = freqs.docs.len() as u32;
            }
            freqs.docs.push(i);
        } else {
            freqs.tf.truncate(row);
        }
    })?;
    if let Some(rows) = row_of {
        freqs.in_document_order(&rows);
    }
    Ok(freqs)
}

impl Freqs {
    /// Puts the rows in the order of their documents (as a scan of the candidates makes them),
    /// `rows` the row of each document (`u32::MAX`: none): a walk over the documents, no sort.
    fn in_document_order(&mut self, rows: &[u32]) {
        let w = self.width.max(1);
        let mut docs = Vec::with_capacity(self.docs.len());
        let mut tf = Vec::with_capacity(self.tf.len());
        for (i, &r) in rows.iter().enumerate().filter(|(_, r)| **r != u32::MAX) {
            docs.push(i);
            tf.extend_from_slice(&self.tf[r as usize * w..(r as usize + 1) * w]);
        }
        (self.docs, self.tf) = (docs, tf);
    }
}

/// Returns the distinct words of a query, in order; for the full ranking without its stop words,
/// unless it holds nothing else.
fn query_words(query: &str, ranking: Ranking) -> Vec<String> {
    let mut words: Vec<String> = match ranking {
        Ranking::Full => tokens::tokens(query),
        Ranking::Plain => {
            query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
        }
    };
    if ranking == Ranking::Full && !words.iter().all(|w| tokens::is_stop_word(w)) {
        words.retain(|w| !tokens::is_stop_word(w));
    }
    let mut seen = std::collections::HashSet::new();
    words.retain(|w| seen.insert(w.clone()));
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short name (up to 8 bytes) as a key, and back: the tests name their documents.
    pub(super) fn key(name: &str) -> u64 {
        let mut b = [0u8; 8];
        b[..name.len()].copy_from_slice(name.as_bytes());
        u64::from_le_bytes(b)
    }

    fn name(key: u64) -> String {
        String::from_utf8(key.to_le_bytes().into_iter().take_while(|&b| b != 0).collect()).unwrap()
    }

    fn doc(name: &str, text: &str, labels: &str, notes: &str) -> Doc<'static> {
        let fields = [text.to_string().into(), labels.to_string().into(), notes.to_string().into()];
        Doc { key: key(name), fields }
    }

    fn ranked(docs: &[Doc<'_>], query: &str) -> Vec<(String, f64)> {
        let (c, _) = corpus(docs, None, Ranking::Full);
        let mut out: Vec<(String, f64)> = rank(&c, query, Ranking::Full, |_| true)
            .unwrap()
            .into_iter()
            .map(|s| (name(c.docs[s.doc].key), s.score))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out
    }

    /// Tokenized on two threads, a corpus holds each document's terms and ranks as one thread's.
    #[test]
    fn a_corpus_tokenized_on_two_threads_equals_one_tokenized_on_one() {
        let words = ["Run", "the", "tests", "cargo", "nextest", "ApiError", "deploys", "über", "port", "8080"];
        let docs: Vec<Doc<'static>> = (0..40)
            .map(|i: usize| {
                let text: Vec<&str> = (0..6).map(|k| words[(i * 7 + k * 3) % words.len()]).collect();
                doc(&format!("d{i}"), &text.join(" "), words[i % 4], if i.is_multiple_of(3) { "x2" } else { "" })
            })
            .collect();
        let terms_of = |c: &Corpus| -> Vec<Vec<(String, String, f32)>> {
            let all: Vec<usize> = (0..c.docs.len()).collect();
            let mut out = Vec::new();
            c.each_doc(&all, |_, slots| {
                let mut terms: Vec<(String, String, f32)> = slots
                    .pairs()
                    .map(|(t, f)| {
                        let stem = c.stems[c.stem_of[t as usize] as usize];
                        (c.text(c.terms[t as usize]).to_string(), c.text(stem).to_string(), f)
                    })
                    .collect();
                terms.sort_by(|a, b| a.0.cmp(&b.0));
                out.push(terms);
            })
            .unwrap();
            out
        };
        for ranking in [Ranking::Full, Ranking::Plain] {
            let keys: Vec<(u64, u64)> = docs.iter().map(|d| (d.key, d.hash())).collect();
            let (one, n1) = corpus_on(&keys, |i| &docs[i], None, ranking, 1);
            let (two, n2) = corpus_on(&keys, |i| &docs[i], None, ranking, 2);
            assert_eq!((n1, n2), (40, 40));
            assert_eq!(terms_of(&one), terms_of(&two));
            assert_eq!(
                one.docs.iter().map(|d| (d.key, d.hash, d.len)).collect::<Vec<_>>(),
                two.docs.iter().map(|d| (d.key, d.hash, d.len)).collect::<Vec<_>>()
            );
            for query in ["run tests", "api error", "deploy port", "uber 8080 x2"] {
                let scores = |c: &Corpus| rank(c, query, ranking, |_| true).unwrap();
                assert_eq!(scores(&one), scores(&two), "{query}");
            }
        }
    }

    #[test]
    fn candidates_are_bits_and_masks_only_the_matched_terms() {
        let take = |i: usize| i.is_multiple_of(3) || i == 64 || i == 129;
        let c = Candidates::of(130, take);
        let want: Vec<usize> = (0..130).filter(|&i| take(i)).collect();
        assert_eq!(c.iter().collect::<Vec<_>>(), want);
        assert_eq!(c.count, want.len());
        assert!((0..200).all(|i| c.has(i) == (i < 130 && take(i))), "none past the documents");
        assert_eq!(Candidates::of(0, |_| true).iter().count(), 0);
        let hits = |ts: &[usize]| (0..10).map(|t| ts.contains(&t)).collect::<Vec<bool>>();
        let matchers = [(hits(&[7, 2]), 1.0), (hits(&[2, 5]), 0.5), (hits(&[]), 1.0), (hits(&[9]), 1.0)];
        assert_eq!(term_masks(&matchers), [(2, 0b11), (5, 0b10), (7, 0b1), (9, 0b1000)]);
    }

    #[test]
    fn stems_match_and_rarer_words_weigh_more() {
        let docs = [
            doc("a", "Run the tests with cargo nextest run", "testing", ""),
            doc("b", "The service listens on port 8080", "", ""),
            doc("c", "Deploys go out on Tuesdays", "deploy", ""),
        ];
        let r = ranked(&docs, "how do we run the tests");
        assert_eq!(r[0].0, "a");
        assert!(r.iter().all(|(k, _)| k != "c"), "{r:?}");
        assert_eq!(ranked(&docs, "deploying")[0].0, "c", "deploying and Deploys share a stem");
        assert!(ranked(&docs, "").is_empty());
    }

    #[test]
    fn a_word_that_matches_nothing_by_stem_matches_inside_words_at_half_weight() {
        let docs = [doc("a", "CI runs nextest", "", ""), doc("b", "unrelated words", "", "")];
        let r = ranked(&docs, "test");
        assert_eq!(r.len(), 1);
        let full = ranked(&[doc("a", "CI runs test", "", ""), doc("b", "unrelated words", "", "")], "test");
        assert!((r[0].1 - full[0].1 / 2.0).abs() < 1e-9, "{r:?} {full:?}");
        assert!(ranked(&docs, "ne").is_empty(), "two characters never match inside a word");
    }

    #[test]
    fn labels_weigh_twice_and_notes_half() {
        let docs =
            [doc("text", "pagination", "", ""), doc("tag", "", "pagination", ""), doc("note", "", "", "pagination")];
        let r = ranked(&docs, "pagination");
        let keys: Vec<&str> = r.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["tag", "text", "note"], "{r:?}");
    }

    #[test]
    fn identifiers_are_found_by_their_parts() {
        let docs = [doc("a", "Return an ApiError from handlers", "", ""), doc("b", "Set max_tokens to 8000", "", "")];
        assert_eq!(ranked(&docs, "api error")[0].0, "a");
        assert_eq!(ranked(&docs, "apierror")[0].0, "a");
        assert_eq!(ranked(&docs, "MaxTokens")[0].0, "b");
    }

    #[test]
    fn cached_documents_are_reused_and_changed_ones_tokenized() {
        let docs = vec![doc("a", "one two", "", ""), doc("b", "three", "", "")];
        let (c, fresh) = corpus(&docs, None, Ranking::Full);
        assert_eq!(fresh, 2);
        let mut changed = docs.clone();
        changed[1] = doc("b", "three four", "", "");
        changed.push(doc("c", "five", "", ""));
        let (c2, fresh) = corpus(&changed, Some(c), Ranking::Full);
        assert_eq!(fresh, 2);
        assert_eq!(c2.docs.len(), 3);
        let (fromscratch, _) = corpus(&changed, None, Ranking::Full);
        let score = |c: &Corpus| rank(c, "four", Ranking::Full, |_| true).unwrap()[0].score;
        assert_eq!(score(&c2), score(&fromscratch));
    }

    #[test]
    fn stop_words_match_nothing_unless_the_query_holds_nothing_else() {
        let docs = [
            doc("tests", "Run the tests with cargo nextest", "", ""),
            doc("how", "How the gateway buffers what it reads", "", ""),
            doc("do", "Do not deploy on Fridays", "", ""),
        ];
        let keys = |r: Vec<(String, f64)>| r.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(keys(ranked(&docs, "how do I run the tests")), ["tests"]);
        assert_eq!(keys(ranked(&docs, "What is ApiError?")), Vec::<String>::new(), "no document holds api or error");
        let mut only = keys(ranked(&docs, "how do the"));
        only.sort();
        assert_eq!(only, ["do", "how", "tests"], "a query of stop words only matches them");
        let (c, _) = corpus(&docs, None, Ranking::Plain);
        assert_eq!(
            rank(&c, "how do I run the tests", Ranking::Plain, |_| true).unwrap().len(),
            3,
            "plain BM25 keeps them"
        );
    }

    #[test]
    fn related_words_match_at_half_weight_and_only_where_the_word_does_not_match_directly() {
        let docs = [
            doc("direct", "the suite of checks", "", ""),
            doc("related", "the verify step", "", ""),
            doc("other", "unrelated words here", "", ""),
        ];
        let r = ranked(&docs, "verify");
        assert_eq!(r.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["related", "direct"], "{r:?}");
        // The same document matched through the thesaurus scores half what it scores directly.
        let through = ranked(&[doc("a", "run the checks", "", ""), doc("b", "unrelated words", "", "")], "tests");
        let direct = ranked(&[doc("a", "run the tests", "", ""), doc("b", "unrelated words", "", "")], "tests");
        assert_eq!(through.len(), 1);
        assert!((through[0].1 - direct[0].1 / 2.0).abs() < 1e-9, "{through:?} {direct:?}");
        // A document holding the word and a related one scores as if it held the word only.
        let both =
            ranked(&[doc("a", "run the tests checks", "", ""), doc("b", "run the tests other", "", "")], "tests");
        assert!((both[0].1 - both[1].1).abs() < 1e-9, "{both:?}");
        // Plain BM25 knows no thesaurus.
        let (c, _) = corpus(&docs, None, Ranking::Plain);
        assert_eq!(rank(&c, "verify", Ranking::Plain, |_| true).unwrap().len(), 1);
    }

    #[test]
    fn a_related_word_that_is_also_asked_for_counts_only_directly() {
        // `build` and `compile` share a group: asked together, each matches its own word only.
        let docs = [doc("a", "compile it", "", ""), doc("b", "build it", "", ""), doc("c", "other text", "", "")];
        let together = ranked(&docs, "build compile");
        let alone = ranked(&docs, "compile");
        let score = |r: &[(String, f64)], k: &str| r.iter().find(|(n, _)| n == k).map(|(_, s)| *s).unwrap();
        assert!((score(&alone, "b") - score(&alone, "a") / 2.0).abs() < 1e-9, "build is related to compile: {alone:?}");
        assert!((score(&together, "a") - score(&alone, "a")).abs() < 1e-9, "compile counts once: {together:?}");
        assert!((score(&together, "a") - score(&together, "b")).abs() < 1e-9, "each by its own word: {together:?}");
    }

    #[test]
    fn plain_bm25_neither_stems_nor_splits() {
        let docs = [doc("a", "running ApiError", "", ""), doc("b", "other", "", "")];
        let (c, _) = corpus(&docs, None, Ranking::Plain);
        assert!(rank(&c, "run", Ranking::Plain, |_| true).unwrap().is_empty());
        assert!(rank(&c, "api", Ranking::Plain, |_| true).unwrap().is_empty());
        assert_eq!(rank(&c, "apierror", Ranking::Plain, |_| true).unwrap().len(), 1);
    }
}
