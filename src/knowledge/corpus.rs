//! The documents recall ranks, one per memory, record, open decision and session, and the
//! tokenized corpus of them that a long-running server keeps ([`LiveCorpus`]) and updates a
//! document at a time as files change. A command builds its corpus per run from
//! `.co-cli/cache/recall.idx` instead (`ops::recall`); both make their documents here.

use crate::copilot::Records;
use crate::copilot::jsonl::JsonlFile;
use crate::decisions::file::Decision;
use crate::kinds::Store;
use crate::memories::index::{Index, MemoryRef};
use crate::repo::Repo;
use crate::search::{self, Doc, Ranking};
use crate::session::Located;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// What ranked recall reads, borrowed from a [`Knowledge`](super::Knowledge) (read for one
/// command, or lent by a server): the sources a recall leaves out are `None` or empty.
#[derive(Clone, Copy)]
pub struct Parts<'a> {
    pub index: Option<&'a Index>,
    pub file: Option<&'a JsonlFile>,
    /// Every decision; only the open ones are documents.
    pub decisions: &'a [(PathBuf, Decision)],
    /// The open session first, then the ended ones.
    pub sessions: &'a [Located],
}

/// A document's item: what it is, borrowed from the [`Parts`] it was made from.
pub enum Item<'a> {
    Md(MemoryRef<'a>),
    /// A record by its position in the parsed records (the report owns the parse).
    Copilot(usize),
    Decision(&'a (PathBuf, Decision)),
    Session(&'a Located),
}

impl Item<'_> {
    pub fn source(&self) -> Store {
        match self {
            Item::Md(_) => Store::Md,
            Item::Copilot(_) => Store::Copilot,
            Item::Decision(_) => Store::Decision,
            Item::Session(_) => Store::Session,
        }
    }
}

/// What every document of a recall is, kept small, with its key and [`Doc::hash`] (the documents
/// themselves are not kept: [`document`] makes one again), and what its memories' documents were
/// made from.
pub struct Documents {
    pub slots: Vec<Slot>,
    pub keys: Vec<(u64, u64)>,
    /// The memories' documents come first: their count, and the digest of the index they were
    /// made from ([`Index::digest`]).
    pub basis: search::Basis,
}

/// Returns what every document of `p` (the records parsed from its file) is. The memories'
/// keys and hashes are taken from `cached` when its basis is the memory index's, else each
/// memory's document is made and hashed.
pub fn documents(p: Parts<'_>, records: Option<&Records<'_>>, cached: Option<&search::Corpus>) -> Documents {
    let (mut slots, mut keys) = (Vec::new(), Vec::new());
    let mut basis = search::Basis::default();
    if let Some(index) = p.index {
        slots.extend(index.positions().map(Slot::Md));
        let folder = index.trusted_folder().unwrap_or(0);
        basis = search::Basis { digest: index.digest(), docs: slots.len() as u32, folder };
        let same = |c: &&search::Corpus| (c.basis.digest, c.basis.docs) == (basis.digest, basis.docs);
        match cached.filter(|c| same(c) && c.docs.len() >= slots.len()) {
            Some(c) => keys.extend(c.docs[..slots.len()].iter().map(|d| (d.key, d.hash))),
            None => keys.extend(slots.iter().map(|&s| {
                let doc = document(s, p, records);
                (doc.key, doc.hash())
            })),
        }
    }
    each_document(Parts { index: None, ..p }, records, |slot, doc| {
        slots.push(slot);
        keys.push((doc.key, doc.hash()));
    });
    Documents { slots, keys, basis }
}

/// The document `slot` of `p` (the records parsed from its file), as [`documents`] saw it; an
/// empty one for a slot `p` lacks.
pub fn document<'a>(slot: Slot, p: Parts<'a>, records: Option<&Records<'_>>) -> Doc<'a> {
    let made = match slot {
        Slot::Md(pos) => p.index.map(|index| memory_doc(&index.at(pos))),
        Slot::Copilot(pos) => records.and_then(|all| Some(record_doc(all, &all.get(pos)?))),
        Slot::Decision(i) => p.decisions.get(i).map(|(path, d)| decision_doc(path, d)),
        Slot::Session(i) => p.sessions.get(i).map(session_doc),
    };
    made.unwrap_or_default()
}

/// Calls `f` with every document of `p` (the records parsed from its file), and what it is.
fn each_document<'a>(p: Parts<'a>, records: Option<&Records<'_>>, mut f: impl FnMut(Slot, Doc<'a>)) {
    if let Some(index) = p.index {
        for pos in index.positions() {
            f(Slot::Md(pos), memory_doc(&index.at(pos)));
        }
    }
    if let Some(all) = records {
        for (pos, r) in all.iter().enumerate() {
            f(Slot::Copilot(pos), record_doc(all, &r));
        }
    }
    for (i, (path, d)) in p.decisions.iter().enumerate().filter(|(_, (_, d))| d.status.is_open()) {
        f(Slot::Decision(i), decision_doc(path, d));
    }
    for (i, l) in p.sessions.iter().enumerate() {
        f(Slot::Session(i), session_doc(l));
    }
}

/// Returns the key and [`Doc::hash`] of a markdown memory's document.
pub fn memory_key_and_hash(m: &MemoryRef<'_>) -> (u64, u64) {
    let doc = memory_doc(m);
    (doc.key, doc.hash())
}

/// A markdown memory as a document: its text, its tags.
fn memory_doc<'a>(m: &MemoryRef<'a>) -> Doc<'a> {
    let fields = [Cow::Borrowed(m.content), Cow::Owned(m.tags.join(" ")), Cow::Borrowed("")];
    Doc { key: doc_key(Store::Md, m.file_name), fields }
}

/// A Copilot record as a document: its fact, its subject, its reason and citations.
fn record_doc<'a>(all: &Records<'_>, r: &crate::copilot::Record<'_>) -> Doc<'a> {
    let f = all.fields(r);
    let mut notes = f.reason.as_deref().unwrap_or("").to_string();
    for c in &f.citations {
        notes.push(' ');
        notes.push_str(c);
    }
    let fields = [Cow::Owned(r.fact.to_string()), Cow::Owned(r.subject.to_string()), Cow::Owned(notes)];
    Doc { key: doc_key(Store::Copilot, r.id), fields }
}

/// A decision as a document: its text, its tags.
fn decision_doc<'a>(path: &Path, d: &'a Decision) -> Doc<'a> {
    let fields = [Cow::Borrowed(d.content.as_str()), Cow::Owned(d.tags.join(" ")), Cow::Borrowed("")];
    Doc { key: doc_key(Store::Decision, &file_stem(path)), fields }
}

/// A session as a document: its focus and its summary.
fn session_doc<'a>(l: &Located) -> Doc<'a> {
    let text = format!("{}\n{}", l.session.focus, l.session.summary);
    Doc { key: doc_key(Store::Session, &file_stem(&l.path)), fields: [text.into(), "".into(), "".into()] }
}

/// Returns the key of the document named `name` (a memory's file name, a record's id, a
/// decision's or a session's file name without `.md`) of `source`: the name's hash, seeded by the
/// source. A memory's key is its file name's hash, the memory index's own (see
/// [`Index::named_by_hash`](crate::memories::index::Index::named_by_hash)). Two names of one
/// source with one 64-bit hash would share a document: one chance in 10^10 at 100,000 names.
fn doc_key(source: Store, name: &str) -> u64 {
    let seed = match source {
        Store::Md => 0,
        Store::Copilot => 1,
        Store::Decision => 2,
        Store::Session => 3,
        // Not documents of recall: seeds of their own all the same.
        Store::Context => 4,
        Store::Instructions => 5,
    };
    xxhash_rust::xxh3::xxh3_64_with_seed(name.as_bytes(), seed)
}

/// The tokenized documents of every source, kept by a long-running server and updated a
/// document at a time as files change (a command builds its corpus per run from
/// `.co-cli/cache/recall.idx` instead). Documents are found by their key; a removed one stays in
/// place, no longer a candidate, until [`LiveCorpus::compact`] packs the corpus.
pub struct LiveCorpus {
    pub corpus: search::Corpus,
    pub ranking: Ranking,
    /// Each document's source; `None` once it is removed.
    sources: Vec<Option<Store>>,
    /// The live documents' positions, found by their key (a hash already).
    at: hashbrown::HashTable<u32>,
}

impl LiveCorpus {
    /// Builds the corpus of every document in `p`, reusing the recall index file's documents
    /// whose text did not change; the pairs are then held in memory. The documents are made and
    /// put one at a time, so building holds the corpus and one document, never all of them.
    pub fn build(repo: &Repo, p: Parts<'_>) -> LiveCorpus {
        let ranking = repo.env.recall_ranking;
        let cached = match ranking {
            Ranking::Full => {
                repo.layout.cache_file("recall.idx").and_then(|p| search::cache::load(&p, &repo.layout.root))
            }
            Ranking::Plain => None,
        };
        let mut corpus = cached.unwrap_or_default();
        if corpus.materialize().is_err() {
            corpus = search::Corpus::default();
        }
        // The cached documents wait to be claimed by key; those no document claims are removed.
        let cached = corpus.docs.len();
        let mut live = LiveCorpus { corpus, ranking, sources: vec![Some(Store::Md); cached], at: Default::default() };
        live.map_keys();
        let mut claimed = vec![false; cached];
        let records = p.file.map(Records::parse);
        each_document(p, records.as_ref(), |slot, doc| {
            if let Some(c) = claimed.get_mut(live.put(slot.source(), &doc)) {
                *c = true;
            }
        });
        for (i, _) in claimed.iter().enumerate().filter(|(_, c)| !**c) {
            live.remove_at(i);
        }
        live.compact_only();
        live.corpus.pairs.shrink_to_fit();
        // Lists in memory (a failure leaves the documents to be scanned).
        live.corpus.inverted = None;
        let _ = live.corpus.invert();
        live
    }

    /// Returns the bytes the corpus holds on the heap: (pairs, everything else).
    pub fn heap_bytes(&self) -> (usize, usize) {
        let (pairs, rest) = self.corpus.heap_bytes();
        (pairs, rest + self.sources.capacity() * 2 + self.at.capacity() * 5)
    }

    fn map_keys(&mut self) {
        self.at.clear();
        for i in 0..self.corpus.docs.len() {
            if self.sources[i].is_some() {
                self.map_key(i);
            }
        }
    }

    /// Adds document `i` to the map of keys.
    fn map_key(&mut self, i: usize) {
        let docs = &self.corpus.docs;
        self.at.insert_unique(docs[i].key, i as u32, |&j| docs[j as usize].key);
    }

    /// Returns the position of the live document `key`.
    fn find(&self, key: u64) -> Option<usize> {
        let live = |&i: &u32| self.corpus.docs[i as usize].key == key && self.sources[i as usize].is_some();
        self.at.find(key, live).map(|&i| i as usize)
    }

    /// Returns a live document's source.
    pub fn source_of(&self, doc: usize) -> Option<Store> {
        self.sources.get(doc).copied().flatten()
    }

    /// Adds or replaces a document; returns its position.
    fn put(&mut self, source: Store, doc: &Doc<'_>) -> usize {
        let at = self.find(doc.key);
        let i = self.corpus.put(at, doc, self.ranking);
        if i == self.sources.len() {
            self.sources.push(Some(source));
        } else {
            self.sources[i] = Some(source);
        }
        if at.is_none() {
            self.map_key(i);
        }
        i
    }

    /// Removes a document, if it is there.
    fn remove(&mut self, key: u64) {
        if let Some(i) = self.find(key) {
            self.remove_at(i);
        }
    }

    /// Removes document `i`.
    fn remove_at(&mut self, i: usize) {
        self.sources[i] = None;
        if let Ok(entry) = self.at.find_entry(self.corpus.docs[i].key, |&j| j as usize == i) {
            entry.remove();
        }
    }

    /// Brings the documents of the markdown memory files `names` up to date with `index`.
    pub fn sync_memories(&mut self, index: &crate::memories::index::Index, names: &[String]) {
        for name in names {
            match index.named(name) {
                Some(m) => {
                    self.put(Store::Md, &memory_doc(&m));
                }
                None => self.remove(doc_key(Store::Md, name)),
            }
        }
        self.compact_if_sparse();
    }

    /// Brings the documents of one whole source (records, decisions or sessions: small ones) up
    /// to date with `p`.
    pub fn sync_source(&mut self, source: Store, p: Parts<'_>) {
        let records = p.file.map(Records::parse);
        let docs: Vec<Doc<'_>> = match source {
            Store::Md | Store::Context | Store::Instructions => return,
            Store::Copilot => records.iter().flat_map(|all| all.iter().map(|r| record_doc(all, &r))).collect(),
            Store::Decision => {
                p.decisions.iter().filter(|(_, d)| d.status.is_open()).map(|(path, d)| decision_doc(path, d)).collect()
            }
            Store::Session => p.sessions.iter().map(session_doc).collect(),
        };
        let keep: rustc_hash::FxHashSet<u64> = docs.iter().map(|d| d.key).collect();
        let gone: Vec<u64> = (0..self.sources.len())
            .filter(|&i| self.sources[i] == Some(source))
            .map(|i| self.corpus.docs[i].key)
            .filter(|k| !keep.contains(k))
            .collect();
        for key in gone {
            self.remove(key);
        }
        for doc in &docs {
            self.put(source, doc);
        }
        self.compact_if_sparse();
    }

    /// Packs the corpus when removed and replaced documents hold more than half of it, and makes
    /// its inverted lists again when many documents are not in them.
    fn compact_if_sparse(&mut self) {
        self.compact_only();
        let _ = self.corpus.invert_if_stale();
    }

    fn compact_only(&mut self) {
        let (used, held) = self.corpus.pairs_use();
        let dead = self.sources.iter().filter(|s| s.is_none()).count();
        if held <= 2 * used + 65_536 && dead * 2 <= self.sources.len() + 1024 {
            return;
        }
        let sources = &self.sources;
        if let Ok(moved) = self.corpus.compact(|i| sources[i].is_some()) {
            let mut kept = vec![None; self.corpus.docs.len()];
            for (old, new) in moved.iter().enumerate() {
                if let Some(new) = new {
                    kept[*new] = self.sources[old];
                }
            }
            self.sources = kept;
            self.map_keys();
        }
    }

    /// Returns the item document `doc` is, found in `p` by its key.
    pub fn item<'a>(&self, p: Parts<'a>, records: Option<&Records<'a>>, doc: usize) -> Option<Item<'a>> {
        let key = self.corpus.docs.get(doc)?.key;
        let source = self.source_of(doc)?;
        let named = |name: &str| doc_key(source, name) == key;
        Some(match source {
            Store::Md => Item::Md(p.index?.named_by_hash(key)?),
            Store::Copilot => Item::Copilot(records?.iter().position(|r| named(r.id))?),
            Store::Decision => Item::Decision(p.decisions.iter().find(|(path, _)| named(&file_stem(path)))?),
            Store::Session => Item::Session(p.sessions.iter().find(|l| named(&file_stem(&l.path)))?),
            Store::Context | Store::Instructions => return None,
        })
    }
}

/// Returns a file's name without `.md`.
pub fn file_stem(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.strip_suffix(".md").map(str::to_string).unwrap_or(name)
}

/// What a document is, by position: the result it becomes when it is shown.
#[derive(Debug, Clone, Copy)]
pub enum Slot {
    Md(crate::memories::index::Pos),
    Copilot(usize),
    Decision(usize),
    Session(usize),
}

impl Slot {
    /// Returns the item this slot of `p` is.
    pub fn item<'a>(self, p: Parts<'a>) -> Option<Item<'a>> {
        Some(match self {
            Slot::Md(pos) => Item::Md(p.index?.at(pos)),
            Slot::Copilot(pos) => Item::Copilot(pos),
            Slot::Decision(i) => Item::Decision(p.decisions.get(i)?),
            Slot::Session(i) => Item::Session(p.sessions.get(i)?),
        })
    }

    pub fn source(self) -> Store {
        match self {
            Slot::Md(_) => Store::Md,
            Slot::Copilot(_) => Store::Copilot,
            Slot::Decision(_) => Store::Decision,
            Slot::Session(_) => Store::Session,
        }
    }
}
