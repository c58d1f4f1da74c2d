//! `kb hooks`: where kb's hook entries stand in each agent's own hook file (status), `kb hooks
//! install [--check]` and `kb hooks remove` (docs/hooks.md). The files and their edits are
//! `hooks::install`'s; this module picks the agents, warns when the hooks' program would not be
//! found, and reports.
//!
//! JSON: `{"agents":[AGENT...], "notes":[S...]}`, each `AGENT` being `{"agent", "file" (relative
//! to the root), "path" (absolute), "state": "installed"|"stale"|"missing"|"foreign", "events":
//! [the agent's events that hold kb's entry], "program": the program kb's entries run or null,
//! "problem": why it is foreign (when it is)}`, plus, after install or remove, `"action":
//! "installed"|"updated"|"unchanged"|"removed"|"absent"|"failed"` and `"error"` when it failed.
//! The state is the one after the command. `notes` are what the agents ask after an install
//! (trusting new hooks).

use super::{Report, View, abs};
use crate::error::Diagnostic;
use crate::hooks::install::{self, Action, Outcome, State, Status};
use crate::hooks::{SPECS, spec};
use crate::repo::Repo;
use crate::settings::Agent;
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Which command the report answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Status,
    Check,
    Install,
    Remove,
}

/// The report of every `kb hooks` command (the JSON shape is in the module's documentation).
#[derive(Serialize)]
pub struct HooksReport {
    agents: Vec<AgentJson>,
    notes: Vec<String>,
    #[serde(skip)]
    kind: Kind,
    #[serde(skip)]
    warnings: Vec<Diagnostic>,
    #[serde(skip)]
    failed: Vec<String>,
}

/// One agent's line of the report.
#[derive(Serialize)]
struct AgentJson {
    agent: &'static str,
    file: &'static str,
    path: String,
    state: &'static str,
    events: Vec<&'static str>,
    program: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    action: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// How many events the agent's table has (for the text).
    #[serde(skip)]
    expected: usize,
}

/// Parses an agent name of `kb hooks install|remove`: one of the table's, with hooks (a usage
/// error otherwise, naming the valid ones).
pub fn hooked_agent(raw: &str) -> Result<Agent, String> {
    let names = SPECS.iter().map(|s| s.agent.as_str()).collect::<Vec<_>>().join(", ");
    match Agent::parse(raw) {
        Some(a) if spec(a).is_some() => Ok(a),
        Some(a) => Err(format!("{} has no hooks kb can install: the agents with hooks are {names}", a.as_str())),
        None => Err(format!("unknown agent {raw:?}: the agents with hooks are {names}")),
    }
}

/// Returns the agents `kb hooks install` takes without names: those of the `agents` setting
/// that have hooks, else `claude`.
pub fn default_agents(repo: &Repo) -> Vec<Agent> {
    let mut agents: Vec<Agent> = repo.settings.agents.value.iter().copied().filter(|&a| spec(a).is_some()).collect();
    if agents.is_empty() {
        agents.push(Agent::Claude);
    }
    agents
}

/// Returns `agents` in the table's order, each once.
fn ordered(agents: &[Agent]) -> Vec<Agent> {
    SPECS.iter().map(|s| s.agent).filter(|a| agents.contains(a)).collect()
}

/// Returns the `--kb` path as the hooks' command writes it (it is absolute, made so by the
/// command line); a path that is not UTF-8 is refused.
fn kb_text(kb: Option<&Path>) -> Result<Option<&str>> {
    match kb {
        None => Ok(None),
        Some(p) => Ok(Some(p.to_str().ok_or_else(|| {
            crate::error::KbError::rejected("--kb", format!("--kb {}: the path is not UTF-8", p.display()))
        })?)),
    }
}

/// `kb hooks`: every agent of the table, installed or not.
pub fn status(repo: &Repo) -> HooksReport {
    let statuses = SPECS.iter().filter_map(|s| install::status(&repo.layout, s.agent, None)).collect();
    report(repo, Kind::Status, statuses, Vec::new())
}

/// `kb hooks install --check`: the agents' hooks as install would leave them (with `kb`, the
/// `--kb` path), writing nothing; the report fails when any is not installed.
pub fn check(repo: &Repo, agents: &[Agent], kb: Option<&Path>) -> Result<HooksReport> {
    let kb = kb_text(kb)?;
    let statuses = ordered(agents).into_iter().filter_map(|a| install::status(&repo.layout, a, kb)).collect();
    Ok(report(repo, Kind::Check, statuses, Vec::new()))
}

/// `kb hooks install`: writes kb's entries for `agents` (journaled, one `kb undo` entry).
pub fn install(repo: &Repo, agents: &[Agent], kb: Option<&Path>) -> Result<HooksReport> {
    let kb = kb_text(kb)?;
    let outcomes = install::install(repo, &ordered(agents), kb)?;
    Ok(from_outcomes(repo, Kind::Install, outcomes, &[]))
}

/// `kb hooks remove`: takes kb's entries out for `agents`, or, with none named, for every agent
/// of the table (a file kb cannot read is then a warning, not a failure).
pub fn remove(repo: &Repo, agents: &[Agent]) -> Result<HooksReport> {
    let named = ordered(agents);
    let all: Vec<Agent> = SPECS.iter().map(|s| s.agent).collect();
    let outcomes = install::remove(repo, if named.is_empty() { &all } else { &named })?;
    Ok(from_outcomes(repo, Kind::Remove, outcomes, &named))
}

fn from_outcomes(repo: &Repo, kind: Kind, outcomes: Vec<Outcome>, named: &[Agent]) -> HooksReport {
    let mut actions = Vec::new();
    let mut statuses = Vec::new();
    let mut skipped = Vec::new();
    for o in outcomes {
        // With no agent named, remove passes over a file it cannot read: kb never wrote into it.
        let skip = kind == Kind::Remove && named.is_empty() && o.action == Action::Failed && o.before == State::Foreign;
        if skip {
            let why = o.error.unwrap_or_default();
            skipped.push(Diagnostic::warning(None, format!("{}: skipped: {why}", o.status.agent.as_str())));
            actions.push((Action::Absent, None));
        } else {
            actions.push((o.action, o.error));
        }
        statuses.push(o.status);
    }
    let mut r = report(repo, kind, statuses, actions);
    r.warnings.extend(skipped);
    if kind == Kind::Install {
        let wrote = |agent: &str| {
            r.agents.iter().any(|a| a.agent == agent && matches!(a.action, Some("installed" | "updated")))
        };
        let mut notes = Vec::new();
        if wrote("codex") {
            notes.push(CODEX_TRUST.to_string());
        }
        if wrote("gemini") {
            notes.push(GEMINI_TRUST.to_string());
        }
        r.notes = notes;
    }
    r
}

/// What Codex asks of new hooks (docs/hooks.md, Trusting the hooks).
const CODEX_TRUST: &str = "Codex runs a new or changed hook only once you trust it (it keeps trust by the hook's hash), and loads a project's hooks only when the project is trusted: start codex here, trust the folder, then review and trust kb's hooks in /hooks.";
/// What Gemini CLI asks of new hooks.
const GEMINI_TRUST: &str = "Gemini CLI fingerprints a project's hooks and warns about new ones: trust kb's hooks once when it asks (a changed command counts as a new hook).";

fn report(repo: &Repo, kind: Kind, statuses: Vec<Status>, actions: Vec<(Action, Option<String>)>) -> HooksReport {
    let mut failed = Vec::new();
    let mut agents = Vec::new();
    for (i, s) in statuses.into_iter().enumerate() {
        let (action, error) = match actions.get(i) {
            Some((a, e)) => (Some(a.as_str()), e.clone()),
            None => (None, None),
        };
        if let Some(e) = &error {
            failed.push(format!("{}: {e}", s.agent.as_str()));
        }
        let expected = spec(s.agent).map_or(0, |sp| sp.events.len());
        agents.push(AgentJson {
            agent: s.agent.as_str(),
            file: s.file,
            path: abs(&repo.layout.root.join(s.file)),
            state: s.state.as_str(),
            events: s.events,
            program: s.program,
            problem: s.problem,
            action,
            error,
            expected,
        });
    }
    let warnings = program_warnings(&repo.layout.root, &agents);
    HooksReport { agents, notes: Vec::new(), kind, warnings, failed }
}

/// Returns one warning per program kb's entries run that would not be found: `kb` not on
/// `PATH`, or a path that is not an executable file.
fn program_warnings(root: &Path, agents: &[AgentJson]) -> Vec<Diagnostic> {
    let mut programs: Vec<(&str, Vec<&str>)> = Vec::new();
    for a in agents {
        let Some(p) = a.program.as_deref() else { continue };
        match programs.iter_mut().find(|(q, _)| *q == p) {
            Some((_, names)) => names.push(a.agent),
            None => programs.push((p, vec![a.agent])),
        }
    }
    let path_var = crate::paths::env("PATH").unwrap_or_default();
    let mut out = Vec::new();
    for (program, names) in programs {
        let who = names.join(", ");
        let why = if program.contains('/') {
            (!executable(&root.join(program))).then(|| format!("the hooks of {who} run {program}, which is not an executable file: they will fail (run `kb hooks install --kb PATH` with the path to kb)"))
        } else {
            let found =
                path_var.split(':').filter(|d| !d.is_empty()).any(|d| executable(&PathBuf::from(d).join(program)));
            (!found).then(|| format!("the hooks of {who} run `{program}`, which is not on PATH: an agent started with this PATH will not find it (put kb on PATH, or run `kb hooks install --kb PATH`)"))
        };
        out.extend(why.map(|w| Diagnostic::warning(None, w)));
    }
    out
}

/// Whether `path` is a file someone may execute.
fn executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

impl HooksReport {
    /// Returns each agent's status line: agent, file, state, events.
    fn write_table(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let width = self.agents.iter().map(|a| a.file.len()).max().unwrap_or(0);
        for a in &self.agents {
            let events = match a.state {
                "foreign" => String::new(),
                _ if a.events.is_empty() => "-".to_string(),
                _ => format!("{} ({}/{})", a.events.join(", "), a.events.len(), a.expected),
            };
            let line = format!("{:<8} {:<width$}  {:<9}  {events}", a.agent, a.file, a.state);
            writeln!(w, "{}", line.trim_end())?;
            if let Some(p) = &a.problem {
                writeln!(w, "         {}", v.clean(p))?;
            }
        }
        Ok(())
    }
}

impl Report for HooksReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        match self.kind {
            Kind::Status | Kind::Check => {
                self.write_table(v, w)?;
                if self.kind == Kind::Check && self.succeeded() {
                    writeln!(w, "{} kb's hooks are installed.", v.style.ok("✓"))?;
                }
            }
            Kind::Install | Kind::Remove => {
                for a in &self.agents {
                    let action = a.action.unwrap_or_default();
                    let mark = match action {
                        "installed" | "updated" | "removed" => v.style.ok("✓"),
                        "failed" => "✗".to_string(),
                        _ => " ".to_string(),
                    };
                    let what = match action {
                        "installed" | "updated" => format!("{action} in {} ({})", a.file, a.events.join(", ")),
                        "unchanged" => format!("unchanged: {} is up to date", a.file),
                        "removed" => format!("removed from {}", a.file),
                        "absent" => format!("nothing to remove in {}", a.file),
                        _ => format!("{} not changed", a.file),
                    };
                    writeln!(w, "{mark} {}: {what}", a.agent)?;
                }
                for n in &self.notes {
                    writeln!(w, "Note: {n}")?;
                }
            }
        }
        Ok(())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.warnings
    }

    fn errors(&self) -> Vec<String> {
        let todo: Vec<&AgentJson> = self.agents.iter().filter(|a| a.state != "installed").collect();
        if self.kind != Kind::Check || todo.is_empty() {
            return self.failed.clone();
        }
        let states: Vec<String> = todo.iter().map(|a| format!("{} ({})", a.agent, a.state)).collect();
        let names: Vec<&str> = todo.iter().map(|a| a.agent).collect();
        vec![format!(
            "kb's hooks are not as install would write them for {}: run `kb hooks install {}`",
            states.join(", "),
            names.join(" ")
        )]
    }

    fn succeeded(&self) -> bool {
        match self.kind {
            Kind::Status => true,
            Kind::Check => self.agents.iter().all(|a| a.state == "installed"),
            Kind::Install | Kind::Remove => self.failed.is_empty(),
        }
    }
}
