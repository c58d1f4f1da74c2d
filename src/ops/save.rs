//! Saving: a markdown memory (`kb save`, MCP `save_memory`) or a Copilot record
//! (`kb save --store copilot`, MCP `store_memory`). The stores do the work; this module shapes
//! what a save reports.

use super::{Report, View, abs, file_name};
pub use crate::copilot::RecordRequest;
use crate::copilot::{self, RecordSaveOutcome, RecordStore};
use crate::error::Diagnostic;
use crate::format::salient::{NearMiss, SaveAction, Why};
use crate::journal::Txn;
pub use crate::memories::store::SaveRequest;
use crate::memories::store::{MemoryStore, SaveOutcome};
use crate::repo::Repo;
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};

/// The JSON of a save (docs/formats.md, JSON output): `{"action", "memory_id":ID, "path":ABS, "line":N (records
/// only), "similarity":F|null, "replaced":S|null, "decayed":N, "decay_strategy":S|null,
/// "redacted":[S...], "store":"md"|"copilot", "similar_to":{...} (a near miss only)}`. A memory's
/// id is its integer, a record's its string.
#[derive(Serialize)]
struct SaveJson<Id> {
    action: &'static str,
    memory_id: Id,
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    similarity: Option<f64>,
    /// The text a consolidation replaced, else null.
    replaced: Option<String>,
    decayed: usize,
    decay_strategy: Option<&'static str>,
    redacted: Vec<&'static str>,
    store: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    similar_to: Option<SimilarTo<Id>>,
}

/// The near miss of a save: the similar memory it did not consolidate into, and why.
#[derive(Serialize)]
pub(super) struct SimilarTo<Id> {
    id: Id,
    similarity: f64,
    only_in_existing: Vec<String>,
    only_in_new: Vec<String>,
    why: &'static str,
}

impl<Id> SimilarTo<Id> {
    pub(super) fn new((id, miss): (Id, NearMiss)) -> SimilarTo<Id> {
        let NearMiss { similarity, only_in_existing, only_in_new, why } = miss;
        SimilarTo { id, similarity, only_in_existing, only_in_new, why: why.as_str() }
    }
}

/// What a markdown save did (JSON: [`SaveJson`] with an integer id).
pub struct SaveReport {
    json: SaveJson<u64>,
    outcome: SaveOutcome,
    diagnostics: Vec<Diagnostic>,
}

impl Serialize for SaveReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.json.serialize(s)
    }
}

/// Saves a memory: dedup, consolidation, decay. A save that replaces or removes a memory (a
/// consolidation, a decay) is journaled, so `kb undo` takes it back; a plain save is not.
pub fn save(repo: &Repo, req: SaveRequest) -> Result<SaveReport> {
    let store = MemoryStore::new(repo);
    let prepared = store.prepare(req)?;
    let out = if prepared.dry_run() {
        store.plan(prepared, None)?.outcome().clone()
    } else {
        let held = repo.lock()?;
        let plan = store.plan(prepared, Some(&held))?;
        let mut txn = save_txn(repo, held, plan.replaces(), || plan.describe().to_string(), plan.consolidates());
        let out = plan.write(repo, &mut txn)?;
        txn.finish()?;
        out
    };
    let mut diagnostics: Vec<Diagnostic> = out.warnings.iter().map(|w| Diagnostic::warning(None, w.as_str())).collect();
    diagnostics.extend(redacted_warning(&out.redacted));
    let json = SaveJson {
        action: out.action.as_str(out.dry_run),
        memory_id: out.memory_id,
        path: abs(&out.path),
        line: None,
        similarity: out.similarity,
        replaced: out.replaced.clone(),
        decayed: out.decayed,
        decay_strategy: out.decay_strategy.map(|s| s.as_str()),
        redacted: out.redacted.clone(),
        store: "md",
        similar_to: out.similar_to.clone().map(SimilarTo::new),
    };
    Ok(SaveReport { json, outcome: out, diagnostics })
}

/// Returns a save's transaction, under the lock `held`: recorded when the save replaces or removes
/// knowledge (`what` describes it in `kb undo --list`), so `kb undo` takes it back; else not. A
/// consolidation's entry holds the text it stored (`saved`): undoing it says that text goes too.
fn save_txn(
    repo: &Repo,
    held: crate::fsio::Lock,
    replaces: bool,
    what: impl FnOnce() -> String,
    saved: Option<&str>,
) -> Txn {
    if !replaces {
        return Txn::unrecorded(held);
    }
    let txn = Txn::begin(repo, held, "save", what());
    match saved {
        Some(text) => txn.saving(text),
        None => txn,
    }
}

/// Returns the warning that secrets were redacted, when some were.
pub(super) fn redacted_warning(rules: &[&str]) -> Option<Diagnostic> {
    (!rules.is_empty()).then(|| Diagnostic::warning(None, format!("redacted secrets matching: {}", rules.join(", "))))
}

impl Report for SaveReport {
    /// The display text of co-cli (the Python tool whose file layout kb keeps).
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let out = &self.outcome;
        let mark = v.style.ok("✓");
        let (id, location) = (out.memory_id, &self.json.path);
        let name = file_name(&out.path);
        match (out.action, out.dry_run) {
            (SaveAction::Consolidate, false) => {
                write!(w, "{mark} Updated memory {id} (consolidated duplicate)\nLocation: {location}")?
            }
            (SaveAction::Consolidate, true) => write!(
                w,
                "Would update memory {id} (consolidated duplicate, similarity {:.1})\nLocation: {location}",
                out.similarity.unwrap_or_default()
            )?,
            (SaveAction::Create, false) => write!(w, "{mark} Saved memory {id}: {name}\nLocation: {location}")?,
            (SaveAction::Create, true) => write!(w, "Would save memory {id}: {name}\nLocation: {location}")?,
            (SaveAction::Exists, _) => write_exists(w, &mark, "memory", &id.to_string(), out.similarity, location)?,
        }
        write_replaced(v, w, out.similarity, out.replaced.as_deref(), out.dry_run)?;
        if let Some((old, miss)) = &out.similar_to {
            write_near_miss(v, w, "memory", &old.to_string(), miss)?;
        }
        if let Some(strategy) = out.decay_strategy {
            let verb = if out.dry_run { "Would decay" } else { "Decayed" };
            write!(w, "\n♻️ {verb} {} old memories ({})", out.decayed, strategy.as_str())?;
        }
        writeln!(w)
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

/// Writes what a consolidation replaced, after the location: the score and the old text, so a
/// different fact never vanishes unseen.
fn write_replaced(
    v: &View,
    w: &mut dyn Write,
    similarity: Option<f64>,
    old: Option<&str>,
    dry_run: bool,
) -> io::Result<()> {
    let Some(old) = old else { return Ok(()) };
    let verb = if dry_run { "Would replace" } else { "Replaced" };
    write!(w, "\nSimilarity: {:.1}\n{verb}: {}", similarity.unwrap_or_default(), v.clean(old))
}

/// Writes that a save wrote nothing: the memory kb may not rewrite already says the text.
fn write_exists(
    w: &mut dyn Write,
    mark: &str,
    noun: &str,
    id: &str,
    similarity: Option<f64>,
    location: &str,
) -> io::Result<()> {
    let score = similarity.unwrap_or_default();
    write!(w, "{mark} Nothing saved: already stored as {noun} {id} (similarity {score:.1})\nLocation: {location}")
}

/// Writes a save's near miss in one line: the similar memory it was saved beside, what differs,
/// and how to drop that memory if it is now wrong (over MCP, the tool to call).
pub(super) fn write_near_miss(v: &View, w: &mut dyn Write, noun: &str, id: &str, miss: &NearMiss) -> io::Result<()> {
    let list = |tokens: &[String]| tokens.iter().map(|t| v.clean(t).into_owned()).collect::<Vec<_>>().join(", ");
    let kept = match miss.why {
        Why::DifferentFacts => "",
        Why::Protected => " but is protected, so it was left as it is",
        Why::CoreContext => " but is core context, so it was left as it is",
        Why::WrittenByPerson => " but a person wrote it, so it was left as it is",
    };
    let says = match (miss.only_in_existing.as_slice(), miss.only_in_new.as_slice()) {
        ([], []) => String::new(),
        ([], new) => format!("you said {}, which it does not say", list(new)),
        (old, []) => format!("says {}, which you did not say", list(old)),
        (old, new) => format!("says {} where you said {}", list(old), list(new)),
    };
    let differs = match (kept.is_empty(), says.is_empty()) {
        (_, true) => kept.to_string(),
        (true, false) => format!(" but {says}"),
        (false, false) if says.starts_with("says") => format!("{kept}; it {says}"),
        (false, false) => format!("{kept}; {says}"),
    };
    let drop = if v.agent {
        if noun == "memory" { format!("call forget_memory({id})") } else { format!("call forget_memory(\"{id}\")") }
    } else {
        format!("run `kb forget {id}`")
    };
    let head = format!("\nSimilar: {noun} {id} looks similar (similarity {:.1})", miss.similarity);
    write!(w, "{head}{differs}: if {noun} {id} is now wrong, {drop}")
}

/// What a record save did (JSON: [`SaveJson`] with a string id and the record's line).
pub struct RecordSaveReport {
    json: SaveJson<String>,
    outcome: RecordSaveOutcome,
    diagnostics: Vec<Diagnostic>,
}

impl Serialize for RecordSaveReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.json.serialize(s)
    }
}

/// Stores a Copilot record: the secret filter, dedup within its subject, consolidation. A
/// consolidation is journaled (the fact it replaces comes back with `kb undo`); an append is not.
pub fn save_record(repo: &Repo, req: RecordRequest) -> Result<RecordSaveReport> {
    let store = RecordStore::new(repo);
    let (req, redacted) = copilot::screen(req)?;
    let out = if req.dry_run {
        store.plan_save(req, redacted)?.outcome().clone()
    } else {
        let held = repo.lock()?;
        let plan = store.plan_save(req, redacted)?;
        let what = || format!("consolidated into Copilot memory {}", plan.outcome().id);
        let mut txn = save_txn(repo, held, plan.replaces(), what, plan.consolidates());
        let out = plan.write(&store, &mut txn)?;
        txn.finish()?;
        out
    };
    let json = SaveJson {
        action: out.action.as_str(out.dry_run),
        memory_id: out.id.clone(),
        path: abs(&out.path),
        line: Some(out.line),
        similarity: out.similarity,
        replaced: out.replaced.clone(),
        decayed: 0,
        decay_strategy: None,
        redacted: out.redacted.clone(),
        store: super::read::COPILOT,
        similar_to: out.similar_to.clone().map(SimilarTo::new),
    };
    let diagnostics = redacted_warning(&out.redacted).into_iter().collect();
    Ok(RecordSaveReport { json, outcome: out, diagnostics })
}

impl Report for RecordSaveReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let out = &self.outcome;
        let location = format!("{}:{}", self.json.path, out.line);
        let mark = v.style.ok("✓");
        let id = v.clean(&out.id);
        match (out.action, out.dry_run) {
            (SaveAction::Consolidate, false) => {
                write!(w, "{mark} Updated Copilot memory {id} (consolidated duplicate)\nLocation: {location}")?
            }
            (SaveAction::Consolidate, true) => write!(
                w,
                "Would update Copilot memory {id} (consolidated duplicate, similarity {:.1})\nLocation: {location}",
                out.similarity.unwrap_or_default()
            )?,
            (SaveAction::Create, false) => write!(w, "{mark} Saved Copilot memory {id}\nLocation: {location}")?,
            (SaveAction::Create, true) => write!(w, "Would save Copilot memory {id}\nLocation: {location}")?,
            (SaveAction::Exists, _) => write_exists(w, &mark, "Copilot memory", &id, out.similarity, &location)?,
        }
        write_replaced(v, w, out.similarity, out.replaced.as_deref(), out.dry_run)?;
        if let Some((old, miss)) = &out.similar_to {
            write_near_miss(v, w, "Copilot memory", &v.clean(old), miss)?;
        }
        writeln!(w)
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}
