//! The racy-git margin: a cache entry is trusted only when the file's mtime and ctime are more than
//! 2 s older than the cache. A cache built within 2 s of a clone, a checkout or a bulk edit trusts
//! nothing; once those files have aged, the next read re-verifies them and writes the cache again,
//! so the run after reads no file. `KB_DEBUG_STATS` shows what a scan did.

use crate::common::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The fields of the one `kb-stats:` line on stderr.
fn stats(run: &Run) -> BTreeMap<String, String> {
    let lines: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("kb-stats: ")).collect();
    assert_eq!(lines.len(), 1, "expected one kb-stats line: {run:?}");
    lines[0]["kb-stats: ".len()..]
        .split(' ')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("bad field {kv:?} in {}", lines[0]));
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// Runs `kb list` and returns its stats as `(files, read, cached, racy, cache_written)`.
fn list(t: &TestEnv) -> (u64, u64, u64, u64, bool) {
    let s = stats(&t.kb(&["list"]).ok());
    let n = |k: &str| s[k].parse::<u64>().unwrap();
    (n("files"), n("read"), n("cached"), n("racy"), s["cache_written"] == "yes")
}

#[test]
fn the_stats_line_is_printed_only_when_asked() {
    let t = TestEnv::pinned();
    t.memory(1, "a memory", &days_ago(1.0), &[]);
    let run = t.kb(&["list"]).ok();
    assert!(!run.stderr.contains("kb-stats"), "{run:?}");
    let t = t.env("KB_DEBUG_STATS", "");
    assert!(!t.kb(&["list"]).ok().stderr.contains("kb-stats"));
    let t = t.env("KB_DEBUG_STATS", "1");
    let s = stats(&t.kb(&["list"]).ok());
    assert_eq!(s.keys().collect::<Vec<_>>(), ["cache_written", "cached", "files", "racy", "read"]);
    assert_eq!(s["files"], "1");
    // JSON output stays clean: the line is on stderr.
    t.kb(&["--json", "list"]).ok().json();
}

#[test]
fn a_cache_built_too_soon_is_refreshed_once_its_files_age() {
    const N: u64 = 40;
    for attempt in 1..=3 {
        let t = TestEnv::pinned().env("KB_DEBUG_STATS", "1");
        let start = Instant::now();
        for id in 1..=N {
            t.memory(id, &format!("memory number {id} about lanterns"), &days_ago(1.0), &[]);
        }
        let created = Instant::now();
        // Built right after the files were made: every entry is too young to trust.
        assert_eq!(list(&t), (N, N, 0, 0, true));
        let second = list(&t);
        if start.elapsed() > Duration::from_millis(1500) {
            // The machine was too slow to build the cache within the margin; try again.
            eprintln!("attempt {attempt}: the first runs took {:?}", start.elapsed());
            continue;
        }
        // Still too young: re-verified, and a rewrite would not make them trusted, so none.
        assert_eq!(second, (N, N, 0, N, false), "within the margin");
        std::thread::sleep((created + Duration::from_millis(2500)).saturating_duration_since(Instant::now()));
        // Aged: re-verified once more, and now the cache is written so that it trusts them.
        assert_eq!(list(&t), (N, N, 0, N, true), "after the margin");
        assert_eq!(list(&t), (N, 0, N, 0, false), "the run after the refresh reads no memory file");
        assert_eq!(list(&t), (N, 0, N, 0, false));
        // An edit is read and cached; being young, it is then re-verified without rewrites.
        std::fs::write(t.file_of(7), t.read(&t.file_of(7)).replace("lanterns", "kettles")).unwrap();
        assert_eq!(list(&t), (N, 1, N - 1, 0, true), "the edited file");
        assert_eq!(list(&t), (N, 1, N - 1, 1, false), "the edited file, too young to trust");
        assert_eq!(t.kb(&["--json", "recall", "kettles"]).ok().json()["count"], 1);
        return;
    }
    panic!("three attempts could not build the cache within 1.5 s of making the files");
}
