//! The markdown memory store: save (dedup, consolidate, decay), recall, forget, protect.
//!
//! Every operation that writes takes the repository lock first and scans inside it, so
//! concurrent kb processes never lose an update or reuse an id. Files are replaced atomically.
//! Keys kb does not change keep their original text (see `frontmatter::raw_entries`).

use crate::error::{KbError, io_at};
use crate::format::frontmatter;
use crate::format::similarity::Prepared;
use crate::format::text::{self, MAX_TEXT_BYTES, checked_tags, checked_text, contains_lower, query_words};
use crate::format::time::{self, Micros};
use crate::fsio;
use crate::journal::Txn;
use crate::memories::file::{self, Importance, MemoryType, detect_category, detect_source};
use crate::memories::index::{Index, MemoryRef, Pos};
use crate::repo::Repo;
use crate::secrets;
use crate::settings::{DecayStrategy, Settings};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Texts longer than this are scored against the dedup candidates before the lock is taken.
const PRESCORE_BYTES: usize = 32 * 1024;

/// Dedup compares a new text with at most this many recent memories (co-cli hard-codes 10).
pub const DEDUP_CANDIDATES: usize = 10;

type Result<T> = std::result::Result<T, KbError>;

/// The markdown memories of one repository.
#[derive(Debug, Clone, Copy)]
pub struct MemoryStore<'r> {
    repo: &'r Repo,
}

/// What a save did (or, with `dry_run`, would do).
#[derive(Debug, Clone, PartialEq)]
pub struct SaveOutcome {
    pub consolidated: bool,
    pub dry_run: bool,
    pub memory_id: u64,
    pub path: PathBuf,
    pub similarity: Option<f64>,
    /// The content a consolidation replaced (SPEC §5: a different fact must never vanish unseen).
    pub replaced: Option<String>,
    pub decayed: usize,
    pub decay_strategy: Option<DecayStrategy>,
    /// Secret rules whose matches were redacted.
    pub redacted: Vec<&'static str>,
    /// Things the user should know, e.g. a match that could not be consolidated into.
    pub warnings: Vec<String>,
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

/// Which memories a save may consolidate into (SPEC §11.2): those of the same effective type
/// and the same agent (or both naming none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DedupScope<'s> {
    pub memory_type: MemoryType,
    pub agent: Option<&'s str>,
}

impl DedupScope<'_> {
    /// Returns whether the memory at `pos` is in this scope.
    fn holds(&self, index: &Index, pos: Pos) -> bool {
        index.type_at(pos) == self.memory_type && index.agent_at(pos) == self.agent
    }
}

impl<'r> MemoryStore<'r> {
    /// Returns the markdown memory store of `repo`.
    pub fn new(repo: &'r Repo) -> MemoryStore<'r> {
        MemoryStore { repo }
    }

    /// Returns the cache file for the memory index, `.co-cli/cache/memories.idx`, when kb may keep
    /// one: when `.co-cli/` is a folder (kb never creates `.co-cli/` itself to keep a cache) and
    /// the cache folder stays inside the root. The scan creates the cache folder, ignored, when it
    /// first writes the cache, so a fresh clone is fast from its second command on (SPEC §7).
    fn cache_path(&self) -> Option<PathBuf> {
        let layout = &self.repo.layout;
        let cache = layout.cache();
        (layout.co_cli().is_dir() && self.repo.guard(&cache).is_ok()).then(|| cache.join("memories.idx"))
    }

    /// Scans the memories folder (through the cache). With `KB_DEBUG_STATS` set (non-empty),
    /// prints what the scan did on stderr: `kb-stats: files=N read=R cached=C racy=Y
    /// cache_written=yes|no`.
    pub fn scan(&self) -> Result<Index> {
        let dir = self.repo.layout.memories();
        let index = Index::scan(&dir, &self.repo.layout.root, self.cache_path().as_deref()).map_err(io_at(&dir))?;
        if crate::settings::env("KB_DEBUG_STATS").is_some() {
            let s = index.stats;
            let written = if s.cache_written { "yes" } else { "no" };
            let line = format!(
                "kb-stats: files={} read={} cached={} racy={} cache_written={written}\n",
                s.files, s.read, s.cached, s.racy
            );
            // A debug line: a closed stderr must not fail (or panic) the command.
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        }
        Ok(index)
    }

    /// Scans under the repository lock (`_held` shows it is taken) and removes the stale
    /// temporary files killed writes left in the memories folder, found by the scan's own listing
    /// (SPEC §6; `repo::lock` sweeps the other folders).
    fn scan_locked(&self, _held: &fsio::Lock) -> Result<Index> {
        let index = self.scan()?;
        let found = index.temp_files();
        if !found.is_empty() && self.repo.guard(&index.dir).is_ok() {
            fsio::remove_stale_temp_files(&found);
        }
        Ok(index)
    }

    /// Saves a memory: dedup against recent ones, consolidate or create, then decay.
    pub fn save(&self, req: SaveRequest) -> Result<SaveOutcome> {
        let now = self.repo.now;
        let Screened { content, tags, agent, redacted } = screen(&req)?;
        let scope = DedupScope { memory_type: req.memory_type.unwrap_or_default(), agent: agent.as_deref() };
        // Scoring a large text is slow (quadratic in its length): do it before taking the lock, so
        // that other writers do not wait, and reuse it under the lock when nothing changed.
        let prescored = (!req.dry_run && !req.no_dedup && content.len() > PRESCORE_BYTES)
            .then(|| self.scan().map(|index| score_candidates(&index, &content, scope, &self.repo.settings, now)))
            .transpose()?;
        let lock = if req.dry_run { None } else { Some(self.repo.lock()?) };
        let index = match &lock {
            Some(held) => self.scan_locked(held)?,
            None => self.scan()?,
        };
        let mut warnings = Vec::new();
        let settings = &self.repo.settings;
        let candidate =
            if req.no_dedup { None } else { find_duplicate_scored(&index, &content, scope, settings, now, prescored) };
        let duplicate = candidate.filter(|(best, score)| {
            // A match whose frontmatter kb cannot edit exactly is left alone; the text is saved
            // as a new memory rather than lost.
            let editable = can_edit(&index.dir.join(best.file_name));
            if !editable {
                warnings.push(format!(
                    "memory {} ({}) matches this text (similarity {score:.1}) but its frontmatter cannot be \
                     edited without changing other values; saved as a new memory",
                    best.id, best.file_name
                ));
            }
            editable
        });
        if let Some((best, score)) = duplicate {
            let path = index.dir.join(best.file_name);
            if let Some(held) = &lock {
                self.repo.guard(&path)?;
                // A consolidation replaces a text: `kb undo` brings it back (SPEC §5, §12.4).
                let mut txn = Txn::begin(self.repo, held, "save", format!("consolidated into memory {}", best.id));
                consolidate(&mut txn, &path, &content, &tags, req.importance, now)?;
                txn.finish()?;
            }
            return Ok(SaveOutcome {
                consolidated: true,
                dry_run: req.dry_run,
                memory_id: best.id,
                path,
                similarity: Some(score),
                replaced: Some(best.content.to_string()),
                decayed: 0,
                decay_strategy: None,
                redacted,
                warnings,
            });
        }
        let id = next_id(index.max_id())?;
        let path = crate::paths::free_path(&index.dir, &text::file_name(id, &content));
        let to_decay = decay_victims(&index, &self.repo.settings);
        let strategy = self.repo.settings.memory_decay_strategy.value;
        if let Some(held) = &lock {
            self.repo.guard(&index.dir)?;
            std::fs::create_dir_all(&index.dir).map_err(io_at(&index.dir))?;
            let text = new_memory_file_with(id, &tags, None, &content, &layer_keys(&req, agent.as_deref()), now);
            // A save that decays is journaled whole (the new memory too), so `kb undo` takes it
            // back as one step; a plain save is not an entry (SPEC §12.4).
            let mut txn = if to_decay.is_empty() {
                Txn::direct()
            } else {
                let what = format!("saved memory {id}, decayed {} ({})", to_decay.len(), strategy.as_str());
                Txn::begin(self.repo, held, "save", what)
            };
            txn.write(&path, text.as_bytes())?;
            if !to_decay.is_empty() {
                decay(&mut txn, &index, &to_decay, strategy, id, now)?;
            }
            txn.finish()?;
        }
        Ok(SaveOutcome {
            consolidated: false,
            dry_run: req.dry_run,
            memory_id: id,
            path,
            similarity: None,
            replaced: None,
            decayed: to_decay.len(),
            decay_strategy: (!to_decay.is_empty()).then_some(strategy),
            redacted,
            warnings,
        })
    }

    /// Deletes the memory with frontmatter id `id`. Returns its path.
    pub fn forget(&self, id: u64) -> Result<PathBuf> {
        let lock = self.repo.lock()?;
        let index = self.scan_locked(&lock)?;
        let path = one_by_id(&index, id)?;
        self.repo.guard(&path)?;
        let mut txn = Txn::begin(self.repo, &lock, "forget", format!("forgot memory {id}"));
        txn.remove(&path)?;
        txn.finish()?;
        Ok(path)
    }

    /// Sets or removes `decay_protected: true`. Returns the path and whether the file changed.
    pub fn set_protected(&self, id: u64, protect: bool) -> Result<(PathBuf, bool)> {
        let lock = self.repo.lock()?;
        let index = self.scan_locked(&lock)?;
        let path = one_by_id(&index, id)?;
        self.repo.guard(&path)?;
        let change = ("decay_protected".to_string(), protect.then_some(Value::Bool(true)));
        let changed = rewrite_memory(&path, &[change], None)?;
        Ok((path, changed))
    }
}

/// Gives the memory file at `path` the id `id` (`kb check --fix`, SPEC §13) and returns its new
/// path: it is renamed to `{id:03}-{slug}.md` (the slug of its name when that starts with an id,
/// else of its content; `-2`... when taken), then its frontmatter `id` is set. Every other key
/// keeps its text and the body its bytes; nothing else changes (not `updated`). The rename comes
/// first, so a crash in between leaves the duplicate id for the next fix to repair, never a copy.
/// The caller holds the lock (`_held`).
pub fn renumber(repo: &Repo, _held: &fsio::Lock, path: &Path, id: u64) -> Result<PathBuf> {
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
        fsio::rename_durable(path, &target).map_err(io_at(path))?;
    }
    rewrite_memory(&target, &[("id".to_string(), Some(Value::from(id)))], None)?;
    Ok(target)
}

/// Returns the id after the highest one (1 for an empty store).
fn next_id(max: Option<u64>) -> Result<u64> {
    match max {
        None => Ok(1),
        Some(m) => m.checked_add(1).ok_or_else(|| {
            KbError::Invalid(format!("no id left after {m}: give the memory with that id a smaller one"))
        }),
    }
}

/// The frontmatter keys of SPEC §11.2 a new memory gets: each one given, and
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
        text::check_agent(agent).map_err(KbError::Invalid)?;
    }
    let tags = checked_tags(&req.tags)?;
    let mut screen = secrets::Screen::new(req.redact);
    let content = screen.field("text", content)?;
    let tags = tags.into_iter().map(|t| screen.field("tag", t)).collect::<Result<Vec<_>>>()?;
    let agent = req.agent.clone().map(|a| screen.field("agent name", a)).transpose()?;
    let redacted = screen.redacted();
    Ok(Screened { content, tags, agent, redacted })
}

/// The dedup candidates of a scan, by file name and content, with their scores: computed before
/// the lock for a large text and reused under it when the candidates did not change.
pub struct Scored {
    candidates: Vec<(String, String)>,
    scores: Vec<Option<f64>>,
}

/// Returns the recent memories of `scope` dedup compares a text with (the newest first): the
/// window and the count limit apply to the memories of that type and agent only.
fn recent_candidates<'a>(
    index: &'a Index,
    scope: DedupScope<'_>,
    settings: &Settings,
    now: DateTime<Utc>,
) -> Vec<MemoryRef<'a>> {
    let window = settings.memory_dedup_window_days.value.min(365_000) as i64;
    let cutoff: Micros = (now - chrono::Duration::days(window)).timestamp_micros();
    let mut recent: Vec<Pos> =
        index.positions().filter(|&p| index.age_key_at(p).0 >= cutoff && scope.holds(index, p)).collect();
    recent.sort_by_key(|&p| std::cmp::Reverse(index.age_key_at(p)));
    recent.truncate(DEDUP_CANDIDATES);
    recent.into_iter().map(|p| index.at(p)).collect()
}

/// Scores `content` against the candidates of `index`; `None` for a candidate the length bound
/// rules out (it cannot reach the threshold).
pub fn score_candidates(
    index: &Index,
    content: &str,
    scope: DedupScope<'_>,
    settings: &Settings,
    now: DateTime<Utc>,
) -> Scored {
    let new = Prepared::new(content);
    let threshold = settings.memory_dedup_threshold.value;
    let recent = recent_candidates(index, scope, settings, now);
    let scores = recent
        .iter()
        .map(|m| {
            let old = Prepared::new(m.content);
            (new.bound(&old) >= threshold).then(|| new.similarity(&old))
        })
        .collect();
    let candidates = recent.iter().map(|m| (m.file_name.to_string(), m.content.to_string())).collect();
    Scored { candidates, scores }
}

/// Returns the most similar recent memory when it reaches the threshold, with its score.
/// Candidates: created within the window (or in the future), newest first, at most 10; a tie
/// goes to the newer memory. Candidates whose length
/// bound cannot reach the threshold or beat the best so far are not scored; `scored`, when its
/// candidates are exactly this index's, gives the scores without computing them again.
fn find_duplicate_scored<'a>(
    index: &'a Index,
    content: &str,
    scope: DedupScope<'_>,
    settings: &Settings,
    now: DateTime<Utc>,
    scored: Option<Scored>,
) -> Option<(MemoryRef<'a>, f64)> {
    let threshold = settings.memory_dedup_threshold.value;
    let recent = recent_candidates(index, scope, settings, now);
    let reuse = scored.filter(|s| {
        s.candidates.len() == recent.len()
            && s.candidates.iter().zip(&recent).all(|((name, text), m)| name == m.file_name && text == m.content)
    });
    let new = Prepared::new(content);
    let mut best: Option<(MemoryRef<'a>, f64)> = None;
    for (i, m) in recent.into_iter().enumerate() {
        let score = match &reuse {
            Some(s) => s.scores[i],
            None => {
                let old = Prepared::new(m.content);
                let bound = new.bound(&old);
                let useless = bound < threshold || best.as_ref().is_some_and(|(_, b)| bound <= *b);
                (!useless).then(|| new.similarity(&old))
            }
        };
        let Some(score) = score else { continue };
        if best.as_ref().is_none_or(|(_, b)| score > *b) {
            best = Some((m, score));
        }
    }
    best.filter(|(_, s)| *s >= threshold)
}

/// Returns the memories a create would decay: none unless the count then exceeds the maximum;
/// else the k oldest unprotected ones, k = max(1, floor(total × percentage)). A `core_context`
/// memory is never one of them, even without `decay_protected` (SPEC §11.2).
fn decay_victims<'a>(index: &'a Index, settings: &Settings) -> Vec<MemoryRef<'a>> {
    let total = index.len() + 1;
    if total as u64 <= settings.memory_max_count.value {
        return Vec::new();
    }
    let k = ((total as f64 * settings.memory_decay_percentage.value).floor() as usize).max(1);
    let mut candidates: Vec<Pos> =
        index.positions().filter(|&p| !index.protected_at(p) && index.type_at(p) != MemoryType::CoreContext).collect();
    if candidates.len() > k {
        candidates.select_nth_unstable_by_key(k - 1, |&p| index.age_key_at(p));
        candidates.truncate(k);
    }
    candidates.sort_by_key(|&p| index.age_key_at(p));
    candidates.into_iter().map(|p| index.at(p)).collect()
}

/// Summarizes or cuts the decayed memories. The summary is written before the originals are
/// deleted, so a crash in between duplicates knowledge instead of losing it.
fn decay(
    txn: &mut Txn,
    index: &Index,
    victims: &[MemoryRef<'_>],
    strategy: DecayStrategy,
    new_id: u64,
    now: DateTime<Utc>,
) -> Result<()> {
    if strategy == DecayStrategy::Summarize {
        let tags = vec!["_consolidated".to_string(), "_auto_decay".to_string()];
        let mut last_id = index.max_id().unwrap_or(0).max(new_id);
        // One summary, unless the texts would not fit in one memory file; and one per agent, so
        // an agent's memories stay that agent's (SPEC §11.2) instead of becoming shared.
        for (agent, owned) in by_agent(victims) {
            let extra: Vec<(String, Value)> =
                agent.map(|a| ("agent".to_string(), Value::from(a))).into_iter().collect();
            for group in summary_groups(&owned) {
                let text = summary_text(group);
                let id = next_id(Some(last_id))?;
                last_id = id;
                let path = crate::paths::free_path(&index.dir, &text::file_name(id, &text));
                let file = new_memory_file_with(id, &tags, Some("auto_decay"), &text, &extra, now);
                txn.write(&path, file.as_bytes())?;
            }
        }
    }
    for m in victims {
        txn.remove(&index.dir.join(m.file_name))?;
    }
    Ok(())
}

/// Returns the decayed memories by the agent they name, each agent's in their order, the agents in
/// the order they first appear (memories naming no agent are one group, `None`).
fn by_agent<'a>(victims: &[MemoryRef<'a>]) -> Vec<(Option<&'a str>, Vec<MemoryRef<'a>>)> {
    let mut groups: Vec<(Option<&'a str>, Vec<MemoryRef<'a>>)> = Vec::new();
    let mut place: std::collections::HashMap<Option<&'a str>, usize> = std::collections::HashMap::new();
    for m in victims {
        let at = *place.entry(m.agent).or_insert_with(|| {
            groups.push((m.agent, Vec::new()));
            groups.len() - 1
        });
        groups[at].1.push(m.clone());
    }
    groups
}

/// Splits decayed memories into runs whose summary fits in one memory (usually one run).
fn summary_groups<'m, 'a>(victims: &'m [MemoryRef<'a>]) -> Vec<&'m [MemoryRef<'a>]> {
    let mut groups = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (i, m) in victims.iter().enumerate() {
        let line = m.content.len() + m.tags.iter().map(|t| t.len() + 2).sum::<usize>() + 16;
        if i > start && size + line > MAX_TEXT_BYTES {
            groups.push(&victims[start..i]);
            (start, size) = (i, 0);
        }
        size += line;
    }
    if start < victims.len() {
        groups.push(&victims[start..]);
    }
    groups
}

/// Returns co-cli's decay summary: a count line, a blank line, then `- text [tags: a, b]` per
/// memory, oldest first.
pub fn summary_text(victims: &[MemoryRef<'_>]) -> String {
    let mut text = format!("Consolidated {} old memories:\n\n", victims.len());
    for m in victims {
        text.push_str("- ");
        text.push_str(m.content);
        if !m.tags.is_empty() {
            text.push_str(&format!(" [tags: {}]", m.tags.join(", ")));
        }
        text.push('\n');
    }
    text
}

/// Returns a new memory file in co-cli's exact layout.
pub fn new_memory_file(id: u64, tags: &[String], source: Option<&str>, content: &str, now: DateTime<Utc>) -> String {
    new_memory_file_with(id, tags, source, content, &[], now)
}

/// Returns a new memory file in co-cli's exact layout with extra frontmatter keys (co-cli keeps
/// unknown keys), e.g. the `citations` and `reason` of an imported Copilot record. An extra key
/// never replaces one of the five co-cli keys.
pub fn new_memory_file_with(
    id: u64,
    tags: &[String],
    source: Option<&str>,
    content: &str,
    extra: &[(String, Value)],
    now: DateTime<Utc>,
) -> String {
    let category = if source.is_some() { None } else { detect_category(tags) };
    let source = source.unwrap_or_else(|| detect_source(tags));
    let mut entries = vec![
        ("auto_category".into(), frontmatter::entry("auto_category", &category.map_or(Value::Null, Value::from))),
        ("created".into(), entry_text("created", &Value::from(time::py_isoformat(now)))),
        ("id".into(), frontmatter::entry("id", &Value::from(id))),
        ("source".into(), frontmatter::entry("source", &Value::from(source))),
        ("tags".into(), frontmatter::entry("tags", &Value::from(tags.to_vec()))),
    ];
    for (k, v) in extra {
        if !entries.iter().any(|(have, _)| have == k) {
            entries.push((k.clone(), frontmatter::entry(k, v)));
        }
    }
    frontmatter::compose(&frontmatter::assemble(entries), content)
}

/// Writes a new memory file named as co-cli names it, with extra frontmatter keys. The caller
/// holds the lock and chose a free id. Returns its path.
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
/// writing it.
fn updated_text(
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

/// Returns a frontmatter entry; timestamps are single-quoted as PyYAML writes them.
fn entry_text(key: &str, value: &Value) -> String {
    match (key, value) {
        ("created" | "updated", Value::String(s)) if !s.contains('\'') => format!("{key}: '{s}'\n"),
        _ => frontmatter::entry(key, value),
    }
}

/// Replaces a memory's body and merges tags (co-cli.md §2.5): existing tags first, then new ones;
/// sets `updated`; recomputes `source` and `auto_category`; drops `consolidation_reason`; keeps
/// every other key as written, and the file name.
///
/// `importance`, when given, raises the memory's (SPEC §11.2: the higher one is kept): the key is
/// written only when the given one is higher than the memory's effective importance, so a save
/// never lowers it and never writes a value the file already means. `type` and `agent` are left
/// as written: dedup only matched a memory whose effective ones are the same.
fn consolidate(
    txn: &mut Txn,
    path: &Path,
    content: &str,
    new_tags: &[String],
    importance: Option<Importance>,
    now: DateTime<Utc>,
) -> Result<()> {
    let out = consolidated_text(path, content, new_tags, importance, false, now)?;
    txn.write(path, out.as_bytes())
}

/// Returns the text a consolidation into the memory at `path` writes (see [`consolidate`]),
/// without writing it; with `protect`, the memory also gets `decay_protected: true` (`kb
/// consolidate` merging a protected memory into it keeps the protection).
pub fn consolidated_text(
    path: &Path,
    content: &str,
    new_tags: &[String],
    importance: Option<Importance>,
    protect: bool,
    now: DateTime<Utc>,
) -> Result<String> {
    let text = fsio::read_text(path)?;
    let m = file::parse(&text).map_err(|d| KbError::BadFile(d.in_file(path)))?;
    let raised = importance.filter(|&i| i > m.effective_importance());
    let protect = protect && !m.decay_protected;
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
    if protect {
        changes.push(("decay_protected".to_string(), Some(Value::Bool(true))));
    }
    // With a body, the text is always rewritten.
    Ok(rewritten(path, &changes, Some(content))?.unwrap_or(text))
}

/// Returns whether kb can rewrite this memory's frontmatter exactly (see `rewrite_memory`).
pub fn can_edit(path: &Path) -> bool {
    let Ok(text) = fsio::read_text(path) else { return false };
    let Ok(split) = frontmatter::split(&text) else { return false };
    frontmatter::parse(split.yaml).is_ok_and(|fields| frontmatter::raw_entries(split.yaml, &fields).is_some())
}

/// Rewrites a memory file: each change sets a key (`Some`) or removes it (`None`); every other
/// entry keeps its exact text, comments and place. With `body`, the file is written in co-cli's
/// layout with that body; without, only the YAML between the fences changes and the body keeps its
/// bytes. Returns whether anything changed (nothing is written otherwise).
fn rewrite_memory(path: &Path, changes: &[(String, Option<Value>)], body: Option<&str>) -> Result<bool> {
    match rewritten(path, changes, body)? {
        Some(out) => {
            fsio::write_atomic(path, out.as_bytes()).map_err(io_at(path))?;
            Ok(true)
        }
        None => Ok(false),
    }
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

/// Returns the path of the only valid memory with this id.
fn one_by_id(index: &Index, id: u64) -> Result<PathBuf> {
    let found = index.by_id(id);
    match found.as_slice() {
        [] => Err(KbError::NotFound(id.to_string())),
        [one] => Ok(index.dir.join(one.file_name)),
        many => Err(KbError::DuplicateId { id, files: many.iter().map(|m| m.file_name.to_string()).collect() }),
    }
}

/// Recall: memories whose text or a tag contains `query` (case-insensitive), newest first.
pub fn recall<'a>(index: &'a Index, query: &str, limit: usize) -> Vec<MemoryRef<'a>> {
    let words = query_words(query);
    let found =
        |p: Pos, w: &str| contains_lower(index.content_at(p), w) || index.tags_at(p).any(|t| contains_lower(t, w));
    let mut hits: Vec<Pos> = index.positions().filter(|&p| words.iter().all(|w| found(p, w))).collect();
    let newest_first = |p: &Pos| std::cmp::Reverse(index.age_key_at(*p));
    if hits.len() > limit && limit > 0 {
        hits.select_nth_unstable_by_key(limit - 1, newest_first);
    }
    hits.truncate(limit);
    hits.sort_by_key(newest_first);
    hits.into_iter().map(|p| index.at(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(rewrite_memory(&path, &[("decay_protected".into(), Some(Value::Bool(true)))], None).unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("decay_protected").count(), 1, "{text}");
        update_memory(&mut Txn::direct(), &path, None, &[("citations".into(), Value::from(vec!["a", "b"]))], now)
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("citations").count(), 1, "{text}");
        assert!(text.contains("citations:\n- a\n- b\n") && text.contains("updated: '2026-11-22T12:00:00+00:00'\n"));
        update_memory(&mut Txn::direct(), &path, Some("  new body\n"), &[("reason".into(), Value::from("why"))], now)
            .unwrap();
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
