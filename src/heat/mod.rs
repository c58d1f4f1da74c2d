//! Access heat (SPEC §12.1, Base Coat's hot cache): every memory or record that `recall` or
//! `show` returns is one line `{"id":ID,"store":"md"|"copilot","at":TS}` appended to
//! `.co-cli/state/access.jsonl`; a memory's heat is its accesses during the last
//! `heat_window_days` active days (the distinct UTC dates in the log).
//!
//! The log is local state, never committed: one person's recalls must not change what a team's
//! `AGENTS.md` says. Appending is one `write` of one line on a file opened with `O_APPEND`, so
//! concurrent kb processes interleave whole lines and need no lock. Logging never fails a
//! command: a problem is a warning.

use crate::error::Diagnostic;
use crate::paths::Layout;
use chrono::{DateTime, Utc};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Heat from which a memory is warm, and shows under Hot Memories.
pub const WARM: u64 = 3;
/// Heat from which a memory is hot.
pub const HOT: u64 = 10;
/// Accesses on this many consecutive active days make a memory a promotion candidate.
pub const PROMOTE_DAYS: usize = 5;

/// Which store an accessed id belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Store {
    Md,
    Copilot,
}

impl Store {
    pub fn as_str(self) -> &'static str {
        match self {
            Store::Md => "md",
            Store::Copilot => "copilot",
        }
    }
}

/// An accessed memory (its integer id, as text) or record (its string id).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Access {
    pub id: String,
    pub store: Store,
}

/// Returns the access log of the repository at `layout`.
pub fn log_path(layout: &Layout) -> PathBuf {
    layout.co_cli().join("state").join("access.jsonl")
}

/// Appends one line per access to the log, at `now`. Nothing is written when the root has no
/// `.co-cli/` folder (kb never creates one to log) or the state folder would lead out of the
/// root; a failure comes back as a warning, never as an error.
pub fn record(layout: &Layout, now: DateTime<Utc>, accesses: &[Access]) -> Option<Diagnostic> {
    if accesses.is_empty() || !layout.co_cli().is_dir() {
        return None;
    }
    let path = log_path(layout);
    let at = crate::format::time::py_isoformat(now);
    let mut lines = String::new();
    for a in accesses {
        let id = match a.store {
            // A memory's id is a JSON number, a record's a JSON string.
            Store::Md => a.id.clone(),
            Store::Copilot => serde_json::Value::from(a.id.as_str()).to_string(),
        };
        lines.push_str(&format!("{{\"id\":{id},\"store\":\"{}\",\"at\":\"{at}\"}}\n", a.store.as_str()));
    }
    let write = || -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        crate::paths::check_inside(&layout.root, dir)?;
        crate::paths::ensure_ignored_dir(dir)?;
        refuse_non_file(&path)?;
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
        // One write: concurrent appenders interleave whole batches of lines.
        f.write_all(lines.as_bytes())
    };
    write().err().map(|e| Diagnostic::warning(None, format!("access not logged: {e}")).in_file(&path))
}

/// Refuses a FIFO, socket or device in place of the log (opening one would block or never end).
fn refuse_non_file(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.is_file() => Err(std::io::Error::other("not a regular file")),
        _ => Ok(()),
    }
}

/// One line of the log. Owned strings: a record id may hold escapes, which cannot be borrowed.
#[derive(Deserialize)]
struct Line {
    id: IdValue,
    store: Store,
    at: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum IdValue {
    Number(u64),
    Text(String),
}

/// The heat of one accessed memory or record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heat {
    pub access: Access,
    /// Accesses during the window.
    pub heat: u64,
    /// The latest access (any time), as logged.
    pub last_access: String,
    /// Accessed on at least `PROMOTE_DAYS` consecutive active days.
    pub promote_candidate: bool,
}

impl Heat {
    /// Returns `cold` (0–2), `warm` (3–9) or `hot` (10+).
    pub fn level(&self) -> &'static str {
        level(self.heat)
    }
}

/// Returns the level of a heat.
pub fn level(heat: u64) -> &'static str {
    match heat {
        h if h >= HOT => "hot",
        h if h >= WARM => "warm",
        _ => "cold",
    }
}

/// What the log says: the window's active days (oldest first), each accessed id's heat (hottest
/// first; ties: latest access first), and the lines that could not be read.
#[derive(Debug, Clone, Default)]
pub struct Heats {
    pub window_days: u64,
    pub active_days: Vec<String>,
    pub heats: Vec<Heat>,
    pub problems: Vec<Diagnostic>,
}

impl Heats {
    /// Returns the heat of a markdown memory (0 when never accessed in the window).
    #[cfg(test)]
    pub fn of_memory(&self, id: u64) -> u64 {
        let id = id.to_string();
        self.heats.iter().find(|h| h.access.store == Store::Md && h.access.id == id).map_or(0, |h| h.heat)
    }
}

/// Reads the log and computes every heat over the last `window_days` active days. A missing log
/// is no access; a line that is not an access (a torn last line after a crash, junk) is reported
/// and skipped. Nothing is written.
pub fn read(layout: &Layout, window_days: u64) -> Heats {
    let path = log_path(layout);
    let mut heats = Heats { window_days, ..Heats::default() };
    let bytes = match crate::repo::read_input(&path, &layout.root) {
        Ok(Some(b)) => b,
        Ok(None) => return heats,
        Err(e) => {
            heats.problems.push(Diagnostic::warning(None, format!("cannot read the access log: {e}")).in_file(&path));
            return heats;
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    // (date, access, at) of every readable line, in log order.
    let mut lines: Vec<(String, Access, String)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Line>(line) {
            Ok(l) if l.at.len() >= 10 && l.at.is_char_boundary(10) => {
                let id = match l.id {
                    IdValue::Number(n) => n.to_string(),
                    IdValue::Text(s) => s,
                };
                lines.push((l.at[..10].to_string(), Access { id, store: l.store }, l.at));
            }
            _ => heats.problems.push(
                Diagnostic::error(Some(n + 1), "not an access line ({\"id\",\"store\",\"at\"}); skipped")
                    .in_file(&path),
            ),
        }
    }
    let mut days: Vec<&str> = lines.iter().map(|l| l.0.as_str()).collect();
    days.sort_unstable();
    days.dedup();
    let window = &days[days.len().saturating_sub(usize::try_from(window_days).unwrap_or(usize::MAX))..];
    heats.active_days = window.iter().map(|d| d.to_string()).collect();
    let first_day = window.first().copied().unwrap_or("");
    struct Tally<'a> {
        heat: u64,
        last: &'a str,
        days: Vec<&'a str>,
    }
    let mut tally: FxHashMap<&Access, Tally<'_>> = FxHashMap::default();
    for (day, access, at) in &lines {
        let (day, at) = (day.as_str(), at.as_str());
        let t = tally.entry(access).or_insert(Tally { heat: 0, last: at, days: Vec::new() });
        if at > t.last {
            t.last = at;
        }
        if day >= first_day {
            t.heat += 1;
        }
        if t.days.last() != Some(&day) && !t.days.contains(&day) {
            t.days.push(day);
        }
    }
    heats.heats = tally
        .into_iter()
        .map(|(access, mut t)| {
            t.days.sort_unstable();
            Heat {
                access: access.clone(),
                heat: t.heat,
                last_access: t.last.to_string(),
                promote_candidate: consecutive_active_days(&days, &t.days) >= PROMOTE_DAYS,
            }
        })
        .collect();
    heats.heats.sort_by(|a, b| b.heat.cmp(&a.heat).then_with(|| b.last_access.cmp(&a.last_access)));
    heats
}

/// Returns the longest run of consecutive active days (of `all`, sorted) found in `used`
/// (sorted): days with no access by anyone do not break a run.
fn consecutive_active_days(all: &[&str], used: &[&str]) -> usize {
    let (mut best, mut run, mut next) = (0, 0, 0usize);
    for day in all {
        if next < used.len() && used[next] == *day {
            run += 1;
            next += 1;
            best = best.max(run);
        } else {
            run = 0;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(dir: &Path) -> Layout {
        std::fs::create_dir_all(dir.join("repo/.co-cli")).unwrap();
        Layout { root: dir.join("repo"), config: None }
    }

    fn at(day: u32, hour: u32) -> DateTime<Utc> {
        format!("2026-11-{day:02}T{hour:02}:00:00Z").parse().unwrap()
    }

    fn md(id: u64) -> Access {
        Access { id: id.to_string(), store: Store::Md }
    }

    #[test]
    fn heat_counts_the_window_of_active_days() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        // Memory 1 on days 1..=6, twice a day; memory 2 only on day 1; a record on day 6.
        for day in 1..=6 {
            assert!(record(&l, at(day, 9), &[md(1), md(1)]).is_none());
        }
        record(&l, at(1, 10), &[md(2), md(2), md(2)]);
        record(&l, at(6, 11), &[Access { id: "mem-1\"x".into(), store: Store::Copilot }]);
        let h = read(&l, 5);
        assert_eq!(h.active_days, ["2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05", "2026-11-06"]);
        assert_eq!(h.of_memory(1), 10);
        assert_eq!(h.of_memory(2), 0, "day 1 fell out of the window");
        assert_eq!(h.heats[0].access, md(1));
        assert_eq!(h.heats[0].level(), "hot");
        assert!(h.heats[0].promote_candidate);
        let rec = h.heats.iter().find(|x| x.access.store == Store::Copilot).unwrap();
        assert_eq!((rec.access.id.as_str(), rec.heat), ("mem-1\"x", 1));
        assert!(h.problems.is_empty());
    }

    #[test]
    fn junk_and_torn_lines_are_skipped_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        record(&l, at(3, 9), &[md(4)]);
        let mut f = std::fs::OpenOptions::new().append(true).open(log_path(&l)).unwrap();
        f.write_all(b"junk\n{\"id\":4,\"store\":\"md\",\"at\":\"2026-11-03T1").unwrap();
        let h = read(&l, 10);
        assert_eq!(h.of_memory(4), 1);
        assert_eq!(h.problems.iter().map(|p| p.line).collect::<Vec<_>>(), [Some(2), Some(3)]);
    }

    #[test]
    fn no_co_cli_folder_no_log() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout { root: dir.path().to_path_buf(), config: None };
        assert!(record(&l, at(1, 1), &[md(1)]).is_none());
        assert!(!log_path(&l).exists());
    }

    #[test]
    fn promotion_needs_consecutive_active_days() {
        let all = ["d1", "d2", "d3", "d4", "d5", "d6"];
        assert_eq!(consecutive_active_days(&all, &["d1", "d2", "d4", "d5", "d6"]), 3);
        assert_eq!(consecutive_active_days(&all, &["d2", "d3", "d4", "d5", "d6"]), 5);
    }
}
