//! `kb recall` and MCP `recall_memory`: ranked over every kind of knowledge (the default), or
//! co-cli's rule with `--exact` (docs/behaviour.md, Recall).
//!
//! Ranked: the markdown memories, the Copilot records, the active and proposed decisions and the
//! sessions (open and ended) are scored by [`crate::search`]; a candidate is a result when at least
//! one query word matches it. Order: score, then heat, then newest, then store and id. The
//! tokenized documents are kept in `.co-cli/cache/recall.idx` and reused for every document whose
//! text did not change.

use super::decision::DecisionJson;
use super::read::{self, MemoryJson, RecordJson, Stores, record_recall_lines, skipped_lines};
use super::session::SessionJson;
use super::{Report, View};
use crate::copilot::Records;
use crate::decisions::file::Decision;
use crate::error::Diagnostic;
pub use crate::kinds::{Origins, Sources, Store};
use crate::knowledge::corpus::{self, Item, Parts, file_stem};
use crate::knowledge::{Knowledge, SharedView};
use crate::output::chars_prefix;
use crate::repo::Repo;
use crate::search::{self, Ranking};
use crate::session::Located;
use anyhow::Result;
use serde::Serialize;
use std::cmp::Reverse;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What to recall.
#[derive(Debug, Clone)]
pub struct Request {
    pub query: String,
    /// At most this many results (≥ 1).
    pub max_results: usize,
    /// co-cli's rule: every word a substring, newest first, memories and records only.
    pub exact: bool,
    pub sources: Sources,
    /// The repositories to read: this one and the shared sources, or shared sources only.
    pub origins: Origins,
    /// Whether the results count as uses in the heat log (the `prompt` hook logs only what it
    /// sends).
    pub heat: bool,
}

/// A recall's answer: ranked, or co-cli's exact rule.
pub enum RecallAnswer<'a> {
    Ranked(RankedReport<'a>),
    Exact(read::RecallReport<'a>),
}

/// Recalls what `req` asks from `k`, logging each markdown memory and record it returns as an
/// access in the heat log. Ranked over the corpus a server keeps when it lent `k`, else over the
/// documents of `k` (tokens reused from `.co-cli/cache/recall.idx`). The markdown and Copilot
/// stores are taken as `kb list` takes them (narrowed to one, an unreadable store is an error);
/// the problems of decisions and sessions are warnings, as for every read command.
pub fn recall<'a>(k: &'a Knowledge<'_>, req: &Request) -> Result<RecallAnswer<'a>> {
    let views = shared_views(k, req);
    if views.is_empty() {
        return recall_with(k, req, Vec::new());
    }
    let sub = shared_request(req);
    // Each shared source is read and ranked on a thread of its own while this repository's
    // recall runs.
    std::thread::scope(|s| {
        let sub = &sub;
        let ranking = views.into_iter().map(|v| (v, s.spawn(move || shared_recall(v, sub)))).collect();
        recall_with(k, req, ranking)
    })
}

/// The request a shared source is asked: its stores among the request's, no heat.
fn shared_request(req: &Request) -> Request {
    let wanted: Vec<Store> = Store::SHARED.iter().copied().filter(|&s| req.sources.has(s)).collect();
    Request { sources: Sources::of(&wanted), origins: Origins::default(), heat: false, exact: false, ..req.clone() }
}

/// Ranks a shared source's knowledge for `sub`: over its memory index as its cache holds it (no
/// stat of each file); if a memory it would show changed since, the source is read whole and
/// ranked again. `None` when it cannot be read.
fn shared_recall<'a>(view: &'a SharedView, sub: &Request) -> Option<RankedReport<'a>> {
    if let Some(r) = from_recall_index(view, sub) {
        return Some(r);
    }
    let quick = match recall(&view.trusting, sub) {
        Ok(RecallAnswer::Ranked(r)) if view.trusting.memories_unchanged(r.memory_names()) => Some(r),
        _ => None,
    };
    let theirs = match quick {
        Some(r) => Ok(RecallAnswer::Ranked(r)),
        None => recall(&view.knowledge, sub),
    };
    match theirs {
        Ok(RecallAnswer::Ranked(r)) => Some(r),
        _ => None,
    }
}

/// Ranks a shared source over its recall index alone, when the index says which memory folder
/// its memories' documents came from and the folder has that stamp still (no memory file added,
/// removed or renamed since), and its other documents are the source's records, decisions and
/// sessions as they now read. Only the memories that can be shown are read, from their files;
/// `None` (rank as usual) when one no longer reads as the index holds it, or anything else
/// does not hold. The results are those of ranking over the memory index.
fn from_recall_index<'a>(view: &'a SharedView, sub: &Request) -> Option<RankedReport<'a>> {
    let k = &view.trusting;
    let repo = k.repo();
    let layout = &repo.layout;
    // The results borrow the memories they show from `view.shown`, which holds one set: a
    // second recall of the same view ranks as usual.
    if repo.env.recall_ranking != Ranking::Full || view.shown.get().is_some() {
        return None;
    }
    let corpus = search::cache::load(&layout.cache_file("recall.idx")?, &layout.root)?;
    let (names, memories) = (corpus.names.as_ref()?, corpus.basis.docs as usize);
    let dir = layout.memories();
    let folder = crate::memories::index::folder_stamp(&dir, &layout.root)?;
    if corpus.basis.folder != folder || names.count != memories {
        return None;
    }
    let file = k.records().ok()?;
    let scan = k.decisions().ok()?;
    let (sessions, _) = k.sessions();
    let parts = Parts { index: None, file: Some(file), decisions: &scan.decisions, sessions };
    let records = Records::parse(file);
    let rest = corpus::documents(parts, Some(&records), None);
    let theirs = corpus.docs.get(memories..)?;
    if theirs.len() != rest.keys.len() || theirs.iter().zip(&rest.keys).any(|(d, &k)| (d.key, d.hash) != k) {
        return None;
    }
    let candidate = |i: usize| match i.checked_sub(memories) {
        None => sub.sources.has(Store::Md),
        Some(j) => rest.slots.get(j).is_some_and(|s| sub.sources.has(s.source())),
    };
    let scored = search::rank(&corpus, &sub.query, Ranking::Full, candidate).ok()?;
    // The memories that can be shown, read as a scan reads them.
    let cut = nth_best(&scored, sub.max_results);
    let mut shown = rustc_hash::FxHashMap::default();
    let mut files = Vec::new();
    for s in scored.iter().filter(|s| s.score >= cut && s.doc < memories) {
        // A name is a file of the folder: the index is a cache, not to be trusted with a path.
        let name = names.get(s.doc).filter(|n| crate::memories::index::is_memory_name(n) && !n.contains('/'))?;
        let max = crate::format::text::MAX_FILE_BYTES;
        let bytes = crate::fsio::read_input_at_most(&dir.join(&name), &layout.root, max).ok()??;
        files.push((name.clone(), bytes));
        shown.insert(s.doc, name);
    }
    let index = crate::memories::index::Index::from_files(&dir, files);
    for (&doc, name) in &shown {
        let d = corpus.docs[doc];
        if corpus::memory_key_and_hash(&index.named(name)?) != (d.key, d.hash) {
            return None;
        }
    }
    let index = view.shown.get_or_init(|| index);
    repo.debug_line(|| {
        format!("kb-stats: shared {}: the recall index alone, {} memory files read", view.name, shown.len())
    });
    let item_of = |doc: usize| match doc.checked_sub(memories) {
        None => Some(Item::Md(index.named(shown.get(&doc)?)?)),
        Some(j) => rest.slots.get(j)?.item(parts),
    };
    let parts = Parts { index: Some(index), ..parts };
    let mut report = finish(repo, &layout.root, parts, sub, Some(&records), &scored, item_of);
    if sub.sources.has(Store::Decision) {
        report.diagnostics.splice(0..0, scan.problems.iter().cloned());
    }
    report.records = Some(records);
    Some(report)
}

/// A shared source's recall running on a thread of its own.
type SharedRanking<'s, 'a> = std::thread::ScopedJoinHandle<'s, Option<RankedReport<'a>>>;

/// Says which shared source `origins` names that the settings of `repo` lack, if one:
/// `org: no shared source has that name (the shared sources: team)`.
pub fn unknown_source(repo: &Repo, origins: &Origins) -> Option<String> {
    let known: Vec<&str> = repo.settings.shared.value.iter().map(|s| s.name.as_str()).collect();
    let name = *origins.unknown(&known).first()?;
    let names = if known.is_empty() { "none".to_string() } else { known.join(", ") };
    Some(format!("{name}: no shared source has that name (the shared sources: {names})"))
}

/// The shared sources a ranked recall of `req` reads.
fn shared_views<'a>(k: &'a Knowledge<'_>, req: &Request) -> Vec<&'a SharedView> {
    if req.exact || !Store::SHARED.iter().any(|&s| req.sources.has(s)) {
        return Vec::new();
    }
    k.shared().iter().filter(|v| req.origins.source(&v.name)).collect()
}

/// [`recall`], the shared sources' memory indexes being read by `loading`.
fn recall_with<'a>(
    k: &'a Knowledge<'_>,
    req: &Request,
    ranking: Vec<(&'a SharedView, SharedRanking<'_, 'a>)>,
) -> Result<RecallAnswer<'a>> {
    let repo = k.repo();
    if !req.exact && !req.origins.project() {
        let mut report = RankedReport::empty(repo, req);
        merge_shared(req, &mut report, ranking);
        return Ok(RecallAnswer::Ranked(report));
    }
    let sources = if req.exact { Sources::of(&[Store::Md, Store::Copilot]).and(req.sources) } else { req.sources };
    let stores = match sources.has(Store::Md) || sources.has(Store::Copilot) {
        true => read::stores(k, sources)?,
        false => Stores {
            root: &repo.layout.root,
            limit: repo.settings.memory_max_count.value,
            index: None,
            file: None,
            diagnostics: Vec::new(),
        },
    };
    if req.exact {
        return Ok(RecallAnswer::Exact(read::recall(repo, stores, &req.query, req.max_results)));
    }
    let mut diagnostics = stores.diagnostics;
    let mut decisions: &[(PathBuf, Decision)] = &[];
    if sources.has(Store::Decision) {
        let scan = k.decisions()?;
        diagnostics.extend(scan.problems.iter().cloned());
        decisions = &scan.decisions;
    }
    let mut sessions: &[Located] = &[];
    if sources.has(Store::Session) {
        let (list, problems) = k.sessions();
        diagnostics.extend(problems.iter().cloned());
        sessions = list;
    }
    let parts = Parts { index: stores.index, file: stores.file, decisions, sessions };
    let (mut report, records) = match k.corpus() {
        Some(live) => {
            let records = parts.file.map(Records::parse);
            let candidate = |i: usize| live.source_of(i).is_some_and(|s| req.sources.has(s));
            let scored = search::rank(&live.corpus, &req.query, live.ranking, candidate).unwrap_or_default();
            let item_of = |doc: usize| live.item(parts, records.as_ref(), doc);
            let report = finish(repo, stores.root, parts, req, records.as_ref(), &scored, item_of);
            (report, records)
        }
        None => {
            // A command's own corpus holds every source that reads, so that its cache serves
            // every request (a narrowed one keeps it whole); only the request's sources are
            // candidates.
            let (parts, complete) = whole(k, parts, sources);
            let records = parts.file.map(Records::parse);
            // A first run's memory index cache is written while the recall index is.
            let meanwhile = || k.write_pending_cache();
            (ranked(repo, stores.root, parts, req, records.as_ref(), complete, &meanwhile), records)
        }
    };
    report.diagnostics.splice(0..0, diagnostics);
    report.records = records;
    merge_shared(req, &mut report, ranking);
    if req.heat {
        read::log_accesses(repo, &report.accesses(), &mut report.diagnostics);
    }
    Ok(RecallAnswer::Ranked(report))
}

/// Returns `p` with the sources the request left out added where they read, and whether the
/// memories and the records are both there (then the corpus is whole, and its cache may be
/// written).
fn whole<'a>(k: &'a Knowledge<'_>, p: Parts<'a>, asked: Sources) -> (Parts<'a>, bool) {
    let index = p.index.or_else(|| k.memories().ok());
    let file = p.file.or_else(|| k.records().ok());
    let decisions = match asked.has(Store::Decision) {
        true => p.decisions,
        false => k.decisions().map_or(&[][..], |scan| &scan.decisions[..]),
    };
    let sessions = if asked.has(Store::Session) { p.sessions } else { &k.sessions().0[..] };
    (Parts { index, file, decisions, sessions }, index.is_some() && file.is_some())
}

/// One ranked result: what it is, its score, and the shared source it comes from (an index
/// into the report's `shared`; `None`: this repository).
struct Hit<'a> {
    item: Item<'a>,
    score: f64,
    from: Option<usize>,
}

/// Adds the shared sources' memories, records and decisions (never their sessions) to a ranked
/// report: each source ranked with the same request over its own documents, the results merged
/// by score, this repository's first on a tie, and a shared item whose text this repository
/// already holds among the results left out (docs/shared.md).
fn merge_shared<'a>(
    req: &Request,
    report: &mut RankedReport<'a>,
    ranking: Vec<(&'a SharedView, SharedRanking<'_, 'a>)>,
) {
    if ranking.is_empty() {
        return;
    }
    let texts: rustc_hash::FxHashSet<String> =
        report.found().iter().map(|f| f.text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()).collect();
    for (view, handle) in ranking {
        let Some(mut theirs) = handle.join().unwrap_or_else(|e| std::panic::resume_unwind(e)) else { continue };
        let found = theirs.found();
        let from = report.shared.len();
        let mut kept = Vec::new();
        for (h, f) in std::mem::take(&mut theirs.hits).into_iter().zip(found) {
            let text = f.text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
            if texts.contains(&text) {
                theirs.total = theirs.total.saturating_sub(1);
                continue;
            }
            kept.push(Hit { from: Some(from), ..h });
        }
        report.total += theirs.total;
        report.diagnostics.extend(theirs.diagnostics.drain(..).map(|d| read::shared_problem(&view.name, d)));
        report.hits.extend(kept);
        report.shared.push((view.name.clone(), theirs));
    }
    // Stable: on an equal score this repository's results (first in the list) stay first.
    report.hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    report.hits.truncate(req.max_results);
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
    /// The shared sources' reports, by name: their records and folders, for the hits they gave.
    shared: Vec<(String, RankedReport<'a>)>,
}

/// Ranks every document of `p` (its records parsed: `records`) against `req`'s query; runs
/// `meanwhile` once ranked, while the recall index may still be being written.
fn ranked<'a>(
    repo: &Repo,
    root: &Path,
    p: Parts<'a>,
    req: &Request,
    records: Option<&Records<'a>>,
    complete: bool,
    meanwhile: &dyn Fn(),
) -> RankedReport<'a> {
    let ranking = repo.env.recall_ranking;
    let t0 = std::time::Instant::now();
    let path = repo.layout.cache_file("recall.idx");
    let cached = match ranking {
        Ranking::Full => path.as_deref().and_then(|p| search::cache::load(p, &repo.layout.root)),
        Ranking::Plain => None,
    };
    let loaded_in = t0.elapsed();
    // What each document is, kept small (a memory by its position in the index), with its key
    // and hash: a document's text is made again only to be tokenized, and only the results
    // become items.
    let corpus::Documents { slots, mut keys, basis } = corpus::documents(p, records, cached.as_ref());
    let doc = |i: usize| slots.get(i).map(|&s| corpus::document(s, p, records)).unwrap_or_default();
    let candidate = |i: usize| slots.get(i).is_some_and(|s| req.sources.has(s.source()));
    let scored = match ranking {
        Ranking::Full => {
            let before = cached.as_ref().map(|c| (c.docs.len(), c.basis));
            let (mut corpus, fresh) = search::corpus_of(&keys, doc, cached, ranking);
            corpus.basis = basis;
            // The corpus holds each document's key and hash now: the index is written without
            // a second copy of them beside it (the fallback below makes them again).
            let keys_len = keys.len();
            keys = Vec::new();
            repo.debug_line(|| {
                format!(
                    "kb-timing: recall index: loaded in {loaded_in:?}, {fresh} documents tokenized, ready in {:?}",
                    t0.elapsed()
                )
            });
            // The index covers every source: one that lacks the memories or the records is not
            // written. It is written on a thread of its own while this one ranks.
            let path = path.filter(|_| complete && (fresh > 0 || before != Some((keys_len, basis))));
            std::thread::scope(|scope| {
                // Derived state: a failure to write it only costs time.
                let writer = path.as_deref().map(|path| {
                    scope.spawn(|| {
                        // With a trusted folder, the memories' names: a reader of a shared
                        // source reads only the memories it shows.
                        let names: Vec<&str> = match (basis.folder, p.index) {
                            (0, _) | (_, None) => Vec::new(),
                            (_, Some(index)) => index.names().collect(),
                        };
                        search::cache::write(path, &corpus, &names)
                    })
                });
                let scored = search::rank(&corpus, &req.query, ranking, candidate).ok();
                meanwhile();
                if let Some(w) = writer {
                    drop(w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
                }
                scored
            })
        }
        Ranking::Plain => None,
    };
    // Without an index that can be read (or for the plain baseline): tokenize every document.
    let scored = scored.unwrap_or_else(|| {
        let keys = if keys.len() == slots.len() { keys } else { corpus::documents(p, records, None).keys };
        let (corpus, _) = search::corpus_of(&keys, doc, None, ranking);
        search::rank(&corpus, &req.query, ranking, candidate).unwrap_or_default()
    });
    let item_of = |doc: usize| slots.get(doc)?.item(p);
    let report = finish(repo, root, p, req, records, &scored, item_of);
    repo.debug_line(|| format!("kb-timing: recall: ranked and ordered in {:?}", t0.elapsed()));
    report
}

impl RankedReport<'_> {
    /// The file names of the markdown memories among the results.
    fn memory_names(&self) -> impl Iterator<Item = &str> {
        self.hits.iter().filter_map(|h| match &h.item {
            Item::Md(m) => Some(m.file_name),
            _ => None,
        })
    }

    /// A report of nothing found in this repository (only shared sources are asked).
    fn empty(repo: &Repo, req: &Request) -> Self {
        RankedReport {
            query: req.query.clone(),
            root: repo.layout.root.clone(),
            dir: None,
            records: None,
            hits: Vec::new(),
            total: 0,
            diagnostics: Vec::new(),
            shared: Vec::new(),
        }
    }
}

/// Turns scored documents into the report: the documents scoring at least the `max`-th best
/// become items (`item_of`), ordered. The caller puts the parsed `records` and the diagnostics of
/// reading the stores in.
fn finish<'a>(
    repo: &Repo,
    root: &Path,
    p: Parts<'a>,
    req: &Request,
    records: Option<&Records<'a>>,
    scored: &[search::Scored],
    item_of: impl Fn(usize) -> Option<Item<'a>>,
) -> RankedReport<'a> {
    let mut diagnostics = Vec::new();
    if let Some(all) = records.filter(|_| req.sources.has(Store::Copilot)) {
        diagnostics.extend(skipped_lines(all));
    }
    let total = scored.len();
    // Only the documents scoring at least the max-th best score can be shown.
    let cut = nth_best(scored, req.max_results);
    let mut hits: Vec<Hit<'a>> = scored
        .iter()
        .filter(|s| s.score >= cut)
        .filter_map(|s| Some(Hit { item: item_of(s.doc)?, score: s.score, from: None }))
        .collect();
    order(repo, &mut hits, records, req.max_results);
    RankedReport {
        query: req.query.clone(),
        root: root.to_path_buf(),
        dir: p.index.map(|i| i.dir.as_path()),
        records: None,
        hits,
        total,
        diagnostics,
        shared: Vec::new(),
    }
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
                Item::Md(m) => (Store::Md, m.id.to_string()),
                Item::Copilot(pos) => match records.and_then(|all| all.get(*pos)) {
                    Some(r) => (Store::Copilot, r.id.to_string()),
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

/// A ranked result as the `prompt` hook sends it: what it is, its text, its citations.
#[derive(Debug, Clone)]
pub struct Found {
    pub store: Store,
    /// The id as kb's commands take it (`12`, `mem-3f2a`, `decision:3`, a session's file stem).
    pub id: String,
    /// How a line names it: `memory 12`, `record mem-3f2a`, `decision 3`, `session 2026-…`.
    pub label: String,
    pub text: String,
    pub citations: Vec<String>,
}

impl<'a> RankedReport<'a> {
    /// Returns the report that holds a hit's records and folder, and its shared source's name
    /// (`None`: this repository).
    fn origin(&self, h: &Hit<'_>) -> (&RankedReport<'a>, Option<&str>) {
        match h.from.and_then(|i| self.shared.get(i)) {
            Some((name, report)) => (report, Some(name.as_str())),
            None => (self, None),
        }
    }

    /// Returns the results, best first. A shared source's item has its id and label prefixed
    /// with the source's name (`org:12`, `memory org:12`).
    pub fn found(&self) -> Vec<Found> {
        self.hits
            .iter()
            .filter_map(|h| {
                let (holder, shared) = self.origin(h);
                let mut found = holder.found_one(h)?;
                if let Some(name) = shared {
                    found.id = format!("{name}:{}", found.id);
                    let (what, id) = found.label.rsplit_once(' ').unwrap_or(("item", ""));
                    found.label = format!("{what} {name}:{id}");
                }
                Some(found)
            })
            .collect()
    }

    /// The [`Found`] of one hit of this report (its own records).
    fn found_one(&self, h: &Hit<'_>) -> Option<Found> {
        {
            {
                let (store, id, label, text, citations) = match &h.item {
                    Item::Md(m) => {
                        (Store::Md, m.id.to_string(), format!("memory {}", m.id), m.content.to_string(), Vec::new())
                    }
                    Item::Copilot(pos) => {
                        let all = self.records.as_ref()?;
                        let r = all.get(*pos)?;
                        let citations = all.fields(&r).citations.iter().map(|c| c.to_string()).collect();
                        (Store::Copilot, r.id.to_string(), format!("record {}", r.id), r.fact.to_string(), citations)
                    }
                    Item::Decision((_, d)) => {
                        let label = match d.status {
                            crate::decisions::file::Status::Active => format!("decision {}", d.id),
                            status => format!("{} decision {}", status.as_str(), d.id),
                        };
                        (Store::Decision, format!("decision:{}", d.id), label, d.content.clone(), Vec::new())
                    }
                    Item::Session(l) => {
                        let stem = file_stem(&l.path);
                        let text = format!("{}\n{}", l.session.focus, l.session.summary);
                        (Store::Session, stem.clone(), format!("session {stem}"), text, Vec::new())
                    }
                };
                Some(Found { store, id, label, text, citations })
            }
        }
    }

    /// Returns the markdown memories and records that count as uses in the heat log
    /// (docs/behaviour.md, Heat): the first result and those scoring at least 80 % of it, at most the three highest;
    /// an item that merely matched a word of the question is not used.
    fn accesses(&self) -> Vec<crate::heat::Access> {
        use crate::heat::Access;
        let best = self.hits.first().map_or(0.0, |h| h.score);
        self.hits
            .iter()
            .take(crate::heat::USES_PER_RECALL)
            .filter(|h| h.score >= crate::heat::USED_SCORE_SHARE * best)
            // Heat is this repository's: a shared source's item is not counted.
            .filter(|h| h.from.is_none())
            .filter_map(|h| match &h.item {
                Item::Md(m) => Some(Access { id: m.id.to_string(), store: Store::Md }),
                Item::Copilot(pos) => {
                    let r = self.records.as_ref()?.get(*pos)?;
                    Some(Access { id: r.id.to_string(), store: Store::Copilot })
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
            results: Vec<ResultJson<ItemJson>>,
        }
        let results: Vec<ResultJson<ItemJson>> = self
            .hits
            .iter()
            .filter_map(|h| {
                let (holder, shared) = self.origin(h);
                let item = match &h.item {
                    Item::Md(m) => AnyJson::Md(MemoryJson::new(m, holder.dir?)),
                    Item::Copilot(pos) => {
                        let all = holder.records.as_ref()?;
                        AnyJson::Copilot(RecordJson::new(all, &all.get(*pos)?))
                    }
                    Item::Decision((path, d)) => AnyJson::Decision(Tagged {
                        store: Store::Decision.as_str(),
                        id: None,
                        item: DecisionJson::new(path, d),
                    }),
                    Item::Session(l) => AnyJson::Session(Tagged {
                        store: Store::Session.as_str(),
                        id: Some(file_stem(&l.path)),
                        item: SessionJson::of(l),
                    }),
                };
                let item = match shared {
                    None => ItemJson::Own(Box::new(item)),
                    Some(name) => {
                        let mut value = serde_json::to_value(item).ok()?;
                        if let Some(obj) = value.as_object_mut() {
                            mark_shared(obj, name, &h.item);
                        }
                        ItemJson::Shared(value)
                    }
                };
                Some(ResultJson { item, score: h.score })
            })
            .collect();
        Json { query: &self.query, count: self.hits.len(), total: self.total, results }.serialize(s)
    }
}

/// A result's item in JSON: this repository's as its type writes it, a shared source's marked.
#[derive(Serialize)]
#[serde(untagged)]
enum ItemJson {
    Own(Box<AnyJson>),
    Shared(serde_json::Value),
}

/// A shared source's item in JSON: its id prefixed with the source's name (`org:12`,
/// `org:mem-3f2a`, `org:decision:4`) and `"shared":NAME`.
fn mark_shared(obj: &mut serde_json::Map<String, serde_json::Value>, name: &str, item: &Item<'_>) {
    let id = match (item, obj.get("id")) {
        (Item::Decision((_, d)), _) => format!("decision:{}", d.id),
        (_, Some(serde_json::Value::String(s))) => s.clone(),
        (_, Some(other)) => other.to_string(),
        (_, None) => String::new(),
    };
    obj.insert("id".into(), serde_json::Value::from(format!("{name}:{id}")));
    obj.insert("shared".into(), serde_json::Value::from(name));
}

impl Report for RankedReport<'_> {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        self.render_with(v, w, &[])
    }

    fn render_verified(&self, v: &View, w: &mut dyn Write, verdicts: &[String]) -> io::Result<()> {
        self.render_with(v, w, verdicts)
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

impl RankedReport<'_> {
    /// Writes the results, each followed by its verdict when `verdicts` has one.
    fn render_with(&self, v: &View, w: &mut dyn Write, verdicts: &[String]) -> io::Result<()> {
        let Some(mut lines) = read::recall_head(v, &self.query, self.total, self.hits.len()) else {
            let q = v.clean(&self.query);
            return writeln!(w, "No memories found matching '{q}' in {}", self.root.display());
        };
        for (i, h) in self.hits.iter().enumerate() {
            let start = lines.len();
            let (holder, shared) = self.origin(h);
            match &h.item {
                Item::Md(m) => lines.extend(read::memory_recall_lines(v, m)),
                Item::Copilot(pos) => {
                    if let Some((all, r)) = holder.records.as_ref().and_then(|all| Some((all, all.get(*pos)?))) {
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
                    // The open session's file is `session.md`: "Session session" says nothing.
                    let started = chars_prefix(&s.started, 10);
                    let head = match &s.ended {
                        Some(ended) => format!(
                            "**Session {}** (ended {}, started {started})",
                            file_stem(&l.path),
                            chars_prefix(ended, 10)
                        ),
                        None => format!("**Open session** (started {started})"),
                    };
                    lines.push(v.style.bold(&v.clean(&head)));
                    lines.push(format!("Focus: {}", v.clean(&s.focus)));
                    if !s.summary.is_empty() {
                        lines.push(v.clean(&s.summary).into_owned());
                    }
                    lines.push(String::new());
                }
            }
            // A shared source's item is named by its namespaced id in its head line.
            if let (Some(name), Some(head)) = (shared, lines.get_mut(start)) {
                let id = match &h.item {
                    Item::Md(m) => m.id.to_string(),
                    Item::Copilot(pos) => {
                        holder.records.as_ref().and_then(|a| a.get(*pos)).map_or(String::new(), |r| r.id.to_string())
                    }
                    Item::Decision((_, d)) => d.id.to_string(),
                    Item::Session(_) => String::new(),
                };
                let named = match &h.item {
                    Item::Decision(_) => format!("{name}:decision:{id}"),
                    _ => format!("{name}:{id}"),
                };
                *head = head.replacen(&format!(" {id}**"), &format!(" {named}**"), 1);
            }
            read::place_verdict(v, &mut lines, start, verdicts.get(i));
        }
        writeln!(w, "{}", lines.join("\n").trim_end())
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

    fn render_verified(&self, v: &View, w: &mut dyn Write, verdicts: &[String]) -> io::Result<()> {
        match self {
            RecallAnswer::Ranked(r) => r.render_verified(v, w, verdicts),
            RecallAnswer::Exact(r) => r.render_verified(v, w, verdicts),
        }
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            RecallAnswer::Ranked(r) => r.diagnostics(),
            RecallAnswer::Exact(r) => r.diagnostics(),
        }
    }
}
