//! Temporary files of atomic writes (`.kb-tmp-XXXXXX`, docs/safety.md): a write killed before its
//! rename leaves one, possibly holding part of a memory. The next write removes those older than a
//! minute, under the repository lock; reads ignore them; `kb check` reports the ones older than the minute.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The folders kb writes into, relative to the root ("" is the root itself).
const FOLDERS: &[&str] =
    &["", ".co-cli", ".co-cli/knowledge", ".co-cli/knowledge/memories", ".co-cli/cache", ".github"];

const PARTIAL: &str =
    "---\ncreated: '2026-11-20T10:00:00+00:00'\nid: 2\nsource: user-told\ntags: []\n---\n\nhalf a memo";

/// Writes `rel` with a memory's start and sets its mtime `age_secs` back.
fn plant(t: &TestEnv, rel: &str, age_secs: u64) -> PathBuf {
    let p = t.write(rel, PARTIAL);
    age(&p, age_secs);
    p
}

fn age(p: &Path, secs: u64) {
    let when = SystemTime::now() - Duration::from_secs(secs);
    std::fs::File::options().write(true).open(p).unwrap().set_modified(when).unwrap();
}

fn in_folder(folder: &str, name: &str) -> String {
    if folder.is_empty() { name.to_string() } else { format!("{folder}/{name}") }
}

/// A repository with one memory and the folders kb writes into.
fn repo() -> TestEnv {
    let t = TestEnv::pinned();
    t.memory(1, "a memory about lanterns", &days_ago(1.0), &[]);
    t.write(".github/copilot-memories.jsonl", "");
    std::fs::create_dir_all(t.root().join(".co-cli/cache")).unwrap();
    t
}

#[test]
fn a_write_removes_stale_temp_files_and_keeps_fresh_ones() {
    let t = repo();
    let mut stale = Vec::new();
    let mut fresh = Vec::new();
    for folder in FOLDERS {
        stale.push(plant(&t, &in_folder(folder, ".kb-tmp-OLD123"), 120));
        fresh.push(plant(&t, &in_folder(folder, ".kb-tmp-NEW456"), 0));
    }
    // Not kb's temporary files: kept whatever their age.
    let others = [plant(&t, ".co-cli/knowledge/memories/.kb-tmpX", 120), plant(&t, ".github/kb-tmp-abc", 120)];
    let dir = t.root().join(".co-cli/.kb-tmp-folder");
    std::fs::create_dir_all(&dir).unwrap();
    t.kb(&["save", "a new memory about kettles"]).ok();
    for p in &stale {
        assert!(!p.exists(), "a stale temporary file was kept: {p:?}");
    }
    for p in fresh.iter().chain(&others) {
        assert!(p.exists(), "a file that is not a stale temporary file was removed: {p:?}");
    }
    assert!(dir.is_dir());
    assert_eq!(t.ids(), [1, 2]);
}

#[test]
fn every_write_command_sweeps() {
    let t = repo();
    let outside = plant(&t, ".co-cli/.kb-tmp-aaaaaa", 120);
    let memories = plant(&t, ".co-cli/knowledge/memories/.kb-tmp-bbbbbb", 120);
    t.kb(&["protect", "1"]).ok();
    assert!(!outside.exists() && !memories.exists());
    let github = plant(&t, ".github/.kb-tmp-cccccc", 120);
    let memories = plant(&t, ".co-cli/knowledge/memories/.kb-tmp-dddddd", 120);
    t.kb(&["forget", "1"]).ok();
    assert!(!github.exists() && !memories.exists());
    let github = plant(&t, ".github/.kb-tmp-eeeeee", 120);
    t.kb(&["save", "--store", "copilot", "--subject", "testing", "--reason", "r", "run the suite before pushing"]).ok();
    assert!(!github.exists());
}

#[test]
fn reads_and_dry_runs_ignore_temp_files_and_remove_none() {
    let t = repo();
    // A whole valid memory in a temporary file: still not a memory.
    let whole = t.write(
        ".co-cli/knowledge/memories/.kb-tmp-WHOLE1",
        "---\ncreated: '2026-11-20T10:00:00+00:00'\nid: 2\nsource: user-told\ntags: []\n---\n\nsweeping text\n",
    );
    age(&whole, 120);
    let other = plant(&t, ".co-cli/.kb-tmp-OTHER1", 120);
    let before = t.snapshot();
    let run = t.kb(&["list"]).ok();
    assert!(!run.stderr.contains("kb-tmp"), "{run:?}");
    assert_eq!(t.ids(), [1]);
    assert_eq!(t.kb(&["--json", "recall", "sweeping"]).ok().json()["count"], 0);
    t.kb(&["show", "2"]).err();
    t.kb(&["save", "--dry-run", "a new memory about kettles"]).ok();
    t.kb(&["context"]).ok();
    assert_same_tree(&before, &t.snapshot());
    assert!(whole.exists() && other.exists());
}

#[test]
fn check_reports_the_temp_files_older_than_a_minute() {
    // A fresh one belongs to a write under way in another kb process: not a leftover.
    let t = repo();
    let fresh = plant(&t, ".co-cli/knowledge/memories/.kb-tmp-Fresh1", 0);
    let stale = plant(&t, ".github/.kb-tmp-Stale1", 120);
    let old = plant(&t, ".co-cli/knowledge/memories/.kb-tmp-Old1", 120);
    let run = t.kb(&["--json", "check"]);
    assert_eq!(run.code, 1, "{run:?}");
    let problems = run.json()["problems"].as_array().unwrap().clone();
    let mut paths: Vec<String> = problems.iter().map(|p| p["path"].as_str().unwrap().to_string()).collect();
    paths.sort();
    let mut want = vec![old.display().to_string(), stale.display().to_string()];
    want.sort();
    assert_eq!(paths, want, "{problems:?}");
    for p in &problems {
        let message = p["message"].as_str().unwrap();
        assert!(message.contains("leftover temporary file from an interrupted write"), "{message}");
        assert!(message.contains("a minute old"), "{message}");
    }
    let text = t.kb(&["check"]);
    assert!(text.stdout.contains(".github/.kb-tmp-Stale1: leftover temporary file"), "{text:?}");
    assert!(text.stdout.contains("2 problems"), "{text:?}");
    // Checking removes nothing; the next write removes the stale ones.
    assert!(fresh.exists() && stale.exists() && old.exists());
    t.kb(&["save", "a new memory about kettles"]).ok();
    assert!(fresh.exists() && !stale.exists() && !old.exists());
    t.kb(&["check"]).ok();
}

#[test]
fn the_sweep_never_follows_a_folder_link_out_of_the_root() {
    let t = repo();
    let outside = t.dir.path().join("outside-github");
    std::fs::create_dir_all(&outside).unwrap();
    let theirs = outside.join(".kb-tmp-theirs");
    std::fs::write(&theirs, "someone else's").unwrap();
    age(&theirs, 120);
    std::fs::remove_dir_all(t.root().join(".github")).unwrap();
    std::os::unix::fs::symlink(&outside, t.root().join(".github")).unwrap();
    t.kb(&["save", "a new memory about kettles"]).ok();
    assert!(theirs.exists(), "kb removed a file outside the root");
}
