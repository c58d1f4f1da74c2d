//! `kb recall` and MCP `recall_memory`: ranked over every kind of knowledge (the default), or
//! co-cli's rule with `--exact` (docs/behaviour.md, Recall).
//!
//! Ranked: the markdown memories, the Copilot records, the active and proposed decisions and the
//! sessions (open and ended) are scored by [`crate::search`]; a candidate is a result when at least
//! one query word matches it. Order: score, then heat, then newest, then store and id. The
//! tokenized documents are kept in `.co-cli/cache/recall.idx` and reused for every document whose
//! text did not change.

use super::decision::DecisionJson;
use super::read::{self, Loaded, MemoryJson, RecordJson, Scope, record_recall_lines, skipped_lines};
use super::session::SessionJson;
use super::{Report, View};
use crate::copilot::Records;
use crate::decisions::file::Decision;
use crate::error::Diagnostic;
use crate::memories::index::MemoryRef;
use crate::output::chars_prefix;
use crate::repo::{Repo, StoreKind};
use crate::search::{self, Doc, Ranking};
use crate::session::Located;
use anyhow::Result;
use serde::Serialize;
use std::borrow::Cow;
use std::cmp::Reverse;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A kind of knowledge recall searches (`--store`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Source {
    /// Markdown memories in .co-cli/knowledge/memories/
    #[value(alias = "markdown")]
    Md,
    /// Copilot-style records in .github/copilot-memories.jsonl
    Copilot,
    /// Active and proposed decisions in .co-cli/knowledge/decisions/
    Decision,
    /// The open session and the ended ones
    Session,
}

impl Source {
    /// Returns the name of the source: the `--store` value and the `store` of a result.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Md => "md",
            Source::Copilot => "copilot",
            Source::Decision => "decision",
            Source::Session => "session",
        }
    }

    /// Returns the source a name (`md`, `markdown`, `copilot`, `decision`, `session`) names.
    pub fn parse(name: &str) -> Option<Source> {
        match name.trim().to_ascii_lowercase().as_str() {
            "md" | "markdown" => Some(Source::Md),
            "copilot" => Some(Source::Copilot),
            "decision" | "decisions" => Some(Source::Decision),
            "session" | "sessions" => Some(Source::Session),
            _ => None,
        }
    }
}

/// The sources a recall covers: every one unless narrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sources([bool; 4]);

impl Default for Sources {
    fn default() -> Self {
        Sources([true; 4])
    }
}

impl Sources {
    /// Returns the sources named (every one when none is).
    pub fn of(named: &[Source]) -> Sources {
        if named.is_empty() {
            return Sources::default();
        }
        let mut on = [false; 4];
        for s in named {
            on[*s as usize] = true;
        }
        Sources(on)
    }

    pub fn has(self, s: Source) -> bool {
        self.0[s as usize]
    }

    /// Returns the sources in both `self` and `other`.
    fn and(self, other: Sources) -> Sources {
        Sources(std::array::from_fn(|i| self.0[i] && other.0[i]))
    }

    /// Returns whether every source is covered.
    fn all(self) -> bool {
        self.0.iter().all(|&b| b)
    }

    /// Returns the markdown/Copilot half of the sources, for loading them.
    fn scope(self) -> Option<Scope> {
        match (self.has(Source::Md), self.has(Source::Copilot)) {
            (true, true) => Some(Scope::Both),
            (true, false) => Some(Scope::Md),
            (false, true) => Some(Scope::Copilot),
            (false, false) => None,
        }
    }
}

/// What to recall.
#[derive(Debug, Clone)]
pub struct Request {
    pub query: String,
    /// At most this many results (≥ 1).
    pub max_results: usize,
    /// co-cli's rule: every word a substring, newest first, memories and records only.
    pub exact: bool,
    pub sources: Sources,
}

/// What a ranked recall reads: the memories and records, the decisions and the sessions.
pub struct Knowledge {
    pub loaded: Loaded,
    decisions: Vec<(PathBuf, Decision)>,
    sessions: Vec<Located>,
}

impl Knowledge {
    /// Returns the knowledge, lent.
    pub fn parts(&self) -> Parts<'_> {
        Parts { loaded: &self.loaded, decisions: &self.decisions, sessions: &self.sessions }
    }
}

/// What a ranked recall reads, borrowed: from a [`Knowledge`] read for one command, or from what
/// a long-running server holds (`super::warm`). Decisions that are not open are left out here.
#[derive(Clone, Copy)]
pub struct Parts<'a> {
    pub loaded: &'a Loaded,
    pub decisions: &'a [(PathBuf, Decision)],
    /// The open session first, then the ended ones.
    pub sessions: &'a [Located],
}

/// Reads what `req` searches. The markdown and Copilot stores load as `kb list` loads them
/// (narrowed to one, an unreadable store is an error); decisions and sessions that cannot be read
/// are skipped with a warning, as every read command does.
pub fn load(repo: &Repo, req: &Request) -> Result<Knowledge> {
    let sources = if req.exact { Sources::of(&[Source::Md, Source::Copilot]).and(req.sources) } else { req.sources };
    let mut loaded = match sources.scope() {
        Some(scope) => read::load(repo, scope)?,
        None => Loaded {
            root: repo.layout.root.clone(),
            limit: repo.settings.memory_max_count.value,
            index: None,
            file: None,
            diagnostics: Vec::new(),
        },
    };
    let mut decisions = Vec::new();
    let mut sessions = Vec::new();
    if !req.exact && sources.has(Source::Decision) {
        let scan = crate::decisions::DecisionStore::new(repo).scan()?;
        loaded.diagnostics.extend(scan.problems.iter().cloned());
        decisions = scan.decisions.into_iter().filter(|(_, d)| d.status.is_open()).collect();
    }
    if !req.exact && sources.has(Source::Session) {
        let problems;
        (sessions, problems) = read_sessions(&repo.layout);
        loaded.diagnostics.extend(problems);
    }
    Ok(Knowledge { loaded, decisions, sessions })
}

/// Reads the sessions recall searches: the open one first, then the ended ones; the files that
/// cannot be read are problems.
pub fn read_sessions(layout: &crate::paths::Layout) -> (Vec<Located>, Vec<Diagnostic>) {
    let (open, mut problems) = crate::session::current(layout);
    let mut sessions: Vec<Located> = open.into_iter().collect();
    for path in crate::session::ended_files(layout) {
        match crate::session::read_file(layout, &path) {
            Ok(Some(l)) => sessions.push(l),
            Ok(None) => {}
            Err(d) => problems.push(d),
        }
    }
    (sessions, problems)
}

/// A recall's answer: ranked, or co-cli's exact rule.
pub enum RecallAnswer<'a> {
    Ranked(RankedReport<'a>),
    Exact(read::RecallReport<'a>),
}

/// Recalls what `req` asks from `k`, logging each markdown memory and record it returns as an
/// access in the heat log.
pub fn recall<'a>(repo: &Repo, k: &'a Knowledge, req: &Request) -> RecallAnswer<'a> {
    if req.exact {
        return RecallAnswer::Exact(read::recall(repo, &k.loaded, &req.query, req.max_results));
    }
    let mut report = ranked(repo, k.parts(), req, repo.env.recall_ranking);
    read::log_accesses(repo, &report.accesses(), &mut report.diagnostics);
    RecallAnswer::Ranked(report)
}

/// Recalls what `req` asks from what a long-running server holds, ranked over its live corpus
/// (`--exact` reads `parts` as a command does); logs the accesses as [`recall`] does.
pub fn recall_live<'a>(repo: &Repo, parts: Parts<'a>, live: &LiveCorpus, req: &Request) -> RecallAnswer<'a> {
    if req.exact {
        return RecallAnswer::Exact(read::recall(repo, parts.loaded, &req.query, req.max_results));
    }
    let records = parts.loaded.file.as_ref().map(Records::parse);
    let candidate = |i: usize| live.source_of(i).is_some_and(|s| req.sources.has(s));
    let scored = search::rank(&live.corpus, &req.query, live.ranking, candidate).unwrap_or_default();
    let item_of = |doc: usize| live.item(parts, records.as_ref(), doc);
    let mut report = finish(repo, parts, req, records.as_ref(), &scored, item_of);
    report.records = records;
    read::log_accesses(repo, &report.accesses(), &mut report.diagnostics);
    RecallAnswer::Ranked(report)
}

/// One ranked result: what it is, and its score.
struct Hit<'a> {
    item: Item<'a>,
    score: f64,
}

/// A result of any source.
enum Item<'a> {
    Md(MemoryRef<'a>),
    /// A record by its position in the parsed records (the report owns the parse).
    Copilot(usize),
    Decision(&'a (PathBuf, Decision)),
    Session(&'a Located),
}

impl Item<'_> {
    fn source(&self) -> Source {
        match self {
            Item::Md(_) => Source::Md,
            Item::Copilot(_) => Source::Copilot,
            Item::Decision(_) => Source::Decision,
            Item::Session(_) => Source::Session,
        }
    }
}

/// `kb recall QUERY...`, ranked. JSON: `{"query":Q, "count":N, "total":N, "results":[ITEM +
/// "score"...]}`, an item being a MEMORY, a RECORD, a DECISION (`"store":"decision"`) or a SESSION
/// (`"store":"session"`, `"id"`: its file name without `.md`).
pub struct RankedReport<'a> {
    query: String,
    root: PathBuf,
    dir: Option<&'a Path>,
    records: Option<Records<'a>>,
    hits: Vec<Hit<'a>>,
    total: usize,
    diagnostics: Vec<Diagnostic>,
}

/// Ranks every document of `p` that `req`'s sources cover against its query.
fn ranked<'a>(repo: &Repo, p: Parts<'a>, req: &Request, ranking: Ranking) -> RankedReport<'a> {
    let records = p.loaded.file.as_ref().map(Records::parse);
    // What each document is, kept small (a memory by its position in the index): only the
    // results become items.
    let (slots, docs): (Vec<Slot>, Vec<Doc<'a>>) = documents(p, records.as_ref()).into_iter().unzip();
    let t0 = std::time::Instant::now();
    let scored = match ranking {
        Ranking::Full => {
            let path = repo.layout.cache_file("recall.idx");
            let cached = path.as_deref().and_then(|p| search::cache::load(p, &repo.layout.root));
            let before = cached.as_ref().map(|c| c.docs.len());
            let loaded_in = t0.elapsed();
            let (corpus, fresh) = search::corpus(&docs, cached, ranking);
            repo.debug_line(|| {
                format!(
                    "kb-timing: recall index: loaded in {loaded_in:?}, {fresh} documents tokenized, ready in {:?}",
                    t0.elapsed()
                )
            });
            // The index covers every source: a narrowed recall reads it but does not rewrite it.
            if let Some(path) = path.filter(|_| req.sources.all() && (fresh > 0 || before != Some(docs.len()))) {
                // Derived state: a failure to write it only costs time.
                let _ = search::cache::write(&path, &corpus);
            }
            search::rank(&corpus, &req.query, ranking, |_| true).ok()
        }
        Ranking::Plain => None,
    };
    // Without an index that can be read (or for the plain baseline): tokenize every document.
    let scored = scored.unwrap_or_else(|| {
        let (corpus, _) = search::corpus(&docs, None, ranking);
        search::rank(&corpus, &req.query, ranking, |_| true).unwrap_or_default()
    });
    drop(docs);
    let item_of = |doc: usize| -> Option<Item<'a>> {
        Some(match slots.get(doc)? {
            Slot::Md(pos) => Item::Md(p.loaded.index.as_ref()?.at(*pos)),
            Slot::Copilot(pos) => Item::Copilot(*pos),
            Slot::Decision(i) => Item::Decision(p.decisions.get(*i)?),
            Slot::Session(i) => Item::Session(p.sessions.get(*i)?),
        })
    };
    let mut report = finish(repo, p, req, records.as_ref(), &scored, item_of);
    repo.debug_line(|| format!("kb-timing: recall: ranked and ordered in {:?}", t0.elapsed()));
    report.records = records;
    report
}

/// Turns scored documents into the report: the documents scoring at least the `max`-th best
/// become items (`item_of`), ordered. The caller puts the parsed `records` in.
fn finish<'a>(
    repo: &Repo,
    p: Parts<'a>,
    req: &Request,
    records: Option<&Records<'a>>,
    scored: &[search::Scored],
    item_of: impl Fn(usize) -> Option<Item<'a>>,
) -> RankedReport<'a> {
    let mut diagnostics = p.loaded.diagnostics.clone();
    if let Some(all) = records {
        diagnostics.extend(skipped_lines(all));
    }
    let total = scored.len();
    // Only the documents scoring at least the max-th best score can be shown.
    let cut = nth_best(scored, req.max_results);
    let mut hits: Vec<Hit<'a>> = scored
        .iter()
        .filter(|s| s.score >= cut)
        .filter_map(|s| Some(Hit { item: item_of(s.doc)?, score: s.score }))
        .collect();
    order(repo, &mut hits, records, req.max_results);
    RankedReport {
        query: req.query.clone(),
        root: p.loaded.root.clone(),
        dir: p.loaded.index.as_ref().map(|i| i.dir.as_path()),
        records: None,
        hits,
        total,
        diagnostics,
    }
}

/// Every document of `p` (the records parsed from its file), with what it is.
fn documents<'a>(p: Parts<'a>, records: Option<&Records<'_>>) -> Vec<(Slot, Doc<'a>)> {
    let mut docs: Vec<(Slot, Doc<'a>)> = Vec::new();
    each_document(p, records, |slot, doc| docs.push((slot, doc)));
    docs
}

/// Calls `f` with every document of `p` (the records parsed from its file), and what it is.
fn each_document<'a>(p: Parts<'a>, records: Option<&Records<'_>>, mut f: impl FnMut(Slot, Doc<'a>)) {
    if let Some(index) = &p.loaded.index {
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

/// A markdown memory as a document: its text, its tags.
fn memory_doc<'a>(m: &MemoryRef<'a>) -> Doc<'a> {
    let fields = [Cow::Borrowed(m.content), Cow::Owned(m.tags.join(" ")), Cow::Borrowed("")];
    Doc { key: doc_key(Source::Md, m.file_name), fields }
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
    Doc { key: doc_key(Source::Copilot, r.id), fields }
}

/// A decision as a document: its text, its tags.
fn decision_doc<'a>(path: &Path, d: &'a Decision) -> Doc<'a> {
    let fields = [Cow::Borrowed(d.content.as_str()), Cow::Owned(d.tags.join(" ")), Cow::Borrowed("")];
    Doc { key: doc_key(Source::Decision, &file_stem(path)), fields }
}

/// A session as a document: its focus and its summary.
fn session_doc<'a>(l: &Located) -> Doc<'a> {
    let text = format!("{}\n{}", l.session.focus, l.session.summary);
    Doc { key: doc_key(Source::Session, &file_stem(&l.path)), fields: [text.into(), "".into(), "".into()] }
}

/// Returns the key of the document named `name` (a memory's file name, a record's id, a
/// decision's or a session's file name without `.md`) of `source`: the name's hash, seeded by the
/// source. A memory's key is its file name's hash, the memory index's own (see
/// [`Index::named_by_hash`](crate::memories::index::Index::named_by_hash)). Two names of one
/// source with one 64-bit hash would share a document: one chance in 10^10 at 100,000 names.
fn doc_key(source: Source, name: &str) -> u64 {
    let seed = match source {
        Source::Md => 0,
        Source::Copilot => 1,
        Source::Decision => 2,
        Source::Session => 3,
    };
    xxhash_rust::xxh3::xxh3_64_with_seed(name.as_bytes(), seed)
}

/// The tokenized documents of every source, kept by a long-running server and updated a
/// document at a time as files change (a command builds its corpus per run from
/// `.co-cli/cache/recall.idx` instead). Documents are found by their key; a removed one stays in
/// place, no longer a candidate, until [`LiveCorpus::compact`] packs the corpus.
pub struct LiveCorpus {
    corpus: search::Corpus,
    ranking: Ranking,
    /// Each document's source; `None` once it is removed.
    sources: Vec<Option<Source>>,
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
        let mut live = LiveCorpus { corpus, ranking, sources: vec![Some(Source::Md); cached], at: Default::default() };
        live.map_keys();
        let mut claimed = vec![false; cached];
        let records = p.loaded.file.as_ref().map(Records::parse);
        each_document(p, records.as_ref(), |slot, doc| {
            if let Some(c) = claimed.get_mut(live.put(slot.source(), &doc)) {
                *c = true;
            }
        });
        for (i, _) in claimed.iter().enumerate().filter(|(_, c)| !**c) {
            live.remove_at(i);
        }
        live.compact_if_sparse();
        live.corpus.pairs.shrink_to_fit();
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
    fn source_of(&self, doc: usize) -> Option<Source> {
        self.sources.get(doc).copied().flatten()
    }

    /// Adds or replaces a document; returns its position.
    fn put(&mut self, source: Source, doc: &Doc<'_>) -> usize {
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
                    self.put(Source::Md, &memory_doc(&m));
                }
                None => self.remove(doc_key(Source::Md, name)),
            }
        }
        self.compact_if_sparse();
    }

    /// Brings the documents of one whole source (records, decisions or sessions: small ones) up
    /// to date with `p`.
    pub fn sync_source(&mut self, source: Source, p: Parts<'_>) {
        let records = p.loaded.file.as_ref().map(Records::parse);
        let docs: Vec<Doc<'_>> = match source {
            Source::Md => return,
            Source::Copilot => records.iter().flat_map(|all| all.iter().map(|r| record_doc(all, &r))).collect(),
            Source::Decision => {
                p.decisions.iter().filter(|(_, d)| d.status.is_open()).map(|(path, d)| decision_doc(path, d)).collect()
            }
            Source::Session => p.sessions.iter().map(session_doc).collect(),
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

    /// Packs the corpus when removed and replaced documents hold more than half of it.
    fn compact_if_sparse(&mut self) {
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
    fn item<'a>(&self, p: Parts<'a>, records: Option<&Records<'a>>, doc: usize) -> Option<Item<'a>> {
        let key = self.corpus.docs.get(doc)?.key;
        let source = self.source_of(doc)?;
        let named = |name: &str| doc_key(source, name) == key;
        Some(match source {
            Source::Md => Item::Md(p.loaded.index.as_ref()?.named_by_hash(key)?),
            Source::Copilot => Item::Copilot(records?.iter().position(|r| named(r.id))?),
            Source::Decision => Item::Decision(p.decisions.iter().find(|(path, _)| named(&file_stem(path)))?),
            Source::Session => Item::Session(p.sessions.iter().find(|l| named(&file_stem(&l.path)))?),
        })
    }
}

/// Returns a file's name without `.md`.
fn file_stem(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.strip_suffix(".md").map(str::to_string).unwrap_or(name)
}

/// Returns the `max`-th best score of `scored` (the lowest score that can still be shown), or the
/// lowest when there are no more than `max`.
fn nth_best(scored: &[search::Scored], max: usize) -> f64 {
    if max == 0 || scored.len() <= max {
        return f64::NEG_INFINITY;
    }
    let mut scores: Vec<f64> = scored.iter().map(|s| s.score).collect();
    scores.select_nth_unstable_by(max - 1, |a, b| b.total_cmp(a));
    scores[max - 1]
}

/// What a document is, by position: the result it becomes when it is shown.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Md(crate::memories::index::Pos),
    Copilot(usize),
    Decision(usize),
    Session(usize),
}

impl Slot {
    fn source(self) -> Source {
        match self {
            Slot::Md(_) => Source::Md,
            Slot::Copilot(_) => Source::Copilot,
            Slot::Decision(_) => Source::Decision,
            Slot::Session(_) => Source::Session,
        }
    }
}

/// Sorts `hits` by score, then heat, then newest, then store and id, and keeps the first `max`.
/// Heat is read only when two results that could be shown tie on score.
fn order(repo: &Repo, hits: &mut Vec<Hit<'_>>, records: Option<&Records<'_>>, max: usize) {
    let newest = |h: &Hit<'_>| -> (i64, String) {
        match &h.item {
            Item::Md(m) => (m.created_at, format!("{:020}", m.id)),
            Item::Copilot(pos) => records
                .and_then(|all| all.get(*pos))
                .map_or((i64::MIN, String::new()), |r| (r.age_key().0, r.id.to_string())),
            Item::Decision((_, d)) => (d.age_key().0, format!("{:020}", d.id)),
            Item::Session(l) => (l.session.started_at.timestamp_micros(), file_stem(&l.path)),
        }
    };
    // Newest first; equal times: the higher id counts as newer, as everywhere in kb.
    let key = |h: &Hit<'_>, heat: u64| {
        let (at, id) = newest(h);
        (Reverse(OrdF64(h.score)), Reverse(heat), Reverse(at), h.item.source(), Reverse(id))
    };
    hits.sort_by_cached_key(|h| key(h, 0));
    let ties = hits.windows(2).take(max).any(|w| w[0].score == w[1].score);
    if ties {
        let heats = crate::heat::read(&repo.layout, repo.settings.heat_window_days.value, 1);
        let heat_of = |h: &Hit<'_>| -> u64 {
            let (store, id) = match &h.item {
                Item::Md(m) => (StoreKind::Md, m.id.to_string()),
                Item::Copilot(pos) => match records.and_then(|all| all.get(*pos)) {
                    Some(r) => (StoreKind::Copilot, r.id.to_string()),
                    None => return 0,
                },
                _ => return 0,
            };
            heats.heats.iter().find(|x| x.access.store == store && x.access.id == id).map_or(0, |x| x.heat)
        };
        hits.sort_by_cached_key(|h| key(h, heat_of(h)));
    }
    hits.truncate(max);
}

/// An f64 ordered totally (scores are finite).
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrdF64(f64);

impl Eq for OrdF64 {}

impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl RankedReport<'_> {
    /// Returns the markdown memories and records shown, as accesses for the heat log.
    fn accesses(&self) -> Vec<crate::heat::Access> {
        use crate::heat::Access;
        self.hits
            .iter()
            .filter_map(|h| match &h.item {
                Item::Md(m) => Some(Access { id: m.id.to_string(), store: StoreKind::Md }),
                Item::Copilot(pos) => {
                    let r = self.records.as_ref()?.get(*pos)?;
                    Some(Access { id: r.id.to_string(), store: StoreKind::Copilot })
                }
                _ => None,
            })
            .collect()
    }
}

/// A result in JSON: the item's own JSON, its store and its score.
#[derive(Serialize)]
struct ResultJson<T> {
    #[serde(flatten)]
    item: T,
    score: f64,
}

/// A decision or a session in a recall's JSON: its own JSON with the store (and a session's id).
#[derive(Serialize)]
struct Tagged<T> {
    store: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(flatten)]
    item: T,
}

#[derive(Serialize)]
#[serde(untagged)]
enum AnyJson {
    Md(MemoryJson),
    Copilot(RecordJson),
    Decision(Tagged<DecisionJson>),
    Session(Tagged<SessionJson>),
}

impl Serialize for RankedReport<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'q> {
            query: &'q str,
            count: usize,
            total: usize,
            results: Vec<ResultJson<AnyJson>>,
        }
        let results = self
            .hits
            .iter()
            .filter_map(|h| {
                let item = match &h.item {
                    Item::Md(m) => AnyJson::Md(MemoryJson::new(m, self.dir?)),
                    Item::Copilot(pos) => {
                        let all = self.records.as_ref()?;
                        AnyJson::Copilot(RecordJson::new(all, &all.get(*pos)?))
                    }
                    Item::Decision((path, d)) => AnyJson::Decision(Tagged {
                        store: Source::Decision.as_str(),
                        id: None,
                        item: DecisionJson::new(path, d),
                    }),
                    Item::Session(l) => AnyJson::Session(Tagged {
                        store: Source::Session.as_str(),
                        id: Some(file_stem(&l.path)),
                        item: SessionJson::of(l),
                    }),
                };
                Some(ResultJson { item, score: h.score })
            })
            .collect();
        Json { query: &self.query, count: self.hits.len(), total: self.total, results }.serialize(s)
    }
}

impl Report for RankedReport<'_> {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let Some(mut lines) = read::recall_head(v, &self.query, self.total, self.hits.len()) else {
            let q = v.clean(&self.query);
            return writeln!(w, "No memories found matching '{q}' in {}", self.root.display());
        };
        for h in &self.hits {
            match &h.item {
                Item::Md(m) => lines.extend(read::memory_recall_lines(v, m)),
                Item::Copilot(pos) => {
                    if let Some((all, r)) = self.records.as_ref().and_then(|all| Some((all, all.get(*pos)?))) {
                        lines.extend(record_recall_lines(v, all, &r));
                    }
                }
                Item::Decision((_, d)) => {
                    let head = format!(
                        "**Decision {}** ({}, {}, created {})",
                        d.id,
                        d.kind.as_str(),
                        d.status.as_str(),
                        chars_prefix(&d.created, 10)
                    );
                    lines.push(v.style.bold(&head));
                    if !d.tags.is_empty() {
                        lines.push(format!("Tags: {}", v.clean(&d.tags.join(", "))));
                    }
                    lines.push(v.clean(&d.content).into_owned());
                    lines.push(String::new());
                }
                Item::Session(l) => {
                    let s = &l.session;
                    let state = match &s.ended {
                        Some(ended) => format!("ended {}", chars_prefix(ended, 10)),
                        None => "open".to_string(),
                    };
                    let head = format!(
                        "**Session {}** ({state}, started {})",
                        file_stem(&l.path),
                        chars_prefix(&s.started, 10)
                    );
                    lines.push(v.style.bold(&v.clean(&head)));
                    lines.push(format!("Focus: {}", v.clean(&s.focus)));
                    if !s.summary.is_empty() {
                        lines.push(v.clean(&s.summary).into_owned());
                    }
                    lines.push(String::new());
                }
            }
        }
        writeln!(w, "{}", lines.join("\n").trim_end())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

impl Serialize for RecallAnswer<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            RecallAnswer::Ranked(r) => r.serialize(s),
            RecallAnswer::Exact(r) => r.serialize(s),
        }
    }
}

impl Report for RecallAnswer<'_> {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        match self {
            RecallAnswer::Ranked(r) => r.render(v, w),
            RecallAnswer::Exact(r) => r.render(v, w),
        }
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            RecallAnswer::Ranked(r) => r.diagnostics(),
            RecallAnswer::Exact(r) => r.diagnostics(),
        }
    }
}
