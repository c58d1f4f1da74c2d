//! `kb diff [BASE] [HEAD]` (docs/diff.md): what agents will believe after a change. Each side is
//! the working tree, or kb's own files of a git revision copied into a private folder
//! (`revision`; the memories parsed straight from git), opened with the normal read model, so its
//! items, problems and compiled blocks are exactly what kb would make of that revision. The two
//! sides are read at once, on two threads. They are compared item by item per store (memories by
//! file name, then a renamed file by id and content, but not the memories the same on both sides;
//! records, decisions by id; instructions by path; the project context file), consolidations
//! found, and each agent's block compared in lines, tokens and size against the agent's limit.
//!
//! A side whose file does not parse yields a problem on that side, never an error; only a
//! revision that names no commit (or no git at all) is one, found before anything is read.

use super::agents::{self, Plan};
use super::decision::DecisionJson;
use super::read::{MemoryJson, RecordJson, skipped_lines};
use super::{Report, View, abs};
use crate::context::agents::block_limit;
use crate::copilot::Records;
use crate::error::Diagnostic;
use crate::error::KbError;
use crate::knowledge::Knowledge;
use crate::knowledge::context_files::SectionKind;
use crate::memories::index::{Index, Pos};
use crate::paths::Layout;
use crate::repo::Repo;
use crate::revision::{Git, RevisionError, Tree};
use crate::settings::Agent;
use anyhow::Result;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// kb's own files that a side's items and blocks are made of, as paths of a tree: what a
/// revision's side copies. Everything else in the tree is never read (the ended sessions too:
/// no block holds them).
pub const KB_PATHS: [&str; 11] = [
    ".co-cli/settings.json",
    ".co-cli/knowledge/context.md",
    ".co-cli/knowledge/memories",
    ".co-cli/knowledge/decisions",
    ".co-cli/knowledge/session.md",
    ".github/copilot-memories.jsonl",
    ".github/instructions",
    // The agents' managed-block files: only for what they hold outside kb's block (Codex's
    // 32 KiB counts the whole file).
    "AGENTS.md",
    "CLAUDE.md",
    "GEMINI.md",
    ".github/copilot-instructions.md",
];

/// The share of a removed memory's words that must be in another memory for the removal to count
/// as a consolidation into it.
pub const CONSOLIDATED_SHARE: f64 = 0.8;

/// What `kb diff` compares: each side a revision, or the working tree (`None`; the default head).
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Default `HEAD`.
    pub base: Option<String>,
    pub head: Option<String>,
    /// Render as a pull-request comment.
    pub markdown: bool,
    /// Exit 1 when anything differs.
    pub exit_code: bool,
    /// What the working tree's settings hold that kb will not take (the repository was opened
    /// without it): a problem of the head side when the head is the working tree.
    pub settings_problems: Vec<crate::settings::SettingsError>,
}

/// One item of a store on one side: its match key, its JSON (`kb show --json`'s) and its text.
#[derive(Debug, Clone)]
struct Item {
    key: String,
    /// The id as JSON shows it (a number, a record id, a path).
    id: Value,
    /// A memory's id, to match a renamed file.
    alt: Option<u64>,
    json: Value,
    content: String,
}

/// What one agent (or a target no agent is named for) loads from kb on one side.
#[derive(Debug, Clone)]
struct Load {
    name: String,
    file: String,
    agent: Option<Agent>,
    /// kb's block (or the file kb generates whole): what the lines and tokens compare.
    text: String,
    /// The whole file the agent reads, the block spliced into what the side's file holds
    /// around it: what its limit counts (Codex's 32 KiB is of all of `AGENTS.md`).
    whole: String,
}

/// One side read: its items per store (in [`STORES`] order), the agents' loads, its problems.
struct Side {
    stores: [Vec<Item>; 5],
    loads: Vec<Load>,
    problems: Vec<Problem>,
}

/// The stores compared, as JSON names them.
const STORES: [&str; 5] = ["md", "copilot", "decision", "instructions", "context"];

/// A file of one side that does not parse (or could not be read).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Problem {
    pub side: &'static str,
    /// Root-relative, `/`-separated.
    pub path: String,
    pub line: Option<usize>,
    pub message: String,
}

/// An item present on both sides whose JSON differs.
#[derive(Debug, Clone, Serialize)]
pub struct Changed {
    pub id: Value,
    pub before: Value,
    pub after: Value,
    /// What differs: `content`, `status`, `protected`, `type`, `tags`, `file`, or another key.
    pub changes: Vec<String>,
}

/// Memories removed whose words went into one added or changed on the head side.
#[derive(Debug, Clone, Serialize)]
pub struct Consolidated {
    pub into: Value,
    pub removed: Vec<Value>,
}

/// One store's differences.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StoreDiff {
    pub added: Vec<Value>,
    pub removed: Vec<Value>,
    pub changed: Vec<Changed>,
    pub consolidated: Vec<Consolidated>,
}

impl StoreDiff {
    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// The stores' differences, in their JSON order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stores {
    pub md: StoreDiff,
    pub copilot: StoreDiff,
    pub decision: StoreDiff,
    pub instructions: StoreDiff,
    pub context: StoreDiff,
}

impl Stores {
    fn each(&self) -> [(&'static str, &StoreDiff); 5] {
        [
            ("md", &self.md),
            ("copilot", &self.copilot),
            ("decision", &self.decision),
            ("instructions", &self.instructions),
            ("context", &self.context),
        ]
    }
}

/// How one agent's block changes.
#[derive(Debug, Clone, Serialize)]
pub struct AgentDiff {
    /// The agent, or the target's path for a `context_targets` entry no agent is named for.
    pub name: String,
    /// The file it reads the block from.
    pub file: String,
    pub tokens_before: usize,
    pub tokens_after: usize,
    /// The agent's limit on the file, in `limit_unit`; null when it has none.
    pub limit: Option<usize>,
    pub limit_unit: Option<&'static str>,
    /// The size of the whole file the agent reads, the block in it, in `limit_unit` (bytes when
    /// there is no limit).
    pub size_before: usize,
    pub size_after: usize,
    pub added_lines: usize,
    pub removed_lines: usize,
}

/// `kb diff`'s report. JSON: docs/diff.md.
#[derive(Debug, Serialize)]
pub struct DiffReport {
    /// The base revision as given.
    pub base: Option<String>,
    /// The head revision as given; null: the working tree.
    pub head: Option<String>,
    pub base_commit: Option<String>,
    pub head_commit: Option<String>,
    pub stores: Stores,
    pub agents: Vec<AgentDiff>,
    pub problems: Vec<Problem>,
    /// Whether anything differs.
    pub differs: bool,
    #[serde(skip)]
    markdown: bool,
    #[serde(skip)]
    exit_code: bool,
}

/// Compares the knowledge of `req.base` (default `HEAD`) and `req.head` (default the working
/// tree) of `repo`. A revision that names no commit is an error naming it; nothing is read or
/// written before both are resolved.
pub fn diff(repo: &Repo, req: &Request) -> Result<DiffReport> {
    let base = req.base.clone().unwrap_or_else(|| "HEAD".to_string());
    let git = Git::at(&repo.layout.root).map_err(kb_error)?;
    let base_commit = git.resolve(&base).map_err(kb_error)?;
    let head_commit = req.head.as_deref().map(|h| git.resolve(h)).transpose().map_err(kb_error)?;
    let started = std::time::Instant::now();
    let (base_side, head_side) = read_sides(repo, &git, &base_commit, head_commit.as_deref())?;
    let read_in = started.elapsed();
    let mut stores = Stores::default();
    for (i, name) in STORES.iter().enumerate() {
        let d = compare(&base_side.stores[i], &head_side.stores[i], *name == "md");
        match *name {
            "md" => stores.md = d,
            "copilot" => stores.copilot = d,
            "decision" => stores.decision = d,
            "instructions" => stores.instructions = d,
            _ => stores.context = d,
        }
    }
    let agents = compare_loads(&base_side.loads, &head_side.loads);
    repo.debug_line(|| {
        format!("kb-timing: diff: sides read in {read_in:?}, compared in {:?}", started.elapsed() - read_in)
    });
    let mut problems = base_side.problems;
    if req.head.is_none() {
        problems.extend(settings_problems("head", &req.settings_problems, &repo.layout.root));
    }
    problems.extend(head_side.problems);
    let differs =
        stores.each().iter().any(|(_, d)| !d.is_empty()) || agents.iter().any(|a| a.added_lines + a.removed_lines > 0);
    Ok(DiffReport {
        base: Some(base),
        head: req.head.clone(),
        base_commit: Some(base_commit),
        head_commit,
        stores,
        agents,
        problems,
        differs,
        markdown: req.markdown,
        exit_code: req.exit_code,
    })
}

/// Returns a revision that cannot be read as kb's error of that kind (`not_found` for an unknown
/// revision, `invalid` for one that looks like an option or a root outside git), with the
/// message it gives.
fn kb_error(e: RevisionError) -> anyhow::Error {
    let why = e.to_string();
    match e {
        RevisionError::Unknown { rev, .. } => {
            let what = match rev.as_str() {
                "HEAD" => "the repository has no commit yet",
                _ => "no branch, tag or commit",
            };
            KbError::NotFound { thing: "revision", id: format!("{rev:?} ({what})"), branch: None }.into()
        }
        RevisionError::BadName { .. } => KbError::rejected("revision", why).into(),
        RevisionError::NotGit { .. } => KbError::rejected("root", why).into(),
        RevisionError::Git(_) => anyhow::anyhow!(why),
    }
}

/// The folder of a revision's memories, as its tree names it: these files go from git straight
/// into the memory index, never written to a folder.
const MEMORIES: &str = ".co-cli/knowledge/memories/";

/// Reads both sides, each on its own thread where it can: each revision's files listed (one
/// `git ls-tree` each) and the blobs of both read with one `git cat-file --batch` (each blob
/// once: two revisions share most of their files), each side's memories parsed as git gives
/// them; the working tree's memories scanned meanwhile, as every command scans them. Then the
/// memories that are the same on both sides are found, and only the others are compared
/// (every block still holds them all).
fn read_sides(real: &Repo, git: &Git, base_commit: &str, head_commit: Option<&str>) -> Result<(Side, Side)> {
    let (base, head) = std::thread::scope(|s| -> Result<(Opened<'_>, Opened<'_>)> {
        let working_tree = head_commit.is_none().then(|| s.spawn(|| Opened::working_tree(real)));
        let mut commits = vec![(base_commit, "base")];
        commits.extend(head_commit.map(|c| (c, "head")));
        let mut opened = open_revisions(real, git, &commits)?.into_iter();
        let base = opened.next();
        let head = match working_tree {
            Some(thread) => Some(joined(thread)),
            None => opened.next(),
        };
        base.zip(head).ok_or_else(|| anyhow::anyhow!("kb diff: a side was not read"))
    })?;
    let same = same_memories(&base, &head);
    real.debug_line(|| format!("kb-stats: diff memories the same on both sides={}", same.len()));
    Ok((base.read("base", &same)?, head.read("head", &same)?))
}

/// Returns what a thread of [`read_sides`] returned; its panic goes on in this thread.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Opens the side of each revision (commit, side name), in order: its files listed, copied
/// into a private folder (its memories parsed on a thread of their own as git gives them),
/// opened as a repository with the same global settings and environment. A settings file that
/// does not parse is a problem, and the side is read with the default settings.
fn open_revisions<'r>(real: &'r Repo, git: &Git, commits: &[(&str, &'static str)]) -> Result<Vec<Opened<'r>>> {
    std::thread::scope(|s| {
        let listing: Vec<_> = commits.iter().skip(1).map(|&(c, _)| s.spawn(move || git.list(c, &KB_PATHS))).collect();
        let first = commits.first().map(|&(c, _)| git.list(c, &KB_PATHS));
        let trees = first.into_iter().chain(listing.into_iter().map(joined)).collect::<Result<Vec<Tree>, _>>()?;
        let dirs = commits.iter().map(|_| private_dir()).collect::<Result<Vec<_>>>()?;
        let layouts: Vec<Layout> =
            dirs.iter().map(|d| Layout { root: d.path().to_path_buf(), config: real.layout.config.clone() }).collect();
        let (senders, parsers): (Vec<_>, Vec<_>) = layouts
            .iter()
            .map(|layout| {
                let (send, files) = std::sync::mpsc::channel::<(String, Vec<u8>)>();
                let dir = layout.memories();
                (send, s.spawn(move || Index::from_files(&dir, files)))
            })
            .collect();
        let places: Vec<(&Tree, &Path)> = trees.iter().zip(&dirs).map(|(t, d)| (t, d.path())).collect();
        let copied = git.materialize(&places, &[MEMORIES], |t, path, bytes| {
            if let (Some(name), Some(send)) = (memory_name(path), senders.get(t)) {
                let _ = send.send((name.to_string(), bytes));
            }
        });
        // The parsers end when their files do.
        drop(senders);
        let indexes: Vec<Index> = parsers.into_iter().map(joined).collect();
        let copied = copied?;
        let mut out = Vec::new();
        for (((((&(_, side), tree), dir), layout), copied), index) in
            commits.iter().zip(&trees).zip(dirs).zip(layouts).zip(copied).zip(indexes)
        {
            real.debug_line(|| format!("kb-stats: diff {side} written={} held={}", copied.written, copied.held));
            let mut problems: Vec<Problem> = copied
                .skipped
                .into_iter()
                .map(|s| Problem { side, path: s.path, line: None, message: format!("not read: {}", s.why) })
                .collect();
            let (repo, errors) = Repo::open_lenient(layout.clone(), real.now, real.env.clone());
            problems.extend(settings_problems(side, &errors, &layout.root));
            let blobs = tree.files.iter().filter_map(|f| Some((memory_name(&f.path)?.to_string(), f.oid.clone())));
            out.push(Opened {
                real,
                copy: Some((repo, dir)),
                index: Some(index),
                blobs: Some(blobs.collect()),
                problems,
            });
        }
        Ok(out)
    })
}

/// The problems of a side's settings that kb will not take (the side is read without them):
/// each names the file as the side's, root-relative, not the private folder it was copied to.
fn settings_problems(side: &'static str, errors: &[crate::settings::SettingsError], root: &Path) -> Vec<Problem> {
    let private = format!("{}/", root.display());
    errors
        .iter()
        .map(|e| Problem {
            side,
            path: e.path.as_deref().map_or_else(
                || e.var.unwrap_or(".co-cli/settings.json").to_string(),
                |p| p.strip_prefix(root).unwrap_or(p).to_string_lossy().replace('\\', "/"),
            ),
            line: e.line,
            message: format!("{} (this side is read without it)", e.detail.replace(&private, "")),
        })
        .collect()
}

/// Returns the file name of a memory file of a tree (one right in the memories folder).
fn memory_name(path: &str) -> Option<&str> {
    path.strip_prefix(MEMORIES).filter(|name| !name.contains('/'))
}

/// A private folder for a revision's files, outside the repository, removed at the end.
fn private_dir() -> Result<tempfile::TempDir> {
    Ok(tempfile::Builder::new().prefix("kb-diff-").tempdir()?)
}

/// One side opened: the repository it is read as (a revision's copy, or the working tree), its
/// memory index, and the problems found so far.
struct Opened<'r> {
    real: &'r Repo,
    /// A revision's repository and the private folder of its files; `None`: the working tree.
    copy: Option<(Repo, tempfile::TempDir)>,
    /// `None`: the memories folder could not be read (the view reads it again, and says why).
    index: Option<Index>,
    /// A revision's memory files: name and blob.
    blobs: Option<FxHashMap<String, String>>,
    problems: Vec<Problem>,
}

impl<'r> Opened<'r> {
    /// The working tree, its memories scanned as every command scans them (through the cache).
    fn working_tree(real: &'r Repo) -> Opened<'r> {
        let index = crate::memories::store::MemoryStore::new(real).scan().ok();
        Opened { real, copy: None, index, blobs: None, problems: Vec::new() }
    }

    /// Reads the side through the normal read model, without local state; the memories in
    /// `same` (the same on both sides) are not made items.
    fn read(self, side: &'static str, same: &FxHashSet<String>) -> Result<Side> {
        let Opened { real, copy, index, blobs: _, mut problems } = self;
        // The view without this clone's local state, its memories the ones already read.
        fn view(k: Knowledge<'_>, index: Option<Index>) -> Knowledge<'_> {
            match index {
                Some(index) => k.with_memories(index),
                None => k,
            }
            .without_local_state()
        }
        let Some((repo, dir)) = copy else {
            return Ok(read_side(real, real, &view(Knowledge::read(real), index), side, same));
        };
        // The stale check looks at the working tree the revision's files came from.
        let checked = Knowledge::read_checked_at(&repo, &real.layout.root, real.layout.cache_file("audit.json"));
        let k = view(checked, index);
        let mut read = read_side(real, &repo, &k, side, same);
        problems.append(&mut read.problems);
        read.problems = problems;
        drop(k);
        drop(repo);
        dir.close()?;
        Ok(read)
    }
}

/// Returns the names of the memory files that hold the same memory on both sides. Their items
/// are equal (`kb show --json` makes a memory's JSON from its fields and its file name alone), so
/// comparing them can find nothing. Two revisions: the files whose blob is the same. Against the
/// working tree: the files of one memory each, equal in every field.
fn same_memories(base: &Opened<'_>, head: &Opened<'_>) -> FxHashSet<String> {
    match (&base.blobs, &head.blobs, &base.index, &head.index) {
        (Some(b), Some(h), _, _) => {
            b.iter().filter(|&(name, oid)| h.get(name) == Some(oid)).map(|(name, _)| name.clone()).collect()
        }
        (_, _, Some(b), Some(h)) => same_fields(b, h),
        _ => FxHashSet::default(),
    }
}

/// Returns the names of the memory files that hold one memory each on both sides, equal in
/// every field.
fn same_fields(base: &Index, head: &Index) -> FxHashSet<String> {
    // Each file name's memory; `None` for a name that holds more than one.
    let mut at: FxHashMap<&str, Option<Pos>> = FxHashMap::default();
    for p in base.positions() {
        at.entry(base.file_name_at(p)).and_modify(|e| *e = None).or_insert(Some(p));
    }
    let mut twice: FxHashSet<&str> = FxHashSet::default();
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    for p in head.positions() {
        if !seen.insert(head.file_name_at(p)) {
            twice.insert(head.file_name_at(p));
        }
    }
    head.positions()
        .filter_map(|h| {
            let name = head.file_name_at(h);
            let b = (*at.get(name)?)?;
            let same = !twice.contains(name) && base.content_at(b) == head.content_at(h) && base.at(b) == head.at(h);
            same.then(|| name.to_string())
        })
        .collect()
}

/// Maps the paths of a side (its own root, or its real path) to the same path in the real root.
struct Paths {
    side_roots: Vec<PathBuf>,
    real: PathBuf,
}

impl Paths {
    fn new(side: &Path, real: &Path) -> Paths {
        let mut side_roots = vec![side.to_path_buf()];
        if let Ok(c) = std::fs::canonicalize(side)
            && c != side
        {
            side_roots.push(c);
        }
        Paths { side_roots, real: real.to_path_buf() }
    }

    /// Returns `path` relative to its side's root, `/`-separated; `None` outside it.
    fn rel(&self, path: &Path) -> Option<String> {
        self.side_roots
            .iter()
            .find_map(|r| path.strip_prefix(r).ok())
            .map(|r| r.to_string_lossy().replace('\\', "/"))
            .filter(|r| !r.is_empty())
    }

    /// Returns `path` as the same file in the real root (for JSON `path`).
    fn shown(&self, path: &Path) -> PathBuf {
        self.rel(path).map_or_else(|| path.to_path_buf(), |r| self.real.join(r))
    }
}

/// Reads one side through its view `k` of `repo` (the working tree, or a revision's copy);
/// paths are given as the same files of `real`'s root. The memories of the files named in
/// `same` are not made items.
fn read_side(real: &Repo, repo: &Repo, k: &Knowledge<'_>, side: &'static str, same: &FxHashSet<String>) -> Side {
    let paths = Paths::new(&repo.layout.root, &real.layout.root);
    let mut problems: Vec<Problem> = Vec::new();
    let mut note = |d: &Diagnostic, fallback: &Path| {
        let path = d.path.as_deref().unwrap_or(fallback);
        // Only the side's own files: the global context and settings are the same on both.
        let Some(rel) = paths.rel(path) else { return };
        let p = Problem { side, path: rel, line: d.line, message: d.message.clone() };
        if !problems.contains(&p) {
            problems.push(p);
        }
    };
    // Memories.
    let mut md = Vec::new();
    match k.memories() {
        Ok(index) => {
            let dir = real.layout.memories();
            for p in index.positions().filter(|&p| !same.contains(index.file_name_at(p))) {
                let m = index.at(p);
                let json = MemoryJson::new(&m, &dir);
                md.push(Item {
                    key: m.file_name.to_string(),
                    id: json!(m.id),
                    alt: Some(m.id),
                    content: m.content.to_string(),
                    json: to_value(&json),
                });
            }
            for d in index.problems().into_iter().chain(super::check::memory_duplicates(&repo.layout, index)) {
                note(&d, &repo.layout.memories());
            }
        }
        Err(e) => note(&Diagnostic::error(None, e.to_string()), &repo.layout.memories()),
    }
    // Records.
    let mut copilot = Vec::new();
    let records_path = repo.layout.copilot_memories();
    match k.records() {
        Ok(file) => {
            let all = Records::parse(file);
            for r in all.iter() {
                let mut json = RecordJson::new(&all, &r);
                json.path = abs(&paths.shown(&records_path));
                copilot.push(Item {
                    key: r.id.to_string(),
                    id: json!(r.id.to_string()),
                    alt: None,
                    content: format!("{}: {}", r.subject, r.fact),
                    json: to_value(&json),
                });
            }
            for d in skipped_lines(&all).chain(super::check::record_duplicates(&all, &records_path)) {
                note(&d, &records_path);
            }
        }
        Err(e) => note(&Diagnostic::error(None, e), &records_path),
    }
    // Decisions.
    let mut decisions = Vec::new();
    match k.decisions() {
        Ok(scan) => {
            for (path, d) in &scan.decisions {
                let json = DecisionJson::new(&paths.shown(path), d);
                decisions.push(Item {
                    key: d.id.to_string(),
                    id: json!(d.id),
                    alt: None,
                    content: d.content.clone(),
                    json: to_value(&json),
                });
            }
            for d in scan.problems.iter().chain(&scan.consistency_problems()) {
                note(d, &repo.layout.decisions());
            }
        }
        Err(e) => note(&Diagnostic::error(None, e.to_string()), &repo.layout.decisions()),
    }
    // Scoped instructions.
    let mut instructions = Vec::new();
    let found = k.instructions();
    for i in &found.files {
        let Some(rel) = paths.rel(&i.path) else { continue };
        let json = json!({
            "store": "instructions",
            "id": rel,
            "path": abs(&paths.shown(&i.path)),
            "apply_to": i.apply_to,
            "description": i.description,
            "content": i.body,
        });
        instructions.push(Item { key: rel.clone(), id: json!(rel), alt: None, content: i.body.clone(), json });
    }
    for d in &found.problems {
        note(d, &repo.layout.instructions());
    }
    // The project context file.
    let mut context = Vec::new();
    let sources = k.sources();
    for s in sources.sections.iter().filter(|s| s.kind == SectionKind::Project) {
        let rel = paths.rel(&s.path).unwrap_or_else(|| ".co-cli/knowledge/context.md".into());
        let json = json!({"store": "context", "id": rel, "path": abs(&paths.shown(&s.path)), "content": s.body});
        context.push(Item { key: rel.clone(), id: json!(rel), alt: None, content: s.body.clone(), json });
    }
    // A context file that holds only its frontmatter (the template `kb init` writes) is no
    // section, but it is there: filling it in is a change, not an addition.
    let file = repo.layout.project_context();
    if context.is_empty() && std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
        let rel = ".co-cli/knowledge/context.md".to_string();
        let json = json!({"store": "context", "id": rel, "path": abs(&paths.shown(&file)), "content": ""});
        context.push(Item { key: rel.clone(), id: json!(rel), alt: None, content: String::new(), json });
    }
    // The records file's lines were named above, as the records store read them.
    let of_records = |d: &&Diagnostic| d.path.as_deref() == Some(records_path.as_path());
    for d in sources.warnings.iter().chain(&sources.conflicts).filter(|d| !of_records(d)) {
        note(d, &repo.layout.project_context());
    }
    // What each agent loads.
    let plan = agents::plan(repo, k, &repo.settings.context_targets.value);
    for d in &plan.block.conflicts {
        note(d, &repo.layout.knowledge());
    }
    let (loads, unreadable) = loads_of(repo, &plan);
    for d in &unreadable {
        note(d, &repo.layout.root);
    }
    Side { stores: [md, copilot, decisions, instructions, context], loads, problems }
}

/// Returns a report part as a JSON value (it cannot fail for these types: plain fields).
fn to_value<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

/// Returns what each agent of the plan loads, and each target no agent is named for.
/// A target file that cannot be read (a FIFO, a symlink out of the root, markers kb cannot place
/// a block between) is a problem of the side, and is measured on its block alone.
fn loads_of(repo: &Repo, plan: &Plan) -> (Vec<Load>, Vec<Diagnostic>) {
    let (mut out, mut unreadable) = (Vec::new(), Vec::new());
    for t in &plan.targets {
        let text = t.block.clone().unwrap_or_default();
        let whole = match agents::render(repo, t) {
            Ok(r) => r.new,
            Err(e) => {
                unreadable.push(Diagnostic::error(None, e.message).in_file(&repo.layout.root.join(&t.raw)));
                text.clone()
            }
        };
        let load =
            |name: String, agent| Load { name, file: t.raw.clone(), agent, text: text.clone(), whole: whole.clone() };
        if t.agents.is_empty() {
            out.push(load(t.raw.clone(), None));
        } else {
            out.extend(t.agents.iter().map(|&a| load(a.as_str().into(), Some(a))));
        }
    }
    for g in plan.generated.iter().filter(|g| !g.rule) {
        for &a in &g.agents {
            let (text, whole) = (g.text.clone(), g.text.clone());
            out.push(Load { name: a.as_str().into(), file: g.rel.clone(), agent: Some(a), text, whole });
        }
    }
    (out, unreadable)
}

/// Returns each agent's change, in the head's order, then the ones only the base has.
fn compare_loads(base: &[Load], head: &[Load]) -> Vec<AgentDiff> {
    let mut names: Vec<&str> = head.iter().map(|l| l.name.as_str()).collect();
    for l in base {
        if !names.contains(&l.name.as_str()) {
            names.push(&l.name);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let b = base.iter().find(|l| l.name == name);
            let h = head.iter().find(|l| l.name == name);
            let either = h.or(b);
            let agent = either.and_then(|l| l.agent);
            let limit = agent.and_then(block_limit);
            let measure = |l: Option<&Load>| l.map_or(0, |l| limit.map_or(l.whole.len(), |lim| lim.measure(&l.whole)));
            let tokens = |l: Option<&Load>| l.map_or(0, |l| crate::format::tokens::count(&l.text));
            let (added, removed) =
                crate::format::diff::line_counts(b.map_or("", |l| l.text.as_str()), h.map_or("", |l| l.text.as_str()));
            AgentDiff {
                name: name.to_string(),
                file: either.map(|l| l.file.clone()).unwrap_or_default(),
                tokens_before: tokens(b),
                tokens_after: tokens(h),
                limit: limit.map(|l| l.max),
                limit_unit: limit.map(|l| if l.chars { "chars" } else { "bytes" }),
                size_before: measure(b),
                size_after: measure(h),
                added_lines: added,
                removed_lines: removed,
            }
        })
        .collect()
}

/// The JSON keys that say where an item sits rather than what it says: a record's line.
const PLACE_KEYS: [&str; 1] = ["line"];

/// Returns the differences of one store: items matched by key (a memory also by id, when its
/// file was renamed), and, for the memory stores, the consolidations.
fn compare(base: &[Item], head: &[Item], by_id: bool) -> StoreDiff {
    let head_at: HashMap<&str, usize> = head.iter().enumerate().map(|(i, it)| (it.key.as_str(), i)).collect();
    let mut matched_head = vec![false; head.len()];
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let mut unmatched_base: Vec<usize> = Vec::new();
    for (i, b) in base.iter().enumerate() {
        match head_at.get(b.key.as_str()) {
            Some(&j) if !matched_head[j] => {
                matched_head[j] = true;
                pairs.push((i, j));
            }
            _ => unmatched_base.push(i),
        }
    }
    if by_id {
        // A renamed file: the same id, once on each side among the unmatched, and the same
        // content (kb reuses a forgotten memory's id, so an id alone is not the same memory).
        let count = |ids: &mut dyn Iterator<Item = u64>| {
            let mut n: HashMap<u64, usize> = HashMap::new();
            ids.for_each(|id| *n.entry(id).or_default() += 1);
            n
        };
        let base_ids = count(&mut unmatched_base.iter().filter_map(|&i| base[i].alt));
        let head_ids = count(&mut (0..head.len()).filter(|&j| !matched_head[j]).filter_map(|j| head[j].alt));
        unmatched_base.retain(|&i| {
            let Some(id) = base[i].alt else { return true };
            if base_ids.get(&id) != Some(&1) || head_ids.get(&id) != Some(&1) {
                return true;
            }
            match (0..head.len())
                .find(|&j| !matched_head[j] && head[j].alt == Some(id) && head[j].content == base[i].content)
            {
                Some(j) => {
                    matched_head[j] = true;
                    pairs.push((i, j));
                    false
                }
                None => true,
            }
        });
    }
    let mut out = StoreDiff::default();
    let mut content_changed: Vec<usize> = Vec::new();
    pairs.sort_unstable();
    for (i, j) in pairs {
        let changes = changes_of(&base[i].json, &head[j].json);
        if changes.is_empty() {
            continue;
        }
        if base[i].content != head[j].content {
            content_changed.push(j);
        }
        out.changed.push(Changed {
            id: head[j].id.clone(),
            before: base[i].json.clone(),
            after: head[j].json.clone(),
            changes,
        });
    }
    let added: Vec<usize> = (0..head.len()).filter(|&j| !matched_head[j]).collect();
    out.added = added.iter().map(|&j| head[j].json.clone()).collect();
    out.removed = unmatched_base.iter().map(|&i| base[i].json.clone()).collect();
    if by_id || base.first().is_some_and(|b| b.json.get("store") == Some(&json!("copilot"))) {
        let into: Vec<usize> = added.iter().chain(&content_changed).copied().collect();
        out.consolidated = consolidations(base, &unmatched_base, head, &into);
    }
    out
}

/// Returns the names of what differs between two items' JSON: each key whose value differs
/// (`decay_protected` as `protected`, `path` as `file`), but a record's line.
fn changes_of(before: &Value, after: &Value) -> Vec<String> {
    let (Some(b), Some(a)) = (before.as_object(), after.as_object()) else {
        return if before == after { Vec::new() } else { vec!["content".into()] };
    };
    let mut keys: Vec<&String> = b.keys().chain(a.keys().filter(|k| !b.contains_key(*k))).collect();
    keys.retain(|k| !PLACE_KEYS.contains(&k.as_str()) && b.get(*k) != a.get(*k));
    // A record's content is its fact: name it once.
    let mut out: Vec<String> = Vec::new();
    for k in keys {
        let name = match k.as_str() {
            "decay_protected" => "protected",
            "path" => "file",
            "fact" | "title" => "content",
            other => other,
        };
        if !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// Returns the lower-cased words of `text` (letters and digits), each once.
fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(|w| w.to_lowercase()).collect()
}

/// Returns the consolidations: each removed item (`removed`, indices into `base`) whose words are
/// at least [`CONSOLIDATED_SHARE`] in one of `into` (indices into `head`: added, or changed in
/// content), grouped by the item they went into (the one holding most of them; ties to the
/// first).
fn consolidations(base: &[Item], removed: &[usize], head: &[Item], into: &[usize]) -> Vec<Consolidated> {
    if removed.is_empty() || into.is_empty() {
        return Vec::new();
    }
    // An inverted index of the candidates' words: each removed item costs its words' postings.
    let mut postings: HashMap<String, Vec<usize>> = HashMap::new();
    for (n, &j) in into.iter().enumerate() {
        for w in words(&head[j].content) {
            postings.entry(w).or_default().push(n);
        }
    }
    let mut groups: Vec<(usize, Vec<Value>)> = Vec::new();
    for &i in removed {
        let ws = words(&base[i].content);
        if ws.is_empty() {
            continue;
        }
        let mut hits = vec![0usize; into.len()];
        for w in &ws {
            for &n in postings.get(w).map(Vec::as_slice).unwrap_or(&[]) {
                hits[n] += 1;
            }
        }
        let Some((best, &n)) = hits.iter().enumerate().max_by_key(|&(n, h)| (*h, std::cmp::Reverse(n))) else {
            continue;
        };
        // An item whose id the other holds is that one renamed and rewritten, not merged into it.
        if (n as f64) < CONSOLIDATED_SHARE * ws.len() as f64 || head[into[best]].id == base[i].id {
            continue;
        }
        match groups.iter_mut().find(|(t, _)| *t == best) {
            Some((_, ids)) => ids.push(base[i].id.clone()),
            None => groups.push((best, vec![base[i].id.clone()])),
        }
    }
    groups.into_iter().map(|(n, removed)| Consolidated { into: head[into[n]].id.clone(), removed }).collect()
}

impl DiffReport {
    fn base_label(&self) -> String {
        self.base.clone().unwrap_or_else(|| "HEAD".into())
    }

    fn head_label(&self) -> String {
        self.head.clone().unwrap_or_else(|| "the working tree".into())
    }
}

/// The name of a store in the text.
fn store_title(store: &str) -> &'static str {
    match store {
        "md" => "Memories",
        "copilot" => "Copilot records",
        "decision" => "Decisions",
        "instructions" => "Scoped instructions",
        _ => "Project context",
    }
}

/// Returns an item's text on one line, at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max { flat } else { format!("{}…", flat.chars().take(max - 1).collect::<String>()) }
}

/// Returns an item's text as the diff shows it: a record as `subject: fact`, a decision with its
/// status, anything else its content.
fn item_text(v: &Value) -> String {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    match s("store") {
        "copilot" => format!("{}: {}", s("subject"), s("fact")),
        _ if v.get("status").is_some() => format!("[{}, {}] {}", s("status"), s("type"), s("content")),
        _ => s("content").to_string(),
    }
}

/// Returns the id as the text shows it.
fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The changes the text names but does not spell out: when and by whom, which come with a
/// content change (JSON has them all).
const QUIET_CHANGES: [&str; 2] = ["updated", "updated_by"];

/// Returns a key's value, short, for `key: before → after`.
fn short(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "none".into(),
        Some(Value::String(s)) => one_line(s, 60),
        Some(other) => one_line(&other.to_string(), 60),
    }
}

/// The JSON key a change name stands for.
fn key_of(change: &str) -> &str {
    match change {
        "protected" => "decay_protected",
        "file" => "path",
        other => other,
    }
}

/// Returns a number with thousands separators.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Returns a signed difference, `+12`, `-3`, `±0`.
fn signed(before: usize, after: usize) -> String {
    match after.cmp(&before) {
        std::cmp::Ordering::Greater => format!("+{}", thousands(after - before)),
        std::cmp::Ordering::Less => format!("-{}", thousands(before - after)),
        std::cmp::Ordering::Equal => "±0".into(),
    }
}

/// The words of a store's counts line: `2 added, 1 removed, 1 changed, 1 consolidation`.
fn counts(d: &StoreDiff) -> String {
    let mut parts = Vec::new();
    for (n, word) in [(d.added.len(), "added"), (d.removed.len(), "removed"), (d.changed.len(), "changed")] {
        if n > 0 {
            parts.push(format!("{n} {word}"));
        }
    }
    if !d.consolidated.is_empty() {
        parts.push(super::plural(d.consolidated.len(), "consolidation"));
    }
    parts.join(", ")
}

/// The limit part of an agent's line: `2,345 of 32,768 bytes`, or the size in bytes.
fn limit_text(a: &AgentDiff) -> String {
    match (a.limit, a.limit_unit) {
        (Some(limit), Some(unit)) => {
            let unit = if unit == "chars" { "characters" } else { "bytes" };
            let over = if a.size_after > limit { " (over the limit)" } else { "" };
            format!("{} → {} of {} {unit}{over}", thousands(a.size_before), thousands(a.size_after), thousands(limit))
        }
        _ => format!("{} → {} bytes", thousands(a.size_before), thousands(a.size_after)),
    }
}

/// Returns an agent's line: its name and file, its tokens before and after, the lines its block
/// gains and loses, its size against its limit; `markdown`: as a row of the comment's table.
fn agent_line(a: &AgentDiff, markdown: bool) -> String {
    let tokens = format!("{} → {}", thousands(a.tokens_before), thousands(a.tokens_after));
    let delta = signed(a.tokens_before, a.tokens_after);
    let (added, removed, limit) = (a.added_lines, a.removed_lines, limit_text(a));
    if markdown {
        let (name, file) = (md_escape(&a.name), md_escape(&a.file));
        format!("| {name} | {file} | {tokens} ({delta}) | +{added} −{removed} | {limit} |")
    } else {
        format!("  {} ({}): {tokens} tokens ({delta}), +{added} -{removed} lines, {limit}", a.name, a.file)
    }
}

/// Escapes text for a markdown line of a pull-request comment: no HTML, no table break, no
/// heading or list started by the item's own text.
fn md_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '|' => out.push_str("\\|"),
            '`' | '*' | '_' | '[' | ']' | '#' | '\\' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

impl DiffReport {
    fn render_text(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let title = format!("kb diff {} → {}", self.base_label(), self.head_label());
        writeln!(w, "{}", v.style.bold(&v.clean(&title)))?;
        if !self.differs {
            writeln!(w, "No knowledge changes: every agent loads the same.")?;
        }
        for (store, d) in self.stores.each() {
            if d.is_empty() {
                continue;
            }
            writeln!(w, "\n{}: {}", store_title(store), counts(d))?;
            for item in &d.added {
                writeln!(w, "  + {}  {}", v.clean(&id_text(&item["id"])), v.clean(&one_line(&item_text(item), 100)))?;
            }
            for item in &d.removed {
                writeln!(w, "  - {}  {}", v.clean(&id_text(&item["id"])), v.clean(&one_line(&item_text(item), 100)))?;
            }
            for c in &d.changed {
                writeln!(w, "  ~ {}  ({})", v.clean(&id_text(&c.id)), c.changes.join(", "))?;
                for change in c.changes.iter().filter(|c| !QUIET_CHANGES.contains(&c.as_str())) {
                    if change == "content" {
                        writeln!(w, "      before: {}", v.clean(&one_line(&item_text(&c.before), 100)))?;
                        writeln!(w, "      after:  {}", v.clean(&one_line(&item_text(&c.after), 100)))?;
                    } else {
                        let k = key_of(change);
                        let line = format!("      {change}: {} → {}", short(c.before.get(k)), short(c.after.get(k)));
                        writeln!(w, "{}", v.clean(&line))?;
                    }
                }
            }
            for c in &d.consolidated {
                let from: Vec<String> = c.removed.iter().map(id_text).collect();
                writeln!(w, "  consolidated: {} → {}", v.clean(&from.join(", ")), v.clean(&id_text(&c.into)))?;
            }
        }
        if !self.agents.is_empty() {
            writeln!(w, "\nWhat each agent loads:")?;
            for a in &self.agents {
                writeln!(w, "{}", v.clean(&agent_line(a, false)))?;
            }
        }
        if !self.problems.is_empty() {
            writeln!(w, "\nProblems:")?;
            for p in &self.problems {
                let at = p.line.map(|l| format!(":{l}")).unwrap_or_default();
                writeln!(w, "  {}: {}{at}: {}", p.side, v.clean(&p.path), v.clean(&p.message))?;
            }
        }
        Ok(())
    }

    fn render_markdown(&self, w: &mut dyn Write) -> io::Result<()> {
        let short_sha = |c: &Option<String>| c.as_deref().map(|c| format!(" ({})", &c[..c.len().min(12)]));
        writeln!(
            w,
            "### Knowledge changes: `{}`{} → {}{}\n",
            self.base_label().replace('`', "'"),
            short_sha(&self.base_commit).unwrap_or_default(),
            self.head
                .as_deref()
                .map_or_else(|| "the working tree".to_string(), |h| format!("`{}`", h.replace('`', "'"))),
            short_sha(&self.head_commit).unwrap_or_default()
        )?;
        if !self.differs {
            writeln!(w, "No knowledge changes: every agent loads the same.\n")?;
        }
        if !self.agents.is_empty() {
            writeln!(w, "| agent | file | tokens | lines | size (limit) |")?;
            writeln!(w, "| --- | --- | ---: | ---: | ---: |")?;
            for a in &self.agents {
                writeln!(w, "{}", agent_line(a, true))?;
            }
            writeln!(w)?;
        }
        for (store, d) in self.stores.each() {
            if d.is_empty() {
                continue;
            }
            writeln!(w, "**{}**: {}\n", store_title(store), counts(d))?;
            for item in &d.added {
                let id = md_escape(&id_text(&item["id"]));
                writeln!(w, "- ➕ **{id}**: {}", md_escape(&one_line(&item_text(item), 300)))?;
            }
            for item in &d.removed {
                let id = md_escape(&id_text(&item["id"]));
                writeln!(w, "- ➖ **{id}**: {}", md_escape(&one_line(&item_text(item), 300)))?;
            }
            for c in &d.changed {
                writeln!(w, "- ✏️ **{}** ({})", md_escape(&id_text(&c.id)), c.changes.join(", "))?;
                for change in c.changes.iter().filter(|c| !QUIET_CHANGES.contains(&c.as_str())) {
                    if change == "content" {
                        writeln!(w, "  - before: {}", md_escape(&one_line(&item_text(&c.before), 300)))?;
                        writeln!(w, "  - after: {}", md_escape(&one_line(&item_text(&c.after), 300)))?;
                    } else {
                        let k = key_of(change);
                        writeln!(
                            w,
                            "  - {change}: {} → {}",
                            md_escape(&short(c.before.get(k))),
                            md_escape(&short(c.after.get(k)))
                        )?;
                    }
                }
            }
            for c in &d.consolidated {
                let from: Vec<String> = c.removed.iter().map(|i| md_escape(&id_text(i))).collect();
                writeln!(w, "- 🔀 consolidated {} into **{}**", from.join(", "), md_escape(&id_text(&c.into)))?;
            }
            writeln!(w)?;
        }
        if !self.problems.is_empty() {
            writeln!(w, "**Problems** (files that do not parse are left out of that side)\n")?;
            for p in &self.problems {
                let at = p.line.map(|l| format!(":{l}")).unwrap_or_default();
                writeln!(w, "- {}: {}{at}: {}", p.side, md_escape(&p.path), md_escape(&one_line(&p.message, 300)))?;
            }
            writeln!(w)?;
        }
        Ok(())
    }
}

impl Report for DiffReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        if self.markdown { self.render_markdown(w) } else { self.render_text(v, w) }
    }

    fn succeeded(&self) -> bool {
        !(self.exit_code && self.differs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(key: &str, id: u64, content: &str) -> Item {
        Item {
            key: key.into(),
            id: json!(id),
            alt: Some(id),
            json: json!({"store": "md", "id": id, "content": content, "path": key}),
            content: content.into(),
        }
    }

    #[test]
    fn a_renamed_memory_is_matched_by_id_and_a_consolidation_found() {
        let base = vec![
            item("001-a.md", 1, "use nextest for the tests"),
            item("002-b.md", 2, "the api listens on port 8080"),
            item("003-c.md", 3, "release from main only"),
        ];
        let head = vec![
            item("001-renamed.md", 1, "use nextest for the tests"),
            item("004-d.md", 4, "the api listens on port 8080 behind nginx"),
        ];
        let d = compare(&base, &head, true);
        assert_eq!(d.changed.len(), 1);
        assert_eq!(d.changed[0].changes, vec!["file".to_string()]);
        assert_eq!(d.added.len(), 1);
        assert_eq!(d.removed.len(), 2);
        assert_eq!(d.consolidated.len(), 1);
        assert_eq!(d.consolidated[0].into, json!(4));
        assert_eq!(d.consolidated[0].removed, vec![json!(2)]);
        // Renamed and rewritten, it keeps its id: not merged into itself.
        let head = vec![item("002-renamed.md", 2, "the api listens on port 8080 behind nginx")];
        let d = compare(&base[1..2], &head, true);
        assert_eq!((d.added.len(), d.removed.len(), d.consolidated.len()), (1, 1, 0));
    }

    #[test]
    fn only_a_memory_equal_in_every_field_is_the_same_on_both_sides() {
        let index = |files: &[(&str, u64, &str, &str)]| {
            let file = |&(name, id, tags, text): &(&str, u64, &str, &str)| {
                let head =
                    format!("---\ncreated: '2026-11-20T10:00:00+00:00'\nid: {id}\ntags: [{tags}]\n---\n\n{text}\n");
                (name.to_string(), head.into_bytes())
            };
            Index::from_files(std::path::Path::new("/m"), files.iter().map(file))
        };
        let base = index(&[
            ("001-a.md", 1, "", "one"),
            ("002-b.md", 2, "", "two"),
            ("003-c.md", 3, "", "three"),
            ("004-d.md", 4, "", "four"),
        ]);
        let head = index(&[
            ("001-a.md", 1, "", "one"),
            ("002-b.md", 2, "x", "two"),
            ("003-renamed.md", 3, "", "three"),
            ("004-d.md", 4, "", "four, rewritten"),
        ]);
        let same = same_fields(&base, &head);
        assert_eq!(same, FxHashSet::from_iter(["001-a.md".to_string()]), "a tag, a name or the text differs");
    }

    #[test]
    fn changes_are_named() {
        let b = json!({"content": "a", "decay_protected": false, "line": 1, "tags": []});
        let a = json!({"content": "a", "decay_protected": true, "line": 2, "tags": ["x"]});
        assert_eq!(changes_of(&b, &a), vec!["protected".to_string(), "tags".to_string()]);
        assert!(changes_of(&b, &b).is_empty());
    }

    #[test]
    fn markdown_text_cannot_break_the_comment() {
        assert_eq!(md_escape("<!-- x --> a|b `c`"), "&lt;!-- x --&gt; a\\|b \\`c\\`");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(signed(5, 3), "-2");
    }
}
