//! `kb heat` (the heat of each memory and record; docs/behaviour.md, Heat) and `kb promote` (a memory made
//! into a scoped instruction file, by a person).

use super::{Report, View, abs};
use crate::error::{Diagnostic, KbError};
use crate::heat;
use crate::journal::Txn;
use crate::kinds::Store;
use crate::memories::store::MemoryStore;
use crate::output::summary;
use crate::repo::Repo;
use anyhow::Result;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use serde_json::Value;
use std::io::{self, Write};
use std::path::PathBuf;

/// One row of `kb heat`. JSON: `{"id","store","heat","level","last_access","hot",
/// "promote_candidate","summary"}`.
#[derive(Debug, Serialize)]
pub struct HeatRow {
    /// A memory's integer id, a record's string id.
    pub id: Value,
    pub store: &'static str,
    pub heat: u64,
    pub level: &'static str,
    pub last_access: Option<String>,
    /// In Hot Memories: a memory with heat ≥ 3 within the `hot_limit` hottest.
    pub hot: bool,
    pub promote_candidate: bool,
    pub summary: String,
}

/// `kb heat`. JSON: `{"window_days":N, "active_days":[DATE...], "memories":[ROW...]}`.
#[derive(Debug, Serialize)]
pub struct HeatReport {
    pub window_days: u64,
    pub active_days: Vec<String>,
    pub memories: Vec<HeatRow>,
    #[serde(skip)]
    all: bool,
    #[serde(skip)]
    diagnostics: Vec<Diagnostic>,
}

/// Computes the heat of every memory and record that still exists: the warm and hot ones, or with
/// `all` every one (never-accessed ones last, by store and id).
pub fn heat(repo: &Repo, all: bool) -> Result<HeatReport> {
    let min_heat = if all { 0 } else { heat::WARM };
    let heats = heat::read(&repo.layout, repo.settings.heat_window_days.value, min_heat);
    let mut diagnostics = heats.problems.clone();
    let index = crate::memories::store::MemoryStore::new(repo).scan()?;
    diagnostics.extend(index.problems());
    let file = super::read::read_records(repo).ok();
    let records = file.as_ref().map(crate::copilot::Records::parse);
    // Summaries by id (the first memory of an id, as `kb show` picks), looked up once per heat.
    let mut md_contents: FxHashMap<u64, &str> = FxHashMap::default();
    let mut md_files: FxHashMap<u64, &str> = FxHashMap::default();
    for m in index.memories() {
        md_contents.entry(m.id).or_insert(m.content);
        md_files.entry(m.id).or_insert(m.file_name);
    }
    // A memory promoted already (`promoted_to` set) is no candidate: read only for the few
    // candidates, from the file (the index keeps no `promoted_to`).
    let promoted = |id: &str| -> bool {
        let Some(name) = id.parse::<u64>().ok().and_then(|id| md_files.get(&id)) else { return false };
        let Ok(text) = crate::fsio::read_text(&index.dir.join(name)) else { return false };
        crate::format::frontmatter::split_and_parse(&text).is_ok_and(|(_, fields)| fields.contains_key("promoted_to"))
    };
    let mut record_texts: FxHashMap<&str, (&str, &str)> = FxHashMap::default();
    for r in records.iter().flat_map(|a| a.iter()) {
        record_texts.entry(r.id).or_insert((r.subject, r.fact));
    }
    let md_summary = |id: &str| -> Option<String> { md_contents.get(&id.parse::<u64>().ok()?).map(|c| summary(c)) };
    let record_summary =
        |id: &str| -> Option<String> { record_texts.get(id).map(|(s, f)| summary(&format!("{s}: {f}"))) };
    // In Hot Memories: as `kb context` (no agent) chooses them, among the memories it shows that
    // are not core context (those are shown anyway).
    let hot_limit = usize::try_from(repo.settings.hot_limit.value).unwrap_or(usize::MAX);
    let candidates: FxHashSet<u64> = index
        .memories()
        .filter(|m| m.visible_to(None) && m.effective_type() != crate::memories::file::MemoryType::CoreContext)
        .map(|m| m.id)
        .collect();
    let hot_ids: FxHashSet<u64> = heat::hot_ids(&heats, hot_limit, |id| candidates.contains(&id)).into_iter().collect();
    let mut rows = Vec::new();
    for h in &heats.heats {
        let found = match h.access.store {
            Store::Md => md_summary(&h.access.id),
            Store::Copilot => record_summary(&h.access.id),
            _ => None,
        };
        // A forgotten memory keeps its lines in the log; it is not shown.
        let Some(summary) = found else { continue };
        let hot = h.access.store == Store::Md && h.access.id.parse().is_ok_and(|id: u64| hot_ids.contains(&id));
        if !all && h.heat < heat::WARM {
            continue;
        }
        rows.push(HeatRow {
            id: id_value(h.access.store, &h.access.id),
            store: h.access.store.as_str(),
            heat: h.heat,
            level: h.level(),
            last_access: Some(h.last_access.clone()),
            hot,
            promote_candidate: h.promote_candidate && !(h.access.store == Store::Md && promoted(&h.access.id)),
            summary,
        });
    }
    if all {
        // Every memory and record the log has no line for, by store and id.
        let mut seen: FxHashSet<(&str, String)> = rows.iter().map(|r| (r.store, id_text(&r.id))).collect();
        let mut cold = Vec::new();
        let mut ids: Vec<u64> = md_contents.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            if seen.insert(("md", id.to_string())) {
                cold.push(cold_row(Value::from(id), Store::Md, summary(md_contents[&id])));
            }
        }
        for r in records.iter().flat_map(|a| a.iter()) {
            if seen.insert(("copilot", r.id.to_string())) {
                cold.push(cold_row(
                    Value::from(r.id.to_string()),
                    Store::Copilot,
                    record_summary(r.id).unwrap_or_default(),
                ));
            }
        }
        rows.extend(cold);
    }
    Ok(HeatReport { window_days: heats.window_days, active_days: heats.active_days, memories: rows, all, diagnostics })
}

fn cold_row(id: Value, store: Store, summary: String) -> HeatRow {
    HeatRow {
        id,
        store: store.as_str(),
        heat: 0,
        level: heat::level(0),
        last_access: None,
        hot: false,
        promote_candidate: false,
        summary,
    }
}

/// A memory's id as a JSON number, a record's as a string.
fn id_value(store: Store, id: &str) -> Value {
    match (store, id.parse::<u64>()) {
        (Store::Md, Ok(n)) => Value::from(n),
        _ => Value::from(id),
    }
}

fn id_text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

impl Report for HeatReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let days = match (self.active_days.first(), self.active_days.last()) {
            (Some(a), Some(b)) if a != b => format!("{} active days, {a} to {b}", self.active_days.len()),
            (Some(a), _) => format!("1 active day, {a}"),
            _ => "no accesses yet".to_string(),
        };
        writeln!(w, "Heat over the last {} active days ({days}):", self.window_days)?;
        if self.memories.is_empty() {
            let what = if self.all { "No memories." } else { "No warm or hot memories (--all shows every one)." };
            return writeln!(w, "{what}");
        }
        writeln!(w)?;
        // Headers, so that the level (heat alone) is not read as "in Hot Memories", which is
        // `loaded`: heat ≥ 3 and within `hot_limit`, so a warm memory can be loaded.
        writeln!(w, "{:>6} {:>4} {:<5} {:<11} summary", "id", "heat", "level", "last access")?;
        for r in &self.memories {
            let mut marks = Vec::new();
            if r.hot {
                marks.push("loaded");
            }
            if r.promote_candidate {
                marks.push("promote candidate");
            }
            let last = r.last_access.as_deref().map_or("never", |l| crate::output::chars_prefix(l, 10));
            let marks = if marks.is_empty() { String::new() } else { format!(" [{}]", marks.join(", ")) };
            writeln!(
                w,
                "{:>6} {:>4} {:<5} {last:<11} {}{marks}",
                id_text(&r.id),
                r.heat,
                r.level,
                v.clean(&r.summary)
            )?;
        }
        if self.memories.iter().any(|r| r.hot) {
            writeln!(w)?;
            writeln!(
                w,
                "loaded: in the Hot Memories of `kb context`; compile targets include them only with \"hot\": true."
            )?;
        }
        Ok(())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

/// `kb promote`. JSON: `{"memory_id":N, "path":ABS, "apply_to":GLOB, "promoted_to":REL}`.
#[derive(Debug, Serialize)]
pub struct PromoteReport {
    pub memory_id: u64,
    pub path: String,
    pub apply_to: String,
    pub promoted_to: String,
    #[serde(skip)]
    file: PathBuf,
}

/// Writes memory `id` as `.github/instructions/NAME.instructions.md` (`applyTo`, `description`
/// = its summary line, body = its content; NAME defaults to the memory's slug) and sets
/// `promoted_to` on the memory, under the lock. An existing instruction file is never
/// overwritten; a glob that does not parse is refused.
pub fn promote(repo: &Repo, raw_id: &str, apply_to: &str, name: Option<&str>, redact: bool) -> Result<PromoteReport> {
    super::read::refuse_shared(repo, raw_id)?;
    let id = crate::repo::parse_id(raw_id)?;
    let globs = crate::instructions::split_globs(apply_to);
    if globs.is_empty() {
        return Err(
            KbError::rejected("--apply-to", "--apply-to is empty: give a glob such as 'src/api/**/*.rs'").into()
        );
    }
    for g in &globs {
        crate::instructions::compile(g)
            .map_err(|e| KbError::rejected("--apply-to", format!("--apply-to glob '{g}' does not parse: {e}")))?;
    }
    if let Some(n) = name {
        let ok = !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !ok || n.starts_with('.') {
            let why = format!("invalid --name {n:?}: use letters, digits, '-', '_' and '.', not starting with '.'");
            return Err(KbError::rejected("--name", why).into());
        }
    }
    let what = format!("promoted memory {id} (applyTo {})", apply_to.trim());
    let mut txn = Txn::begin(repo, repo.lock()?, "promote", what);
    let index = MemoryStore::new(repo).scan()?;
    let m = crate::memories::store::one(&index, id)?;
    let memory_file = index.dir.join(m.file_name);
    // A committed instruction file is screened as every write is (a hand-written memory may hold
    // a secret): the body, and so its description and file name.
    let mut screen = crate::secrets::Screen::new(redact);
    let body = screen.field("text", m.content.to_string())?;
    let name = name.map_or_else(|| crate::format::text::slugify(&body), str::to_string);
    let name = if name.is_empty() { format!("memory-{id}") } else { name };
    let rel = super::rel(&repo.layout.root, &crate::instructions::file_of(&repo.layout, &name)).into_owned();
    // Both texts before either write: a memory kb cannot edit fails the promote with nothing left
    // behind.
    let promoted = [("promoted_to".into(), Value::from(rel.as_str()))];
    let memory_text = crate::memories::store::updated_text(&memory_file, None, &promoted, repo.now)?;
    let file = crate::instructions::create(repo, &mut txn, &name, apply_to.trim(), &summary(&body), &body)?;
    if let Some(text) = memory_text {
        txn.write(&memory_file, text.as_bytes())?;
    }
    txn.finish()?;
    Ok(PromoteReport { memory_id: id, path: abs(&file), apply_to: apply_to.trim().to_string(), promoted_to: rel, file })
}

impl Report for PromoteReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "{} Promoted memory {} to {}", v.style.ok("✓"), self.memory_id, v.rel(&self.file))?;
        writeln!(w, "applyTo: {}", v.clean(&self.apply_to))
    }
}
