//! The racy-git margin: a cache entry is trusted only when the file's mtime and ctime are more than
//! 2 s older than the cache. A cache built within 2 s of a clone, a checkout or a bulk edit trusts
//! nothing; once those files have aged, the next read re-verifies them and writes the cache again,
//! so the run after reads no file. `KB_DEBUG_STATS` shows what a scan did.

use crate::common::*;
use std::collections::BTreeMap;
use std::io::Write;
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
    assert_eq!(s.keys().collect::<Vec<_>>(), ["cache_written", "cached", "files", "racy", "read", "trusted"]);
    assert_eq!(s["trusted"], "no", "a command stats every file");
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

/// The `trusted=` field of each `kb-stats:` line of a run.
fn trusted(run: &Run) -> Vec<String> {
    run.stderr
        .lines()
        .filter_map(|l| l.strip_prefix("kb-stats: "))
        .map(|l| l.split(' ').find_map(|kv| kv.strip_prefix("trusted=")).unwrap_or("?").to_string())
        .collect()
}

#[test]
fn the_prompt_hook_trusts_an_unchanged_folder_and_checks_the_memories_it_sends() {
    let t = TestEnv::pinned().env("KB_DEBUG_STATS", "1");
    let pool = t.memory(1, "The postgres connection pool size is set in config/db.toml", &days_ago(1.0), &[]);
    t.memory(2, "Release notes are written by hand before each tag", &days_ago(1.0), &[]);
    std::thread::sleep(Duration::from_millis(2500));
    // A command stats every file and writes a cache that trusts the aged folder.
    assert!(list(&t).4, "the cache is written once the folder is old enough");
    let prompt = |session: &str| {
        let payload = format!(r#"{{"session_id":"{session}","prompt":"how big is the postgres connection pool"}}"#);
        t.kb_stdin(&["hook", "prompt", "--agent", "claude"], Some(&payload))
    };
    let run = prompt("s1");
    assert_eq!(trusted(&run), ["yes"], "{run:?}");
    assert!(run.stdout.contains("[memory 1] The postgres connection pool size is set"), "{run:?}");
    // Edited in place (same file, same folder): the folder says nothing, the memory's own stat does.
    let edited = std::fs::read_to_string(&pool).unwrap().replace("size is set", "size is 20, set");
    std::fs::OpenOptions::new().write(true).truncate(true).open(&pool).unwrap().write_all(edited.as_bytes()).unwrap();
    let run = prompt("s2");
    assert_eq!(trusted(&run), ["yes", "no"], "read again once a memory it sends changed: {run:?}");
    assert!(run.stdout.contains("size is 20, set in config/db.toml"), "{run:?}");
    // A file added changes the folder: a full scan, no trust.
    t.memory(3, "The postgres connection pool is shared by the workers", &days_ago(1.0), &[]);
    let run = prompt("s3");
    assert_eq!(trusted(&run), ["no"], "{run:?}");
    assert!(run.stdout.contains("shared by the workers"), "{run:?}");
}
