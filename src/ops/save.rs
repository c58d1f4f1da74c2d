//! Saving: a markdown memory (`kb save`, MCP `save_memory`) or a Copilot record
//! (`kb save --store copilot`, MCP `store_memory`). The stores do the work; this module shapes
//! what a save reports.

use super::{Report, View, abs, file_name, save_action};
use crate::copilot::{self, RecordRequest, RecordSaveOutcome, RecordStore};
use crate::error::Diagnostic;
use crate::journal::Txn;
use crate::memories::store::{MemoryStore, SaveOutcome, SaveRequest};
use crate::repo::Repo;
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};

/// The JSON of a save (docs/formats.md, JSON output): `{"action", "memory_id":ID, "path":ABS, "line":N (records
/// only), "similarity":F|null, "replaced":S|null, "decayed":N, "decay_strategy":S|null,
/// "redacted":[S...], "store":"md"|"copilot"}`. A memory's id is its integer, a record's its string.
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
        action: save_action(out.consolidated, out.dry_run),
        memory_id: out.memory_id,
        path: abs(&out.path),
        line: None,
        similarity: out.similarity,
        replaced: out.replaced.clone(),
        decayed: out.decayed,
        decay_strategy: out.decay_strategy.map(|s| s.as_str()),
        redacted: out.redacted.clone(),
        store: "md",
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
fn redacted_warning(rules: &[&str]) -> Option<Diagnostic> {
    (!rules.is_empty()).then(|| Diagnostic::warning(None, format!("redacted secrets matching: {}", rules.join(", "))))
}

impl Report for SaveReport {
    /// The display text of co-cli (the Python tool whose file layout kb keeps).
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let out = &self.outcome;
        let mark = v.style.ok("✓");
        let (id, location) = (out.memory_id, &self.json.path);
        let name = file_name(&out.path);
        match (out.consolidated, out.dry_run) {
            (true, false) => write!(w, "{mark} Updated memory {id} (consolidated duplicate)\nLocation: {location}")?,
            (true, true) => write!(
                w,
                "Would update memory {id} (consolidated duplicate, similarity {:.1})\nLocation: {location}",
                out.similarity.unwrap_or_default()
            )?,
            (false, false) => write!(w, "{mark} Saved memory {id}: {name}\nLocation: {location}")?,
            (false, true) => write!(w, "Would save memory {id}: {name}\nLocation: {location}")?,
        }
        write_replaced(v, w, out.similarity, out.replaced.as_deref(), out.dry_run)?;
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
        action: save_action(out.consolidated, out.dry_run),
        memory_id: out.id.clone(),
        path: abs(&out.path),
        line: Some(out.line),
        similarity: out.similarity,
        replaced: out.replaced.clone(),
        decayed: 0,
        decay_strategy: None,
        redacted: out.redacted.clone(),
        store: super::read::COPILOT,
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
        match (out.consolidated, out.dry_run) {
            (true, false) => {
                write!(w, "{mark} Updated Copilot memory {id} (consolidated duplicate)\nLocation: {location}")?
            }
            (true, true) => write!(
                w,
                "Would update Copilot memory {id} (consolidated duplicate, similarity {:.1})\nLocation: {location}",
                out.similarity.unwrap_or_default()
            )?,
            (false, false) => write!(w, "{mark} Saved Copilot memory {id}\nLocation: {location}")?,
            (false, true) => write!(w, "Would save Copilot memory {id}\nLocation: {location}")?,
        }
        write_replaced(v, w, out.similarity, out.replaced.as_deref(), out.dry_run)?;
        writeln!(w)
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}
