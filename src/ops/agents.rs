//! The projection of the knowledge into each agent's own files (docs/behaviour.md,
//! Agents): what `kb compile` writes besides `context_targets` for the agents of the setting
//! `agents`, which generated files are orphans, and `kb agents`, the load receipt.
//!
//! [`plan`] computes every file and its text from one reading of the repository; `compile`
//! writes or checks the plan, `kb agents` compares it with the files on disk.

use super::context::request_of;
use super::{Report, View};
use crate::context::agents::{self as formats, Limit};
use crate::context::block::{Cap, assemble_framed, fit_to_cap, gather};
use crate::context::targets::{self, TargetError, TargetKind};
use crate::context::{Block, BlockRequest};
use crate::error::Diagnostic;
use crate::knowledge::Knowledge;
use crate::paths::{real_path, resolve_dots};
use crate::repo::Repo;
use crate::settings::{Agent, TargetSpec};
use serde::Serialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A file that holds a block: a `context_targets` entry, or an agent's managed block.
#[derive(Debug, Clone)]
pub struct PlannedTarget {
    /// As written in `context_targets`, or the agent's file (`CLAUDE.md`).
    pub raw: String,
    /// The agents that read it from kb.
    pub agents: Vec<Agent>,
    pub block: Option<String>,
}

/// A file kb generates whole for an agent: a context file or a scoped rule file.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    /// Root-relative, `/`-separated.
    pub rel: String,
    pub agents: Vec<Agent>,
    pub text: String,
    /// A scoped rule (else the context file).
    pub rule: bool,
}

/// Everything a compile writes, from one reading of the repository.
pub struct Plan {
    pub targets: Vec<PlannedTarget>,
    pub generated: Vec<PlannedFile>,
    /// Files in the agents' rule folders carrying kb's marker line that nothing plans any more
    /// (their instruction or agent is gone, or a person copied a generated file): each
    /// [`Ownership::Owned`] (deleted by a compile) or [`Ownership::Edited`] (left alone).
    pub orphans: Vec<(PathBuf, Ownership)>,
    /// The first target's block (the default block when there is none), with every block's
    /// warnings and conflicts, each once.
    pub block: Block,
}

/// Returns the cap of a target file read by `agents`: Codex's 32 KiB of AGENTS.md (less what the
/// file holds outside the block). `None` when no agent cuts it.
fn managed_cap(repo: &Repo, raw: &str, agents: &[Agent]) -> Option<Cap> {
    let agent = *agents.iter().find(|a| formats::block_limit(**a).is_some_and(|l| l.fitted))?;
    let limit = formats::block_limit(agent)?;
    let existing = targets::resolve(&repo.layout, raw)
        .ok()
        .and_then(|t| std::fs::read(&t.real).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default();
    let overhead = targets::splice(&existing, Some("")).map_or(0, |s| limit.measure(&s));
    Some(Cap {
        limit: limit.max.saturating_sub(overhead),
        chars: limit.chars,
        label: format!("{}'s {}-{} limit of {raw}", agent.as_str(), limit.max, unit_word(&limit)),
    })
}

fn unit_word(l: &Limit) -> &'static str {
    if l.chars { "character" } else { "byte" }
}

/// Returns the cap of an agent's generated context file: Windsurf's 12,000 characters, less the
/// frontmatter and the marker line.
fn context_cap(agent: Agent) -> Option<Cap> {
    let limit = formats::block_limit(agent).filter(|l| l.fitted)?;
    let overhead = formats::context_file(agent, "").map_or(0, |t| limit.measure(&t));
    let (file, _) = formats::block_file(agent);
    Some(Cap {
        limit: limit.max.saturating_sub(overhead),
        chars: limit.chars,
        label: format!("{}'s {}-{} limit of {file}", agent.as_str(), limit.max, unit_word(&limit)),
    })
}

/// What kb writes around a block in its file, which a token budget holds too (docs/behaviour.md,
/// Token budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// A standalone target: the marker line first.
    Standalone,
    /// A managed block: its two marker lines (the rest of the file is not kb's).
    Managed,
    /// An agent's generated context file: the marker line (the frontmatter, which the agent
    /// parses rather than reads, is not counted).
    Context(Agent),
}

impl Frame {
    /// Returns what the agent reads of the file holding `block`.
    fn around(self, block: &str) -> String {
        match self {
            Frame::Standalone => targets::standalone(Some(block)),
            Frame::Managed => format!("{}\n{block}\n{}\n", targets::BEGIN, targets::END),
            Frame::Context(agent) => {
                let file = formats::context_file(agent, block).unwrap_or_default();
                let start = formats::stamp(&file).map_or(0, |s| s.line.start);
                file[start..].to_string()
            }
        }
    }
}

/// What one block is built for: its request, its frame (`None` without a budget, where the frame
/// changes nothing) and the agent's cap.
type BlockKey = (BlockRequest, Option<Frame>, Option<Cap>);

/// Computes every target's block and every agent's files for `targets` and the setting
/// `agents`, and finds the orphans. Reads only (the memory index cache aside).
pub fn plan(repo: &Repo, knowledge: &Knowledge<'_>, targets: &[TargetSpec]) -> Plan {
    let root = &repo.layout.root;
    let agents = &repo.settings.agents.value;
    let plain = request_of(repo, &TargetSpec::default());
    let key = |raw: &str| resolve_dots(&root.join(raw));
    let mut entries: Vec<(String, Vec<Agent>, BlockRequest)> =
        targets.iter().map(|t| (t.path.clone(), Vec::new(), request_of(repo, t))).collect();
    let mut notes: Vec<Diagnostic> = Vec::new();
    for &agent in agents {
        let (file, managed) = formats::block_file(agent);
        if let Some(e) = entries.iter_mut().find(|e| key(&e.0) == key(file)) {
            e.1.push(agent);
        } else if managed {
            entries.push((file.to_string(), vec![agent], plain.clone()));
        }
    }
    // Each distinct request is gathered once and assembled once per frame (a token budget holds
    // the lines around the block, which differ by file); a cap only refits that block's layers
    // when the block passes it.
    let mut built: Vec<(BlockKey, Block)> = Vec::new();
    let mut inputs_of: Vec<(BlockRequest, crate::context::block::Inputs)> = Vec::new();
    let budget_of = |req: &BlockRequest| req.max_tokens.or(repo.settings.context_max_tokens.value);
    let mut block_of = |req: &BlockRequest, frame: Frame, cap: Option<Cap>| -> Option<String> {
        // Without a budget the frame changes nothing.
        let frame = budget_of(req).map(|_| frame);
        let k = (req.clone(), frame, cap);
        if let Some((_, b)) = built.iter().find(|(x, _)| *x == k) {
            return b.text.clone();
        }
        if !inputs_of.iter().any(|(r, _)| r == req) {
            inputs_of.push((req.clone(), gather(knowledge, req)));
        }
        let inputs = inputs_of.iter().find(|(r, _)| r == req).map(|(_, i)| i);
        let plain = match built.iter().find(|((r, f, c), _)| r == req && *f == frame && c.is_none()) {
            Some((_, b)) => b.clone(),
            None => {
                let inputs = inputs.cloned().unwrap_or_default();
                let framer = |block: &str| frame.map_or_else(|| block.to_string(), |f| f.around(block));
                let b = assemble_framed(inputs, budget_of(req), Some(&framer), req.wrap, req.count_tokens);
                built.push(((req.clone(), frame, None), b.clone()));
                b
            }
        };
        let Some(cap) = k.2.clone() else { return plain.text };
        let layers = inputs.map(|i| i.layers.as_slice()).unwrap_or(&[]);
        let b = fit_to_cap(layers, plain, &cap, req.wrap);
        let text = b.text.clone();
        built.push((k, b));
        text
    };
    // Only a budget counts the frame: without one, the target's kind is not looked up.
    let frame_of = |raw: &str, req: &BlockRequest| {
        if budget_of(req).is_none() {
            return Frame::Managed;
        }
        match targets::resolve(&repo.layout, raw).map(|t| targets::kind_for(&t)) {
            Ok(TargetKind::Standalone) => Frame::Standalone,
            _ => Frame::Managed,
        }
    };
    // The report's block first: the first target's, else the default one.
    match entries.first() {
        Some(e) => drop(block_of(&e.2, frame_of(&e.0, &e.2), managed_cap(repo, &e.0, &e.1))),
        None => drop(block_of(&plain, Frame::Standalone, None)),
    }
    let mut planned_targets = Vec::new();
    for (raw, agents, req) in &entries {
        let block = block_of(req, frame_of(raw, req), managed_cap(repo, raw, agents));
        planned_targets.push(PlannedTarget { raw: raw.clone(), agents: agents.clone(), block });
    }
    let mut generated: Vec<PlannedFile> = Vec::new();
    let taken = |rel: &str, generated: &[PlannedFile]| {
        entries.iter().any(|e| key(&e.0) == key(rel)) || generated.iter().any(|g| g.rel == rel)
    };
    for &agent in agents {
        let (file, managed) = formats::block_file(agent);
        if managed || taken(file, &generated) {
            continue;
        }
        let block = block_of(&plain, Frame::Context(agent), context_cap(agent));
        if let Some(text) = block.and_then(|b| formats::context_file(agent, &b)) {
            generated.push(PlannedFile { rel: file.to_string(), agents: vec![agent], text, rule: false });
        }
    }
    let instructions = knowledge.instructions();
    let dir = repo.layout.instructions();
    // A rule file carries its instruction file whole: a stale one is kept, with the warning.
    let check = knowledge.stale();
    let mut stale_rules: Vec<Diagnostic> = Vec::new();
    let mut checked: Vec<&Path> = Vec::new();
    for &agent in agents {
        let Some((folder, ext)) = formats::rule_dir(agent) else { continue };
        for i in &instructions.files {
            if !i.usable() || i.always_on() || i.body.is_empty() || crate::context::first_marker(&i.body).is_some() {
                continue;
            }
            let name = formats::rule_name(&dir, &i.path);
            let source = super::rel(root, &i.path).replace('\\', "/");
            // The marker line names the source: a name that would break it is left out.
            if name.chars().any(|c| c.is_control()) || source.contains("-->") {
                notes.push(Diagnostic::warning(
                    None,
                    format!("{:?}: a file name with a control character or `-->` cannot be named in a marker line: left out for {}", source, agent.as_str()),
                ));
                continue;
            }
            if formats::globs_on_one_line(agent) && !i.apply_to.iter().all(|g| formats::one_line_glob(g)) {
                notes.push(Diagnostic::warning(
                    None,
                    format!(
                        "{source}: an applyTo glob holds a line break or control character, which cannot go on {}'s \
                         one-line globs: left out for {}; fix the glob",
                        agent.as_str(),
                        agent.as_str()
                    ),
                ));
                continue;
            }
            let rel = format!("{folder}/kb-{name}{ext}");
            if taken(&rel, &generated) {
                notes.push(Diagnostic::warning(
                    None,
                    format!("{source} would become {rel}, a file kb already writes: left out for {}", agent.as_str()),
                ));
                continue;
            }
            let Some(text) = formats::rule_file(agent, i, &source) else { continue };
            if !checked.contains(&i.path.as_path()) {
                checked.push(&i.path);
                let problems = check.problems(&i.body, &[]);
                if !problems.is_empty() {
                    stale_rules.push(crate::knowledge::stale::kept(&i.path, None, "this instruction file", &problems));
                }
            }
            if let Some(l) = formats::rule_limit(agent).filter(|l| l.measure(&text) > l.max) {
                notes.push(Diagnostic::warning(
                    None,
                    format!(
                        "{rel} is {} {}, over {}'s {}-{} limit per rule file: shorten {source}",
                        l.measure(&text),
                        l.unit(),
                        agent.as_str(),
                        l.max,
                        unit_word(&l)
                    ),
                ));
            }
            generated.push(PlannedFile { rel, agents: vec![agent], text, rule: true });
        }
    }
    let orphans = orphans(repo, &generated);
    // The report's block with every block's warnings and conflicts, each once.
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    let mut conflicts: Vec<Diagnostic> = Vec::new();
    let mut stale: Vec<Diagnostic> = std::mem::take(&mut stale_rules);
    for (_, b) in &built {
        for w in &b.warnings {
            if !diagnostics.contains(w) {
                diagnostics.push(w.clone());
            }
        }
        for c in &b.conflicts {
            if !conflicts.contains(c) {
                conflicts.push(c.clone());
            }
        }
        for c in &b.stale {
            if !stale.contains(c) {
                stale.push(c.clone());
            }
        }
    }
    diagnostics.extend(notes);
    for w in &stale {
        if !diagnostics.contains(w) {
            diagnostics.push(w.clone());
        }
    }
    let mut block = built.swap_remove(0).1;
    block.warnings = diagnostics;
    block.conflicts = conflicts;
    block.stale = stale;
    Plan { targets: planned_targets, generated, orphans, block }
}

/// Returns the files kb generated (they carry its marker line) in the agents' rule folders that
/// `generated` does not plan, each with its ownership. A folder that leads out of the root is
/// not looked into.
fn orphans(repo: &Repo, generated: &[PlannedFile]) -> Vec<(PathBuf, Ownership)> {
    let root = &repo.layout.root;
    let real_root = real_path(root).unwrap_or_else(|_| root.clone());
    let mut out = Vec::new();
    for (_, folder, ext) in formats::RULE_DIRS {
        let dir = root.join(folder);
        if !real_path(&dir).is_ok_and(|r| r.starts_with(&real_root)) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("kb-") && n.ends_with(ext))
            })
            .collect();
        found.sort();
        for path in found {
            let rel = format!("{folder}/{}", path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
            if generated.iter().any(|g| g.rel == rel) {
                continue;
            }
            match owned(&path, None) {
                own @ (Ownership::Owned | Ownership::Edited) => out.push((path, own)),
                Ownership::Missing | Ownership::Foreign => {}
            }
        }
    }
    out
}

/// Returns the folder of the generated file `rel` (root-relative, `/`-separated), or one of
/// its parents, that exists as something other than a folder (a `.kiro/steering` that is a
/// file): kb cannot write `rel`, and the warning names that, not the file inside it.
pub fn blocked_by(root: &Path, rel: &str) -> Option<String> {
    let parent = Path::new(rel).parent().filter(|p| !p.as_os_str().is_empty())?;
    // One stat in the usual case: the folder is there, or it (and so every folder above the
    // first missing one) is not.
    match std::fs::metadata(root.join(parent)) {
        Ok(m) if m.is_dir() => return None,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        _ => {}
    }
    let parts: Vec<&str> = rel.split('/').collect();
    for n in 1..parts.len() {
        let folder = parts[..n].join("/");
        match std::fs::metadata(root.join(&folder)) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => return Some(folder),
            Err(_) => return None,
        }
    }
    None
}

/// Returns whether the folder of the generated file `rel` stays inside the root once symlinks are
/// followed (its nearest existing ancestor, when it does not exist yet); checked once per folder
/// through `seen`. The file itself is checked by [`read_owned`]: a symlink is never kb's.
pub fn folder_inside(root: &Path, rel: &str, seen: &mut Vec<(PathBuf, bool)>) -> bool {
    let dir = root.join(Path::new(rel).parent().unwrap_or(Path::new("")));
    if let Some((_, ok)) = seen.iter().find(|(d, _)| *d == dir) {
        return *ok;
    }
    let real_root = real_path(root).unwrap_or_else(|_| root.to_path_buf());
    let existing = dir.ancestors().find(|a| a.exists()).unwrap_or(root);
    let ok = real_path(existing).is_ok_and(|r| r.starts_with(&real_root));
    seen.push((dir, ok));
    ok
}

/// Whether a file at a generated file's place is kb's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    Missing,
    /// kb's marker line, and content that still hashes to it (what kb wrote), or that says what
    /// kb would write now.
    Owned,
    /// kb's marker line, but content that no longer hashes to it: a person edited the file (or
    /// copied it and edited the copy), or an older kb wrote it without a hash and it differs
    /// from what kb would write now. Left alone.
    Edited,
    /// A file without kb's marker line, a symlink, or anything not a regular file.
    Foreign,
}

/// Returns who owns the file at `path`, where kb would write `planned` (`None`: nothing, an
/// orphan). A symlink is never kb's: kb writes regular files.
pub fn owned(path: &Path, planned: Option<&str>) -> Ownership {
    read_owned(path, planned).0
}

/// Returns who owns the file at `path` (as [`owned`]), and its bytes when it carries kb's
/// marker line (one read).
pub fn read_owned(path: &Path, planned: Option<&str>) -> (Ownership, Option<Vec<u8>>) {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => (Ownership::Missing, None),
        Err(_) => (Ownership::Foreign, None),
        Ok(m) if !m.file_type().is_file() => (Ownership::Foreign, None),
        Ok(_) => match std::fs::read(path) {
            Ok(b) => match std::str::from_utf8(&b).ok().map(|t| (t, formats::stamp(t))) {
                Some((text, Some(stamp))) => {
                    // What kb would write is kb's, without hashing it again.
                    let kbs = planned == Some(text)
                        || stamp.intact(text)
                        || planned.is_some_and(|p| formats::unstamped(text) == formats::unstamped(p));
                    (if kbs { Ownership::Owned } else { Ownership::Edited }, Some(b))
                }
                _ => (Ownership::Foreign, None),
            },
            Err(_) => (Ownership::Foreign, None),
        },
    }
}

/// Returns the warning for a generated file a person edited (`bytes`, at `rel`): kb leaves it
/// alone, and says how to carry the change into its source. `orphan`: kb no longer generates a
/// file there.
pub fn edited_message(rel: &str, bytes: &[u8], orphan: bool) -> String {
    let text = String::from_utf8_lossy(bytes);
    let stamp = formats::stamp(&text);
    let source = stamp.as_ref().map_or(formats::CONTEXT_SOURCE, |s| s.source);
    let why = if stamp.as_ref().is_some_and(|s| s.hash.is_some()) {
        "was edited by hand (its content no longer matches the hash in its kb marker line)"
    } else {
        "has a kb marker line without a content hash (an older kb wrote it) and differs from what kb writes now, \
         so it may hold a hand edit"
    };
    if orphan {
        format!(
            "{rel} {why}, and kb no longer generates it: left alone; to keep it as your own file, delete its \
             `<!-- kb: generated ... -->` line; else delete the file"
        )
    } else {
        format!(
            "{rel} {why}: left alone; carry the change into {source} (kb generates this file from it), then delete \
             {rel} and run kb compile"
        )
    }
}

/// One file an agent reads from kb, and its state. JSON: `{"path","kind":"block"|"rule","bytes",
/// "tokens","limit","limit_unit","state"}`.
#[derive(Debug, Clone, Serialize)]
pub struct AgentFile {
    /// Root-relative.
    pub path: String,
    pub kind: &'static str,
    /// The file as it is (as compile would write it when missing).
    pub bytes: usize,
    pub tokens: usize,
    pub limit: Option<usize>,
    pub limit_unit: Option<&'static str>,
    /// `up to date`, `stale`, `missing`, `edited` (kb's file, edited by hand: left alone) or `foreign`.
    pub state: &'static str,
}

/// One agent's files. JSON: `{"name","files":[FILE...]}`.
#[derive(Debug, Clone, Serialize)]
pub struct AgentEntry {
    pub name: &'static str,
    pub files: Vec<AgentFile>,
}

/// `kb agents`: `{"agents":[AGENT...]}`.
#[derive(Debug, Serialize)]
pub struct AgentsReport {
    pub agents: Vec<AgentEntry>,
    #[serde(skip)]
    diagnostics: Vec<Diagnostic>,
}

/// The state of a file compile would write with `expected` bytes, and its bytes now.
fn state_of(existing: Option<&[u8]>, expected: &str) -> &'static str {
    match existing {
        None => "missing",
        Some(b) if b == expected.as_bytes() => "up to date",
        Some(_) => "stale",
    }
}

/// Returns the text a target would hold after a compile, what it holds now and whether a person
/// edited it (a standalone target), or the error.
pub fn render(repo: &Repo, t: &PlannedTarget) -> Result<targets::Rendered, TargetError> {
    let target = targets::resolve(&repo.layout, &t.raw)?;
    targets::render_target(&target, t.block.as_deref())
}

/// `kb agents`: per agent of the setting `agents`, each file it reads from kb, its size, the
/// agent's limit, and whether it is up to date. Reads only.
pub fn agents(repo: &Repo) -> AgentsReport {
    let knowledge = Knowledge::read(repo);
    let plan = plan(repo, &knowledge, &repo.settings.context_targets.value);
    let root = &repo.layout.root;
    let count = crate::format::tokens::count;
    let mut diagnostics = plan.block.warnings.clone();
    let mut out = Vec::new();
    for &agent in &repo.settings.agents.value {
        let mut files = Vec::new();
        let limit = formats::block_limit(agent);
        if let Some(t) = plan.targets.iter().find(|t| t.agents.contains(&agent)) {
            let (bytes, tokens, state) = match render(repo, t) {
                Ok(targets::Rendered { new, existing, edited, .. }) => {
                    let state = if edited { "edited" } else { state_of(existing.as_deref(), &new) };
                    let shown = existing.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or(new);
                    (shown.len(), count(&shown), state)
                }
                Err(e) => {
                    diagnostics.push(Diagnostic::warning(None, e.to_string()));
                    (0, 0, "foreign")
                }
            };
            let path = t.raw.clone();
            files.push(AgentFile {
                path,
                kind: "block",
                bytes,
                tokens,
                limit: limit.map(|l| l.max),
                limit_unit: limit.map(|l| l.unit()),
                state,
            });
        }
        for g in plan.generated.iter().filter(|g| g.agents.contains(&agent)) {
            let path = root.join(&g.rel);
            if let Some(folder) = blocked_by(root, &g.rel) {
                let w = Diagnostic::warning(
                    None,
                    format!("{folder} is a file, not a folder, so kb cannot write {} in it; move {folder} away", g.rel),
                );
                if !diagnostics.contains(&w) {
                    diagnostics.push(w);
                }
            }
            let (text, state) = match owned(&path, Some(&g.text)) {
                Ownership::Missing => (g.text.clone(), "missing"),
                Ownership::Edited => {
                    let now = std::fs::read(&path).unwrap_or_default();
                    (String::from_utf8_lossy(&now).into_owned(), "edited")
                }
                Ownership::Foreign => {
                    let now = std::fs::read(&path).map(|b| String::from_utf8_lossy(&b).into_owned());
                    (now.unwrap_or_default(), "foreign")
                }
                Ownership::Owned => {
                    let now = std::fs::read(&path).unwrap_or_default();
                    let state = state_of(Some(&now), &g.text);
                    (String::from_utf8_lossy(&now).into_owned(), state)
                }
            };
            let limit = if g.rule { formats::rule_limit(agent) } else { limit };
            files.push(AgentFile {
                path: g.rel.clone(),
                kind: if g.rule { "rule" } else { "block" },
                bytes: text.len(),
                tokens: count(&text),
                limit: limit.map(|l| l.max),
                limit_unit: limit.map(|l| l.unit()),
                state,
            });
        }
        out.push(AgentEntry { name: agent.as_str(), files });
    }
    AgentsReport { agents: out, diagnostics }
}

impl Report for AgentsReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        if self.agents.is_empty() {
            writeln!(w, "No agents: set them with kb init --agents claude,cursor (or kb config set agents ...).")?;
            return Ok(());
        }
        for a in &self.agents {
            writeln!(w, "{}", v.style.bold(a.name))?;
            if a.files.is_empty() {
                writeln!(w, "  (nothing to read: no context and no scoped instructions)")?;
            }
            for f in &a.files {
                let limit = match (f.limit, f.limit_unit) {
                    (Some(l), Some(u)) => format!(", limit {l} {u}"),
                    _ => String::new(),
                };
                writeln!(
                    w,
                    "  {:<10} {} ({}, {} bytes, {} tokens{limit})",
                    f.state, f.path, f.kind, f.bytes, f.tokens
                )?;
            }
        }
        Ok(())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}
