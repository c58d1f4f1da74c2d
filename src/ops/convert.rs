//! `kb export --to copilot` and `kb import --from copilot`: convert between the markdown store and
//! the Copilot record store (docs/behaviour.md, Export and import).
//!
//! Mapping: subject ↔ the memory's first tag that is not a signal tag (nor kb's own `_` tags),
//! else its category, else `general`; fact ↔ content; citations and reason ↔ the extra frontmatter
//! keys `citations` (a list) and `reason`; a record's `category` ↔ the signal tag; the memory's
//! tags travel in the record's extra `tags` key so they come back on import.
//!
//! Dedup: an item matches the most similar item of the same subject in the other store (the
//! markdown store's scorer and threshold). A match is skipped when nothing would change; else it
//! is merged: citations unioned, and the text replaced only when the incoming item changed more
//! recently than the match and no earlier item of this run matched it. Items added or merged get
//! the current time, so a second run finds nothing newer and adds nothing. Both stores are
//! written under the one repository lock.

use super::read::{COPILOT, read_records, skipped_lines};
use super::{Report, View, abs};
use crate::copilot::jsonl::{self, JsonlFile};
use crate::copilot::{self, Draft, Records};
use crate::error::{Diagnostic, KbError};
use crate::format::frontmatter;
use crate::format::salient;
use crate::format::similarity::{lower_strip, similarity};
use crate::format::time;
use crate::format::time::Micros;
use crate::journal::Txn;
use crate::memories::file::{SIGNAL_TAGS, detect_category};
use crate::memories::store::MemoryStore;
use crate::provenance::{CREATED_BY, UPDATED_BY};
use crate::repo::Repo;
use crate::secrets;
use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

type Result<T> = std::result::Result<T, KbError>;

/// What happened to one source item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Added,
    Merged,
    Skipped,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Added => "added",
            Action::Merged => "merged",
            Action::Skipped => "skipped",
        }
    }
}

/// One source item's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The source id: a memory's integer as text, or a record's id.
    pub source_id: String,
    /// The id in the other store it was added as or matched; `None` when refused.
    pub target_id: Option<String>,
    pub subject: String,
    pub action: Action,
    pub similarity: Option<f64>,
    /// Why it was skipped or what a merge changed.
    pub note: String,
}

/// The outcome of a conversion.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversion {
    pub dry_run: bool,
    /// The file (export) or folder (import) written to.
    pub target: PathBuf,
    pub items: Vec<Item>,
    /// Things the user should know that are not errors.
    pub warnings: Vec<String>,
}

impl Conversion {
    /// Returns how many items took `action`.
    pub fn count(&self, action: Action) -> usize {
        self.items.iter().filter(|i| i.action == action).count()
    }
}

/// Returns the subject of a memory with these tags: its first tag that is neither a signal tag
/// nor one of kb's `_` tags, else its category, else `general`.
pub fn memory_subject<S: AsRef<str>>(tags: &[S]) -> String {
    tags.iter()
        .map(AsRef::as_ref)
        .find(|t| !SIGNAL_TAGS.contains(t) && !t.starts_with('_') && !t.trim().is_empty())
        .map(str::to_string)
        .or_else(|| detect_category(tags).map(str::to_string))
        .unwrap_or_else(|| "general".to_string())
}

/// An item as the conversion sees it, in either store.
#[derive(Debug, Clone)]
struct Entry {
    id: String,
    subject: String,
    text: String,
    citations: Vec<String>,
    reason: Option<String>,
    category: Option<String>,
    tags: Vec<String>,
    changed_at: Option<Micros>,
    /// Ordering in time for ties: (created, position).
    age: (Micros, usize),
    /// A protected or core-context memory: its text is never replaced.
    kept: bool,
}

/// A target item and what this run did to it.
#[derive(Debug)]
struct Target {
    entry: Entry,
    /// The record's line index (export) or the memory's path (import); `None` when this run adds it.
    origin: Option<Origin>,
    /// The source id of the item this run added it for.
    added_for: Option<String>,
    /// Some source item of this run matched it: its text no longer changes in this run.
    matched: bool,
    text_changed: bool,
    citations_changed: bool,
}

#[derive(Debug, Clone)]
enum Origin {
    /// Position in the parsed records.
    Record(usize),
    File(PathBuf),
}

/// The target store's items, indexed by normalised subject.
struct Converter {
    targets: Vec<Target>,
    by_subject: HashMap<String, Vec<usize>>,
    threshold: f64,
}

impl Converter {
    fn new(existing: Vec<(Entry, Origin)>, threshold: f64) -> Converter {
        let mut c = Converter { targets: Vec::new(), by_subject: HashMap::new(), threshold };
        for (entry, origin) in existing {
            c.push(Target {
                entry,
                origin: Some(origin),
                added_for: None,
                matched: false,
                text_changed: false,
                citations_changed: false,
            });
        }
        c
    }

    fn push(&mut self, t: Target) {
        self.by_subject.entry(lower_strip(&t.entry.subject)).or_default().push(self.targets.len());
        self.targets.push(t);
    }

    /// Returns the indexes of the targets whose subject normalises to `subject`.
    fn candidates(&self, subject: &str) -> Vec<usize> {
        self.by_subject.get(subject).cloned().unwrap_or_default()
    }

    /// Matches `src` against the targets and updates them. Returns the item's outcome.
    fn convert(&mut self, src: &Entry, new_id: impl FnOnce() -> String) -> Item {
        let mut item = Item {
            source_id: src.id.clone(),
            target_id: None,
            subject: src.subject.clone(),
            action: Action::Skipped,
            similarity: None,
            note: String::new(),
        };
        if src.text.trim().is_empty() {
            item.note = "its text is empty".into();
            return item;
        }
        for (field, text) in [("subject", &src.subject), ("text", &src.text)]
            .into_iter()
            .chain(src.reason.iter().map(|r| ("reason", r)))
            .chain(src.citations.iter().map(|c| ("citation", c)))
        {
            if let Some(f) = secrets::scan(text).first() {
                item.note = format!("its {field} matches the {} secret rule", f.rule);
                return item;
            }
        }
        let mut order = self.candidates(&lower_strip(&src.subject));
        order.sort_by_key(|&i| std::cmp::Reverse(self.targets[i].entry.age));
        let mut best: Option<(usize, f64)> = None;
        for i in order {
            let score = similarity(&src.text, &self.targets[i].entry.text);
            if best.is_none_or(|(_, b)| score > b) {
                best = Some((i, score));
            }
        }
        // A different fact is never merged: every salient token of the match must occur in the
        // incoming text (docs/behaviour.md, Dedup).
        // A protected or core-context memory is never rewritten: only the same words match it.
        let restates = |i: usize| {
            let target = &self.targets[i].entry;
            salient::differences(&target.text, &src.text).0.is_empty()
                && (!target.kept || salient::same_words(&target.text, &src.text))
        };
        let Some((i, score)) = best.filter(|&(i, s)| s >= self.threshold && restates(i)) else {
            let entry = Entry { id: new_id(), age: (Micros::MAX, self.targets.len()), ..src.clone() };
            item.target_id = Some(entry.id.clone());
            item.action = Action::Added;
            self.push(Target {
                entry,
                origin: None,
                added_for: Some(src.id.clone()),
                matched: true,
                text_changed: false,
                citations_changed: false,
            });
            return item;
        };
        let t = &mut self.targets[i];
        item.target_id = Some(t.entry.id.clone());
        item.similarity = Some(score);
        let newer = match (src.changed_at, t.entry.changed_at) {
            (Some(s), Some(d)) => s > d,
            (Some(_), None) => true,
            _ => false,
        };
        let mut changes = Vec::new();
        if src.text != t.entry.text && newer && !t.matched && !t.entry.kept {
            t.entry.text = src.text.clone();
            t.text_changed = true;
            changes.push("text replaced");
        }
        let before = t.entry.citations.len();
        for c in &src.citations {
            if !t.entry.citations.contains(c) {
                t.entry.citations.push(c.clone());
            }
        }
        if t.entry.citations.len() > before {
            t.citations_changed = true;
            changes.push("citations merged");
        }
        t.matched = true;
        if changes.is_empty() {
            item.note = if src.text == t.entry.text { "already there".into() } else { "a similar one is there".into() };
        } else {
            item.action = Action::Merged;
            item.note = changes.join(", ");
        }
        item
    }
}

/// Returns a record's fields as a conversion entry.
fn record_entry(all: &Records<'_>, r: &copilot::Record<'_>) -> Entry {
    let f = all.fields(r);
    Entry {
        id: r.id.to_string(),
        subject: Some(frontmatter::py_strip(r.subject)).filter(|s| !s.is_empty()).unwrap_or("general").to_string(),
        text: frontmatter::py_strip(r.fact).to_string(),
        citations: f.citations.iter().map(|c| c.to_string()).collect(),
        reason: f.reason.as_deref().map(str::to_string),
        category: r.category.map(str::to_string),
        tags: f.tags.iter().map(|t| t.to_string()).collect(),
        changed_at: r.changed_at(),
        age: (r.created_at.unwrap_or(Micros::MIN), r.index),
        kept: false,
    }
}

/// Reads a memory file's extra keys: `citations` (a list, or a comma-separated string) and
/// `reason`. A file that no longer parses yields none.
fn memory_extras(path: &Path) -> (Vec<String>, Option<String>) {
    let Ok(bytes) = std::fs::read(path) else { return (Vec::new(), None) };
    let Ok(text) = crate::format::text::decode(&bytes) else { return (Vec::new(), None) };
    let Ok(split) = frontmatter::split(text) else { return (Vec::new(), None) };
    let Ok(fields) = frontmatter::parse(split.yaml) else { return (Vec::new(), None) };
    let citations = match fields.get("citations") {
        Some(Value::Array(items)) => items.iter().filter_map(|c| c.as_str()).map(str::to_string).collect(),
        Some(Value::String(s)) => {
            copilot::record::split_citations(s.as_str().into()).into_iter().map(|c| c.into_owned()).collect()
        }
        _ => Vec::new(),
    };
    let reason = fields.get("reason").and_then(Value::as_str).map(str::to_string);
    (citations, reason)
}

/// Every valid markdown memory as an entry with its path, by id, and the highest id.
type MemoryEntries = (Vec<(Entry, PathBuf)>, Option<u64>);

/// The markdown memories an export leaves out: those one agent keeps (`agent:` set, or an
/// `agent:<name>` tag), by id and agent. A Copilot record reaches every agent, so such a memory
/// copied there would reach agents it was not for.
fn agent_only(md: &MemoryStore) -> Result<Vec<(u64, String)>> {
    let index = md.scan()?;
    let mut kept: Vec<(u64, String)> = index
        .memories()
        .filter(|m| !m.visible_to(None))
        .map(|m| (m.id, m.agent.map(str::to_string).unwrap_or_else(|| "one agent".to_string())))
        .collect();
    kept.sort();
    Ok(kept)
}

/// Returns every valid markdown memory as an entry, by id, with its path.
fn memory_entries(md: &MemoryStore, with_extras: bool) -> Result<MemoryEntries> {
    let index = md.scan()?;
    let mut all: Vec<_> = index.memories().collect();
    all.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.file_name.cmp(b.file_name)));
    let entries = all
        .iter()
        .map(|m| {
            let path = index.dir.join(m.file_name);
            let (citations, reason) = if with_extras { memory_extras(&path) } else { (Vec::new(), None) };
            let tags: Vec<String> = m.tags.iter().map(|t| t.to_string()).collect();
            let entry = Entry {
                id: m.id.to_string(),
                subject: memory_subject(&tags),
                text: m.content.to_string(),
                citations,
                reason,
                category: detect_category(&tags).map(str::to_string),
                tags,
                changed_at: Some(m.updated_at.unwrap_or(m.created_at)),
                age: (m.created_at, m.id as usize),
                kept: m.never_rewritten().is_some(),
            };
            (entry, path)
        })
        .collect();
    Ok((entries, index.max_id()))
}

/// Exports every markdown memory into the Copilot store.
fn export(repo: &Repo, dry_run: bool) -> Result<Conversion> {
    let (md, records, now) = (MemoryStore::new(repo), crate::copilot::RecordStore::new(repo), repo.now);
    // One journal entry for the whole export: `kb undo` takes it back.
    let mut txn = if dry_run {
        None
    } else {
        Some(Txn::begin(repo, repo.lock()?, "export", "exported memories to Copilot memories"))
    };
    let (mut sources, _) = memory_entries(&md, true)?;
    let agent_only = agent_only(&md)?;
    sources.retain(|(e, _)| !agent_only.iter().any(|(id, _)| id.to_string() == e.id));
    let file: JsonlFile = records.read()?;
    let parsed = Records::parse(&file);
    let recs: Vec<copilot::Record<'_>> = parsed.iter().collect();
    let existing = recs.iter().enumerate().map(|(k, r)| (record_entry(&parsed, r), Origin::Record(k))).collect();
    let mut conv = Converter::new(existing, repo.settings.memory_dedup_threshold.value);
    let mut taken: HashSet<String> = parsed.ids().into_iter().map(str::to_string).collect();
    let mut items = Vec::new();
    for (src, _) in &sources {
        let item = conv.convert(src, || {
            let id = copilot::draw_id(&src.subject, &src.text, |c| taken.contains(c));
            taken.insert(id.clone());
            id
        });
        items.push(item);
    }
    let mut edits = Vec::new();
    let stamp = copilot::json_str(&time::py_isoformat(now));
    let author = repo.author();
    for t in &conv.targets {
        match &t.origin {
            Some(Origin::Record(k)) if t.text_changed || t.citations_changed => {
                let rec = &recs[*k];
                let mut changes = Vec::new();
                if t.text_changed {
                    changes.push(("fact", copilot::json_str(&t.entry.text)));
                    changes.extend(author.as_deref().map(|a| (UPDATED_BY, copilot::json_str(a))));
                }
                if t.citations_changed {
                    changes.push(("citations", serde_json::to_string(&t.entry.citations).unwrap_or_default()));
                }
                changes.push(("updated", stamp.clone()));
                edits.push(jsonl::Edit::Replace(rec.index, copilot::edit_line(&file, rec, changes)?));
            }
            None => {
                let e = &t.entry;
                let reason = e
                    .reason
                    .clone()
                    .unwrap_or_else(|| format!("Exported from kb memory {}", t.added_for.as_deref().unwrap_or("?")));
                let draft = Draft {
                    id: &e.id,
                    subject: &e.subject,
                    fact: &e.text,
                    citations: &e.citations,
                    reason: &reason,
                    category: e.category.as_deref(),
                    tags: (!e.tags.is_empty()).then_some(e.tags.as_slice()),
                    created_by: author.as_deref(),
                    accepted_by: None,
                };
                edits.push(jsonl::Edit::Append(draft.line(now)));
            }
            _ => {}
        }
    }
    if let Some(mut txn) = txn.take() {
        records.write(&mut txn, &file, &edits)?;
        txn.finish()?;
    }
    let warnings = agent_only
        .iter()
        .map(|(id, agent)| format!("left out memory {id}, for {agent} only: a Copilot record reaches every agent"))
        .collect();
    Ok(Conversion { dry_run, target: file.path.clone(), items, warnings })
}

/// Imports every Copilot record into the markdown store.
fn import(repo: &Repo, dry_run: bool) -> Result<Conversion> {
    let (md, records, now) = (MemoryStore::new(repo), crate::copilot::RecordStore::new(repo), repo.now);
    let lock = if dry_run { None } else { Some(repo.lock()?) };
    let file = records.read()?;
    let parsed = Records::parse(&file);
    let (memories, max_id) = memory_entries(&md, false)?;
    let existing = memories.into_iter().map(|(entry, path)| (entry, Origin::File(path))).collect();
    let mut conv = Converter::new(existing, repo.settings.memory_dedup_threshold.value);
    let mut next_id = max_id.map_or(1, |m| m + 1);
    let mut items = Vec::new();
    let mut extras_loaded: HashSet<String> = HashSet::new();
    for r in parsed.iter() {
        let src = record_entry(&parsed, &r);
        // A memory's citations live in its file, not in the index: read them for the subject's
        // memories before the first match, so a merge sees what is already there.
        let subject = lower_strip(&src.subject);
        if extras_loaded.insert(subject.clone()) {
            for i in conv.candidates(&subject) {
                let t = &mut conv.targets[i];
                if let Some(Origin::File(p)) = &t.origin {
                    let (citations, reason) = memory_extras(p);
                    t.entry.citations = citations;
                    t.entry.reason = reason;
                }
            }
        }
        let item = conv.convert(&src, || {
            let id = next_id;
            next_id += 1;
            id.to_string()
        });
        items.push(item);
    }
    let dir = repo.layout.memories();
    if let Some(held) = lock {
        // One journal entry for the whole import: `kb undo` takes it back.
        let mut txn = Txn::begin(repo, held, "import", "imported Copilot memories");
        let author = repo.author();
        for t in &conv.targets {
            let e = &t.entry;
            match &t.origin {
                Some(Origin::File(path)) if t.text_changed || t.citations_changed => {
                    let mut set = if t.citations_changed {
                        vec![("citations".to_string(), Value::from(e.citations.clone()))]
                    } else {
                        Vec::new()
                    };
                    if t.text_changed {
                        set.extend(author.clone().map(|a| (UPDATED_BY.to_string(), Value::from(a))));
                    }
                    let body = t.text_changed.then_some(e.text.as_str());
                    crate::memories::store::update_memory(&mut txn, path, body, &set, now)?;
                }
                None => {
                    let id: u64 = e.id.parse().map_err(|_| KbError::Internal(format!("bad new id {}", e.id)))?;
                    let tags = record_tags(e);
                    let mut extra = vec![("citations".to_string(), Value::from(e.citations.clone()))];
                    if let Some(r) = &e.reason {
                        extra.push(("reason".to_string(), Value::from(r.clone())));
                    }
                    extra.extend(author.clone().map(|a| (CREATED_BY.to_string(), Value::from(a))));
                    crate::memories::store::create_memory(&mut txn, &dir, id, &tags, &e.text, &extra, now)?;
                }
                _ => {}
            }
        }
        txn.finish()?;
    }
    let mut warnings = Vec::new();
    let total = conv.targets.len() as u64;
    let max = repo.settings.memory_max_count.value;
    if total > max {
        warnings.push(format!(
            "the markdown store now holds {total} memories, over memory_max_count ({max}); the next `kb save` will decay the oldest"
        ));
    }
    Ok(Conversion { dry_run, target: dir, items, warnings })
}

/// Returns the tags a memory imported from a record gets: the record's `tags` when kb exported
/// it, else its subject and, when it names one, its signal category.
fn record_tags(e: &Entry) -> Vec<String> {
    if !e.tags.is_empty() {
        return e.tags.clone();
    }
    let mut tags = vec![e.subject.clone()];
    if let Some(c) = e.category.as_deref().filter(|c| SIGNAL_TAGS.contains(c) && *c != e.subject) {
        tags.push(c.to_string());
    }
    tags
}

/// `kb export --to copilot` / `kb import --from copilot`. JSON: `{"direction", "from", "to",
/// "path":ABS, "dry_run", "added", "merged", "skipped", "items":[ITEM...], "warnings":[S...]}`,
/// an item being `{"source_id", "target_id":S|null, "subject", "action", "similarity":F|null,
/// "note"}`.
pub struct ConvertReport {
    conversion: Conversion,
    direction: &'static str,
    from: &'static str,
    to: &'static str,
    diagnostics: Vec<Diagnostic>,
}

/// Exports every markdown memory into the Copilot store, with dedup.
pub fn export_to_copilot(repo: &Repo, dry_run: bool) -> anyhow::Result<ConvertReport> {
    Ok(ConvertReport::new(export(repo, dry_run)?, "export", ("md", COPILOT), Vec::new()))
}

/// Imports every Copilot record into the markdown store, with dedup.
pub fn import_from_copilot(repo: &Repo, dry_run: bool) -> anyhow::Result<ConvertReport> {
    let file = read_records(repo)?;
    let skipped: Vec<Diagnostic> = skipped_lines(&Records::parse(&file)).collect();
    drop(file);
    Ok(ConvertReport::new(import(repo, dry_run)?, "import", (COPILOT, "md"), skipped))
}

impl ConvertReport {
    fn new(
        conversion: Conversion,
        direction: &'static str,
        (from, to): (&'static str, &'static str),
        mut diagnostics: Vec<Diagnostic>,
    ) -> ConvertReport {
        let refused = conversion.items.iter().filter(|i| i.action == Action::Skipped && i.target_id.is_none());
        diagnostics.extend(
            refused.map(|i| Diagnostic::warning(None, format!("not {direction}ed {}: {}", i.source_id, i.note))),
        );
        diagnostics.extend(conversion.warnings.iter().map(|w| Diagnostic::warning(None, w.as_str())));
        ConvertReport { conversion, direction, from, to, diagnostics }
    }
}

impl Serialize for ConvertReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct ItemJson<'a> {
            source_id: &'a str,
            target_id: Option<&'a str>,
            subject: &'a str,
            action: &'static str,
            similarity: Option<f64>,
            note: &'a str,
        }
        #[derive(Serialize)]
        struct ConvertJson<'a> {
            direction: &'static str,
            from: &'static str,
            to: &'static str,
            path: String,
            dry_run: bool,
            added: usize,
            merged: usize,
            skipped: usize,
            items: Vec<ItemJson<'a>>,
            warnings: &'a [String],
        }
        let c = &self.conversion;
        let items = c
            .items
            .iter()
            .map(|i| ItemJson {
                source_id: &i.source_id,
                target_id: i.target_id.as_deref(),
                subject: &i.subject,
                action: i.action.as_str(),
                similarity: i.similarity,
                note: &i.note,
            })
            .collect();
        ConvertJson {
            direction: self.direction,
            from: self.from,
            to: self.to,
            path: abs(&c.target),
            dry_run: c.dry_run,
            added: c.count(Action::Added),
            merged: c.count(Action::Merged),
            skipped: c.count(Action::Skipped),
            items,
            warnings: &c.warnings,
        }
        .serialize(s)
    }
}

impl Report for ConvertReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let c = &self.conversion;
        let (from, to) = (self.from, self.to);
        let name = |store: &str, id: &str| {
            let id = v.clean(id);
            if store == "md" { format!("memory {id}") } else { format!("Copilot memory {id}") }
        };
        for i in &c.items {
            let verb = if c.dry_run {
                match i.action {
                    Action::Added => "would add",
                    Action::Merged => "would merge",
                    Action::Skipped => "would skip",
                }
            } else {
                i.action.as_str()
            };
            let width = if c.dry_run { 11 } else { 7 };
            write!(w, "{verb:<width$} {}", name(from, &i.source_id))?;
            if let Some(t) = &i.target_id {
                write!(w, " → {}", name(to, t))?;
            }
            write!(w, " [{}]", v.clean(&i.subject))?;
            let mut notes: Vec<String> = Vec::new();
            if !i.note.is_empty() {
                notes.push(v.clean(&i.note).into_owned());
            }
            if let Some(s) = i.similarity.filter(|_| i.action != Action::Added) {
                notes.push(format!("similarity {s:.1}"));
            }
            if !notes.is_empty() {
                write!(w, " ({})", notes.join(", "))?;
            }
            writeln!(w)?;
        }
        if !c.items.is_empty() {
            writeln!(w)?;
        }
        let total = c.items.len();
        let what = match (from == "md", total == 1) {
            (true, true) => "memory",
            (true, false) => "memories",
            (false, true) => "Copilot memory",
            (false, false) => "Copilot memories",
        };
        let place = v.rel(&c.target);
        let mark = v.style.ok("✓");
        let line = match (self.direction, c.dry_run) {
            ("export", false) => format!("{mark} Exported {total} {what} to {place}"),
            ("export", true) => format!("Would export {total} {what} to {place}"),
            (_, false) => format!("{mark} Imported {total} {what} into {place}"),
            (_, true) => format!("Would import {total} {what} into {place}"),
        };
        let (added, merged, skipped) = (c.count(Action::Added), c.count(Action::Merged), c.count(Action::Skipped));
        write!(w, "{line}: {added} added, {merged} merged, {skipped} skipped.")?;
        if c.dry_run {
            write!(w, " Nothing written.")?;
        }
        writeln!(w)
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_from_tags() {
        assert_eq!(memory_subject(&["preference", "python", "web"]), "python");
        assert_eq!(memory_subject(&["_consolidated", "_auto_decay"]), "general");
        assert_eq!(memory_subject(&["decision", "pattern"]), "decision");
        assert_eq!(memory_subject::<&str>(&[]), "general");
    }

    fn entry(id: &str, subject: &str, text: &str, at: Option<Micros>) -> Entry {
        Entry {
            id: id.into(),
            subject: subject.into(),
            text: text.into(),
            citations: Vec::new(),
            reason: None,
            category: None,
            tags: Vec::new(),
            changed_at: at,
            age: (at.unwrap_or(0), 0),
            kept: false,
        }
    }

    #[test]
    fn dedup_rules() {
        let existing = vec![(entry("t", "build", "run cargo nextest before pushing", Some(10)), Origin::Record(0))];
        let mut conv = Converter::new(existing, 85.0);
        // Older and similar: nothing to change.
        let older = entry("1", "Build", "run cargo nextest before pushing!", Some(5));
        assert_eq!(conv.convert(&older, || "new".into()).action, Action::Skipped);
        // Newer but the target was already matched in this run: citations only.
        let mut newer = entry("2", "build", "run cargo nextest before you push", Some(20));
        newer.citations = vec!["Makefile:1".into()];
        let it = conv.convert(&newer, || "new".into());
        assert_eq!((it.action, it.note.as_str()), (Action::Merged, "citations merged"));
        assert_eq!(conv.targets[0].entry.text, "run cargo nextest before pushing");
        // Another subject: added; a similar one after it in the same run matches the new one.
        let other = entry("3", "docs", "run cargo nextest before pushing", Some(1));
        assert_eq!(conv.convert(&other, || "new".into()).action, Action::Added);
        let again = entry("4", "docs", "run cargo nextest before pushing.", Some(30));
        let it = conv.convert(&again, || "newer".into());
        assert_eq!((it.action, it.target_id.as_deref()), (Action::Skipped, Some("new")));
        // Fresh run, newer source: text replaced.
        conv.targets[0].matched = false;
        let it = conv.convert(&newer, || "new".into());
        assert_eq!((it.action, it.note.as_str()), (Action::Merged, "text replaced"));
    }
}
