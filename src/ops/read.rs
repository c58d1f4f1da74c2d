//! Reading both stores: `recall`, `list` and `show`, the cross-store merge, and the one rule that
//! routes an id to its store. Nothing here writes a knowledge file; files that cannot be read are
//! left out and reported as diagnostics.
//!
//! Every read takes a [`Knowledge`] (read for one command, or lent by the server), so a report
//! borrows what was read instead of copying it (100,000 records are streamed, not collected):
//! [`stores`] takes the stores a scope covers, and [`recall`] or [`list`] build a report that
//! borrows them.

use super::{Report, View, abs};
use crate::copilot::jsonl::JsonlFile;
use crate::copilot::record::Votes;
use crate::copilot::{self, Record, Records};
use crate::error::{Diagnostic, KbError};
use crate::kinds::{Sources, Store};
use crate::knowledge::Knowledge;
use crate::memories::file::{Importance, MemoryType, detect_category, detect_source};
use crate::memories::index::{Index, Listed, MemoryRef, Pos};
use crate::memories::store;
use crate::output::chars_prefix;
use crate::repo::{Repo, parse_id};
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The `store` value of a Copilot item in JSON.
pub const COPILOT: &str = "copilot";

/// Where an id typed by a person leads: an integer is a markdown memory, always (a
/// Copilot record whose id looks like an integer is reached with `--store copilot`); any other
/// id is a Copilot record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Md(u64),
    Copilot,
}

impl Route {
    /// Returns where `raw` leads within the memory stores of `scope`; an id that cannot be a
    /// memory's is an error with `--store md`.
    pub fn of(raw: &str, scope: Sources) -> Result<Route, KbError> {
        Ok(match (scope.has(Store::Md), scope.has(Store::Copilot)) {
            (false, _) => Route::Copilot,
            (true, false) => Route::Md(parse_id(raw)?),
            (true, true) => match parse_id(raw) {
                Ok(id) => Route::Md(id),
                Err(_) => Route::Copilot,
            },
        })
    }
}

/// Returns the JSONL file of `k` for a command narrowed to the Copilot store: unreadable is an
/// error.
pub fn records_of<'a>(k: &'a Knowledge<'_>) -> Result<&'a JsonlFile> {
    k.records().map_err(|e| anyhow::anyhow!("cannot read {}: {e}", k.repo().layout.copilot_memories().display()))
}

/// Reads the JSONL file for an operation that changes it (export, consolidate, heat's records):
/// unreadable is an error, worded as [`records_of`] words it.
pub fn read_records(repo: &Repo) -> Result<JsonlFile> {
    let path = repo.layout.copilot_memories();
    JsonlFile::read(&path, &repo.layout.root).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))
}

/// Returns the diagnostics of the lines a read left out, placed in the file.
pub fn skipped_lines(all: &Records<'_>) -> impl Iterator<Item = Diagnostic> {
    all.problems.iter().filter(|p| p.skipped()).map(|p| p.clone().in_file(&all.file.path))
}

/// The stores a read command covers, taken from a [`Knowledge`]: the memory index and the JSONL
/// file, as its scope asks, with the diagnostics of reading them.
pub struct Stores<'a> {
    /// The root, named by empty results.
    pub root: &'a Path,
    /// `memory_max_count`, shown by `list`.
    pub limit: u64,
    pub index: Option<&'a Index>,
    pub file: Option<&'a JsonlFile>,
    /// Files left out while reading (not yet the JSONL lines: those come with the parse).
    pub diagnostics: Vec<Diagnostic>,
}

/// Takes the stores `scope` covers from `k`. With both stores, an unreadable JSONL file is a
/// diagnostic and the Copilot half is empty; narrowed to the Copilot store, it is an error.
pub fn stores<'a>(k: &'a Knowledge<'_>, scope: Sources) -> Result<Stores<'a>> {
    let repo = k.repo();
    let mut diagnostics = Vec::new();
    let index = match scope.has(Store::Md) {
        false => None,
        true => {
            let index = k.memories()?;
            diagnostics.extend(index.problems());
            Some(index)
        }
    };
    let file = match (scope.has(Store::Copilot), index.is_some()) {
        (false, _) => None,
        (true, false) => Some(records_of(k)?),
        (true, true) => match k.records() {
            Ok(f) => Some(f),
            Err(e) => {
                diagnostics.push(Diagnostic::error(None, e).in_file(&repo.layout.copilot_memories()));
                None
            }
        },
    };
    let limit = repo.settings.memory_max_count.value;
    Ok(Stores { root: &repo.layout.root, limit, index, file, diagnostics })
}

/// One memory in JSON: `MEMORY` in docs/formats.md, JSON output.
#[derive(Serialize)]
pub struct MemoryJson {
    pub store: &'static str,
    pub id: u64,
    pub path: String,
    pub content: String,
    pub tags: Vec<String>,
    pub created: String,
    pub updated: Option<String>,
    pub source: String,
    pub category: Option<&'static str>,
    pub decay_protected: bool,
    /// The effective type (`learning` when the file has none).
    #[serde(rename = "type")]
    pub memory_type: &'static str,
    /// The effective importance (`medium` when the file has none).
    pub importance: &'static str,
    /// The agent the memory names; null: shared by every agent.
    pub agent: Option<String>,
    /// Who created it (provenance: docs/formats.md, Provenance); null when absent (a person's).
    pub created_by: Option<String>,
    /// Who last rewrote its content; null when absent.
    pub updated_by: Option<String>,
}

impl MemoryJson {
    pub fn new(m: &MemoryRef<'_>, dir: &Path) -> MemoryJson {
        MemoryJson {
            store: "md",
            id: m.id,
            path: abs(&dir.join(m.file_name)),
            content: m.content.to_string(),
            tags: m.tags.iter().map(|t| t.to_string()).collect(),
            created: m.created.to_string(),
            updated: m.updated.map(|u| u.to_string()),
            source: m.source.map_or_else(|| detect_source(&m.tags).to_string(), String::from),
            category: detect_category(&m.tags),
            decay_protected: m.decay_protected,
            memory_type: m.effective_type().as_str(),
            importance: m.effective_importance().as_str(),
            agent: m.agent.map(String::from),
            created_by: m.created_by.map(String::from),
            updated_by: m.updated_by.map(String::from),
        }
    }
}

/// One record in JSON (`RECORD` in docs/formats.md, JSON output): the `MEMORY` keys (content = fact,
/// no tags, never decay-protected), plus the record's own.
#[derive(Serialize)]
pub struct RecordJson {
    pub store: &'static str,
    pub id: String,
    pub path: String,
    pub line: usize,
    pub subject: String,
    pub fact: String,
    pub content: String,
    pub citations: Vec<String>,
    pub reason: Option<String>,
    pub category: Option<String>,
    pub source: Option<String>,
    pub created: Option<String>,
    pub updated: Option<String>,
    pub votes: Votes,
    pub tags: Vec<String>,
    pub decay_protected: bool,
    pub created_by: Option<String>,
    pub updated_by: Option<String>,
}

impl RecordJson {
    pub fn new(all: &Records<'_>, r: &Record<'_>) -> RecordJson {
        let f = all.fields(r);
        let owned = |s: Option<&str>| s.map(str::to_string);
        RecordJson {
            store: COPILOT,
            id: r.id.to_string(),
            path: abs(&all.file.path),
            line: r.line(),
            subject: r.subject.to_string(),
            fact: r.fact.to_string(),
            content: r.fact.to_string(),
            citations: f.citations.iter().map(|c| c.to_string()).collect(),
            reason: owned(f.reason.as_deref()),
            category: owned(r.category),
            source: owned(f.source.as_deref()),
            created: owned(r.created),
            updated: owned(r.updated),
            votes: r.votes,
            tags: Vec::new(),
            decay_protected: false,
            created_by: owned(r.created_by),
            updated_by: owned(r.updated_by),
        }
    }
}

/// A memory of either store in `recall` JSON.
#[derive(Serialize)]
#[serde(untagged)]
enum Either<M, R> {
    Md(M),
    Copilot(R),
}

/// A recall hit in either store: a memory, or a record by its position in the parsed records
/// (a record borrows the parse, which the report owns).
enum Hit<'a> {
    Md(MemoryRef<'a>),
    Copilot { pos: usize, age: (i64, usize) },
}

impl Hit<'_> {
    /// Returns the key hits are ordered by, newest last: created, then the store's own order.
    fn age_key(&self) -> (i64, u8, u64) {
        match self {
            Hit::Md(m) => (m.created_at, 1, m.id),
            Hit::Copilot { age: (at, index), .. } => (*at, 0, *index as u64),
        }
    }
}

/// `kb recall`: the newest matches of both stores, merged.
///
/// JSON: `{"query":Q, "count":N, "results":[MEMORY...]}`.
pub struct RecallReport<'a> {
    query: String,
    stores: Stores<'a>,
    records: Option<Records<'a>>,
    hits: Vec<Hit<'a>>,
    /// How many memories and records matched in all (the hits are the newest of them).
    total: usize,
    diagnostics: Vec<Diagnostic>,
}

/// Finds the newest `max_results` memories of either store matching `query`, and logs each
/// result as an access in the heat log of `repo` (a failure to log is a warning, never an error).
pub fn recall<'a>(repo: &Repo, stores: Stores<'a>, query: &str, max_results: usize) -> RecallReport<'a> {
    let mut report = find(stores, query, max_results);
    log_accesses(repo, &report.accesses(), &mut report.diagnostics);
    report
}

/// Records `accesses` in the heat log; a failure becomes the first diagnostic, shown before the
/// others as the command goes on.
pub(super) fn log_accesses(repo: &Repo, accesses: &[crate::heat::Access], diagnostics: &mut Vec<Diagnostic>) {
    if let Some(d) = crate::heat::record(&repo.layout, repo.now, accesses) {
        diagnostics.insert(0, d);
    }
}

/// Finds the newest `max_results` memories of either store matching `query`.
fn find<'a>(stores: Stores<'a>, query: &str, max_results: usize) -> RecallReport<'a> {
    let mut diagnostics = stores.diagnostics.clone();
    let records = stores.file.map(Records::parse);
    let mut hits: Vec<Hit<'a>> = Vec::new();
    let mut total = 0;
    if let Some(index) = stores.index {
        let (found, matched) = store::recall(index, query, max_results);
        hits.extend(found.into_iter().map(Hit::Md));
        total += matched;
    }
    if let Some(all) = &records {
        diagnostics.extend(skipped_lines(all));
        let q = copilot::Query::words(query);
        // Keep only the newest N matches of this store before merging (a broad query can match
        // most of 100,000 records).
        let mut found: Vec<((i64, usize), usize)> =
            all.iter().enumerate().filter(|(_, r)| all.matches(r, &q)).map(|(pos, r)| (r.age_key(), pos)).collect();
        total += found.len();
        found.sort_unstable_by_key(|(age, _)| std::cmp::Reverse(*age));
        found.truncate(max_results);
        hits.extend(found.into_iter().map(|(age, pos)| Hit::Copilot { pos, age }));
    }
    hits.sort_by_key(|h| std::cmp::Reverse(h.age_key()));
    hits.truncate(max_results);
    RecallReport { query: query.to_string(), stores, records, hits, total, diagnostics }
}

impl Serialize for RecallReport<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct RecallJson<'q> {
            query: &'q str,
            count: usize,
            total: usize,
            results: Vec<Either<MemoryJson, RecordJson>>,
        }
        let results = self
            .hits
            .iter()
            .filter_map(|h| match (h, self.stores.index, &self.records) {
                (Hit::Md(m), Some(index), _) => Some(Either::Md(MemoryJson::new(m, &index.dir))),
                (Hit::Copilot { pos, .. }, _, Some(all)) => {
                    all.get(*pos).map(|r| Either::Copilot(RecordJson::new(all, &r)))
                }
                _ => None,
            })
            .collect();
        RecallJson { query: &self.query, count: self.hits.len(), total: self.total, results }.serialize(s)
    }
}

impl RecallReport<'_> {
    /// Returns the results that count as uses in the heat log: the first three (co-cli's rule
    /// has no score: every result matched every word, newest first; docs/behaviour.md, Heat).
    pub fn accesses(&self) -> Vec<crate::heat::Access> {
        use crate::heat::Access;
        use crate::kinds::Store;
        self.hits
            .iter()
            .take(crate::heat::USES_PER_RECALL)
            .filter_map(|h| match h {
                Hit::Md(m) => Some(Access { id: m.id.to_string(), store: Store::Md }),
                Hit::Copilot { pos, .. } => {
                    let r = self.records.as_ref()?.get(*pos)?;
                    Some(Access { id: r.id.to_string(), store: Store::Copilot })
                }
            })
            .collect()
    }
}

impl Report for RecallReport<'_> {
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

impl RecallReport<'_> {
    /// Writes the results, each followed by its verdict when `verdicts` has one.
    fn render_with(&self, v: &View, w: &mut dyn Write, verdicts: &[String]) -> io::Result<()> {
        let Some(mut lines) = recall_head(v, &self.query, self.total, self.hits.len()) else {
            let q = v.clean(&self.query);
            return writeln!(w, "No memories found matching '{q}' in {}", self.stores.root.display());
        };
        for (i, h) in self.hits.iter().enumerate() {
            let start = lines.len();
            match h {
                Hit::Md(m) => lines.extend(memory_recall_lines(v, m)),
                Hit::Copilot { pos, .. } => {
                    if let Some((all, r)) = self.records.as_ref().and_then(|all| Some((all, all.get(*pos)?))) {
                        lines.extend(record_recall_lines(v, all, &r));
                    }
                }
            }
            place_verdict(v, &mut lines, start, verdicts.get(i));
        }
        writeln!(w, "{}", lines.join("\n").trim_end())
    }
}

/// Puts a result's verdict (`Memory 3: stale; …`, from the check at use) within its own lines,
/// before the blank line that ends them (`lines[start..]`): `Verified: stale; …`.
pub(super) fn place_verdict(v: &View, lines: &mut Vec<String>, start: usize, verdict: Option<&String>) {
    let Some(verdict) = verdict else { return };
    let said = verdict.split_once(": ").map_or(verdict.as_str(), |(_, said)| said);
    let line = format!("Verified: {}", v.clean(said));
    let at =
        if lines.len() > start && lines.last().is_some_and(String::is_empty) { lines.len() - 1 } else { lines.len() };
    lines.insert(at, line);
}

/// Returns the first lines of a recall's text: how many matched and how many are shown (`None`
/// when nothing matched).
pub(super) fn recall_head(v: &View, query: &str, total: usize, shown: usize) -> Option<Vec<String>> {
    if shown == 0 {
        return None;
    }
    let q = v.clean(query);
    let noun = if total == 1 { "memory" } else { "memories" };
    let showing = if total > shown { format!(" (showing {shown})") } else { String::new() };
    Some(vec![format!("Found {total} {noun} matching '{q}'{showing}:"), String::new()])
}

/// Returns the human `recall` lines of one markdown memory.
pub(super) fn memory_recall_lines(v: &View, m: &MemoryRef<'_>) -> Vec<String> {
    let head = format!("**Memory {}** (created {})", m.id, m.created.day());
    let mut lines = vec![v.style.bold(&head)];
    if !m.tags.is_empty() {
        lines.push(format!("Tags: {}", v.clean(&m.tags.join(", "))));
    }
    lines.push(v.clean(m.content).into_owned());
    lines.push(String::new());
    lines
}

/// Returns the human `recall` lines of one record.
pub(super) fn record_recall_lines(v: &View, all: &Records<'_>, r: &Record<'_>) -> Vec<String> {
    let head = match r.created {
        Some(c) => format!("**Copilot memory {}** (created {})", r.id, chars_prefix(c, 10)),
        None => format!("**Copilot memory {}**", r.id),
    };
    let mut lines = vec![v.style.bold(&v.clean(&head)), format!("Subject: {}", v.clean(r.subject))];
    if r.votes != Votes::default() {
        // A down-voted fact must never look like a plain one.
        let warn = if r.votes.down > r.votes.up { " (more down than up: it may be wrong)" } else { "" };
        lines.push(format!("Votes: {} up, {} down{warn}", r.votes.up, r.votes.down));
    }
    let citations = all.fields(r).citations;
    if !citations.is_empty() {
        lines.push(format!("Citations: {}", v.clean(&citations.join(", "))));
    }
    lines.push(v.clean(r.fact).into_owned());
    lines.push(String::new());
    lines
}

/// What `kb list --type T --importance I --agent NAME` keeps: the markdown memories
/// whose effective type and importance (absent: learning, medium) and whose agent equal the given
/// ones. `--agent NAME` keeps only the memories that name that agent, not the shared ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    pub memory_type: Option<MemoryType>,
    pub importance: Option<Importance>,
    pub agent: Option<String>,
    /// `--by PREFIX`: only items whose `created_by` starts with it (docs/formats.md, Provenance); records too.
    pub by: Option<String>,
}

impl ListFilter {
    /// Returns a filter; an agent name that no memory can have is an error naming it.
    pub fn new(
        memory_type: Option<MemoryType>,
        importance: Option<Importance>,
        agent: Option<String>,
    ) -> Result<ListFilter, KbError> {
        if let Some(a) = &agent {
            crate::format::text::check_agent(a).map_err(|why| KbError::rejected("agent", why))?;
        }
        Ok(ListFilter { memory_type, importance, agent, by: None })
    }

    /// Returns the filter keeping, besides, only what `created_by` prefix `by` wrote.
    pub fn by(self, by: Option<String>) -> ListFilter {
        ListFilter { by, ..self }
    }

    /// Returns whether an item created by `created_by` passes `--by`.
    fn keeps_author(&self, created_by: Option<&str>) -> bool {
        self.by.as_deref().is_none_or(|p| created_by.is_some_and(|c| c.starts_with(p)))
    }

    /// Returns whether the filter keeps everything.
    pub fn is_empty(&self) -> bool {
        *self == ListFilter::default()
    }

    fn keeps(&self, index: &Index, p: Pos) -> bool {
        self.memory_type.is_none_or(|t| index.type_at(p) == t)
            && self.importance.is_none_or(|i| index.importance_at(p) == i)
            && self.agent.as_deref().is_none_or(|a| index.agent_at(p) == Some(a))
            && (self.by.is_none() || self.keeps_author(index.created_by_at(p)))
    }

    /// Returns the filter as the human list shows it: `type core_context, agent reviewer`.
    fn describe(&self, v: &View) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.memory_type {
            parts.push(format!("type {}", t.as_str()));
        }
        if let Some(i) = self.importance {
            parts.push(format!("importance {}", i.as_str()));
        }
        if let Some(a) = &self.agent {
            parts.push(format!("agent {}", v.clean(a)));
        }
        if let Some(b) = &self.by {
            parts.push(format!("created by {}*", v.clean(b)));
        }
        parts.join(", ")
    }
}

/// `kb list`: every markdown memory by id (the lines of co-cli, the Python tool whose file layout kb keeps), then the
/// Copilot records in file order.
///
/// JSON: `{"count":N, "limit":MAX, "counts":{"md":N,"copilot":N}, "memories":[ITEM...]}`, the
/// items streamed one by one. With a [`ListFilter`], `count` and `counts.md` count the memories
/// listed.
///
/// As a page ([`ListReport::page`], MCP `list_memories`): at most N items, the memories first;
/// each line gives the whole first line, not co-cli's 80 characters; the JSON adds `"total"`
/// (every item the filter keeps) and each item's `"content"` (a record's fact), and `count` and
/// `counts` count the items given.
pub struct ListReport<'a> {
    stores: Stores<'a>,
    /// The memory index listed: the stores', unless the list is narrowed to the Copilot store.
    index: Option<&'a crate::memories::index::Index>,
    records: Option<Records<'a>>,
    /// The markdown memories, by id (then file name).
    order: Vec<Pos>,
    filter: ListFilter,
    /// The most items given, for a page; `None`: all of them, as `kb list` gives them.
    page: Option<usize>,
    diagnostics: Vec<Diagnostic>,
}

/// Lists what `k` holds within `scope` that `filter` keeps, whole (`kb list`) or as a page of
/// at most `page` items, for an agent (see [`ListReport`]).
pub fn list<'a>(
    k: &'a Knowledge<'_>,
    scope: Sources,
    filter: &ListFilter,
    page: Option<usize>,
) -> Result<ListReport<'a>> {
    Ok(list_in(stores(k, scope)?, scope, filter, page))
}

/// Lists what `stores` hold within `scope` that `filter` keeps (a long-running server holds
/// both stores and narrows here), whole or as a page of at most `page` items, for an agent (see
/// [`ListReport`]).
fn list_in<'a>(stores: Stores<'a>, scope: Sources, filter: &ListFilter, page: Option<usize>) -> ListReport<'a> {
    let index = stores.index.filter(|_| scope.has(Store::Md));
    let file = stores.file.filter(|_| scope.has(Store::Copilot));
    let mut diagnostics = stores.diagnostics.clone();
    let records = file.map(Records::parse);
    if let Some(all) = &records {
        diagnostics.extend(skipped_lines(all));
    }
    let mut order: Vec<Pos> = Vec::new();
    if let Some(index) = index {
        order = index.positions().filter(|&p| filter.keeps(index, p)).collect();
        let by_id = |a: &Pos, b: &Pos| {
            index.id_at(*a).cmp(&index.id_at(*b)).then_with(|| index.file_name_at(*a).cmp(index.file_name_at(*b)))
        };
        match page {
            // A page needs its first items in order, not all of them (100,000 for a server).
            Some(limit) if limit < order.len() => {
                if limit > 0 {
                    order.select_nth_unstable_by(limit - 1, by_id);
                }
                order[..limit].sort_by(by_id);
            }
            // Every item: sorted by id alone, on keys that hold it (no look into the index per
            // comparison), then each run of one id (a duplicate `kb check` reports) by file name.
            _ => {
                let mut keys: Vec<(u64, Pos)> = order.iter().map(|&p| (index.id_at(p), p)).collect();
                keys.sort_unstable_by_key(|k| k.0);
                for run in keys.chunk_by_mut(|a, b| a.0 == b.0).filter(|run| run.len() > 1) {
                    run.sort_by(|a, b| by_id(&a.1, &b.1));
                }
                order.clear();
                order.extend(keys.into_iter().map(|k| k.1));
            }
        }
    }
    ListReport { stores, index, records, order, filter: filter.clone(), page, diagnostics }
}

impl ListReport<'_> {
    /// Returns how many memories and how many records the filter keeps.
    fn totals(&self) -> (usize, usize) {
        let records = match (&self.records, &self.filter.by) {
            (Some(all), Some(_)) => self.kept_records(all).count(),
            (Some(all), None) => all.len(),
            (None, _) => 0,
        };
        (self.order.len(), records)
    }

    /// Returns the records the filter keeps (`--by`; the other filters list no record), in file
    /// order.
    fn kept_records<'r>(&self, all: &'r Records<'_>) -> impl Iterator<Item = Record<'r>> {
        let filter = &self.filter;
        all.iter().filter(move |r| filter.keeps_author(r.created_by))
    }

    /// Returns how many memories and how many records are given: all, or a page's first ones.
    fn shown(&self) -> (usize, usize) {
        let (md, copilot) = self.totals();
        match self.page {
            None => (md, copilot),
            Some(limit) => (md.min(limit), copilot.min(limit.saturating_sub(md))),
        }
    }

    /// Returns the line a list gives for `content`: co-cli's summary, or for a page the whole
    /// first line.
    fn line<'c>(&self, content: &'c str) -> std::borrow::Cow<'c, str> {
        match line_cut(content, self.page.is_some()) {
            (head, true) => format!("{head}...").into(),
            (line, false) => line.into(),
        }
    }
}

/// Returns what a list line gives of `content` (see [`ListReport::line`]) and whether `...`
/// follows: co-cli's summary, or the whole first line (`whole`, for a page).
fn line_cut(content: &str, whole: bool) -> (&str, bool) {
    match whole {
        false => crate::output::summary_cut(content),
        true => (content.lines().next().unwrap_or(""), false),
    }
}

/// Appends a memory's `kb list` line to `out`, as co-cli prints it: `**ID** (CREATED[ →
/// UPDATED])[ [CATEGORY]][ 🔒] : SUMMARY` (the whole first line for a page, `whole`). Bytes put
/// in place, not formatted: `kb list` of 100,000 memories writes as many lines.
fn push_line(out: &mut Vec<u8>, v: &View, m: Listed<'_>, whole: bool) {
    out.extend_from_slice(b"**");
    push_number(out, m.id, 3);
    out.extend_from_slice(b"** (");
    m.created.day().push_to(out);
    if let Some(u) = m.updated {
        out.extend_from_slice(" → ".as_bytes());
        u.day().push_to(out);
    }
    out.push(b')');
    if let Some(c) = m.category {
        out.extend_from_slice(b" [");
        out.extend_from_slice(c.as_bytes());
        out.push(b']');
    }
    if m.decay_protected {
        out.extend_from_slice(" 🔒".as_bytes());
    }
    out.extend_from_slice(b" : ");
    let (text, cut) = line_cut(m.content, whole);
    out.extend_from_slice(v.clean(text).as_bytes());
    if cut {
        out.extend_from_slice(b"...");
    }
    out.push(b'\n');
}

/// Appends `n` in decimal, zero-padded on the left to at least `width` digits (`{n:0width$}`).
fn push_number(out: &mut Vec<u8>, mut n: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let start = start.min(digits.len().saturating_sub(width));
    out.extend_from_slice(&digits[start..]);
}

/// A memory's path in JSON, the folder's absolute path (`prefix`, ending in its separator) and
/// the file name, written as one string without being put together first.
struct JoinedPath<'a>(&'a str, &'a str);

impl Serialize for JoinedPath<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::fmt::Display for JoinedPath<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)?;
        f.write_str(self.1)
    }
}

#[derive(Serialize)]
struct ListItem<'a> {
    store: &'static str,
    id: u64,
    created: crate::format::time::Written<'a>,
    updated: Option<crate::format::time::Written<'a>>,
    tags: Vec<&'a str>,
    category: Option<&'static str>,
    summary: std::borrow::Cow<'a, str>,
    decay_protected: bool,
    path: JoinedPath<'a>,
    #[serde(rename = "type")]
    memory_type: &'static str,
    importance: &'static str,
    agent: Option<&'a str>,
    created_by: Option<&'a str>,
    updated_by: Option<&'a str>,
    /// The whole content, in a page only.
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
}

/// One record in `list` JSON: the `list` item keys (docs/formats.md, JSON output) plus the record's
/// own, borrowed.
#[derive(Serialize)]
struct RecordListItem<'r> {
    store: &'static str,
    id: &'r str,
    created: Option<&'r str>,
    updated: Option<&'r str>,
    tags: &'static [String],
    category: Option<&'r str>,
    summary: std::borrow::Cow<'r, str>,
    decay_protected: bool,
    path: &'r str,
    line: usize,
    subject: &'r str,
    votes: Votes,
    created_by: Option<&'r str>,
    updated_by: Option<&'r str>,
    /// The whole fact, in a page only.
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'r str>,
}

/// The markdown items, then the Copilot records, serialised one by one.
struct ListItems<'x, 'a>(&'x ListReport<'a>);

impl Serialize for ListItems<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let report = self.0;
        let (md_shown, copilot_shown) = report.shown();
        let paged = report.page.is_some();
        let mut seq = s.serialize_seq(Some(md_shown + copilot_shown))?;
        if let Some(index) = report.index {
            let dir = std::path::absolute(&index.dir).unwrap_or_else(|_| index.dir.clone());
            // `dir.join(name).display()` for every name: the folder's part is the same for all
            // (it ends in the separator, an ASCII byte, so no character spans the two parts).
            let mut prefix = dir.join("x").display().to_string();
            prefix.pop();
            for &p in &report.order[..md_shown] {
                let m = index.at(p);
                seq.serialize_element(&ListItem {
                    store: "md",
                    id: m.id,
                    created: m.created,
                    updated: m.updated,
                    category: detect_category(&m.tags),
                    summary: report.line(m.content),
                    decay_protected: m.decay_protected,
                    path: JoinedPath(&prefix, m.file_name),
                    memory_type: m.effective_type().as_str(),
                    importance: m.effective_importance().as_str(),
                    agent: m.agent,
                    created_by: m.created_by,
                    updated_by: m.updated_by,
                    tags: m.tags,
                    content: paged.then_some(m.content),
                })?;
            }
        }
        if let Some(all) = &report.records {
            let path = abs(&all.file.path);
            for r in report.kept_records(all).take(copilot_shown) {
                seq.serialize_element(&RecordListItem {
                    store: COPILOT,
                    id: r.id,
                    created: r.created,
                    updated: r.updated,
                    tags: &[],
                    category: r.category,
                    summary: report.line(r.fact),
                    decay_protected: false,
                    path: &path,
                    line: r.line(),
                    subject: r.subject,
                    votes: r.votes,
                    created_by: r.created_by,
                    updated_by: r.updated_by,
                    content: paged.then_some(r.fact),
                })?;
            }
        }
        seq.end()
    }
}

impl Serialize for ListReport<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Counts {
            md: usize,
            copilot: usize,
        }
        #[derive(Serialize)]
        struct ListJson<'x, 'a> {
            count: usize,
            /// Every item the filter keeps, in a page only.
            #[serde(skip_serializing_if = "Option::is_none")]
            total: Option<usize>,
            limit: u64,
            /// How many of `memories` each store holds.
            counts: Counts,
            memories: ListItems<'x, 'a>,
        }
        let (md, copilot) = self.shown();
        let total = self.page.map(|_| self.totals().0 + self.totals().1);
        let counts = Counts { md, copilot };
        ListJson { count: md + copilot, total, limit: self.stores.limit, counts, memories: ListItems(self) }
            .serialize(s)
    }
}

impl Report for ListReport<'_> {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let copilot = self.records.as_ref().filter(|p| !p.is_empty() && self.totals().1 > 0);
        let Some(index) = self.index else {
            // Narrowed to the Copilot store.
            return match &self.records {
                Some(all) if !all.is_empty() => self.write_records(v, all, w),
                Some(all) if all.file.exists => writeln!(w, "No Copilot memories found in {}.", v.rel(&all.file.path)),
                _ => writeln!(w, "No Copilot memories saved yet in {}.", self.stores.root.display()),
            };
        };
        // The markdown section exactly as co-cli prints it, then the Copilot section when it has
        // records.
        let filtered = !self.filter.is_empty();
        if self.order.is_empty() {
            if filtered {
                let which = self.filter.describe(v);
                writeln!(w, "No memories with {which} in {}.", self.stores.root.display())?;
            } else {
                let empty = if index.dir_exists { "No memories found" } else { "No memories saved yet" };
                writeln!(w, "{empty} in {}.", self.stores.root.display())?;
            }
            if let Some(c) = copilot {
                writeln!(w)?;
                self.write_records(v, c, w)?;
            }
            return Ok(());
        }
        if filtered {
            let (n, which) = (self.order.len(), self.filter.describe(v));
            write!(w, "Total memories: {}/{} ({n} with {which})\n\n", index.len(), self.stores.limit)?;
        } else {
            write!(w, "Total memories: {}/{}\n\n", self.order.len(), self.stores.limit)?;
        }
        // The lines are put together in the order the memories lie in the index, one pass
        // through its memory (a jump to each memory in id order waits on memory at every line),
        // then written in the list's order.
        let shown = &self.order[..self.shown().0];
        let mut stored: Vec<(Pos, usize)> = shown.iter().enumerate().map(|(rank, &p)| (p, rank)).collect();
        stored.sort_unstable();
        let mut text = Vec::with_capacity(shown.len() * 128);
        let mut spans = vec![(0, 0); shown.len()];
        for (p, rank) in stored {
            let start = text.len();
            push_line(&mut text, v, index.listed_at(p), self.page.is_some());
            spans[rank] = (start, text.len());
        }
        for (start, end) in spans {
            w.write_all(&text[start..end])?;
        }
        if let Some(c) = copilot {
            w.write_all(b"\n")?;
            self.write_records(v, c, w)?;
        }
        Ok(())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

impl ListReport<'_> {
    /// Writes the human `list` of the Copilot store: a header, then one line per record given, in
    /// file order.
    fn write_records(&self, v: &View, all: &Records<'_>, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "Copilot memories: {}\n", self.totals().1)?;
        for r in self.kept_records(all).take(self.shown().1) {
            write!(w, "**{}**", v.clean(r.id))?;
            if let Some(c) = r.created {
                write!(w, " ({}", chars_prefix(c, 10))?;
                if let Some(u) = r.updated {
                    write!(w, " → {}", chars_prefix(u, 10))?;
                }
                w.write_all(b")")?;
            }
            write!(w, " [{}]", v.clean(r.subject))?;
            if r.votes != Votes::default() {
                write!(w, " +{}/-{}", r.votes.up, r.votes.down)?;
            }
            writeln!(w, " : {}", v.clean(&self.line(r.fact)))?;
        }
        Ok(())
    }
}

/// Returns the `Created by:` and `Updated by:` lines of `kb show` (nothing for what is absent).
pub(super) fn provenance_lines(v: &View, created_by: Option<&str>, updated_by: Option<&str>) -> String {
    let mut text = String::new();
    for (label, value) in [("Created by", created_by), ("Updated by", updated_by)] {
        if let Some(value) = value {
            text.push_str(&format!("{label}: {}\n", v.clean(value)));
        }
    }
    text
}

/// `kb show`: one memory or record in full. JSON: `MEMORY` (a record's adds its own keys).
pub enum ShowReport {
    Md {
        json: MemoryJson,
        file: PathBuf,
        diagnostics: Vec<Diagnostic>,
    },
    Copilot {
        json: RecordJson,
        file: PathBuf,
        diagnostics: Vec<Diagnostic>,
    },
    /// `decision:N`.
    Decision(super::decision::ShowReport),
    /// An item of the shared source `name` (`org:12`, `org:mem-3f2a`, `org:decision:4`).
    Shared {
        name: String,
        id: String,
        inner: Box<ShowReport>,
    },
}

impl ShowReport {
    /// Returns the memory or record shown, as an access for the heat log.
    pub fn access(&self) -> Option<crate::heat::Access> {
        use crate::heat::Access;
        use crate::kinds::Store;
        match self {
            ShowReport::Md { json, .. } => Some(Access { id: json.id.to_string(), store: Store::Md }),
            ShowReport::Copilot { json, .. } => Some(Access { id: json.id.clone(), store: Store::Copilot }),
            // Heat counts memories and records of this repository only.
            ShowReport::Decision(_) | ShowReport::Shared { .. } => None,
        }
    }
}

/// Shows the memory or record `raw_id` leads to within `scope` in `k`, and logs it as an access
/// in the heat log (a failure to log is a warning).
pub fn show(k: &Knowledge<'_>, raw_id: &str, scope: Sources) -> Result<ShowReport> {
    if let Some((name, rest)) = shared_id(k.repo(), raw_id) {
        let view = shared_view(k, name)?;
        let mut inner = show_own(&view.knowledge, rest, scope).map_err(|e| in_shared(e, name, raw_id))?;
        if let ShowReport::Md { diagnostics, .. } | ShowReport::Copilot { diagnostics, .. } = &mut inner {
            *diagnostics = std::mem::take(diagnostics).into_iter().map(|d| shared_problem(name, d)).collect();
        }
        return Ok(ShowReport::Shared { name: name.to_string(), id: rest.trim().to_string(), inner: Box::new(inner) });
    }
    unknown_source(k.repo(), raw_id)?;
    logged(k.repo(), show_own(k, raw_id, scope)?)
}

/// An error of a lookup in the shared source `name`: a "not found" names the whole id (`memory
/// org:99 not found`, not the source's own `memory 99`), and the files it skipped are the
/// source's.
fn in_shared(e: anyhow::Error, name: &str, raw_id: &str) -> anyhow::Error {
    let named = |error: KbError| match error {
        KbError::NotFound { thing, branch, .. } => KbError::NotFound { thing, id: raw_id.trim().into(), branch },
        other => other,
    };
    let e = match e.downcast::<Shown>() {
        Ok(Shown { diagnostics, error }) => {
            let diagnostics = diagnostics.into_iter().map(|d| shared_problem(name, d)).collect();
            return Shown { diagnostics, error: named(error) }.into();
        }
        Err(e) => e,
    };
    match e.downcast::<KbError>() {
        Ok(error) => named(error).into(),
        Err(e) => e,
    }
}

/// Fails when `raw_id` reads as a shared id (`NAME:ID`, not `decision:N`) of a source the
/// setting `shared` does not have, naming the sources there are.
pub fn unknown_source(repo: &Repo, raw_id: &str) -> Result<(), KbError> {
    let Some((name, _)) = raw_id.trim().split_once(':') else { return Ok(()) };
    if name == "decision" || crate::settings::SharedSpec::check_name(name).is_err() {
        return Ok(());
    }
    let there = super::shared::no_source(repo.settings.shared.value.iter().map(|s| s.name.as_str()), name);
    Err(KbError::rejected("id", format!("{there}: {} is not an id here", raw_id.trim())))
}

/// [`show`] within one repository's knowledge (`decision:N` a decision), nothing logged.
fn show_own(k: &Knowledge<'_>, raw_id: &str, scope: Sources) -> Result<ShowReport> {
    if let Some(n) = raw_id.trim().strip_prefix("decision:") {
        return Ok(ShowReport::Decision(super::decision::show(k.repo(), n)?));
    }
    match Route::of(raw_id, scope)? {
        Route::Copilot => show_record(records_of(k)?, raw_id),
        Route::Md(id) => show_memory(k.memories()?, raw_id, id),
    }
}

/// Splits a shared source's id (`org:12`) into the source's name and its own id, when `raw`
/// starts with the name of a source of the setting `shared`.
pub fn shared_id<'r>(repo: &Repo, raw: &'r str) -> Option<(&'r str, &'r str)> {
    let (name, rest) = raw.trim().split_once(':')?;
    repo.settings.shared.value.iter().any(|s| s.name == name).then_some((name, rest))
}

/// Returns the view of the shared source `name`, or the error that its copy is not here.
pub fn shared_view<'k>(k: &'k Knowledge<'_>, name: &str) -> Result<&'k crate::knowledge::SharedView, KbError> {
    k.shared_named(name).ok_or_else(|| {
        let all = super::shared::sources(k.repo());
        let why = match all.iter().find(|s| s.spec.name == name) {
            Some(source) => source.missing(),
            None => super::shared::no_source(all.iter().map(|s| s.spec.name.as_str()), name),
        };
        KbError::Absent { why }
    })
}

/// A shared source's problem, its message naming the source.
pub fn shared_problem(name: &str, mut d: Diagnostic) -> Diagnostic {
    d.message = format!("shared source {name}: {}", d.message);
    d
}

/// Refuses a write that names a shared source's item (`org:12`): those change in their own
/// repository.
pub fn refuse_shared(repo: &Repo, raw: &str) -> Result<(), KbError> {
    match shared_id(repo, raw) {
        Some((name, _)) => Err(KbError::refused(
            "write",
            format!(
                "{} lives in the shared source {name}: change it there, or propose it with kb shared propose",
                raw.trim()
            ),
        )),
        None => Ok(()),
    }
}

/// Logs a shown memory or record as an access.
fn logged(repo: &Repo, mut report: ShowReport) -> Result<ShowReport> {
    let Some(access) = report.access() else { return Ok(report) };
    if let ShowReport::Md { diagnostics, .. } | ShowReport::Copilot { diagnostics, .. } = &mut report {
        log_accesses(repo, &[access], diagnostics)
    }
    Ok(report)
}

/// Returns memory `id` of `index`.
fn show_memory(index: &crate::memories::index::Index, raw_id: &str, id: u64) -> Result<ShowReport> {
    let diagnostics = index.problems();
    let found = index.by_id(id);
    let m = match found.as_slice() {
        [] => {
            // A file that names this id but does not read as a memory: its problem is the answer.
            let error = match index.problems_of_id(id).into_iter().next() {
                Some(problem) => KbError::BadFile(problem),
                None => KbError::not_found("memory", raw_id.trim()),
            };
            return Err(Shown { diagnostics, error }.into());
        }
        [m] => m,
        many => {
            let files = many.iter().map(|m| m.file_name.to_string()).collect();
            return Err(Shown { diagnostics, error: KbError::duplicate_id("memory", id, files) }.into());
        }
    };
    let file = index.dir.join(m.file_name);
    Ok(ShowReport::Md { json: MemoryJson::new(m, &index.dir), file, diagnostics })
}

/// An error of `show` that comes with the files it skipped on the way (a read command names
/// them even when it fails).
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct Shown {
    pub diagnostics: Vec<Diagnostic>,
    #[source]
    pub error: KbError,
}

fn show_record(file: &JsonlFile, raw_id: &str) -> Result<ShowReport> {
    let all = Records::parse(file);
    match all.one(raw_id.trim()) {
        // As `kb show` of a memory names the files it skipped, a failed lookup names the lines.
        Ok(r) => Ok(ShowReport::Copilot {
            json: RecordJson::new(&all, &r),
            file: file.path.clone(),
            diagnostics: Vec::new(),
        }),
        Err(error) => Err(Shown { diagnostics: skipped_lines(&all).collect(), error }.into()),
    }
}

impl Serialize for ShowReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            ShowReport::Md { json, .. } => json.serialize(s),
            ShowReport::Copilot { json, .. } => json.serialize(s),
            ShowReport::Decision(d) => {
                let mut value = serde_json::to_value(d).map_err(serde::ser::Error::custom)?;
                if let Some(obj) = value.as_object_mut() {
                    obj.insert("store".into(), serde_json::Value::from("decision"));
                }
                value.serialize(s)
            }
            ShowReport::Shared { name, id, inner } => {
                let mut value = serde_json::to_value(inner.as_ref()).map_err(serde::ser::Error::custom)?;
                if let Some(obj) = value.as_object_mut() {
                    obj.insert("id".into(), serde_json::Value::from(format!("{name}:{id}")));
                    obj.insert("shared".into(), serde_json::Value::from(name.as_str()));
                }
                value.serialize(s)
            }
        }
    }
}

impl Report for ShowReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let mut text = String::new();
        match self {
            ShowReport::Decision(d) => return d.render(v, w),
            ShowReport::Shared { name, id, inner } => {
                // The inner item's own lines, its head naming it by the namespaced id.
                let mut own = Vec::new();
                inner.render(v, &mut own)?;
                let own = String::from_utf8_lossy(&own);
                let bare = id.strip_prefix("decision:").unwrap_or(id);
                let head = own.replacen(&format!(" {bare} ("), &format!(" {name}:{id} ("), 1);
                return w.write_all(head.as_bytes());
            }
            ShowReport::Md { json: m, file, .. } => {
                let header = format!("Memory {} ({})", m.id, v.rel(file));
                text.push_str(&format!("{}\n", v.style.bold(&v.clean(&header))));
                text.push_str(&format!("Created: {}\n", m.created));
                if let Some(u) = &m.updated {
                    text.push_str(&format!("Updated: {u}\n"));
                }
                if !m.tags.is_empty() {
                    text.push_str(&format!("Tags: {}\n", v.clean(&m.tags.join(", "))));
                }
                if let Some(c) = m.category {
                    text.push_str(&format!("Category: {c}\n"));
                }
                text.push_str(&format!("Source: {}\n", v.clean(&m.source)));
                // The layer keys (`type`, `importance`, `agent`), when they say more than the defaults.
                if m.memory_type != MemoryType::default().as_str() {
                    text.push_str(&format!("Type: {}\n", m.memory_type));
                }
                if m.importance != Importance::default().as_str() {
                    text.push_str(&format!("Importance: {}\n", m.importance));
                }
                if let Some(a) = &m.agent {
                    text.push_str(&format!("Agent: {}\n", v.clean(a)));
                }
                text.push_str(&provenance_lines(v, m.created_by.as_deref(), m.updated_by.as_deref()));
                if m.decay_protected {
                    text.push_str("Protected: 🔒 yes\n");
                }
                text.push('\n');
                text.push_str(&v.clean(&m.content));
            }
            ShowReport::Copilot { json: r, file, .. } => {
                let title = format!("Copilot memory {} ({}:{})", v.clean(&r.id), v.rel(file), r.line);
                text.push_str(&format!("{}\n", v.style.bold(&title)));
                text.push_str(&format!("Subject: {}\n", v.clean(&r.subject)));
                for (label, value) in
                    [("Created", &r.created), ("Updated", &r.updated), ("Category", &r.category), ("Source", &r.source)]
                {
                    if let Some(val) = value {
                        text.push_str(&format!("{label}: {}\n", v.clean(val)));
                    }
                }
                if !r.citations.is_empty() {
                    text.push_str(&format!("Citations: {}\n", v.clean(&r.citations.join(", "))));
                }
                if let Some(reason) = &r.reason {
                    text.push_str(&format!("Reason: {}\n", v.clean(reason)));
                }
                if r.votes != Votes::default() {
                    text.push_str(&format!("Votes: {} up, {} down\n", r.votes.up, r.votes.down));
                }
                text.push_str(&provenance_lines(v, r.created_by.as_deref(), r.updated_by.as_deref()));
                text.push('\n');
                text.push_str(&v.clean(&r.fact));
            }
        }
        writeln!(w, "{text}")
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            ShowReport::Md { diagnostics, .. } | ShowReport::Copilot { diagnostics, .. } => diagnostics,
            ShowReport::Decision(d) => d.diagnostics(),
            ShowReport::Shared { inner, .. } => inner.diagnostics(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(root: &Path) -> Repo {
        let layout = crate::paths::Layout { root: root.to_path_buf(), config: None };
        Repo { layout, settings: Default::default(), now: crate::format::time::now(), env: Default::default() }
    }

    #[test]
    fn a_list_line_put_byte_by_byte_reads_as_the_formatted_one() {
        use crate::format::time::Written;
        // The line as `kb list` formatted it before it was put together byte by byte.
        let formatted = |v: &View, m: &Listed<'_>, whole: bool| {
            let mut s = format!("**{:03}** ({}", m.id, m.created.day());
            if let Some(u) = m.updated {
                s += &format!(" → {}", u.day());
            }
            s.push(')');
            if let Some(c) = m.category {
                s += &format!(" [{c}]");
            }
            if m.decay_protected {
                s += " 🔒";
            }
            let line = if whole {
                m.content.lines().next().unwrap_or("").to_string()
            } else {
                crate::output::summary(m.content)
            };
            s + &format!(" : {}\n", v.clean(&line))
        };
        let long = "é".repeat(81);
        let contents = [
            "",
            "plain",
            "two\nlines",
            "crlf\r\nline",
            "a lone\rreturn",
            "\n",
            &long,
            &"a".repeat(80),
            &"b".repeat(81),
            "tab\there",
            "esc \x1b[31m red",
            "del \x7f and c1 \u{85}",
            "bidi \u{202e}txet",
        ];
        let times = [
            Written::Iso(1_795_000_000_123_456),
            Written::Iso(-62_200_000_000_000_000),
            Written::Iso(i64::MAX),
            Written::Text("2026-11-22T14:27:04Z"),
            Written::Text("é"),
        ];
        for sanitize in [true, false] {
            let style = crate::output::Style { color_out: false, color_err: false, sanitize };
            let v = View { style, root: PathBuf::new(), agent: false };
            for (i, content) in contents.iter().enumerate() {
                for (j, &created) in times.iter().enumerate() {
                    let m = Listed {
                        id: [0, 7, 42, 999, 1000, u64::MAX][(i + j) % 6],
                        created,
                        updated: [None, Some(times[(i + 1) % times.len()])][(i + j) % 2],
                        category: [None, Some("preference")][i % 2],
                        decay_protected: j % 2 == 0,
                        content,
                    };
                    for whole in [false, true] {
                        let mut out = b"before\n".to_vec();
                        push_line(&mut out, &v, m, whole);
                        assert_eq!(String::from_utf8(out).unwrap(), format!("before\n{}", formatted(&v, &m, whole)));
                    }
                }
            }
        }
    }

    #[test]
    fn an_unreadable_records_file_is_a_diagnostic_for_both_stores_and_an_error_for_one() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        // A folder where the JSONL file should be: not a regular file, so it cannot be read.
        std::fs::create_dir_all(repo.layout.copilot_memories()).unwrap();
        let k = Knowledge::read(&repo);
        let both = stores(&k, Sources::memory(None)).unwrap();
        assert!(both.file.is_none() && both.index.is_some());
        assert_eq!(both.diagnostics.len(), 1);
        assert!(both.diagnostics[0].message.contains("not a regular file"), "{:?}", both.diagnostics);
        let md = stores(&k, Sources::only(Store::Md)).unwrap();
        assert!(md.file.is_none() && md.diagnostics.is_empty(), "the markdown store alone never reads it");
        let Err(e) = stores(&k, Sources::only(Store::Copilot)) else {
            panic!("narrowed to the Copilot store it is an error")
        };
        assert!(e.to_string().starts_with("cannot read ") && e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn routes_send_integers_to_the_markdown_store() {
        assert_eq!(Route::of(" 7 ", Sources::memory(None)).unwrap(), Route::Md(7));
        assert_eq!(Route::of("mem-1a2b", Sources::memory(None)).unwrap(), Route::Copilot);
        assert_eq!(
            Route::of("7", Sources::only(Store::Copilot)).unwrap(),
            Route::Copilot,
            "--store copilot reaches a numeric record"
        );
        assert!(Route::of("mem-1a2b", Sources::only(Store::Md)).is_err());
    }
}
