//! kb's entries in the agents' own hook files (docs/hooks.md): what is there ([`status`]), what
//! `kb hooks install` and `kb hooks remove` change, and the change itself, journaled as one
//! `kb undo` entry.
//!
//! kb's entries are recognised by their command alone ([`super::parse_command`]), in each shape of
//! [`Shape`]; everything else in a file is the person's and is kept, in order and byte for byte
//! ([`crate::format::jsonorder`]). Install replaces a stale entry of kb's where it is (a wrong
//! verb, time limit or path) and drops repeats, so a second install changes nothing; remove takes
//! out kb's entries and what their removal left empty that kb's shape made (a matcher-less group,
//! an event, `hooks`, a file holding nothing else). A file kb cannot read as the agent's (not
//! JSON, a folder, read-only, a script of the person's where kb's would go) is left as it is, and
//! the other agents' files are still handled. Printing and choosing the agents is `ops::hooks`.

use super::{Shape, Spec, command, parse_command, program};
use crate::error::KbError;
use crate::format::jsonorder::{Document, Value};
use crate::journal::{Change, Txn};
use crate::kinds::HookVerb;
use crate::paths::Layout;
use crate::repo::Repo;
use crate::settings::Agent;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Where kb's hooks stand in one agent's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Every event has kb's entry, as install would write it.
    Installed,
    /// Some of kb's entries are there, but not all, or not as install would write them.
    Stale,
    /// None of kb's entries is there (or the file is not).
    Missing,
    /// kb cannot use the file: not JSON, not an object where the shape needs one, not a regular
    /// file, or (Cline) a script of the person's where kb's would go.
    Foreign,
}

impl State {
    /// Returns the state as `kb hooks` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Installed => "installed",
            State::Stale => "stale",
            State::Missing => "missing",
            State::Foreign => "foreign",
        }
    }
}

/// One agent's hooks as found.
#[derive(Debug, Clone)]
pub struct Status {
    pub agent: Agent,
    /// The file (Cline: the folder) relative to the root, as in [`super::SPECS`].
    pub file: &'static str,
    pub state: State,
    /// The agent's events that hold an entry of kb's (current or stale), in the table's order.
    pub events: Vec<&'static str>,
    /// The program kb's entries run (`kb` or a path to it), when there is one.
    pub program: Option<String>,
    /// Why the state is [`State::Foreign`]: the file at fault and what is wrong, for a message.
    pub problem: Option<String>,
}

/// What a command did to one agent's hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Install wrote kb's entries where there were none.
    Installed,
    /// Install brought stale entries up to date (or added the missing events).
    Updated,
    /// Install found everything in place and wrote nothing.
    Unchanged,
    /// Remove took kb's entries out.
    Removed,
    /// Remove found none of kb's entries and wrote nothing.
    Absent,
    /// Nothing was written: the file could not be used or written ([`Outcome::error`]).
    Failed,
}

impl Action {
    /// Returns the action as the report names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Installed => "installed",
            Action::Updated => "updated",
            Action::Unchanged => "unchanged",
            Action::Removed => "removed",
            Action::Absent => "absent",
            Action::Failed => "failed",
        }
    }
}

/// One agent's result of `install` or `remove`: its state before, its status after, what was
/// done, and why not when it failed.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub before: State,
    pub status: Status,
    pub action: Action,
    pub error: Option<String>,
}

/// The change kb would make to one agent's file or files.
#[derive(Debug)]
enum Planned {
    /// Write the bytes; `exec`: make the file executable (a Cline script).
    Write {
        path: PathBuf,
        bytes: Vec<u8>,
        exec: bool,
    },
    Remove(PathBuf),
}

/// An agent's files as found, and what a goal would change.
struct Examined {
    status: Status,
    changes: Vec<Planned>,
    /// Why the goal cannot be reached without touching what is not kb's: nothing is written.
    blocked: Option<String>,
}

/// What a command wants of an agent's hooks.
#[derive(Debug, Clone, Copy)]
enum Goal<'a> {
    /// kb's entries, running `kb` (the path of `--kb`, else the program kb's entries already run,
    /// else `kb`).
    Install(Option<&'a str>),
    Remove,
}

/// Returns the hooks of `agent` in the repository at `layout`, judged against what install would
/// write with `kb` (`--kb`; `None`: the program kb's entries already run, else `kb`). `None` for
/// an agent without hooks.
pub fn status(layout: &Layout, agent: Agent, kb: Option<&str>) -> Option<Status> {
    let spec = super::spec(agent)?;
    Some(examine(layout, spec, Goal::Install(kb)).status)
}

/// Installs kb's hooks for `agents` (each one with hooks) under the repository lock, every file
/// change in one journal entry; `kb` is `--kb`. An agent whose file cannot be used fails alone
/// ([`Action::Failed`]); the error is only for the lock and the journal.
pub fn install(repo: &Repo, agents: &[Agent], kb: Option<&str>) -> Result<Vec<Outcome>, KbError> {
    let names: Vec<&str> = agents.iter().map(|a| a.as_str()).collect();
    let what = format!("installed kb's hooks for {}", names.join(", "));
    run(repo, agents, Goal::Install(kb), &what)
}

/// Removes kb's entries for `agents` under the repository lock, in one journal entry.
pub fn remove(repo: &Repo, agents: &[Agent]) -> Result<Vec<Outcome>, KbError> {
    let names: Vec<&str> = agents.iter().map(|a| a.as_str()).collect();
    let what = format!("removed kb's hooks for {}", names.join(", "));
    run(repo, agents, Goal::Remove, &what)
}

fn run(repo: &Repo, agents: &[Agent], goal: Goal<'_>, what: &str) -> Result<Vec<Outcome>, KbError> {
    let layout = &repo.layout;
    let lock = repo.lock()?;
    let mut txn = Txn::begin(repo, lock, "hooks", what);
    let mut outcomes = Vec::new();
    for spec in agents.iter().filter_map(|&a| super::spec(a)) {
        let ex = examine(layout, spec, goal);
        let before = ex.status.state;
        let fail = |status: Status, why: String| Outcome { before, status, action: Action::Failed, error: Some(why) };
        if let Some(why) = ex.blocked {
            outcomes.push(fail(ex.status, why));
            continue;
        }
        let action = match (goal, ex.changes.is_empty(), before) {
            (Goal::Install(_), true, _) => Action::Unchanged,
            (Goal::Install(_), false, State::Missing) => Action::Installed,
            (Goal::Install(_), false, _) => Action::Updated,
            (Goal::Remove, true, _) => Action::Absent,
            (Goal::Remove, false, _) => Action::Removed,
        };
        if let Err(why) = apply(repo, &mut txn, &ex.changes) {
            let after = examine(layout, spec, goal).status;
            outcomes.push(fail(after, why));
            continue;
        }
        let after = examine(layout, spec, Goal::Install(None)).status;
        outcomes.push(Outcome { before, status: after, action, error: None });
    }
    txn.finish()?;
    Ok(outcomes)
}

/// Makes one agent's changes: creates the folders, writes and removes (recorded first), makes
/// scripts executable, and removes the folders of `spec` that a removal left empty.
fn apply(repo: &Repo, txn: &mut Txn, changes: &[Planned]) -> Result<(), String> {
    for c in changes {
        if let Planned::Write { path, .. } = c
            && let Some(dir) = path.parent()
        {
            repo.guard(dir).map_err(|e| e.to_string())?;
            fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", rel(&repo.layout, dir)))?;
        }
    }
    let list: Vec<Change<'_>> = changes
        .iter()
        .map(|c| match c {
            Planned::Write { path, bytes, .. } => Change::Write(path, bytes),
            Planned::Remove(path) => Change::Remove(path),
        })
        .collect();
    txn.apply(&list).map_err(|e| format!("not written: {e}"))?;
    for c in changes {
        match c {
            Planned::Write { path, exec: true, .. } => {
                fs::set_permissions(path, fs::Permissions::from_mode(0o755))
                    .map_err(|e| format!("cannot make {} executable: {e}", rel(&repo.layout, path)))?;
            }
            Planned::Remove(path) => remove_empty_dirs(&repo.layout.root, path),
            Planned::Write { .. } => {}
        }
    }
    Ok(())
}

/// Removes the folders between `path` and `root` that are empty now, nearest first (a folder
/// that is not empty stops it).
fn remove_empty_dirs(root: &Path, path: &Path) {
    for dir in path.ancestors().skip(1) {
        if dir == root || !dir.starts_with(root) || fs::remove_dir(dir).is_err() {
            break;
        }
    }
}

/// Returns `path` relative to the root, for messages.
fn rel(layout: &Layout, path: &Path) -> String {
    path.strip_prefix(&layout.root).unwrap_or(path).display().to_string()
}

/// Reads an agent's files and works out what `goal` changes.
fn examine(layout: &Layout, spec: &'static Spec, goal: Goal<'_>) -> Examined {
    let found = match spec.shape {
        Shape::Scripts => examine_scripts(layout, spec, goal),
        _ => examine_json(layout, spec, goal),
    };
    match found {
        Ok(ex) => ex,
        Err(problem) => Examined {
            status: Status {
                agent: spec.agent,
                file: spec.path,
                state: State::Foreign,
                events: Vec::new(),
                program: None,
                problem: Some(problem.clone()),
            },
            changes: Vec::new(),
            blocked: Some(format!("{problem}; nothing written")),
        },
    }
}

/// Fails unless every folder on the way from the root to `path` is a folder (or not there yet),
/// inside the root.
fn check_way(layout: &Layout, path: &Path) -> Result<(), String> {
    let mut dirs: Vec<&Path> = path.ancestors().skip(1).take_while(|d| d.starts_with(&layout.root)).collect();
    dirs.reverse();
    for dir in dirs.into_iter().skip(1) {
        match fs::metadata(dir) {
            Ok(m) if !m.is_dir() => return Err(format!("{} is not a folder", rel(layout, dir))),
            _ => {}
        }
    }
    crate::repo::guard(layout, path).map_err(|e| e.to_string())
}

/// Reads a file kb may change: `None` when it is not there. A folder, a symlink, anything but a
/// regular file, or one that cannot be read is an error naming it.
fn read(layout: &Layout, path: &Path) -> Result<Option<(Vec<u8>, fs::Metadata)>, String> {
    let shown = rel(layout, path);
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    if meta.is_dir() {
        return Err(format!("{shown} is a folder, not a file"));
    }
    if meta.file_type().is_symlink() {
        return Err(format!("{shown} is a symlink, which kb does not replace"));
    }
    match crate::fsio::read_input(path, &layout.root) {
        Ok(Some(bytes)) => Ok(Some((bytes, meta))),
        Ok(None) => Ok(None),
        Err(e) => Err(format!("cannot read {shown}: {e}")),
    }
}

/// Fails when a change would touch a file that is read-only.
fn check_writable(layout: &Layout, changes: &[Planned]) -> Result<(), String> {
    for c in changes {
        let (Planned::Write { path, .. } | Planned::Remove(path)) = c;
        if fs::symlink_metadata(path).is_ok_and(|m| m.permissions().readonly()) {
            return Err(format!(
                "{} is read-only: nothing written (make it writable, then run again)",
                rel(layout, path)
            ));
        }
    }
    Ok(())
}

/// A hook entry of kb's found in a file: its event, what it runs, and where it is.
struct Found {
    event: String,
    program: String,
}

/// The JSON field that holds a flat entry's command.
fn command_field(shape: Shape) -> &'static str {
    match shape {
        Shape::CopilotFlat => "bash",
        _ => "command",
    }
}

/// Returns kb's command in `entry` (a handler of the nested shape, or a flat entry), if it holds
/// one: Copilot's `bash`, or `command` (which Copilot also reads).
fn kb_command(entry: &Value, shape: Shape) -> Option<&str> {
    let field = command_field(shape);
    [field, "command"].into_iter().filter_map(|f| entry.get(f)?.as_str()).find(|c| parse_command(c).is_some())
}

/// Returns the entry kb writes for `verb` with limit `secs`.
fn entry(shape: Shape, cmd: &str, secs: u32) -> Value {
    let pair = |k: &str, v: Value| (k.to_string(), v);
    match shape {
        Shape::Nested { timeout_ms } => Value::Object(vec![
            pair("type", Value::str("command")),
            pair("command", Value::str(cmd)),
            pair("timeout", Value::int(i64::from(secs) * if timeout_ms { 1000 } else { 1 })),
        ]),
        Shape::CopilotFlat => Value::Object(vec![
            pair("type", Value::str("command")),
            pair("bash", Value::str(cmd)),
            pair("timeoutSec", Value::int(i64::from(secs))),
        ]),
        Shape::CursorFlat | Shape::Scripts => Value::Object(vec![pair("command", Value::str(cmd))]),
    }
}

/// Whether `found` is as good as `want`: the same fields kb writes hold the same values (a key a
/// person added to kb's entry is kept).
fn current(found: &Value, want: &Value) -> bool {
    want.as_object().is_some_and(|w| w.iter().all(|(k, v)| found.get(k) == Some(v)))
}

/// Whether `root`'s shape nests handlers in matcher groups.
fn nested(shape: Shape) -> bool {
    matches!(shape, Shape::Nested { .. })
}

/// Returns the entries of one event: for the nested shape every handler of every group, each
/// with its group's index; for the flat shapes each entry (group index `None`).
fn handlers(list: &[Value], shape: Shape) -> Vec<(usize, Option<usize>, &Value)> {
    let mut out = Vec::new();
    for (i, item) in list.iter().enumerate() {
        if nested(shape) {
            if let Some(hs) = item.get("hooks").and_then(Value::as_array) {
                out.extend(hs.iter().enumerate().map(|(j, h)| (i, Some(j), h)));
            }
        } else {
            out.push((i, None, item));
        }
    }
    out
}

/// Lists kb's entries in a parsed file (`hooks.<Event>`), in file order. `hooks` that is not an
/// object is an error (kb could not add its own).
fn found_in(v: &Value, shape: Shape) -> Result<Vec<Found>, String> {
    let Some(hooks) = v.get("hooks") else { return Ok(Vec::new()) };
    let members = hooks.as_object().ok_or("`hooks` is not an object")?;
    let mut found = Vec::new();
    for (event, list) in members {
        let Some(list) = list.as_array() else { continue };
        for (_, _, h) in handlers(list, shape) {
            if let Some(program) = kb_command(h, shape).and_then(program) {
                found.push(Found { event: event.clone(), program });
            }
        }
    }
    Ok(found)
}

/// Returns `v` with kb's entries for `spec`, each running `prog`.
fn installed(v: &Value, spec: &Spec, prog: &str) -> Result<Value, String> {
    let shape = spec.shape;
    let mut v = v.clone();
    let root = v.as_object_mut().ok_or("not a JSON object")?;
    if !nested(shape) && !root.iter().any(|(k, _)| k == "version") {
        root.insert(0, ("version".into(), Value::int(1)));
    }
    if !root.iter().any(|(k, _)| k == "hooks") {
        root.push(("hooks".into(), Value::Object(Vec::new())));
    }
    let hooks = v.get_mut("hooks").and_then(Value::as_object_mut).ok_or("`hooks` is not an object")?;
    for &(event, verb, secs) in spec.events {
        let want = entry(shape, &command(prog, verb, spec.agent), secs);
        if !hooks.iter().any(|(k, _)| k == event) {
            hooks.push((event.to_string(), Value::Array(Vec::new())));
        }
        let Some((_, list)) = hooks.iter_mut().rev().find(|(k, _)| k == event) else { continue };
        let list = list.as_array_mut().ok_or_else(|| format!("`hooks.{event}` is not a list"))?;
        let ours: Vec<(usize, Option<usize>, bool)> = handlers(list, shape)
            .into_iter()
            .filter(|(_, _, h)| kb_command(h, shape).is_some())
            .map(|(i, j, h)| (i, j, current(h, &want)))
            .collect();
        let Some(&keep) = ours.iter().find(|o| o.2).or(ours.first()) else {
            list.push(if nested(shape) { group(want) } else { want });
            continue;
        };
        if !keep.2 {
            *slot(list, keep.0, keep.1) = want;
        }
        let drop: Vec<(usize, Option<usize>)> =
            ours.iter().filter(|o| (o.0, o.1) != (keep.0, keep.1)).map(|o| (o.0, o.1)).collect();
        take_out(list, &drop);
    }
    Ok(v)
}

/// Returns kb's group for one handler: `{"hooks":[handler]}`, no matcher.
fn group(handler: Value) -> Value {
    Value::Object(vec![("hooks".into(), Value::Array(vec![handler]))])
}

/// Returns the entry at `(i, j)` of an event's list (`j`: the handler within group `i`).
fn slot(list: &mut [Value], i: usize, j: Option<usize>) -> &mut Value {
    let item = &mut list[i];
    match j {
        Some(j) => &mut item.get_mut("hooks").and_then(Value::as_array_mut).expect("a group found with its hooks")[j],
        None => item,
    }
}

/// Removes the entries at `at` (as [`handlers`] gave them) from an event's list; a group left
/// with no handler and nothing but `hooks` (kb's shape) goes too.
fn take_out(list: &mut Vec<Value>, at: &[(usize, Option<usize>)]) {
    let mut emptied = Vec::new();
    for &(i, j) in at.iter().rev() {
        match j {
            None => {
                list.remove(i);
            }
            Some(j) => {
                if let Some(hs) = list[i].get_mut("hooks").and_then(Value::as_array_mut) {
                    hs.remove(j);
                    if hs.is_empty() {
                        emptied.push(i);
                    }
                }
            }
        }
    }
    emptied.sort_unstable();
    emptied.dedup();
    for &i in emptied.iter().rev() {
        if list[i].as_object().is_some_and(|m| m.len() == 1) {
            list.remove(i);
        }
    }
}

/// Returns `v` without any entry of kb's (any verb, any agent), and without what their removal
/// left empty: an event's list, then `hooks`.
fn removed(v: &Value, shape: Shape) -> Value {
    let mut v = v.clone();
    let Some(hooks) = v.get_mut("hooks").and_then(Value::as_object_mut) else { return v };
    let mut emptied = Vec::new();
    for (k, (_, list)) in hooks.iter_mut().enumerate() {
        let Some(list) = list.as_array_mut() else { continue };
        let ours: Vec<(usize, Option<usize>)> = handlers(list, shape)
            .into_iter()
            .filter(|(_, _, h)| kb_command(h, shape).is_some())
            .map(|(i, j, _)| (i, j))
            .collect();
        if !ours.is_empty() {
            take_out(list, &ours);
            if list.is_empty() {
                emptied.push(k);
            }
        }
    }
    let touched = !emptied.is_empty();
    for &k in emptied.iter().rev() {
        hooks.remove(k);
    }
    if touched && hooks.is_empty() {
        v.remove("hooks");
    }
    v
}

/// Whether a file holds nothing but what kb's shape needs (`{}`, or `{"version":1}` for the flat
/// shapes): after a removal it may go.
fn empty_like(v: &Value) -> bool {
    v.as_object().is_some_and(|m| m.iter().all(|(k, val)| k == "version" && val.as_i64() == Some(1)))
}

/// Reads a JSON hook file and works out its status and what `goal` changes.
fn examine_json(layout: &Layout, spec: &'static Spec, goal: Goal<'_>) -> Result<Examined, String> {
    let path = layout.root.join(spec.path);
    let shown = spec.path;
    check_way(layout, &path)?;
    let file = read(layout, &path)?;
    let bytes = file.as_ref().map(|f| f.0.as_slice()).unwrap_or_default();
    let text =
        std::str::from_utf8(bytes).map_err(|e| format!("{shown} is not UTF-8 text (at byte {})", e.valid_up_to()))?;
    let doc = Document::parse(text).map_err(|e| format!("{shown}: {e}"))?;
    let old = match doc.value() {
        None => Value::Object(Vec::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => return Err(format!("{shown} is not a JSON object")),
    };
    let found = found_in(&old, spec.shape).map_err(|e| format!("{shown}: {e}"))?;
    let kb = match goal {
        Goal::Install(Some(kb)) => kb.to_string(),
        _ => found.first().map_or_else(|| "kb".to_string(), |f| f.program.clone()),
    };
    let want = installed(&old, spec, &kb).map_err(|e| format!("{shown}: {e}"))?;
    let events: Vec<&'static str> =
        spec.events.iter().map(|e| e.0).filter(|e| found.iter().any(|f| f.event == *e)).collect();
    let state = if events.is_empty() {
        State::Missing
    } else if want == old {
        State::Installed
    } else {
        State::Stale
    };
    let target = match goal {
        Goal::Install(_) => want,
        Goal::Remove => removed(&old, spec.shape),
    };
    let mut changes = Vec::new();
    if target != old {
        if matches!(goal, Goal::Remove) && empty_like(&target) {
            changes.push(Planned::Remove(path.clone()));
        } else {
            changes.push(Planned::Write { path: path.clone(), bytes: doc.render(&target).into_bytes(), exec: false });
        }
    }
    let status = Status {
        agent: spec.agent,
        file: spec.path,
        state,
        events,
        program: found.first().map(|f| f.program.clone()),
        problem: None,
    };
    let blocked = check_writable(layout, &changes).err();
    Ok(Examined { status, changes, blocked })
}

/// Returns the script kb writes for `verb` on Cline's `event`.
pub fn script(kb: &str, event: &str, verb: HookVerb) -> String {
    format!(
        "#!/bin/sh\n# kb: Cline's {event} hook runs `kb hook {}` (written by `kb hooks install`, deleted by `kb hooks remove`)\nexec {}\n",
        verb.as_str(),
        command(kb, verb, Agent::Cline)
    )
}

/// Returns the program of a script that is kb's: a shebang, comments and blank lines, and one
/// `exec` of a kb hook command; anything else makes it the person's (`None`).
fn script_program(text: &str) -> Option<String> {
    let mut prog = None;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cmd = line.strip_prefix("exec ")?;
        if prog.is_some() {
            return None;
        }
        prog = Some(program(cmd)?);
    }
    prog
}

/// One script of Cline's folder as found.
enum Script {
    Absent,
    Kb { bytes: Vec<u8>, exec: bool, program: String },
    Foreign(String),
}

/// Reads Cline's scripts and works out their status and what `goal` changes.
fn examine_scripts(layout: &Layout, spec: &'static Spec, goal: Goal<'_>) -> Result<Examined, String> {
    let dir = layout.root.join(spec.path);
    check_way(layout, &dir.join("x"))?;
    let mut scripts = Vec::new();
    for &(event, verb, _) in spec.events {
        let path = dir.join(event);
        let found = match read(layout, &path) {
            Ok(None) => Script::Absent,
            Ok(Some((bytes, meta))) => match script_program(&String::from_utf8_lossy(&bytes)) {
                Some(program) => Script::Kb { exec: meta.permissions().mode() & 0o111 != 0, bytes, program },
                None => Script::Foreign(format!(
                    "{} is not kb's script, and kb does not replace it (move it away, or have it run `kb hook {} --agent cline`)",
                    rel(layout, &path),
                    verb.as_str()
                )),
            },
            Err(why) => Script::Foreign(why),
        };
        scripts.push((event, verb, path, found));
    }
    let programs: Vec<&String> = scripts
        .iter()
        .filter_map(|s| match &s.3 {
            Script::Kb { program, .. } => Some(program),
            _ => None,
        })
        .collect();
    let kb = match goal {
        Goal::Install(Some(kb)) => kb.to_string(),
        _ => programs.first().map_or_else(|| "kb".to_string(), |p| p.to_string()),
    };
    let (mut install, mut remove, mut foreign) = (Vec::new(), Vec::new(), Vec::new());
    for (event, verb, path, found) in &scripts {
        let want = script(&kb, event, *verb).into_bytes();
        match found {
            Script::Absent => install.push(Planned::Write { path: path.clone(), bytes: want, exec: true }),
            Script::Kb { bytes, exec, .. } => {
                if *bytes != want || !exec {
                    install.push(Planned::Write { path: path.clone(), bytes: want, exec: true });
                }
                remove.push(Planned::Remove(path.clone()));
            }
            Script::Foreign(why) => foreign.push(why.clone()),
        }
    }
    let events: Vec<&'static str> = scripts.iter().filter(|s| matches!(s.3, Script::Kb { .. })).map(|s| s.0).collect();
    let problem = (!foreign.is_empty()).then(|| foreign.join("; "));
    let state = if problem.is_some() {
        State::Foreign
    } else if events.is_empty() {
        State::Missing
    } else if install.is_empty() {
        State::Installed
    } else {
        State::Stale
    };
    let (changes, blocked) = match goal {
        Goal::Install(_) => {
            let blocked = match &problem {
                Some(p) => Some(format!("{p}; nothing written")),
                None => check_writable(layout, &install).err(),
            };
            (install, blocked)
        }
        Goal::Remove => {
            let blocked = check_writable(layout, &remove).err();
            (remove, blocked)
        }
    };
    let status = Status {
        agent: spec.agent,
        file: spec.path,
        state,
        events,
        program: programs.first().map(|p| p.to_string()),
        problem,
    };
    Ok(Examined { status, changes, blocked })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::spec;

    fn parse(text: &str) -> Value {
        Document::parse(text).unwrap().value().unwrap().clone()
    }

    #[test]
    fn install_adds_one_group_per_event_and_replaces_stale_entries_in_place() {
        let claude = spec(Agent::Claude).unwrap();
        let old = parse(
            r#"{"hooks":{"SessionStart":[{"matcher":"startup","hooks":[{"type":"command","command":"echo hi"},{"type":"command","command":"kb hook prompt --agent claude","timeout":1}]}],
               "UserPromptSubmit":[{"hooks":[{"type":"command","command":"kb hook prompt --agent claude","timeout":5}]},{"hooks":[{"type":"command","command":"/x/kb hook prompt --agent claude","timeout":5}]}]}}"#,
        );
        let v = installed(&old, claude, "kb").unwrap();
        let start = v.get("hooks").unwrap().get("SessionStart").unwrap().as_array().unwrap();
        // The stale entry was replaced where it was, next to the person's.
        assert_eq!(start.len(), 1);
        let hs = start[0].get("hooks").unwrap().as_array().unwrap();
        assert_eq!(hs[0].get("command").and_then(Value::as_str), Some("echo hi"));
        assert_eq!(hs[1].get("command").and_then(Value::as_str), Some("kb hook session-start --agent claude"));
        assert_eq!(hs[1].get("timeout").and_then(Value::as_i64), Some(10));
        // The repeat went, with its group.
        assert_eq!(v.get("hooks").unwrap().get("UserPromptSubmit").unwrap().as_array().unwrap().len(), 1);
        // Installing again changes nothing.
        assert_eq!(installed(&v, claude, "kb").unwrap(), v);
        let keys: Vec<&str> = v.get("hooks").unwrap().as_object().unwrap().iter().map(|m| m.0.as_str()).collect();
        assert_eq!(keys, ["SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd"]);
    }

    #[test]
    fn remove_takes_out_kb_entries_and_what_only_they_made() {
        let claude = spec(Agent::Claude).unwrap();
        let person = r#"{"model":"x","hooks":{"Stop":[{"hooks":[{"type":"command","command":"say done"}]}],
            "SessionStart":[{"matcher":"startup","hooks":[{"type":"command","command":"echo hi"}]}]}}"#;
        let old = parse(person);
        let v = installed(&old, claude, "kb").unwrap();
        assert_ne!(v, old);
        assert_eq!(removed(&v, claude.shape), old);
        // A group of the person's that held only kb's handler stays (emptied), since kb did not make it.
        let mixed =
            parse(r#"{"hooks":{"SessionEnd":[{"matcher":"x","hooks":[{"command":"kb hook stop --agent claude"}]}]}}"#);
        assert_eq!(removed(&mixed, claude.shape), parse(r#"{"hooks":{"SessionEnd":[{"matcher":"x","hooks":[]}]}}"#));
        let only_kb = installed(&Value::Object(Vec::new()), claude, "kb").unwrap();
        assert!(empty_like(&removed(&only_kb, claude.shape)));
    }

    #[test]
    fn flat_shapes_get_a_version_and_their_own_fields() {
        let copilot = spec(Agent::Copilot).unwrap();
        let v = installed(&Value::Object(Vec::new()), copilot, "/opt/kb").unwrap();
        assert_eq!(v.get("version").and_then(Value::as_i64), Some(1));
        let start = &v.get("hooks").unwrap().get("sessionStart").unwrap().as_array().unwrap()[0];
        assert_eq!(start.get("bash").and_then(Value::as_str), Some("/opt/kb hook session-start --agent copilot"));
        assert_eq!(start.get("timeoutSec").and_then(Value::as_i64), Some(10));
        let removed = removed(&v, copilot.shape);
        assert!(empty_like(&removed), "{removed:?}");
        let cursor = spec(Agent::Cursor).unwrap();
        let v = installed(&parse(r#"{"version":1,"hooks":{"stop":[{"command":"say"}]}}"#), cursor, "kb").unwrap();
        let end = &v.get("hooks").unwrap().get("sessionEnd").unwrap().as_array().unwrap()[0];
        assert_eq!(end, &parse(r#"{"command":"kb hook session-end --agent cursor"}"#));
    }

    #[test]
    fn gemini_limits_are_in_milliseconds() {
        let gemini = spec(Agent::Gemini).unwrap();
        let v = installed(&Value::Object(Vec::new()), gemini, "kb").unwrap();
        let end = &v.get("hooks").unwrap().get("SessionEnd").unwrap().as_array().unwrap()[0];
        assert_eq!(end.get("hooks").unwrap().as_array().unwrap()[0].get("timeout").and_then(Value::as_i64), Some(3000));
    }

    #[test]
    fn scripts_are_kb_only_when_they_do_nothing_but_exec_kb() {
        let s = script("kb", "TaskStart", HookVerb::SessionStart);
        assert_eq!(script_program(&s).as_deref(), Some("kb"));
        assert!(s.ends_with("\nexec kb hook session-start --agent cline\n"), "{s}");
        assert_eq!(script_program("#!/bin/sh\nexec '/a b/kb' hook prompt --agent cline\n").as_deref(), Some("/a b/kb"));
        for other in [
            "#!/bin/sh\necho hi\nexec kb hook prompt --agent cline\n",
            "#!/bin/sh\nexec node hook.js\n",
            "#!/bin/sh\n",
            "exec kb hook prompt --agent cline\nexec kb hook prompt --agent cline\n",
        ] {
            assert_eq!(script_program(other), None, "{other}");
        }
    }
}
