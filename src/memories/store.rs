//! The markdown memory store: save (dedup, consolidate, decay), recall, forget, protect.
//!
//! Every operation that writes takes the repository lock first and scans inside it, so
//! concurrent kb processes never lose an update or reuse an id. Files are replaced atomically.
//! Keys kb does not change keep their original text (see `frontmatter::raw_entries`).

use crate::error::{KbError, io_at};
use crate::format::frontmatter;
use crate::format::salient::{NearMiss, SaveAction, Verdict, Why, judge};
use crate::format::text::{self, checked_tags, checked_text, contains_lower, query_words};
use crate::format::time;
use crate::fsio;
use crate::journal::Txn;
use crate::memories::decay::{decay, decay_victims};
use crate::memories::dedup::{
    DedupScope, PRESCORE_BYTES, Scored, find_duplicate_scored, find_person_match, score_candidates,
};
use crate::memories::file::{
    self, Importance, MemoryType, detect_category, detect_source, entry_text, new_memory_file_with, next_id,
};
use crate::memories::index::{Index, MemoryRef, Pos};
use crate::provenance::{CREATED_BY, UPDATED_BY};
use crate::repo::Repo;
use crate::secrets;
use crate::settings::DecayStrategy;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::path::{Path, PathBuf};

type Result<T> = std::result::Result<T, KbError>;

/// The markdown memories of one repository.
#[derive(Debug, Clone, Copy)]
pub struct MemoryStore<'r> {
    repo: &'r Repo,
}

/// What a save did (or, with `dry_run`, would do).
#[derive(Debug, Clone, PartialEq)]
pub struct SaveOutcome {
    pub action: SaveAction,
    pub dry_run: bool,
    pub memory_id: u64,
    pub path: PathBuf,
    pub similarity: Option<f64>,
    /// The content a consolidation replaced (a different fact must never vanish unseen).
    pub replaced: Option<String>,
    pub decayed: usize,
    pub decay_strategy: Option<DecayStrategy>,
    /// Secret rules whose matches were redacted.
    pub redacted: Vec<&'static str>,
    /// Things the user should know, e.g. a match that could not be consolidated into.
    pub warnings: Vec<String>,
    /// The similar memory a new memory was saved beside instead of consolidated into, and why.
    pub similar_to: Option<(u64, NearMiss)>,
}

/// A save request.
#[derive(Debug, Clone, Default)]
pub struct SaveRequest {
    pub content: String,
    pub tags: Vec<String>,
    pub dry_run: bool,
    pub redact: bool,
    /// Save a new memory even when a recent one is similar (`--no-dedup`).
    pub no_dedup: bool,
    /// `--type`: written only when given; dedup compares the effective type (absent = learning).
    /// A `core_context` memory is created with `decay_protected: true`.
    pub memory_type: Option<MemoryType>,
    /// `--importance`: written only when given; a consolidation keeps the higher one.
    pub importance: Option<Importance>,
    /// `--agent`: the agent the memory belongs to (checked with [`file::check_agent`]); dedup
    /// only matches memories of the same agent.
    pub agent: Option<String>,
}

impl<'r> MemoryStore<'r> {
    /// Returns the markdown memory store of `repo`.
    pub fn new(repo: &'r Repo) -> MemoryStore<'r> {
        MemoryStore { repo }
    }

    /// Returns the cache file for the memory index, `.co-cli/cache/memories.idx`, when kb may keep
    /// one: when `.co-cli/` is a folder (kb never creates `.co-cli/` itself to keep a cache) and
    /// the cache folder stays inside the root. The scan creates the cache folder, ignored, when it
    /// first writes the cache, so a fresh clone is fast from its second command on.
    fn cache_path(&self) -> Option<PathBuf> {
        self.repo.layout.cache_file("memories.idx")
    }

    /// Scans the memories folder (through the cache). With `KB_DEBUG_STATS` set (non-empty),
    /// prints what the scan did on stderr: `kb-stats: files=N read=R cached=C racy=Y
    /// cache_written=yes|no`.
    pub fn scan(&self) -> Result<Index> {
        self.scan_with(Index::scan)
    }

    /// Scans trusting the cache while the folder is unchanged ([`Index::scan_trusting`]): for
    /// readers that check the memories they show ([`Index::unchanged`]). With `KB_DEBUG_STATS`,
    /// the line ends in `trusted=yes|no`.
    pub fn scan_trusting(&self) -> Result<Index> {
        self.scan_with(Index::scan_trusting)
    }

    /// Scans as [`MemoryStore::scan`] does, leaving the cache write to
    /// [`MemoryStore::write_pending_cache`] ([`Index::scan_deferring`]); the debug line comes
    /// with the write.
    pub fn scan_deferring(&self) -> Result<Index> {
        let dir = self.repo.layout.memories();
        Index::scan_deferring(&dir, &self.repo.layout.root, self.cache_path().as_deref()).map_err(io_at(&dir))
    }

    /// Writes the cache a [`MemoryStore::scan_deferring`] left, and prints the scan's debug line
    /// (once: a later call does nothing).
    pub fn write_pending_cache(&self, index: &Index) {
        if let Some(written) = index.write_pending_cache() {
            self.debug_stats(index, written);
        }
    }

    fn scan_with(&self, scan: fn(&Path, &Path, Option<&Path>) -> std::io::Result<Index>) -> Result<Index> {
        let dir = self.repo.layout.memories();
        let index = scan(&dir, &self.repo.layout.root, self.cache_path().as_deref()).map_err(io_at(&dir))?;
        self.debug_stats(&index, index.stats.cache_written);
        Ok(index)
    }

    /// With `KB_DEBUG_STATS`, prints what the scan of `index` did.
    fn debug_stats(&self, index: &Index, cache_written: bool) {
        self.repo.debug_line(|| {
            let s = index.stats;
            let yes = |b: bool| if b { "yes" } else { "no" };
            format!(
                "kb-stats: files={} read={} cached={} racy={} cache_written={} trusted={}",
                s.files,
                s.read,
                s.cached,
                s.racy,
                yes(cache_written),
                yes(s.trusted)
            )
        });
    }

    /// Scans under the repository lock (`_held` shows it is taken) and removes the stale
    /// temporary files killed writes left in the memories folder, found by the scan's own listing
    /// (`repo::lock` sweeps the other folders).
    fn scan_locked(&self, _held: &fsio::Lock) -> Result<Index> {
        let index = self.scan()?;
        let found = index.temp_files();
        if !found.is_empty() && self.repo.guard(&index.dir).is_ok() {
            fsio::remove_stale_temp_files(&found);
        }
        Ok(index)
    }

    /// Checks and screens a save request and, for a large text, scores it against the dedup
    /// candidates: the work a save does before it takes the lock, so other writers do not wait.
    pub fn prepare(&self, req: SaveRequest) -> Result<PreparedSave> {
        let screened = screen(&req)?;
        let scope = DedupScope { memory_type: req.memory_type.unwrap_or_default(), agent: screened.agent.as_deref() };
        // Scoring a large text is slow (quadratic in its length): do it before taking the lock, and
        // reuse it under the lock when nothing changed.
        let prescored = (!req.dry_run && !req.no_dedup && screened.content.len() > PRESCORE_BYTES)
            .then(|| {
                self.scan()
                    .map(|index| score_candidates(&index, &screened.content, scope, &self.repo.settings, self.repo.now))
            })
            .transpose()?;
        Ok(PreparedSave { req, screened, prescored, source: None, extra: Vec::new() })
    }

    /// Decides what a save does: dedup against recent memories, then consolidate into the match
    /// or create a memory (and decay the oldest past the maximum). `held` is the repository lock
    /// (`None` for a dry run, which only reports); the plan is written by [`SavePlan::write`].
    pub fn plan(&self, prepared: PreparedSave, held: Option<&fsio::Lock>) -> Result<SavePlan> {
        let PreparedSave { req, screened, prescored, source, extra } = prepared;
        let Screened { content, tags, agent, redacted } = screened;
        let now = self.repo.now;
        let scope = DedupScope { memory_type: req.memory_type.unwrap_or_default(), agent: agent.as_deref() };
        let index = match held {
            Some(held) => self.scan_locked(held)?,
            None => self.scan()?,
        };
        let mut warnings = Vec::new();
        let settings = &self.repo.settings;
        let candidate =
            if req.no_dedup { None } else { find_duplicate_scored(&index, &content, scope, settings, now, prescored) };
        let mut similar_to = None;
        if let Some((best, score)) = candidate {
            let path = index.dir.join(best.file_name);
            let verdict = judge(best.content, &content, score, self.kept(&best, &path));
            // A match whose frontmatter kb cannot edit exactly is left alone; the text is saved
            // as a new memory rather than lost.
            let editable = verdict != Verdict::Consolidate || can_edit(&path);
            if !editable {
                warnings.push(format!(
                    "memory {} ({}) matches this text (similarity {score:.1}) but its frontmatter cannot be \
                     edited without changing other values; saved as a new memory",
                    best.id, best.file_name
                ));
            }
            let outcome = |action| SaveOutcome {
                action,
                dry_run: req.dry_run,
                memory_id: best.id,
                path: path.clone(),
                similarity: Some(score),
                replaced: (action == SaveAction::Consolidate).then(|| best.content.to_string()),
                decayed: 0,
                decay_strategy: None,
                redacted: redacted.clone(),
                warnings: warnings.clone(),
                similar_to: None,
            };
            match verdict {
                Verdict::Consolidate if editable => {
                    let outcome = outcome(SaveAction::Consolidate);
                    let what = format!("consolidated into memory {}", best.id);
                    let author = self.repo.author();
                    let action = Action::Consolidate { path, content, tags, importance: req.importance, author, extra };
                    return Ok(SavePlan { outcome, what, action, index, now });
                }
                Verdict::Exists => {
                    let outcome = outcome(SaveAction::Exists);
                    let what = format!("already stored as memory {}", best.id);
                    return Ok(SavePlan { outcome, what, action: Action::Nothing, index, now });
                }
                Verdict::NearMiss(miss) => similar_to = Some((best.id, miss)),
                Verdict::Consolidate => {}
            }
        }
        // An agent restating a person's memory outside the window (older, of another type) is
        // told so, never silently stored twice.
        if similar_to.is_none()
            && self.repo.env.actor.is_agent()
            && !req.no_dedup
            && let Some((theirs, score)) = find_person_match(&index, &content, agent.as_deref(), settings)
        {
            match judge(theirs.content, &content, score, Some(Why::WrittenByPerson)) {
                Verdict::NearMiss(miss) => similar_to = Some((theirs.id, miss)),
                _ => {
                    let path = index.dir.join(theirs.file_name);
                    let outcome = SaveOutcome {
                        action: SaveAction::Exists,
                        dry_run: req.dry_run,
                        memory_id: theirs.id,
                        path,
                        similarity: Some(score),
                        replaced: None,
                        decayed: 0,
                        decay_strategy: None,
                        redacted: redacted.clone(),
                        warnings: warnings.clone(),
                        similar_to: None,
                    };
                    let what = format!("already stored as memory {}", theirs.id);
                    return Ok(SavePlan { outcome, what, action: Action::Nothing, index, now });
                }
            }
        }
        let id = next_id(index.max_id())?;
        let path = crate::paths::free_path(&index.dir, &text::file_name(id, &content));
        let victims = decay_victims(&index, settings);
        let strategy = settings.memory_decay_strategy.value;
        let author = self.repo.author();
        let mut keys = layer_keys(&req, agent.as_deref());
        keys.extend(author.clone().map(|a| (CREATED_BY.to_string(), Value::from(a))));
        keys.extend(extra);
        // A source the tags already give is left to them (they also give the category).
        let source = source.filter(|&s| s != detect_source(&tags));
        let text = new_memory_file_with(id, &tags, source, &content, &keys, now);
        let outcome = SaveOutcome {
            action: SaveAction::Create,
            dry_run: req.dry_run,
            memory_id: id,
            path: path.clone(),
            similarity: None,
            replaced: None,
            decayed: victims.len(),
            decay_strategy: (!victims.is_empty()).then_some(strategy),
            redacted,
            warnings,
            similar_to,
        };
        let what = format!("saved memory {id}, decayed {} ({})", victims.len(), strategy.as_str());
        let action = Action::Create { id, path, text, victims, strategy, author };
        Ok(SavePlan { outcome, what, action, index, now })
    }

    /// Returns why a save may not rewrite the memory `m` (at `path`) at all, if so: a core
    /// context or protected memory never; over MCP, a memory no agent wrote.
    fn kept(&self, m: &MemoryRef<'_>, path: &Path) -> Option<Why> {
        m.never_rewritten().or_else(|| {
            let person_wrote = !crate::provenance::by_agent(created_by(path).as_deref());
            (self.repo.env.actor.is_agent() && person_wrote).then_some(Why::WrittenByPerson)
        })
    }

    /// Deletes the memory with frontmatter id `id` through `txn`; an agent may delete only a
    /// memory an agent wrote. Returns its path.
    pub fn forget(&self, txn: &mut Txn, id: u64) -> Result<PathBuf> {
        let index = self.scan_locked(txn.lock())?;
        let path = one_by_id(&index, id)?;
        self.repo.guard(&path)?;
        self.agent_may(id, &path, "forget", &format!("`kb forget {id}`"))?;
        txn.remove(&path)?;
        Ok(path)
    }

    /// Replaces the content of memory `id` with `content` (checked and screened for secrets as a
    /// save's text), setting `updated` and `updated_by`; the rest of the frontmatter keeps its text.
    /// An agent may change only a memory an agent wrote. Returns the path, whether the file
    /// changed, and the secret rules redacted.
    pub fn set_content(&self, txn: &mut Txn, id: u64, content: &str, redact: bool) -> Result<ContentChange> {
        let content = checked_text(content, &[], ("memory", "memories"), "nothing to update: the text is empty")?;
        let mut screen = secrets::Screen::new(redact);
        let content = screen.field("text", content)?;
        let redacted = screen.redacted();
        let index = self.scan_locked(txn.lock())?;
        let path = one_by_id(&index, id)?;
        self.repo.guard(&path)?;
        let text = fsio::read_text(&path)?;
        let m = file::parse(&text).map_err(|d| KbError::BadFile(d.in_file(&path)))?;
        self.agent_may_change(id, &path)?;
        if m.content == content {
            return Ok(ContentChange { path, changed: false, redacted });
        }
        let mut set = Vec::new();
        if let Some(author) = self.repo.author() {
            set.push((UPDATED_BY.to_string(), Value::from(author)));
        }
        update_memory(txn, &path, Some(&content), &set, self.repo.now)?;
        Ok(ContentChange { path, changed: true, redacted })
    }

    /// Returns the path and text of memory `id`, for a person to edit ([`Self::replace_text`]).
    pub fn text_of(&self, id: u64) -> Result<(PathBuf, String)> {
        let index = self.scan()?;
        let path = one_by_id(&index, id)?;
        self.repo.guard(&path)?;
        let text = fsio::read_text(&path)?;
        Ok((path, text))
    }

    /// Writes `edited`, a person's edit of the whole file of memory `id` begun from `before`,
    /// through `txn`: it must read as a memory (the problem is the error, naming `shown` and the
    /// line), keep its id, hold no secret, and the file must still hold `before` (else the edit
    /// would undo a change made meanwhile). Returns the path and whether the file changed.
    pub fn replace_text(
        &self,
        txn: &mut Txn,
        id: u64,
        before: &str,
        edited: &str,
        shown: &Path,
    ) -> Result<(PathBuf, bool)> {
        let m = file::parse(edited).map_err(|d| KbError::BadFile(d.in_file(shown)))?;
        if m.id != id {
            let why = format!("the edit gives memory {id} the id {}: keep `id: {id}`", m.id);
            return Err(KbError::bad_file(shown, None, &why));
        }
        if let Some(f) = secrets::scan(edited).first() {
            return Err(KbError::Secret { field: "file".to_string(), rule: f.rule });
        }
        let index = self.scan_locked(txn.lock())?;
        let path = one_by_id(&index, id)?;
        self.repo.guard(&path)?;
        if fsio::read_text(&path)? != before {
            let why = format!("memory {id} changed while it was being edited; the edit is kept in {}", shown.display());
            return Err(KbError::refused("edit", why));
        }
        if edited == before {
            return Ok((path, false));
        }
        txn.write(&path, edited.as_bytes())?;
        Ok((path, true))
    }

    /// Refuses an agent's change of memory `id` (at `path`) when no agent wrote it (docs/mcp.md):
    /// the message names who did and what a person runs instead.
    pub fn agent_may_change(&self, id: u64, path: &Path) -> std::result::Result<(), KbError> {
        self.agent_may(id, path, "update", &format!("`kb update {id}` or `kb edit {id}`"))
    }

    /// Refuses an agent's `action` on memory `id` (at `path`) when no agent wrote it, naming the
    /// `commands` a person runs instead.
    fn agent_may(
        &self,
        id: u64,
        path: &Path,
        action: &'static str,
        commands: &str,
    ) -> std::result::Result<(), KbError> {
        if !self.repo.env.actor.is_agent() {
            return Ok(());
        }
        let author = created_by(path);
        crate::provenance::agent_may_change(
            &self.repo.env.actor,
            author.as_deref(),
            action,
            &format!("memory {id}"),
            commands,
        )
    }

    /// Sets or removes `decay_protected: true` through `txn`. Returns the path and whether the
    /// file changed.
    pub fn set_protected(&self, txn: &mut Txn, id: u64, protect: bool) -> Result<(PathBuf, bool)> {
        let index = self.scan_locked(txn.lock())?;
        let path = one_by_id(&index, id)?;
        self.repo.guard(&path)?;
        let change = ("decay_protected".to_string(), protect.then_some(Value::Bool(true)));
        match rewritten(&path, &[change], None)? {
            Some(text) => {
                txn.write(&path, text.as_bytes())?;
                Ok((path, true))
            }
            None => Ok((path, false)),
        }
    }
}

/// What [`MemoryStore::set_content`] did.
pub struct ContentChange {
    pub path: PathBuf,
    pub changed: bool,
    pub redacted: Vec<&'static str>,
}

/// A save request checked and screened, before the lock ([`MemoryStore::prepare`]).
pub struct PreparedSave {
    req: SaveRequest,
    screened: Screened,
    prescored: Option<Scored>,
    /// The `source` a new memory gets instead of the one its tags give; `None`: from the tags.
    source: Option<&'static str>,
    /// Keys the memory gets besides the save's own, when created or consolidated into
    /// (`accepted_by`, for a proposal a person accepted).
    extra: Vec<(String, Value)>,
}

impl PreparedSave {
    /// Returns whether this is a dry run (it only reports, takes no lock and writes nothing).
    pub fn dry_run(&self) -> bool {
        self.req.dry_run
    }

    /// Returns the text the save stores (checked, secrets redacted when asked).
    pub fn content(&self) -> &str {
        &self.screened.content
    }

    /// Returns the save with the `source` a new memory gets (`detected`: an agent found it, as
    /// `kb import --from claude` saves it), instead of the one its tags give.
    pub fn with_source(self, source: &'static str) -> PreparedSave {
        PreparedSave { source: Some(source), ..self }
    }

    /// Returns the save with `keys` written too: into a new memory's frontmatter, or set in the
    /// memory it consolidates into (`kb inbox accept` writes `accepted_by` so).
    pub fn with_keys(self, keys: Vec<(String, Value)>) -> PreparedSave {
        PreparedSave { extra: keys, ..self }
    }
}

/// What a save will do, decided under the lock ([`MemoryStore::plan`]).
pub struct SavePlan {
    outcome: SaveOutcome,
    /// The journal entry's description.
    what: String,
    action: Action,
    index: Index,
    now: DateTime<Utc>,
}

/// The writes of a save.
enum Action {
    /// Replace the body of the memory at `path`, merge the tags, raise the importance.
    Consolidate {
        path: PathBuf,
        content: String,
        tags: Vec<String>,
        importance: Option<Importance>,
        /// Who rewrites it (`updated_by`), when known.
        author: Option<String>,
        /// Keys set besides (see [`PreparedSave::with_keys`]).
        extra: Vec<(String, Value)>,
    },
    /// Create the memory `id` at `path` holding `text`, then decay `victims`.
    /// The summary of decayed memories is by `author` too.
    Create { id: u64, path: PathBuf, text: String, victims: Vec<Pos>, strategy: DecayStrategy, author: Option<String> },
    /// Write nothing: the match already says it.
    Nothing,
}

impl SavePlan {
    /// Returns what the save does (or, in a dry run, would do).
    pub fn outcome(&self) -> &SaveOutcome {
        &self.outcome
    }

    /// Returns whether the save replaces or removes a memory (a consolidation, or a create that
    /// decays): then `kb undo` must be able to take it back, and its operation journals it.
    pub fn replaces(&self) -> bool {
        match &self.action {
            Action::Consolidate { .. } => true,
            Action::Create { victims, .. } => !victims.is_empty(),
            Action::Nothing => false,
        }
    }

    /// Returns the text a consolidation stores in place of the memory's body (`None`: not a
    /// consolidation).
    pub fn consolidates(&self) -> Option<&str> {
        match &self.action {
            Action::Consolidate { content, .. } => Some(content),
            Action::Create { .. } | Action::Nothing => None,
        }
    }

    /// Returns the journal entry's description of the save.
    pub fn describe(&self) -> &str {
        &self.what
    }

    /// Makes the save's changes through `txn` (the caller decided whether they are journaled;
    /// a save that decays writes the new memory through it too, so an undo takes both back).
    pub fn write(self, repo: &Repo, txn: &mut Txn) -> Result<SaveOutcome> {
        let SavePlan { outcome, action, index, now, .. } = self;
        match action {
            Action::Consolidate { path, content, tags, importance, author, extra } => {
                repo.guard(&path)?;
                let text = consolidated_text_with(&path, &content, &tags, importance, author.as_deref(), &extra, now)?;
                txn.write(&path, text.as_bytes())?;
            }
            Action::Nothing => {}
            Action::Create { id, path, text, victims, strategy, author } => {
                repo.guard(&index.dir)?;
                std::fs::create_dir_all(&index.dir).map_err(io_at(&index.dir))?;
                txn.write(&path, text.as_bytes())?;
                if !victims.is_empty() {
                    let victims: Vec<MemoryRef<'_>> = victims.into_iter().map(|p| index.at(p)).collect();
                    decay(txn, &index, &victims, strategy, id, author.as_deref(), now)?;
                }
            }
        }
        Ok(outcome)
    }
}

/// Gives the memory file at `path` the id `id` (`kb check --fix`) and returns its new
/// path: it is renamed to `{id:03}-{slug}.md` (the slug of its name when that starts with an id,
/// else of its content; `-2`... when taken), then its frontmatter `id` is set. Every other key
/// keeps its text and the body its bytes; nothing else changes (not `updated`). The rename comes
/// first, so a crash in between leaves the duplicate id for the next fix to repair, never a copy.
/// It writes through `txn`.
pub fn renumber(repo: &Repo, txn: &mut Txn, path: &Path, id: u64) -> Result<PathBuf> {
    if !can_edit(path) {
        let why =
            "its frontmatter uses YAML that kb cannot edit without changing other values; give it a new id by hand";
        return Err(KbError::bad_file(path, None, why));
    }
    let text = fsio::read_text(path)?;
    let memory = file::parse(&text).map_err(|d| KbError::BadFile(d.in_file(path)))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let old_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let slug = old_name
        .split_once('-')
        .filter(|(digits, rest)| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && rest.len() > 3)
        .map(|(_, rest)| rest.to_string());
    let name = match slug {
        Some(rest) => format!("{id:03}-{rest}"),
        None => text::file_name(id, &memory.content),
    };
    let target = if name == old_name { path.to_path_buf() } else { crate::paths::free_path(dir, &name) };
    repo.guard(path)?;
    repo.guard(&target)?;
    if target != path {
        txn.rename(path, &target)?;
    }
    if let Some(text) = rewritten(&target, &[("id".to_string(), Some(Value::from(id)))], None)? {
        txn.write(&target, text.as_bytes())?;
    }
    Ok(target)
}

/// The layer keys (`type`, `importance`, `agent`) a new memory gets: each one given, and
/// `decay_protected: true` for a `core_context` memory.
fn layer_keys(req: &SaveRequest, agent: Option<&str>) -> Vec<(String, Value)> {
    let mut keys = Vec::new();
    if let Some(a) = agent {
        keys.push(("agent".to_string(), Value::from(a)));
    }
    if req.memory_type == Some(MemoryType::CoreContext) {
        keys.push(("decay_protected".to_string(), Value::Bool(true)));
    }
    if let Some(i) = req.importance {
        keys.push(("importance".to_string(), Value::from(i.as_str())));
    }
    if let Some(t) = req.memory_type {
        keys.push(("type".to_string(), Value::from(t.as_str())));
    }
    keys
}

/// What a save stores, once checked and screened for secrets.
struct Screened {
    content: String,
    tags: Vec<String>,
    agent: Option<String>,
    /// The secret rules whose matches were redacted.
    redacted: Vec<&'static str>,
}

/// Checks the request and applies the secret filter; returns what to store and the rules
/// redacted.
fn screen(req: &SaveRequest) -> Result<Screened> {
    let content = checked_text(&req.content, &req.tags, ("memory", "memories"), "nothing to save: the text is empty")?;
    if let Some(agent) = &req.agent {
        text::check_agent(agent).map_err(|why| KbError::rejected("agent", why))?;
    }
    let tags = checked_tags(&req.tags)?;
    let mut screen = secrets::Screen::new(req.redact);
    let content = screen.field("text", content)?;
    let tags = tags.into_iter().map(|t| screen.field("tag", t)).collect::<Result<Vec<_>>>()?;
    let agent = req.agent.clone().map(|a| screen.field("agent name", a)).transpose()?;
    let redacted = screen.redacted();
    Ok(Screened { content, tags, agent, redacted })
}

/// Writes a new memory file named as co-cli (the Python tool whose file layout kb keeps) names it, with extra
/// frontmatter keys. The caller holds the lock and chose a free id. Returns its path.
pub fn create_memory(
    txn: &mut Txn,
    dir: &Path,
    id: u64,
    tags: &[String],
    content: &str,
    extra: &[(String, Value)],
    now: DateTime<Utc>,
) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(io_at(dir))?;
    let path = crate::paths::free_path(dir, &text::file_name(id, content));
    let text = new_memory_file_with(id, tags, None, content, extra, now);
    txn.write(&path, text.as_bytes())?;
    Ok(path)
}

/// Updates a memory in place: sets each of `set` (a value of null removes the key), sets
/// `updated`, and replaces the body when `body` is given (then in co-cli's layout, as a
/// consolidation does, dropping `consolidation_reason`). Every other key keeps its text, and
/// without a new body the body keeps its bytes. The caller holds the lock.
pub fn update_memory(
    txn: &mut Txn,
    path: &Path,
    body: Option<&str>,
    set: &[(String, Value)],
    now: DateTime<Utc>,
) -> Result<()> {
    if let Some(text) = updated_text(path, body, set, now)? {
        txn.write(path, text.as_bytes())?;
    }
    Ok(())
}

/// Returns the text [`update_memory`] would write (`None`: nothing would change), without
/// writing it: an operation that writes other files too computes it first, so a memory kb cannot
/// edit fails it before anything is written.
pub fn updated_text(
    path: &Path,
    body: Option<&str>,
    set: &[(String, Value)],
    now: DateTime<Utc>,
) -> Result<Option<String>> {
    let mut changes: Vec<(String, Option<Value>)> =
        set.iter().map(|(k, v)| (k.clone(), (!v.is_null()).then(|| v.clone()))).collect();
    changes.push(("updated".into(), Some(Value::from(time::py_isoformat(now)))));
    if body.is_some() {
        changes.push(("consolidation_reason".into(), None));
    }
    rewritten(path, &changes, body)
}

/// Returns the text a consolidation into the memory at `path` writes (see [`consolidate`]),
/// without writing it. `author`, when known, is written as `updated_by`.
pub fn consolidated_text(
    path: &Path,
    content: &str,
    new_tags: &[String],
    importance: Option<Importance>,
    author: Option<&str>,
    now: DateTime<Utc>,
) -> Result<String> {
    consolidated_text_with(path, content, new_tags, importance, author, &[], now)
}

/// Returns the text of [`consolidated_text`] with the keys `extra` set too.
fn consolidated_text_with(
    path: &Path,
    content: &str,
    new_tags: &[String],
    importance: Option<Importance>,
    author: Option<&str>,
    extra: &[(String, Value)],
    now: DateTime<Utc>,
) -> Result<String> {
    let text = fsio::read_text(path)?;
    let m = file::parse(&text).map_err(|d| KbError::BadFile(d.in_file(path)))?;
    let raised = importance.filter(|&i| i > m.effective_importance());
    let mut tags = m.tags;
    for t in new_tags {
        if !tags.contains(t) {
            tags.push(t.clone());
        }
    }
    let mut changes = vec![
        ("tags".to_string(), Some(Value::from(tags.clone()))),
        ("updated".to_string(), Some(Value::from(time::py_isoformat(now)))),
        ("source".to_string(), Some(Value::from(detect_source(&tags)))),
        ("auto_category".to_string(), Some(detect_category(&tags).map_or(Value::Null, Value::from))),
        ("consolidation_reason".to_string(), None),
    ];
    if let Some(i) = raised {
        changes.push(("importance".to_string(), Some(Value::from(i.as_str()))));
    }
    if let Some(author) = author {
        changes.push((UPDATED_BY.to_string(), Some(Value::from(author))));
    }
    changes.extend(extra.iter().map(|(k, v)| (k.clone(), Some(v.clone()))));
    // With a body, the text is always rewritten.
    Ok(rewritten(path, &changes, Some(content))?.unwrap_or(text))
}

/// Returns the `created_by` of the memory file at `path` (`None`: absent, or unreadable).
fn created_by(path: &Path) -> Option<String> {
    let text = fsio::read_text(path).ok()?;
    let (_, fields) = frontmatter::split_and_parse(&text).ok()?;
    fields.get(CREATED_BY).and_then(Value::as_str).map(str::to_string)
}

/// Returns whether kb can rewrite this memory's frontmatter exactly (see `rewrite_memory`).
pub fn can_edit(path: &Path) -> bool {
    let Ok(text) = fsio::read_text(path) else { return false };
    let Ok(split) = frontmatter::split(&text) else { return false };
    frontmatter::parse(split.yaml).is_ok_and(|fields| frontmatter::raw_entries(split.yaml, &fields).is_some())
}

/// Returns the text [`rewrite_memory`] would write, `None` when nothing would change.
fn rewritten(path: &Path, changes: &[(String, Option<Value>)], body: Option<&str>) -> Result<Option<String>> {
    let text = fsio::read_text(path)?;
    file::parse(&text).map_err(|d| KbError::BadFile(d.in_file(path)))?;
    let split = frontmatter::split(&text).map_err(|_| KbError::bad_file(path, Some(1), "no frontmatter"))?;
    let fields = frontmatter::parse(split.yaml).map_err(|e| KbError::bad_file(path, e.line, &e.message))?;
    let unchanged = changes.iter().all(|(k, v)| fields.get(k) == v.as_ref());
    if unchanged && body.is_none() {
        return Ok(None);
    }
    let raw = frontmatter::raw_entries(split.yaml, &fields).ok_or_else(|| {
        let why = "its frontmatter uses YAML that kb cannot edit without changing other values \
                   (complex or flow-style keys); edit the file by hand";
        KbError::bad_file(path, Some(split.yaml_line), why)
    })?;
    let edits: Vec<(String, Option<String>)> =
        changes.iter().map(|(k, v)| (k.clone(), v.as_ref().map(|v| entry_text(k, v)))).collect();
    let yaml = frontmatter::edit_entries(raw, &edits);
    let out = match body {
        Some(content) => frontmatter::compose(&yaml, content),
        None => frontmatter::replace_yaml(&text, split.yaml, &yaml),
    };
    Ok(Some(out))
}

/// Returns the only valid memory with this id: not found and a duplicate id are errors.
pub fn one(index: &Index, id: u64) -> Result<MemoryRef<'_>> {
    let mut found = index.by_id(id);
    match found.len() {
        0 => Err(KbError::not_found("memory", id)),
        1 => Ok(found.remove(0)),
        _ => Err(KbError::duplicate_id("memory", id, found.iter().map(|m| m.file_name.to_string()).collect())),
    }
}

/// Returns the path of the only valid memory with this id.
fn one_by_id(index: &Index, id: u64) -> Result<PathBuf> {
    one(index, id).map(|m| index.dir.join(m.file_name))
}

/// Recall: memories whose text or a tag contains `query` (case-insensitive), newest first.
/// Returns the newest `limit` matches and how many memories matched in all.
pub fn recall<'a>(index: &'a Index, query: &str, limit: usize) -> (Vec<MemoryRef<'a>>, usize) {
    let words = query_words(query);
    let found =
        |p: Pos, w: &str| contains_lower(index.content_at(p), w) || index.tags_at(p).any(|t| contains_lower(t, w));
    let mut hits: Vec<Pos> = index.positions().filter(|&p| words.iter().all(|w| found(p, w))).collect();
    let total = hits.len();
    let newest_first = |p: &Pos| std::cmp::Reverse(index.age_key_at(*p));
    if hits.len() > limit && limit > 0 {
        hits.select_nth_unstable_by_key(limit - 1, newest_first);
    }
    hits.truncate(limit);
    hits.sort_by_key(newest_first);
    (hits.into_iter().map(|p| index.at(p)).collect(), total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memories::file::new_memory_file;

    #[test]
    fn case_insensitive_contains() {
        assert!(contains_lower("ASYNC/AWAIT pattern", "async"));
        assert!(contains_lower("Über", "über"));
        assert!(!contains_lower("abc", "abcd"));
        assert!(contains_lower("", ""));
    }

    #[test]
    fn rewriting_an_existing_key_writes_it_once() {
        use chrono::TimeZone;
        let now = Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("001-x.md");
        let head = "---\ncitations:\n- a\ncreated: '2026-11-20T10:00:00+00:00'\ndecay_protected: false\nid: 1\n";
        std::fs::write(&path, format!("{head}tags: []\n---\n\nx\n")).unwrap();
        let repo = Repo {
            layout: crate::paths::Layout { root: dir.path().to_path_buf(), config: None },
            settings: Default::default(),
            now,
            env: Default::default(),
        };
        let mut txn = Txn::unrecorded(repo.lock().unwrap());
        let changed = rewritten(&path, &[("decay_protected".into(), Some(Value::Bool(true)))], None).unwrap().unwrap();
        txn.write(&path, changed.as_bytes()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("decay_protected").count(), 1, "{text}");
        update_memory(&mut txn, &path, None, &[("citations".into(), Value::from(vec!["a", "b"]))], now).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("citations").count(), 1, "{text}");
        assert!(text.contains("citations:\n- a\n- b\n") && text.contains("updated: '2026-11-22T12:00:00+00:00'\n"));
        update_memory(&mut txn, &path, Some("  new body\n"), &[("reason".into(), Value::from("why"))], now).unwrap();
        let m = file::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!((m.content.as_str(), m.decay_protected), ("new body", true));
    }

    #[test]
    fn new_file_is_co_cli_bytes() {
        use chrono::TimeZone;
        let now = Utc.with_ymd_and_hms(2026, 11, 22, 14, 27, 4).unwrap() + chrono::Duration::microseconds(330_453);
        let tags = vec!["testing".to_string(), "preference".to_string(), "python".to_string()];
        let text = new_memory_file(1, &tags, None, "  User prefers pytest over unittest\n", now);
        assert_eq!(
            text,
            "---\nauto_category: preference\ncreated: '2026-11-22T14:27:04.330453+00:00'\nid: 1\nsource: detected\ntags:\n- testing\n- preference\n- python\n---\n\nUser prefers pytest over unittest\n"
        );
        let text = new_memory_file(2, &[], None, "x", now);
        assert!(
            text.contains("auto_category: null\n")
                && text.contains("source: user-told\n")
                && text.contains("tags: []\n")
        );
    }
}
