//! The decision store (docs/behaviour.md, Decisions): `.co-cli/knowledge/decisions/{id:03}-{slug}.md`, its own id
//! sequence, add with dedup against the open decisions, supersede, and status changes.
//!
//! Reads skip a malformed file with a diagnostic and never write. Every write takes the
//! repository lock, scans inside it, checks the path with `repo.guard` and replaces files
//! atomically; keys kb does not change keep their text (`frontmatter::raw_entries`).

pub mod file;

use crate::error::{Diagnostic, KbError, io_at};
use crate::format::frontmatter;
use crate::format::merge;
use crate::format::similarity::Prepared;
use crate::journal::Txn;
use crate::provenance::UPDATED_BY;
use crate::repo::Repo;
use crate::secrets;
use file::{Decision, DecisionKind, Status};
use serde_json::Value;
use std::path::{Path, PathBuf};

type Result<T> = std::result::Result<T, KbError>;

/// The decisions of one repository.
#[derive(Debug, Clone, Copy)]
pub struct DecisionStore<'r> {
    repo: &'r Repo,
}

/// The decisions read from the folder, and the files skipped.
#[derive(Debug, Default)]
pub struct Scan {
    pub dir: PathBuf,
    /// Valid decisions with their paths, in file-name order.
    pub decisions: Vec<(PathBuf, Decision)>,
    /// One diagnostic per skipped file.
    pub problems: Vec<Diagnostic>,
    /// How many `.md` files were looked at.
    pub files: usize,
    /// The highest id on an `id: N` line of a file that did not parse (a merge may have left it
    /// with conflict markers): the id sequence never reuses it.
    pub skipped_max_id: Option<u64>,
}

impl Scan {
    /// Returns the highest id written in any decision file, valid or not.
    fn max_id(&self) -> Option<u64> {
        self.decisions.iter().map(|(_, d)| d.id).chain(self.skipped_max_id).max()
    }

    /// Returns the only valid decision with this id.
    pub fn by_id(&self, id: u64) -> Result<&(PathBuf, Decision)> {
        let found: Vec<&(PathBuf, Decision)> = self.decisions.iter().filter(|(_, d)| d.id == id).collect();
        match found.as_slice() {
            [] => Err(KbError::not_found("decision", id)),
            [one] => Ok(one),
            many => {
                let files = many.iter().map(|(p, _)| name_of(p).to_string()).collect();
                Err(KbError::duplicate_id("decision", id, files))
            }
        }
    }

    /// The consistency problems `kb check` reports beyond unreadable files: duplicate ids, and a
    /// superseded decision without a `superseded_by` that exists.
    pub fn consistency_problems(&self) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for (path, d) in &self.decisions {
            let others: Vec<String> =
                self.decisions.iter().filter(|(p, o)| o.id == d.id && p != path).map(|(p, _)| name_of(p)).collect();
            if !others.is_empty() {
                // The line of the `id` entry (`kb check` names each with path and line).
                let line = std::fs::read(path).ok().and_then(|b| merge::id_line(&String::from_utf8_lossy(&b)));
                out.push(
                    Diagnostic::error(
                        line,
                        format!("duplicate decision id {}: also used by {}", d.id, others.join(", ")),
                    )
                    .in_file(path),
                );
            }
            if d.status == Status::Superseded {
                match d.superseded_by {
                    None => out.push(
                        Diagnostic::error(
                            None,
                            "status superseded without superseded_by: name the decision that replaces it",
                        )
                        .in_file(path),
                    ),
                    Some(by) if !self.decisions.iter().any(|(_, o)| o.id == by) => out.push(
                        Diagnostic::error(None, format!("superseded_by {by}: no decision has that id")).in_file(path),
                    ),
                    Some(_) => {}
                }
            }
        }
        out
    }
}

fn name_of(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// What a write did.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The decision written or changed (for add when it exists, the match).
    pub id: u64,
    pub path: PathBuf,
    /// For an add that found a near-duplicate: its score.
    pub similarity: Option<f64>,
    /// Whether an add found a near-duplicate and wrote nothing.
    pub exists: bool,
    /// For supersede: the old decision.
    pub superseded: Option<u64>,
    /// Secret rules whose matches were redacted.
    pub redacted: Vec<&'static str>,
    /// The type of the decision written or changed (for add when it exists, the match's).
    pub kind: DecisionKind,
}

/// A new decision's text and labels.
#[derive(Debug, Clone)]
pub struct NewDecision {
    pub content: String,
    /// `None` for supersede: the old decision's type.
    pub kind: Option<DecisionKind>,
    pub tags: Vec<String>,
    pub redact: bool,
}

/// The status changes of `accept`, `reject` and `archive`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Accept,
    Reject,
    Archive,
}

impl Change {
    /// The statuses a decision may have for this change, and the one it gets.
    fn rule(self) -> (&'static [Status], Status) {
        match self {
            Change::Accept => (&[Status::Proposed], Status::Active),
            Change::Reject => (&[Status::Proposed], Status::Rejected),
            Change::Archive => (&[Status::Proposed, Status::Active], Status::Archived),
        }
    }

    pub fn verb(self) -> &'static str {
        match self {
            Change::Accept => "accept",
            Change::Reject => "reject",
            Change::Archive => "archive",
        }
    }
}

impl<'r> DecisionStore<'r> {
    /// Returns the decision store of `repo`.
    pub fn new(repo: &'r Repo) -> DecisionStore<'r> {
        DecisionStore { repo }
    }

    /// Reads every decision file. A missing folder is an empty store; a malformed file is skipped
    /// with a diagnostic; nothing is written.
    pub fn scan(&self) -> Result<Scan> {
        let dir = self.repo.layout.decisions();
        let mut scan = Scan { dir: dir.clone(), ..Scan::default() };
        let listing = match std::fs::read_dir(&dir) {
            Ok(l) => l,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(scan),
            Err(e) => return Err(io_at(&dir)(e)),
        };
        let mut paths: Vec<PathBuf> = Vec::new();
        for entry in listing {
            let entry = entry.map_err(io_at(&dir))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".md") && !name.starts_with('.') {
                paths.push(entry.path());
            }
        }
        paths.sort();
        for path in paths {
            scan.files += 1;
            let bytes = match crate::fsio::read_input(&path, &self.repo.layout.root) {
                Ok(Some(b)) => b,
                Ok(None) => continue,
                Err(e) => {
                    scan.problems.push(Diagnostic::error(None, format!("cannot read: {e}")).in_file(&path));
                    continue;
                }
            };
            if bytes.len() as u64 > crate::format::text::MAX_FILE_BYTES {
                let msg = format!("{} bytes: larger than a decision file may be", bytes.len());
                scan.problems.push(Diagnostic::error(None, msg).in_file(&path));
                continue;
            }
            match crate::format::text::decode(&bytes).and_then(file::parse) {
                Ok(d) => scan.decisions.push((path, d)),
                Err(d) => {
                    let written = merge::written_id(&String::from_utf8_lossy(&bytes));
                    scan.skipped_max_id = scan.skipped_max_id.max(written);
                    scan.problems.push(d.in_file(&path));
                }
            }
        }
        Ok(scan)
    }

    /// Adds an active decision, unless an open one says nearly the same (then nothing is
    /// written and the outcome names the match).
    pub fn add(&self, txn: &mut Txn, new: Screened) -> Result<Outcome> {
        self.insert(txn, new, Status::Active)
    }

    /// Adds a proposed decision (an agent's, over MCP: it applies only once a person accepts
    /// it), with the same dedup as `add`.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub fn propose(&self, txn: &mut Txn, new: Screened) -> Result<Outcome> {
        self.insert(txn, new, Status::Proposed)
    }

    /// Adds an active decision for a proposal the person `accepted_by` accepted (`kb inbox
    /// accept`; the repository's author is the agent that proposed it), with the same dedup as
    /// `add`.
    pub fn add_accepted(&self, txn: &mut Txn, new: Screened, accepted_by: Option<&str>) -> Result<Outcome> {
        self.insert_as(txn, new, Status::Active, accepted_by)
    }

    /// Returns the id and score of the open decision that already says nearly `content`, if
    /// one does: what an add would report as `exists`.
    pub fn open_duplicate(&self, content: &str) -> Result<Option<(u64, f64)>> {
        let scan = self.scan()?;
        Ok(self.duplicate(&scan, content).map(|((_, d), score)| (d.id, score)))
    }

    /// Adds a decision with `status` (active or proposed) unless an open one says nearly the same.
    fn insert(&self, txn: &mut Txn, new: Screened, status: Status) -> Result<Outcome> {
        self.insert_as(txn, new, status, None)
    }

    /// Adds a decision as [`Self::insert`] does, with `accepted_by` when given.
    fn insert_as(&self, txn: &mut Txn, new: Screened, status: Status, accepted_by: Option<&str>) -> Result<Outcome> {
        let Screened { content, tags, kind, redacted } = new;
        let kind = kind.ok_or_else(|| KbError::rejected("type", "a decision needs a type"))?;
        let scan = self.scan()?;
        if let Some(((path, d), score)) = self.duplicate(&scan, &content) {
            return Ok(Outcome {
                id: d.id,
                path: path.clone(),
                similarity: Some(score),
                exists: true,
                superseded: None,
                redacted,
                kind: d.kind,
            });
        }
        let (id, path) = self.create_in(txn, &scan, kind, status, &tags, &content, accepted_by)?;
        Ok(Outcome { id, path, similarity: None, exists: false, superseded: None, redacted, kind })
    }

    /// Replaces the active decision `old` with a new active one (type and tags default to the
    /// old one's); the old one gets `status: superseded`, `superseded_by` and `updated`.
    pub fn supersede(&self, txn: &mut Txn, old: u64, new: Screened) -> Result<Outcome> {
        let Screened { content, tags, kind, redacted } = new;
        let scan = self.scan()?;
        let (old_path, old_d) = scan.by_id(old)?;
        if old_d.status != Status::Active {
            return Err(KbError::WrongStatus {
                id: old,
                status: old_d.status.as_str(),
                allowed: "an active".into(),
                action: "superseded".into(),
            });
        }
        let old_path = old_path.clone();
        let kind = kind.unwrap_or(old_d.kind);
        let tags = if tags.is_empty() { old_d.tags.clone() } else { tags };
        editable(&old_path)?;
        // The new decision first: a crash in between leaves two active decisions, never a
        // superseded one pointing nowhere. Both writes go through one transaction.
        let (id, path) = self.create_in(txn, &scan, kind, Status::Active, &tags, &content, None)?;
        let changes = [
            ("status", frontmatter::entry("status", &Value::from(Status::Superseded.as_str()))),
            ("superseded_by", frontmatter::entry("superseded_by", &Value::from(id))),
            ("updated", file::timestamp_entry("updated", self.repo.now)),
        ];
        self.repo.guard(&old_path)?;
        rewrite_in(txn, &old_path, &self.authored(&changes))?;
        Ok(Outcome { id, path, similarity: None, exists: false, superseded: Some(old), redacted, kind })
    }

    /// Accepts, rejects or archives decision `id`, setting `status` and `updated`. A decision in
    /// another status is an error naming it.
    pub fn change(&self, txn: &mut Txn, id: u64, change: Change) -> Result<Outcome> {
        let scan = self.scan()?;
        let (path, d) = scan.by_id(id)?;
        let (from, to) = change.rule();
        if !from.contains(&d.status) {
            let allowed: Vec<&str> = from.iter().map(|s| s.as_str()).collect();
            return Err(KbError::WrongStatus {
                id,
                status: d.status.as_str(),
                allowed: format!("a {}", allowed.join(" or ")),
                action: format!("{}ed", change.verb().trim_end_matches('e')),
            });
        }
        let changes = [
            ("status", frontmatter::entry("status", &Value::from(to.as_str()))),
            ("updated", file::timestamp_entry("updated", self.repo.now)),
        ];
        self.repo.guard(path)?;
        rewrite_in(txn, path, &self.authored(&changes))?;
        let (path, kind) = (path.clone(), d.kind);
        Ok(Outcome { id, path, similarity: None, exists: false, superseded: None, redacted: Vec::new(), kind })
    }

    /// Returns a rewrite's `changes` with `updated_by` added when the author is known.
    fn authored<'c>(&self, changes: &[(&'c str, String)]) -> Vec<(&'c str, String)> {
        let mut all = changes.to_vec();
        if let Some(author) = self.repo.author() {
            all.push((UPDATED_BY, frontmatter::entry(UPDATED_BY, &Value::from(author))));
        }
        all
    }

    /// Returns the most similar open decision at or above the threshold (ties: the newer one).
    fn duplicate<'s>(&self, scan: &'s Scan, content: &str) -> Option<(&'s (PathBuf, Decision), f64)> {
        let threshold = self.repo.settings.memory_dedup_threshold.value;
        let new = Prepared::new(content);
        let mut best: Option<(&(PathBuf, Decision), f64)> = None;
        for entry in scan.decisions.iter().filter(|(_, d)| d.status.is_open()) {
            let old = Prepared::new(&entry.1.content);
            if new.bound(&old) < threshold {
                continue;
            }
            let score = new.similarity(&old);
            let better = match best {
                None => true,
                Some((b, s)) => score > s || (score == s && entry.1.age_key() > b.1.age_key()),
            };
            if better {
                best = Some((entry, score));
            }
        }
        best.filter(|(_, s)| *s >= threshold)
    }

    /// Writes a new decision with the next id through `txn`. The caller holds the lock.
    #[allow(clippy::too_many_arguments)]
    fn create_in(
        &self,
        txn: &mut Txn,
        scan: &Scan,
        kind: DecisionKind,
        status: Status,
        tags: &[String],
        content: &str,
        accepted_by: Option<&str>,
    ) -> Result<(u64, PathBuf)> {
        let id = match scan.max_id() {
            None => 1,
            Some(m) => m
                .checked_add(1)
                .ok_or_else(|| KbError::refused("decision add", format!("no decision id left after {m}")))?,
        };
        self.repo.guard(&scan.dir)?;
        std::fs::create_dir_all(&scan.dir).map_err(io_at(&scan.dir))?;
        let path = crate::paths::free_path(&scan.dir, &file::file_name(id, content));
        self.repo.guard(&path)?;
        let author = self.repo.author();
        let text = file::new_file(id, kind, status, tags, content, author.as_deref(), accepted_by, self.repo.now);
        txn.write(&path, text.as_bytes())?;
        Ok((id, path))
    }
}

/// A decision's text, tags and type once checked and screened ([`screen`]).
pub struct Screened {
    content: String,
    tags: Vec<String>,
    kind: Option<DecisionKind>,
    redacted: Vec<&'static str>,
}

/// Applies the text rules and the secret filter, before the lock is taken; returns what to
/// store and the rules redacted.
pub fn screen(new: NewDecision) -> Result<Screened> {
    let empty = "nothing to record: the decision text is empty";
    let content = crate::format::text::checked_text(&new.content, &new.tags, ("decision", "decisions"), empty)?;
    let tags = crate::format::text::checked_tags(&new.tags)?;
    let mut screen = secrets::Screen::new(new.redact);
    let content = screen.field("text", content)?;
    let tags = tags.into_iter().map(|t| screen.field("tag", t)).collect::<Result<Vec<_>>>()?;
    let redacted = screen.redacted();
    Ok(Screened { content, tags, kind: new.kind, redacted })
}

/// Fails unless kb can rewrite this file's frontmatter keeping every other entry's text.
fn editable(path: &Path) -> Result<()> {
    let text = crate::fsio::read_text(path)?;
    let split = frontmatter::split(&text).map_err(|_| KbError::bad_file(path, Some(1), "no frontmatter"))?;
    let fields = frontmatter::parse(split.yaml).map_err(|e| KbError::bad_file(path, e.line, &e.message))?;
    frontmatter::raw_entries(split.yaml, &fields).map(|_| ()).ok_or_else(|| {
        KbError::bad_file(
            path,
            Some(split.yaml_line),
            "its frontmatter uses YAML that kb cannot edit without changing other values; edit the file by hand",
        )
    })
}

/// Sets keys of a decision file's frontmatter through `txn` (each change is the key and its entry
/// text); every other entry keeps its text, comments and place, and the body its bytes. The caller
/// holds the lock.
fn rewrite_in(txn: &mut Txn, path: &Path, changes: &[(&str, String)]) -> Result<()> {
    let text = crate::fsio::read_text(path)?;
    file::parse(&text).map_err(|d| KbError::BadFile(d.in_file(path)))?;
    editable(path)?;
    let split = frontmatter::split(&text).map_err(|_| KbError::bad_file(path, Some(1), "no frontmatter"))?;
    let fields = frontmatter::parse(split.yaml).map_err(|e| KbError::bad_file(path, e.line, &e.message))?;
    let raw = frontmatter::raw_entries(split.yaml, &fields)
        .ok_or_else(|| KbError::bad_file(path, Some(split.yaml_line), "frontmatter kb cannot edit"))?;
    let edits: Vec<(String, Option<String>)> = changes.iter().map(|(k, v)| (k.to_string(), Some(v.clone()))).collect();
    let yaml = frontmatter::edit_entries(raw, &edits);
    txn.write(path, frontmatter::replace_yaml(&text, split.yaml, &yaml).as_bytes())
}
