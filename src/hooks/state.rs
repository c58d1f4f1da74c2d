//! What the hook verbs remember between calls, all local under `.co-cli/state/`: the problem log
//! (`hooks.log`), the marks that detect a duplicate call (an agent that runs two hook files for
//! one event: Copilot CLI runs `.claude/settings.json` and its own), and per session what
//! `session-start` gave the agent and what `prompt` has already sent.

use crate::paths::Layout;
use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// A second call with the same key within this long is a duplicate.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(10);
/// `hooks.log` is rotated (to `hooks.log.1`) once it passes this size.
const LOG_LIMIT: u64 = 1 << 20;

/// `<root>/.co-cli/state/hooks.log`
pub fn log_path(layout: &Layout) -> PathBuf {
    layout.co_cli().join("state").join("hooks.log")
}

/// Appends one line to `hooks.log`: `AT AGENT VERB: MESSAGE`, the message on one line. Best
/// effort: a log that cannot be written must not fail the hook.
pub fn log(layout: &Layout, at: &str, agent: &str, verb: &str, message: &str) {
    let path = log_path(layout);
    if super::state_dir(layout).is_err() {
        return;
    }
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > LOG_LIMIT) {
        let _ = std::fs::rename(&path, path.with_extension("log.1"));
    }
    let message: String = message.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let line = format!("{at} {agent} {verb}: {message}\n");
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&path) {
        let _ = f.write_all(line.as_bytes());
    }
}

/// `<root>/.co-cli/state/hooks/recent`: one empty file per recent call, named by its key's hash.
fn recent_dir(layout: &Layout) -> PathBuf {
    super::spool::dir(layout).join("recent")
}

/// Marks the call `key` (the session id with the verb, or with the prompt) as seen now, and
/// returns whether the same key was seen within [`DUPLICATE_WINDOW`]. Two calls at once: the
/// file is created exclusively, so exactly one of them is first.
pub fn seen_recently(layout: &Layout, key: &str) -> io::Result<bool> {
    super::state_dir(layout)?;
    let dir = recent_dir(layout);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{:016x}", xxhash_rust::xxh3::xxh3_64(key.as_bytes())));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
        Ok(_) => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let age = std::fs::metadata(&path)?.modified()?.elapsed().unwrap_or_default();
            if age < DUPLICATE_WINDOW {
                return Ok(true);
            }
            // An old mark: this call is a new one; renew the mark's time.
            std::fs::File::options().write(true).open(&path)?.set_modified(SystemTime::now())?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Removes the marks older than a minute (`session-start` calls it: the folder stays small).
pub fn sweep_recent(layout: &Layout) {
    let Ok(list) = std::fs::read_dir(recent_dir(layout)) else { return };
    for entry in list.flatten() {
        let old = entry.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok());
        if old.is_some_and(|age| age > Duration::from_secs(60)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// `<root>/.co-cli/state/hooks/sessions`: what each session was given.
fn sessions_dir(layout: &Layout) -> PathBuf {
    super::spool::dir(layout).join("sessions")
}

/// `<root>/.co-cli/state/hooks/sessions/<agent>-<id>.json`: what `prompt` sent in one session.
fn sent_path(layout: &Layout, agent: &str, session_id: &str) -> PathBuf {
    sessions_dir(layout).join(format!("{agent}-{}.json", crate::paths::file_safe(session_id)))
}

/// `<root>/.co-cli/state/hooks/sessions/<agent>-<id>.start.txt`: what `session-start` printed.
fn started_path(layout: &Layout, agent: &str, session_id: &str) -> PathBuf {
    sessions_dir(layout).join(format!("{agent}-{}.start.txt", crate::paths::file_safe(session_id)))
}

/// Keeps what `session-start` gave the agent in this session (`prompt` sends nothing it holds).
pub fn save_started(layout: &Layout, agent: &str, session_id: &str, text: &str) -> io::Result<()> {
    let path = started_path(layout, agent, session_id);
    super::state_dir(layout)?;
    std::fs::create_dir_all(path.parent().unwrap_or(&layout.root))?;
    crate::fsio::write_atomic_with(&path, text.as_bytes(), false)
}

/// Returns what `session-start` gave the agent in this session, if it ran (at most 1 MiB read).
pub fn started(layout: &Layout, agent: &str, session_id: &str) -> Option<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(started_path(layout, agent, session_id)).ok()?.take(1 << 20).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Removes what sessions untouched for [`SESSION_KEPT`] were given (`session-start` calls it).
pub fn sweep_sessions(layout: &Layout) {
    let Ok(list) = std::fs::read_dir(sessions_dir(layout)) else { return };
    for entry in list.flatten() {
        let old = entry.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok());
        if old.is_some_and(|age| age > SESSION_KEPT) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// How long what a session was given is kept after its last change.
const SESSION_KEPT: Duration = Duration::from_secs(30 * 24 * 3600);

/// Returns the items (`store:id`) `prompt` already sent in this session.
pub fn sent(layout: &Layout, agent: &str, session_id: &str) -> BTreeSet<String> {
    std::fs::read(sent_path(layout, agent, session_id))
        .ok()
        .and_then(|b| serde_json::from_slice::<Vec<String>>(&b).ok())
        .map(|v| v.into_iter().collect())
        .unwrap_or_default()
}

/// Records `items` as sent in this session, with those sent before.
pub fn add_sent(layout: &Layout, agent: &str, session_id: &str, items: &[String]) -> io::Result<()> {
    let path = sent_path(layout, agent, session_id);
    let mut all = sent(layout, agent, session_id);
    all.extend(items.iter().cloned());
    super::state_dir(layout)?;
    std::fs::create_dir_all(path.parent().unwrap_or(&layout.root))?;
    let bytes = serde_json::to_vec(&all.into_iter().collect::<Vec<_>>()).map_err(io::Error::other)?;
    crate::fsio::write_atomic_with(&path, &bytes, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_call_with_the_same_key_is_a_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout { root: dir.path().to_path_buf(), config: None };
        assert!(!seen_recently(&layout, "s1\0prompt").unwrap());
        assert!(seen_recently(&layout, "s1\0prompt").unwrap());
        assert!(!seen_recently(&layout, "s2\0prompt").unwrap());
        // An old mark is a new call.
        let mark = std::fs::read_dir(recent_dir(&layout)).unwrap().next().unwrap().unwrap().path();
        let old = SystemTime::now() - Duration::from_secs(11);
        for entry in std::fs::read_dir(recent_dir(&layout)).unwrap() {
            std::fs::File::options().write(true).open(entry.unwrap().path()).unwrap().set_modified(old).unwrap();
        }
        assert!(mark.exists());
        assert!(!seen_recently(&layout, "s1\0prompt").unwrap());
    }

    #[test]
    fn sent_items_accumulate_per_session_and_ids_become_safe_names() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout { root: dir.path().to_path_buf(), config: None };
        add_sent(&layout, "claude", "../../etc", &["md:1".into()]).unwrap();
        add_sent(&layout, "claude", "../../etc", &["copilot:mem-1".into()]).unwrap();
        assert_eq!(sent(&layout, "claude", "../../etc").len(), 2);
        assert!(sent(&layout, "codex", "../../etc").is_empty());
        assert_eq!(crate::paths::file_safe("../../etc"), ".._.._etc");
        assert_eq!(crate::paths::file_safe(".."), "_");
        log(&layout, "2026-12-01T00:00:00Z", "claude", "prompt", "bad\npayload");
        let text = std::fs::read_to_string(log_path(&layout)).unwrap();
        assert_eq!(text, "2026-12-01T00:00:00Z claude prompt: bad payload\n");
    }
}
