//! A fresh clone (docs/performance.md): `.co-cli/` is committed but `.co-cli/cache/` is not, so the
//! first read command creates the cache folder, with a `.gitignore` of `*`, and keeps its index
//! cache there; a folder without `.co-cli/` gets nothing.

use crate::common::*;
use std::path::Path;
use std::process::Command;

/// The read commands, each run once.
const READS: &[&[&str]] =
    &[&["list"], &["--json", "list"], &["recall", "clone"], &["show", "1"], &["check"], &["context"], &["config"]];

/// Returns the names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    out.sort();
    out
}

/// A clone: memories committed under `.co-cli/`, no cache folder.
fn clone() -> TestEnv {
    let t = TestEnv::pinned();
    t.memory(1, "a memory from the clone", &days_ago(2.0), &["python"]);
    t.memory(2, "another memory from the clone", &days_ago(1.0), &[]);
    t
}

#[test]
fn a_read_in_a_clone_creates_the_ignored_cache_folder_and_nothing_else() {
    let t = clone();
    let before = t.snapshot();
    t.kb(&["list"]).ok();
    let cache = t.root().join(".co-cli/cache");
    assert!(cache.is_dir(), "the first read did not create .co-cli/cache/");
    assert_eq!(t.read(&cache.join(".gitignore")), "*\n");
    assert_eq!(names(&cache), [".gitignore", "memories.idx"], "only the ignore file and the index cache");
    for args in READS {
        t.kb(args);
        assert_same_tree(&before, &t.snapshot());
    }
    assert_eq!(names(&cache), [".gitignore", "memories.idx", "recall.idx"], "and recall's index");
    assert_eq!(t.ids(), [1, 2]);
}

#[test]
fn a_read_keeps_a_cache_folder_made_by_hand_and_gives_it_its_gitignore() {
    // A cache folder without its `.gitignore` (made by hand, or a kill between the two steps)
    // gets one, so it never shows in `git status`; an existing `.gitignore` is left alone.
    let t = clone();
    let cache = t.root().join(".co-cli/cache");
    std::fs::create_dir_all(&cache).unwrap();
    t.kb(&["list"]).ok();
    assert_eq!(t.read(&cache.join(".gitignore")), "*\n");
    std::fs::write(cache.join(".gitignore"), "# mine\n*\n").unwrap();
    std::fs::remove_file(cache.join("memories.idx")).unwrap();
    t.kb(&["list"]).ok();
    assert_eq!(t.read(&cache.join(".gitignore")), "# mine\n*\n");
    assert!(cache.join("memories.idx").is_file());
}

#[test]
fn a_read_without_a_co_cli_folder_creates_nothing() {
    let t = TestEnv::pinned();
    t.write("notes.md", "not a memory\n");
    let before = t.snapshot();
    for args in READS {
        t.kb(args);
    }
    assert_same_tree(&before, &t.snapshot());
    assert!(!t.root().join(".co-cli").exists(), "a read command created .co-cli/");
}

#[test]
fn a_read_never_creates_the_cache_through_a_co_cli_link_out_of_the_root() {
    let t = TestEnv::pinned();
    let outside = t.dir.path().join("outside-co-cli");
    std::fs::create_dir_all(outside.join("knowledge/memories")).unwrap();
    std::os::unix::fs::symlink(&outside, t.root().join(".co-cli")).unwrap();
    for args in READS {
        t.kb(args);
    }
    assert_eq!(names(&outside), ["knowledge"], "a read wrote outside the root through a symlink");
    assert_eq!(names(&outside.join("knowledge")), ["memories"]);
}

#[test]
fn git_status_stays_clean_after_reads_in_a_clone() {
    let t = clone();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=kb", "-c", "user.email=kb@example.com", "-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(t.root())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", t.home())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
            Ok(o) => panic!("git {args:?} failed: {}", String::from_utf8_lossy(&o.stderr)),
            Err(_) => None,
        }
    };
    if git(&["init", "-q"]).is_none() {
        eprintln!("skipped: git is not installed");
        return;
    }
    git(&["add", "-A"]).unwrap();
    git(&["commit", "-q", "-m", "clone"]).unwrap();
    for args in READS {
        t.kb(args);
    }
    assert!(t.root().join(".co-cli/cache/memories.idx").is_file());
    assert_eq!(git(&["status", "--porcelain", "--untracked-files=all"]).unwrap(), "");
}
