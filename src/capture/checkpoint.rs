//! Checkpoints: one local markdown file per captured session (seed 003's checkpoints), in
//! `.co-cli/state/checkpoints/<agent>-<session id>.md`: frontmatter `agent`, `session_id`,
//! `started`, `ended`, `branch`, `user_turns`, `transcript`, `unknown_lines`; a body of the
//! user's requests (first 200 characters each, secrets redacted), the files changed, the commands
//! with their outcome, the errors.

use super::transcript::{Outcome, Ran, Transcript};
use crate::error::Diagnostic;
use crate::format::frontmatter;
use crate::paths::Layout;
use crate::settings::Agent;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::io;
use std::path::{Path, PathBuf};

/// Each request is kept to this many characters.
const REQUEST_CHARS: usize = 200;

/// What the spool knows of a session when its transcript says less (or was not read).
#[derive(Debug, Clone, Default)]
pub struct Meta {
    pub started: Option<DateTime<Utc>>,
    pub ended: Option<DateTime<Utc>>,
    pub branch: Option<String>,
}

/// One checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub agent: String,
    pub session_id: String,
    pub started: Option<String>,
    pub ended: Option<String>,
    pub branch: Option<String>,
    pub user_turns: usize,
    pub transcript: Option<String>,
    pub unknown_lines: usize,
    pub requests: Vec<String>,
    pub files: Vec<String>,
    pub commands: Vec<Ran>,
    pub errors: Vec<String>,
    /// Where it is (set when read or written).
    pub path: PathBuf,
}

/// `<root>/.co-cli/state/checkpoints`
pub fn dir(layout: &Layout) -> PathBuf {
    layout.co_cli().join("state").join("checkpoints")
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Returns the checkpoint of a session from its transcript (`meta` fills what it does not say).
pub fn from_transcript(
    agent: Agent,
    session_id: &str,
    t: &Transcript,
    transcript: Option<&Path>,
    meta: Meta,
) -> Checkpoint {
    Checkpoint {
        agent: agent.as_str().to_string(),
        session_id: session_id.to_string(),
        started: t.started.or(meta.started).map(rfc3339),
        ended: t.ended.or(meta.ended).map(rfc3339),
        branch: t.branch.clone().or(meta.branch),
        user_turns: t.requests.len(),
        transcript: transcript.map(|p| p.display().to_string()),
        unknown_lines: t.unknown_lines,
        requests: t
            .requests
            .iter()
            .map(|r| crate::output::chars_prefix(&one_line(&crate::secrets::redact(r)), REQUEST_CHARS).to_string())
            .collect(),
        files: t.files.clone(),
        commands: t
            .commands
            .iter()
            .map(|c| Ran { command: crate::secrets::redact(&one_line(&c.command)), outcome: c.outcome })
            .collect(),
        errors: t.errors.iter().map(|e| crate::secrets::redact(&one_line(e))).collect(),
        path: PathBuf::new(),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Returns the checkpoint's file name: `<agent>-<session id>.md`, the id made safe.
fn file_name(agent: &str, session_id: &str) -> String {
    format!("{agent}-{}.md", crate::paths::file_safe(session_id))
}

/// Returns the checkpoint's text.
pub fn render(c: &Checkpoint) -> String {
    let opt = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
    let entries = [
        ("agent", Value::String(c.agent.clone())),
        ("session_id", Value::String(c.session_id.clone())),
        ("started", opt(&c.started)),
        ("ended", opt(&c.ended)),
        ("branch", opt(&c.branch)),
        ("user_turns", Value::from(c.user_turns)),
        ("transcript", opt(&c.transcript)),
        ("unknown_lines", Value::from(c.unknown_lines)),
    ];
    let yaml: String = entries.iter().map(|(k, v)| frontmatter::entry(k, v)).collect();
    let mut body = String::new();
    let mut section = |title: &str, items: Vec<String>| {
        body.push_str(&format!("## {title}\n\n"));
        if items.is_empty() {
            body.push_str("(none)\n\n");
        } else {
            for i in items {
                body.push_str(&format!("- {i}\n"));
            }
            body.push('\n');
        }
    };
    section("Requests", c.requests.clone());
    section("Files changed", c.files.clone());
    section(
        "Commands",
        c.commands.iter().map(|r| format!("`{}` — {}", r.command.replace('`', "'"), r.outcome)).collect(),
    );
    section("Errors", c.errors.clone());
    frontmatter::compose(&yaml, &body)
}

/// Writes the checkpoint (atomically) and returns its path.
pub fn write(layout: &Layout, c: &Checkpoint) -> io::Result<PathBuf> {
    let state = layout.co_cli().join("state");
    crate::paths::check_inside(&layout.root, &state)?;
    crate::paths::ensure_ignored_dir(&state)?;
    let dir = dir(layout);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(file_name(&c.agent, &c.session_id));
    crate::fsio::write_atomic_with(&path, render(c).as_bytes(), false)?;
    Ok(path)
}

/// Reads one checkpoint file.
fn parse(path: &Path, text: &str) -> Result<Checkpoint, Diagnostic> {
    let (split, f) = frontmatter::split_and_parse(text).map_err(|d| d.in_file(path))?;
    let s = |k: &str| f.get(k).and_then(Value::as_str).map(str::to_string);
    let n = |k: &str| f.get(k).and_then(Value::as_u64).unwrap_or(0) as usize;
    let (Some(agent), Some(session_id)) = (s("agent"), s("session_id")) else {
        return Err(Diagnostic::error(Some(1), "a checkpoint needs agent and session_id").in_file(path));
    };
    let mut c = Checkpoint {
        agent,
        session_id,
        started: s("started"),
        ended: s("ended"),
        branch: s("branch"),
        user_turns: n("user_turns"),
        transcript: s("transcript"),
        unknown_lines: n("unknown_lines"),
        requests: Vec::new(),
        files: Vec::new(),
        commands: Vec::new(),
        errors: Vec::new(),
        path: path.to_path_buf(),
    };
    let mut current = "";
    for line in split.body.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            current = match title.trim() {
                "Requests" => "r",
                "Files changed" => "f",
                "Commands" => "c",
                "Errors" => "e",
                _ => "",
            };
            continue;
        }
        let Some(item) = line.strip_prefix("- ") else { continue };
        match current {
            "r" => c.requests.push(item.to_string()),
            "f" => c.files.push(item.to_string()),
            "e" => c.errors.push(item.to_string()),
            "c" => {
                let (cmd, outcome) = item.rsplit_once(" — ").unwrap_or((item, "unknown"));
                let command = cmd.trim().trim_matches('`').to_string();
                c.commands.push(Ran { command, outcome: Outcome::parse(outcome).unwrap_or(Outcome::Unknown) });
            }
            _ => {}
        }
    }
    Ok(c)
}

/// Returns every checkpoint that reads, and a diagnostic for each that does not.
pub fn read_all(layout: &Layout) -> (Vec<Checkpoint>, Vec<Diagnostic>) {
    let (mut out, mut problems) = (Vec::new(), Vec::new());
    let Ok(list) = std::fs::read_dir(dir(layout)) else { return (out, problems) };
    for entry in list.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        match crate::fsio::read_input(&path, &layout.root) {
            Ok(Some(bytes)) => match String::from_utf8(bytes) {
                Ok(text) => match parse(&path, &text) {
                    Ok(c) => out.push(c),
                    Err(d) => problems.push(d),
                },
                Err(_) => problems.push(Diagnostic::error(None, "not UTF-8 text").in_file(&path)),
            },
            Ok(None) => {}
            Err(e) => problems.push(Diagnostic::error(None, format!("cannot read: {e}")).in_file(&path)),
        }
    }
    (out, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_reads_back_as_written_with_secrets_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout { root: dir.path().to_path_buf(), config: None };
        let t = Transcript {
            requests: vec![format!("use token ghp_{} please", "a".repeat(36)), "x".repeat(300)],
            files: vec!["src/a.rs".into()],
            commands: vec![Ran { command: "cargo test".into(), outcome: Outcome::Failed(Some(101)) }],
            errors: vec!["boom".into()],
            ..Transcript::default()
        };
        let c = from_transcript(Agent::Claude, "../s 1", &t, Some(Path::new("/t.jsonl")), Meta::default());
        let path = write(&layout, &c).unwrap();
        assert!(path.ends_with("claude-.._s_1.md"), "{path:?}");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("ghp_aaaa"), "{text}");
        let (read, problems) = read_all(&layout);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(read[0].requests[1].chars().count(), REQUEST_CHARS);
        assert_eq!(read[0].commands, c.commands);
        assert_eq!((read[0].files.clone(), read[0].user_turns), (vec!["src/a.rs".to_string()], 2));
        std::fs::write(dir.path().join(".co-cli/state/checkpoints/broken.md"), "no frontmatter").unwrap();
        assert_eq!(read_all(&layout).1.len(), 1);
    }
}
