//! The inbox (docs/behaviour.md, The inbox): agents propose, a person accepts. `propose` writes
//! a proposal unless the store or the inbox already holds it (MCP's writing tools with
//! `agent_writes: propose`, and `kb inbox digest`); `kb inbox` lists the proposals, `kb inbox
//! show P` shows one, `kb inbox accept P...|--all` saves each through the normal save of its
//! store and `kb inbox reject P...|--all` drops them, each in one journal entry.

use super::save::{SimilarTo, write_near_miss};
use super::{Report, View, abs, file_name, plural};
use crate::copilot::{self, RecordRequest, RecordStore};
use crate::decisions::{self, DecisionStore, NewDecision};
use crate::error::{Diagnostic, KbError};
use crate::format::salient::{NearMiss, SaveAction, Verdict, judge, same_words};
use crate::format::similarity::Prepared;
use crate::format::text::{checked_tags, checked_text};
pub use crate::inbox::ProposalKind;
use crate::inbox::{self, Entry, NewProposal};
use crate::journal::Txn;
pub use crate::kinds::DecisionKind;
use crate::memories::store::{MemoryStore, SaveRequest};
use crate::paths::Layout;
use crate::provenance::{ACCEPTED_BY, AGENT_PREFIX, Actor};
use crate::repo::Repo;
use crate::secrets::Screen;
use anyhow::Result;
use serde::Serialize;
use serde_json::Value;
use std::io::{self, Write};
use std::path::PathBuf;

/// What an agent proposes.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub kind: ProposalKind,
    /// The memory's text, the record's fact or the decision (its first line the title).
    pub content: String,
    /// `agent:<name>` (a name without the prefix gets it).
    pub proposed_by: String,
    /// The agent's session id, when known.
    pub session: Option<String>,
    /// Why it is worth keeping (required for a record: a Copilot record has a reason).
    pub reason: Option<String>,
    pub tags: Vec<String>,
    /// The `source` the memory gets once accepted (`detected`), when not the one its tags give.
    pub source: Option<String>,
    /// A record's subject (required for a record).
    pub subject: Option<String>,
    /// A record's citations.
    pub citations: Vec<String>,
    /// A decision's type (default `process`).
    pub decision_type: Option<DecisionKind>,
}

/// What [`propose`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proposed {
    /// A new proposal `id` (`P3`) at `path`.
    New { id: String, path: PathBuf },
    /// Nothing written: the store already holds it (`store`: `md`, `copilot` or `decision`;
    /// `id` the memory's, record's or decision's).
    InStore { store: &'static str, id: String },
    /// Nothing written: the inbox holds a proposal with the same or a near-identical text.
    InInbox { id: String },
}

/// Returns how many proposals wait in the inbox, from the folder's names alone (no file read):
/// for the hook at the start of a session.
// Called by the session-start hook (`kb hook session-start`).
#[allow(dead_code)]
pub fn count(layout: &Layout) -> usize {
    inbox::count(layout)
}

/// Proposes `p`: the secret filter redacts (never refuses) every field; then nothing is written
/// when the store already holds it (what a save would report as `exists`: the same text, or a
/// consolidation that would change nothing but the date; for a decision, an open decision that
/// says nearly the same) or when the inbox holds a proposal with the same or a near-identical
/// text (dedup's similarity and salient-token rule); else the proposal is written as `P<n>`
/// under the repository lock.
// Called by `kb inbox digest`.
#[allow(dead_code)]
pub fn propose(repo: &Repo, p: Proposal) -> Result<Proposed> {
    Ok(propose_screened(repo, p)?.0)
}

/// Proposes as [`propose`] does; also returns the secret rules redacted.
fn propose_screened(repo: &Repo, p: Proposal) -> Result<(Proposed, Vec<&'static str>)> {
    let (new, redacted) = screen(p)?;
    let agent = as_proposer(repo, &new.proposed_by);
    if let Some((store, id)) = in_store(&agent, &new)? {
        return Ok((Proposed::InStore { store, id }, redacted));
    }
    let held = repo.lock()?;
    let scan = inbox::scan(&repo.layout)?;
    let threshold = repo.settings.memory_dedup_threshold.value;
    if let Some(e) = scan.entries.iter().find(|e| says_the_same(&e.fields.content, &new.content, threshold)) {
        return Ok((Proposed::InInbox { id: e.id.clone() }, redacted));
    }
    let (id, path) = inbox::create(&repo.layout, &held, &new, repo.now)?;
    Ok((Proposed::New { id, path }, redacted))
}

/// Returns whether a proposal saying `new` adds nothing to one saying `existing`: the same
/// words, or a score at the threshold with every salient token of `existing` in `new` (what a
/// save would consolidate).
fn says_the_same(existing: &str, new: &str, threshold: f64) -> bool {
    if same_words(existing, new) {
        return true;
    }
    let (a, b) = (Prepared::new(new), Prepared::new(existing));
    if a.bound(&b) < threshold {
        return false;
    }
    let score = a.similarity(&b);
    score >= threshold && matches!(judge(existing, new, score, None), Verdict::Consolidate | Verdict::Exists)
}

/// Checks a proposal and redacts its secrets; returns it as the inbox writes it and the rules
/// that fired.
fn screen(p: Proposal) -> Result<(NewProposal, Vec<&'static str>), KbError> {
    let mut screen = Screen::new(true);
    let content =
        checked_text(&p.content, &p.tags, ("proposal", "proposals"), "nothing to propose: the text is empty")?;
    let content = screen.field("text", content)?;
    let tags = checked_tags(&p.tags)?.into_iter().map(|t| screen.field("tag", t)).collect::<Result<Vec<_>, _>>()?;
    let mut given = |field: &str, v: Option<String>| -> Result<Option<String>, KbError> {
        match v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty()) {
            Some(s) => Ok(Some(screen.field(field, s)?)),
            None => Ok(None),
        }
    };
    let reason = given("reason", p.reason)?;
    let session = given("session", p.session)?;
    let source = given("source", p.source)?;
    let subject = given("subject", p.subject)?;
    let mut citations: Vec<String> = Vec::new();
    for c in p.citations {
        if let Some(c) = given("citation", Some(c))?
            && !citations.contains(&c)
        {
            citations.push(c);
        }
    }
    let record = p.kind == ProposalKind::Record;
    if record && subject.is_none() {
        return Err(KbError::rejected("subject", "a record proposal needs a subject"));
    }
    if record && reason.is_none() {
        return Err(KbError::rejected("reason", "a record proposal needs a reason: why the fact matters"));
    }
    let name: String = p.proposed_by.chars().filter(|c| !c.is_control()).collect();
    let name = name.trim();
    let proposed_by = match name.strip_prefix(AGENT_PREFIX).map(str::trim) {
        Some(n) if !n.is_empty() => format!("{AGENT_PREFIX}{n}"),
        Some(_) => format!("{AGENT_PREFIX}unknown"),
        None if name.is_empty() => format!("{AGENT_PREFIX}unknown"),
        None => format!("{AGENT_PREFIX}{name}"),
    };
    let new = NewProposal {
        kind: p.kind,
        content,
        proposed_by,
        session,
        reason,
        tags,
        source,
        subject: if record { subject } else { None },
        citations: if record { citations } else { Vec::new() },
        decision_type: (p.kind == ProposalKind::Decision).then(|| p.decision_type.unwrap_or(DecisionKind::Process)),
    };
    Ok((new, screen.redacted()))
}

/// Returns the repository as the agent `proposed_by` sees it: its saves are by that agent
/// (`created_by`), and never rewrite what a person wrote.
fn as_proposer(repo: &Repo, proposed_by: &str) -> Repo {
    let mut agent = repo.clone();
    let name = proposed_by.strip_prefix(AGENT_PREFIX).unwrap_or(proposed_by);
    agent.env.actor = Actor::agent(Some(name));
    agent
}

/// Returns whether a save's outcome means the store already holds the text: nothing to write,
/// or a consolidation into a text with the same words.
fn already(action: SaveAction, replaced: Option<&str>, content: &str) -> bool {
    action == SaveAction::Exists
        || (action == SaveAction::Consolidate && replaced.is_some_and(|r| same_words(r, content)))
}

/// Returns the store and id of what already holds the proposal, by a dry run of its store's save
/// (as the proposing agent).
fn in_store(agent: &Repo, p: &NewProposal) -> Result<Option<(&'static str, String)>> {
    Ok(match p.kind {
        ProposalKind::Memory => {
            let store = MemoryStore::new(agent);
            let req = SaveRequest {
                content: p.content.clone(),
                tags: p.tags.clone(),
                dry_run: true,
                redact: true,
                ..Default::default()
            };
            let plan = store.plan(store.prepare(req)?, None)?;
            let o = plan.outcome();
            already(o.action, o.replaced.as_deref(), &p.content).then(|| ("md", o.memory_id.to_string()))
        }
        ProposalKind::Record => {
            let (req, redacted) = copilot::screen(record_request(p, true))?;
            let plan = RecordStore::new(agent).plan_save(req, redacted)?;
            let o = plan.outcome();
            already(o.action, o.replaced.as_deref(), &p.content).then(|| (super::read::COPILOT, o.id.clone()))
        }
        ProposalKind::Decision => {
            DecisionStore::new(agent).open_duplicate(&p.content)?.map(|(id, _)| ("decision", id.to_string()))
        }
    })
}

/// Returns the record a proposal stores; a hand-written proposal without a reason gets one
/// naming who proposed it.
fn record_request(p: &NewProposal, dry_run: bool) -> RecordRequest {
    RecordRequest {
        subject: p.subject.clone().unwrap_or_default(),
        fact: p.content.clone(),
        citations: p.citations.clone(),
        reason: p.reason.clone().unwrap_or_else(|| format!("Proposed by {}", p.proposed_by)),
        category: None,
        dry_run,
        redact: true,
        no_dedup: false,
    }
}

/// What `propose` said, for MCP's writing tools with `agent_writes: propose`. JSON:
/// `{"action":"proposed"|"exists", "proposal_id":"P3"|null, "path":ABS|null,
/// "known":{"store":"md"|"copilot"|"decision"|"inbox", "id":S}|null, "redacted":[RULE...]}`.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
#[derive(Serialize)]
pub struct ProposeReport {
    action: &'static str,
    proposal_id: Option<String>,
    path: Option<String>,
    known: Option<Known>,
    redacted: Vec<&'static str>,
    /// What the tool was given that a proposal does not keep.
    #[serde(skip)]
    dropped: Vec<&'static str>,
}

#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
#[derive(Serialize)]
struct Known {
    store: &'static str,
    id: String,
}

#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
impl ProposeReport {
    /// Returns the report with a note that a proposal leaves out `what` (the tool's arguments it
    /// has no key for), when any.
    pub fn dropping(mut self, what: Vec<&'static str>) -> ProposeReport {
        self.dropped = what;
        self
    }
}

/// Proposes `p` as [`propose`] does and returns what a tool answers.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub fn propose_report(repo: &Repo, p: Proposal) -> Result<ProposeReport> {
    let (proposed, redacted) = propose_screened(repo, p)?;
    let (action, proposal_id, path, known) = match proposed {
        Proposed::New { id, path } => ("proposed", Some(id), Some(abs(&path)), None),
        Proposed::InStore { store, id } => ("exists", None, None, Some(Known { store, id })),
        Proposed::InInbox { id } => ("exists", None, None, Some(Known { store: "inbox", id })),
    };
    Ok(ProposeReport { action, proposal_id, path, known, redacted, dropped: Vec::new() })
}

#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
impl Report for ProposeReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        match (&self.proposal_id, &self.known) {
            (Some(id), _) => writeln!(w, "Proposed {id}: a person accepts it with kb inbox accept {id}")?,
            (None, Some(Known { store, id })) => {
                let id = v.clean(id);
                let what = match *store {
                    "md" => format!("memory {id} already says this"),
                    "copilot" => format!("Copilot memory {id} already says this"),
                    "decision" => format!("decision {id} already says this"),
                    _ => format!("proposal {id} already says this and waits for a person"),
                };
                writeln!(w, "Already known: {what}; nothing proposed")?
            }
            (None, None) => {}
        }
        if !self.dropped.is_empty() {
            writeln!(w, "A proposal does not keep {}: a person sets them when accepting it.", self.dropped.join(", "))?;
        }
        Ok(())
    }
}

/// One proposal in JSON: `{"id","kind","proposed_by","session","created","content","tags",
/// "reason","source","subject","citations","decision_type","path"}` (`subject` null and
/// `citations` empty but for a record, `decision_type` null but for a decision).
#[derive(Serialize)]
struct ProposalJson<'a> {
    id: &'a str,
    kind: &'static str,
    proposed_by: &'a str,
    session: Option<&'a str>,
    created: &'a str,
    content: &'a str,
    tags: &'a [String],
    reason: Option<&'a str>,
    source: Option<&'a str>,
    subject: Option<&'a str>,
    citations: &'a [String],
    decision_type: Option<&'static str>,
    path: String,
}

impl<'a> ProposalJson<'a> {
    fn of(e: &'a Entry) -> ProposalJson<'a> {
        let f = &e.fields;
        ProposalJson {
            id: &e.id,
            kind: f.kind.as_str(),
            proposed_by: &f.proposed_by,
            session: f.session.as_deref(),
            created: &e.created,
            content: &f.content,
            tags: &f.tags,
            reason: f.reason.as_deref(),
            source: f.source.as_deref(),
            subject: f.subject.as_deref(),
            citations: &f.citations,
            decision_type: f.decision_type.map(DecisionKind::as_str),
            path: abs(&e.path),
        }
    }
}

/// `kb inbox` and `kb inbox show P`. JSON: `{"proposals":[PROPOSAL...]}` ([`ProposalJson`]).
pub struct ListReport {
    entries: Vec<Entry>,
    /// `show`: one proposal in full.
    full: bool,
    diagnostics: Vec<Diagnostic>,
}

impl Serialize for ListReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Doc<'a> {
            proposals: Vec<ProposalJson<'a>>,
        }
        Doc { proposals: self.entries.iter().map(ProposalJson::of).collect() }.serialize(s)
    }
}

/// Lists the proposals, by number; a broken proposal file is a diagnostic naming it.
pub fn list(layout: &Layout) -> Result<ListReport> {
    let scan = inbox::scan(layout)?;
    Ok(ListReport { entries: scan.entries, full: false, diagnostics: scan.problems })
}

/// Shows proposal `raw_id` (`P3`) in full.
pub fn show(layout: &Layout, raw_id: &str) -> Result<ListReport> {
    let n = inbox::parse_id(raw_id)?;
    let scan = inbox::scan(layout)?;
    let entry = scan.by_number(n)?.clone();
    Ok(ListReport { entries: vec![entry], full: true, diagnostics: scan.problems })
}

/// Returns `created` for a list line: `YYYY-MM-DD HH:MM` in UTC.
fn when(e: &Entry) -> String {
    chrono::DateTime::from_timestamp_micros(e.created_at)
        .map_or_else(|| e.created.clone(), |t| t.format("%Y-%m-%d %H:%M").to_string())
}

impl Report for ListReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        if self.full {
            for e in &self.entries {
                let f = &e.fields;
                writeln!(
                    w,
                    "Proposal {} ({}), proposed by {} at {}",
                    e.id,
                    f.kind.as_str(),
                    v.clean(&f.proposed_by),
                    e.created
                )?;
                let lines = [
                    ("Session", f.session.clone()),
                    ("Subject", f.subject.clone()),
                    ("Citations", (!f.citations.is_empty()).then(|| f.citations.join(", "))),
                    ("Type", f.decision_type.map(|t| t.as_str().to_string())),
                    ("Reason", f.reason.clone()),
                    ("Tags", (!f.tags.is_empty()).then(|| f.tags.join(", "))),
                ];
                for (label, value) in lines {
                    if let Some(value) = value {
                        writeln!(w, "{label}: {}", v.clean(&value))?;
                    }
                }
                writeln!(w, "File: {}\n\n{}", v.rel(&e.path), v.clean(&f.content))?;
                writeln!(w, "\nAccept it with kb inbox accept {0}, or reject it with kb inbox reject {0}.", e.id)?;
            }
            return Ok(());
        }
        if self.entries.is_empty() {
            return writeln!(w, "No proposals wait for review.");
        }
        let verb = if self.entries.len() == 1 { "waits" } else { "wait" };
        writeln!(w, "{} {verb} for review:\n", plural(self.entries.len(), "proposal"))?;
        let id_width = self.entries.iter().map(|e| e.id.len()).max().unwrap_or(0);
        let by_width = self.entries.iter().map(|e| e.fields.proposed_by.chars().count()).max().unwrap_or(0);
        for e in &self.entries {
            let f = &e.fields;
            let head = match (f.kind, &f.subject, f.decision_type) {
                (ProposalKind::Record, Some(s), _) => format!("[{s}] "),
                (ProposalKind::Decision, _, Some(t)) => format!("({}) ", t.as_str()),
                _ => String::new(),
            };
            let line = crate::output::summary(&format!("{head}{}", f.content));
            let by = v.clean(&f.proposed_by);
            writeln!(
                w,
                "{:<id_width$}  {:<8}  {by:<by_width$}  {}  {}",
                e.id,
                f.kind.as_str(),
                when(e),
                v.clean(&line)
            )?;
        }
        let first = &self.entries[0].id;
        writeln!(
            w,
            "\nAccept with kb inbox accept {first} (or --all), reject with kb inbox reject {first}; kb inbox show {first} \
             shows one in full."
        )
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

/// One accepted proposal in JSON: `{"id":"P3", "kind", "store":"md"|"copilot"|"decision",
/// "action":"saved"|"consolidated"|"exists"|"added"|"failed", "memory_id":N|S (memory,
/// record), "decision_id":N (decision), "path":ABS|null, "similarity":F|null,
/// "similar_to":{...} (a near miss only), "redacted":[RULE...], "error":S (failed only)}`.
#[derive(Serialize)]
struct AcceptedJson {
    id: String,
    kind: &'static str,
    store: &'static str,
    action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_id: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decision_id: Option<u64>,
    path: Option<String>,
    similarity: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    similar_to: Option<SimilarTo<Value>>,
    redacted: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The near miss, for the text.
    #[serde(skip)]
    miss: Option<(String, NearMiss)>,
    #[serde(skip)]
    file: Option<PathBuf>,
    #[serde(skip)]
    note: Option<String>,
}

/// One rejected proposal in JSON: `{"id":"P3", "kind", "path":ABS}` (the proposal's file, now
/// removed).
#[derive(Serialize)]
struct RejectedJson {
    id: String,
    kind: &'static str,
    path: String,
}

/// What `kb inbox accept` or `kb inbox reject` did. JSON: `{"accepted":[ACCEPTED...],
/// "rejected":[REJECTED...]}` ([`AcceptedJson`], [`RejectedJson`]); the command fills one of
/// the two.
#[derive(Serialize)]
pub struct ChangeReport {
    accepted: Vec<AcceptedJson>,
    rejected: Vec<RejectedJson>,
    #[serde(skip)]
    diagnostics: Vec<Diagnostic>,
}

/// Returns the proposals `ids` name (each once, in the order given), or with `all` every valid
/// one. Every id is checked before anything is done: an unknown one is an error naming it.
fn choose<'s>(scan: &'s inbox::Scan, ids: &[String], all: bool) -> Result<Vec<&'s Entry>> {
    if all {
        return Ok(scan.entries.iter().collect());
    }
    let mut numbers: Vec<u64> = Vec::new();
    for raw in ids {
        let n = inbox::parse_id(raw)?;
        if !numbers.contains(&n) {
            numbers.push(n);
        }
    }
    let unknown: Vec<String> =
        numbers.iter().filter(|&&n| !scan.entries.iter().any(|e| e.number == n)).map(|n| format!("P{n}")).collect();
    match unknown.as_slice() {
        [] => {}
        [one] => return Err(KbError::not_found("proposal", one).into()),
        many => return Err(KbError::NotFound { thing: "proposals", id: many.join(", "), branch: None }.into()),
    }
    Ok(numbers.iter().map(|&n| scan.by_number(n)).collect::<Result<Vec<_>, _>>()?)
}

/// Returns the journal's description of an accept or reject of `entries`.
fn describe(verb: &str, entries: &[&Entry]) -> String {
    let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
    format!("{verb} {} {}", if ids.len() == 1 { "proposal" } else { "proposals" }, ids.join(", "))
}

/// Accepts proposals `ids` (or with `all` every one): each is saved through the normal save of
/// its store (dedup and near-miss rules; `created_by` the agent that proposed it,
/// `accepted_by` the person running the command) and its file removed, all in one journal entry
/// (`kb undo` brings the proposals back and takes away what was stored). A proposal the store
/// already holds is removed too, and reported `exists`. A proposal whose save is refused (a bad
/// value in a hand-written file) stays, reported `failed`.
pub fn accept(repo: &Repo, ids: &[String], all: bool) -> Result<ChangeReport> {
    let held = repo.lock()?;
    let scan = inbox::scan(&repo.layout)?;
    let chosen = choose(&scan, ids, all)?;
    let mut report = ChangeReport { accepted: Vec::new(), rejected: Vec::new(), diagnostics: scan.problems.clone() };
    if chosen.is_empty() {
        return Ok(report);
    }
    let mut txn = Txn::begin(repo, held, "inbox accept", describe("accepted", &chosen));
    let person = repo.author();
    for e in chosen {
        let item = match accept_one(repo, &mut txn, e, person.as_deref()) {
            Ok(item) => {
                inbox::remove(&repo.layout, &mut txn, e)?;
                item
            }
            Err(err @ (KbError::Rejected { .. } | KbError::BadFile(_) | KbError::Secret { .. })) => {
                AcceptedJson { action: "failed", error: Some(err.to_string()), ..accepted(e, store_of(e.fields.kind)) }
            }
            Err(err) => return Err(err.into()),
        };
        report.accepted.push(item);
    }
    txn.finish()?;
    for item in &report.accepted {
        if !item.redacted.is_empty() {
            let msg = format!("{}: redacted secrets matching: {}", item.id, item.redacted.join(", "));
            report.diagnostics.push(Diagnostic::warning(None, msg));
        }
    }
    Ok(report)
}

/// Returns the store a proposal of `kind` is saved into, as JSON names it.
fn store_of(kind: ProposalKind) -> &'static str {
    match kind {
        ProposalKind::Memory => "md",
        ProposalKind::Record => super::read::COPILOT,
        ProposalKind::Decision => "decision",
    }
}

/// An accepted item of `e` with nothing filled in yet.
fn accepted(e: &Entry, store: &'static str) -> AcceptedJson {
    AcceptedJson {
        id: e.id.clone(),
        kind: e.fields.kind.as_str(),
        store,
        action: "exists",
        memory_id: None,
        decision_id: None,
        path: None,
        similarity: None,
        similar_to: None,
        redacted: Vec::new(),
        error: None,
        miss: None,
        file: None,
        note: None,
    }
}

/// Saves one proposal through `txn`, as the agent that proposed it with `accepted_by` the person.
fn accept_one(repo: &Repo, txn: &mut Txn, e: &Entry, person: Option<&str>) -> Result<AcceptedJson, KbError> {
    let f = &e.fields;
    let agent = as_proposer(repo, &f.proposed_by);
    let store = store_of(f.kind);
    let mut item = accepted(e, store);
    match f.kind {
        ProposalKind::Memory => {
            let memories = MemoryStore::new(&agent);
            let req =
                SaveRequest { content: f.content.clone(), tags: f.tags.clone(), redact: true, ..Default::default() };
            let mut prepared = memories.prepare(req)?;
            match f.source.as_deref() {
                Some("detected") => prepared = prepared.with_source("detected"),
                Some("user-told") => prepared = prepared.with_source("user-told"),
                _ => {}
            }
            let keys = person.map(|p| vec![(ACCEPTED_BY.to_string(), Value::from(p))]).unwrap_or_default();
            let plan = memories.plan(prepared.with_keys(keys), Some(txn.lock()))?;
            let content = f.content.clone();
            let o = plan.outcome();
            let out = if already(o.action, o.replaced.as_deref(), &content) {
                let mut o = o.clone();
                o.action = SaveAction::Exists;
                o
            } else {
                plan.write(&agent, txn)?
            };
            item.action = out.action.as_str(false);
            item.memory_id = Some(Value::from(out.memory_id));
            item.path = Some(abs(&out.path));
            item.file = Some(out.path.clone());
            item.similarity = out.similarity;
            item.redacted = out.redacted.clone();
            item.similar_to = out.similar_to.clone().map(|(id, m)| SimilarTo::new((Value::from(id), m)));
            item.miss = out.similar_to.map(|(id, m)| (id.to_string(), m));
        }
        ProposalKind::Record => {
            let (req, redacted) = copilot::screen(record_request(f, false))?;
            let records = RecordStore::new(&agent);
            let fact = req.fact.clone();
            let plan = records.plan_save_accepted(req, redacted, person)?;
            let o = plan.outcome();
            let out = if already(o.action, o.replaced.as_deref(), &fact) {
                let mut o = o.clone();
                o.action = SaveAction::Exists;
                o
            } else {
                plan.write(&records, txn)?
            };
            item.action = out.action.as_str(false);
            item.memory_id = Some(Value::from(out.id.clone()));
            item.path = Some(abs(&out.path));
            item.similarity = out.similarity;
            item.redacted = out.redacted.clone();
            item.similar_to = out.similar_to.clone().map(|(id, m)| SimilarTo::new((Value::from(id), m)));
            item.miss = out.similar_to;
        }
        ProposalKind::Decision => {
            let kind = f.decision_type.unwrap_or(DecisionKind::Process);
            let new = NewDecision { content: f.content.clone(), kind: Some(kind), tags: f.tags.clone(), redact: true };
            let out = DecisionStore::new(&agent).add_accepted(txn, decisions::screen(new)?, person)?;
            item.action = if out.exists { "exists" } else { "added" };
            item.decision_id = Some(out.id);
            item.path = Some(abs(&out.path));
            item.file = Some(out.path.clone());
            item.similarity = out.similarity;
            item.redacted = out.redacted.clone();
            if !out.exists {
                item.note = super::decision::not_compiled(repo, out.kind);
            }
        }
    }
    Ok(item)
}

/// Rejects proposals `ids` (or with `all` every one): their files are removed, in one journal
/// entry (`kb undo` brings them back).
pub fn reject(repo: &Repo, ids: &[String], all: bool) -> Result<ChangeReport> {
    let held = repo.lock()?;
    let scan = inbox::scan(&repo.layout)?;
    let chosen = choose(&scan, ids, all)?;
    let mut report = ChangeReport { accepted: Vec::new(), rejected: Vec::new(), diagnostics: scan.problems.clone() };
    if chosen.is_empty() {
        return Ok(report);
    }
    let mut txn = Txn::begin(repo, held, "inbox reject", describe("rejected", &chosen));
    for e in chosen {
        inbox::remove(&repo.layout, &mut txn, e)?;
        report.rejected.push(RejectedJson { id: e.id.clone(), kind: e.fields.kind.as_str(), path: abs(&e.path) });
    }
    txn.finish()?;
    Ok(report)
}

impl Report for ChangeReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let mark = v.style.ok("✓");
        if self.accepted.is_empty() && self.rejected.is_empty() {
            return writeln!(w, "No proposals wait for review; nothing changed.");
        }
        for a in &self.accepted {
            let id =
                a.memory_id.as_ref().map(|i| i.as_str().map_or_else(|| i.to_string(), |s| v.clean(s).into_owned()));
            let name = a.file.as_deref().map(|p| format!(": {}", v.clean(&file_name(p)))).unwrap_or_default();
            let noun = match a.store {
                "md" => "memory",
                "copilot" => "Copilot memory",
                _ => "decision",
            };
            let target = match a.decision_id {
                Some(d) => format!("{noun} {d}"),
                None => format!("{noun} {}", id.clone().unwrap_or_default()),
            };
            match a.action {
                "failed" => writeln!(
                    w,
                    "✗ {} not accepted: {}; it stays in the inbox",
                    a.id,
                    v.clean(a.error.as_deref().unwrap_or_default())
                )?,
                "exists" => writeln!(
                    w,
                    "{mark} {} was already known: {target} says it (similarity {:.1}); the proposal is removed",
                    a.id,
                    a.similarity.unwrap_or(100.0)
                )?,
                "consolidated" => writeln!(w, "{mark} Accepted {} into {target} (consolidated duplicate){name}", a.id)?,
                _ => writeln!(w, "{mark} Accepted {} as {target}{name}", a.id)?,
            }
            if let Some((old, miss)) = &a.miss {
                write_near_miss(v, w, noun, &v.clean(old), miss)?;
                writeln!(w)?;
            }
            if let Some(note) = &a.note {
                writeln!(w, "{note}")?;
            }
        }
        for r in &self.rejected {
            writeln!(w, "{mark} Rejected {} ({})", r.id, r.kind)?;
        }
        let done = self.accepted.iter().any(|a| a.action != "failed") || !self.rejected.is_empty();
        if done {
            writeln!(w, "kb undo takes this back.")?;
        }
        Ok(())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    fn errors(&self) -> Vec<String> {
        self.accepted
            .iter()
            .filter(|a| a.action == "failed")
            .map(|a| format!("{} not accepted: {}", a.id, a.error.as_deref().unwrap_or_default()))
            .collect()
    }

    fn succeeded(&self) -> bool {
        self.accepted.iter().all(|a| a.action != "failed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_or_a_refined_text_is_already_proposed_a_different_fact_is_not() {
        assert!(says_the_same("User prefers pytest", "user prefers  PYTEST", 85.0));
        assert!(says_the_same("The api listens on port 8080", "The api listens on port 8080 always", 85.0));
        assert!(!says_the_same("The api listens on port 8080", "The api listens on port 8081", 85.0));
        assert!(!says_the_same("User prefers pytest", "We deploy on Fridays", 85.0));
    }

    fn proposal(kind: ProposalKind, text: &str) -> Proposal {
        Proposal {
            kind,
            content: text.into(),
            proposed_by: "claude".into(),
            session: Some("  ".into()),
            reason: None,
            tags: vec!["preference".into()],
            source: None,
            subject: Some("build".into()),
            citations: vec!["a:1".into(), " a:1 ".into(), "".into()],
            decision_type: None,
        }
    }

    #[test]
    fn a_proposal_is_screened_and_its_fields_fit_its_kind() {
        let pat = format!("ghp_{}", "A1b2C3d4E5f6".repeat(3));
        let (p, rules) = screen(proposal(ProposalKind::Memory, &format!("  token {pat} "))).unwrap();
        assert_eq!(p.content, "token [REDACTED:github-pat]");
        assert_eq!(rules, ["github-pat"]);
        assert_eq!((p.proposed_by.as_str(), p.session, p.subject, p.citations.len()), ("agent:claude", None, None, 0));
        let (p, _) = screen(proposal(ProposalKind::Decision, "Release from main")).unwrap();
        assert_eq!(p.decision_type, Some(DecisionKind::Process));
        let e = screen(proposal(ProposalKind::Record, "Run make")).unwrap_err();
        assert!(matches!(e, KbError::Rejected { what: "reason", .. }), "{e}");
        let (p, _) =
            screen(Proposal { reason: Some("CI".into()), ..proposal(ProposalKind::Record, "Run make") }).unwrap();
        assert_eq!(p.citations, ["a:1"]);
        let e = screen(proposal(ProposalKind::Memory, " \n")).unwrap_err();
        assert!(e.to_string().contains("nothing to propose"), "{e}");
    }
}
