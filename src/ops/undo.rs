//! `kb undo`, `kb undo --list` and `kb undo --drop` (docs/behaviour.md, Undo): the journal
//! (`crate::journal`) does the recording and the restoring; this module adds what needs a store:
//! the check that a memory put back does not share its id with one saved since, and the board
//! items a `kb consolidate` pruned put back into a board changed since; and it shapes the reports.

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
/// "path":ABS, "files":[{"path":ABS, "action":"created"|"changed"|"removed"}...]}`, and
/// `"saved":S` for a consolidating save (the text it stored, which undoing it takes away) and
/// `"damaged":S` for an entry that cannot be used.
#[derive(Serialize)]
pub struct EntryJson {
    id: u64,
    op: String,
    what: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    saved: Option<String>,
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
            saved: e.saved.clone(),
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
/// "unchanged":[ABS...], "put_back":[NAME...]}`: the files put back as they were, the files the
/// operation had created (now removed), those already in their prior state, and the board items
/// a `kb consolidate` pruned that went back into a board changed since (its file is among
/// `restored`).
#[derive(Serialize)]
pub struct UndoReport {
    undone: EntryJson,
    restored: Vec<String>,
    removed: Vec<String>,
    unchanged: Vec<String>,
    put_back: Vec<String>,
    /// Each file with what undo did to it, for the text.
    #[serde(skip)]
    done: Vec<(&'static str, PathBuf)>,
}

/// The error when there is no entry to undo or drop.
fn nothing_to_undo() -> anyhow::Error {
    KbError::refused("undo", "nothing to undo: the journal is empty").into()
}

/// Undoes the newest journal entry under the lock: every file it changed or removed back byte
/// for byte, every file it created removed, the board items a `kb consolidate` pruned put back
/// into a board changed since, then the entry removed. Refuses (nothing restored) when a file
/// changed since, when a memory put back would share its id with one saved since, when a board
/// item put back has been written again since, or when the journal is empty.
pub fn undo(repo: &Repo) -> Result<UndoReport> {
    let lock = repo.lock()?;
    let Some(plan) = journal::plan_undo(repo, &lock)? else {
        return Err(nothing_to_undo());
    };
    check_ids(repo, &plan)?;
    let boards = plan_boards(repo, &plan)?;
    journal::restore_files(repo, &plan)?;
    for b in &boards {
        b.write(repo)?;
    }
    journal::discard(&plan.entry)?;
    let paths = |v: &[PathBuf]| v.iter().map(|p| abs(p)).collect::<Vec<_>>();
    let restored: Vec<PathBuf> = plan.restore.iter().chain(&plan.put_back).map(|f| f.path.clone()).collect();
    let done = [("restored", &restored), ("removed", &plan.remove), ("unchanged", &plan.unchanged)]
        .into_iter()
        .flat_map(|(what, files)| files.iter().map(move |p| (what, p.clone())))
        .collect();
    Ok(UndoReport {
        undone: EntryJson::of(&plan.entry),
        restored: paths(&restored),
        removed: paths(&plan.remove),
        unchanged: paths(&plan.unchanged),
        put_back: boards.into_iter().flat_map(|b| b.names).collect(),
        done,
    })
}

/// Plans putting the board items a `kb consolidate` pruned back into each board that changed
/// since (a counter bumped, an item added or removed): with their counters as they were,
/// whatever else changed. Fails, before anything is restored, when one cannot go back.
fn plan_boards(repo: &Repo, plan: &journal::Plan) -> Result<Vec<crate::board::PutBack>> {
    let refuse = |why: String| -> anyhow::Error {
        let why = format!("cannot undo {} ({}): {why}; nothing restored", plan.entry.op, plan.entry.what);
        KbError::refused("undo", why).into()
    };
    let mut out = Vec::new();
    for f in &plan.put_back {
        let rel = super::rel(&repo.layout.root, &f.path).into_owned();
        if !crate::board::is_board_path(&repo.layout, &f.path) {
            return Err(refuse(format!("{rel} changed since")));
        }
        let items = f
            .removed_items
            .iter()
            .map(|r| serde_json::from_value::<crate::board::Item>(r.item.clone()).map(|item| (r.at, item)))
            .collect::<serde_json::Result<Vec<_>>>()
            .map_err(|e| refuse(format!("the journal entry's board items do not read ({e})")))?;
        match crate::board::PutBack::plan(&repo.layout, &f.path, items) {
            Ok(b) => out.push(b),
            Err(e @ KbError::Refused { .. }) => return Err(refuse(format!("{e} on {rel}"))),
            Err(e) => return Err(refuse(crate::error::message(&anyhow::Error::from(e)))),
        }
    }
    Ok(out)
}

/// `kb undo --drop`. JSON: `{"dropped":ENTRY}`: the entry discarded, nothing restored.
#[derive(Serialize)]
pub struct DropReport {
    dropped: EntryJson,
}

/// Discards the newest journal entry without restoring anything, under the lock: for an entry
/// that can no longer apply (a file changed since, a damaged entry), so that `kb undo` reaches
/// the one before. Fails when the journal is empty.
pub fn drop_last(repo: &Repo) -> Result<DropReport> {
    let lock = repo.lock()?;
    let Some(entry) = journal::drop_last(repo, &lock)? else {
        return Err(nothing_to_undo());
    };
    Ok(DropReport { dropped: EntryJson::of(&entry) })
}

impl Report for DropReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let e = &self.dropped;
        let mark = v.style.ok("✓");
        writeln!(
            w,
            "{mark} Dropped journal entry {}: {}: {} ({})",
            e.id,
            v.clean(&e.op),
            v.clean(&e.what),
            short_time(&e.at)
        )?;
        writeln!(w, "Nothing restored: its files stay as they are.")
    }
}

/// Fails when a memory file the plan puts back carries an id that another memory, not part of
/// the entry, holds now (saved after the operation that removed it): putting it back would make
/// a duplicate id. Undoing `kb check --fix` is the exception: it brings back, by design, the
/// duplicate ids the repair resolved (the other holder is the memory that kept its id then, and
/// a save never takes an id some file holds).
fn check_ids(repo: &Repo, plan: &journal::Plan) -> Result<()> {
    if plan.entry.op == super::fix::OP {
        return Ok(());
    }
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
            return Err(KbError::refused(
                "undo",
                format!(
                    "cannot undo {} ({}): it would put back {} with id {id}, which {} (saved since) holds; nothing restored",
                    plan.entry.op,
                    plan.entry.what,
                    super::file_name(path),
                    other.file_name
                ),
            )
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
        if !self.put_back.is_empty() {
            let names: Vec<_> = self.put_back.iter().map(|n| v.clean(n)).collect();
            writeln!(
                w,
                "Put back {}: {} (the board changed since; its other items stay as they are).",
                plural(names.len(), "board item"),
                names.join(", ")
            )?;
        }
        if let Some(saved) = &e.saved {
            writeln!(
                w,
                "The text you saved is no longer stored: {}; save it again with --no-dedup to keep both.",
                v.clean(saved)
            )?;
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
