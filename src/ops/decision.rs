//! `kb decision add|list|show|supersede|archive|accept|reject` (docs/behaviour.md, Decisions): the decision store
//! does the work; this module shapes the reports.

use super::{Report, View, abs, file_name};
pub use crate::decisions::Change;
use crate::decisions::file::{Decision, DecisionKind};
use crate::decisions::{self, DecisionStore, NewDecision, Outcome};
use crate::error::{Diagnostic, KbError};
use crate::journal::Txn;
use crate::output::{chars_prefix, summary};
use crate::repo::Repo;
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};
use std::path::PathBuf;

/// The JSON of a write: `{"action":"added"|"proposed"|"exists"|"superseded"|"accepted"|
/// "rejected"|"archived", "decision_id":N, "path":ABS, "similarity":F|null}`, plus
/// `"superseded":OLD` for supersede (`decision_id` is then the new decision). `"proposed"` is
/// MCP's `propose_decision` (a new decision with `status: proposed`).
#[derive(Serialize)]
pub struct ActionReport {
    action: &'static str,
    decision_id: u64,
    path: String,
    similarity: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    superseded: Option<u64>,
    #[serde(skip)]
    file: PathBuf,
    /// Read by MCP's tools only: the CLI warns on stderr instead.
    #[serde(skip)]
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    redacted: Vec<&'static str>,
    #[serde(skip)]
    diagnostics: Vec<Diagnostic>,
    /// For a decision made active whose type is not compiled: the types that are.
    #[serde(skip)]
    not_compiled: Option<String>,
}

impl ActionReport {
    /// Returns the secret rules whose matches were redacted from the text.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub fn redacted(&self) -> &[&'static str] {
        &self.redacted
    }
}

fn store(repo: &Repo) -> DecisionStore<'_> {
    DecisionStore::new(repo)
}

/// Parses a decision id as people type it (` 7 `, `+7`, `007`).
fn parse_id(raw: &str) -> Result<u64, KbError> {
    crate::kinds::number(raw, "decision")
}

/// Returns the one-line note for a decision `kind` made active that `context_decision_types` leaves
/// out of the block (people should not believe agents see it).
pub(super) fn not_compiled(repo: &Repo, kind: DecisionKind) -> Option<String> {
    let types = &repo.settings.context_decision_types.value;
    (!types.contains(&kind)).then(|| {
        let list: Vec<&str> = types.iter().map(|k| k.as_str()).collect();
        let list = if list.is_empty() { "empty".to_string() } else { list.join(", ") };
        format!(
            "A {} decision is kept for the record; not compiled into agents' context: context_decision_types is {list}.",
            kind.as_str()
        )
    })
}

fn action_report(action: &'static str, out: Outcome) -> ActionReport {
    let diagnostics = if out.redacted.is_empty() {
        Vec::new()
    } else {
        vec![Diagnostic::warning(None, format!("redacted secrets matching: {}", out.redacted.join(", ")))]
    };
    ActionReport {
        action,
        decision_id: out.id,
        path: abs(&out.path),
        similarity: out.similarity,
        superseded: out.superseded,
        file: out.path,
        redacted: out.redacted,
        diagnostics,
        not_compiled: None,
    }
}

/// Adds an active decision, or reports the open one that already says it.
pub fn add(repo: &Repo, content: String, kind: DecisionKind, tags: Vec<String>, redact: bool) -> Result<ActionReport> {
    let new = decisions::screen(NewDecision { content, kind: Some(kind), tags, redact })?;
    let mut txn = Txn::unrecorded(repo.lock()?);
    let out = store(repo).add(&mut txn, new)?;
    txn.finish()?;
    let action = if out.exists { "exists" } else { "added" };
    let note = if out.exists { None } else { not_compiled(repo, out.kind) };
    Ok(ActionReport { not_compiled: note, ..action_report(action, out) })
}

/// Proposes a decision (`status: proposed`, for a person to accept or reject), or reports the
/// open one that already says it. Agents propose over MCP; they never add active decisions.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub fn propose(
    repo: &Repo,
    content: String,
    kind: DecisionKind,
    tags: Vec<String>,
    redact: bool,
) -> Result<ActionReport> {
    let new = decisions::screen(NewDecision { content, kind: Some(kind), tags, redact })?;
    let mut txn = Txn::unrecorded(repo.lock()?);
    let out = store(repo).propose(&mut txn, new)?;
    txn.finish()?;
    let action = if out.exists { "exists" } else { "proposed" };
    Ok(action_report(action, out))
}

/// Supersedes active decision `raw_id` with a new one.
pub fn supersede(
    repo: &Repo,
    raw_id: &str,
    content: String,
    kind: Option<DecisionKind>,
    tags: Vec<String>,
    redact: bool,
) -> Result<ActionReport> {
    super::read::refuse_shared(repo, raw_id)?;
    let id = parse_id(raw_id)?;
    let new = decisions::screen(NewDecision { content, kind, tags, redact })?;
    let mut txn = Txn::begin(repo, repo.lock()?, "decision supersede", format!("superseded decision {id}"));
    let out = store(repo).supersede(&mut txn, id, new)?;
    txn.finish()?;
    let note = not_compiled(repo, out.kind);
    Ok(ActionReport { not_compiled: note, ..action_report("superseded", out) })
}

/// Accepts, rejects or archives decision `raw_id`.
pub fn change(repo: &Repo, raw_id: &str, change: Change) -> Result<ActionReport> {
    super::read::refuse_shared(repo, raw_id)?;
    let id = parse_id(raw_id)?;
    let (verb, action) = match change {
        Change::Accept => ("accept", "accepted"),
        Change::Reject => ("reject", "rejected"),
        Change::Archive => ("archive", "archived"),
    };
    let mut txn = Txn::begin(repo, repo.lock()?, &format!("decision {verb}"), format!("{action} decision {id}"));
    let out = store(repo).change(&mut txn, id, change)?;
    txn.finish()?;
    let note = if change == Change::Accept { not_compiled(repo, out.kind) } else { None };
    Ok(ActionReport { not_compiled: note, ..action_report(action, out) })
}

impl Report for ActionReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        self.render_action(v, w)?;
        match &self.not_compiled {
            Some(note) => writeln!(w, "{note}"),
            None => Ok(()),
        }
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

impl ActionReport {
    fn render_action(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let (id, mark) = (self.decision_id, v.style.ok("✓"));
        let name = v.clean(&file_name(&self.file)).into_owned();
        match self.action {
            "added" => writeln!(w, "{mark} Added decision {id}: {name}"),
            "proposed" => {
                writeln!(w, "{mark} Proposed decision {id}: {name}")?;
                writeln!(
                    w,
                    "It applies only once a person accepts it with `kb decision accept {id}` \
                     (or turns it down with `kb decision reject {id}`); until then it stays out of the compiled context."
                )
            }
            "exists" => writeln!(
                w,
                "Decision {id} already says this (similarity {:.1}): {name}; nothing added",
                self.similarity.unwrap_or_default()
            ),
            "superseded" => {
                writeln!(w, "{mark} Added decision {id}: {name}")?;
                writeln!(w, "{mark} Decision {} superseded by decision {id}", self.superseded.unwrap_or_default())
            }
            "accepted" => writeln!(w, "{mark} Accepted decision {id}: {name}"),
            "rejected" => writeln!(w, "{mark} Rejected decision {id}: {name}"),
            _ => writeln!(w, "{mark} Archived decision {id}: {name}"),
        }
    }
}

/// DECISION: `{"id", "type", "status", "created", "updated", "superseded_by", "tags", "title",
/// "content", "path"}`.
#[derive(Serialize)]
pub struct DecisionJson {
    id: u64,
    #[serde(rename = "type")]
    kind: &'static str,
    status: &'static str,
    created: String,
    updated: Option<String>,
    superseded_by: Option<u64>,
    tags: Vec<String>,
    created_by: Option<String>,
    updated_by: Option<String>,
    title: String,
    content: String,
    path: String,
    #[serde(skip)]
    file: PathBuf,
}

impl DecisionJson {
    pub(super) fn new(path: &std::path::Path, d: &Decision) -> DecisionJson {
        DecisionJson {
            id: d.id,
            kind: d.kind.as_str(),
            status: d.status.as_str(),
            created: d.created.clone(),
            updated: d.updated.clone(),
            superseded_by: d.superseded_by,
            tags: d.tags.clone(),
            created_by: d.created_by.clone(),
            updated_by: d.updated_by.clone(),
            title: d.title().to_string(),
            content: d.content.clone(),
            path: abs(path),
            file: path.to_path_buf(),
        }
    }
}

/// `kb decision list`: `{"count":N, "decisions":[DECISION...]}`, oldest first.
#[derive(Serialize)]
pub struct ListReport {
    count: usize,
    decisions: Vec<DecisionJson>,
    #[serde(skip)]
    all: bool,
    #[serde(skip)]
    diagnostics: Vec<Diagnostic>,
}

/// Lists the active and proposed decisions (every one with `all`), of one type when given.
pub fn list(repo: &Repo, all: bool, kind: Option<DecisionKind>) -> Result<ListReport> {
    let scan = store(repo).scan()?;
    let mut found: Vec<&(PathBuf, Decision)> = scan
        .decisions
        .iter()
        .filter(|(_, d)| (all || d.status.is_open()) && kind.is_none_or(|k| d.kind == k))
        .collect();
    found.sort_by_key(|(_, d)| d.age_key());
    let decisions: Vec<DecisionJson> = found.into_iter().map(|(p, d)| DecisionJson::new(p, d)).collect();
    Ok(ListReport { count: decisions.len(), decisions, all, diagnostics: scan.problems })
}

impl Report for ListReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        if self.decisions.is_empty() {
            let what = if self.all { "No decisions" } else { "No active or proposed decisions" };
            return writeln!(w, "{what} in {}.", v.root.display());
        }
        for d in &self.decisions {
            write!(w, "**{:03}** ({}", d.id, chars_prefix(&d.created, 10))?;
            if let Some(u) = &d.updated {
                write!(w, " → {}", chars_prefix(u, 10))?;
            }
            write!(w, ") [{}] {}", d.kind, d.status)?;
            if let Some(by) = d.superseded_by {
                write!(w, " → {by}")?;
            }
            writeln!(w, " : {}", v.clean(&summary(&d.content)))?;
        }
        Ok(())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

/// `kb decision show ID`: DECISION.
#[derive(Serialize)]
pub struct ShowReport {
    #[serde(flatten)]
    decision: DecisionJson,
    #[serde(skip)]
    diagnostics: Vec<Diagnostic>,
}

/// Shows decision `raw_id` in full.
pub fn show(repo: &Repo, raw_id: &str) -> Result<ShowReport> {
    let id = parse_id(raw_id)?;
    let scan = store(repo).scan()?;
    let (path, d) = scan.by_id(id)?;
    Ok(ShowReport { decision: DecisionJson::new(path, d), diagnostics: scan.problems.clone() })
}

impl Report for ShowReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let d = &self.decision;
        let header = format!("Decision {} ({})", d.id, v.rel(&d.file));
        writeln!(w, "{}", v.style.bold(&v.clean(&header)))?;
        writeln!(w, "Type: {}", d.kind)?;
        write!(w, "Status: {}", d.status)?;
        if let Some(by) = d.superseded_by {
            write!(w, " (by decision {by})")?;
        }
        writeln!(w)?;
        writeln!(w, "Created: {}", v.clean(&d.created))?;
        if let Some(u) = &d.updated {
            writeln!(w, "Updated: {}", v.clean(u))?;
        }
        if !d.tags.is_empty() {
            writeln!(w, "Tags: {}", v.clean(&d.tags.join(", ")))?;
        }
        w.write_all(super::read::provenance_lines(v, d.created_by.as_deref(), d.updated_by.as_deref()).as_bytes())?;
        writeln!(w)?;
        writeln!(w, "{}", v.clean(&d.content))
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}
