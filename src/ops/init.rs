//! `kb init`: create the knowledge folder from the embedded templates, gitignore kb's cache and
//! local state, and give the JSONL file git's union merge (docs/safety.md, Git merges). Never overwrites a file:
//! `.gitignore` and `.gitattributes` only get the lines they lack appended.

use super::compile::{AgentsMd, CompileReport, add_agents_md, compile};
use super::{Report, View, abs};
use crate::error::{Diagnostic, KbError, io_at};
use crate::format::time::py_isoformat;
use crate::fsio;
use crate::paths::Layout;
use crate::repo::{self, Repo};
use crate::settings::{Agent, Environment};
use anyhow::Result;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The project context template, embedded in the binary.
const CONTEXT_TEMPLATE: &str = include_str!("../../templates/context.md");

/// Returns what a new user does next, printed after a first `kb init`: `template` when init
/// wrote `context.md` from the template (whose guidance is a comment); with `agents_md`, AGENTS.md
/// is a compile target already.
fn next_steps(template: bool, agents_md: bool) -> String {
    let guidance =
        if template { "\n     (its guidance is a comment, which kb leaves out of what agents read)" } else { "" };
    let compile = if agents_md {
        "  2. Compile it into AGENTS.md:
       kb compile            (kb watch keeps it current)"
    } else {
        "  2. Compile it into the files agents read:
       kb config set context_targets '[\"AGENTS.md\",\"CLAUDE.md\"]'
       kb compile            (kb watch keeps them current)"
    };
    format!(
        "Next steps:
  1. Write what every agent should know in .co-cli/knowledge/context.md{guidance}
{compile}
  3. Let agents save and recall memories over MCP:
       claude mcp add kb -- kb mcp     (other agents: see docs/mcp.md)
  4. kb save \"We release from main only\" -t decision   then   kb recall release"
    )
}

/// A line kb adds to a file in the root unless one already says it.
struct Wanted {
    line: &'static str,
    /// Whether an existing line (trimmed) already says it.
    said_by: fn(&str) -> bool,
}

/// The lines kb adds to the root `.gitignore`: the derived cache and the local state.
const IGNORED: [Wanted; 2] = [
    Wanted { line: ".co-cli/cache/", said_by: |l| ignores(l, "cache") },
    Wanted { line: ".co-cli/state/", said_by: |l| ignores(l, "state") },
];

/// The line kb adds to the root `.gitattributes`: two branches' appended records merge without
/// a conflict (`kb check --fix` then removes a line both added).
const ATTRIBUTES: [Wanted; 1] =
    [Wanted { line: ".github/copilot-memories.jsonl merge=union", said_by: sets_jsonl_merge }];

/// Returns whether a `.gitignore` line ignores `.co-cli/<folder>/` (or all of `.co-cli/`).
fn ignores(line: &str, folder: &str) -> bool {
    let l = line.strip_prefix('/').unwrap_or(line);
    let l = l.strip_suffix('/').unwrap_or(l);
    l == ".co-cli" || l.strip_prefix(".co-cli/").is_some_and(|rest| rest == folder)
}

/// Returns whether a `.gitattributes` line sets (or unsets) the merge driver of the JSONL file:
/// a choice of the user's that kb leaves alone.
fn sets_jsonl_merge(line: &str) -> bool {
    let mut words = line.split_whitespace();
    let pattern = words.next().unwrap_or("");
    matches!(pattern, ".github/copilot-memories.jsonl" | "/.github/copilot-memories.jsonl")
        && words.any(|a| a == "merge" || a.starts_with("merge=") || a == "-merge" || a == "!merge")
}

/// What `kb init` did. JSON: `{"root":ABS, "created":[ABS...], "existing":[ABS...]}`, plus with
/// `--agents-md` `"agents_md": {"path":ABS, "status":"created"|"written"|"unchanged",
/// "settings":ABS|null}`.
pub struct InitReport {
    root: PathBuf,
    created: Vec<PathBuf>,
    existing: Vec<PathBuf>,
    /// Whether `context.md` was written from the template.
    template: bool,
    agents: Option<AgentsMd>,
    /// With `--agents`: the agents set, the settings file, and the compile that followed.
    projected: Option<Projected>,
}

/// What `kb init --agents` did.
pub struct Projected {
    agents: Vec<Agent>,
    settings: PathBuf,
    /// `None` when `--agents-md` compiled instead.
    compile: Option<CompileReport>,
}

/// Initializes the repository at `layout`; with `agents_md`, also writes the block into
/// `AGENTS.md` and registers it as a compile target.
pub fn init(
    layout: &Layout,
    now: DateTime<Utc>,
    env: &Environment,
    agents_md: bool,
    agents: Option<&[Agent]>,
) -> Result<InitReport> {
    let mut created: Vec<PathBuf> = Vec::new();
    let mut existing: Vec<PathBuf> = Vec::new();
    let mut template = false;
    let memories = layout.memories();
    let context = layout.project_context();
    let gitignore = layout.root.join(".gitignore");
    let gitattributes = layout.root.join(".gitattributes");
    for path in [&memories, &context, &gitignore, &gitattributes] {
        repo::guard(layout, path)?;
    }
    // Read before anything is created: a FIFO or a link out of the root is refused while the
    // repository is still untouched.
    let ignore_text = read_bytes(&gitignore, &layout.root)?;
    let attributes_text = read_bytes(&gitattributes, &layout.root)?;
    {
        // The lock also creates the cache folder (derived state that ignores itself in git),
        // which lets read commands keep an index.
        let _lock = repo::lock(layout)?;
        if memories.is_dir() {
            existing.push(memories);
        } else {
            std::fs::create_dir_all(&memories).map_err(io_at(&memories))?;
            created.push(memories);
        }
        if context.exists() {
            existing.push(context);
        } else {
            let text = CONTEXT_TEMPLATE.replace("{{updated}}", &py_isoformat(now));
            fsio::create_atomic(&context, text.as_bytes()).map_err(io_at(&context))?;
            created.push(context);
            template = true;
        }
        for (path, current, wanted) in
            [(gitignore, ignore_text, &IGNORED[..]), (gitattributes, attributes_text, &ATTRIBUTES[..])]
        {
            if add_lines(&path, current, wanted)? {
                created.push(path);
            } else {
                existing.push(path);
            }
        }
    }
    let mut projected = None;
    if let Some(list) = agents {
        // The setting first, so that the compile below (and every later one) writes their files.
        let path = layout.project_settings();
        repo::guard(layout, &path)?;
        let names: Vec<String> = list.iter().map(|a| format!("{:?}", a.as_str())).collect();
        {
            let _lock = repo::lock(layout)?;
            crate::settings::write_key(&path, "agents", &format!("[{}]", names.join(", ")))?;
        }
        let compile = if agents_md { None } else { Some(compile(&Repo::open(layout.clone(), now, env.clone())?)?) };
        projected = Some((list.to_vec(), path, compile));
    }
    let agents_md = if agents_md { Some(add_agents_md(&Repo::open(layout.clone(), now, env.clone())?)?) } else { None };
    let projected = projected.map(|(agents, settings, compile)| Projected { agents, settings, compile });
    Ok(InitReport { root: layout.root.clone(), created, existing, template, agents: agents_md, projected })
}

/// Reads a git file kb appends to (`.gitignore`, `.gitattributes`) as bytes: git reads them as
/// bytes, so they need not be UTF-8. Missing: empty. Only a regular file inside the root is read.
fn read_bytes(path: &Path, root: &Path) -> Result<Vec<u8>, KbError> {
    Ok(fsio::read_input(path, root).map_err(io_at(path))?.unwrap_or_default())
}

/// Appends to the file at `path` (created when missing), which holds `current`, each wanted line
/// no existing line says yet; every existing byte stays. Returns whether it changed the file.
fn add_lines(path: &Path, current: Vec<u8>, wanted: &[Wanted]) -> Result<bool, KbError> {
    let lines: Vec<String> =
        current.split(|&b| b == b'\n').map(|l| String::from_utf8_lossy(l).trim().to_string()).collect();
    let missing: Vec<&str> = wanted.iter().filter(|w| !lines.iter().any(|l| (w.said_by)(l))).map(|w| w.line).collect();
    if missing.is_empty() {
        return Ok(false);
    }
    let mut bytes = current;
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    for line in missing {
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    fsio::write_atomic(path, &bytes).map_err(io_at(path))?;
    Ok(true)
}

impl Serialize for InitReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct AgentsMdJson {
            path: String,
            status: &'static str,
            settings: Option<String>,
        }
        #[derive(Serialize)]
        struct InitJson<'a> {
            root: String,
            created: Vec<String>,
            existing: Vec<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            agents_md: Option<AgentsMdJson>,
            #[serde(skip_serializing_if = "Option::is_none")]
            agents: Option<Vec<&'static str>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            generated: Option<&'a [super::compile::GeneratedJson]>,
        }
        let show = |v: &[PathBuf]| v.iter().map(|p| abs(p)).collect();
        InitJson {
            root: abs(&self.root),
            created: show(&self.created),
            existing: show(&self.existing),
            agents_md: self.agents.as_ref().map(|a| AgentsMdJson {
                path: abs(&a.written.target.path),
                status: a.status(),
                settings: a.registered.as_deref().map(abs),
            }),
            agents: self.projected.as_ref().map(|p| p.agents.iter().map(|a| a.as_str()).collect()),
            generated: self.projected.as_ref().and_then(|p| p.compile.as_ref()).map(|c| c.generated.as_slice()),
        }
        .serialize(s)
    }
}

impl Report for InitReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let mark = v.style.ok("✓");
        for p in &self.created {
            let what = if p.ends_with(".gitignore") || p.ends_with(".gitattributes") { "Updated" } else { "Created" };
            writeln!(w, "{mark} {what} {}", v.rel(p))?;
        }
        let agents_changed = self.agents.as_ref().is_some_and(|a| a.status() != "unchanged" || a.registered.is_some())
            || self.projected.is_some();
        if self.created.is_empty() && !agents_changed {
            writeln!(w, "Already initialized in {}: nothing to do.", self.root.display())?;
        }
        if let Some(a) = &self.agents {
            let name = v.rel(&a.written.target.path);
            // An empty block says so: a fresh context.md holds only its guidance, a comment.
            let block = if a.written.block_bytes == 0 { "an empty context block" } else { "the context block" };
            match a.status() {
                "created" => writeln!(w, "{mark} Created {name} with {block}")?,
                "written" => writeln!(w, "{mark} Added {block} to {name}")?,
                _ => writeln!(w, "{name} already has the current context block")?,
            }
            if let Some(p) = &a.registered {
                writeln!(w, "{mark} Registered {name} in context_targets of {}", v.rel(p))?;
            }
        }
        if let Some(p) = &self.projected {
            let names: Vec<&str> = p.agents.iter().map(|a| a.as_str()).collect();
            writeln!(w, "{mark} Set agents to {} in {}", names.join(", "), v.rel(&p.settings))?;
            if let Some(c) = &p.compile {
                c.render(v, w)?;
            }
            writeln!(w, "See what each agent reads: kb agents")?;
        }
        if !self.created.is_empty() {
            writeln!(w, "\n{}", next_steps(self.template, self.agents.is_some()))?;
        }
        Ok(())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        match (&self.agents, &self.projected) {
            (Some(a), _) => &a.diagnostics,
            (None, Some(Projected { compile: Some(c), .. })) => c.diagnostics(),
            _ => &[],
        }
    }
}
