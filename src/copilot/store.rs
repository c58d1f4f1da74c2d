//! The record store: saving (dedup within a subject, consolidation), votes and forgetting, each
//! written through the operation's transaction ([`RecordStore::write`], the store's one write).

use super::jsonl::{self, Edit, JsonlFile};
use super::record::{CitationsForm, Votes};
use crate::error::{Diagnostic, KbError};
use crate::format::frontmatter;
use crate::format::salient::{NearMiss, SaveAction, Verdict, Why, judge};
use crate::format::time::{self};
use crate::journal::Txn;
use crate::provenance::{ACCEPTED_BY, UPDATED_BY};
use crate::repo::Repo;
use crate::secrets;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

type Result<T> = std::result::Result<T, KbError>;
use super::records::*;

/// A request to store a record.
#[derive(Debug, Clone, Default)]
pub struct RecordRequest {
    pub subject: String,
    pub fact: String,
    pub citations: Vec<String>,
    pub reason: String,
    pub category: Option<String>,
    pub dry_run: bool,
    pub redact: bool,
    /// Appends a new record whatever the file holds (`--no-dedup`).
    pub no_dedup: bool,
}

/// What a save did (or, with `dry_run`, would do).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSaveOutcome {
    pub action: SaveAction,
    pub dry_run: bool,
    pub id: String,
    pub path: PathBuf,
    /// 1-based line of the record after the write.
    pub line: usize,
    pub similarity: Option<f64>,
    /// The fact a consolidation replaced.
    pub replaced: Option<String>,
    pub redacted: Vec<&'static str>,
    /// The similar record a new record was saved beside instead of consolidated into, and why.
    pub similar_to: Option<(String, NearMiss)>,
}

pub use crate::kinds::Direction;

/// The record a vote is for: its id, or its fact, matched exactly (Copilot's `vote_memory`
/// names a memory by its fact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoteTarget<'a> {
    Id(&'a str),
    /// Only MCP's `vote_memory` names a record by its fact.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    Fact(&'a str),
}

/// What a vote did.
#[derive(Debug, Clone, PartialEq)]
pub struct VoteOutcome {
    pub id: String,
    pub path: PathBuf,
    pub line: usize,
    pub votes: Votes,
    /// Secret rules whose matches were redacted from the reason.
    pub redacted: Vec<&'static str>,
}

/// What a forget did.
#[derive(Debug, Clone, PartialEq)]
pub struct ForgetOutcome {
    pub id: String,
    pub path: PathBuf,
    /// The line the record was on.
    pub line: usize,
    pub subject: String,
}

/// A record kb is about to append, keys in kb's order.
#[derive(Debug, Serialize)]
pub struct Draft<'a> {
    pub id: &'a str,
    pub subject: &'a str,
    pub fact: &'a str,
    pub citations: &'a [String],
    pub reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<&'a str>,
    /// The markdown memory's tags, when the record comes from `kb export`.
    #[serde(skip)]
    pub tags: Option<&'a [String]>,
    /// Who creates it (provenance), written after `created`.
    #[serde(skip)]
    pub created_by: Option<&'a str>,
    /// The person who accepted it, when an agent proposed it (`kb inbox accept`), written after
    /// `created_by`.
    #[serde(skip)]
    pub accepted_by: Option<&'a str>,
}

impl Draft<'_> {
    /// Returns the record's JSON line, created `now`, source `{"agent":"kb"}`.
    pub fn line(&self, now: DateTime<Utc>) -> String {
        #[derive(Serialize)]
        struct Line<'b> {
            #[serde(flatten)]
            draft: &'b Draft<'b>,
            source: Agent,
            created: String,
            #[serde(skip_serializing_if = "Option::is_none")]
            created_by: Option<&'b str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            accepted_by: Option<&'b str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            tags: Option<&'b [String]>,
        }
        let line = Line {
            draft: self,
            source: Agent { agent: AGENT },
            created: time::py_isoformat(now),
            created_by: self.created_by,
            accepted_by: self.accepted_by,
            tags: self.tags,
        };
        serde_json::to_string(&line).unwrap_or_default()
    }
}

#[derive(Serialize)]
struct Agent {
    agent: &'static str,
}

/// Returns a JSON string literal.
pub fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Returns a record's line with `changes` (key, JSON text) applied in place, and its id written
/// when it was derived. Untouched keys keep their text and order; a CR before the line feed goes.
pub fn edit_line(file: &JsonlFile, rec: &Record<'_>, changes: Vec<(&str, String)>) -> Result<String> {
    let mut changes = changes;
    if !rec.id_in_file {
        changes.insert(0, ("id", json_str(rec.id)));
    }
    let raw = file.raw(rec.index);
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let text = std::str::from_utf8(raw).map_err(|_| bad_line(file, rec.index, "not valid UTF-8"))?;
    jsonl::set_members(text, &changes).ok_or_else(|| bad_line(file, rec.index, "cannot edit this record"))
}

fn bad_line(file: &JsonlFile, index: usize, message: &str) -> KbError {
    KbError::BadFile(Diagnostic::error(Some(index + 1), message).in_file(&file.path))
}

/// Returns `existing` followed by each of `new` not already there, and whether that differs from
/// what the file holds.
pub fn merge_citations(existing: &[Cow<'_, str>], form: CitationsForm, new: &[String]) -> (Vec<String>, bool) {
    let mut out: Vec<String> = existing.iter().map(|c| c.to_string()).collect();
    for c in new {
        if !out.contains(c) {
            out.push(c.clone());
        }
    }
    let changed = out.len() != existing.len() || (form == CitationsForm::String && !out.is_empty());
    (out, changed)
}

/// The Copilot record store of one repository.
#[derive(Debug, Clone, Copy)]
pub struct RecordStore<'r> {
    repo: &'r Repo,
}

impl<'r> RecordStore<'r> {
    /// Returns the Copilot record store of `repo`.
    pub fn new(repo: &'r Repo) -> RecordStore<'r> {
        RecordStore { repo }
    }

    /// Returns the JSONL file's path.
    pub fn path(&self) -> PathBuf {
        self.repo.layout.copilot_memories()
    }

    /// Reads the file (a missing file is empty).
    pub fn read(&self) -> Result<JsonlFile> {
        let path = self.path();
        JsonlFile::read(&path, &self.repo.layout.root).map_err(|source| KbError::Io { path, source })
    }

    /// Rewrites the file with `edits` through `txn`, streamed from the old bytes (the journal,
    /// when the operation keeps one, records the prior bytes first). Returns the line numbers of
    /// appended lines. Nothing is written when there is no edit. This is the store's one write.
    pub fn write(&self, txn: &mut Txn, file: &JsonlFile, edits: &[Edit]) -> Result<Vec<usize>> {
        if edits.is_empty() {
            return Ok(Vec::new());
        }
        let path = &file.path;
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|source| KbError::Io { path: dir.to_path_buf(), source })?;
        self.repo.guard(dir)?;
        txn.write_streamed(path, |w| file.render_to(edits, w).map(drop))?;
        Ok(file.appended_lines(edits))
    }

    /// Decides what storing a screened record does ([`screen`]): dedup within its subject, then
    /// consolidate into the match or append (always append with `no_dedup`, under an id of its
    /// own). The caller holds the lock unless it is a dry run; [`RecordSavePlan::write`] writes it.
    pub fn plan_save(&self, req: RecordRequest, redacted: Vec<&'static str>) -> Result<RecordSavePlan> {
        self.plan_save_accepted(req, redacted, None)
    }

    /// Decides what storing a record does, as [`RecordStore::plan_save`], for a proposal the
    /// person `accepted_by` accepted (`kb inbox accept`): the record it creates or consolidates
    /// into gets `accepted_by`.
    pub fn plan_save_accepted(
        &self,
        req: RecordRequest,
        redacted: Vec<&'static str>,
        accepted_by: Option<&str>,
    ) -> Result<RecordSavePlan> {
        let now = self.repo.now;
        let file = self.read()?;
        let all = Records::parse(&file);
        let threshold = self.repo.settings.memory_dedup_threshold.value;
        let duplicate = if req.no_dedup { None } else { all.find_duplicate(&req.subject, &req.fact, threshold) };
        let author = self.repo.author();
        let mut similar_to = None;
        if let Some((rec, score)) = duplicate {
            let fields = all.fields(&rec);
            // Over MCP, a record no agent wrote is a person's: an agent's save never rewrites it.
            let agent_wrote = crate::provenance::by_agent(fields.created_by.as_deref());
            let kept = (self.repo.env.actor.is_agent() && !agent_wrote).then_some(Why::WrittenByPerson);
            let outcome = |action| RecordSaveOutcome {
                action,
                dry_run: req.dry_run,
                id: rec.id.to_string(),
                path: file.path.clone(),
                line: rec.line(),
                similarity: Some(score),
                replaced: (action == SaveAction::Consolidate).then(|| rec.fact.to_string()),
                redacted: redacted.clone(),
                similar_to: None,
            };
            match judge(rec.fact, &req.fact, score, kept) {
                Verdict::Consolidate => {
                    let (citations, cites_changed) =
                        merge_citations(&fields.citations, fields.citations_form, &req.citations);
                    let mut changes = vec![("fact", json_str(&req.fact))];
                    if cites_changed {
                        changes.push(("citations", serde_json::to_string(&citations).unwrap_or_default()));
                    }
                    if fields.reason.as_deref() != Some(req.reason.as_str()) {
                        changes.push(("reason", json_str(&req.reason)));
                    }
                    if let Some(c) = req.category.as_deref().filter(|c| rec.category != Some(*c)) {
                        changes.push(("category", json_str(c)));
                    }
                    changes.push(("updated", json_str(&time::py_isoformat(now))));
                    if let Some(author) = &author {
                        changes.push((UPDATED_BY, json_str(author)));
                    }
                    if let Some(person) = accepted_by {
                        changes.push((ACCEPTED_BY, json_str(person)));
                    }
                    let line = edit_line(&file, &rec, changes)?;
                    let outcome = outcome(SaveAction::Consolidate);
                    let edit = Some(Edit::Replace(rec.index, line));
                    return Ok(RecordSavePlan { outcome, file, edit, saved: Some(req.fact) });
                }
                Verdict::Exists => {
                    let outcome = outcome(SaveAction::Exists);
                    return Ok(RecordSavePlan { outcome, file, edit: None, saved: None });
                }
                Verdict::NearMiss(miss) => similar_to = Some((rec.id.to_string(), miss)),
            }
        }
        let taken = all.ids();
        let id = draw_id(&req.subject, &req.fact, |c| taken.contains(c));
        let line = Draft {
            id: &id,
            subject: &req.subject,
            fact: &req.fact,
            citations: &req.citations,
            reason: &req.reason,
            category: req.category.as_deref(),
            tags: None,
            created_by: author.as_deref(),
            accepted_by,
        }
        .line(now);
        let outcome = RecordSaveOutcome {
            action: SaveAction::Create,
            dry_run: req.dry_run,
            id,
            path: file.path.clone(),
            line: file.len() + 1,
            similarity: None,
            replaced: None,
            redacted,
            similar_to,
        };
        Ok(RecordSavePlan { outcome, file, edit: Some(Edit::Append(line)), saved: None })
    }

    /// Counts a vote in the record's `votes` (other members of `votes` are kept) and notes it in
    /// `last_vote` (direction, reason, time), through `txn`. `reason` was checked by
    /// [`vote_reason`]; `redacted` names the secret rules it redacted.
    pub fn vote(
        &self,
        txn: &mut Txn,
        target: VoteTarget<'_>,
        direction: Direction,
        reason: &str,
        redacted: Vec<&'static str>,
    ) -> Result<VoteOutcome> {
        let now = self.repo.now;
        let file = self.read()?;
        let all = Records::parse(&file);
        let rec = match target {
            VoteTarget::Id(id) => all.one(id)?,
            VoteTarget::Fact(fact) => all.by_fact(fact)?,
        };
        if !rec.votes_ok {
            return Err(bad_line(&file, rec.index, "\"votes\" is malformed; fix it by hand before voting"));
        }
        let mut votes = rec.votes;
        match direction {
            Direction::Up => votes.up = votes.up.saturating_add(1),
            Direction::Down => votes.down = votes.down.saturating_add(1),
        }
        let raw = file.raw(rec.index);
        let text = std::str::from_utf8(raw.strip_suffix(b"\r").unwrap_or(raw)).unwrap_or("");
        let existing = jsonl::members(text)
            .and_then(|(_, _, ms)| ms.into_iter().find(|m| m.key == "votes"))
            .map(|m| &text[m.value_start..m.value_end])
            .filter(|v| v.starts_with('{'));
        let counts = [("up", votes.up.to_string()), ("down", votes.down.to_string())];
        let votes_json = match existing.and_then(|v| jsonl::set_members(v, &counts)) {
            Some(v) => v,
            None => serde_json::to_string(&votes).unwrap_or_default(),
        };
        #[derive(Serialize)]
        struct LastVote<'a> {
            direction: &'a str,
            reason: &'a str,
            at: String,
        }
        let last = LastVote { direction: direction.as_str(), reason, at: time::py_isoformat(now) };
        let last = serde_json::to_string(&last).unwrap_or_default();
        let line = edit_line(&file, &rec, vec![("votes", votes_json), ("last_vote", last)])?;
        self.write(txn, &file, &[Edit::Replace(rec.index, line)])?;
        Ok(VoteOutcome { id: rec.id.to_string(), path: file.path.clone(), line: rec.line(), votes, redacted })
    }

    /// Deletes the record with this id through `txn` (its line goes; every other line stays as
    /// it was); an agent may delete only a record an agent wrote.
    pub fn forget(&self, txn: &mut Txn, id: &str) -> Result<ForgetOutcome> {
        let file = self.read()?;
        let all = Records::parse(&file);
        let rec = all.one(id)?;
        let created_by = all.fields(&rec).created_by;
        let (what, command) = (format!("Copilot memory {}", rec.id), format!("`kb forget {}`", rec.id));
        crate::provenance::agent_may_change(&self.repo.env.actor, created_by.as_deref(), "forget", &what, &command)?;
        self.write(txn, &file, &[Edit::Delete(rec.index)])?;
        Ok(ForgetOutcome {
            id: rec.id.to_string(),
            path: file.path.clone(),
            line: rec.line(),
            subject: rec.subject.to_string(),
        })
    }
}

/// Checks a vote's reason: stripped, not empty; a secret in it is refused, or with `redact`
/// replaced by `[REDACTED:<rule>]`. Returns the reason and the rules redacted.
pub fn vote_reason(reason: &str, redact: bool) -> Result<(String, Vec<&'static str>)> {
    let reason = frontmatter::py_strip(reason);
    if reason.is_empty() {
        return Err(KbError::rejected("reason", "a vote needs a reason: the reason is empty"));
    }
    let mut screen = secrets::Screen::new(redact);
    let reason = screen.field("reason", reason.to_string())?;
    Ok((reason, screen.redacted()))
}

/// What storing a record will do ([`RecordStore::plan_save`]).
pub struct RecordSavePlan {
    outcome: RecordSaveOutcome,
    file: JsonlFile,
    /// The line to append or replace; `None`: the record already says it.
    edit: Option<Edit>,
    /// The fact a consolidation stores in place of the record's.
    saved: Option<String>,
}

impl RecordSavePlan {
    /// Returns what the save does (or, in a dry run, would do).
    pub fn outcome(&self) -> &RecordSaveOutcome {
        &self.outcome
    }

    /// Returns whether the save replaces a record's fact (a consolidation): its operation
    /// journals it, so `kb undo` brings the old fact back.
    pub fn replaces(&self) -> bool {
        self.outcome.action == SaveAction::Consolidate
    }

    /// Returns the fact a consolidation stores in place of the record's (`None`: an append).
    pub fn consolidates(&self) -> Option<&str> {
        self.saved.as_deref()
    }

    /// Writes the save through `txn`.
    pub fn write(self, store: &RecordStore<'_>, txn: &mut Txn) -> Result<RecordSaveOutcome> {
        let RecordSavePlan { mut outcome, file, edit, .. } = self;
        let appended = store.write(txn, &file, edit.as_slice())?;
        if let Some(&line) = appended.first() {
            outcome.line = line;
        }
        Ok(outcome)
    }
}

/// Validates and screens a request: every field stripped, subject, fact and reason non-empty,
/// citations without blanks or repeats, the secret filter on every field.
pub fn screen(mut req: RecordRequest) -> Result<(RecordRequest, Vec<&'static str>)> {
    let strip = |s: &str| frontmatter::py_strip(s).to_string();
    req.subject = strip(&req.subject);
    req.fact = strip(&req.fact);
    req.reason = strip(&req.reason);
    req.category = req.category.as_deref().map(strip).filter(|c| !c.is_empty());
    for (name, value) in [("subject", &req.subject), ("fact", &req.fact), ("reason", &req.reason)] {
        if value.is_empty() {
            return Err(KbError::rejected(name, format!("nothing to save: the {name} is empty")));
        }
    }
    let mut citations: Vec<String> = Vec::new();
    for c in &req.citations {
        let c = strip(c);
        if !c.is_empty() && !citations.contains(&c) {
            citations.push(c);
        }
    }
    req.citations = citations;
    let mut screen = secrets::Screen::new(req.redact);
    let mut check = |field: &str, text: &mut String| -> Result<()> {
        *text = screen.field(field, std::mem::take(text))?;
        Ok(())
    };
    check("subject", &mut req.subject)?;
    check("fact", &mut req.fact)?;
    for c in &mut req.citations {
        check("citation", c)?;
    }
    check("reason", &mut req.reason)?;
    if let Some(c) = &mut req.category {
        check("category", c)?;
    }
    let redacted = screen.redacted();
    Ok((req, redacted))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stores a record as `kb save --store copilot` does (screen, lock, plan, write).
    fn save(s: &RecordStore<'_>, req: RecordRequest) -> Result<RecordSaveOutcome> {
        let (req, redacted) = screen(req)?;
        if req.dry_run {
            return Ok(s.plan_save(req, redacted)?.outcome().clone());
        }
        let mut txn = Txn::unrecorded(s.repo.lock()?);
        s.plan_save(req, redacted)?.write(s, &mut txn)
    }

    /// Votes as `kb vote` does.
    fn vote(
        s: &RecordStore<'_>,
        target: VoteTarget<'_>,
        d: Direction,
        reason: &str,
        redact: bool,
    ) -> Result<VoteOutcome> {
        let (reason, redacted) = vote_reason(reason, redact)?;
        let mut txn = Txn::unrecorded(s.repo.lock()?);
        s.vote(&mut txn, target, d, &reason, redacted)
    }

    /// Forgets as `kb forget` does, without a journal.
    fn forget(s: &RecordStore<'_>, id: &str) -> Result<ForgetOutcome> {
        let mut txn = Txn::unrecorded(s.repo.lock()?);
        s.forget(&mut txn, id)
    }
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).unwrap()
    }

    /// Returns a repository in a new folder whose JSONL file holds `jsonl`.
    fn repo_with_records(jsonl: &str) -> (tempfile::TempDir, Repo) {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        std::fs::create_dir_all(dir.path().join(".github")).unwrap();
        std::fs::write(repo.layout.copilot_memories(), jsonl).unwrap();
        (dir, repo)
    }

    fn repo(dir: &Path) -> Repo {
        let layout = crate::paths::Layout { root: dir.to_path_buf(), config: None };
        Repo { layout, settings: crate::settings::Settings::default(), now: now(), env: Default::default() }
    }

    fn req(subject: &str, fact: &str, cites: &[&str]) -> RecordRequest {
        RecordRequest {
            subject: subject.into(),
            fact: fact.into(),
            citations: cites.iter().map(|c| c.to_string()).collect(),
            reason: "because".into(),
            ..Default::default()
        }
    }

    #[test]
    fn ids_are_stable_short_and_redrawn() {
        let a = draw_id("build", "Run nextest", |_| false);
        assert_eq!(a, draw_id("build", "Run nextest", |_| false));
        assert!(a.starts_with("mem-") && a.len() == 12 && a[4..].chars().all(|c| c.is_ascii_hexdigit()));
        let b = draw_id("build", "Run nextest", |c| c == a);
        assert_ne!(a, b);
        assert_ne!(draw_id("build", "x", |_| false), draw_id("buil", "dx", |_| false));
    }

    #[test]
    fn derived_ids_for_records_without_one() {
        let fact_id = draw_id("s", "f", |_| false);
        let text = format!(
            "{{\"subject\":\"s\",\"fact\":\"f\"}}\n{{\"id\":\"{fact_id}\",\"subject\":\"t\",\"fact\":\"g\"}}\n"
        );
        let file = JsonlFile::from_bytes("x".into(), text.into_bytes(), true);
        let all = Records::parse(&file);
        let first = all.iter().next().unwrap();
        assert!(!first.id_in_file);
        assert_ne!(first.id, fact_id, "a derived id never takes one in use");
        assert_eq!(all.find(&fact_id).len(), 1);
    }

    #[test]
    fn escaped_strings_and_derived_ids_live_in_the_arena() {
        let text = "{\"id\":\"a\\u0062\",\"subject\":\"s\\\"q\",\"fact\":\"caf\\u00e9\",\"created\":\"2026-01-01T00:00:00Z\"}\n{\"subject\":\"t\",\"fact\":\"plain\",\"category\":\"c\"}\n";
        let file = JsonlFile::from_bytes("x".into(), text.as_bytes().to_vec(), true);
        let all = Records::parse(&file);
        let rs: Vec<Record<'_>> = all.iter().collect();
        assert_eq!((rs[0].id, rs[0].subject, rs[0].fact), ("ab", "s\"q", "café"));
        assert_eq!((rs[0].created, rs[0].category, rs[0].updated), (Some("2026-01-01T00:00:00Z"), None, None));
        assert_eq!((rs[1].id, rs[1].category), (draw_id("t", "plain", |_| false).as_str(), Some("c")));
        assert_eq!(all.find("ab").len(), 1);
    }

    #[test]
    fn queries_match_like_lowercased_substrings() {
        let cases = [
            ("cache", "A Cache layer", true),
            ("CACHE", "a cache layer", true),
            ("a.c", "abc", false),
            ("", "anything", true),
            ("k", "\u{212a}elvin", true),
            ("über", "ÜBER alles", true),
            ("x+y", "X+Y", true),
            ("x y", "x  y", false),
        ];
        for (q, text, want) in cases {
            let query = Query::new(q);
            assert_eq!(query.found_in(text), want, "{q:?} in {text:?}");
            assert_eq!(query.found_in(text), crate::format::text::contains_lower(text, &q.to_lowercase()));
        }
    }

    #[test]
    fn save_appends_then_consolidates_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let s = RecordStore::new(&repo);
        let first = save(&s, req("build", "Run cargo nextest before pushing", &["Makefile:14"])).unwrap();
        assert_eq!(first.action, SaveAction::Create);
        assert_eq!(first.line, 1);
        save(&s, req("docs", "Docs live in docs/", &[])).unwrap();
        let again =
            save(&s, req("Build ", "run cargo nextest before pushing!", &["Makefile:14", ".ci/run:3"])).unwrap();
        assert!(again.action == SaveAction::Consolidate && again.similarity.unwrap() >= 85.0);
        assert_eq!((again.id.as_str(), again.line), (first.id.as_str(), 1));
        let text = std::fs::read_to_string(s.path()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(v["fact"], "run cargo nextest before pushing!");
        assert_eq!(v["subject"], "build", "the subject keeps its spelling");
        assert_eq!(v["citations"], serde_json::json!(["Makefile:14", ".ci/run:3"]));
        assert_eq!(v["updated"], "2026-11-22T12:00:00+00:00");
        // Same fact under another subject is not a duplicate.
        let other = save(&s, req("ci", "Run cargo nextest before pushing", &[])).unwrap();
        assert_eq!(other.action, SaveAction::Create);
    }

    #[test]
    fn dry_run_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let s = RecordStore::new(&repo);
        let out = save(&s, RecordRequest { dry_run: true, ..req("a", "b", &[]) }).unwrap();
        assert!(out.dry_run && !s.path().exists());
        assert!(!dir.path().join(".co-cli").exists(), "a dry run takes no lock");
    }

    #[test]
    fn empty_fields_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let s = RecordStore::new(&repo);
        let no_reason = RecordRequest { reason: " ".into(), ..req("s", "f", &[]) };
        for (r, field) in [(req(" ", "f", &[]), "subject"), (req("s", "\n", &[]), "fact"), (no_reason, "reason")] {
            assert!(matches!(save(&s, r), Err(KbError::Rejected { what, .. }) if what == field), "{field}");
        }
    }

    #[test]
    fn votes_keep_other_members() {
        let (_dir, repo) = repo_with_records(
            "{\"id\":\"m1\",\"subject\":\"s\",\"fact\":\"f\",\"votes\":{\"by\":[\"x\"],\"up\":1}}\r\n{\"subject\":\"t\",\"fact\":\"g\"}\n",
        );
        let s = RecordStore::new(&repo);
        let out = vote(&s, VoteTarget::Id("m1"), Direction::Down, "stale", false).unwrap();
        assert_eq!(out.votes, Votes { up: 1, down: 1 });
        let text = std::fs::read_to_string(s.path()).unwrap();
        assert!(text.starts_with("{\"id\":\"m1\",\"subject\":\"s\",\"fact\":\"f\",\"votes\":{\"by\":[\"x\"],\"up\":1,\"down\":1},\"last_vote\":{"), "{text}");
        assert!(text.ends_with("\n{\"subject\":\"t\",\"fact\":\"g\"}\n"));
        let derived = draw_id("t", "g", |_| false);
        vote(&s, VoteTarget::Id(&derived), Direction::Up, "ok", false).unwrap();
        let text = std::fs::read_to_string(s.path()).unwrap();
        assert!(text.contains(&format!(
            "{{\"subject\":\"t\",\"fact\":\"g\",\"id\":\"{derived}\",\"votes\":{{\"up\":1,\"down\":0}}"
        )));
    }

    #[test]
    fn votes_by_exact_fact_and_with_a_redacted_reason() {
        let (_dir, repo) = repo_with_records(
            "{\"id\":\"a\",\"subject\":\"s\",\"fact\":\"Use tabs\"}\n{\"id\":\"b\",\"subject\":\"t\",\"fact\":\"Twice\"}\n{\"id\":\"c\",\"subject\":\"u\",\"fact\":\"Twice\"}\n",
        );
        let s = RecordStore::new(&repo);
        let out = vote(&s, VoteTarget::Fact(" Use tabs\n"), Direction::Up, "right", false).unwrap();
        assert_eq!((out.id.as_str(), out.votes, out.redacted.len()), ("a", Votes { up: 1, down: 0 }, 0));
        for (fact, expect) in [
            ("use tabs", "no Copilot record has the fact \"use tabs\""),
            ("Use tab", "no Copilot record has the fact"),
            ("Twice", "2 Copilot records have the fact \"Twice\" (b, c)"),
            ("  ", "the fact is empty"),
        ] {
            let e = vote(&s, VoteTarget::Fact(fact), Direction::Down, "r", false).unwrap_err();
            assert!(matches!(e, KbError::Rejected { what: "fact", .. }), "{fact:?}: {e}");
            assert!(e.to_string().starts_with(expect), "{fact:?}: {e}");
        }
        let secret = format!("leaked ghp_{} here", "A1b2C3d4E5f6".repeat(3));
        assert!(matches!(vote(&s, VoteTarget::Id("b"), Direction::Down, &secret, false), Err(KbError::Secret { .. })));
        let out = vote(&s, VoteTarget::Id("b"), Direction::Down, &secret, true).unwrap();
        assert_eq!(out.redacted, ["github-pat"]);
        let text = std::fs::read_to_string(s.path()).unwrap();
        assert!(text.contains("leaked [REDACTED:github-pat] here") && !text.contains("ghp_"), "{text}");
    }

    #[test]
    fn forget_removes_only_its_line() {
        let (_dir, repo) = repo_with_records(
            "not json\n{\"id\":\"a\",\"subject\":\"s\",\"fact\":\"f\"}\n\n{\"id\":\"b\",\"subject\":\"s\",\"fact\":\"g\"}",
        );
        let s = RecordStore::new(&repo);
        let out = forget(&s, "a").unwrap();
        assert_eq!(out.line, 2);
        assert_eq!(
            std::fs::read_to_string(s.path()).unwrap(),
            "not json\n\n{\"id\":\"b\",\"subject\":\"s\",\"fact\":\"g\"}\n"
        );
        assert!(matches!(forget(&s, "a"), Err(KbError::NotFound { .. })));
    }

    #[test]
    fn duplicate_ids_are_found_and_refused() {
        let text = "{\"id\":\"a\",\"subject\":\"s\",\"fact\":\"f\"}\n{\"id\":\"a\",\"subject\":\"s\",\"fact\":\"g\"}\n";
        let file = JsonlFile::from_bytes("x".into(), text.as_bytes().to_vec(), true);
        let all = Records::parse(&file);
        assert_eq!(all.duplicate_ids(), vec![("a", vec![1, 2])]);
        let e = all.one("a").unwrap_err();
        assert!(matches!(&e, KbError::DuplicateId { id, lines, .. } if id == "a" && *lines == [1, 2]), "{e}");
        assert!(e.to_string().contains("records in x (lines 1, 2)"), "{e}");
    }

    #[test]
    fn timestamps_are_checked() {
        let text = "{\"subject\":\"s\",\"fact\":\"f\",\"created\":\"2026-01-01\"}\n";
        let file = JsonlFile::from_bytes("x".into(), text.as_bytes().to_vec(), true);
        let all = Records::parse_checked(&file);
        assert_eq!(all.len(), 1);
        assert!(all.problems[0].message.contains("date without a time") && !all.problems[0].skipped());
        assert!(Records::parse(&file).problems.is_empty(), "only check looks at values it does not need");
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse_without_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let file = JsonlFile::from_bytes("x".into(), data, true);
            let all = Records::parse(&file);
            for r in all.iter() {
                let _ = edit_line(&file, &r, vec![("votes", "{}".into())]);
                let _ = all.fields(&r);
            }
        }

        #[test]
        fn json_lines_parse_without_panic(line in "[{}\\[\\]\",:a-z0-9 .\\\\-]{0,60}") {
            let file = JsonlFile::from_bytes("x".into(), line.into_bytes(), true);
            let _ = Records::parse(&file);
        }
    }
}
