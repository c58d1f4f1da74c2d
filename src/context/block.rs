//! The compiled block (docs/behaviour.md, Layers): gathering every layer from its store for one
//! agent and set of files, then fitting it into the token budget or, with none, the block's
//! 20,480-byte limit (docs/behaviour.md, Budgets).

use super::layers::{self, Dropped, Layer, LayerKind, Unit};
use super::{SIZE_LIMIT, SIZE_TARGET, SectionKind};
use crate::decisions::{self, file::Status};
use crate::error::{Diagnostic, Severity};
use crate::knowledge::Knowledge;
use crate::knowledge::Sources;
use crate::knowledge::stale::{Stale, kept, left_out};
use crate::memories::file::{Importance, MemoryType};
use crate::memories::index::Pos;
use crate::repo::Repo;
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

pub use crate::settings::BlockRequest;

/// How one layer fared. JSON: `{"name", "items", "tokens", "dropped_items", "dropped_tokens"}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LayerReport {
    pub name: &'static str,
    /// Items kept (a context file cut in part counts as kept).
    pub items: usize,
    /// Tokens of the kept items, each counted alone (0 when tokens were not counted).
    pub tokens: usize,
    pub dropped_items: usize,
    pub dropped_tokens: usize,
}

/// How one section of Internal Knowledge (a context file or the Repository Memories) fared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionReport {
    /// Its heading without `### ` (`Project Context`, `Shared Context (org)`).
    pub title: String,
    pub path: PathBuf,
    /// Bytes of the section's body as read.
    pub bytes: usize,
    pub budget: Option<usize>,
    pub over_budget: bool,
    /// Bytes of the body that did not go into the block.
    pub cut_bytes: usize,
}

/// The compiled block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The block, without a final newline; `None` when no section has content.
    pub text: Option<String>,
    /// UTF-8 bytes of `text` (0 without it).
    pub bytes: usize,
    /// Whether anything was left out to fit the budget or the byte limit.
    pub truncated: bool,
    /// `o200k_base` tokens of `text`, when counted (a budget, or `count_tokens`).
    pub tokens: Option<usize>,
    pub max_tokens: Option<u32>,
    pub sections: Vec<SectionReport>,
    pub layers: Vec<LayerReport>,
    pub warnings: Vec<Diagnostic>,
    /// The source items left out for their git conflict markers, one warning each (also in
    /// `warnings`): `kb compile` then exits 1.
    pub conflicts: Vec<Diagnostic>,
    /// The stale items, left out (memories, records) or kept (the rest), one warning each (also
    /// in `warnings`): `kb compile` then exits 1 (`knowledge::stale`).
    pub stale: Vec<Diagnostic>,
}

/// Everything the block is made of, before fitting.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub layers: Vec<Layer>,
    /// Where each Internal Knowledge section came from (the context files, the JSONL file).
    pub files: Vec<(SectionKind, PathBuf)>,
    /// Each shared source's context file, in the order of the Shared Context layer's items:
    /// its name, its path and the bytes of its body.
    pub shared_files: Vec<(String, PathBuf, usize)>,
    pub warnings: Vec<Diagnostic>,
    /// The items left out for their conflict markers (`super::conflict`).
    pub conflicts: Vec<Diagnostic>,
    /// The stale items (`knowledge::stale`).
    pub stale: Vec<Diagnostic>,
    /// The files of the memories the layers show (for a reader that checks them:
    /// `Knowledge::memories_unchanged`).
    pub memory_files: Vec<String>,
}

/// Builds the block for `req` from `knowledge` (what it has not read yet is read now, once for
/// every block built from it).
pub fn build(knowledge: &Knowledge<'_>, req: &BlockRequest) -> Block {
    let budget = req.max_tokens.or(knowledge.repo().settings.context_max_tokens.value);
    assemble(gather(knowledge, req), budget, req.wrap, req.count_tokens)
}

/// A limit an agent cuts its file at (docs/formats.md, Agents' files): the block is fitted to it with the budget's
/// removal order when it would pass it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cap {
    /// The largest block that fits, in bytes or characters.
    pub limit: usize,
    /// Counted in characters (Windsurf); else UTF-8 bytes (Codex).
    pub chars: bool,
    /// The limit in words, for the marker and the warning: `codex's 32768-byte limit of AGENTS.md`.
    pub label: String,
}

/// Returns `block` (assembled from `layers`) as it is when it fits `cap`, else refitted to the
/// cap from `layers`, with a left-out marker line that names the cap and a warning.
pub fn fit_to_cap(layers: &[Layer], mut block: Block, cap: &Cap, wrap: bool) -> Block {
    let unit = if cap.chars { Unit::Chars } else { Unit::Bytes };
    if block.text.as_deref().map_or(0, |t| unit.measure(t)) <= cap.limit {
        return block;
    }
    let what = if cap.chars { "characters" } else { "bytes" };
    let marker = |layers: &[Layer], dropped: &[Dropped]| {
        let mut parts = Vec::new();
        let (mut items, mut size) = (0, 0);
        for (layer, d) in layers.iter().zip(dropped).filter(|(_, d)| d.items > 0 || d.cut) {
            items += d.items;
            size += d.size;
            let n = if d.cut { "cut".to_string() } else { d.items.to_string() };
            parts.push(format!("{} {n} ({} {what})", layer.kind.name(), d.size));
        }
        format!("<!-- kb: left out {items} items ({size} {what}) to fit {}: {} -->", cap.label, parts.join(", "))
    };
    let fitted = layers::fit(layers, cap.limit, unit, wrap, &marker);
    let dropped: usize = fitted.dropped.iter().map(|d| d.items).sum();
    let message = if fitted.size > cap.limit {
        format!("{}: the decisions alone are {} {what}, over it (decisions are never left out)", cap.label, fitted.size)
    } else {
        format!("{}: the block was fitted to it ({} {what}; {dropped} items left out)", cap.label, fitted.size)
    };
    block.warnings.push(Diagnostic::warning(None, message));
    block.bytes = fitted.text.as_ref().map_or(0, String::len);
    if block.tokens.is_some() {
        block.tokens = Some(fitted.text.as_deref().map_or(0, crate::format::tokens::count));
    }
    block.text = fitted.text;
    block.truncated = true;
    block
}

/// Returns the active decisions of the types `context_decision_types` names, oldest first, as
/// list items; the problems met; and the decisions left out for their conflict markers. A stale
/// decision is kept, with a warning in `stale`.
fn active_decisions(
    repo: &Repo,
    scan: anyhow::Result<&decisions::Scan>,
    check: &Stale,
    stale: &mut Vec<Diagnostic>,
) -> (Vec<String>, Vec<Diagnostic>, Vec<Diagnostic>) {
    decisions_of(repo, &repo.layout.root, scan, Some((check, stale)), None)
}

/// [`active_decisions`] of the repository at `root` (this one, or a shared source's, whose
/// items are marked `(NAME)` and never stale-checked: their paths are another repository's),
/// of the types this repository's `context_decision_types` names.
fn decisions_of(
    repo: &Repo,
    root: &Path,
    scan: anyhow::Result<&decisions::Scan>,
    mut check: Option<(&Stale, &mut Vec<Diagnostic>)>,
    mark: Option<&str>,
) -> (Vec<String>, Vec<Diagnostic>, Vec<Diagnostic>) {
    // The types of `context_decision_types` (architectural and scope by default).
    let types = &repo.settings.context_decision_types.value;
    match scan {
        Ok(scan) => {
            let mut conflicts = Vec::new();
            let problems = settle(&scan.problems, root, "this decision is", &mut conflicts);
            let mut active: Vec<_> = scan
                .decisions
                .iter()
                .filter(|(path, d)| match super::first_marker(&d.content) {
                    Some(_) => {
                        let line = super::file_marker(path, root);
                        conflicts.push(super::conflict(path, line, "this decision is"));
                        false
                    }
                    None => true,
                })
                .filter(|(_, d)| d.status == Status::Active && types.contains(&d.kind))
                .collect();
            active.sort_by_key(|(_, d)| d.age_key());
            if let Some((check, stale)) = check.as_mut() {
                for (path, d) in &active {
                    let problems = check.problems(&d.content, &[]);
                    if !problems.is_empty() {
                        stale.push(kept(path, None, &format!("decision {}", d.id), &problems));
                    }
                }
            }
            let item = |d: &decisions::file::Decision| match mark {
                Some(name) => layers::list_item(&format!("({name}) {}", d.content)),
                None => layers::list_item(&d.content),
            };
            (active.iter().map(|(_, d)| item(d)).collect(), problems, conflicts)
        }
        Err(e) => (Vec::new(), vec![Diagnostic::warning(None, format!("decisions left out: {e}"))], Vec::new()),
    }
}

/// Takes every layer the request asks for from `knowledge`. Unreadable files are warnings;
/// nothing is written but the caches.
pub fn gather(knowledge: &Knowledge<'_>, req: &BlockRequest) -> Inputs {
    let mut inputs = Inputs::default();
    let check = knowledge.stale();
    let (mut decisions, problems, conflicts) =
        active_decisions(knowledge.repo(), knowledge.decisions(), check, &mut inputs.stale);
    inputs.warnings.extend(problems);
    inputs.conflicts.extend(conflicts);
    // The shared sources' active decisions, after the project's, marked with the source's name.
    for view in knowledge.shared() {
        let root = &view.source.root;
        let (items, problems, conflicts) =
            decisions_of(knowledge.repo(), root, view.knowledge.decisions(), None, Some(&view.name));
        decisions.extend(items);
        inputs.warnings.extend(problems);
        inputs.conflicts.extend(conflicts);
    }
    inputs.layers.push(Layer::last_first(LayerKind::Decisions, decisions));
    if req.decisions_only {
        return screened(inputs);
    }
    let Sources { sections, records, warnings, conflicts } = knowledge.sources();
    // The global context is one person's: a block without it (a committed target) says nothing
    // about that file either.
    let global = knowledge.repo().layout.global_context();
    let personal = |d: &&Diagnostic| !req.global && global.is_some() && d.path == global;
    inputs.warnings.extend(warnings.iter().filter(|d| !personal(d)).cloned());
    inputs.conflicts.extend(conflicts.iter().filter(|d| !personal(d)).cloned());
    for s in sections {
        let kind = match s.kind {
            SectionKind::Global if !req.global => continue,
            SectionKind::Global => LayerKind::Global,
            SectionKind::Project => LayerKind::Project,
            SectionKind::RepositoryMemories => continue,
        };
        // The global context is a person's, about every repository: its paths are not this
        // one's to check (`kb audit` does not either).
        if s.kind == SectionKind::Project {
            let problems = check.problems_keyed(&s.body, &[], s.key);
            if !problems.is_empty() {
                inputs.stale.push(kept(&s.path, None, "the project context file", &problems));
            }
        }
        inputs.files.push((s.kind, s.path.clone()));
        inputs.layers.push(Layer::last_first(kind, vec![s.body.clone()]));
    }
    if let Some(layer) = shared_context(knowledge, &mut inputs.warnings, &mut inputs.shared_files) {
        let at = inputs.layers.iter().position(|l| l.kind == LayerKind::Project).unwrap_or(inputs.layers.len());
        inputs.layers.insert(at, layer);
    }
    if let Some((path, records)) = records {
        // A down-voted record is not shown, so not checked; a stale one is left out.
        let shown: Vec<&super::RepoMemory> = records
            .iter()
            .filter(|r| !r.downvoted)
            .filter(|r| {
                let citations: Vec<&str> = r.citations.iter().map(String::as_str).collect();
                let problems = check.problems_keyed(&r.fact, &citations, r.key);
                if !problems.is_empty() {
                    let what = format!("Copilot memory {}", r.id);
                    inputs.stale.push(left_out(path, Some(r.line), &what, &problems));
                }
                problems.is_empty()
            })
            .collect();
        inputs.files.push((SectionKind::RepositoryMemories, path.clone()));
        inputs.layers.push(records_layer(&shown));
    }
    let root = &knowledge.repo().layout.root;
    inputs.layers.push(instructions_layer(
        knowledge.instructions(),
        &req.for_paths,
        root,
        &mut inputs.warnings,
        &mut inputs.conflicts,
        (check, &mut inputs.stale),
    ));
    let (layers, files) =
        memory_layers(knowledge, req, &mut inputs.warnings, &mut inputs.conflicts, (check, &mut inputs.stale));
    inputs.layers.extend(layers);
    inputs.memory_files = files;
    // The open session is one person's too: only a request that asks for it reads it.
    let (session, problems) = if req.session { knowledge.session() } else { &(None, Vec::new()) };
    // A session with conflict markers does not parse: its problem becomes the conflict's warning.
    let problems = settle(problems, root, "the session is", &mut inputs.conflicts);
    inputs.warnings.extend(problems);
    if let Some(s) = session {
        let problems = check.problems(&format!("{}\n{}", s.session.focus, s.session.summary), &[]);
        if !problems.is_empty() {
            inputs.stale.push(kept(&s.path, None, "the session", &problems));
        }
        let mut items = vec![format!("Focus: {}", one_line(&s.session.focus))];
        let summary = crate::format::text::clean_body(&s.session.summary);
        if !summary.is_empty() {
            items.push(summary);
        }
        inputs.layers.push(Layer::last_first(LayerKind::Session, items));
    }
    // The board last: the layers are in priority order, which the left-out marker follows.
    if req.board {
        let (board, problem) = knowledge.board();
        inputs.warnings.extend(problem.iter().cloned());
        inputs.layers.push(Layer::last_first(LayerKind::Board, crate::board::render(board).into_iter().collect()));
    }
    screened(inputs)
}

/// The budget of each shared source's context file in the block.
const SHARED_CONTEXT_BUDGET: usize = 3072;

/// The shared sources' project context files, one item each under `### Shared Context (NAME)`;
/// one over its 3 KiB budget is a warning (as the project's own file is).
fn shared_context(
    knowledge: &Knowledge<'_>,
    warnings: &mut Vec<Diagnostic>,
    files_read: &mut Vec<(String, PathBuf, usize)>,
) -> Option<Layer> {
    let mut items = Vec::new();
    for view in knowledge.shared() {
        let files = view.knowledge.sources();
        warnings.extend(files.warnings.iter().cloned());
        let Some(s) = files.sections.iter().find(|s| s.kind == SectionKind::Project) else { continue };
        if s.body.trim().is_empty() || super::first_marker(&s.body).is_some() {
            continue;
        }
        if s.body.len() > SHARED_CONTEXT_BUDGET {
            let message = format!(
                "the shared context of {} is {} bytes, over its {SHARED_CONTEXT_BUDGET}-byte budget (3 KiB)",
                view.name,
                s.body.len()
            );
            warnings.push(Diagnostic::warning(None, message).in_file(&s.path));
        }
        items.push(format!("### Shared Context ({})\n\n{}", view.name, s.body.trim_end()));
        files_read.push((view.name.clone(), s.path.clone(), s.body.len()));
    }
    (!items.is_empty()).then(|| Layer::last_first(LayerKind::SharedContext, items))
}

/// Returns `problems` without those about files holding conflict markers, for each of which a
/// conflict warning (`what` names the item) goes into `conflicts` instead: a file a merge left
/// half-done often does not parse, and the markers are what to fix.
fn settle(problems: &[Diagnostic], within: &Path, what: &str, conflicts: &mut Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut kept = Vec::new();
    let mut marked: Vec<&Path> = Vec::new();
    for p in problems {
        let Some(path) = p.path.as_deref() else {
            kept.push(p.clone());
            continue;
        };
        if marked.contains(&path) {
            continue;
        }
        match super::file_marker(path, within) {
            Some(line) => {
                marked.push(path);
                conflicts.push(super::conflict(path, Some(line), what));
            }
            None => kept.push(p.clone()),
        }
    }
    kept
}

/// The last guard of "conflict markers never reach an agent": an item that would still put a
/// marker line into the block is left out (each source is checked where it is read, so this
/// catches only what its rendering makes), and a line of exactly `=======` (a heading underline,
/// which git's separator looks like) is written `========`, the same heading.
fn screened(mut inputs: Inputs) -> Inputs {
    for layer in &mut inputs.layers {
        let mut removed = Vec::new();
        for (i, item) in layer.items.iter_mut().enumerate() {
            if super::first_marker(item).is_some() {
                removed.push(i);
                let message = format!(
                    "git conflict markers: an item of {} left out of the context block until the conflict is resolved",
                    layer.kind.title()
                );
                inputs.conflicts.push(Diagnostic::warning(None, message));
            } else if item.split('\n').any(|l| l.trim_end_matches('\r') == "=======") {
                let lines: Vec<&str> = item.split('\n').collect();
                let fixed: Vec<String> = lines
                    .iter()
                    .map(|l| {
                        if l.trim_end_matches('\r') == "=======" {
                            l.replacen("=======", "========", 1)
                        } else {
                            l.to_string()
                        }
                    })
                    .collect();
                *item = fixed.join("\n");
            }
        }
        if !removed.is_empty() {
            let items: Vec<String> =
                layer.items.iter().enumerate().filter(|(i, _)| !removed.contains(i)).map(|(_, t)| t.clone()).collect();
            // The removal order of what is left, renumbered.
            let removal: Vec<usize> = layer
                .removal
                .iter()
                .filter(|i| !removed.contains(i))
                .map(|&i| i - removed.iter().filter(|&&r| r < i).count())
                .collect();
            *layer = Layer::with_removal(layer.kind, items, removal);
        }
    }
    inputs
}

/// The Copilot-style records shown (not down-voted, not stale) as `subject: fact` lines in file order; over a budget the lowest
/// vote score goes first, then the oldest (file order when `created` is missing).
fn records_layer(shown: &[&super::RepoMemory]) -> Layer {
    let items: Vec<String> = shown.iter().map(|r| super::record_line(r)).collect();
    let mut removal: Vec<usize> = (0..shown.len()).collect();
    removal.sort_by_key(|&i| (shown[i].score, shown[i].created_at.unwrap_or(i64::MIN), i));
    Layer::with_removal(LayerKind::RepositoryMemories, items, removal)
}

/// The instruction files that apply to `for_paths` (or always), in path order: `### <file name>`
/// and the body.
fn instructions_layer(
    found: &crate::instructions::Instructions,
    for_paths: &[String],
    root: &Path,
    warnings: &mut Vec<Diagnostic>,
    conflicts: &mut Vec<Diagnostic>,
    (check, stale): (&Stale, &mut Vec<Diagnostic>),
) -> Layer {
    warnings.extend(settle(&found.problems, root, "this instruction file is", conflicts));
    let items = found
        .files
        .iter()
        .filter(|i| match super::first_marker(&i.body) {
            Some(_) => {
                let line = super::file_marker(&i.path, root);
                conflicts.push(super::conflict(&i.path, line, "this instruction file is"));
                false
            }
            None => true,
        })
        .filter(|i| i.matched(for_paths).is_some() && !i.body.is_empty())
        .inspect(|i| {
            let problems = check.problems(&i.body, &[]);
            if !problems.is_empty() {
                stale.push(kept(&i.path, None, "this instruction file", &problems));
            }
        })
        .map(|i| format!("### {}\n\n{}", file_name(&i.path), i.body))
        .collect();
    Layer::last_first(LayerKind::Instructions, items)
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Core Context (every visible `core_context` memory, oldest first; the newest goes first),
/// Hot Memories (with `req.hot`: visible memories with heat ≥ 3, hottest first, at most
/// `hot_limit`; the coldest goes first) and Learnings (the `learnings_limit` newest visible
/// high-importance learnings and patterns, newest first; the oldest goes first). A memory shows
/// once, in the first of these it qualifies for.
fn memory_layers(
    knowledge: &Knowledge<'_>,
    req: &BlockRequest,
    warnings: &mut Vec<Diagnostic>,
    conflicts: &mut Vec<Diagnostic>,
    (check, stale): (&Stale, &mut Vec<Diagnostic>),
) -> ([Layer; 3], Vec<String>) {
    let repo = knowledge.repo();
    let empty = || {
        let layers = [
            Layer::last_first(LayerKind::CoreContext, Vec::new()),
            Layer::last_first(LayerKind::Hot, Vec::new()),
            Layer::last_first(LayerKind::Learnings, Vec::new()),
        ];
        (layers, Vec::new())
    };
    let index = match knowledge.memories() {
        Ok(index) => index,
        Err(e) => {
            warnings.push(Diagnostic::warning(None, format!("memories left out: {e}")));
            return empty();
        }
    };
    let root = &repo.layout.root;
    warnings.extend(settle(&index.problems(), root, "this memory is", conflicts));
    // A memory whose text holds conflict markers goes nowhere (its file is named once). The
    // memories are handled by position (no borrowed copy of each): a long-running server builds
    // this block from 10,000 memories on every request.
    let mut marked: Vec<&str> = Vec::new();
    for p in index.positions().filter(|&p| super::first_marker(index.content_at(p)).is_some()) {
        let name = index.file_name_at(p);
        if !marked.contains(&name) {
            marked.push(name);
            let path = index.dir.join(name);
            let line = super::file_marker(&path, root);
            conflicts.push(super::conflict(&path, line, "this memory is"));
        }
    }
    let agent = req.agent.as_deref();
    let visible =
        |p: Pos| index.visible_at(p, agent) && (marked.is_empty() || !marked.contains(&index.file_name_at(p)));
    // A stale memory is left out (one warning each). Only the memories a layer would take are
    // checked, each once: the core context, and the hot and high-importance ones until their
    // limits are reached.
    let checked: std::cell::RefCell<std::collections::BTreeMap<Pos, bool>> = Default::default();
    let stale = std::cell::RefCell::new(stale);
    let fresh = |p: Pos| -> bool {
        if let Some(&ok) = checked.borrow().get(&p) {
            return ok;
        }
        let problems = check.problems(index.content_at(p), &[]);
        if !problems.is_empty() {
            let path = index.dir.join(index.file_name_at(p));
            let what = format!("memory {}", index.id_at(p));
            stale.borrow_mut().push(left_out(&path, None, &what, &problems));
        }
        checked.borrow_mut().insert(p, problems.is_empty());
        problems.is_empty()
    };
    // The ids the heat log names: only those can be Hot Memories.
    let heats = req.hot.then(|| knowledge.heats());
    let heated: rustc_hash::FxHashSet<u64> = heats
        .iter()
        .flat_map(|h| h.heats.iter())
        .filter(|h| h.access.store == crate::kinds::Store::Md)
        .filter_map(|h| h.access.id.parse().ok())
        .collect();
    // One pass, no sort of every memory: the core context, the high-importance learnings, and of
    // each heated id the oldest visible memory that is not core context.
    let (mut core, mut high): (Vec<Pos>, Vec<Pos>) = (Vec::new(), Vec::new());
    let mut candidates: FxHashMap<u64, Pos> = FxHashMap::default();
    for p in index.positions().filter(|&p| visible(p)) {
        let kind = index.type_at(p);
        if kind == MemoryType::CoreContext {
            core.push(p);
            continue;
        }
        if index.importance_at(p) == Importance::High && matches!(kind, MemoryType::Learning | MemoryType::Pattern) {
            high.push(p);
        }
        let id = index.id_at(p);
        if heated.contains(&id) {
            let oldest = candidates.entry(id).or_insert(p);
            if index.age_key_at(p) < index.age_key_at(*oldest) {
                *oldest = p;
            }
        }
    }
    core.sort_by_key(|&p| index.age_key_at(p));
    high.sort_by_key(|&p| index.age_key_at(p));
    let mut shown: Vec<String> = Vec::new();
    let mut item = |p: Pos| {
        shown.push(index.file_name_at(p).to_string());
        layers::list_item(index.content_at(p))
    };
    let core: Vec<String> = core.iter().filter(|&&p| fresh(p)).map(|&p| item(p)).collect();
    let (mut hot_ids, mut hot): (Vec<u64>, Vec<String>) = (Vec::new(), Vec::new());
    if let Some(heats) = heats {
        // An unreadable log, or lines that are not accesses, as for the memory files above.
        warnings.extend(heats.problems.iter().cloned());
        let limit = usize::try_from(repo.settings.hot_limit.value).unwrap_or(usize::MAX);
        hot_ids = crate::heat::hot_ids(heats, limit, |id| candidates.get(&id).is_some_and(|&p| fresh(p)));
        hot = hot_ids.iter().filter_map(|id| candidates.get(id)).map(|&p| item(p)).collect();
    }
    let limit = usize::try_from(repo.settings.learnings_limit.value).unwrap_or(usize::MAX);
    let learnings: Vec<String> = high
        .iter()
        .rev()
        .filter(|&&p| !hot_ids.contains(&index.id_at(p)) && fresh(p))
        .take(limit)
        .map(|&p| item(p))
        .collect();
    let layers = [
        Layer::last_first(LayerKind::CoreContext, core),
        // Shown hottest first, removed coldest (last) first.
        Layer::last_first(LayerKind::Hot, hot),
        // Shown newest first, removed oldest (last) first.
        Layer::last_first(LayerKind::Learnings, learnings),
    ];
    (layers, shown)
}

/// Returns `s` on one line: runs of whitespace become one space.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Fits the inputs into `budget` tokens, or with none into the byte limit, and adds the
/// size and budget warnings.
pub fn assemble(inputs: Inputs, budget: Option<u32>, wrap: bool, count_tokens: bool) -> Block {
    assemble_framed(inputs, budget, None, wrap, count_tokens)
}

/// The lines kb writes around a block in a file (a standalone target's marker line, a managed
/// block's two marker lines): `frame(block)` is what the agent loads of that file, and a token
/// budget holds all of it (docs/behaviour.md, Token budget).
pub type Frame<'a> = &'a dyn Fn(&str) -> String;

/// [`assemble`], with a token budget that also holds what `frame` writes around the block: the
/// block is fitted to the budget less the frame, refitted while the framed text (whose marker
/// line may carry a hash of the block) still passes it. The block's `tokens` are then the framed
/// text's. Without a budget, or a frame, it is [`assemble`].
pub fn assemble_framed(
    inputs: Inputs,
    budget: Option<u32>,
    frame: Option<Frame<'_>>,
    wrap: bool,
    count_tokens: bool,
) -> Block {
    let Inputs { layers, files, shared_files, mut warnings, conflicts, stale, .. } = inputs;
    warnings.extend(conflicts.iter().cloned());
    warnings.extend(stale.iter().cloned());
    let count = crate::format::tokens::count;
    let counter: &dyn Fn(&str) -> usize = &count;
    let (limit, unit) = match budget {
        Some(b) => (b as usize, Unit::Tokens(counter)),
        None => (SIZE_LIMIT, Unit::Bytes),
    };
    // The context files' own budgets hold whatever the block's limit is.
    for layer in &layers {
        let kind = match layer.kind {
            LayerKind::Global => SectionKind::Global,
            LayerKind::Project => SectionKind::Project,
            _ => continue,
        };
        let (Some(budget), Some(body)) = (kind.budget(), layer.items.first()) else { continue };
        if body.len() > budget {
            let path = files.iter().find(|(k, _)| *k == kind).map(|(_, p)| p.as_path()).unwrap_or(Path::new(""));
            warnings.push(
                Diagnostic::warning(
                    None,
                    format!(
                        "{} is {} bytes, over its {budget}-byte budget ({} KiB)",
                        kind.title(),
                        body.len(),
                        budget / 1024
                    ),
                )
                .in_file(path),
            );
        }
    }
    let marker = |detail: Detail| {
        move |layers: &[Layer], dropped: &[Dropped]| match budget {
            Some(b) => token_marker(layers, dropped, b, detail),
            None => byte_marker(layers, dropped),
        }
    };
    let fit_within = |limit: usize| {
        let mut fitted = layers::fit(&layers, limit, unit, wrap, &marker(Detail::Full));
        // The budget includes the marker line: when the decisions and the full line do not fit, a
        // shorter line may (the decisions are never what goes).
        for detail in [Detail::Counts, Detail::Totals] {
            if budget.is_none() || fitted.size <= limit {
                break;
            }
            let shorter = layers::fit(&layers, limit, unit, wrap, &marker(detail));
            if shorter.size < fitted.size {
                fitted = shorter;
            }
        }
        fitted
    };
    let fitted = match (budget, frame) {
        (Some(b), Some(frame)) => {
            let b = b as usize;
            let framed = |f: &layers::Fitted| f.text.as_deref().map_or(0, |t| count(&frame(t)));
            let mut inner = b.saturating_sub(count(&frame("")));
            let mut fitted = fit_within(inner);
            let mut total = framed(&fitted);
            // Token counts do not quite add up, and the frame's hash changes with the block: a
            // few refits settle it.
            for _ in 0..4 {
                if total <= b || inner == 0 {
                    break;
                }
                inner = inner.saturating_sub(total - b);
                let refit = fit_within(inner);
                total = framed(&refit);
                fitted = refit;
            }
            fitted.size = total;
            fitted
        }
        _ => fit_within(limit),
    };
    let text = fitted.text;
    let bytes = text.as_ref().map_or(0, String::len);
    let tokens = match (budget, &text) {
        (Some(_), _) => Some(fitted.size),
        (None, Some(t)) if count_tokens => Some(count(t)),
        (None, None) if count_tokens => Some(0),
        _ => None,
    };
    match budget {
        Some(b) => {
            let b = b as usize;
            if fitted.size > b {
                warnings.push(Diagnostic::warning(
                    None,
                    format!(
                        "the decisions do not fit: the block is {} tokens, {} over its {b}-token budget \
                         (decisions are never left out)",
                        fitted.size,
                        fitted.size - b
                    ),
                ));
            } else if fitted.size * 5 >= b * 4 {
                warnings.push(Diagnostic::warning(
                    None,
                    format!("context uses {}% of its {b}-token budget", fitted.size * 100 / b),
                ));
            }
        }
        None => {
            let full = layers::render(&layers, &layers::all_kept(&layers), None, wrap).map_or(0, |t| t.len());
            if fitted.truncated {
                // The wording of co-cli (the Python tool whose file layout kb keeps), which its users (and their
                // scripts) look for.
                warnings.push(Diagnostic::co_cli(
                    Severity::Error,
                    format!(
                        "Knowledge size {full} bytes exceeds hard limit {SIZE_LIMIT} bytes. Truncating to limit \
                         ({bytes} bytes; {}).",
                        byte_cuts(&layers, &fitted.dropped).1
                    ),
                ));
            } else if full > SIZE_TARGET {
                warnings.push(Diagnostic::co_cli(
                    Severity::Warning,
                    format!(
                        "Knowledge size {full} bytes exceeds target {SIZE_TARGET} bytes. Consider trimming \
                         context files to improve performance."
                    ),
                ));
            }
        }
    }
    // The shared sources' layer is reported only when there is one: without shared sources the
    // report keeps its ten layers.
    let layer_reports = LayerKind::ALL
        .iter()
        .filter(|&&kind| kind != LayerKind::SharedContext || layers.iter().any(|l| l.kind == kind))
        .map(|&kind| {
            let Some(li) = layers.iter().position(|l| l.kind == kind) else {
                return LayerReport { name: kind.name(), items: 0, tokens: 0, dropped_items: 0, dropped_tokens: 0 };
            };
            let layer = &layers[li];
            let kept = &fitted.kept[li];
            let measure = |s: &str| if tokens.is_some() { count(s) } else { 0 };
            let kept_tokens = (0..layer.items.len()).map(|i| measure(&layer.items[i][..kept[i]])).sum();
            let dropped_tokens = match budget {
                Some(_) => fitted.dropped[li].size,
                None => (0..layer.items.len()).map(|i| measure(&layer.items[i][kept[i]..])).sum(),
            };
            LayerReport {
                name: kind.name(),
                items: kept.iter().filter(|&&k| k > 0).count(),
                tokens: kept_tokens,
                dropped_items: fitted.dropped[li].items,
                dropped_tokens,
            }
        })
        .collect();
    // Each shared source's file is one item of its layer: what of it did not fit is cut from
    // the item (its heading and body).
    let shared_sections = layers.iter().position(|l| l.kind == LayerKind::SharedContext).map(|li| {
        shared_files.iter().zip(layers[li].items.iter().zip(&fitted.kept[li])).map(
            |((name, path, body), (item, &kept))| SectionReport {
                title: format!("Shared Context ({name})"),
                path: path.clone(),
                bytes: *body,
                budget: Some(SHARED_CONTEXT_BUDGET),
                over_budget: *body > SHARED_CONTEXT_BUDGET,
                cut_bytes: item.len() - kept.min(item.len()),
            },
        )
    });
    let mut sections: Vec<SectionReport> = files
        .iter()
        .filter_map(|(kind, path)| {
            let lk = match kind {
                SectionKind::Global => LayerKind::Global,
                SectionKind::Project => LayerKind::Project,
                SectionKind::RepositoryMemories => LayerKind::RepositoryMemories,
            };
            let li = layers.iter().position(|l| l.kind == lk)?;
            let layer = &layers[li];
            let kept = &fitted.kept[li];
            let join_len = |lens: &mut dyn Iterator<Item = usize>| {
                let (n, sum): (usize, usize) = lens.fold((0, 0), |(n, s), l| (n + 1, s + l));
                sum + n.saturating_sub(1)
            };
            let bytes = join_len(&mut layer.items.iter().map(String::len));
            let kept_bytes = join_len(&mut kept.iter().copied().filter(|&k| k > 0));
            Some(SectionReport {
                title: kind.title().to_string(),
                path: path.clone(),
                bytes,
                budget: kind.budget(),
                over_budget: kind.budget().is_some_and(|b| bytes > b),
                cut_bytes: bytes - kept_bytes.min(bytes),
            })
        })
        .collect();
    // In the block's order: after the global context, before the project's.
    if let Some(shared) = shared_sections {
        let at = sections.iter().position(|s| s.title != SectionKind::Global.title()).unwrap_or(sections.len());
        sections.splice(at..at, shared);
    }
    Block {
        text,
        bytes,
        truncated: fitted.truncated,
        tokens,
        max_tokens: budget,
        sections,
        layers: layer_reports,
        warnings,
        conflicts,
        stale,
    }
}

/// How much the left-out marker says: by layer with tokens, by layer, or the totals alone (the
/// shorter forms only when the decisions and the longer line do not fit the budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detail {
    Full,
    Counts,
    Totals,
}

/// The last line of a block cut to a token budget:
/// `<!-- kb: left out N items (T tokens) to fit the B-token budget: learnings 3 (120 tokens), ... -->`;
/// with less detail `...: learnings 3, ... -->`, or `... the B-token budget -->`.
fn token_marker(layers: &[Layer], dropped: &[Dropped], budget: u32, detail: Detail) -> String {
    let mut parts = Vec::new();
    let (mut items, mut tokens) = (0, 0);
    for (layer, d) in layers.iter().zip(dropped).filter(|(_, d)| d.items > 0 || d.cut) {
        items += d.items;
        tokens += d.size;
        let what = if d.cut { "cut".to_string() } else { d.items.to_string() };
        parts.push(match detail {
            Detail::Full => format!("{} {what} ({} tokens)", layer.kind.name(), d.size),
            _ => format!("{} {what}", layer.kind.name()),
        });
    }
    let list = if detail == Detail::Totals { String::new() } else { format!(": {}", parts.join(", ")) };
    format!("<!-- kb: left out {items} items ({tokens} tokens) to fit the {budget}-token budget{list} -->")
}

/// Returns the total bytes left out and the list `Title: all N bytes; Title: last C of N bytes;
/// Title: C of N bytes (k of n items)` of the layers that lost any.
fn byte_cuts(layers: &[Layer], dropped: &[Dropped]) -> (usize, String) {
    let mut total = 0;
    let mut list = Vec::new();
    for (layer, d) in layers.iter().zip(dropped).filter(|(_, d)| d.items > 0 || d.cut) {
        let len: usize = layer.items.iter().map(String::len).sum();
        total += d.size;
        list.push(if d.cut {
            format!("{}: last {} of {len} bytes", layer.kind.title(), d.size)
        } else if d.items == layer.items.len() {
            format!("{}: all {len} bytes", layer.kind.title())
        } else {
            format!("{}: {} of {} items, {} of {len} bytes", layer.kind.title(), d.items, layer.items.len(), d.size)
        });
    }
    (total, list.join("; "))
}

/// The last paragraph of a block cut to the byte limit.
fn byte_marker(layers: &[Layer], dropped: &[Dropped]) -> String {
    let (total, list) = byte_cuts(layers, dropped);
    format!("[truncated by kb: {total} bytes cut to fit the {SIZE_LIMIT}-byte limit ({list})]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screened_leaves_out_marker_items_and_lengthens_a_bare_underline() {
        let mut i = Inputs::default();
        let items = ["a: one", "<<<<<<< HEAD", "b: two", ">>>>>>> x"].map(String::from).to_vec();
        i.layers.push(Layer::with_removal(LayerKind::RepositoryMemories, items, vec![3, 0, 1, 2]));
        i.layers.push(Layer::last_first(LayerKind::Project, vec!["Title\n=======\n\ntext\n========".into()]));
        let out = screened(i);
        assert_eq!(out.layers[0].items, ["a: one", "b: two"]);
        assert_eq!(out.layers[0].removal, [0, 1], "the removal order of what is left");
        assert_eq!(out.layers[1].items, ["Title\n========\n\ntext\n========"]);
        assert_eq!(out.conflicts.len(), 2);
    }

    /// Inputs of the Internal Knowledge sections alone: context files and records (each record line an item).
    fn inputs(parts: &[(LayerKind, &str)]) -> Inputs {
        let mut i = Inputs::default();
        for &(kind, body) in parts {
            let items: Vec<String> = if kind == LayerKind::RepositoryMemories {
                body.lines().map(String::from).collect()
            } else {
                vec![body.to_string()]
            };
            let section = match kind {
                LayerKind::Global => SectionKind::Global,
                LayerKind::Project => SectionKind::Project,
                _ => SectionKind::RepositoryMemories,
            };
            i.files.push((section, PathBuf::from("/x")));
            i.layers.push(Layer::last_first(kind, items));
        }
        i
    }

    #[test]
    fn renders_co_cli_layout() {
        let b = assemble(inputs(&[(LayerKind::Global, "g"), (LayerKind::Project, "p")]), None, false, false);
        assert_eq!(
            b.text.as_deref(),
            Some("## Internal Knowledge\n\n### Global Context\n\ng\n\n### Project Context\n\np")
        );
        assert_eq!(b.bytes, b.text.as_ref().unwrap().len());
        assert_eq!(b.tokens, None, "tokens are counted only when asked");
        let w = assemble(inputs(&[(LayerKind::Project, "p")]), None, true, false);
        assert_eq!(
            w.text.as_deref(),
            Some("<system-reminder>\n## Internal Knowledge\n\n### Project Context\n\np\n</system-reminder>")
        );
        let none = assemble(Inputs::default(), None, true, false);
        assert_eq!((none.text, none.bytes, none.truncated), (None, 0, false));
        assert_eq!(none.layers.len(), 10, "one entry per layer, always");
    }

    /// A project body that makes the whole block exactly `total` bytes.
    fn project_of_total(total: usize) -> String {
        "x".repeat(total - "## Internal Knowledge\n\n### Project Context\n\n".len())
    }

    #[test]
    fn total_size_boundaries() {
        for (total, warns, truncated) in
            [(10_240, false, false), (10_241, true, false), (20_480, true, false), (20_481, true, true)]
        {
            let body = project_of_total(total);
            let b = assemble(inputs(&[(LayerKind::Project, &body)]), None, false, false);
            let size_warnings: Vec<_> = b.warnings.iter().filter(|w| w.path.is_none()).collect();
            assert_eq!(!size_warnings.is_empty(), warns, "{total}");
            assert_eq!(b.truncated, truncated, "{total}");
            assert!(b.bytes <= SIZE_LIMIT);
            if !truncated {
                assert_eq!(b.bytes, total);
            }
        }
    }

    #[test]
    fn section_budget_boundaries() {
        for (kind, budget) in [(LayerKind::Global, 3072), (LayerKind::Project, 7168)] {
            for (len, over) in [(budget, false), (budget + 1, true)] {
                let b = assemble(inputs(&[(kind, &"y".repeat(len))]), None, false, false);
                assert_eq!(b.sections[0].over_budget, over);
                assert_eq!(b.warnings.iter().any(|w| w.message.contains("budget")), over, "{kind:?} {len}");
            }
        }
    }

    #[test]
    fn byte_limit_removes_records_before_cutting_context_files() {
        let g = "g".repeat(2000);
        let p: String = (0..40).map(|i| format!("## P{i}\n\n{}\n\n", "p".repeat(300))).collect();
        let r: String = (0..400).map(|i| format!("s{i}: {}\n", "r".repeat(40))).collect();
        let p = crate::format::text::clean_body(&p);
        let b = assemble(
            inputs(&[(LayerKind::Global, &g), (LayerKind::Project, &p), (LayerKind::RepositoryMemories, &r)]),
            None,
            false,
            false,
        );
        let text = b.text.unwrap();
        assert!(b.truncated && text.len() <= SIZE_LIMIT);
        assert!(text.contains(&g) && text.contains(&p), "project and global stay whole");
        assert!(text.contains("### Repository Memories\n\ns0: "), "the first records stay (last first goes)");
        assert!(text.ends_with(" bytes)]"), "{}", &text[text.len() - 200..]);
        assert!(text.contains("[truncated by kb: ") && text.contains("Repository Memories: "));
        // Each record is kept whole or not at all.
        let last = text.lines().rev().find(|l| l.starts_with('s')).unwrap();
        assert_eq!(last.len(), last.find(": ").unwrap() + 2 + 40);
        assert!(b.sections[2].cut_bytes > 0);

        // Only the project section over the limit: the records go entirely, the project is cut at
        // a heading.
        let big: String = (0..100).map(|i| format!("## H{i}\n\n{}\n\n", "p".repeat(300))).collect();
        let big = crate::format::text::clean_body(&big);
        let b = assemble(
            inputs(&[(LayerKind::Project, &big), (LayerKind::RepositoryMemories, "a: b")]),
            None,
            false,
            false,
        );
        let text = b.text.unwrap();
        assert!(!text.contains("### Repository Memories"));
        assert!(text.contains("Repository Memories: all 4 bytes"), "{}", &text[text.len() - 300..]);
        let before_marker = &text[..text.rfind("\n\n[truncated by kb").unwrap()];
        assert!(before_marker.ends_with(&"p".repeat(300)), "{}", &before_marker[before_marker.len() - 100..]);
        assert!(text.len() <= SIZE_LIMIT);
        assert!(b.warnings.iter().any(|w| w.message.starts_with("Knowledge size ") && w.co_cli_label));
    }

    #[test]
    fn cjk_is_never_split() {
        let body = "漢字かな交じり文".repeat(1100); // 24 bytes × 1100 = 26,400 bytes, one paragraph
        let b = assemble(inputs(&[(LayerKind::Project, &body)]), None, false, false);
        let text = b.text.unwrap();
        assert!(b.truncated && text.len() <= SIZE_LIMIT && text.len() > SIZE_LIMIT - 400);
    }

    fn layered() -> Inputs {
        let mut i = inputs(&[(LayerKind::Project, "Project body.")]);
        i.layers.insert(0, Layer::last_first(LayerKind::Decisions, vec!["- Use Postgres for storage".into()]));
        let learnings = (0..30).map(|n| layers::list_item(&format!("learning number {n} about the build"))).collect();
        i.layers.push(Layer::last_first(LayerKind::Learnings, learnings));
        i.layers.push(Layer::last_first(LayerKind::Session, vec!["Focus: tests".into(), "A summary.".into()]));
        i
    }

    #[test]
    fn a_token_budget_removes_whole_items_and_says_so() {
        let full = assemble(layered(), None, false, true);
        let all = full.tokens.unwrap();
        assert_eq!(all, crate::format::tokens::count(full.text.as_deref().unwrap()));
        let budget = u32::try_from(all - 40).unwrap();
        let b = assemble(layered(), Some(budget), false, true);
        let text = b.text.unwrap();
        assert!(b.tokens.unwrap() <= budget as usize);
        assert_eq!(b.tokens.unwrap(), crate::format::tokens::count(&text), "the count is of the final text");
        let last = text.lines().last().unwrap();
        assert!(last.starts_with("<!-- kb: left out ") && last.ends_with(" -->"), "{last}");
        assert!(
            last.contains(&format!("to fit the {budget}-token budget: ")) && last.contains("session 2 ("),
            "{last}"
        );
        assert!(!text.contains("## Current Session"), "the session goes first");
        let session = b.layers.iter().find(|l| l.name == "session").unwrap();
        assert_eq!((session.items, session.dropped_items), (0, 2));
        assert!(b.warnings.iter().any(|w| w.message.contains("% of its ") && w.message.contains("-token budget")));
    }

    #[test]
    fn decisions_are_never_removed() {
        let b = assemble(layered(), Some(100), false, true);
        let text = b.text.unwrap();
        assert!(text.contains("- Use Postgres for storage"));
        assert!(!text.contains("learning number 29"), "{text}");
        assert!(b.tokens.unwrap() <= 100);
        let tiny: Vec<String> =
            (0..60).map(|n| layers::list_item(&format!("decision {n} is a long sentence about it"))).collect();
        let mut i = Inputs::default();
        i.layers.push(Layer::last_first(LayerKind::Decisions, tiny));
        let b = assemble(i, Some(100), false, true);
        assert!(b.tokens.unwrap() > 100);
        assert!(b.text.unwrap().contains("decision 59"));
        assert!(b.warnings.iter().any(|w| w.message.contains("over its 100-token budget")), "{:?}", b.warnings);
    }
}
