//! `kb recall`, `kb list`, `kb show`: read commands. They never write a knowledge file; files
//! they cannot read are named in a warning and skipped.

use super::{Ctx, records};
use crate::cli::{RecallArgs, StoreKind};
use crate::copilot::{self, Record, Records};
use crate::memories::file::{detect_category, detect_source};
use crate::memories::index::{Index, MemoryRef, Pos};
use crate::memories::store;
use crate::output::{self, chars_prefix, summary};
use anyhow::Result;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// One memory in JSON (SPEC §5 `MEMORY`, plus `store`).
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
}

impl MemoryJson {
    pub fn new(m: &MemoryRef<'_>, dir: &Path) -> MemoryJson {
        MemoryJson {
            store: "md",
            id: m.id,
            path: super::abs(&dir.join(m.file_name)).display().to_string(),
            content: m.content.to_string(),
            tags: m.tags.iter().map(|t| t.to_string()).collect(),
            created: m.created.to_string(),
            updated: m.updated.map(String::from),
            source: m.source.map_or_else(|| detect_source(&m.tags).to_string(), String::from),
            category: detect_category(&m.tags),
            decay_protected: m.decay_protected,
        }
    }
}

/// A memory of either store in `recall` and `list` JSON.
#[derive(Serialize)]
#[serde(untagged)]
enum Either<M, R> {
    Md(M),
    Copilot(R),
}

#[derive(Serialize)]
struct RecallJson<'a> {
    query: &'a str,
    count: usize,
    results: Vec<Either<MemoryJson, records::RecordJson>>,
}

/// A recall hit in either store.
enum Hit<'m, 'r> {
    Md(MemoryRef<'m>),
    Copilot(Record<'r>),
}

impl Hit<'_, '_> {
    /// Returns the key hits are ordered by, newest last: created, then the store's own order.
    fn age_key(&self) -> (i64, u8, u64) {
        match self {
            Hit::Md(m) => (m.created_at, 1, m.id),
            Hit::Copilot(r) => {
                let (at, index) = r.age_key();
                (at, 0, index as u64)
            }
        }
    }
}

pub fn recall(ctx: &Ctx, args: RecallArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let index = match args.store {
        Some(StoreKind::Copilot) => None,
        _ => {
            let index = store.scan()?;
            ctx.warn_skipped(&index);
            Some(index)
        }
    };
    let file = copilot_file(ctx, args.store)?;
    let parsed = file.as_ref().map(Records::parse);
    if let Some(all) = &parsed {
        records::warn_skipped(ctx, all);
    }
    let mut hits: Vec<Hit<'_, '_>> = Vec::new();
    if let Some(index) = &index {
        hits.extend(store::recall(index, &args.query, args.max_results).into_iter().map(Hit::Md));
    }
    if let Some(all) = &parsed {
        let q = copilot::Query::new(&args.query);
        // Keep only the newest N matches of this store before merging (a broad query can match
        // most of 100,000 records).
        let mut found: Vec<((i64, usize), usize)> =
            all.iter().enumerate().filter(|(_, r)| all.matches(r, &q)).map(|(pos, r)| (r.age_key(), pos)).collect();
        found.sort_unstable_by_key(|(age, _)| std::cmp::Reverse(*age));
        found.truncate(args.max_results);
        hits.extend(found.into_iter().filter_map(|(_, pos)| all.get(pos)).map(Hit::Copilot));
    }
    hits.sort_by_key(|h| std::cmp::Reverse(h.age_key()));
    hits.truncate(args.max_results);
    if ctx.json {
        let results = hits
            .iter()
            .map(|h| match (h, &index, &parsed) {
                (Hit::Md(m), Some(index), _) => Either::Md(MemoryJson::new(m, &index.dir)),
                (Hit::Copilot(r), _, Some(all)) => Either::Copilot(records::RecordJson::new(all, r)),
                _ => unreachable!("a hit comes from a store that was read"),
            })
            .collect();
        output::print_json(&RecallJson { query: &args.query, count: hits.len(), results })?;
        return Ok(ExitCode::SUCCESS);
    }
    let q = ctx.style.clean(&args.query);
    if hits.is_empty() {
        output::print(&format!("No memories found matching '{q}'"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let noun = if hits.len() == 1 { "memory" } else { "memories" };
    let mut lines = vec![format!("Found {} {noun} matching '{q}':", hits.len()), String::new()];
    for h in &hits {
        let m = match h {
            Hit::Md(m) => m,
            Hit::Copilot(r) => {
                if let Some(all) = &parsed {
                    lines.extend(records::recall_lines(ctx, all, r));
                }
                continue;
            }
        };
        lines.push(ctx.style.bold(&format!("**Memory {}** (created {})", m.id, chars_prefix(m.created, 10))));
        if !m.tags.is_empty() {
            lines.push(format!("Tags: {}", ctx.style.clean(&m.tags.join(", "))));
        }
        lines.push(ctx.style.clean(m.content).into_owned());
        lines.push(String::new());
    }
    output::print(lines.join("\n").trim_end())?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct ListItem<'a> {
    store: &'static str,
    id: u64,
    created: &'a str,
    updated: Option<&'a str>,
    tags: Vec<&'a str>,
    category: Option<&'static str>,
    summary: String,
    decay_protected: bool,
    path: String,
}

#[derive(Serialize)]
struct ListJson<'x, 'a> {
    count: usize,
    limit: u64,
    /// How many of `memories` each store holds.
    counts: Counts,
    memories: ListItems<'x, 'a>,
}

#[derive(Serialize)]
struct Counts {
    md: usize,
    copilot: usize,
}

/// The markdown items, then the Copilot records, serialised one by one (100,000 records are not
/// copied into a second list first).
struct ListItems<'x, 'a> {
    md: Option<(&'x Index, Vec<Pos>, PathBuf)>,
    copilot: Option<(&'x Records<'a>, String)>,
}

impl Serialize for ListItems<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let md_len = self.md.as_ref().map_or(0, |m| m.1.len());
        let mut seq = s.serialize_seq(Some(md_len + self.copilot.as_ref().map_or(0, |c| c.0.len())))?;
        if let Some((index, positions, dir)) = &self.md {
            for &p in positions {
                let m = index.at(p);
                seq.serialize_element(&ListItem {
                    store: "md",
                    id: m.id,
                    created: m.created,
                    updated: m.updated,
                    category: detect_category(&m.tags),
                    summary: summary(m.content),
                    decay_protected: m.decay_protected,
                    path: dir.join(m.file_name).display().to_string(),
                    tags: m.tags,
                })?;
            }
        }
        if let Some((all, path)) = &self.copilot {
            for r in all.iter() {
                seq.serialize_element(&records::RecordListItem::new(&r, path))?;
            }
        }
        seq.end()
    }
}

/// Returns the Copilot file a read command covers: none with `--store md`, required with
/// `--store copilot`, else the file when there is one.
fn copilot_file(ctx: &Ctx, only: Option<StoreKind>) -> Result<Option<copilot::JsonlFile>> {
    Ok(match only {
        Some(StoreKind::Md) => None,
        Some(StoreKind::Copilot) => Some(records::read(ctx)?),
        None => records::load(ctx),
    })
}

pub fn list(ctx: &Ctx, only: Option<StoreKind>) -> Result<ExitCode> {
    let store = ctx.store()?;
    let limit = store.settings.memory_max_count.value;
    let file = copilot_file(ctx, only)?;
    let parsed = file.as_ref().map(Records::parse);
    if let Some(all) = &parsed {
        records::warn_skipped(ctx, all);
    }
    let copilot_count = parsed.as_ref().map_or(0, |p| p.len());
    let copilot_items = || parsed.as_ref().map(|all| (all, super::abs(&all.file.path).display().to_string()));
    if only == Some(StoreKind::Copilot) {
        let Some(all) = &parsed else { unreachable!("read above") };
        if ctx.json {
            let counts = Counts { md: 0, copilot: copilot_count };
            let memories = ListItems { md: None, copilot: copilot_items() };
            records::print_json_stream(&ListJson { count: copilot_count, limit, counts, memories })?;
        } else if all.is_empty() {
            output::print(records::empty_list_text(all.file))?;
        } else {
            records::stream(|w| records::write_list(ctx, all, w))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let index = store.scan()?;
    ctx.warn_skipped(&index);
    let mut all: Vec<Pos> = index.positions().collect();
    all.sort_by(|&a, &b| {
        index.id_at(a).cmp(&index.id_at(b)).then_with(|| index.file_name_at(a).cmp(index.file_name_at(b)))
    });
    if ctx.json {
        let counts = Counts { md: all.len(), copilot: copilot_count };
        let count = all.len() + copilot_count;
        let memories = ListItems { md: Some((&index, all, super::abs(&index.dir))), copilot: copilot_items() };
        records::print_json_stream(&ListJson { count, limit, counts, memories })?;
        return Ok(ExitCode::SUCCESS);
    }
    // The markdown section exactly as co-cli prints it, then the Copilot section when it has records.
    let copilot = parsed.as_ref().filter(|p| !p.is_empty());
    if all.is_empty() {
        let empty = if index.dir_exists { "No memories found." } else { "No memories saved yet." };
        match copilot {
            Some(c) => records::stream(|w| {
                write!(w, "{empty}\n\n")?;
                records::write_list(ctx, c, w)
            })?,
            None => output::print(empty)?,
        }
        return Ok(ExitCode::SUCCESS);
    }
    records::stream(|w| {
        write!(w, "Total memories: {}/{limit}\n\n", all.len())?;
        for &p in &all {
            let m = index.at(p);
            write!(w, "**{:03}** ({}", m.id, chars_prefix(m.created, 10))?;
            if let Some(u) = m.updated {
                write!(w, " → {}", chars_prefix(u, 10))?;
            }
            w.write_all(b")")?;
            if let Some(c) = detect_category(&m.tags) {
                write!(w, " [{c}]")?;
            }
            if m.decay_protected {
                w.write_all(" 🔒".as_bytes())?;
            }
            writeln!(w, " : {}", ctx.style.clean(&summary(m.content)))?;
        }
        if let Some(c) = copilot {
            w.write_all(b"\n")?;
            records::write_list(ctx, c, w)?;
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `kb show`: an integer id is a markdown memory (then, unless narrowed, a Copilot record with
/// that id); any other id is a Copilot record.
pub fn show(ctx: &Ctx, raw_id: &str, only: Option<StoreKind>) -> Result<ExitCode> {
    let id = match only {
        Some(StoreKind::Copilot) => return records::show(ctx, raw_id),
        Some(StoreKind::Md) => super::parse_id(raw_id)?,
        None => match super::parse_id(raw_id) {
            Ok(id) => id,
            Err(_) => return records::show(ctx, raw_id),
        },
    };
    let store = ctx.store()?;
    let index = store.scan()?;
    // Like every read command, name the files it skipped (SPEC §5).
    ctx.warn_skipped(&index);
    let found = index.by_id(id);
    let m = match found.as_slice() {
        [] => {
            if only.is_none() && has_record(ctx, raw_id) {
                return records::show(ctx, raw_id);
            }
            return Err(store::StoreError::NotFound(raw_id.trim().to_string()).into());
        }
        [m] => m,
        many => {
            let files = many.iter().map(|m| m.file_name.to_string()).collect();
            return Err(store::StoreError::DuplicateId { id, files }.into());
        }
    };
    let json = MemoryJson::new(m, &index.dir);
    if ctx.json {
        output::print_json(&json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let header = format!("Memory {} ({})", m.id, ctx.rel(&index.dir.join(m.file_name)));
    let mut text = format!("{}\n", ctx.style.bold(&ctx.style.clean(&header)));
    text.push_str(&format!("Created: {}\n", m.created));
    if let Some(u) = m.updated {
        text.push_str(&format!("Updated: {u}\n"));
    }
    if !m.tags.is_empty() {
        text.push_str(&format!("Tags: {}\n", ctx.style.clean(&m.tags.join(", "))));
    }
    if let Some(c) = json.category {
        text.push_str(&format!("Category: {c}\n"));
    }
    text.push_str(&format!("Source: {}\n", ctx.style.clean(&json.source)));
    if m.decay_protected {
        text.push_str("Protected: 🔒 yes\n");
    }
    text.push('\n');
    text.push_str(&ctx.style.clean(m.content));
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Returns whether the Copilot store has a record with this id (an integer-looking id not found
/// among the markdown memories).
pub fn has_record(ctx: &Ctx, raw_id: &str) -> bool {
    let Ok(file) = copilot::jsonl::JsonlFile::read(&ctx.layout.copilot_memories()) else { return false };
    !Records::parse(&file).find(raw_id.trim()).is_empty()
}
