//! Access heat (after the hot cache of Base Coat, a layered memory design for coding agents;
//! docs/behaviour.md, Heat): every memory or record that `recall` or `show` returns is one line
//! `{"id":ID,"store":"md"|"copilot","at":TS}` appended to `.co-cli/state/access.jsonl`; a
//! memory's heat is its accesses during the last `heat_window_days` active days (the distinct UTC
//! dates in the log).
//!
//! The log is local state, never committed: one person's recalls must not change what a team's
//! `AGENTS.md` says. Appending is one `write` of one line on a file opened with `O_APPEND`, so
//! concurrent kb processes interleave whole lines and need no lock. Logging never fails a
//! command: a problem is a warning.

mod cache;
mod log;

use crate::error::Diagnostic;
use crate::kinds::Store;
use crate::paths::Layout;
use chrono::{DateTime, Utc};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Heat from which a memory is warm, and shows under Hot Memories.
pub const WARM: u64 = 3;
/// Heat from which a memory is hot.
pub const HOT: u64 = 10;
/// Accesses on this many consecutive active days make a memory a promotion candidate.
pub const PROMOTE_DAYS: usize = 5;
/// A recall counts at most this many of its results as uses (docs/behaviour.md, Heat).
pub const USES_PER_RECALL: usize = 3;
/// A ranked recall counts a result after the first as a use when it scores at least this share
/// of the first's.
pub const USED_SCORE_SHARE: f64 = 0.8;

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
            _ => serde_json::Value::from(a.id.as_str()).to_string(),
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

/// Returns the memories of Hot Memories: of `heats` (hottest first), the markdown
/// memories of heat ≥ `WARM` that `is_candidate` accepts, at most `limit`. `kb context` and
/// `kb heat` (its `hot`) both take them from here.
pub fn hot_ids(heats: &Heats, limit: usize, mut is_candidate: impl FnMut(u64) -> bool) -> Vec<u64> {
    heats
        .heats
        .iter()
        .filter(|h| h.access.store == Store::Md && h.heat >= WARM)
        .filter_map(|h| h.access.id.parse::<u64>().ok())
        .filter(|id| is_candidate(*id))
        .take(limit)
        .collect()
}

/// Reads the log and computes every heat over the last `window_days` active days. A missing log
/// is no access; a line that is not an access (a torn last line after a crash, junk) is reported
/// and skipped. The log is read from where the heat cache ends, and the cache is brought up to
/// date (when `.co-cli/` exists); nothing else is written. Heats below `min_heat` are left out
/// (most of a large log's ids are cold, and only `kb heat --all` lists them).
pub fn read(layout: &Layout, window_days: u64, min_heat: u64) -> Heats {
    let path = log_path(layout);
    let mut heats = Heats { window_days, ..Heats::default() };
    let cache_path = cache_path(layout);
    // The log, or why there is none to tally: no log (no problem), or one kb cannot read.
    let read = |use_cache: bool| match read_log(&path, &layout.root, cache_path.as_deref().filter(|_| use_cache)) {
        Ok(Some(log)) => Ok(log),
        Ok(None) => Err(None),
        Err(e) => Err(Some(Diagnostic::warning(None, format!("cannot read the access log: {e}")).in_file(&path))),
    };
    let first = match read(true) {
        Ok(log) => log,
        Err(problem) => {
            heats.problems.extend(problem);
            return heats;
        }
    };
    let whole;
    let (log, first_line, mut tally) = match first.cached.as_ref().map(|(pos, body)| (pos, cache::decode(body))) {
        Some((pos, Some(tally))) => (&first, pos.lines + 1, tally),
        // A cache that verifies but does not decode is a kb bug; the log is then read whole.
        Some((_, None)) => match read(false) {
            Ok(log) => {
                whole = log;
                (&whole, 1, log::Tally::default())
            }
            Err(problem) => {
                heats.problems.extend(problem);
                return heats;
            }
        },
        None => (&first, 1, log::Tally::default()),
    };
    // The complete lines are cached; a last line without its line break (a write in progress,
    // or torn by a crash) is tallied or reported, but read again next time.
    let new = &log.bytes[log.new_from..];
    let complete = new.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let (complete_text, rest_text) =
        (String::from_utf8_lossy(&new[..complete]), String::from_utf8_lossy(&new[complete..]));
    let owned = tally.add_lines(&complete_text, first_line);
    tally.add_owned(&owned);
    let lines = first_line - 1 + bytecount_lines(&new[..complete]);
    // Written when it grew, from a read of the whole log (its new prefix is hashed).
    let grew = log.cached.is_none() || complete > 0;
    if let Some(cache_path) = cache_path.filter(|_| worth_caching(&log.meta) && grew && log.start == 0) {
        let pos = cache::Position::new(&log.meta, &log.bytes[..log.new_from + complete], lines);
        // A failed write only costs time next run.
        let _ = cache::save(&cache_path, &pos, &tally);
    }
    let rest_owned = tally.add_lines(&rest_text, lines + 1);
    tally.add_owned(&rest_owned);
    heats.problems = tally
        .bad_lines
        .iter()
        .map(|&n| {
            Diagnostic::error(
                Some(usize::try_from(n).unwrap_or(usize::MAX)),
                "not an access line ({\"id\",\"store\",\"at\"}); skipped",
            )
            .in_file(&path)
        })
        .collect();
    compute(heats, tally, min_heat)
}

/// Whether the log is read through the heat cache: from 64 KiB (about 1,000 lines) on; a
/// shorter log is read whole in under a millisecond, and a small repository gets no cache file.
/// Unit tests use the cache at every length.
fn worth_caching(log: &std::fs::Metadata) -> bool {
    cfg!(test) || log.len() >= 64 * 1024
}

/// The number of line breaks in `bytes`.
fn bytecount_lines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

/// The heat cache of the repository at `layout`, when kb may keep one ([`Layout::cache_file`]).
fn cache_path(layout: &Layout) -> Option<PathBuf> {
    layout.cache_file("heat.idx")
}

/// What [`read_log`] read: the log's bytes from `start` on, of which those from `new_from` on
/// are not in the cache.
struct LogRead {
    meta: std::fs::Metadata,
    start: u64,
    bytes: Vec<u8>,
    new_from: usize,
    /// The cache this read continues, with its position and body.
    cached: Option<(cache::Position, Vec<u8>)>,
}

/// Reads the log: only what follows the heat cache's position when the log is untouched since
/// the cache was written; else the whole log, continuing the cache when the log still begins with
/// the bytes it tallied (an append: hashing is far cheaper than parsing).
fn read_log(path: &Path, root: &Path, cache_path: Option<&Path>) -> std::io::Result<Option<LogRead>> {
    use std::io::{Read, Seek, SeekFrom};
    let Some(mut file) = crate::fsio::open_input(path, root)? else { return Ok(None) };
    let meta = file.metadata()?;
    let cached = cache_path
        .filter(|_| worth_caching(&meta))
        .and_then(|c| cache::load(c, meta.len()))
        .filter(|(pos, _)| pos.may_continue(&meta));
    let cached = match cached {
        Some((pos, body)) if pos.unchanged(&meta) => {
            file.seek(SeekFrom::Start(pos.consumed))?;
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            return Ok(Some(LogRead { meta, start: pos.consumed, bytes, new_from: 0, cached: Some((pos, body)) }));
        }
        other => other,
    };
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes)?;
    let cached = cached
        .filter(|(pos, _)| usize::try_from(pos.consumed).is_ok_and(|n| n <= bytes.len() && pos.matches(&bytes[..n])));
    let new_from = cached.as_ref().map_or(0, |(pos, _)| pos.consumed as usize);
    Ok(Some(LogRead { meta, start: 0, bytes, new_from, cached }))
}

/// Computes every heat of at least `min_heat` from the tally of the whole log.
fn compute(mut heats: Heats, tally: log::Tally<'_>, min_heat: u64) -> Heats {
    let window_days = heats.window_days;
    let mut days: Vec<&str> = tally.days;
    days.sort_unstable();
    days.dedup();
    let window = &days[days.len().saturating_sub(usize::try_from(window_days).unwrap_or(usize::MAX))..];
    heats.active_days = window.iter().map(|d| d.to_string()).collect();
    let first_day = window.first().copied().unwrap_or("");
    heats.heats = tally
        .ids
        .into_iter()
        .filter_map(|((store, id), mut t)| {
            let heat = t.days.iter().filter(|(day, _)| *day >= first_day).map(|(_, count)| count).sum();
            if heat < min_heat {
                return None;
            }
            let promote_candidate = t.days.len() >= PROMOTE_DAYS && {
                t.days.sort_unstable();
                consecutive_active_days(&days, t.days.iter().map(|(day, _)| *day)) >= PROMOTE_DAYS
            };
            Some(Heat {
                access: Access { id: id.to_string(), store },
                heat,
                last_access: t.last.to_string(),
                promote_candidate,
            })
        })
        .collect();
    // Hottest first, then the latest access; then by store and id, so that the memories one
    // recall logged together (same time) always come in the same order.
    fn tie_break(h: &Heat) -> (Store, usize, &str) {
        (h.access.store, h.access.id.len(), &h.access.id)
    }
    heats.heats.sort_by(|a, b| {
        b.heat
            .cmp(&a.heat)
            .then_with(|| b.last_access.cmp(&a.last_access))
            .then_with(|| tie_break(a).cmp(&tie_break(b)))
    });
    heats
}

/// Returns the longest run of consecutive active days (of `all`, sorted) found in `used`
/// (sorted): days with no access by anyone do not break a run.
fn consecutive_active_days<'a>(all: &[&str], used: impl IntoIterator<Item = &'a str>) -> usize {
    let mut used = used.into_iter().peekable();
    let (mut best, mut run) = (0, 0);
    for day in all {
        if used.next_if_eq(day).is_some() {
            run += 1;
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
        let h = read(&l, 5, 0);
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
        let h = read(&l, 10, 0);
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
        assert_eq!(consecutive_active_days(&all, ["d1", "d2", "d4", "d5", "d6"]), 3);
        assert_eq!(consecutive_active_days(&all, ["d2", "d3", "d4", "d5", "d6"]), 5);
    }

    /// What a read returns, comparable (the problems by line).
    type Summary = (Vec<String>, Vec<(Access, u64, String, bool)>, Vec<Option<usize>>);

    fn summary(h: &Heats) -> Summary {
        let heats = h.heats.iter().map(|h| (h.access.clone(), h.heat, h.last_access.clone(), h.promote_candidate));
        (h.active_days.clone(), heats.collect(), h.problems.iter().map(|p| p.line).collect())
    }

    /// Reads the log as if for the first time: the heat cache removed first.
    fn read_fresh(l: &Layout, window: u64) -> Heats {
        let _ = std::fs::remove_file(cache_path(l).unwrap());
        read(l, window, 0)
    }

    #[test]
    fn the_cache_gives_what_a_whole_read_gives() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        let log = log_path(&l);
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        // Appends in the shape kb writes and in others serde must read, junk, a torn line that a
        // later append completes, CRLF, and a line without its line break.
        let chunks: [&[u8]; 9] = [
            b"{\"id\":1,\"store\":\"md\",\"at\":\"2026-11-01T09:00:00+00:00\"}\n",
            b"{\"id\":1,\"store\":\"md\",\"at\":\"2026-11-02T09:00:00+00:00\"}\njunk\n",
            b"{ \"at\": \"2026-11-02T10:00:00+00:00\", \"store\": \"copilot\", \"id\": \"mem-\\u0041\" }\r\n",
            b"{\"id\":2,\"store\":\"md\",\"at\":\"2026-11-0",
            b"3T09:00:00+00:00\"}\n{\"id\":2,\"store\":\"md\",\"at\":\"2026-11-03T09:30:00+00:00\"}\n",
            b"{\"id\":007,\"store\":\"md\",\"at\":\"2026-11-04T09:00:00+00:00\"}\n\xff\xfe\n",
            b"{\"id\":1,\"store\":\"md\",\"at\":\"2026-11-04T09:00:00+00:00\"}",
            b"\n{\"id\":1,\"store\":\"md\",\"at\":\"2026-11-05T09:00:00+00:00\"}\n",
            b"\n\n{\"id\":3,\"store\":\"md\",\"at\":\"2026-11-05T09:00:00+00:00\"}\n",
        ];
        for chunk in chunks {
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
            f.write_all(chunk).unwrap();
            for window in [1, 2, 10] {
                let cached = read(&l, window, 0);
                // The cache holds every complete line, so the next read starts from there.
                let bytes = std::fs::read(&log).unwrap();
                let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) as u64;
                assert_eq!(cache::load(&cache_path(&l).unwrap(), u64::MAX).unwrap().0.consumed, complete);
                assert_eq!(
                    summary(&cached),
                    summary(&read_fresh(&l, window)),
                    "after {:?}",
                    String::from_utf8_lossy(chunk)
                );
            }
        }
        let h = read(&l, 10, 0);
        // Junk, a leading zero (not JSON) and bytes that are not UTF-8.
        assert_eq!(h.problems.iter().map(|p| p.line).collect::<Vec<_>>(), [Some(3), Some(7), Some(8)]);
        let rec = h.heats.iter().find(|h| h.access.store == Store::Copilot).unwrap();
        assert_eq!(rec.access.id, "mem-A");
        assert_eq!((h.of_memory(1), h.of_memory(2), h.of_memory(3)), (4, 2, 1));
        // The cold ones are left out on request.
        let warm = read(&l, 10, WARM);
        assert_eq!(warm.heats.iter().map(|h| h.access.id.as_str()).collect::<Vec<_>>(), ["1"]);
    }

    #[test]
    fn a_rewritten_log_is_read_whole_again() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        for day in 1..=4 {
            record(&l, at(day, 9), &[md(1), md(2)]);
        }
        assert_eq!(read(&l, 10, 0).of_memory(1), 4);
        let log = log_path(&l);
        // Rewritten in place (same inode), shorter, then longer than the cached position, with
        // different bytes before that position; then replaced by another file.
        let line = |id: u64, day: u32| {
            format!("{{\"id\":{id},\"store\":\"md\",\"at\":\"2026-11-{day:02}T09:00:00+00:00\"}}\n")
        };
        std::fs::write(&log, line(3, 1)).unwrap();
        assert_eq!(summary(&read(&l, 10, 0)), summary(&read_fresh(&l, 10)));
        assert_eq!(read(&l, 10, 0).of_memory(1), 0);
        let longer: String = (1..=9).map(|d| line(5, d)).collect();
        std::fs::write(&log, &longer).unwrap();
        assert_eq!(read(&l, 10, 0).of_memory(5), 9);
        let other = log.with_extension("new");
        std::fs::write(&other, line(6, 2)).unwrap();
        std::fs::rename(&other, &log).unwrap();
        assert_eq!((read(&l, 10, 0).of_memory(6), read(&l, 10, 0).of_memory(5)), (1, 0));
    }

    #[test]
    fn a_corrupt_or_foreign_cache_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        for day in 1..=3 {
            record(&l, at(day, 9), &[md(1)]);
        }
        let want = summary(&read(&l, 10, 0));
        let cache = cache_path(&l).unwrap();
        let good = std::fs::read(&cache).unwrap();
        for bad in [Vec::new(), b"junk".to_vec(), good[..good.len() / 2].to_vec(), {
            let mut b = good.clone();
            b[good.len() / 2] ^= 0x40;
            b
        }] {
            std::fs::write(&cache, &bad).unwrap();
            assert_eq!(summary(&read(&l, 10, 0)), want);
        }
        // A folder in its place: the heats are still right, and nothing is written there.
        std::fs::remove_file(&cache).unwrap();
        std::fs::create_dir(&cache).unwrap();
        assert_eq!(summary(&read(&l, 10, 0)), want);
    }

    /// Sets the log's mtime an hour back, as if it was last written long before the cache.
    fn age(path: &Path) {
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options().write(true).open(path).unwrap().set_modified(old).unwrap();
    }

    #[test]
    fn an_untouched_log_is_read_after_the_cache_and_an_edit_of_the_same_length_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        let log = log_path(&l);
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let line = |id: u64, day: u32| {
            format!("{{\"id\":{id},\"store\":\"md\",\"at\":\"2026-11-{day:02}T09:00:00+00:00\"}}\n")
        };
        // 13 KB: the edit below is far before the end.
        let text: String = (1..=5).map(|d| line(1, d)).chain((0..200).map(|_| line(3, 6))).collect();
        std::fs::write(&log, text + "torn").unwrap();
        age(&log);
        let first = summary(&read(&l, 10, 0));
        let cache = cache_path(&l).unwrap();
        let (pos, _) = cache::load(&cache, u64::MAX).unwrap();
        assert!(pos.unchanged(&std::fs::metadata(&log).unwrap()), "an old log is trusted by its stamp");
        // Read again through the stamp: only the torn tail is read, and the result is the same.
        assert_eq!(summary(&read(&l, 10, 0)), first);
        assert_eq!(first.2, [Some(206)]);
        // Edited in place to the same length (memory 1 becomes memory 2 on day 1), and aged: the
        // ctime changed, so the prefix is hashed, found different, and the log read whole.
        let edited = std::fs::read_to_string(&log).unwrap().replacen("\"id\":1,", "\"id\":2,", 1);
        std::fs::write(&log, &edited).unwrap();
        age(&log);
        let h = read(&l, 10, 0);
        assert_eq!((h.of_memory(1), h.of_memory(2)), (4, 1));
        assert_eq!(summary(&h), summary(&read_fresh(&l, 10)));
    }
}
