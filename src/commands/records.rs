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
use std::io::{self, Write};
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

pub use crate::output::{print_json as print_json_stream, stream};

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
    pub fn new(all: &Records<'_>, r: &Record<'_>) -> RecordJson {
        let f = all.fields(r);
        let owned = |s: Option<&str>| s.map(str::to_string);
        RecordJson {
            store: STORE,
            id: r.id.to_string(),
            path: super::abs(&all.file.path).display().to_string(),
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
        }
    }
}

/// One record in `list` JSON: the SPEC §5 list keys plus the record's own, borrowed.
#[derive(Serialize)]
pub struct RecordListItem<'r> {
    pub store: &'static str,
    pub id: &'r str,
    pub created: Option<&'r str>,
    pub updated: Option<&'r str>,
    pub tags: &'static [String],
    pub category: Option<&'r str>,
    pub summary: String,
    pub decay_protected: bool,
    pub path: &'r str,
    pub line: usize,
    pub subject: &'r str,
    pub votes: Votes,
}

impl<'r> RecordListItem<'r> {
    pub fn new(r: &Record<'r>, path: &'r str) -> RecordListItem<'r> {
        RecordListItem {
            store: STORE,
            id: r.id,
            created: r.created,
            updated: r.updated,
            tags: &[],
            category: r.category,
            summary: summary(r.fact),
            decay_protected: false,
            path,
            line: r.line(),
            subject: r.subject,
            votes: r.votes,
        }
    }
}

/// Writes the human `list` of the Copilot store: a header, then one line per record in file order.
pub fn write_list(ctx: &Ctx, all: &Records<'_>, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "Copilot memories: {}\n", all.len())?;
    for r in all.iter() {
        write!(w, "**{}**", ctx.style.clean(r.id))?;
        if let Some(c) = r.created {
            write!(w, " ({}", chars_prefix(c, 10))?;
            if let Some(u) = r.updated {
                write!(w, " → {}", chars_prefix(u, 10))?;
            }
            w.write_all(b")")?;
        }
        write!(w, " [{}]", ctx.style.clean(r.subject))?;
        if r.votes != Votes::default() {
            write!(w, " +{}/-{}", r.votes.up, r.votes.down)?;
        }
        writeln!(w, " : {}", ctx.style.clean(&summary(r.fact)))?;
    }
    Ok(())
}

/// Returns the human `list` text when the Copilot store has no record.
pub fn empty_list_text(file: &JsonlFile) -> &'static str {
    if file.exists { "No Copilot memories found." } else { "No Copilot memories saved yet." }
}

/// Returns the human `recall` lines of one record.
pub fn recall_lines(ctx: &Ctx, all: &Records<'_>, r: &Record<'_>) -> Vec<String> {
    let head = match r.created {
        Some(c) => format!("**Copilot memory {}** (created {})", r.id, chars_prefix(c, 10)),
        None => format!("**Copilot memory {}**", r.id),
    };
    let mut lines = vec![ctx.style.bold(&ctx.style.clean(&head)), format!("Subject: {}", ctx.style.clean(r.subject))];
    let citations = all.fields(r).citations;
    if !citations.is_empty() {
        lines.push(format!("Citations: {}", ctx.style.clean(&citations.join(", "))));
    }
    lines.push(ctx.style.clean(r.fact).into_owned());
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
        output::print_json(&RecordJson::new(&all, &r))?;
        return Ok(ExitCode::SUCCESS);
    }
    let f = all.fields(&r);
    let title = format!("Copilot memory {} ({}:{})", ctx.style.clean(r.id), ctx.rel(&file.path), r.line());
    let mut text = format!("{}\n", ctx.style.bold(&title));
    text.push_str(&format!("Subject: {}\n", ctx.style.clean(r.subject)));
    for (label, value) in
        [("Created", r.created), ("Updated", r.updated), ("Category", r.category), ("Source", f.source.as_deref())]
    {
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
    if r.votes != Votes::default() {
        text.push_str(&format!("Votes: {} up, {} down\n", r.votes.up, r.votes.down));
    }
    text.push('\n');
    text.push_str(&ctx.style.clean(r.fact));
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
pub struct SaveJson {
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
    if !out.redacted.is_empty() {
        ctx.style.warn(&format!("redacted secrets matching: {}", out.redacted.join(", ")));
    }
    let (text, json) = save_report(ctx, out);
    if ctx.json {
        output::print_json(&json)?;
    } else {
        output::print(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Returns what a record save prints: the display text and the JSON. `kb mcp` returns both.
pub fn save_report(ctx: &Ctx, out: crate::copilot::RecordSaveOutcome) -> (String, SaveJson) {
    let path = super::abs(&out.path).display().to_string();
    let location = format!("{path}:{}", out.line);
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
    let json = SaveJson {
        action: super::save_action(out.consolidated, out.dry_run),
        memory_id: out.id,
        path,
        line: out.line,
        similarity: out.similarity,
        decayed: 0,
        decay_strategy: None,
        redacted: out.redacted,
        store: STORE,
    };
    (text, json)
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
    let all = Records::parse_checked(&file);
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
