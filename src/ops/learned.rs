//! `kb import --from claude|codex|gemini` (docs/behaviour.md, Bringing learned
//! memories home): read what an agent learned on its own about this repository from its private
//! files, and save each fact through the normal save (dedup and its never-merge-a-different-fact
//! rule, secrets refused and skipped), all in one journal entry, written by `agent:<tool>` with
//! the tag `from-<tool>`.
//!
//! Reads only: the agents' files (outside the root is allowed here) are never written, and a kb
//! managed block inside `GEMINI.md` is never read as memories. A file inside the root is read only
//! when its real path is inside it too (a committed symlink out of the repository is refused with a
//! warning naming the file).

use super::{Report, View, abs};
use crate::error::{Diagnostic, KbError};
use crate::format::frontmatter;
use crate::format::salient::{SaveAction, Why};
use crate::journal::Txn;
use crate::memories::file::MemoryType;
use crate::memories::store::{MemoryStore, SaveRequest};
use crate::provenance::Actor;
use crate::repo::Repo;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// An agent kb imports learned memories from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Claude,
    Codex,
    Gemini,
}

impl Tool {
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Claude => "claude",
            Tool::Codex => "codex",
            Tool::Gemini => "gemini",
        }
    }
}

/// One fact found in an agent's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    /// Where it was found: `FILE` or `FILE:LINE`.
    pub source: String,
    pub text: String,
    /// Extra tags (Claude's memory type).
    pub tags: Vec<String>,
    pub memory_type: Option<MemoryType>,
    /// The Claude subagent whose memory it is.
    pub agent: Option<String>,
    /// Why it is one person's, not the repository's (imported only with `--personal`): a
    /// Claude memory of type `user` or scoped to the person, Gemini's global `GEMINI.md`.
    pub personal: Option<&'static str>,
}

/// Returns the Claude project slug of `root`: its absolute path with every character that is not
/// an ASCII letter or digit replaced by `-`.
pub fn claude_slug(root: &Path) -> String {
    root.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// Maps a Claude memory type to kb's type and a tag: `feedback` (how to work) is a pattern; `user`
/// a preference; `project` and `reference` learnings with their name as a tag.
fn claude_type(t: Option<&str>) -> (Option<MemoryType>, Option<String>) {
    match t.map(str::trim) {
        Some("feedback") => (Some(MemoryType::Pattern), Some("feedback".into())),
        Some("user") => (Some(MemoryType::Learning), Some("preference".into())),
        Some("project") => (Some(MemoryType::Learning), Some("project".into())),
        Some("reference") => (Some(MemoryType::Learning), Some("reference".into())),
        _ => (None, None),
    }
}

/// Reads one Claude memory file: frontmatter `name`, `description`, and `type` (older files) or
/// `metadata.type` (since mid-2026); the body is the fact, else the description.
fn claude_file(path: &Path, root: &Path, agent: Option<&str>, warnings: &mut Vec<String>) -> Option<Fact> {
    let text = read(path, root, warnings)?;
    let (body, fields) = match frontmatter::split(&text) {
        Ok(split) => match frontmatter::parse(split.yaml) {
            Ok(f) => (split.body.to_string(), Some(f)),
            Err(e) => {
                warnings.push(format!("{}: frontmatter is not valid YAML ({}); body used", path.display(), e.message));
                (split.body.to_string(), None)
            }
        },
        Err(_) => (text.clone(), None),
    };
    let get = |k: &str| fields.as_ref().and_then(|f| f.get(k)).and_then(Value::as_str).map(str::to_string);
    let meta = |k: &str| {
        fields
            .as_ref()
            .and_then(|f| f.get("metadata"))
            .and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let kind = get("type").or_else(|| meta("type"));
    // About the person rather than the repository: type `user` (either place), or a `scope` of
    // `user` or `person` (docs/behaviour.md, Bringing learned memories home).
    let is = |v: Option<String>, words: &[&str]| v.is_some_and(|v| words.contains(&v.trim()));
    let personal = if is(get("type"), &["user"]) || is(meta("type"), &["user"]) {
        Some("type user")
    } else if is(get("scope"), &["user", "person"]) || is(meta("scope"), &["user", "person"]) {
        Some("scoped to the person")
    } else {
        None
    };
    let body = body.trim();
    let fact = if body.is_empty() { get("description").unwrap_or_default() } else { body.to_string() };
    if fact.trim().is_empty() {
        return None;
    }
    let (memory_type, tag) = claude_type(kind.as_deref());
    Some(Fact {
        source: path.display().to_string(),
        text: fact.trim().to_string(),
        tags: tag.into_iter().collect(),
        memory_type,
        agent: agent.map(str::to_string),
        personal,
    })
}

/// Reads a file as UTF-8 text (lossy), with a warning when it cannot be read; `None` when it does
/// not exist. Only a regular file is read, and a file inside `root` only when its symlinks keep it
/// there: a committed `GEMINI.md` or `.claude/agent-memory/…` linking to `~/.ssh/…` must not be
/// copied into the store. The agents' own files under HOME (and a `--path` outside the root) lie
/// outside the root by design, and may be symlinks to anywhere (a dotfiles repository).
fn read(path: &Path, root: &Path, warnings: &mut Vec<String>) -> Option<String> {
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let lexical = crate::paths::resolve_dots(path);
    let within = if lexical.starts_with(root) || lexical.starts_with(&real_root) { root } else { Path::new("/") };
    match crate::fsio::read_input(path, within) {
        Ok(Some(b)) => Some(String::from_utf8_lossy(&b).into_owned()),
        Ok(None) => None,
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
            warnings.push(format!("{}: not a regular file; not read", path.display()));
            None
        }
        Err(e) => {
            warnings.push(format!("cannot read {}: {e}", path.display()));
            None
        }
    }
}

/// Returns the `*.md` files of `dir`, sorted, without `MEMORY.md` (Claude's index).
fn md_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.file_name().is_some_and(|n| n != "MEMORY.md"))
        .collect();
    out.sort();
    out
}

/// The facts of Claude Code's auto memory for this repository, and of its project subagents.
fn claude(root: &Path, home: Option<&Path>, path: Option<&Path>, warnings: &mut Vec<String>) -> Vec<Fact> {
    let mut facts = Vec::new();
    if let Some(p) = path {
        let files = if p.is_dir() { md_files(p) } else { vec![p.to_path_buf()] };
        return files.iter().filter_map(|f| claude_file(f, root, None, warnings)).collect();
    }
    if let Some(home) = home {
        let mut roots = vec![root.to_path_buf()];
        roots.extend(std::fs::canonicalize(root).ok().filter(|r| r != root));
        let dirs: Vec<PathBuf> =
            roots.iter().map(|r| home.join(".claude/projects").join(claude_slug(r)).join("memory")).collect();
        if let Some(dir) = dirs.iter().find(|d| d.is_dir()) {
            facts.extend(md_files(dir).iter().filter_map(|f| claude_file(f, root, None, warnings)));
        }
    }
    let agents = root.join(".claude/agent-memory");
    if let Ok(entries) = std::fs::read_dir(&agents) {
        let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
        dirs.sort();
        for dir in dirs {
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if let Err(why) = crate::format::text::check_agent(&name) {
                warnings.push(format!("{}: {why}; not read", dir.display()));
                continue;
            }
            facts.extend(md_files(&dir).iter().filter_map(|f| claude_file(f, root, Some(&name), warnings)));
        }
    }
    facts
}

/// Returns the `- ` bullets of `text` (from `file`) for which `keep(heading path)` holds, each
/// with its continuation lines, skipping kb's managed block.
fn bullets(file: &Path, text: &str, keep: &dyn Fn(&[String]) -> bool) -> Vec<Fact> {
    let mut out: Vec<Fact> = Vec::new();
    let mut headings: Vec<String> = Vec::new();
    let mut in_block = false;
    let mut open: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t == crate::context::targets::BEGIN {
            in_block = true;
            open = None;
            continue;
        }
        if t == crate::context::targets::END {
            in_block = false;
            continue;
        }
        if in_block {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            let level = 1 + h.len() - h.trim_start_matches('#').len();
            headings.truncate(level.saturating_sub(1));
            while headings.len() < level - 1 {
                headings.push(String::new());
            }
            headings.push(h.trim_start_matches('#').trim().to_string());
            open = None;
            continue;
        }
        if let Some(rest) = line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")) {
            if keep(&headings) {
                out.push(Fact {
                    source: format!("{}:{}", file.display(), i + 1),
                    text: rest.trim().to_string(),
                    tags: Vec::new(),
                    memory_type: None,
                    agent: None,
                    personal: None,
                });
                open = Some(out.len() - 1);
            } else {
                open = None;
            }
        } else if let Some(k) = open {
            if line.starts_with("  ") && !t.is_empty() && !t.starts_with("- ") {
                out[k].text.push(' ');
                out[k].text.push_str(t);
            } else if t.is_empty() || !line.starts_with(' ') {
                open = None;
            }
        }
    }
    out.retain(|f| !f.text.is_empty());
    out
}

/// Returns whether `cwd` (as Codex wrote it) is `root` or inside it.
fn inside(cwd: &str, root: &Path) -> bool {
    let p = crate::paths::resolve_dots(Path::new(cwd.trim()));
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    p.starts_with(root)
        || p.starts_with(&real_root)
        || std::fs::canonicalize(&p).is_ok_and(|r| r.starts_with(&real_root))
}

/// The facts of Codex's memory handbook: every `- ` bullet of a `#` block whose `applies_to:`
/// names a `cwd=` inside the root (any block with `--path`), except the block's own `scope:` and
/// `applies_to:` lines and the bullets under `### rollout_summary_files` and `### keywords`.
fn codex(root: &Path, home: Option<&Path>, path: Option<&Path>, warnings: &mut Vec<String>) -> Vec<Fact> {
    let file = match path {
        Some(p) if p.is_dir() => p.join("MEMORY.md"),
        Some(p) => p.to_path_buf(),
        None => match home {
            Some(h) => h.join(".codex/memories/MEMORY.md"),
            None => return Vec::new(),
        },
    };
    let Some(text) = read(&file, root, warnings) else { return Vec::new() };
    // Split into blocks at each top-level heading.
    let mut blocks: Vec<(usize, String)> = Vec::new();
    let mut start = 0;
    let mut cur = String::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("# ") && !cur.is_empty() {
            blocks.push((start, std::mem::take(&mut cur)));
            start = i;
        }
        cur.push_str(line);
        cur.push('\n');
    }
    blocks.push((start, cur));
    let mut facts = Vec::new();
    for (first, block) in blocks {
        let applies = block.lines().any(|l| {
            let l = l.trim().trim_start_matches("- ").trim();
            l.strip_prefix("applies_to:").is_some_and(|rest| {
                rest.split([';', ',']).filter_map(|part| part.trim().strip_prefix("cwd=")).any(|cwd| inside(cwd, root))
            })
        });
        if path.is_none() && !applies {
            continue;
        }
        let keep = |h: &[String]| {
            !h.last().is_some_and(|t| {
                let t = t.to_ascii_lowercase();
                t == "rollout_summary_files" || t == "keywords"
            })
        };
        for mut f in bullets(&file, &block, &keep) {
            if f.text.starts_with("applies_to:") || f.text.starts_with("scope:") {
                continue;
            }
            // Lines are counted within the block.
            if let Some((name, line)) = f.source.rsplit_once(':') {
                f.source = format!("{name}:{}", line.parse::<usize>().unwrap_or(0) + first);
            }
            facts.push(f);
        }
    }
    facts
}

/// Returns Gemini's project folders under `~/.gemini/UNDER/` that belong to `root`: named in
/// `~/.gemini/projects.json` for the root's path, or holding a `.project_root` file naming it.
fn gemini_project_dirs(root: &Path, home: &Path, under: &str) -> Vec<PathBuf> {
    let tmp = home.join(".gemini").join(under);
    let Ok(entries) = std::fs::read_dir(&tmp) else { return Vec::new() };
    let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let is_root = |s: &str| {
        let p = Path::new(s.trim());
        p == root || p == real
    };
    let mut ids: Vec<String> = Vec::new();
    if let Ok(b) = std::fs::read(home.join(".gemini/projects.json"))
        && let Ok(v) = serde_json::from_slice::<Value>(&b)
    {
        // `{"projects": {"/path": "short-id"}}`, or the map at the top.
        let map = v.get("projects").unwrap_or(&v);
        if let Some(obj) = map.as_object() {
            for (k, id) in obj {
                if is_root(k)
                    && let Some(id) = id.as_str()
                {
                    ids.push(id.to_string());
                }
            }
        }
    }
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|d| {
            let name = d.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            ids.contains(&name) || std::fs::read_to_string(d.join(".project_root")).is_ok_and(|s| is_root(&s))
        })
        .collect();
    out.sort();
    out
}

/// The facts Gemini CLI saved: the bullets under `## Gemini Added Memories` of the project's and
/// the global `GEMINI.md` (its `save_memory` tool, before May 2026), and the `- ` bullets of the
/// project's private `~/.gemini/tmp/<id>/memory/MEMORY.md` (since; before March 2026
/// `~/.gemini/memory/<id>/GEMINI.md`).
fn gemini(root: &Path, home: Option<&Path>, path: Option<&Path>, warnings: &mut Vec<String>) -> Vec<Fact> {
    let section = |h: &[String]| h.get(1).is_some_and(|t| t.eq_ignore_ascii_case("Gemini Added Memories"));
    let mut facts = Vec::new();
    let section_file = |file: &Path, facts: &mut Vec<Fact>, warnings: &mut Vec<String>| {
        if let Some(text) = read(file, root, warnings) {
            facts.extend(bullets(file, &text, &section));
        }
    };
    if let Some(p) = path {
        let files: Vec<PathBuf> = if p.is_dir() {
            let mut v: Vec<PathBuf> =
                ["GEMINI.md", "MEMORY.md"].iter().map(|n| p.join(n)).filter(|f| f.is_file()).collect();
            v.extend(["memory/MEMORY.md"].iter().map(|n| p.join(n)).filter(|f| f.is_file()));
            v
        } else {
            vec![p.to_path_buf()]
        };
        for f in files {
            let Some(text) = read(&f, root, warnings) else { continue };
            let has_section = text.lines().any(|l| l.trim().eq_ignore_ascii_case("## Gemini Added Memories"));
            if has_section {
                facts.extend(bullets(&f, &text, &section));
            } else {
                facts.extend(bullets(&f, &text, &|_| true));
            }
        }
        return facts;
    }
    section_file(&root.join("GEMINI.md"), &mut facts, warnings);
    if let Some(home) = home {
        // The global file is the person's own (their name, their team), read for every project.
        let before = facts.len();
        section_file(&home.join(".gemini/GEMINI.md"), &mut facts, warnings);
        for f in &mut facts[before..] {
            f.personal = Some("Gemini's global GEMINI.md");
        }
        // Since May 2026 `tmp/<id>/memory/MEMORY.md`; before, `memory/<id>/GEMINI.md`.
        for (under, file) in [("tmp", "memory/MEMORY.md"), ("memory", "GEMINI.md")] {
            for dir in gemini_project_dirs(root, home, under) {
                let file = dir.join(file);
                if let Some(text) = read(&file, root, warnings) {
                    facts.extend(bullets(&file, &text, &|_| true));
                }
            }
        }
    }
    facts
}

/// What happened to one fact. JSON `{"id", "source", "action", "memory_id", "similarity",
/// "note", "similar_to"}`: `id` names the fact (its file, `FILE:LINE` for one line of a larger
/// file), unique within a run; `memory_id` the memory it was (or, in a dry run, would be) saved as
/// or found in; `similar_to` the near miss (docs/behaviour.md, Dedup), when there is one.
#[derive(Debug, Clone, Serialize)]
pub struct LearnedItem {
    pub id: String,
    pub source: String,
    /// `added`, `merged`, `exists`, `skipped` or `personal` (a dry run uses the same words).
    pub action: &'static str,
    pub memory_id: Option<u64>,
    pub similarity: Option<f64>,
    pub note: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    similar_to: Option<SimilarTo>,
    #[serde(skip)]
    text: String,
}

/// The near miss of an imported fact: the similar memory it was saved beside, and why.
#[derive(Debug, Clone, Serialize)]
struct SimilarTo {
    id: u64,
    similarity: f64,
    only_in_existing: Vec<String>,
    only_in_new: Vec<String>,
    why: &'static str,
}

/// What `kb import --from claude|codex|gemini` was asked to do.
#[derive(Debug, Clone)]
pub struct Request {
    pub tool: Tool,
    /// Read this folder or file instead of the agent's own place.
    pub path: Option<PathBuf>,
    pub dry_run: bool,
    /// Import a person's own memories too (`--personal`).
    pub personal: bool,
    /// Store a fact holding a secret with the secret replaced (`--redact`).
    pub redact: bool,
}

/// `kb import --from claude|codex|gemini`. JSON: `{"direction":"import", "from":TOOL, "to":"md",
/// "path":ABS, "dry_run", "added", "merged", "exists", "skipped", "personal", "items":[ITEM...]
/// ([`LearnedItem`]), "warnings":[S...], "looked":[PATH...]}`.
#[derive(Debug, Serialize)]
pub struct LearnedReport {
    direction: &'static str,
    from: &'static str,
    to: &'static str,
    path: String,
    dry_run: bool,
    added: usize,
    merged: usize,
    exists: usize,
    skipped: usize,
    personal: usize,
    items: Vec<LearnedItem>,
    warnings: Vec<String>,
    /// Where kb looked for the agent's memories.
    looked: Vec<String>,
    #[serde(skip)]
    diagnostics: Vec<Diagnostic>,
}

/// Imports the facts an agent learned about this repository (from `path` when given), each
/// through the normal save, all in one journal entry. A fact whose text (lower-cased, white space
/// collapsed) a memory it sees already holds is `exists` at once, by one lookup over every memory:
/// a second import adds nothing and scores nothing, at any size.
pub fn import(repo: &Repo, req: &Request) -> anyhow::Result<LearnedReport> {
    let (tool, dry_run) = (req.tool, req.dry_run);
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let root = &repo.layout.root;
    let mut warnings = Vec::new();
    let path = req
        .path
        .as_deref()
        .map(|p| if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(p) });
    if let Some(p) = &path
        && !p.exists()
    {
        return Err(KbError::rejected("--path", format!("--path {}: no such file or folder", p.display())).into());
    }
    let facts = match tool {
        Tool::Claude => claude(root, home.as_deref(), path.as_deref(), &mut warnings),
        Tool::Codex => codex(root, home.as_deref(), path.as_deref(), &mut warnings),
        Tool::Gemini => gemini(root, home.as_deref(), path.as_deref(), &mut warnings),
    };
    // The facts are an agent's: written by `agent:<tool>`, and never rewriting what a person wrote.
    let mut repo = repo.clone();
    repo.env.actor = Actor::agent(Some(tool.as_str()));
    let store = MemoryStore::new(&repo);
    let tag = format!("from-{}", tool.as_str());
    let mut items = Vec::new();
    let mut txn = if dry_run {
        None
    } else {
        Some(Txn::begin(&repo, repo.lock()?, "import", format!("imported {} memories", tool.as_str())))
    };
    let mut known = Known::of(&store.scan()?);
    let mut ids = Ids::default();
    // A dry run writes nothing, so each plan sees the same highest id: the ids a real run would
    // give are counted here.
    let mut dry_created = 0;
    for f in facts {
        // What is shown of a fact is what is stored: a redacted secret is never printed.
        let shown = |text: &str, action, id, similarity, note: String| LearnedItem {
            id: String::new(),
            source: f.source.clone(),
            action,
            memory_id: id,
            similarity,
            note,
            similar_to: None,
            text: text.to_string(),
        };
        let item = |action, id, similarity, note: String| shown("", action, id, similarity, note);
        if let Some(why) = f.personal.filter(|_| !req.personal) {
            items.push(item("personal", None, None, format!("one person's memory ({why}); --personal imports it")));
            continue;
        }
        let mut tags = vec![tag.clone()];
        tags.extend(f.tags.iter().cloned());
        let save = SaveRequest {
            content: f.text.clone(),
            tags,
            dry_run,
            redact: req.redact,
            memory_type: f.memory_type,
            agent: f.agent.clone(),
            ..SaveRequest::default()
        };
        let prepared = match store.prepare(save) {
            Ok(p) => p.with_source("detected"),
            Err(e @ (KbError::Secret { .. } | KbError::Rejected { .. })) => {
                items.push(item("skipped", None, None, e.to_string()));
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let content = prepared.content().to_string();
        let item = |action, id, similarity, note: String| shown(&content, action, id, similarity, note);
        if let Some(id) = known.find(&content, f.agent.as_deref()) {
            items.push(item("exists", Some(id), None, format!("already stored as memory {id}")));
            continue;
        }
        let plan = store.plan(prepared, txn.as_ref().map(|t| t.lock()))?;
        // The same text again is already stored: nothing is rewritten.
        let o = plan.outcome();
        if o.action == SaveAction::Consolidate && o.replaced.as_deref().is_some_and(|r| same_words(r, &content)) {
            let note = format!("already stored as memory {}", o.memory_id);
            items.push(item("exists", Some(o.memory_id), o.similarity, note));
            continue;
        }
        let mut out = match &mut txn {
            None => plan.outcome().clone(),
            Some(t) => plan.write(&repo, t)?,
        };
        if out.dry_run && out.action == SaveAction::Create {
            out.memory_id += dry_created;
            dry_created += 1;
        }
        let redacted = if out.redacted.is_empty() {
            String::new()
        } else {
            format!("secrets matching {} redacted", out.redacted.join(", "))
        };
        let (action, note) = match out.action {
            SaveAction::Create => (
                "added",
                match &out.similar_to {
                    Some((id, miss)) => format!("beside memory {id}: {}", near_miss(miss)),
                    None => String::new(),
                },
            ),
            SaveAction::Consolidate => ("merged", format!("into memory {}", out.memory_id)),
            SaveAction::Exists => ("exists", format!("already stored as memory {}", out.memory_id)),
        };
        let note = [note, redacted].into_iter().filter(|n| !n.is_empty()).collect::<Vec<_>>().join("; ");
        match out.action {
            SaveAction::Create | SaveAction::Consolidate => {
                known.forget(out.replaced.as_deref(), out.memory_id);
                known.add(&content, f.agent.as_deref(), out.memory_id);
            }
            SaveAction::Exists => {}
        }
        let mut it = item(action, Some(out.memory_id), out.similarity, note);
        it.similar_to = out.similar_to.as_ref().map(|(id, m)| SimilarTo {
            id: *id,
            similarity: m.similarity,
            only_in_existing: m.only_in_existing.clone(),
            only_in_new: m.only_in_new.clone(),
            why: m.why.as_str(),
        });
        items.push(it);
    }
    for it in &mut items {
        it.id = ids.unique(&it.source);
    }
    if let Some(t) = txn {
        t.finish()?;
    }
    let show = |p: PathBuf| p.display().to_string();
    let looked: Vec<String> = match (&path, home.as_deref()) {
        (Some(p), _) => vec![show(p.clone())],
        (None, home) => {
            let h = |rel: &str| home.map(|h| show(h.join(rel)));
            match tool {
                Tool::Claude => h(&format!(".claude/projects/{}/memory", claude_slug(root)))
                    .into_iter()
                    .chain([show(root.join(".claude/agent-memory"))])
                    .collect(),
                Tool::Codex => h(".codex/memories/MEMORY.md").into_iter().collect(),
                Tool::Gemini => {
                    [Some(show(root.join("GEMINI.md"))), h(".gemini/GEMINI.md"), h(".gemini/tmp/*/memory/MEMORY.md")]
                        .into_iter()
                        .flatten()
                        .collect()
                }
            }
        }
    };
    let count = |a: &str| items.iter().filter(|i| i.action == a).count();
    let diagnostics = warnings
        .iter()
        .map(|w| Diagnostic::warning(None, w.as_str()))
        .chain(
            items
                .iter()
                .filter(|i| i.action == "skipped")
                .map(|i| Diagnostic::warning(None, format!("not imported {}: {}", i.source, i.note))),
        )
        .collect();
    Ok(LearnedReport {
        direction: "import",
        from: tool.as_str(),
        to: "md",
        path: abs(&repo.layout.memories()),
        dry_run,
        added: count("added"),
        merged: count("merged"),
        exists: count("exists"),
        skipped: count("skipped"),
        personal: count("personal"),
        items,
        warnings,
        looked,
        diagnostics,
    })
}

/// Returns a near miss as an import's note says it: why, and what differs.
fn near_miss(miss: &crate::format::salient::NearMiss) -> String {
    let list = |t: &[String]| t.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ");
    let why = match miss.why {
        Why::WrittenByPerson => "a person wrote it, so it was left as it is",
        w => w.as_str(),
    };
    match (miss.only_in_existing.as_slice(), miss.only_in_new.as_slice()) {
        ([], []) => why.to_string(),
        (old, []) => format!("{why}; it says {}", list(old)),
        ([], new) => format!("{why}; this says {}", list(new)),
        (old, new) => format!("{why}; it says {} where this says {}", list(old), list(new)),
    }
}

/// Returns whether two texts are equal after lower-casing and collapsing white space.
fn same_words(a: &str, b: &str) -> bool {
    normalized(a) == normalized(b)
}

/// Returns a text lower-cased (as a whole) with its white space collapsed: the key of
/// [`Known`].
fn normalized(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// The texts the store holds, by their normalized form, with the memories that hold them and
/// the agent each belongs to (`None`: shared): the exact-match lookup before the fuzzy window.
#[derive(Default)]
struct Known {
    texts: HashMap<String, Vec<(u64, Option<String>)>>,
}

impl Known {
    fn of(index: &crate::memories::index::Index) -> Known {
        let mut k = Known::default();
        for m in index.memories() {
            k.add(m.content, m.agent, m.id);
        }
        k
    }

    fn add(&mut self, text: &str, agent: Option<&str>, id: u64) {
        self.texts.entry(normalized(text)).or_default().push((id, agent.map(str::to_string)));
    }

    /// Drops memory `id` under `text`, the body a consolidation replaced.
    fn forget(&mut self, text: Option<&str>, id: u64) {
        if let Some(held) = text.and_then(|t| self.texts.get_mut(&normalized(t))) {
            held.retain(|(have, _)| *have != id);
        }
    }

    /// Returns a memory that holds `text` and that `agent` sees (shared, or that agent's).
    fn find(&self, text: &str, agent: Option<&str>) -> Option<u64> {
        let held = self.texts.get(&normalized(text))?;
        held.iter().filter(|(_, a)| a.is_none() || a.as_deref() == agent).map(|(id, _)| *id).min()
    }
}

/// The ids given to a run's facts: each its source, made unique with `#2`, `#3`... when two facts
/// share one.
#[derive(Default)]
struct Ids {
    seen: HashMap<String, usize>,
}

impl Ids {
    fn unique(&mut self, source: &str) -> String {
        let n = self.seen.entry(source.to_string()).or_insert(0);
        *n += 1;
        if *n == 1 { source.to_string() } else { format!("{source}#{n}") }
    }
}

impl Report for LearnedReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        for i in &self.items {
            let verb = match (self.dry_run, i.action) {
                (true, "added") => "would add",
                (true, "merged") => "would merge",
                (true, "skipped") => "would skip",
                (_, a) => a,
            };
            // A refused fact may hold a secret, a personal one is the person's: each is named by
            // where it is, never shown.
            let hidden = matches!(i.action, "skipped" | "personal");
            let shown = if hidden { i.id.clone() } else { crate::output::summary(&i.text) };
            write!(w, "{verb:<11} {}", v.clean(&shown))?;
            if let Some(id) = i.memory_id.filter(|_| !hidden) {
                write!(w, " → memory {id}")?;
            }
            if !i.note.is_empty() && i.action != "exists" {
                write!(w, " ({})", v.clean(&i.note))?;
            }
            writeln!(w)?;
        }
        if self.items.is_empty() {
            let places: Vec<String> = self.looked.iter().map(|p| v.rel(Path::new(p)).into_owned()).collect();
            return writeln!(w, "Nothing to import: no {} memories in {}.", self.from, places.join(", "));
        }
        writeln!(w)?;
        let n = self.items.len();
        let what = if n == 1 { "fact" } else { "facts" };
        let place = v.rel(Path::new(&self.path)).into_owned();
        let line = if self.dry_run {
            format!("Would import {n} {what} from {} into {place}", self.from)
        } else {
            format!("{} Imported {n} {what} from {} into {place}", v.style.ok("✓"), self.from)
        };
        write!(
            w,
            "{line}: {} added, {} merged, {} already stored, {} skipped",
            self.added, self.merged, self.exists, self.skipped
        )?;
        if self.personal > 0 {
            write!(w, ", {} personal left out (--personal imports them)", self.personal)?;
        }
        write!(w, ".")?;
        if self.dry_run {
            write!(w, " Nothing written.")?;
        }
        writeln!(w)
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_replaces_every_other_character() {
        assert_eq!(claude_slug(Path::new("/home/a.b/my_repo")), "-home-a-b-my-repo");
    }

    #[test]
    fn bullets_skip_kb_block_and_follow_sections() {
        let text = "# G\n\n## Gemini Added Memories\n- one\n  more\n- two\n\n## Other\n- no\n<!-- kb:context:begin -->\n## Gemini Added Memories\n- never\n<!-- kb:context:end -->\n";
        let section = |h: &[String]| h.get(1).is_some_and(|t| t == "Gemini Added Memories");
        let got: Vec<String> = bullets(Path::new("G.md"), text, &section).into_iter().map(|f| f.text).collect();
        assert_eq!(got, ["one more", "two"]);
    }
}
