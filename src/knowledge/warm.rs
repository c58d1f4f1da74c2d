//! What a long-running reader (`kb mcp`) keeps between requests, so that a request answers from
//! memory instead of proving every file again (docs/mcp.md, A long-running server answers from
//! memory): the settings, the memory index, the Copilot records, the decisions, the sessions, the
//! context files, the scoped instructions, and the recall corpus over all of them.
//!
//! The files stay the truth. Every part is read once, then kept fresh from what changed:
//!
//! - [`Warm::note`] takes a batch of file events (`knowledge::watch::Changes`) and marks what they
//!   touch: a memory file by its name, any other input by the part it belongs to, and a folder
//!   (created, removed, moved) or lost events as everything below it;
//! - [`Warm::refresh`] reads what is marked: a memory file alone (a stat and a read, not a scan of
//!   the folder), a small part whole (the records, the decisions, the sessions, the context files,
//!   the instructions, the settings), and updates the recall corpus by the documents that changed;
//! - [`revalidate`] is the safety net for what events missed: it lists and stats the memories
//!   folder without holding the state, then reads again only the files whose stamps differ, and
//!   every small part.
//!
//! A request refreshes what is marked before it reads, so an answer never lags behind an event
//! that has arrived. Writes made through kb (a save, a forget) mark their parts the same way.

use super::Held;
use super::corpus::{LiveCorpus, Parts};
use crate::kinds::Store;
use crate::memories::index::{Index, Listing};
use crate::paths::Layout;
use crate::repo::Repo;
use crate::settings::{Environment, Settings};
use anyhow::Result;
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The parts of the state that must be read again before the next answer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Marks {
    settings: bool,
    /// The whole memories folder (it appeared, went away, or events were lost in it).
    memories: bool,
    /// Memory files by name.
    names: Vec<String>,
    records: bool,
    decisions: bool,
    sessions: bool,
    sources: bool,
    instructions: bool,
}

impl Marks {
    fn all() -> Marks {
        Marks {
            settings: true,
            memories: true,
            names: Vec::new(),
            records: true,
            decisions: true,
            sessions: true,
            sources: true,
            instructions: true,
        }
    }

    fn none() -> Marks {
        Marks {
            settings: false,
            memories: false,
            names: Vec::new(),
            records: false,
            decisions: false,
            sessions: false,
            sources: false,
            instructions: false,
        }
    }

    fn is_empty(&self) -> bool {
        *self == Marks::none()
    }
}

/// Everything a request reads, held between requests.
pub struct Warm {
    layout: Layout,
    env: Environment,
    marks: Marks,
    settings: Option<Settings>,
    /// Every source a request reads (the memory index is `Some` once warm).
    held: Held,
    corpus: Option<LiveCorpus>,
}

impl std::fmt::Debug for Warm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Warm").field("root", &self.layout.root).field("marks", &self.marks).finish_non_exhaustive()
    }
}

impl Warm {
    /// Returns a cold state: nothing read yet; the first [`Warm::refresh`] reads everything.
    pub fn new(layout: Layout, env: Environment) -> Warm {
        Warm { layout, env, marks: Marks::all(), settings: None, held: Held::default(), corpus: None }
    }

    /// Returns how many memories, records and decisions are held, for the server's log.
    pub fn sizes(&self) -> (usize, usize, usize) {
        let memories = self.held.index.as_ref().map_or(0, Index::len);
        let records = self.held.records.as_ref().map_or(0, |f| crate::copilot::Records::parse(f).iter().count());
        let decisions = self.held.decisions.as_ref().map_or(0, |s| s.decisions.len());
        (memories, records, decisions)
    }

    /// Returns the bytes the memory index and the recall corpus (its pairs, and the rest) hold.
    pub fn heap_bytes(&self) -> (usize, usize, usize) {
        let index = self.held.index.as_ref().map_or(0, Index::heap_bytes);
        let (pairs, rest) = self.corpus.as_ref().map_or((0, 0), LiveCorpus::heap_bytes);
        (index, pairs, rest)
    }

    /// Marks what a batch of file events touched.
    pub fn note(&mut self, changes: &super::watch::Changes) {
        if changes.rescan {
            // Events were lost: the small parts are read again at once, the memory files by the
            // revalidation the watcher thread runs now (a stat of each, not a new index).
            let m = &mut self.marks;
            (m.settings, m.records, m.decisions, m.sessions, m.sources, m.instructions) =
                (true, true, true, true, true, true);
            return;
        }
        for path in &changes.paths {
            let folder = changes.folders.contains(path);
            self.mark(path, folder);
        }
    }

    /// Marks what a change at `path` touches; `folder` when it is a folder that appeared, moved
    /// or went away.
    fn mark(&mut self, path: &Path, folder: bool) {
        let l = &self.layout;
        let memories = l.memories();
        if !folder
            && path.parent() == Some(memories.as_path())
            && let Some(name) = path.file_name().and_then(|n| n.to_str())
        {
            if !self.marks.names.iter().any(|n| n == name) {
                self.marks.names.push(name.to_string());
            }
            return;
        }
        // A path at or above a part's location touches it (a folder event covers what is below).
        let touches = |location: &Path| location.starts_with(path) || (!folder && path.starts_with(location));
        let m = &mut self.marks;
        m.settings |= touches(&l.project_settings()) || l.global_settings().is_some_and(|g| touches(&g));
        m.memories |= touches(&memories);
        m.records |= touches(&l.copilot_memories());
        m.sources |= m.records || touches(&l.project_context()) || l.global_context().is_some_and(|g| touches(&g));
        m.decisions |= touches(&l.decisions());
        m.sessions |= touches(&l.session()) || touches(&l.sessions());
        m.instructions |= touches(&l.instructions());
    }

    /// Reads again what is marked, and returns a repository for one request: the held settings,
    /// the clock `now`, and `env` (who is asking). An invalid settings file is an error, as for a
    /// command.
    pub fn repo(&mut self, now: DateTime<Utc>, env: Environment) -> Result<Repo> {
        self.refresh()?;
        let settings = self.settings.clone().ok_or_else(|| anyhow::anyhow!("the settings could not be read"))?;
        Ok(Repo { layout: self.layout.clone(), settings, now, env })
    }

    /// Reads again everything marked, and brings the recall corpus up to date.
    pub fn refresh(&mut self) -> Result<()> {
        self.refresh_with(true)
    }

    /// Reads again everything marked and drops the recall corpus, which the next refresh builds
    /// again: the server's first reading, whose revalidation lists every file before the corpus
    /// is held beside the memory index (both at once would raise the server's peak memory).
    pub fn refresh_files(&mut self) -> Result<()> {
        self.refresh_with(false)
    }

    fn refresh_with(&mut self, corpus: bool) -> Result<()> {
        if self.marks.is_empty() && self.corpus.is_some() == corpus {
            return Ok(());
        }
        let marks = std::mem::replace(&mut self.marks, Marks::none());
        let result = self.read_marked(&marks, corpus);
        if result.is_err() {
            // Nothing is lost: what could not be read stays marked for the next request (reading
            // a part again is harmless).
            self.marks = marks;
        }
        result
    }

    fn read_marked(&mut self, marks: &Marks, corpus: bool) -> Result<()> {
        if marks.settings || self.settings.is_none() {
            self.settings = None;
            self.settings = Some(Settings::load(&self.layout, &crate::settings::env)?);
        }
        let repo = Repo {
            layout: self.layout.clone(),
            settings: self.settings.clone().unwrap_or_default(),
            now: crate::format::time::now(),
            env: self.env.clone(),
        };
        let held = &mut self.held;
        let whole = marks.memories || held.index.is_none();
        if whole {
            let mut index = crate::memories::store::MemoryStore::new(&repo).scan()?;
            index.map_names();
            held.index = Some(index);
        } else if let Some(index) = &mut held.index {
            index.refresh(&marks.names, &self.layout.root);
        }
        if marks.records {
            let path = self.layout.copilot_memories();
            held.records = crate::copilot::JsonlFile::read(&path, &self.layout.root).map_err(|e| e.to_string());
        }
        if marks.decisions {
            held.decisions = crate::decisions::DecisionStore::new(&repo).scan().map_err(|e| e.to_string());
        }
        if marks.sessions {
            held.sessions = super::read_sessions(&self.layout);
            held.session = crate::session::current(&self.layout);
        }
        if marks.sources {
            held.sources = super::context_files::load(&self.layout);
        }
        if marks.instructions {
            held.instructions = crate::instructions::load(&self.layout);
        }
        if !corpus {
            self.corpus = None;
            return Ok(());
        }
        let parts = parts(held);
        match &mut self.corpus {
            Some(corpus) if !whole => {
                if let Some(index) = parts.index {
                    corpus.sync_memories(index, &marks.names);
                }
                for (marked, source) in [
                    (marks.records, Store::Copilot),
                    (marks.decisions, Store::Decision),
                    (marks.sessions, Store::Session),
                ] {
                    if marked {
                        corpus.sync_source(source, parts);
                    }
                }
            }
            _ => self.corpus = Some(LiveCorpus::build(&repo, parts)),
        }
        Ok(())
    }

    /// Returns what the state holds, lent to one request's view of the knowledge (`None` before
    /// the first refresh).
    pub fn knowledge<'r>(&'r self, repo: &'r Repo) -> Option<super::Knowledge<'r>> {
        super::Knowledge::lent(repo, &self.held, self.corpus.as_ref())
    }
}

/// Returns every document source `held` has, as the recall corpus reads them.
fn parts(held: &Held) -> Parts<'_> {
    Parts {
        index: held.index.as_ref(),
        file: held.records.as_ref().ok(),
        decisions: held.decisions.as_ref().map_or(&[][..], |s| s.decisions.as_slice()),
        sessions: &held.sessions.0,
    }
}

/// Runs a write `f` (a save, a forget, a decision, a session update) and marks the files its
/// transactions changed, so the next request reads them without waiting for their file events.
pub fn write<R>(warm: &Mutex<Warm>, f: impl FnOnce() -> R) -> R {
    let (result, paths) = crate::journal::recording(f);
    let mut w = lock(warm);
    for path in paths {
        w.mark(&path, false);
    }
    result
}

/// Catches what file events missed: lists and stats the memories folder without holding `warm`,
/// then, holding it, reads again the memory files whose stamps differ and every small part.
/// Returns how many memory files were read again.
pub fn revalidate(warm: &Mutex<Warm>) -> Result<usize> {
    let dir: PathBuf = lock(warm).layout.memories();
    let listing = Listing::of(&dir).map_err(crate::error::io_at(&dir))?;
    let mut w = lock(warm);
    let read = w.mark_listed(&listing, dir.is_dir());
    // A listing of every file is not held while the files are read again.
    drop(listing);
    w.refresh()?;
    Ok(read)
}

impl Warm {
    /// [`revalidate`] while the state is held (at start, when requests wait anyway).
    pub fn revalidate_held(&mut self) -> Result<usize> {
        let dir = self.layout.memories();
        let listing = Listing::of(&dir).map_err(crate::error::io_at(&dir))?;
        let read = self.mark_listed(&listing, dir.is_dir());
        drop(listing);
        self.refresh()?;
        Ok(read)
    }

    /// Marks the memory files `listing` shows changed since they were read (or the whole folder,
    /// when it appeared or went away) and every small part; returns how many files it marked.
    fn mark_listed(&mut self, listing: &Listing, dir_is: bool) -> usize {
        let mut names = Vec::new();
        match &mut self.held.index {
            Some(index) if index.dir_exists == dir_is => names = index.changed(listing),
            _ => self.marks.memories = true,
        }
        let read = names.len();
        let m = &mut self.marks;
        m.names.extend(names);
        (m.settings, m.records, m.decisions, m.sessions, m.sources, m.instructions) =
            (true, true, true, true, true, true);
        read
    }
}

/// Takes the state's lock; a panic while it was held (a bug) leaves a state that is still whole
/// (every change is applied in one piece), so the lock is taken anyway.
pub fn lock(warm: &Mutex<Warm>) -> std::sync::MutexGuard<'_, Warm> {
    warm.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::watch::Changes;

    /// Notes one change at `path` (a folder event when `folder`) in a state with nothing marked,
    /// and returns the marks.
    fn marks_of(w: &mut Warm, path: PathBuf, folder: bool) -> Marks {
        w.marks = Marks::none();
        let folders = if folder { vec![path.clone()] } else { Vec::new() };
        w.note(&Changes { paths: vec![path], folders, rescan: false });
        std::mem::replace(&mut w.marks, Marks::none())
    }

    #[test]
    fn events_mark_what_they_touch() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout { root: dir.path().join("repo"), config: Some(dir.path().join("config")) };
        let l = layout.clone();
        let mut w = Warm::new(layout, Environment::default());
        let only = |f: fn(&mut Marks)| {
            let mut m = Marks::none();
            f(&mut m);
            m
        };
        let memory = marks_of(&mut w, l.memories().join("001-a.md"), false);
        assert_eq!(memory, Marks { names: vec!["001-a.md".into()], ..Marks::none() });
        let m = marks_of(&mut w, l.copilot_memories(), false);
        assert_eq!(m, only(|m| (m.records, m.sources) = (true, true)));
        assert_eq!(marks_of(&mut w, l.decisions().join("003-x.md"), false), only(|m| m.decisions = true));
        assert_eq!(marks_of(&mut w, l.session(), false), only(|m| m.sessions = true));
        assert_eq!(marks_of(&mut w, l.sessions().join("2026-11-01.md"), false), only(|m| m.sessions = true));
        let instruction = l.instructions().join("api.instructions.md");
        assert_eq!(marks_of(&mut w, instruction, false), only(|m| m.instructions = true));
        assert_eq!(marks_of(&mut w, l.project_settings(), false), only(|m| m.settings = true));
        assert_eq!(marks_of(&mut w, l.project_context(), false), only(|m| m.sources = true));
        let global = l.global_context().unwrap();
        assert_eq!(marks_of(&mut w, global, false), only(|m| m.sources = true));
        // A folder that appeared or went away: everything below it.
        let co_cli = marks_of(&mut w, l.co_cli(), true);
        let below = |m: &mut Marks| {
            (m.settings, m.memories, m.decisions, m.sessions, m.sources) = (true, true, true, true, true);
        };
        assert_eq!(co_cli, only(below));
        assert_eq!(marks_of(&mut w, l.memories(), true), only(|m| m.memories = true));
        // Lost events: every small part; the memory files are left to the revalidation.
        w.marks = Marks { names: vec!["002-b.md".into()], ..Marks::none() };
        w.note(&Changes { rescan: true, ..Changes::default() });
        assert_eq!(w.marks, Marks { names: vec!["002-b.md".into()], memories: false, ..Marks::all() });
    }
}
