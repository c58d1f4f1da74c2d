//! `kb undo` and `kb undo --list` (docs/behaviour.md, Undo): the journal (`crate::journal`) does the
//! recording and the restoring; this module adds the one check that needs the memory store (a
//! memory put back must not share its id with one saved since) and shapes the reports.

use super::{Report, View, abs, plural};
use crate::error::KbError;
use crate::journal::{self, Action, Entry};
use crate::memories::file;
use crate::repo::Repo;
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};
use std::path::PathBuf;

/// One journal entry in JSON: `{"id":N, "op":S, "what":S, "at":TS, "complete":bool,
/// "path":ABS, "files":[{"path":ABS, "action":"created"|"changed"|"removed"}...]}`.
#[derive(Serialize)]
pub struct EntryJson {
    id: u64,
    op: String,
    what: String,
    at: String,
    complete: bool,
    path: String,
    files: Vec<FileJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    damaged: Option<String>,
}

#[derive(Serialize)]
struct FileJson {
    path: String,
    action: Action,
    #[serde(skip)]
    file: PathBuf,
}

impl EntryJson {
    fn of(e: &Entry) -> EntryJson {
        EntryJson {
            id: e.seq,
            op: e.op.clone(),
            what: e.what.clone(),
            at: e.at.clone(),
            complete: e.complete,
            path: abs(&e.path),
            files: e
                .files
                .iter()
                .map(|f| FileJson { path: abs(&f.path), action: f.action(), file: f.path.clone() })
                .collect(),
            damaged: e.damaged.clone(),
        }
    }

    /// Writes `id  at  op: what (N files)` and, indented, each file with what happened to it.
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let mut notes = Vec::new();
        if !self.complete {
            notes.push("interrupted".to_string());
        }
        if let Some(d) = &self.damaged {
            notes.push(format!("damaged: {d}"));
        }
        let notes = if notes.is_empty() { String::new() } else { format!(" [{}]", notes.join("; ")) };
        writeln!(
            w,
            "{:>4}  {}  {}: {} ({}){notes}",
            self.id,
            short_time(&self.at),
            v.clean(&self.op),
            v.clean(&self.what),
            plural(self.files.len(), "file")
        )?;
        for f in &self.files {
            writeln!(w, "      {:<8} {}", f.action.as_str(), v.clean(&v.rel(&f.file)))?;
        }
        Ok(())
    }
}

/// Returns `2026-11-22 12:00:00` for a journal timestamp.
fn short_time(at: &str) -> String {
    match crate::format::time::parse(at) {
        Ok(t) => t.with_timezone(&chrono::Utc).format("%Y-%m-%d %H:%M:%S").to_string(),
        Err(_) => at.to_string(),
    }
}

/// `kb undo --list`. JSON: `{"count":N, "limit":50, "entries":[ENTRY...]}`, newest first.
#[derive(Serialize)]
pub struct ListReport {
    count: usize,
    limit: usize,
    entries: Vec<EntryJson>,
}

/// Lists the journal entries, newest first.
pub fn list(repo: &Repo) -> Result<ListReport> {
    let entries: Vec<EntryJson> = journal::entries(repo)?.iter().rev().map(EntryJson::of).collect();
    Ok(ListReport { count: entries.len(), limit: journal::KEEP, entries })
}

impl Report for ListReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        if self.entries.is_empty() {
            return writeln!(w, "Nothing to undo: the journal is empty.");
        }
        for e in &self.entries {
            e.render(v, w)?;
        }
        Ok(())
    }
}

/// `kb undo`. JSON: `{"undone":ENTRY, "restored":[ABS...], "removed":[ABS...],
/// "unchanged":[ABS...]}`: the files put back as they were, the files the operation had created
/// (now removed), and those already in their prior state.
#[derive(Serialize)]
pub struct UndoReport {
    undone: EntryJson,
    restored: Vec<String>,
    removed: Vec<String>,
    unchanged: Vec<String>,
    /// Each file with what undo did to it, for the text.
    #[serde(skip)]
    done: Vec<(&'static str, PathBuf)>,
}

/// Undoes the newest journal entry under the lock: every file it changed or removed back byte
/// for byte, every file it created removed, then the entry removed. Refuses (nothing restored)
/// when a file changed since, when a memory put back would share its id with one saved since, or
/// when the journal is empty.
pub fn undo(repo: &Repo) -> Result<UndoReport> {
    let lock = repo.lock()?;
    let Some(plan) = journal::plan_undo(repo, &lock)? else {
        return Err(KbError::Invalid("nothing to undo: the journal is empty".into()).into());
    };
    check_ids(repo, &plan)?;
    journal::restore(repo, &plan)?;
    let paths = |v: &[PathBuf]| v.iter().map(|p| abs(p)).collect::<Vec<_>>();
    let restored: Vec<PathBuf> = plan.restore.iter().map(|f| f.path.clone()).collect();
    let done = [("restored", &restored), ("removed", &plan.remove), ("unchanged", &plan.unchanged)]
        .into_iter()
        .flat_map(|(what, files)| files.iter().map(move |p| (what, p.clone())))
        .collect();
    Ok(UndoReport {
        undone: EntryJson::of(&plan.entry),
        restored: paths(&restored),
        removed: paths(&plan.remove),
        unchanged: paths(&plan.unchanged),
        done,
    })
}

/// Fails when a memory file the plan puts back carries an id that another memory, not part of
/// the entry, holds now (saved after the operation that removed it): putting it back would make
/// a duplicate id.
fn check_ids(repo: &Repo, plan: &journal::Plan) -> Result<()> {
    let dir = repo.layout.memories();
    let back: Vec<(u64, &PathBuf)> = plan
        .restore
        .iter()
        .filter(|f| f.path.parent() == Some(dir.as_path()) && !f.path.exists())
        .filter_map(|f| {
            let text = crate::format::text::decode(f.prior_bytes()?).ok()?;
            Some((file::parse(text).ok()?.id, &f.path))
        })
        .collect();
    if back.is_empty() {
        return Ok(());
    }
    let index = crate::memories::store::MemoryStore::new(repo).scan()?;
    let in_entry = |name: &str| plan.entry.files.iter().any(|f| f.path == index.dir.join(name));
    for (id, path) in back {
        if let Some(other) = index.by_id(id).into_iter().find(|m| !in_entry(m.file_name)) {
            return Err(KbError::Invalid(format!(
                "cannot undo {} ({}): it would put back {} with id {id}, which {} (saved since) holds; nothing restored",
                plan.entry.op,
                plan.entry.what,
                super::file_name(path),
                other.file_name
            ))
            .into());
        }
    }
    Ok(())
}

impl Report for UndoReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let e = &self.undone;
        let mark = v.style.ok("✓");
        writeln!(w, "{mark} Undid {}: {} ({})", v.clean(&e.op), v.clean(&e.what), short_time(&e.at))?;
        let count = |n: usize, verb: &str| (n > 0).then(|| format!("{verb} {}", plural(n, "file")));
        let parts: Vec<String> = [count(self.restored.len(), "restored"), count(self.removed.len(), "removed")]
            .into_iter()
            .flatten()
            .collect();
        if parts.is_empty() {
            writeln!(w, "Every file was already as before.")?;
        } else {
            writeln!(w, "{}.", capitalise(&parts.join(", ")))?;
        }
        for (what, path) in &self.done {
            writeln!(w, "  {what:<9} {}", v.clean(&v.rel(path)))?;
        }
        Ok(())
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
