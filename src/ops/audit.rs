//! `kb audit [ID...] [--store S]...` (docs/behaviour.md, Audit), MCP `audit`, and the check at use of
//! `kb recall --verify`, MCP `recall_memory` and `get_memory`.
//!
//! The items: markdown memories, Copilot records, active and proposed decisions, the open
//! session, the project context file and the scoped instruction files. Each item's references are
//! checked by [`crate::audit`]; an item with a failing reference is **stale**, one whose references
//! all hold **ok**, one with none **unverified**. Two memories of the same type and agent (or two
//! records of one subject) that score at least 60 and each hold a salient token the other lacks
//! are a **conflict** when those tokens hold a number on each side or a path on each side
//! ("tests with `cargo test`" and "lints with `cargo clippy`" complement each other). Nothing
//! here writes a knowledge file.

use super::{Report, View, abs, rel};
use crate::audit::refs::{self, Ref};
use crate::audit::{Checker, Kind, Mode, Problem};
use crate::copilot::Records;
use crate::error::{Diagnostic, KbError};
use crate::format::{salient, similarity};
use crate::kinds::ItemId;
use crate::knowledge::Knowledge;
use crate::repo::Repo;
use anyhow::Result;
use serde::Serialize;
use serde_json::Value;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The similarity at and above which two items that differ in a salient token may contradict.
pub const CONFLICT_THRESHOLD: f64 = 60.0;

pub use crate::kinds::Store;

/// What to audit.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Only these memories, records or decisions (`decision:N`); empty: every item.
    pub ids: Vec<String>,
    /// Only these kinds of item; empty: every kind.
    pub stores: Vec<Store>,
}

/// One item to audit: where it is, its text, and what it is compared with for conflicts.
struct Item {
    store: Store,
    id: Value,
    path: PathBuf,
    text: String,
    citations: Vec<String>,
    /// Items of the same group may conflict: a memory's type and agent, a record's subject.
    group: Option<String>,
}

impl Item {
    /// Returns how the text names the item: `memory 3`, `record mem-1a2b`, `decision 2`.
    fn label(&self) -> String {
        let id = match &self.id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match self.store {
            Store::Md => format!("Memory {id}"),
            Store::Copilot => format!("Copilot memory {id}"),
            Store::Decision => format!("Decision {}", id.trim_start_matches("decision:")),
            Store::Session => "Session".to_string(),
            Store::Context => "Context file".to_string(),
            Store::Instructions => "Instructions".to_string(),
        }
    }
}

/// An item's verdict (JSON `verdict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Stale,
    Unverified,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Stale => "stale",
            Verdict::Unverified => "unverified",
        }
    }

    /// Returns the verdict of an item whose `references` checkable references met `problems`.
    fn of(references: usize, problems: &[Problem]) -> Verdict {
        if problems.iter().any(|p| p.kind != Kind::Conflict) {
            Verdict::Stale
        } else if references > 0 {
            Verdict::Ok
        } else {
            Verdict::Unverified
        }
    }
}

/// One audited item in JSON.
#[derive(Debug, Serialize)]
struct ItemJson {
    store: &'static str,
    id: Value,
    path: String,
    verdict: Verdict,
    problems: Vec<Problem>,
    /// The shared source the item comes from (its id then `NAME:ID`).
    #[serde(skip_serializing_if = "Option::is_none")]
    shared: Option<String>,
    #[serde(skip)]
    label: String,
    #[serde(skip)]
    file: PathBuf,
}

#[derive(Debug, Default, Serialize)]
struct Counts {
    ok: usize,
    stale: usize,
    unverified: usize,
    conflicts: usize,
}

/// `kb audit`. JSON: `{"items":[{"store","id","path","verdict","problems":[{"kind","reference",
/// "message","hint"}]}], "counts":{"ok","stale","unverified","conflicts"}}`; text: one block per
/// stale or conflicting item, then the counts. Exit 1 when an item is stale or in conflict.
#[derive(Debug)]
pub struct AuditReport {
    items: Vec<ItemJson>,
    counts: Counts,
    diagnostics: Vec<Diagnostic>,
}

impl Serialize for AuditReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            items: &'a [ItemJson],
            counts: &'a Counts,
        }
        Json { items: &self.items, counts: &self.counts }.serialize(s)
    }
}

impl Report for AuditReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        for item in self.items.iter().filter(|i| !i.problems.is_empty()) {
            let state = if item.verdict == Verdict::Stale { "stale" } else { "possible conflict" };
            let head = format!("{} ({}): {state}", item.label, v.rel(&item.file));
            writeln!(w, "{}", v.style.bold(&v.clean(&head)))?;
            for p in &item.problems {
                let kind = serde_json::to_value(p.kind).ok().and_then(|k| k.as_str().map(String::from));
                writeln!(w, "  {}: {}", kind.unwrap_or_default(), v.clean(&p.message))?;
                if let Some(h) = &p.hint {
                    writeln!(w, "    hint: {}", v.clean(h))?;
                }
            }
            writeln!(w)?;
        }
        let c = &self.counts;
        let conflicts = if c.conflicts == 1 { "conflict" } else { "conflicts" };
        writeln!(w, "{} ok, {} stale, {} unverified, {} {conflicts}", c.ok, c.stale, c.unverified, c.conflicts)
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    fn succeeded(&self) -> bool {
        self.counts.stale == 0 && self.counts.conflicts == 0
    }
}

/// Audits what `req` asks for in `k`, and lists the shared sources' memories, records and
/// decisions as unverified (their references point into another repository): every one in a
/// full audit, the ones named (`org:12`) otherwise.
pub fn audit(k: &Knowledge<'_>, req: &Request) -> Result<AuditReport> {
    let (theirs, own): (Vec<String>, Vec<String>) =
        req.ids.iter().cloned().partition(|raw| super::read::shared_id(k.repo(), raw).is_some());
    let mut report = match own.is_empty() && !theirs.is_empty() {
        true => AuditReport { items: Vec::new(), counts: Counts::default(), diagnostics: Vec::new() },
        false => audit_own(k, &Request { ids: own, stores: req.stores.clone() })?,
    };
    if req.ids.is_empty() || !theirs.is_empty() {
        let (items, diagnostics) = shared_items(k, &theirs, &req.stores)?;
        report.counts.unverified += items.len();
        report.items.extend(items);
        report.diagnostics.extend(diagnostics);
    }
    Ok(report)
}

/// The shared sources' items `ids` names (`org:12`; every one when empty) within `stores`, each
/// unverified: never stale, never in conflict, their references not read.
fn shared_items(k: &Knowledge<'_>, ids: &[String], stores: &[Store]) -> Result<(Vec<ItemJson>, Vec<Diagnostic>)> {
    let kinds: Vec<Store> = Store::SHARED.iter().copied().filter(|s| stores.is_empty() || stores.contains(s)).collect();
    let named: Vec<(&str, &str)> = ids.iter().filter_map(|raw| super::read::shared_id(k.repo(), raw)).collect();
    for (name, _) in &named {
        super::read::shared_view(k, name)?;
    }
    let (mut out, mut diagnostics) = (Vec::new(), Vec::new());
    for view in k.shared() {
        let own: Vec<String> =
            named.iter().filter(|(n, _)| *n == view.name).map(|(_, id)| id.trim().to_string()).collect();
        if kinds.is_empty() || (!named.is_empty() && own.is_empty()) {
            continue;
        }
        let (items, problems) = gather(&view.knowledge, &Request { ids: own, stores: kinds.clone() })?;
        let name = &view.name;
        diagnostics.extend(problems.into_iter().map(|d| super::read::shared_problem(name, d)));
        for item in items.into_iter().filter(Item::chosen) {
            let id = match &item.id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            out.push(ItemJson {
                store: item.store.as_str(),
                label: format!("{} ({name})", item.label()),
                id: Value::from(format!("{name}:{id}")),
                path: abs(&item.path),
                file: item.path,
                verdict: Verdict::Unverified,
                problems: Vec::new(),
                shared: Some(name.clone()),
            });
        }
    }
    Ok((out, diagnostics))
}

/// Audits what `req` asks for in `k` itself.
fn audit_own(k: &Knowledge<'_>, req: &Request) -> Result<AuditReport> {
    let repo = k.repo();
    let (mut items, diagnostics) = gather(k, req)?;
    let checker = Checker::new(&repo.layout.root, Mode::Full, knowledge_files(repo))
        .with_symbol_cache(repo.layout.cache_file("symbols.json"));
    // With ids, the other items are there only to find conflicts: their references are not read.
    let found: Vec<Vec<Ref>> = items
        .iter()
        .map(|i| match i.chosen() {
            true => refs::extract(&i.text, &i.citations.iter().map(String::as_str).collect::<Vec<_>>()),
            false => Vec::new(),
        })
        .collect();
    let checked = checker.check(&found);
    let mut problems: Vec<Vec<Problem>> = checked.iter().map(|c| c.problems.clone()).collect();
    let limited = !req.ids.is_empty();
    let cache_path = repo.layout.cache_file("audit.json");
    let mut cache = if limited { PairCache::default() } else { PairCache::load(cache_path.as_deref()) };
    let conflicts = conflicts(&items, limited.then(|| items.iter().map(|i| i.chosen()).collect()), &mut cache);
    if !limited {
        // The symbols each text cites that occur nowhere: the compiled context leaves such a
        // memory out without a symbol search of its own (`audit::verdicts`).
        cache.symbols = items
            .iter()
            .zip(&checked)
            .filter_map(|(item, c)| {
                let missing: Vec<String> =
                    c.problems.iter().filter(|p| p.kind == Kind::Symbol).map(|p| p.reference.clone()).collect();
                (!missing.is_empty()).then(|| (crate::audit::verdicts::key(&item.text), missing))
            })
            .collect();
        cache.save(repo);
    }
    for (a, b, p, q) in &conflicts {
        problems[*a].push(p.clone());
        problems[*b].push(q.clone());
    }
    let mut counts = Counts {
        conflicts: conflicts.iter().filter(|c| !limited || items[c.0].chosen() || items[c.1].chosen()).count(),
        ..Counts::default()
    };
    let mut out = Vec::new();
    for ((item, c), problems) in items.drain(..).zip(&checked).zip(problems) {
        if limited && !item.chosen() {
            continue;
        }
        let verdict = Verdict::of(c.references, &problems);
        match verdict {
            Verdict::Ok => counts.ok += 1,
            Verdict::Stale => counts.stale += 1,
            Verdict::Unverified => counts.unverified += 1,
        }
        out.push(ItemJson {
            store: item.store.as_str(),
            label: item.label(),
            id: item.id,
            path: abs(&item.path),
            file: item.path,
            verdict,
            problems,
            shared: None,
        });
    }
    if !limited {
        save_stale(repo, &out);
    }
    Ok(AuditReport { items: out, counts, diagnostics })
}

/// The cache file of the stale items the last full audit found, for the `session-start` hook.
const STALE_CACHE: &str = "audit-stale.json";

/// Keeps the stale items of a full audit as lines `memory 12: REASONS` (derived state: a file
/// that cannot be written only leaves the next `session-start` without them).
fn save_stale(repo: &Repo, items: &[ItemJson]) {
    let lines: Vec<String> = items
        .iter()
        .filter(|i| i.verdict == Verdict::Stale)
        .map(|i| {
            let why: Vec<&str> = i.problems.iter().map(|p| p.message.as_str()).collect();
            let mut label = i.label.clone();
            if let Some(first) = label.get(..1) {
                label = first.to_lowercase() + &label[1..];
            }
            format!("{label}: {}", why.join("; "))
        })
        .collect();
    if let Some(path) = repo.layout.cache_file(STALE_CACHE)
        && repo.layout.ensure_cache().is_ok()
        && let Ok(bytes) = serde_json::to_vec(&lines)
    {
        let _ = crate::fsio::write_atomic_with(&path, &bytes, false);
    }
}

/// Returns the stale items of the last full audit (`memory 12: REASONS`), none without one.
pub fn last_stale(repo: &Repo) -> Vec<String> {
    repo.layout
        .cache_file(STALE_CACHE)
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

impl Item {
    /// Whether the request named this item (`kb audit ID...`); items gathered only to find
    /// conflicts with the named ones are not.
    fn chosen(&self) -> bool {
        self.group.as_deref().is_none_or(|g| !g.starts_with('\u{0}'))
    }
}

/// Returns the root-relative paths of kb's own knowledge files (never evidence for a symbol).
fn knowledge_files(repo: &Repo) -> Vec<String> {
    let l = &repo.layout;
    let mut out: Vec<String> = vec![".co-cli/".to_string()];
    let mut add = |p: PathBuf, dir: bool| {
        let r = rel(&l.root, &p).into_owned();
        out.push(if dir { format!("{r}/") } else { r });
    };
    add(l.copilot_memories(), false);
    add(l.instructions(), true);
    for t in &repo.settings.context_targets.value {
        add(l.root.join(&t.path), false);
    }
    // What `kb compile` writes for each agent holds the knowledge too: the block's file and the
    // generated rule files (`kb-*`, a prefix).
    for &agent in &repo.settings.agents.value {
        out.push(crate::context::agents::block_file(agent).0.to_string());
        if let Some((dir, _)) = crate::context::agents::rule_dir(agent) {
            out.push(format!("{dir}/kb-*"));
        }
    }
    out
}

/// Reads the items `req` asks for. With ids, the other items of the same stores are read too,
/// marked as not chosen, so a named item's conflicts are found.
fn gather(k: &Knowledge<'_>, req: &Request) -> Result<(Vec<Item>, Vec<Diagnostic>)> {
    let l = &k.repo().layout;
    let wants = |s: Store| req.stores.is_empty() || req.stores.contains(&s);
    let mut diagnostics = Vec::new();
    let mut items = Vec::new();
    // The ids asked for, by store; each must be found.
    let mut md_ids: Vec<u64> = Vec::new();
    let mut record_ids: Vec<String> = Vec::new();
    let mut decision_ids: Vec<u64> = Vec::new();
    for raw in &req.ids {
        match ItemId::parse(raw)? {
            ItemId::Memory(n) => md_ids.push(n),
            ItemId::Decision(n) => decision_ids.push(n),
            ItemId::Record(id) => record_ids.push(id.to_string()),
        }
    }
    let limited = !req.ids.is_empty();
    // Not chosen: gathered to compare with a chosen one (a NUL-prefixed group marks it).
    let unchosen = |g: String| format!("\u{0}{g}");
    if wants(Store::Md) && (!limited || !md_ids.is_empty()) {
        let index = k.memories()?;
        diagnostics.extend(index.problems());
        for id in &md_ids {
            if index.by_id(*id).is_empty() {
                return Err(KbError::not_found("memory", id).into());
            }
        }
        let mut memories: Vec<_> = index.memories().collect();
        memories.sort_by_key(|m| (m.id, m.file_name));
        for m in memories {
            let group = format!("{}\u{1}{}", m.effective_type().as_str(), m.agent.unwrap_or(""));
            let chosen = !limited || md_ids.contains(&m.id);
            items.push(Item {
                store: Store::Md,
                id: Value::from(m.id),
                path: index.dir.join(m.file_name),
                text: m.content.to_string(),
                citations: Vec::new(),
                group: Some(if chosen { group } else { unchosen(group) }),
            });
        }
    }
    if wants(Store::Copilot) && (!limited || !record_ids.is_empty()) {
        let path = l.copilot_memories();
        match k.records() {
            Ok(file) => {
                let all = Records::parse(file);
                diagnostics.extend(super::read::skipped_lines(&all));
                for id in &record_ids {
                    all.one(id)?;
                }
                for r in all.iter() {
                    let chosen = !limited || record_ids.iter().any(|i| i == r.id);
                    let f = all.fields(&r);
                    let group = r.subject.trim().to_lowercase();
                    items.push(Item {
                        store: Store::Copilot,
                        id: Value::from(r.id),
                        path: path.clone(),
                        text: r.fact.to_string(),
                        citations: f.citations.iter().map(|c| c.to_string()).collect(),
                        group: Some(if chosen { group } else { unchosen(group) }),
                    });
                }
            }
            Err(e) if !limited => diagnostics.push(Diagnostic::error(None, e.to_string()).in_file(&path)),
            Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
        }
    } else if !record_ids.is_empty() {
        return Err(KbError::not_found("memory", &record_ids[0]).into());
    }
    if wants(Store::Decision) && (!limited || !decision_ids.is_empty()) {
        let scan = k.decisions()?;
        diagnostics.extend(scan.problems.iter().cloned());
        for id in &decision_ids {
            scan.by_id(*id)?;
        }
        for (path, d) in scan.decisions.iter().filter(|(_, d)| d.status.is_open()) {
            if limited && !decision_ids.contains(&d.id) {
                continue;
            }
            items.push(Item {
                store: Store::Decision,
                id: Value::from(format!("decision:{}", d.id)),
                path: path.clone(),
                text: d.content.clone(),
                citations: Vec::new(),
                group: None,
            });
        }
    }
    if limited {
        return Ok((items, diagnostics));
    }
    if wants(Store::Session) {
        let (open, problems) = k.session();
        diagnostics.extend(problems.iter().cloned());
        if let Some(s) = open {
            items.push(Item {
                store: Store::Session,
                id: Value::from("session"),
                text: format!("{}\n{}", s.session.focus, s.session.summary),
                path: s.path.clone(),
                citations: Vec::new(),
                group: None,
            });
        }
    }
    if wants(Store::Context) {
        let path = l.project_context();
        match crate::fsio::read_input(&path, &l.root) {
            Ok(Some(bytes)) => match crate::format::text::decode(&bytes) {
                Ok(text) => items.push(Item {
                    store: Store::Context,
                    id: Value::from(rel(&l.root, &path).into_owned()),
                    text: text.to_string(),
                    path,
                    citations: Vec::new(),
                    group: None,
                }),
                Err(d) => diagnostics.push(d.in_file(&path)),
            },
            Ok(None) => {}
            Err(e) => diagnostics.push(Diagnostic::warning(None, format!("cannot read: {e}")).in_file(&path)),
        }
    }
    if wants(Store::Instructions) {
        let found = k.instructions();
        diagnostics.extend(found.problems.iter().cloned());
        for f in &found.files {
            items.push(Item {
                store: Store::Instructions,
                id: Value::from(rel(&l.root, &f.path).into_owned()),
                text: f.body.clone(),
                path: f.path.clone(),
                citations: Vec::new(),
                group: None,
            });
        }
    }
    Ok((items, diagnostics))
}

/// The cache of `kb audit`'s scoring (`.co-cli/cache/audit.json`, derived state): per group of
/// comparable items, the hashes of the texts the last audit compared with each other, and the
/// pairs of them that scored at least [`CONFLICT_THRESHOLD`] and whose salient differences may
/// contradict (a pair that cannot contradict is never reported, so it is not kept). A text in the
/// set was compared with every other text of the set, so an audit scores only the new texts,
/// against all; deleting the file only costs time. A cache never changes a result: a cached pair
/// is scored again before it is reported (the file holds no score), and a file whose `check` is
/// not the hash of what it holds (edited by hand, or cut short) is not used at all.
#[derive(Debug, Default, Serialize, serde::Deserialize)]
struct PairCache {
    version: u32,
    /// [`PairCache::digest`] of `groups`.
    #[serde(default)]
    check: u64,
    groups: std::collections::BTreeMap<String, CachedGroup>,
    /// The symbol verdicts of the last full audit (`audit::verdicts`).
    #[serde(default)]
    symbols: crate::audit::verdicts::Verdicts,
    /// [`crate::audit::verdicts::digest`] of `symbols`: a hand-edited verdict is not trusted.
    #[serde(default)]
    symbols_check: u64,
}

#[derive(Debug, Default, Serialize, serde::Deserialize)]
struct CachedGroup {
    texts: Vec<u64>,
    pairs: Vec<(u64, u64)>,
}

/// Bump when the scorer, the threshold, what is compared or the file's shape changes. Version 2
/// kept each pair's score, and serde_json (without `float_roundtrip`) reads some scores back one
/// bit off, so a file of many pairs failed its own check and a warm audit scored every pair again.
const PAIR_CACHE_VERSION: u32 = 3;

impl PairCache {
    fn load(path: Option<&Path>) -> PairCache {
        let Some(path) = path else { return PairCache::default() };
        let cache: Option<PairCache> = std::fs::symlink_metadata(path)
            .ok()
            .filter(|m| m.is_file() && m.len() < 256 * 1024 * 1024)
            .and_then(|_| std::fs::read(path).ok())
            .and_then(|b| serde_json::from_slice(&b).ok());
        cache.filter(|c| c.version == PAIR_CACHE_VERSION && c.check == c.digest()).unwrap_or_default()
    }

    /// Returns the hash of the groups (their JSON; a `BTreeMap` serialises in one order).
    fn digest(&self) -> u64 {
        let bytes = serde_json::to_vec(&self.groups).unwrap_or_default();
        xxhash_rust::xxh3::xxh3_64_with_seed(&bytes, u64::from(PAIR_CACHE_VERSION))
    }

    fn save(&mut self, repo: &Repo) {
        self.check = self.digest();
        self.symbols_check = crate::audit::verdicts::digest(&self.symbols);
        // Derived state: a cache that cannot be written only costs time next run.
        if repo.layout.cache_file("audit.json").is_some()
            && let Ok(dir) = repo.layout.ensure_cache()
            && let Ok(bytes) = serde_json::to_vec(self)
        {
            let _ = crate::fsio::write_atomic_with(&dir.join("audit.json"), &bytes, false);
        }
    }
}

/// Returns the hash a text is cached by.
fn text_hash(text: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(text.as_bytes())
}

/// Returns the possible contradictions among `items`: pairs in one group scoring at least
/// [`CONFLICT_THRESHOLD`] where each holds a salient token the other lacks, with the problem each
/// side gets. Only items with a salient token can conflict, so only they are scored. With
/// `chosen`, only pairs with a chosen item are scored; without, the scores of texts compared
/// before come from `cache`, which is updated.
///
/// Most pairs are ruled out before they are scored, each test exact (it never drops a pair that
/// would be reported, `tests::conflicts_are_those_of_every_pair`): two items whose tokens do not
/// hold a number on each side or a path on each side cannot contradict (the tokens one lacks are
/// some of its own); then [`similarity::Screen`] bounds the score from above (lengths, then the
/// LCS of the texts' character classes); then the tokens each lacks must contradict; only then is
/// the pair scored (the dedup scorer, `similarity::Prepared`). rapidfuzz 0.5's cached
/// one-against-many comparator would be faster but scores some pairs wrongly ("api on qdemys
/// service tests" against "api listens listens on on service tests the": 51.2 instead of 62.9).
fn conflicts(
    items: &[Item],
    chosen: Option<Vec<bool>>,
    cache: &mut PairCache,
) -> Vec<(usize, usize, Problem, Problem)> {
    let mut groups: std::collections::BTreeMap<&str, Vec<(usize, salient::Facts<'_>)>> = Default::default();
    for (i, item) in items.iter().enumerate() {
        if let Some(g) = &item.group {
            let facts = salient::Facts::new(&item.text);
            if facts.tokens().next().is_some() {
                groups.entry(g.trim_start_matches('\u{0}')).or_default().push((i, facts));
            }
        }
    }
    let mut fresh = PairCache { version: PAIR_CACHE_VERSION, ..PairCache::default() };
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).clamp(1, 8);
    let mut out = Vec::new();
    for (key, group) in &groups {
        let (members, facts): (Vec<usize>, Vec<&salient::Facts<'_>>) = group.iter().map(|(i, f)| (*i, f)).unzip();
        let prepared: Vec<similarity::Prepared> =
            members.iter().map(|&i| similarity::Prepared::new(&items[i].text)).collect();
        let hashes: Vec<u64> = members.iter().map(|&i| text_hash(&items[i].text)).collect();
        // Whether each member's tokens hold a number, and a path.
        let kinds: Vec<(bool, bool)> = facts.iter().map(|f| kinds(f.tokens())).collect();
        // (member, member, score, whether the pair comes from the cache)
        type Pairs = Vec<(usize, usize, f64, bool)>;
        let (old, mut pairs): (std::collections::HashSet<u64>, Pairs) = match &chosen {
            Some(_) => (Default::default(), Vec::new()),
            None => {
                let cached = cache.groups.remove(*key).unwrap_or_default();
                let old: std::collections::HashSet<u64> = cached.texts.into_iter().collect();
                let mut at: std::collections::HashMap<u64, Vec<usize>> = Default::default();
                for (k, h) in hashes.iter().enumerate() {
                    at.entry(*h).or_default().push(k);
                }
                let mut pairs = Vec::new();
                for (ha, hb) in cached.pairs {
                    if let (Some(xs), Some(ys)) = (at.get(&ha), at.get(&hb)) {
                        for &x in xs {
                            for &y in ys.iter().filter(|&&y| y != x) {
                                // Scored again below.
                                pairs.push((x.min(y), x.max(y), f64::NAN, true));
                            }
                        }
                    }
                }
                (old, pairs)
            }
        };
        // A member is scored against every other unless both were compared before (or, with
        // ids, unless neither is chosen); each pair once.
        let scored = |k: usize| match &chosen {
            Some(c) => c[members[k]],
            None => !old.contains(&hashes[k]),
        };
        let seeds: Vec<usize> = (0..members.len()).filter(|&k| scored(k)).collect();
        // The screen reads every member once: worth it when many are scored (a full first run),
        // not for a few named ones.
        let screen = (seeds.len() > 16).then(|| similarity::Screen::new(&prepared, CONFLICT_THRESHOLD));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let found = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..threads.min(seeds.len().max(1)) {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&k) = seeds.get(n) else { break };
                        let probe = screen.as_ref().map(|s| s.probe(k));
                        let ((na, pa), a) = (kinds[k], &prepared[k]);
                        for j in (0..members.len()).filter(|&j| j != k && (!scored(j) || j > k)) {
                            let (nb, pb) = kinds[j];
                            if !(na && nb || pa && pb) {
                                continue;
                            }
                            // The same tests in either order: with the screen, the cheap ones
                            // first; without (a few named items), the score first, so that only
                            // the texts that score high enough are read for their tokens.
                            if let Some(p) = &probe
                                && (!p.may_reach(j) || !may_contradict(facts[k], facts[j]))
                            {
                                continue;
                            }
                            let score = a.similarity(&prepared[j]);
                            if score >= CONFLICT_THRESHOLD && (probe.is_some() || may_contradict(facts[k], facts[j])) {
                                mine.push((k.min(j), k.max(j), score, false));
                            }
                        }
                    }
                    if let Ok(mut all) = found.lock() {
                        all.extend(mine);
                    }
                });
            }
        });
        pairs.extend(found.into_inner().unwrap_or_default());
        // A pair scored now wins over the same pair from the cache.
        pairs.sort_by_key(|a| (a.0, a.1, a.3));
        pairs.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
        if chosen.is_none() {
            let mut texts: Vec<u64> = hashes.clone();
            texts.sort_unstable();
            texts.dedup();
            let kept = pairs.iter().map(|&(a, b, _, _)| (hashes[a], hashes[b])).collect();
            fresh.groups.insert(key.to_string(), CachedGroup { texts, pairs: kept });
        }
        for (ka, kb, score, cached) in pairs {
            let (a, b) = (members[ka], members[kb]);
            let (only_a, only_b) = facts[ka].differences(facts[kb]);
            if !contradicts(&only_a, &only_b) {
                continue;
            }
            // A pair the cache names is scored before it is reported: the file says which pairs
            // to look at, never what they score.
            let score = if cached { prepared[ka].similarity(&prepared[kb]) } else { score };
            if score < CONFLICT_THRESHOLD {
                continue;
            }
            let pa = conflict_problem(&items[b], &only_a, &only_b, score);
            let pb = conflict_problem(&items[a], &only_b, &only_a, score);
            out.push((a, b, pa, pb));
        }
    }
    if chosen.is_none() {
        *cache = fresh;
    }
    out.sort_by_key(|c| (c.0, c.1));
    out
}

/// Returns whether two similar texts whose salient tokens differ by `only_a` and `only_b` may
/// contradict each other: a number (a token holding a digit: `8080`, `v2`, `3.12.1`) on each side,
/// or a path (a token holding a `/` or ending in a common file extension) on each side. Other
/// differences ("tests with `cargo test`", "lints with `cargo clippy`") complement each other.
fn contradicts(only_a: &[String], only_b: &[String]) -> bool {
    let ((na, pa), (nb, pb)) = (kinds(only_a.iter().map(String::as_str)), kinds(only_b.iter().map(String::as_str)));
    na && nb || pa && pb
}

/// Returns [`contradicts`] of the tokens each of two texts lacks, without listing them.
fn may_contradict(a: &salient::Facts<'_>, b: &salient::Facts<'_>) -> bool {
    let ((na, pa), (nb, pb)) = (kinds(a.missing_from(b)), kinds(b.missing_from(a)));
    na && nb || pa && pb
}

/// Returns whether `tokens` hold a number, and whether they hold a path (see [`contradicts`]).
fn kinds<'a>(tokens: impl IntoIterator<Item = &'a str>) -> (bool, bool) {
    tokens.into_iter().fold((false, false), |(number, path), t| {
        (number || t.chars().any(|c| c.is_ascii_digit()), path || t.contains('/') || refs::known_extension(t))
    })
}

/// Returns the conflict problem an item gets for `other`: `mine` are its own tokens the other
/// lacks, `theirs` the other's.
fn conflict_problem(other: &Item, mine: &[String], theirs: &[String], score: f64) -> Problem {
    let id = match &other.id {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    let (name, forget) = match other.store {
        Store::Copilot => (format!("record {id}"), format!("kb forget --store copilot {id}")),
        _ => (format!("memory {id}"), format!("kb forget {id}")),
    };
    let quote = |t: &[String]| t.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ");
    Problem {
        kind: Kind::Conflict,
        reference: id,
        message: format!(
            "may contradict {name} (similarity {score:.1}): {} here, {} there",
            quote(mine),
            quote(theirs)
        ),
        hint: Some(format!("if one is no longer true: {forget}")),
    }
}

/// What a check at use found for one item: its verdict and the failing references.
#[derive(Debug, Clone, Serialize)]
pub struct Verified {
    pub verified: Verdict,
    pub problems: Vec<Problem>,
}

/// Checks the path and command references of texts at use (a few `stat`s and one parse of the
/// manifests; no file list, no symbol scan): each text with its citations.
pub fn verify(root: &Path, texts: &[(&str, Vec<&str>)]) -> Vec<Verified> {
    let checker = Checker::new(root, Mode::AtUse, Vec::new());
    let found: Vec<Vec<Ref>> = texts.iter().map(|(t, c)| refs::extract(t, c)).collect();
    checker
        .check(&found)
        .into_iter()
        .map(|c| Verified { verified: Verdict::of(c.references, &c.problems), problems: c.problems })
        .collect()
}

/// Adds `"verified"` and `"problems"` to each item of a recall's or a show's JSON (`results`, or
/// the document itself) and returns a line per item for the text (`memory 3: stale: ...`).
pub fn verify_json(root: &Path, json: &mut Value) -> Vec<String> {
    let text_of = |item: &Value| -> (String, Vec<String>) {
        // A shared source's item points into another repository: nothing here can check it, so
        // it is unverified, never stale (docs/shared.md).
        if item.get("shared").is_some() {
            return (String::new(), Vec::new());
        }
        let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let text = match item.get("store").and_then(Value::as_str) {
            Some("session") => format!("{}\n{}", s("focus"), s("summary")),
            _ => s("content"),
        };
        let citations = item
            .get("citations")
            .and_then(Value::as_array)
            .map(|c| c.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        (text, citations)
    };
    let label = |item: &Value| -> String {
        let id = match item.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        };
        match item.get("store").and_then(Value::as_str) {
            Some("copilot") => format!("Copilot memory {id}"),
            Some("decision") => format!("Decision {id}"),
            Some("session") => format!("Session {id}"),
            // `kb decision show` has no store key.
            None if item.get("status").is_some() => format!("Decision {id}"),
            _ => format!("Memory {id}"),
        }
    };
    let mut slots: Vec<&mut Value> = match json.get_mut("results") {
        Some(Value::Array(results)) => results.iter_mut().collect(),
        _ => vec![json],
    };
    let texts: Vec<(String, Vec<String>)> = slots.iter().map(|v| text_of(v)).collect();
    let borrowed: Vec<(&str, Vec<&str>)> =
        texts.iter().map(|(t, c)| (t.as_str(), c.iter().map(String::as_str).collect())).collect();
    let verified = verify(root, &borrowed);
    let mut lines = Vec::new();
    for (slot, v) in slots.iter_mut().zip(verified) {
        let mut line = format!("{}: {}", label(slot), v.verified.as_str());
        for p in &v.problems {
            line.push_str(&format!("; {}", p.message));
        }
        lines.push(line);
        if let Value::Object(map) = slot {
            map.insert("verified".into(), Value::from(v.verified.as_str()));
            map.insert("problems".into(), serde_json::to_value(&v.problems).unwrap_or(Value::Null));
        }
    }
    lines
}

/// A report with its items checked at use (`kb recall --verify`): the report's JSON with
/// `"verified"` and `"problems"` on each result, and its text followed by a `Verified:` block.
pub struct VerifiedReport<'r, R: Report> {
    inner: &'r R,
    json: Value,
    lines: Vec<String>,
}

/// Checks the items of `report` at use.
pub fn verified<'r, R: Report>(root: &Path, report: &'r R) -> Result<VerifiedReport<'r, R>> {
    let mut json = serde_json::to_value(report)?;
    let lines = verify_json(root, &mut json);
    Ok(VerifiedReport { inner: report, json, lines })
}

impl<R: Report> Serialize for VerifiedReport<'_, R> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.json.serialize(s)
    }
}

impl<R: Report> Report for VerifiedReport<'_, R> {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        if self.lines.is_empty() || self.json.get("count").and_then(Value::as_u64) == Some(0) {
            return self.inner.render(v, w);
        }
        self.inner.render_verified(v, w, &self.lines)
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        self.inner.diagnostics()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: u64, text: &str) -> Item {
        Item {
            store: Store::Md,
            id: Value::from(id),
            path: PathBuf::from(format!("{id}.md")),
            text: text.to_string(),
            citations: Vec::new(),
            group: Some("g".to_string()),
        }
    }

    #[test]
    fn a_cached_score_is_never_believed() {
        let items = [item(1, "Port 8080 serves the public api"), item(2, "Node 20 builds the frontend bundle")];
        let (a, b) = (text_hash(&items[0].text), text_hash(&items[1].text));
        // A cache whose check matches (written by a forger who knows the format) still names a pair
        // of unrelated texts: it is scored, and is no conflict.
        let mut cache = PairCache { version: PAIR_CACHE_VERSION, ..PairCache::default() };
        cache.groups.insert("g".into(), CachedGroup { texts: vec![a, b], pairs: vec![(a, b)] });
        cache.check = cache.digest();
        assert!(conflicts(&items, None, &mut cache).is_empty());
        // Two that do differ in a number still conflict, from the cache or not.
        let close = [item(1, "The api service listens on port 8080"), item(2, "The api service listens on port 8081")];
        assert_eq!(conflicts(&close, None, &mut cache).len(), 1);
        assert_eq!(conflicts(&close, None, &mut cache).len(), 1, "warm: the pair comes from the cache");
    }

    /// The conflicts of `items` by scoring every pair of one group that both hold a salient token
    /// (the scan as it was, with no screen): pairs with a chosen item only, with `chosen`.
    fn every_pair(items: &[Item], chosen: Option<&[bool]>) -> Vec<(usize, usize, Problem, Problem)> {
        let mut out = Vec::new();
        for a in 0..items.len() {
            for b in a + 1..items.len() {
                let group = |i: &Item| i.group.as_deref().map(|g| g.trim_start_matches('\u{0}').to_string());
                let (ga, gb) = (group(&items[a]), group(&items[b]));
                if ga.is_none() || ga != gb || chosen.is_some_and(|c| !c[a] && !c[b]) {
                    continue;
                }
                if salient::tokens(&items[a].text).is_empty() || salient::tokens(&items[b].text).is_empty() {
                    continue;
                }
                let score =
                    similarity::Prepared::new(&items[a].text).similarity(&similarity::Prepared::new(&items[b].text));
                let (only_a, only_b) = salient::differences(&items[a].text, &items[b].text);
                if score >= CONFLICT_THRESHOLD && contradicts(&only_a, &only_b) {
                    let pa = conflict_problem(&items[b], &only_a, &only_b, score);
                    let pb = conflict_problem(&items[a], &only_b, &only_a, score);
                    out.push((a, b, pa, pb));
                }
            }
        }
        out
    }

    /// Items of three groups: sentences from a small vocabulary with numbers, versions, paths,
    /// backticked commands and identifiers, many of them near copies of another that change a
    /// token or a word (so that there are conflicts, restatements and complements).
    fn generated(seed: u64, n: usize) -> Vec<Item> {
        let mut rng = seed;
        let mut below = |n: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n as u64) as usize
        };
        let words =
            ["the", "api", "service", "listens", "on", "port", "web", "deploys", "run", "tests", "before", "merge"];
        let salient = [
            "8080",
            "8081",
            "v2",
            "3.12.1",
            "src/api.rs",
            "./build.sh",
            "config.toml",
            "`cargo test`",
            "ApiError",
            "max_tokens",
        ];
        let mut texts: Vec<String> = Vec::new();
        for _ in 0..n {
            let text = if !texts.is_empty() && below(2) == 0 {
                let mut t: Vec<String> = texts[below(texts.len())].split(' ').map(str::to_string).collect();
                let at = below(t.len());
                match below(4) {
                    0 => t[at] = format!("{}", 1000 + below(20)),
                    1 => t[at] = format!("src/mod_{}.rs", below(5)),
                    2 => t.insert(at, words[below(words.len())].to_string()),
                    _ => t[at] = salient[below(salient.len())].to_string(),
                }
                t.join(" ")
            } else {
                let len = 3 + below(14);
                (0..len)
                    .map(|_| if below(4) == 0 { salient[below(salient.len())] } else { words[below(words.len())] })
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            texts.push(text);
        }
        texts
            .into_iter()
            .enumerate()
            .map(|(i, text)| Item {
                store: Store::Md,
                id: Value::from(i as u64),
                path: PathBuf::from(format!("{i}.md")),
                text,
                citations: Vec::new(),
                group: match i % 7 {
                    0 => None,
                    1 | 2 => Some("learning\u{1}reviewer".into()),
                    _ => Some("pattern\u{1}".into()),
                },
            })
            .collect()
    }

    fn debug(found: &[(usize, usize, Problem, Problem)]) -> Vec<String> {
        found.iter().map(|c| format!("{c:?}")).collect()
    }

    #[test]
    fn conflicts_are_those_of_every_pair() {
        let items = generated(0x2545_f491_4f6c_dd1d, 240);
        let want = debug(&every_pair(&items, None));
        assert!(want.len() > 20, "the generated items conflict: {}", want.len());
        let mut cache = PairCache::default();
        assert_eq!(debug(&conflicts(&items, None, &mut cache)), want, "first run");
        assert_eq!(debug(&conflicts(&items, None, &mut cache)), want, "warm: every pair from the cache");
        // Some texts change and some are new: the cache's old pairs and the new ones together.
        let mut changed = generated(0x2545_f491_4f6c_dd1d, 260);
        for (k, item) in changed.iter_mut().enumerate().filter(|(k, _)| k % 9 == 4) {
            item.text = format!("{} {}", item.text, 7000 + k);
        }
        let want = debug(&every_pair(&changed, None));
        assert_eq!(debug(&conflicts(&changed, None, &mut cache)), want, "a partly cached run");
        // With ids: only pairs with a chosen item.
        let chosen: Vec<bool> = (0..changed.len()).map(|k| k % 5 == 1).collect();
        let want = debug(&every_pair(&changed, Some(&chosen)));
        assert!(!want.is_empty());
        assert_eq!(debug(&conflicts(&changed, Some(chosen), &mut PairCache::default())), want, "with ids");
        // A few ids: scored without the screen.
        let chosen: Vec<bool> = (0..changed.len()).map(|k| [3, 10, 11].contains(&k)).collect();
        let want = debug(&every_pair(&changed, Some(&chosen)));
        assert!(!want.is_empty());
        assert_eq!(debug(&conflicts(&changed, Some(chosen), &mut PairCache::default())), want, "a few ids");
    }

    #[test]
    fn a_cache_that_keeps_pairs_which_cannot_contradict_reads_the_same() {
        // As an audit before the screen wrote it: every pair over 60, complements too.
        let items = [
            item(1, "Run the tests with `cargo test` before a merge"),
            item(2, "Run the lints with `cargo clippy` before a merge"),
            item(3, "The api service listens on port 8080"),
            item(4, "The api service listens on port 8081"),
        ];
        let hash = |i: usize| text_hash(&items[i].text);
        let mut cache = PairCache { version: PAIR_CACHE_VERSION, ..PairCache::default() };
        let texts = (0..4).map(hash).collect();
        let pairs = vec![(hash(0), hash(1)), (hash(2), hash(3))];
        cache.groups.insert("g".into(), CachedGroup { texts, pairs });
        let found = conflicts(&items, None, &mut cache);
        assert_eq!(debug(&found), debug(&every_pair(&items, None)));
        assert_eq!(found.len(), 1);
        assert_eq!(cache.groups["g"].pairs.len(), 2, "the pairs read are kept: {:?}", cache.groups["g"].pairs);
        assert_eq!(debug(&conflicts(&items, None, &mut PairCache::default())), debug(&found));
    }

    #[test]
    fn a_cache_of_many_pairs_reads_back_as_written() {
        let items = generated(0x51ed_270b_27a4_4c31, 300);
        let mut cache = PairCache::default();
        let found = conflicts(&items, None, &mut cache);
        let pairs: usize = cache.groups.values().map(|g| g.pairs.len()).sum();
        assert!(pairs > 20 && pairs >= found.len(), "{pairs}");
        cache.check = cache.digest();
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("audit.json");
        std::fs::write(&path, serde_json::to_vec(&cache).expect("JSON")).expect("written");
        let back = PairCache::load(Some(&path));
        assert_eq!(back.check, cache.check, "the file passes its own check");
        assert_eq!(back.groups.values().map(|g| g.pairs.len()).sum::<usize>(), pairs);
        let mut back = back;
        assert_eq!(debug(&conflicts(&items, None, &mut back)), debug(&found), "warm from the file");
    }

    #[test]
    fn only_a_number_or_a_path_on_each_side_contradicts() {
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(contradicts(&t(&["8080"]), &t(&["8081"])));
        assert!(contradicts(&t(&["v2"]), &t(&["3.12.1"])));
        assert!(contradicts(&t(&["src/a"]), &t(&["config.toml"])));
        assert!(!contradicts(&t(&["cargo test"]), &t(&["cargo clippy"])));
        assert!(!contradicts(&t(&["8080"]), &t(&["ApiError"])), "a number on one side only");
        assert!(!contradicts(&t(&["src/a"]), &t(&["8081"])), "a path against a number");
        assert!(!contradicts(&t(&[]), &t(&["8081"])));
        assert!(!contradicts(&t(&["self.config"]), &t(&["user.email"])), "no file extension");
    }

    #[test]
    fn verdicts_follow_references_and_problems() {
        let p = |kind| Problem { kind, reference: String::new(), message: String::new(), hint: None };
        assert_eq!(Verdict::of(0, &[]), Verdict::Unverified);
        assert_eq!(Verdict::of(2, &[]), Verdict::Ok);
        assert_eq!(Verdict::of(1, &[p(Kind::Path)]), Verdict::Stale);
        assert_eq!(Verdict::of(1, &[p(Kind::Conflict)]), Verdict::Ok, "a conflict is not staleness");
    }
}
