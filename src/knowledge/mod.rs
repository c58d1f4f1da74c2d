//! The one read model: every source of a repository's knowledge, as one lazily filled view
//! ([`Knowledge`]) that every reader takes: the compiler (`context`), recall, list and show, the
//! audit, the agents' projection and the MCP tools. A command reads a fresh view
//! ([`Knowledge::read`]); the warm server lends what it holds ([`Knowledge::lent`], no copy).
//! A new source is added here once, and every reader can have it.
//!
//! Each source is read at most once per view, on first use, and keeps its own diagnostics (the
//! files it skipped or read in part): the memory index, the Copilot records file, the decisions,
//! the open session and the ended ones, the context files, the scoped instructions, heat and the
//! board. Heat and the board are local state that changes with every read, so even a lent view
//! reads them anew. Nothing here writes knowledge: writes go through a `journal::Txn`.
//!
//! `warm` keeps a server's [`Held`] fresh from file events (`watch`), and `corpus` is the
//! recall index the server keeps beside it.

pub mod context_files;
pub mod corpus;
pub mod stale;
pub mod warm;
pub mod watch;

pub use context_files::Sources;

use crate::board::Board;
use crate::copilot::JsonlFile;
use crate::decisions::Scan;
use crate::error::Diagnostic;
use crate::heat::Heats;
use crate::instructions::Instructions;
use crate::memories::index::Index;
use crate::repo::Repo;
use crate::session::Located;
use anyhow::Result;
use std::sync::OnceLock;

/// The open session (when there is one) and the problems of its file.
pub type OpenSession = (Option<Located>, Vec<Diagnostic>);
/// The open session first, then the ended ones, and the problems of the files left out.
pub type Sessions = (Vec<Located>, Vec<Diagnostic>);

/// What a long-running reader (`kb mcp`) holds between requests, kept fresh by [`warm::Warm`]
/// and lent to a [`Knowledge`] for each request.
pub struct Held {
    /// The memory index (`None` until the first read).
    pub index: Option<Index>,
    /// The records file, or why it could not be read.
    pub records: std::result::Result<JsonlFile, String>,
    pub decisions: std::result::Result<Scan, String>,
    pub session: OpenSession,
    pub sessions: Sessions,
    pub sources: Sources,
    pub instructions: Instructions,
}

impl Default for Held {
    fn default() -> Held {
        Held {
            index: None,
            records: Ok(JsonlFile::from_bytes(std::path::PathBuf::new(), Vec::new(), false)),
            decisions: Ok(Scan::default()),
            session: (None, Vec::new()),
            sessions: (Vec::new(), Vec::new()),
            sources: Sources::default(),
            instructions: Instructions::default(),
        }
    }
}

/// A repository's knowledge as one reader sees it: each source read on first use (or lent by a
/// server that holds it), then kept for the rest of the view's life.
pub struct Knowledge<'r> {
    repo: &'r Repo,
    /// Whether the memory index may come from its cache alone ([`Knowledge::trusting`]).
    trusting: bool,
    /// Whether the scan leaves its cache write to [`Knowledge::write_pending_cache`].
    deferring: bool,
    lent: Option<(&'r Held, Option<&'r corpus::LiveCorpus>)>,
    index: OnceLock<Index>,
    records: OnceLock<std::result::Result<JsonlFile, String>>,
    decisions: OnceLock<Scan>,
    session: OnceLock<OpenSession>,
    sessions: OnceLock<Sessions>,
    sources: OnceLock<Sources>,
    instructions: OnceLock<Instructions>,
    heats: OnceLock<Heats>,
    board: OnceLock<(Board, Option<Diagnostic>)>,
    stale: OnceLock<stale::Stale>,
    shared: OnceLock<Vec<SharedView>>,
}

/// A shared source (docs/shared.md) as a view of its own: its files read as this repository's
/// are, read only. Its repository's settings are not read (only this repository's settings
/// decide what flows), and it has no shared sources of its own.
pub struct SharedView {
    pub name: String,
    pub source: crate::shared::Source,
    pub knowledge: Knowledge<'static>,
    /// The same files with the memory index taken from its cache while the memories folder is
    /// unchanged ([`Knowledge::trusting`]): what recall ranks first, checking the memories it
    /// shows, and falling back on `knowledge` when one changed.
    pub trusting: Knowledge<'static>,
    /// The memories a recall from the source's recall index alone showed, read from their
    /// files (`ops::recall`): the results borrow them.
    pub shown: OnceLock<Index>,
}

impl<'r> Knowledge<'r> {
    /// Returns a view of the repository's files, read as they are used.
    pub fn read(repo: &'r Repo) -> Knowledge<'r> {
        Knowledge {
            repo,
            trusting: false,
            deferring: false,
            lent: None,
            index: OnceLock::new(),
            records: OnceLock::new(),
            decisions: OnceLock::new(),
            session: OnceLock::new(),
            sessions: OnceLock::new(),
            sources: OnceLock::new(),
            instructions: OnceLock::new(),
            heats: OnceLock::new(),
            board: OnceLock::new(),
            stale: OnceLock::new(),
            shared: OnceLock::new(),
        }
    }

    /// Returns a view of the repository's files (as [`Knowledge::read`]) whose stale check
    /// (`Knowledge::stale`) looks at the files at `root` instead, the audit's verdicts read from
    /// `cache`: for files copied out of a git revision (`kb diff`), checked against the working
    /// tree they came from.
    pub fn read_checked_at(repo: &'r Repo, root: &std::path::Path, cache: Option<std::path::PathBuf>) -> Knowledge<'r> {
        let k = Knowledge::read(repo);
        let _ = k.stale.set(stale::Stale::at(root, cache));
        k
    }

    /// Returns this view with its memory index already made (`Index::from_files`: a git
    /// revision's memories, which were never written to a folder).
    pub fn with_memories(self, index: Index) -> Knowledge<'r> {
        let _ = self.index.set(index);
        self
    }

    /// Returns this view without this clone's local state: no heat and an empty board, so that
    /// blocks built from it hold only what is committed (`kb diff` compares two sides so).
    pub fn without_local_state(self) -> Knowledge<'r> {
        let _ = self.heats.set(Heats::default());
        let _ = self.board.set((Board::default(), None));
        self
    }

    /// Returns a view that takes the memory index from its cache without a stat of each file
    /// while the memories folder is unchanged ([`Index::scan_trusting`]): for a reader that must
    /// answer in milliseconds and checks the memories it shows with
    /// [`Knowledge::memories_unchanged`], reading again with [`Knowledge::read`] when one changed.
    pub fn trusting(repo: &'r Repo) -> Knowledge<'r> {
        Knowledge { trusting: true, ..Knowledge::read(repo) }
    }

    /// Returns a view whose memory scan leaves the cache it would write to
    /// [`Knowledge::write_pending_cache`] ([`Index::scan_deferring`]), for a command that writes
    /// it on another thread while it prints; the view must not change the memories before.
    pub fn deferring(repo: &'r Repo) -> Knowledge<'r> {
        Knowledge { deferring: true, ..Knowledge::read(repo) }
    }

    /// Writes the memory index cache a [`Knowledge::deferring`] view's scan left, if it left one;
    /// nothing for another view.
    pub fn write_pending_cache(&self) {
        if let (true, Some(index)) = (self.deferring, self.index.get()) {
            crate::memories::store::MemoryStore::new(self.repo).write_pending_cache(index);
        }
    }

    /// Returns whether the memory files named are as this view read them (see
    /// [`Index::unchanged`]); true when the view has not read the memories, or read them whole.
    pub fn memories_unchanged<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> bool {
        self.index.get().is_none_or(|index| index.unchanged(names))
    }

    /// Returns a view of what a server holds (and its recall corpus), borrowed; only heat and the
    /// board are read anew. `None` before the server's first read.
    pub fn lent(repo: &'r Repo, held: &'r Held, corpus: Option<&'r corpus::LiveCorpus>) -> Option<Knowledge<'r>> {
        held.index.as_ref()?;
        Some(Knowledge { lent: Some((held, corpus)), ..Knowledge::read(repo) })
    }

    /// The repository the view reads.
    pub fn repo(&self) -> &'r Repo {
        self.repo
    }

    fn held(&self) -> Option<&'r Held> {
        self.lent.map(|(h, _)| h)
    }

    /// The recall corpus a server keeps up to date, when the view is lent by one.
    pub fn corpus(&self) -> Option<&'r corpus::LiveCorpus> {
        self.lent.and_then(|(_, c)| c)
    }

    /// Returns the memory index (its diagnostics: `Index::problems`). A folder that cannot be
    /// listed is an error, and is tried again on the next call.
    pub fn memories(&self) -> Result<&Index> {
        if let Some(index) = self.held().and_then(|h| h.index.as_ref()) {
            return Ok(index);
        }
        if let Some(index) = self.index.get() {
            return Ok(index);
        }
        let store = crate::memories::store::MemoryStore::new(self.repo);
        let index = match (self.trusting, self.deferring) {
            (true, _) => store.scan_trusting()?,
            (false, true) => store.scan_deferring()?,
            (false, false) => store.scan()?,
        };
        Ok(self.index.get_or_init(|| index))
    }

    /// Returns the Copilot records file (empty when it does not exist), or why it cannot be read.
    pub fn records(&self) -> std::result::Result<&JsonlFile, &str> {
        let records = match self.held() {
            Some(h) => &h.records,
            None => self.records.get_or_init(|| {
                let l = &self.repo.layout;
                JsonlFile::read(&l.copilot_memories(), &l.root).map_err(|e| e.to_string())
            }),
        };
        records.as_ref().map_err(String::as_str)
    }

    /// Returns every decision (its diagnostics: `Scan::problems`). A folder that cannot be listed
    /// is an error.
    pub fn decisions(&self) -> Result<&Scan> {
        if let Some(h) = self.held() {
            return h.decisions.as_ref().map_err(|e| anyhow::anyhow!("{e}"));
        }
        if let Some(scan) = self.decisions.get() {
            return Ok(scan);
        }
        let scan = crate::decisions::DecisionStore::new(self.repo).scan()?;
        Ok(self.decisions.get_or_init(|| scan))
    }

    /// Returns the open session and the problems of its file.
    pub fn session(&self) -> &OpenSession {
        match self.held() {
            Some(h) => &h.session,
            None => self.session.get_or_init(|| crate::session::current(&self.repo.layout)),
        }
    }

    /// Returns the open session first, then the ended ones, and the problems of the files left out.
    pub fn sessions(&self) -> &Sessions {
        match self.held() {
            Some(h) => &h.sessions,
            None => self.sessions.get_or_init(|| read_sessions(&self.repo.layout)),
        }
    }

    /// Returns the context files and the records as the block reads them, with their warnings.
    pub fn sources(&self) -> &Sources {
        match self.held() {
            Some(h) => &h.sources,
            None => self.sources.get_or_init(|| context_files::load(&self.repo.layout)),
        }
    }

    /// Returns the scoped instruction files (their diagnostics: `Instructions::problems`).
    pub fn instructions(&self) -> &Instructions {
        match self.held() {
            Some(h) => &h.instructions,
            None => self.instructions.get_or_init(|| crate::instructions::load(&self.repo.layout)),
        }
    }

    /// Returns the heat of every memory the access log names within the heat window (its
    /// diagnostics: `Heats::problems`).
    pub fn heats(&self) -> &Heats {
        let settings = &self.repo.settings;
        self.heats
            .get_or_init(|| crate::heat::read(&self.repo.layout, settings.heat_window_days.value, crate::heat::WARM))
    }

    /// Returns the check of what the block includes against the working tree, as of this view:
    /// each cited path is looked at once per view (a server's view lasts one request).
    pub fn stale(&self) -> &stale::Stale {
        self.stale.get_or_init(|| stale::Stale::new(self.repo))
    }

    /// Returns the shared sources of the setting `shared` whose files are on this machine, each a
    /// view read as it is used (a missing copy is left out: `kb shared` and the commands' warning
    /// say so). Nothing here runs git.
    pub fn shared(&self) -> &[SharedView] {
        self.shared.get_or_init(|| {
            let specs = &self.repo.settings.shared.value;
            if specs.is_empty() {
                return Vec::new();
            }
            crate::shared::sources(&self.repo.layout, specs, self.repo.env.cache_home.as_deref())
                .into_iter()
                .filter(crate::shared::Source::present)
                .map(|source| {
                    let repo = shared_repo(self.repo, &source);
                    SharedView {
                        name: source.spec.name.clone(),
                        knowledge: Knowledge::read(repo),
                        trusting: Knowledge::trusting(repo),
                        shown: OnceLock::new(),
                        source,
                    }
                })
                .collect()
        })
    }

    /// Returns the shared source named `name`, when it is on this machine.
    pub fn shared_named(&self, name: &str) -> Option<&SharedView> {
        self.shared().iter().find(|v| v.name == name)
    }

    /// Returns the checked-out branch's context board, and why it could not be read.
    pub fn board(&self) -> &(Board, Option<Diagnostic>) {
        let layout = &self.repo.layout;
        self.board.get_or_init(|| crate::board::read(layout, &crate::board::current_branch(&layout.root)))
    }
}

/// The repository of a shared source, made once per process and kept for its life (a server
/// reads the same few sources on every request): its own layout, default settings, this
/// repository's clock and environment as they were when first made.
fn shared_repo(parent: &Repo, source: &crate::shared::Source) -> &'static Repo {
    use std::sync::{Mutex, OnceLock};
    static MADE: OnceLock<Mutex<Vec<&'static Repo>>> = OnceLock::new();
    let mut made = MADE.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(repo) = made.iter().find(|r| r.layout.root == source.root) {
        return repo;
    }
    let repo: &'static Repo = Box::leak(Box::new(Repo {
        layout: source.layout(),
        settings: crate::settings::Settings::default(),
        now: parent.now,
        env: parent.env.clone(),
    }));
    made.push(repo);
    repo
}

/// Reads the open session and the ended ones (open first); the files that cannot be read are
/// problems.
pub fn read_sessions(layout: &crate::paths::Layout) -> Sessions {
    let (open, mut problems) = crate::session::current(layout);
    let mut sessions: Vec<Located> = open.into_iter().collect();
    for path in crate::session::ended_files(layout) {
        match crate::session::read_file(layout, &path) {
            Ok(Some(l)) => sessions.push(l),
            Ok(None) => {}
            Err(d) => problems.push(d),
        }
    }
    (sessions, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Layout;

    fn repo(root: &std::path::Path) -> Repo {
        let layout = Layout { root: root.to_path_buf(), config: None };
        Repo { layout, settings: Default::default(), now: crate::format::time::now(), env: Default::default() }
    }

    fn memory(repo: &Repo, id: u64, text: &str) {
        let dir = repo.layout.memories();
        std::fs::create_dir_all(&dir).unwrap();
        let head = format!("---\ncreated: '2026-11-20T10:00:00+00:00'\nid: {id}\ntags: []\n---\n\n{text}\n");
        std::fs::write(dir.join(format!("{id:03}-m.md")), head).unwrap();
    }

    #[test]
    fn a_view_reads_each_source_once_and_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        memory(&repo, 1, "first");
        let k = Knowledge::read(&repo);
        assert!(k.corpus().is_none(), "a command's view has no live corpus");
        assert_eq!(k.memories().unwrap().len(), 1);
        // Files written after a source was read do not change the view: every reader of one
        // command sees the same knowledge.
        memory(&repo, 2, "second");
        std::fs::create_dir_all(repo.layout.copilot_memories().parent().unwrap()).unwrap();
        assert!(!k.records().unwrap().exists, "the records are read on first use, and there are none");
        std::fs::write(repo.layout.copilot_memories(), "{\"subject\":\"s\",\"fact\":\"f\"}\n").unwrap();
        assert_eq!(k.memories().unwrap().len(), 1);
        assert!(!k.records().unwrap().exists);
        // A new view reads the files as they are now.
        let fresh = Knowledge::read(&repo);
        assert_eq!(fresh.memories().unwrap().len(), 2);
        assert!(fresh.records().unwrap().exists);
        assert!(fresh.decisions().unwrap().decisions.is_empty(), "no decisions folder: none");
        assert!(fresh.session().0.is_none() && fresh.sessions().0.is_empty());
    }

    #[test]
    fn a_lent_view_reads_what_the_server_holds_not_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let mut held = Held::default();
        assert!(Knowledge::lent(&repo, &held, None).is_none(), "nothing is lent before the first read");
        memory(&repo, 1, "held");
        held.index = Some(crate::memories::store::MemoryStore::new(&repo).scan().unwrap());
        held.records = Err("cannot read: held error".into());
        memory(&repo, 2, "not yet seen by the server");
        let k = Knowledge::lent(&repo, &held, None).unwrap();
        assert_eq!(k.memories().unwrap().len(), 1);
        assert_eq!(k.records().unwrap_err(), "cannot read: held error");
        held_decisions_error_is_an_error(&repo);
    }

    fn held_decisions_error_is_an_error(repo: &Repo) {
        let held = Held {
            index: Some(crate::memories::store::MemoryStore::new(repo).scan().unwrap()),
            decisions: Err("the decisions folder is unreadable".into()),
            ..Held::default()
        };
        let k = Knowledge::lent(repo, &held, None).unwrap();
        assert_eq!(k.decisions().unwrap_err().to_string(), "the decisions folder is unreadable");
        assert_eq!(k.memories().unwrap().len(), 2);
    }
}
