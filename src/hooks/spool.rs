//! The spool: what the recording hooks (`pre-compact`, `session-end`, `stop`) leave for `kb inbox
//! digest`, one JSON line each in `.co-cli/state/hooks/spool.jsonl`, plus one `digested` line per
//! session each time the digest has read it. Local state, never committed.
//!
//! A hook appends with one `write` on a file opened `O_APPEND`, so hooks of two agents firing at
//! once never interleave their lines and need no lock. Lines kb cannot read are skipped.

use crate::kinds::HookVerb;
use crate::paths::Layout;
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, Write};
use std::path::PathBuf;

/// The event of a digested mark.
pub const DIGESTED: &str = "digested";

/// One spool line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub agent: String,
    /// kb's verb (`session-end`, `pre-compact`, `stop`), or [`DIGESTED`].
    pub event: String,
    pub session_id: String,
    #[serde(default)]
    pub transcript_path: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub branch: Option<String>,
    /// RFC 3339, UTC.
    pub at: String,
}

/// One session as the spool knows it: its last recording entry, and whether a digest has read it
/// since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spooled {
    pub last: Entry,
    /// The first recording entry's time (the session's start as far as the spool knows).
    pub first_at: String,
    pub digested: bool,
}

/// `<root>/.co-cli/state/hooks`
pub fn dir(layout: &Layout) -> PathBuf {
    layout.co_cli().join("state").join("hooks")
}

/// `<root>/.co-cli/state/hooks/spool.jsonl`
pub fn path(layout: &Layout) -> PathBuf {
    dir(layout).join("spool.jsonl")
}

/// Appends `entry` as one line.
pub fn append(layout: &Layout, entry: &Entry) -> io::Result<()> {
    super::state_dir(layout)?;
    let mut line = serde_json::to_vec(entry).map_err(io::Error::other)?;
    line.push(b'\n');
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path(layout))?;
    file.write_all(&line)
}

/// Returns a recording entry for `verb`.
pub fn entry(agent: &str, verb: HookVerb, session_id: &str, at: String) -> Entry {
    Entry {
        agent: agent.to_string(),
        event: verb.as_str().to_string(),
        session_id: session_id.to_string(),
        transcript_path: None,
        cwd: None,
        branch: None,
        at,
    }
}

/// Returns every entry of the spool that reads, in order; a missing spool is empty.
pub fn read(layout: &Layout) -> io::Result<Vec<Entry>> {
    let path = path(layout);
    let file = match crate::fsio::open_input(&path, &layout.root) {
        Ok(Some(f)) => f,
        Ok(None) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for line in io::BufReader::new(file).split(b'\n') {
        if let Ok(e) = serde_json::from_slice::<Entry>(&line?) {
            out.push(e);
        }
    }
    Ok(out)
}

/// Returns the spooled sessions, keyed by (agent, session id), in the order they were first
/// spooled: each with its last recording entry and whether a digest came after it.
pub fn sessions(entries: &[Entry]) -> Vec<Spooled> {
    let mut out: Vec<Spooled> = Vec::new();
    for e in entries {
        let found = out.iter().position(|s| s.last.agent == e.agent && s.last.session_id == e.session_id);
        match (found, e.event == DIGESTED) {
            (Some(i), true) => out[i].digested = true,
            (None, true) => {}
            (Some(i), false) => {
                let s = &mut out[i];
                // A later entry may lack what an earlier one had (Copilot's sessionEnd has no
                // transcript path): keep the last known of each.
                let mut last = e.clone();
                last.transcript_path = last.transcript_path.or_else(|| s.last.transcript_path.clone());
                last.cwd = last.cwd.or_else(|| s.last.cwd.clone());
                last.branch = last.branch.or_else(|| s.last.branch.clone());
                s.last = last;
                s.digested = false;
            }
            (None, false) => out.push(Spooled { last: e.clone(), first_at: e.at.clone(), digested: false }),
        }
    }
    out
}

/// Whether the spool holds a session no digest has read since its last entry: a cheap scan for
/// `session-start`, which starts a digest when it does.
pub fn has_pending(layout: &Layout) -> bool {
    read(layout).is_ok_and(|entries| sessions(&entries).iter().any(|s| !s.digested))
}

/// Rewrites the spool without the sessions that were digested and last seen before `keep_after`
/// (RFC 3339), so it does not grow without end. Call it under the digest's lock.
pub fn compact(layout: &Layout, keep_after: &str) -> io::Result<()> {
    let entries = read(layout)?;
    let old: Vec<(String, String)> = sessions(&entries)
        .into_iter()
        .filter(|s| s.digested && s.last.at.as_str() < keep_after)
        .map(|s| (s.last.agent, s.last.session_id))
        .collect();
    if old.is_empty() {
        return Ok(());
    }
    let mut text = Vec::new();
    for e in entries.iter().filter(|e| !old.iter().any(|(a, s)| *a == e.agent && *s == e.session_id)) {
        serde_json::to_writer(&mut text, e).map_err(io::Error::other)?;
        text.push(b'\n');
    }
    crate::fsio::write_atomic_with(&path(layout), &text, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(agent: &str, event: &str, id: &str, at: &str) -> Entry {
        Entry { transcript_path: None, cwd: None, branch: None, ..entry(agent, HookVerb::Stop, id, at.into()) }
            .with_event(event)
    }

    impl Entry {
        fn with_event(mut self, event: &str) -> Entry {
            self.event = event.into();
            self
        }
    }

    #[test]
    fn a_session_is_pending_until_digested_and_again_after_a_new_entry() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout { root: dir.path().to_path_buf(), config: None };
        assert!(!has_pending(&layout));
        let mut first = e("claude", "pre-compact", "s1", "2026-12-01T10:00:00Z");
        first.transcript_path = Some("/t/s1.jsonl".into());
        append(&layout, &first).unwrap();
        assert!(has_pending(&layout));
        append(&layout, &e("claude", DIGESTED, "s1", "2026-12-01T10:01:00Z")).unwrap();
        assert!(!has_pending(&layout));
        append(&layout, &e("claude", "session-end", "s1", "2026-12-01T11:00:00Z")).unwrap();
        std::fs::OpenOptions::new().append(true).open(path(&layout)).unwrap().write_all(b"junk\n\xff\n").unwrap();
        let s = sessions(&read(&layout).unwrap());
        assert_eq!(s.len(), 1);
        assert!(!s[0].digested);
        assert_eq!(s[0].last.event, "session-end");
        assert_eq!(s[0].last.transcript_path.as_deref(), Some("/t/s1.jsonl"), "kept from the earlier entry");
        assert_eq!(s[0].first_at, "2026-12-01T10:00:00Z");
    }

    #[test]
    fn compact_drops_only_old_digested_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout { root: dir.path().to_path_buf(), config: None };
        for x in [
            e("claude", "session-end", "old", "2026-10-01T00:00:00Z"),
            e("claude", DIGESTED, "old", "2026-10-01T00:01:00Z"),
            e("codex", "session-end", "new", "2026-12-01T00:00:00Z"),
            e("codex", DIGESTED, "new", "2026-12-01T00:01:00Z"),
            e("copilot", "session-end", "pending", "2026-09-01T00:00:00Z"),
        ] {
            append(&layout, &x).unwrap();
        }
        compact(&layout, "2026-11-01T00:00:00Z").unwrap();
        let ids: Vec<String> = sessions(&read(&layout).unwrap()).into_iter().map(|s| s.last.session_id).collect();
        assert_eq!(ids, ["new", "pending"]);
    }
}
