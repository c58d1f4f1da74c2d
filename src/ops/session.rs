//! The session focus (docs/behaviour.md, Sessions): `kb session start | update | end | show`. The session store
//! (`crate::session`) does the work; this module shapes what each command reports.

use super::{Report, View, abs};
use crate::error::Diagnostic;
use crate::journal::Txn;
use crate::paths::Layout;
use crate::repo::Repo;
use crate::session::{self, Located, Outcome};
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};
use std::path::PathBuf;

/// SESSION: `{"focus":S, "started":TS, "updated":TS|null, "ended":TS|null, "summary":S,
/// "path":ABS}`; timestamps as written in the file.
#[derive(Serialize)]
pub struct SessionJson {
    focus: String,
    started: String,
    updated: Option<String>,
    ended: Option<String>,
    summary: String,
    path: String,
}

impl SessionJson {
    pub(super) fn of(l: &Located) -> SessionJson {
        let s = &l.session;
        SessionJson {
            focus: s.focus.clone(),
            started: s.started.clone(),
            updated: s.updated.clone(),
            ended: s.ended.clone(),
            summary: s.summary.clone(),
            path: abs(&l.path),
        }
    }
}

/// What a session command did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Started,
    Updated,
    Appended,
    Ended,
}

/// What `start`, `update` and `end` did. JSON: SESSION, as it is now (for `end`, the ended
/// session in `sessions/`, with `ended` set).
pub struct SessionReport {
    json: SessionJson,
    action: Action,
    file: PathBuf,
    /// Read by MCP's tools only: the CLI warns on stderr instead.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    redacted: Vec<&'static str>,
    diagnostics: Vec<Diagnostic>,
}

impl SessionReport {
    /// Returns the secret rules whose matches were redacted from the text.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub fn redacted(&self) -> &[&'static str] {
        &self.redacted
    }
}

impl Serialize for SessionReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.json.serialize(s)
    }
}

fn report(out: Outcome, action: Action) -> SessionReport {
    let diagnostics = (!out.redacted.is_empty())
        .then(|| Diagnostic::warning(None, format!("redacted secrets matching: {}", out.redacted.join(", "))))
        .into_iter()
        .collect();
    SessionReport {
        json: SessionJson::of(&out.located),
        action,
        file: out.located.path,
        redacted: out.redacted,
        diagnostics,
    }
}

/// `kb session start FOCUS`.
pub fn start(repo: &Repo, focus: &str, redact: bool) -> Result<SessionReport> {
    let focus = session::check_text("focus", focus, redact)?;
    let mut txn = Txn::unrecorded(repo.lock()?);
    let out = session::start(repo, &mut txn, focus)?;
    txn.finish()?;
    let mut started = report(out, Action::Started);
    // A new session sees the board: every item's `count` goes up.
    let branch = crate::board::current_branch(&repo.layout.root);
    started.diagnostics.extend(super::board::seen(repo, &branch));
    Ok(started)
}

/// `kb session update TEXT [--append]`.
pub fn update(repo: &Repo, text: &str, append: bool, redact: bool) -> Result<SessionReport> {
    let action = if append { Action::Appended } else { Action::Updated };
    let text = session::check_text("summary", text, redact)?;
    let mut txn = Txn::unrecorded(repo.lock()?);
    let out = session::update(repo, &mut txn, text, append)?;
    txn.finish()?;
    Ok(report(out, action))
}

/// `kb session end [--summary TEXT]`.
pub fn end(repo: &Repo, summary: Option<&str>, redact: bool) -> Result<SessionReport> {
    let summary = summary.map(|s| session::check_text("summary", s, redact)).transpose()?;
    let held = repo.lock()?;
    // The focus names the entry in `kb undo --list`; an unreadable session fails in `end` below.
    let what = match session::current(&repo.layout).0 {
        Some(open) => format!("ended session: {}", open.session.focus),
        None => "ended the open session".to_string(),
    };
    let mut txn = Txn::begin(repo, held, "session end", what);
    let out = session::end(repo, &mut txn, summary)?;
    txn.finish()?;
    Ok(report(out, Action::Ended))
}

impl Report for SessionReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let mark = v.style.ok("✓");
        let focus = v.clean(&self.json.focus);
        match self.action {
            Action::Started => {
                writeln!(w, "{mark} Started session: {focus}\nStarted: {}", v.clean(&self.json.started))?
            }
            Action::Updated => writeln!(w, "{mark} Updated the summary of session: {focus}")?,
            Action::Appended => writeln!(w, "{mark} Appended to the summary of session: {focus}")?,
            Action::Ended => writeln!(
                w,
                "{mark} Ended session: {focus}\nStarted: {}\nEnded: {}",
                v.clean(&self.json.started),
                v.clean(self.json.ended.as_deref().unwrap_or_default())
            )?,
        }
        writeln!(w, "Location: {}", v.rel(&self.file))
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

/// What `kb session show` found. JSON: SESSION, or `{"session":null}` when no session is open
/// (or `session.md` cannot be read: the problem is a diagnostic).
pub struct ShowReport {
    open: Option<(SessionJson, PathBuf)>,
    diagnostics: Vec<Diagnostic>,
}

impl Serialize for ShowReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct NoSession {
            session: Option<()>,
        }
        match &self.open {
            Some((json, _)) => json.serialize(s),
            None => NoSession { session: None }.serialize(s),
        }
    }
}

/// `kb session show`: reads `session.md` and never writes it.
pub fn show(layout: &Layout) -> ShowReport {
    let (found, diagnostics) = session::current(layout);
    ShowReport { open: found.map(|l| (SessionJson::of(&l), l.path)), diagnostics }
}

impl Report for ShowReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let Some((s, file)) = &self.open else {
            return if self.diagnostics.is_empty() {
                writeln!(w, "No open session.")
            } else {
                writeln!(w, "No readable open session (see the warning above).")
            };
        };
        writeln!(w, "Session: {}", v.clean(&s.focus))?;
        writeln!(w, "Started: {}", v.clean(&s.started))?;
        if let Some(updated) = &s.updated {
            writeln!(w, "Updated: {}", v.clean(updated))?;
        }
        writeln!(w, "Location: {}", v.rel(file))?;
        if !s.summary.is_empty() {
            writeln!(w, "\n{}", v.clean(&s.summary))?;
        }
        Ok(())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

/// One captured session in `kb session log` (JSON: `{"agent","session_id","started","ended",
/// "branch","user_turns","requests","files","commands":[{"command","outcome"}],"errors",
/// "checkpoint"}`).
#[derive(Serialize)]
struct LoggedJson {
    agent: String,
    session_id: String,
    started: Option<String>,
    ended: Option<String>,
    branch: Option<String>,
    user_turns: usize,
    requests: Vec<String>,
    files: Vec<String>,
    commands: Vec<serde_json::Value>,
    errors: Vec<String>,
    checkpoint: String,
}

/// `kb session log`: the checkpoints, newest first.
pub struct LogReport {
    sessions: Vec<LoggedJson>,
    diagnostics: Vec<Diagnostic>,
}

impl Serialize for LogReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            sessions: &'a [LoggedJson],
        }
        Json { sessions: &self.sessions }.serialize(s)
    }
}

/// Lists the checkpoints newest first (by `ended`, else `started`); with `touching`, only those
/// whose changed files include it (a folder: a file under it).
pub fn log(layout: &Layout, touching: Option<&str>) -> LogReport {
    use crate::capture::checkpoint;
    let (mut list, diagnostics) = checkpoint::read_all(layout);
    if let Some(t) = touching {
        let t = t.trim_end_matches('/');
        list.retain(|c| c.files.iter().any(|f| f == t || f.starts_with(&format!("{t}/"))));
    }
    let when = |c: &checkpoint::Checkpoint| {
        c.ended.as_deref().or(c.started.as_deref()).and_then(|t| crate::format::time::parse(t).ok())
    };
    list.sort_by(|a, b| when(b).cmp(&when(a)).then_with(|| a.session_id.cmp(&b.session_id)));
    let sessions = list
        .into_iter()
        .map(|c| LoggedJson {
            commands: c
                .commands
                .iter()
                .map(|r| serde_json::json!({"command": r.command, "outcome": r.outcome.to_string()}))
                .collect(),
            checkpoint: super::abs(&c.path),
            agent: c.agent,
            session_id: c.session_id,
            started: c.started,
            ended: c.ended,
            branch: c.branch,
            user_turns: c.user_turns,
            requests: c.requests,
            files: c.files,
            errors: c.errors,
        })
        .collect();
    LogReport { sessions, diagnostics }
}

impl Report for LogReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        if self.sessions.is_empty() {
            return writeln!(w, "No captured sessions (the hooks spool them; kb inbox digest reads them).");
        }
        for s in &self.sessions {
            let short: String = s.session_id.chars().take(8).collect();
            let when = s.ended.as_deref().or(s.started.as_deref()).map_or("-".to_string(), |t| t.replace('T', " "));
            let first = s.requests.first().map_or("", String::as_str);
            let first = crate::output::chars_prefix(first, 60);
            let turns = format!("{} turn{}", s.user_turns, if s.user_turns == 1 { "" } else { "s" });
            writeln!(w, "{:<8} {short:<8}  {when}  {turns:>9}  {}", s.agent, v.clean(first))?;
        }
        Ok(())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}
