//! Concurrent kb processes (docs/safety.md): the lock serialises read-modify-write, so no save is
//! lost, no id is reused, readers never see a torn file, and a held lock makes writers wait.

use crate::common::*;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

const WORKERS: usize = 8;
const SAVES_EACH: usize = 40;

#[test]
fn eight_writers_lose_nothing_and_never_reuse_an_id() {
    let t = Arc::new(TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "100000"));
    let mut texts: Vec<Vec<String>> = Vec::new();
    for w in 0..WORKERS {
        let mut rng = Rng::new(1000 + w as u64);
        texts.push((0..SAVES_EACH).map(|_| format!("{} {}", sentence(&mut rng, 7), rng.alnum(12))).collect());
    }
    let handles: Vec<_> = texts
        .iter()
        .cloned()
        .map(|mine| {
            let t = Arc::clone(&t);
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for text in mine {
                    let out = t.kb(&["--json", "save", &text]).ok().json();
                    assert_eq!(out["action"], "saved", "{text}: {out}");
                    ids.push(out["memory_id"].as_u64().unwrap());
                }
                ids
            })
        })
        .collect();
    let mut reported: Vec<u64> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    reported.sort_unstable();
    let total = WORKERS * SAVES_EACH;
    assert_eq!(reported, (1..=total as u64).collect::<Vec<_>>(), "ids reported by the saves");

    let list = t.list_json();
    assert_eq!(list["count"], total);
    let ids: Vec<u64> = list["memories"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect();
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), total, "duplicate ids");
    let stored: BTreeSet<String> = t.kb(&["--json", "recall", "--exact", "", "-n", "100000"]).ok().json()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    let expected: BTreeSet<String> = texts.into_iter().flatten().collect();
    assert_eq!(stored, expected, "every text saved exactly once");
    let check = t.kb(&["check"]);
    assert_eq!(check.code, 0, "{check:?}");
    let leftovers: Vec<String> = std::fs::read_dir(t.memories())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".md"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn concurrent_consolidations_keep_every_tag() {
    let t = Arc::new(TestEnv::pinned());
    t.memory(1, "the deploy runs on mondays", &days_ago(1.0), &["base"]);
    let handles: Vec<_> = (0..WORKERS)
        .map(|w| {
            let t = Arc::clone(&t);
            std::thread::spawn(move || {
                for i in 0..5 {
                    let tag = format!("w{w}-{i}");
                    let out = t.kb(&["--json", "save", "The deploy runs on Mondays", "-t", &tag]).ok().json();
                    assert_eq!(out["action"], "consolidated", "{out}");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(t.memory_files().len(), 1);
    let tags =
        t.show(1)["tags"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(tags.len(), 1 + WORKERS * 5, "lost tag updates: {tags:?}");
    assert_eq!(tags[0], "base");
}

#[test]
fn readers_never_see_a_torn_or_missing_file_while_writers_run() {
    let t = Arc::new(TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "100000"));
    for id in 1..=20 {
        t.memory(id, &format!("seed memory number {id} {}", Rng::new(id).alnum(10)), &days_ago(30.0), &["seed"]);
    }
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let t = Arc::clone(&t);
            std::thread::spawn(move || {
                let mut rng = Rng::new(50 + w);
                for i in 0..15 {
                    let text = format!("{} {}", sentence(&mut rng, 6), rng.alnum(10));
                    t.kb(&["save", &text]).ok();
                    // Rewrites of existing files too: protect toggles replace a file in place.
                    let id = (w * 5 + i % 5 + 1).to_string();
                    t.kb(&[if i % 2 == 0 { "protect" } else { "unprotect" }, &id]).ok();
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let t = Arc::clone(&t);
            std::thread::spawn(move || {
                for _ in 0..25 {
                    let run = t.kb(&["--json", "recall", "seed", "-n", "1000"]).ok();
                    assert!(run.stderr.is_empty(), "a reader skipped a file: {run:?}");
                    assert_eq!(run.json()["count"], 20, "a seed memory went missing: {run:?}");
                    let run = t.kb(&["--json", "list"]).ok();
                    assert!(run.stderr.is_empty(), "{run:?}");
                }
            })
        })
        .collect();
    for h in writers.into_iter().chain(readers) {
        h.join().unwrap();
    }
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn a_held_lock_makes_a_writer_wait() {
    let t = TestEnv::pinned();
    let lock_path = t.root().join(".co-cli/cache/lock");
    std::fs::create_dir_all(lock_path.parent().unwrap()).unwrap();
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path).unwrap();
    lock.lock().unwrap();
    let mut cmd = t.command(&["save", "written after the lock is released"]);
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_millis(400) {
        assert!(child.try_wait().unwrap().is_none(), "kb did not wait for the lock");
        assert!(t.memory_files().is_empty(), "kb wrote while another process held the lock");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    lock.unlock().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(t.memory_files(), ["001-written-after-the-lock-is-released.md"]);
}

#[test]
fn readers_do_not_wait_for_the_lock() {
    let t = TestEnv::pinned();
    t.memory(1, "readable while locked", &days_ago(1.0), &[]);
    let lock_path = t.root().join(".co-cli/cache/lock");
    std::fs::create_dir_all(lock_path.parent().unwrap()).unwrap();
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path).unwrap();
    lock.lock().unwrap();
    let start = std::time::Instant::now();
    assert_eq!(t.list_json()["count"], 1);
    t.kb(&["recall", "readable"]).ok();
    t.kb(&["save", "--dry-run", "a dry run reads only"]).ok();
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
    lock.unlock().unwrap();
}
