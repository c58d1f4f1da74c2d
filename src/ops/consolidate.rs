//! `kb consolidate` (docs/behaviour.md, kb consolidate): the offline pass over the whole store, under the lock.
//!
//! 1. Near-duplicate markdown memories of the same type and agent, at any age (the dedup scorer
//!    and `memory_dedup_threshold`; `format::neardup` finds them without scoring most pairs), are
//!    merged into the oldest of each group: tags united (the oldest's first, then each newer
//!    one's in age order), the body from the newest (the one changed last: `updated`, else
//!    `created`), or from `--summarizer`; `updated` set; the highest `importance` kept; the others
//!    removed. Only where a save could consolidate (`format::salient`): a member with a salient
//!    token the kept body lacks is not merged but reported as a possible conflict ("port 8080"
//!    never merges into "port 8081"); a protected or core-context memory is never grouped (never
//!    rewritten nor removed); in a group holding a person's memory (no `created_by: agent:…`) and
//!    agents' restatements, the person's memory survives with its own words. A group whose
//!    survivor has frontmatter kb cannot edit exactly is left alone, with a warning.
//! 2. Copilot records with more down than up votes whose `last_vote.at` (else `created`) is more
//!    than 28 days old are removed.
//! 3. On the current branch's context board, `agent` items are removed, least read
//!    then oldest first, until the board holds at most 18 items or no agent item is left; `user`
//!    items count toward the 18 but are never removed. A board file that does not read as a
//!    board is reported and left alone.
//!
//! Decisions are never touched. Every change of a run is one journal entry, recorded before any
//! file changes, so `kb undo` takes the whole run back, even after a crash part way. The entry
//! also holds the pruned board items: a board changed since (a counter bumped) gets them back
//! rather than refusing the undo.

use super::read::{read_records, skipped_lines};
use super::{Report, View, abs, plural};
use crate::copilot::Records;
use crate::copilot::jsonl::Edit;
use crate::error::Diagnostic;
use crate::format::neardup;
use crate::format::salient;
use crate::format::similarity::similarity;
use crate::format::time::{self, Micros};
use crate::journal::{Change, Txn};
use crate::memories::file::MemoryType;
use crate::memories::index::MemoryRef;
use crate::memories::store;
use crate::repo::Repo;
use anyhow::Result;
use serde::Serialize;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Downvoted records are removed once their last vote (else their creation) is this old.
const RECORD_AGE_DAYS: i64 = 28;

/// How long a summarizer may take for one group.
const SUMMARIZER_TIMEOUT: Duration = Duration::from_secs(60);

/// What `kb consolidate` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Report the plan, write nothing (and run no summarizer).
    pub dry_run: bool,
    /// `sh -c` command that writes each group's merged body.
    pub summarizer: Option<String>,
}

/// One merge: JSON `{"into":ID, "removed":[ID...], "similarity":F}`; `similarity` is the lowest
/// score of a removed memory against the one it merges into.
#[derive(Debug, Clone, Serialize)]
pub struct Merge {
    pub into: u64,
    pub removed: Vec<u64>,
    pub similarity: f64,
}

/// A group left alone: JSON `{"into":ID, "removed":[ID...], "reason":S}`.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub into: u64,
    pub removed: Vec<u64>,
    pub reason: String,
}

/// A near-duplicate not merged because it says something the kept text does not (a possible
/// conflict, for review): JSON `{"memory":ID, "other":ID, "similarity":F,
/// "only_in_memory":[TOKEN...], "only_in_other":[TOKEN...]}`, `other` being the memory whose text
/// the group keeps.
#[derive(Debug, Clone, Serialize)]
pub struct Conflict {
    pub memory: u64,
    pub other: u64,
    pub similarity: f64,
    pub only_in_memory: Vec<String>,
    pub only_in_other: Vec<String>,
}

/// A Copilot record to remove, with why.
#[derive(Debug, Clone)]
struct Removal {
    id: String,
    index: usize,
    up: u64,
    down: u64,
    /// The last vote's time, else the creation's, as written.
    when: String,
    /// Whether `when` is the last vote's.
    voted: bool,
}

/// What `kb consolidate` did, or with `--dry-run` would do. JSON: `{"dry_run":B,
/// "merged":[{"into":ID, "removed":[ID...], "similarity":F}...], "records_removed":[ID...],
/// "board_pruned":[NAME...], "journal":PATH|null, "skipped":[{"into", "removed", "reason"}...],
/// "conflicts":[CONFLICT...]}` ([`Conflict`]).
#[derive(Serialize)]
pub struct ConsolidateReport {
    dry_run: bool,
    merged: Vec<Merge>,
    conflicts: Vec<Conflict>,
    records_removed: Vec<String>,
    board_pruned: Vec<String>,
    /// The branch whose board was looked at.
    branch: String,
    journal: Option<String>,
    skipped: Vec<Skipped>,
    #[serde(skip)]
    removals: Vec<Removal>,
    #[serde(skip)]
    journal_path: Option<PathBuf>,
    #[serde(skip)]
    diagnostics: Vec<Diagnostic>,
}

/// A merge being planned: the memory merged into, the one whose body it keeps (without a
/// summarizer), and those removed, each in a group of near-duplicates.
struct Planned<'a> {
    into: MemoryRef<'a>,
    body: MemoryRef<'a>,
    removed: Vec<MemoryRef<'a>>,
    similarity: f64,
}

impl Planned<'_> {
    fn merge(&self) -> Merge {
        Merge { into: self.into.id, removed: self.removed.iter().map(|m| m.id).collect(), similarity: self.similarity }
    }

    /// Returns every memory of the merge, oldest first (by `created`, then id).
    fn members(&self) -> Vec<&MemoryRef<'_>> {
        let mut all: Vec<&MemoryRef<'_>> = std::iter::once(&self.into).chain(&self.removed).collect();
        all.sort_by_key(|m| (m.created_at, m.id));
        all
    }

    /// Returns why `body` may not be the merged text, if so: it lacks a salient token of a member
    /// (a summarizer's answer must keep every member's facts).
    fn loses(&self, body: &str) -> Option<String> {
        self.members().into_iter().find_map(|m| {
            let (missing, _) = salient::differences(m.content, body);
            (!missing.is_empty()).then(|| format!("leaves out {} of memory {}", quoted(&missing), m.id))
        })
    }
}

/// Returns the memory of `members` changed last (`updated`, else `created`; ties: the higher id).
fn newest<'m, 'a>(members: &[&'m MemoryRef<'a>]) -> Option<&'m MemoryRef<'a>> {
    members.iter().copied().max_by_key(|m| (m.updated_at.unwrap_or(m.created_at).max(m.created_at), m.id))
}

/// Returns tokens as the output names them: each in backticks, joined by commas.
fn quoted(tokens: &[String]) -> String {
    tokens.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
}

/// Runs the pass (see the module comment).
pub fn consolidate(repo: &Repo, req: &Request) -> Result<ConsolidateReport> {
    let lock = if req.dry_run { None } else { Some(repo.lock()?) };
    let index = crate::memories::store::MemoryStore::new(repo).scan()?;
    let mut diagnostics = index.problems();
    let threshold = repo.settings.memory_dedup_threshold.value;
    let (mut planned, conflicts) = plan_merges(&index, threshold);
    let mut skipped = Vec::new();
    planned.retain(|p| {
        let editable = store::can_edit(&index.dir.join(p.into.file_name));
        if !editable {
            let reason = format!(
                "memory {}'s frontmatter uses YAML that kb cannot edit without changing other values",
                p.into.id
            );
            skipped.push(Skipped { reason, ..skip(p) });
        }
        editable
    });
    let file = read_records(repo)?;
    let records = Records::parse(&file);
    diagnostics.extend(skipped_lines(&records));
    let removals = stale_records(&file, &records, repo.now);
    let branch = crate::board::current_branch(&repo.layout.root);
    let (board, problem) = crate::board::read(&repo.layout, &branch);
    diagnostics.extend(problem.clone());
    let pruned = if problem.is_some() { Vec::new() } else { board_prunes(&board) };

    let mut bodies: Vec<Option<String>> = planned.iter().map(|p| Some(p.body.content.to_string())).collect();
    if let (Some(cmd), false) = (&req.summarizer, req.dry_run) {
        let timeout = repo.env.summarizer_timeout.unwrap_or(SUMMARIZER_TIMEOUT);
        for (p, body) in planned.iter().zip(bodies.iter_mut()) {
            let answer = summarize(cmd, &p.members(), timeout, &repo.layout.root)
                .and_then(|text| p.loses(&text).map_or(Ok(text), |why| Err(format!("answered text that {why}"))));
            match answer {
                Ok(text) => *body = Some(text),
                Err(why) => {
                    skipped.push(Skipped { reason: format!("the summarizer {why}"), ..skip(p) });
                    *body = None;
                }
            }
        }
    }
    let kept: Vec<(&Planned<'_>, String)> =
        planned.iter().zip(bodies).filter_map(|(p, body)| body.map(|b| (p, b))).collect();

    let mut journal_path = None;
    if let Some(held) = lock
        && (!kept.is_empty() || !removals.is_empty() || !pruned.is_empty())
    {
        let parts = [
            (kept.len(), "merged", "group"),
            (removals.len(), "removed", "Copilot record"),
            (pruned.len(), "pruned", "board item"),
        ];
        let what: Vec<String> = parts
            .iter()
            .filter(|(n, ..)| *n > 0)
            .map(|(n, verb, noun)| format!("{verb} {}", plural(*n, noun)))
            .collect();
        let what = what.join(", ");
        let mut txn = Txn::begin(repo, held, "consolidate", what);
        let mut writes: Vec<(PathBuf, Vec<u8>)> = Vec::new();
        let mut removes: Vec<PathBuf> = Vec::new();
        for (p, body) in &kept {
            let into = index.dir.join(p.into.file_name);
            repo.guard(&into)?;
            let members = p.members();
            let tags: Vec<String> = members
                .iter()
                .filter(|m| m.id != p.into.id)
                .flat_map(|m| m.tags.iter().map(|t| t.to_string()))
                .collect();
            let importance = members.iter().map(|m| m.effective_importance()).max();
            let author = repo.author();
            let text = store::consolidated_text(&into, body, &tags, importance, author.as_deref(), repo.now)?;
            writes.push((into, text.into_bytes()));
            for m in &p.removed {
                let path = index.dir.join(m.file_name);
                repo.guard(&path)?;
                removes.push(path);
            }
        }
        if !removals.is_empty() {
            let edits: Vec<Edit> = removals.iter().map(|r| Edit::Delete(r.index)).collect();
            repo.guard(&file.path)?;
            writes.push((file.path.clone(), file.render(&edits).0));
        }
        if !pruned.is_empty() {
            let items: Vec<crate::board::Item> = board
                .items
                .iter()
                .enumerate()
                .filter(|(i, _)| !pruned.contains(i))
                .map(|(_, item)| item.clone())
                .collect();
            repo.guard(&board.path)?;
            // The pruned items themselves, so that an undo puts them back even into a board
            // changed since (a counter bumped by a `board get` or a session start).
            let removed = pruned
                .iter()
                .map(|&i| serde_json::to_value(&board.items[i]).map(|v| (i, v)))
                .collect::<serde_json::Result<Vec<_>>>()?;
            txn.removes_items(&board.path, removed);
            writes.push((board.path.clone(), crate::board::file_text(&items)?.into_bytes()));
        }
        // Merged memories are written before the others are removed: a crash in between leaves
        // duplicates, never a lost text (and the journal undoes either).
        let mut changes: Vec<Change<'_>> = writes.iter().map(|(p, b)| Change::Write(p, b)).collect();
        changes.extend(removes.iter().map(|p| Change::Remove(p)));
        txn.apply(&changes)?;
        journal_path = txn.finish()?;
    }
    diagnostics.extend(skipped.iter().map(|s| {
        let ids: Vec<String> = s.removed.iter().map(u64::to_string).collect();
        Diagnostic::warning(None, format!("not merged: memories {} into {}: {}", ids.join(", "), s.into, s.reason))
    }));
    Ok(ConsolidateReport {
        dry_run: req.dry_run,
        merged: kept.iter().map(|(p, _)| p.merge()).collect(),
        conflicts,
        records_removed: removals.iter().map(|r| r.id.clone()).collect(),
        board_pruned: pruned.iter().map(|&i| board.items[i].name.clone()).collect(),
        branch,
        journal: journal_path.as_deref().map(abs),
        skipped,
        removals,
        journal_path,
        diagnostics,
    })
}

/// Returns the positions of the board items to prune: `agent` items, least read then oldest
/// first, until at most 18 items are left; in board order.
fn board_prunes(board: &crate::board::Board) -> Vec<usize> {
    let excess = board.items.len().saturating_sub(crate::board::PRUNE_TO);
    let created = |i: usize| time::parse(&board.items[i].created).map(time::micros).unwrap_or(Micros::MIN);
    let mut agents: Vec<usize> =
        (0..board.items.len()).filter(|&i| board.items[i].src == crate::board::Src::Agent).collect();
    agents.sort_by_key(|&i| (board.items[i].read_count, created(i), i));
    agents.truncate(excess);
    agents.sort_unstable();
    agents
}

/// Returns a skipped group without its reason.
fn skip(p: &Planned<'_>) -> Skipped {
    let m = p.merge();
    Skipped { into: m.into, removed: m.removed, reason: String::new() }
}

/// Returns the merges of the store and the possible conflicts found on the way: near-duplicates
/// within each (type, agent), oldest first (by `created`, then id), in the order of their oldest
/// memory. A protected or core-context memory takes no part (it is never rewritten nor removed).
fn plan_merges(index: &crate::memories::index::Index, threshold: f64) -> (Vec<Planned<'_>>, Vec<Conflict>) {
    let mut all: Vec<MemoryRef<'_>> = index.memories().filter(|m| m.never_rewritten().is_none()).collect();
    all.sort_by_key(|m| (m.created_at, m.id));
    let mut scopes: HashMap<(MemoryType, Option<&str>), Vec<MemoryRef<'_>>> = HashMap::new();
    for m in all {
        scopes.entry((m.effective_type(), m.agent)).or_default().push(m);
    }
    let (mut out, mut conflicts) = (Vec::new(), Vec::new());
    for members in scopes.into_values() {
        let texts: Vec<&str> = members.iter().map(|m| m.content).collect();
        for g in neardup::groups(&texts, threshold) {
            let mut group: Vec<&MemoryRef<'_>> = vec![&members[g.first]];
            group.extend(g.others.iter().map(|&(i, _)| &members[i]));
            plan_group(group, threshold, &mut out, &mut conflicts);
        }
    }
    out.sort_by_key(|p| (p.into.created_at, p.into.id));
    conflicts.sort_by_key(|c| (c.other, c.memory));
    (out, conflicts)
}

/// Plans the merges of one group of near-duplicates (oldest first), as a save would consolidate:
/// the text kept is the newest member's, or, when the group mixes a person's memories (no
/// `created_by: agent:…`) with agents', the newest person's; a member is merged only when every
/// salient token of it occurs in that text, else it is a possible conflict. The members merged go
/// into the oldest of them (the oldest person's memory, in a mixed group). Those left out form the
/// next round, as long as two remain: only the near-duplicates of its kept text are merged there.
fn plan_group<'a>(
    mut rest: Vec<&MemoryRef<'a>>,
    threshold: f64,
    out: &mut Vec<Planned<'a>>,
    conflicts: &mut Vec<Conflict>,
) {
    let mut first_round = true;
    while rest.len() >= 2 {
        let persons: Vec<&MemoryRef<'a>> =
            rest.iter().copied().filter(|m| !crate::provenance::by_agent(m.created_by)).collect();
        let mixed = !persons.is_empty() && persons.len() < rest.len();
        let Some(body) = newest(if mixed { &persons } else { &rest }) else { return };
        let (mut merged, mut left): (Vec<&MemoryRef<'a>>, Vec<&MemoryRef<'a>>) = (Vec::new(), Vec::new());
        for &m in &rest {
            let (missing, extra) = salient::differences(m.content, body.content);
            let near = first_round || m.id == body.id || similarity(m.content, body.content) >= threshold;
            if missing.is_empty() && near {
                merged.push(m);
                continue;
            }
            if first_round && !missing.is_empty() {
                conflicts.push(Conflict {
                    memory: m.id,
                    other: body.id,
                    similarity: similarity(m.content, body.content),
                    only_in_memory: missing,
                    only_in_other: extra,
                });
            }
            left.push(m);
        }
        first_round = false;
        // The survivor: the oldest person's memory of a mixed group, else the oldest merged.
        let survivor = merged.iter().position(|m| !mixed || !crate::provenance::by_agent(m.created_by)).unwrap_or(0);
        if merged.len() >= 2 {
            let into = merged.remove(survivor);
            let similarity = merged.iter().map(|m| similarity(into.content, m.content)).fold(f64::INFINITY, f64::min);
            out.push(Planned {
                into: into.clone(),
                body: body.clone(),
                removed: merged.into_iter().cloned().collect(),
                similarity,
            });
        }
        if left.len() == rest.len() {
            return;
        }
        rest = left;
    }
}

/// Returns the records to remove: more down than up votes, last voted (else created) more than
/// 28 days before `now`. A record with neither time readable stays.
fn stale_records(
    file: &crate::copilot::JsonlFile,
    records: &Records<'_>,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<Removal> {
    let cutoff: Micros = (now - chrono::Duration::days(RECORD_AGE_DAYS)).timestamp_micros();
    let mut out = Vec::new();
    for r in records.iter().filter(|r| r.votes_ok && r.downvoted()) {
        let last_vote = serde_json::from_slice::<serde_json::Value>(file.raw(r.index))
            .ok()
            .and_then(|v| v.get("last_vote")?.get("at")?.as_str().map(str::to_string));
        let (when, at, voted) = match last_vote.as_deref().map(|s| (s, time::parse(s))) {
            Some((s, Ok(t))) => (s.to_string(), Some(time::micros(t)), true),
            _ => (r.created.unwrap_or_default().to_string(), r.created_at, false),
        };
        if at.is_some_and(|t| t < cutoff) {
            out.push(Removal { id: r.id.to_string(), index: r.index, up: r.votes.up, down: r.votes.down, when, voted });
        }
    }
    out
}

/// Runs `sh -c cmd` in the root with `{"memories":[{"id","content","tags"}...]}` (oldest first)
/// on stdin, in a process group of its own; returns its stdout, stripped. Fails (with why, for a
/// warning) when it exits unsuccessfully, runs past `timeout` (the whole group is killed), answers
/// nothing, more than a memory holds, text that is not UTF-8, or a secret.
fn summarize(
    cmd: &str,
    members: &[&MemoryRef<'_>],
    timeout: Duration,
    root: &std::path::Path,
) -> Result<String, String> {
    #[derive(Serialize)]
    struct Input<'a> {
        memories: Vec<Item<'a>>,
    }
    #[derive(Serialize)]
    struct Item<'a> {
        id: u64,
        content: &'a str,
        tags: &'a [&'a str],
    }
    let input =
        Input { memories: members.iter().map(|m| Item { id: m.id, content: m.content, tags: &m.tags }).collect() };
    let input = serde_json::to_vec(&input).map_err(|e| format!("input could not be built: {e}"))?;
    let bytes = run_summarizer(cmd, input, timeout, root, crate::format::text::MAX_TEXT_BYTES)?;
    let text = String::from_utf8(bytes).map_err(|_| "answered text that is not UTF-8".to_string())?;
    let text = crate::format::frontmatter::py_strip(&text);
    if text.is_empty() {
        return Err("gave an empty answer".to_string());
    }
    if text.contains('\0') {
        return Err("answered a NUL byte".to_string());
    }
    if let Some(found) = crate::secrets::scan(text).first() {
        return Err(format!("answered text that matches the {} secret rule", found.rule));
    }
    Ok(text.to_string())
}

/// Runs `sh -c cmd` in `root` with `input` on stdin, in a process group of its own, and returns
/// its stdout. Fails (with why, for a warning) when it exits unsuccessfully, runs past `timeout`
/// (the whole group is killed) or answers more than `limit` bytes (the rest is drained, so it never
/// blocks on a full pipe).
pub(super) fn run_summarizer(
    cmd: &str,
    input: Vec<u8>,
    timeout: Duration,
    root: &std::path::Path,
    limit: usize,
) -> Result<Vec<u8>, String> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("could not start: {e}"))?;
    let mut stdin = child.stdin.take();
    // Writing and reading on threads: a summarizer that answers before reading all of its input,
    // or never reads it, must not block kb.
    std::thread::spawn(move || {
        if let Some(s) = stdin.as_mut() {
            let _ = s.write_all(&input);
        }
    });
    let (tx, rx) = std::sync::mpsc::channel();
    if let Some(mut out) = child.stdout.take() {
        std::thread::spawn(move || {
            let limit = limit as u64 + 1;
            let mut buf = Vec::new();
            let read = (&mut out).take(limit).read_to_end(&mut buf);
            // Drain the rest so the summarizer never blocks on a full pipe.
            let _ = io::copy(&mut out, &mut io::sink());
            let _ = tx.send(read.map(|_| buf));
        });
    }
    let deadline = Instant::now() + timeout;
    // Waited for without reaping it, so that its process group id cannot be reused before the
    // group is killed.
    let pid = rustix::process::Pid::from_child(&child);
    let exited = loop {
        use rustix::process::{WaitId, WaitIdOptions, waitid};
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG;
        match waitid(WaitId::Pid(pid), options) {
            Ok(Some(_)) => break true,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => break false,
        }
    };
    // Its stdout closes when every process of its group has closed it.
    let output = if exited { rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).ok() } else { None };
    // Whatever it left running in its group goes too.
    let status = kill_group(&mut child);
    let (Some(status), Some(output)) = (status.filter(|_| exited), output) else {
        return Err(format!("took longer than {} ms and was stopped", timeout.as_millis()));
    };
    if !status.success() {
        return Err(match status.code() {
            Some(code) => format!("failed (exit status {code})"),
            None => "was killed by a signal".to_string(),
        });
    }
    let bytes = output.map_err(|e| format!("output could not be read: {e}"))?;
    if bytes.len() > limit {
        return Err(format!("answered more than {limit} bytes"));
    }
    Ok(bytes)
}

/// Kills the summarizer's process group (the summarizer is not reaped yet, so the group id is
/// still its own), then reaps the summarizer. Returns its exit status.
fn kill_group(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    let pid = rustix::process::Pid::from_child(child);
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    child.wait().ok()
}

impl Report for ConsolidateReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let mark = v.style.ok("✓");
        for c in &self.conflicts {
            let says = if c.only_in_other.is_empty() {
                format!("says {}, which memory {} does not", quoted(&c.only_in_memory), c.other)
            } else {
                format!("says {} where memory {} says {}", quoted(&c.only_in_memory), c.other, quoted(&c.only_in_other))
            };
            writeln!(
                w,
                "Not merged: memory {} {} (similarity {:.1}), a possible conflict: review with `kb audit {} {}`",
                c.memory,
                v.clean(&says),
                c.similarity,
                c.memory,
                c.other
            )?;
        }
        if self.merged.is_empty() && self.removals.is_empty() && self.board_pruned.is_empty() {
            let left = [
                (
                    self.skipped.len(),
                    "group of near-duplicates left alone (see the warning)",
                    "groups of near-duplicates left alone (see the warnings)",
                ),
                (self.conflicts.len(), "possible conflict left as it is", "possible conflicts left as they are"),
            ];
            let said: Vec<String> = left
                .iter()
                .filter(|(n, ..)| *n > 0)
                .map(|&(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
                .collect();
            if said.is_empty() {
                return writeln!(w, "Nothing to consolidate.");
            }
            return writeln!(w, "Nothing consolidated: {}.", said.join(", "));
        }
        for m in &self.merged {
            let ids: Vec<String> = m.removed.iter().map(u64::to_string).collect();
            let noun = if ids.len() == 1 { "memory" } else { "memories" };
            if self.dry_run {
                write!(w, "Would merge {noun} {} into memory {}", ids.join(", "), m.into)?;
            } else {
                write!(w, "{mark} Merged {noun} {} into memory {}", ids.join(", "), m.into)?;
            }
            writeln!(w, " (similarity {:.1})", m.similarity)?;
        }
        for r in &self.removals {
            let verb = if self.dry_run { "Would remove".to_string() } else { format!("{mark} Removed") };
            let when = format!("{} {}", if r.voted { "last vote" } else { "created" }, short_date(&r.when));
            writeln!(w, "{verb} Copilot memory {} ({} up, {} down, {when})", v.clean(&r.id), r.up, r.down)?;
        }
        for name in &self.board_pruned {
            let verb = if self.dry_run { "Would prune".to_string() } else { format!("{mark} Pruned") };
            writeln!(w, "{verb} board item {} (agent, branch {})", v.clean(name), v.clean(&self.branch))?;
        }
        match &self.journal_path {
            Some(p) => writeln!(w, "Undo with `kb undo` (journal entry {}).", v.rel(p)),
            None if self.dry_run => writeln!(w, "Dry run: nothing written."),
            None => Ok(()),
        }
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

/// Returns the date of a timestamp (`2026-10-01`), or the text as written.
fn short_date(at: &str) -> String {
    match time::parse(at) {
        Ok(t) => t.with_timezone(&chrono::Utc).format("%Y-%m-%d").to_string(),
        Err(_) => at.to_string(),
    }
}
