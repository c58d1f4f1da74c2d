//! `kb recall`, `kb list`, `kb show`: read commands. They never write a knowledge file; files
//! they cannot read are named in a warning and skipped.

use super::Ctx;
use crate::cli::RecallArgs;
use crate::index::{MemoryRef, Pos};
use crate::memory::{detect_category, detect_source};
use crate::output::{self, chars_prefix, summary};
use crate::store;
use anyhow::Result;
use serde::Serialize;
use std::path::Path;
use std::process::ExitCode;

/// One memory in JSON (SPEC §5 `MEMORY`).
#[derive(Serialize)]
pub struct MemoryJson {
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

#[derive(Serialize)]
struct RecallJson<'a> {
    query: &'a str,
    count: usize,
    results: Vec<MemoryJson>,
}

pub fn recall(ctx: &Ctx, args: RecallArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let index = store.scan()?;
    ctx.warn_skipped(&index);
    let hits = store::recall(&index, &args.query, args.max_results);
    if ctx.json {
        let results = hits.iter().map(|m| MemoryJson::new(m, &index.dir)).collect();
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
    for m in &hits {
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
#[serde(bound(serialize = "I: Iterator, I::Item: Serialize"))]
struct ListJson<I> {
    count: usize,
    limit: u64,
    memories: output::SerializeIter<I>,
}

pub fn list(ctx: &Ctx) -> Result<ExitCode> {
    let store = ctx.store()?;
    let index = store.scan()?;
    ctx.warn_skipped(&index);
    let limit = store.settings.memory_max_count.value;
    let mut all: Vec<Pos> = index.positions().collect();
    all.sort_by(|&a, &b| {
        index.id_at(a).cmp(&index.id_at(b)).then_with(|| index.file_name_at(a).cmp(index.file_name_at(b)))
    });
    if ctx.json {
        let dir = super::abs(&index.dir);
        let items = all.iter().map(|&p| {
            let m = index.at(p);
            ListItem {
                id: m.id,
                created: m.created,
                updated: m.updated,
                category: detect_category(&m.tags),
                summary: summary(m.content),
                decay_protected: m.decay_protected,
                path: dir.join(m.file_name).display().to_string(),
                tags: m.tags,
            }
        });
        output::print_json(&ListJson { count: all.len(), limit, memories: output::SerializeIter::new(items) })?;
        return Ok(ExitCode::SUCCESS);
    }
    if all.is_empty() {
        output::print(if index.dir_exists { "No memories found." } else { "No memories saved yet." })?;
        return Ok(ExitCode::SUCCESS);
    }
    output::stream(|w| {
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
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

pub fn show(ctx: &Ctx, raw_id: &str) -> Result<ExitCode> {
    let id = super::parse_id(raw_id)?;
    let store = ctx.store()?;
    let index = store.scan()?;
    let found = index.by_id(id);
    let m = match found.as_slice() {
        [] => {
            ctx.warn_skipped(&index);
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
