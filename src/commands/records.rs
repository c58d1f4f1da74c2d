//! The Copilot record store in the read and write commands: `save --store copilot`, and the
//! Copilot half of `list`, `recall`, `show`, `forget` and `check`. The markdown half stays in
//! the commands' own files; this module prints records and shapes their JSON.

use super::Ctx;
use crate::cli::SaveArgs;
use crate::copilot::jsonl::JsonlFile;
use crate::copilot::record::Votes;
use crate::copilot::{Record, RecordRequest, RecordStore, Records};
use crate::output::{self, chars_prefix, summary};
use anyhow::Result;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// The `store` value of a Copilot item in JSON.
pub const STORE: &str = "copilot";

/// Returns the Copilot record store with the settings.
pub fn store(ctx: &Ctx) -> Result<RecordStore> {
    Ok(RecordStore { layout: ctx.layout.clone(), settings: ctx.settings()? })
}

/// Reads the JSONL file for a command narrowed to the Copilot store: unreadable is an error.
pub fn read(ctx: &Ctx) -> Result<JsonlFile> {
    let path = ctx.layout.copilot_memories();
    JsonlFile::read(&path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))
}

/// Reads the JSONL file for a read command that covers both stores: unreadable is a warning,
/// and the Copilot half is empty.
pub fn load(ctx: &Ctx) -> Option<JsonlFile> {
    let path = ctx.layout.copilot_memories();
    match JsonlFile::read(&path) {
        Ok(f) => Some(f),
        Err(e) => {
            ctx.style.warn(&format!("skipped {}: {e}", ctx.rel(&path)));
            None
        }
    }
}

/// Warns on stderr about each line a read command skipped.
pub fn warn_skipped(ctx: &Ctx, all: &Records<'_>) {
    for p in all.problems.iter().filter(|p| p.skipped) {
        ctx.style.warn(&format!("skipped {}:{}: {}", ctx.rel(&all.file.path), p.line, p.message));
    }
}

/// One record in JSON: the SPEC §5 `MEMORY` keys (content = fact, no tags, never
/// decay-protected), plus the record's own.
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
}

impl RecordJson {
    pub fn new(r: &Record<'_>, path: &std::path::Path) -> RecordJson {
        let f = &r.fields;
        RecordJson {
            store: STORE,
            id: r.id.to_string(),
            path: super::abs(path).display().to_string(),
            line: r.line(),
            subject: f.subject.to_string(),
            fact: f.fact.to_string(),
            content: f.fact.to_string(),
            citations: f.citations.iter().map(|c| c.to_string()).collect(),
            reason: f.reason.as_deref().map(str::to_string),
            category: f.category.as_deref().map(str::to_string),
            source: f.source.as_deref().map(str::to_string),
            created: f.created.as_deref().map(str::to_string),
            updated: f.updated.as_deref().map(str::to_string),
            votes: f.votes,
            tags: Vec::new(),
            decay_protected: false,
        }
    }
}

/// One record in `list` JSON: the SPEC §5 list keys plus the record's own.
#[derive(Serialize)]
pub struct RecordListItem {
    pub store: &'static str,
    pub id: String,
    pub created: Option<String>,
    pub updated: Option<String>,
    pub tags: Vec<String>,
    pub category: Option<String>,
    pub summary: String,
    pub decay_protected: bool,
    pub path: String,
    pub line: usize,
    pub subject: String,
    pub votes: Votes,
}

impl RecordListItem {
    pub fn new(r: &Record<'_>, path: &str) -> RecordListItem {
        let f = &r.fields;
        RecordListItem {
            store: STORE,
            id: r.id.to_string(),
            created: f.created.as_deref().map(str::to_string),
            updated: f.updated.as_deref().map(str::to_string),
            tags: Vec::new(),
            category: f.category.as_deref().map(str::to_string),
            summary: summary(&f.fact),
            decay_protected: false,
            path: path.to_string(),
            line: r.line(),
            subject: f.subject.to_string(),
            votes: f.votes,
        }
    }
}

/// Returns the human `list` lines of the Copilot store: a header, then one line per record in
/// file order.
pub fn list_text(ctx: &Ctx, all: &Records<'_>) -> String {
    let mut text = String::with_capacity(all.records.len() * 100 + 32);
    text.push_str(&format!("Copilot memories: {}\n\n", all.records.len()));
    for r in &all.records {
        let f = &r.fields;
        text.push_str("**");
        text.push_str(&ctx.style.clean(&r.id));
        text.push_str("**");
        if let Some(c) = f.created.as_deref() {
            text.push_str(&format!(" ({}", chars_prefix(c, 10)));
            if let Some(u) = f.updated.as_deref() {
                text.push_str(&format!(" → {}", chars_prefix(u, 10)));
            }
            text.push(')');
        }
        text.push_str(&format!(" [{}]", ctx.style.clean(&f.subject)));
        if f.votes != Votes::default() {
            text.push_str(&format!(" +{}/-{}", f.votes.up, f.votes.down));
        }
        text.push_str(" : ");
        text.push_str(&ctx.style.clean(&summary(&f.fact)));
        text.push('\n');
    }
    text
}

/// Returns the human `list` text when the Copilot store has no record.
pub fn empty_list_text(file: &JsonlFile) -> &'static str {
    if file.exists { "No Copilot memories found." } else { "No Copilot memories saved yet." }
}

/// Returns the human `recall` lines of one record.
pub fn recall_lines(ctx: &Ctx, r: &Record<'_>) -> Vec<String> {
    let f = &r.fields;
    let head = match f.created.as_deref() {
        Some(c) => format!("**Copilot memory {}** (created {})", r.id, chars_prefix(c, 10)),
        None => format!("**Copilot memory {}**", r.id),
    };
    let mut lines = vec![ctx.style.bold(&ctx.style.clean(&head)), format!("Subject: {}", ctx.style.clean(&f.subject))];
    if !f.citations.is_empty() {
        lines.push(format!("Citations: {}", ctx.style.clean(&f.citations.join(", "))));
    }
    lines.push(ctx.style.clean(&f.fact).into_owned());
    lines.push(String::new());
    lines
}

/// `kb show` of a record.
pub fn show(ctx: &Ctx, raw_id: &str) -> Result<ExitCode> {
    let id = raw_id.trim();
    let file = read(ctx)?;
    let all = Records::parse(&file);
    let r = match all.one(id) {
        Ok(r) => r,
        Err(e) => {
            warn_skipped(ctx, &all);
            return Err(e.into());
        }
    };
    if ctx.json {
        output::print_json(&RecordJson::new(r, &file.path))?;
        return Ok(ExitCode::SUCCESS);
    }
    let f = &r.fields;
    let title = format!("Copilot memory {} ({}:{})", ctx.style.clean(&r.id), ctx.rel(&file.path), r.line());
    let mut text = format!("{}\n", ctx.style.bold(&title));
    text.push_str(&format!("Subject: {}\n", ctx.style.clean(&f.subject)));
    for (label, value) in [
        ("Created", f.created.as_deref()),
        ("Updated", f.updated.as_deref()),
        ("Category", f.category.as_deref()),
        ("Source", f.source.as_deref()),
    ] {
        if let Some(v) = value {
            text.push_str(&format!("{label}: {}\n", ctx.style.clean(v)));
        }
    }
    if !f.citations.is_empty() {
        text.push_str(&format!("Citations: {}\n", ctx.style.clean(&f.citations.join(", "))));
    }
    if let Some(reason) = f.reason.as_deref() {
        text.push_str(&format!("Reason: {}\n", ctx.style.clean(reason)));
    }
    if f.votes != Votes::default() {
        text.push_str(&format!("Votes: {} up, {} down\n", f.votes.up, f.votes.down));
    }
    text.push('\n');
    text.push_str(&ctx.style.clean(&f.fact));
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct ForgetJson {
    deleted: String,
    path: String,
    line: usize,
    store: &'static str,
}

/// `kb forget` of a record.
pub fn forget(ctx: &Ctx, raw_id: &str) -> Result<ExitCode> {
    let out = store(ctx)?.forget(raw_id.trim())?;
    if ctx.json {
        output::print_json(&ForgetJson {
            deleted: out.id,
            path: super::abs(&out.path).display().to_string(),
            line: out.line,
            store: STORE,
        })?;
    } else {
        output::print(&format!(
            "{} Deleted Copilot memory {} [{}] (line {} of {})",
            ctx.style.ok("✓"),
            ctx.style.clean(&out.id),
            ctx.style.clean(&out.subject),
            out.line,
            ctx.rel(&out.path)
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `save --store copilot` JSON: SPEC §5's save keys, the id a string, plus `line` and `store`.
#[derive(Serialize)]
struct SaveJson {
    action: &'static str,
    memory_id: String,
    path: String,
    line: usize,
    similarity: Option<f64>,
    decayed: usize,
    decay_strategy: Option<&'static str>,
    redacted: Vec<&'static str>,
    store: &'static str,
}

/// `kb save --store copilot`.
pub fn save(ctx: &Ctx, args: SaveArgs, fact: String) -> Result<ExitCode> {
    let req = RecordRequest {
        subject: args.subject.unwrap_or_default(),
        fact,
        citations: args.citation,
        reason: args.reason.unwrap_or_default(),
        category: args.category,
        dry_run: args.dry_run,
        redact: args.redact,
    };
    let out = store(ctx)?.save(req, ctx.now)?;
    let location = format!("{}:{}", super::abs(&out.path).display(), out.line);
    if ctx.json {
        let action = match (out.consolidated, out.dry_run) {
            (true, false) => "consolidated",
            (true, true) => "would_consolidate",
            (false, false) => "saved",
            (false, true) => "would_save",
        };
        output::print_json(&SaveJson {
            action,
            memory_id: out.id,
            path: super::abs(&out.path).display().to_string(),
            line: out.line,
            similarity: out.similarity,
            decayed: 0,
            decay_strategy: None,
            redacted: out.redacted,
            store: STORE,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let mark = ctx.style.ok("✓");
    let id = ctx.style.clean(&out.id);
    let text = match (out.consolidated, out.dry_run) {
        (true, false) => format!("{mark} Updated Copilot memory {id} (consolidated duplicate)\nLocation: {location}"),
        (true, true) => format!(
            "Would update Copilot memory {id} (consolidated duplicate, similarity {:.1})\nLocation: {location}",
            out.similarity.unwrap_or_default()
        ),
        (false, false) => format!("{mark} Saved Copilot memory {id}\nLocation: {location}"),
        (false, true) => format!("Would save Copilot memory {id}\nLocation: {location}"),
    };
    if !out.redacted.is_empty() {
        ctx.style.warn(&format!("redacted secrets matching: {}", out.redacted.join(", ")));
    }
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `kb check` of the JSONL file: every problem line (path, line, message) and each id written
/// on more than one line. Returns the number of files checked (0 or 1).
pub fn check(ctx: &Ctx, problems: &mut Vec<(PathBuf, Option<usize>, String)>) -> usize {
    let path = ctx.layout.copilot_memories();
    let file = match JsonlFile::read(&path) {
        Ok(f) if f.exists => f,
        Ok(_) => return 0,
        Err(e) => {
            problems.push((path, None, format!("cannot read: {e}")));
            return 1;
        }
    };
    let all = Records::parse(&file);
    let mut found: Vec<(usize, String)> = all.problems.iter().map(|p| (p.line, p.message.clone())).collect();
    for (id, lines) in all.duplicate_ids() {
        for &line in &lines {
            let others: Vec<String> = lines.iter().filter(|l| **l != line).map(|l| l.to_string()).collect();
            found.push((line, format!("duplicate id {id}: also on line {}", others.join(", "))));
        }
    }
    found.sort_by_key(|(line, _)| *line);
    problems.extend(found.into_iter().map(|(line, message)| (path.clone(), Some(line), message)));
    1
}
