//! The cache in `.co-cli/cache/` is derived state (docs/performance.md): deleting it, corrupting
//! it, or editing a memory behind its back never changes a result.

use crate::common::*;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Every read-side result, to compare across cache states.
fn results(t: &TestEnv) -> Vec<serde_json::Value> {
    let mut out = vec![
        t.kb(&["--json", "list"]).ok().json(),
        t.kb(&["--json", "recall", "--exact", "", "-n", "1000"]).ok().json(),
        t.kb(&["--json", "recall", "memory", "about", "-n", "1000"]).ok().json(),
        t.kb(&["--json", "recall", "lantern"]).ok().json(),
        t.kb(&["--json", "check"]).json(),
        t.kb(&["--json", "save", "--dry-run", "first memory about lanterns"]).ok().json(),
        t.kb(&["--json", "save", "--dry-run", "a brand new text"]).ok().json(),
    ];
    for id in [1, 2, 3, 4] {
        out.push(t.kb(&["--json", "show", &id.to_string()]).ok().json());
    }
    out
}

fn set_mtime(path: &Path, when: SystemTime) {
    std::fs::File::options().write(true).open(path).unwrap().set_modified(when).unwrap();
}

/// A repository whose memory files are an hour old, so a cache trusts them.
fn seeded() -> TestEnv {
    let t = TestEnv::pinned();
    t.memory(1, "first memory about lanterns", &days_ago(3.0), &["python"]);
    t.memory(2, "second memory about kettles", &days_ago(2.0), &[]);
    t.protected_memory(3, "third memory, protected", &days_ago(1.0));
    t.mem_file("004-x.md", "---\nid: 4\ncreated: '2026-11-21T10:00:00Z'\nupdated: '2026-11-22T10:00:00Z'\ntags: [decision]\n---\n\nfourth\n");
    t.mem_file("005-bad.md", "---\nid: 5\ncreated: nope\n---\n\nbad\n");
    for name in t.memory_files() {
        set_mtime(&t.memories().join(name), old());
    }
    // As after `kb init`, any write or any read: the cache folder exists.
    std::fs::create_dir_all(t.root().join(".co-cli/cache")).unwrap();
    t
}

/// Returns an mtime old enough for the cache to trust (2026-09-21).
fn old() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000)
}

fn cache_file(t: &TestEnv) -> std::path::PathBuf {
    let dir = t.root().join(".co-cli/cache");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().unwrap() == "memories.idx")
        .collect();
    assert_eq!(files.len(), 1, "expected one cache file in {dir:?}: {files:?}");
    files[0].clone()
}

#[test]
fn results_are_the_same_without_the_cache() {
    let t = seeded();
    let first = results(&t);
    assert_eq!(results(&t), first, "second run (warm cache)");
    std::fs::remove_dir_all(t.root().join(".co-cli/cache")).unwrap();
    assert_eq!(results(&t), first, "cache deleted");
    std::fs::create_dir_all(t.root().join(".co-cli/cache")).unwrap();
    assert_eq!(results(&t), first, "cache rebuilt");
    cache_file(&t);
}

#[test]
fn a_corrupt_cache_changes_nothing() {
    let t = seeded();
    let want = results(&t);
    let path = cache_file(&t);
    let good = std::fs::read(&path).unwrap();
    let mut variants: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), vec![]),
        ("half".into(), good[..good.len() / 2].to_vec()),
        ("one byte short".into(), good[..good.len() - 1].to_vec()),
        ("one byte more".into(), [good.clone(), vec![0]].concat()),
        ("garbage".into(), Rng::new(1).alnum(good.len()).into_bytes()),
        ("header and garbage".into(), [good[..16].to_vec(), Rng::new(2).alnum(good.len() - 16).into_bytes()].concat()),
        ("text".into(), b"not a cache at all\n".to_vec()),
    ];
    for pos in [0, 8, 12, 20, 30, 40, 60, 100, good.len() / 2, good.len() - 12, good.len() - 9, good.len() - 1] {
        if pos < good.len() {
            let mut b = good.clone();
            b[pos] ^= 0x5a;
            variants.push((format!("flipped byte {pos}"), b));
        }
    }
    for (what, bytes) in variants {
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(results(&t), want, "cache {what}");
    }
}

#[test]
fn a_cache_that_is_a_folder_or_a_cache_folder_that_is_a_file_changes_nothing() {
    let t = seeded();
    let want = results(&t);
    let path = cache_file(&t);
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir_all(path.join("x")).unwrap();
    assert_eq!(results(&t), want, "cache path is a folder");
    std::fs::remove_dir_all(t.root().join(".co-cli/cache")).unwrap();
    std::fs::write(t.root().join(".co-cli/cache"), "a file where the folder should be").unwrap();
    let list = t.kb(&["--json", "list"]).ok().json();
    assert_eq!(list, want[0]);
}

#[test]
fn a_cache_from_another_repository_changes_nothing() {
    let a = seeded();
    let b = TestEnv::pinned();
    for name in a.memory_files() {
        // Same names and sizes, different contents.
        let text = a.read(&a.memories().join(&name)).replace("lanterns", "LANTERNS").replace("kettles", "KETTLES");
        set_mtime(&b.mem_file(&name, &text), old());
    }
    std::fs::create_dir_all(b.root().join(".co-cli/cache")).unwrap();
    let want = results(&b);
    results(&a);
    std::fs::copy(cache_file(&a), cache_file(&b)).unwrap();
    assert_eq!(results(&b), want);
}

#[test]
fn an_edit_in_place_within_the_same_second_is_seen() {
    let t = seeded();
    results(&t);
    results(&t);
    let path = t.file_of(2);
    let text = t.read(&path);
    let edited = text.replace("kettles", "KETTLES");
    assert_eq!(edited.len(), text.len());
    // In place: same inode, same size.
    std::fs::write(&path, &edited).unwrap();
    assert_eq!(t.show(2)["content"], "second memory about KETTLES");
    assert_eq!(t.kb(&["--json", "recall", "KETTLES"]).ok().json()["count"], 1);
}

#[test]
fn an_edit_in_place_with_the_old_mtime_restored_is_seen() {
    // `cp -p`, `rsync -t`, `touch -r` and some editors write in place and restore the mtime: size,
    // mtime and inode all match the cache, only the ctime tells the file changed.
    let t = seeded();
    results(&t);
    results(&t);
    let path = t.file_of(2);
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let text = t.read(&path);
    std::fs::write(&path, text.replace("kettles", "KETTLES")).unwrap();
    set_mtime(&path, mtime);
    assert_eq!(t.show(2)["content"], "second memory about KETTLES", "kb served a stale cache entry");
}

#[test]
fn a_file_replaced_by_rename_with_the_same_size_and_mtime_is_seen() {
    let t = seeded();
    results(&t);
    results(&t);
    let path = t.file_of(1);
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let tmp = t.memories().join("tmp.swp");
    std::fs::write(&tmp, t.read(&path).replace("lanterns", "LANTERNS")).unwrap();
    set_mtime(&tmp, mtime);
    std::fs::rename(&tmp, &path).unwrap();
    assert_eq!(t.show(1)["content"], "first memory about LANTERNS");
}

#[test]
fn deleted_renamed_and_added_files_are_seen() {
    let t = seeded();
    results(&t);
    std::fs::remove_file(t.file_of(2)).unwrap();
    std::fs::rename(t.file_of(1), t.memories().join("renamed.md")).unwrap();
    t.memory(9, "added behind the cache's back", &days_ago(1.0), &[]);
    std::fs::write(t.memories().join("005-bad.md"), "---\nid: 5\ncreated: '2026-11-01T00:00:00Z'\n---\n\nfixed\n")
        .unwrap();
    assert_eq!(t.ids(), [1, 3, 4, 5, 9]);
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn the_cache_never_leaves_the_cache_folder() {
    let t = seeded();
    let before = t.snapshot();
    results(&t);
    t.kb(&["list"]).ok();
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn read_commands_create_only_the_ignored_cache_folder() {
    // In a tree with `.co-cli/` (a fresh clone), a read creates `.co-cli/cache/` with a
    // `.gitignore` of `*` and keeps its index cache there; nothing else changes.
    let t = TestEnv::pinned();
    t.memory(1, "a hand-made memory", &days_ago(1.0), &[]);
    let before = t.snapshot();
    for args in [&["list"][..], &["recall", "hand"], &["show", "1"], &["check"], &["context"]] {
        t.kb(args);
    }
    assert_same_tree(&before, &t.snapshot());
    assert_eq!(t.read(&t.root().join(".co-cli/cache/.gitignore")), "*\n");
    cache_file(&t);
}

#[test]
fn timestamps_long_texts_and_tags_read_back_exactly_as_written_from_the_cache() {
    // The cache keeps a timestamp written in co-cli's own form as its instant and renders it when
    // shown; every other form keeps its text. Long texts and many tags take longer lengths in a
    // record's block.
    let t = seeded();
    let long = "a long memory ".repeat(400);
    let forms = [
        ("2026-10-29T14:23:37.261408+00:00", Some("2026-11-01T08:00:00+00:00")),
        ("2026-10-29T14:23:37+00:00", Some("2026-11-01T08:00:00.000100+00:00")),
        ("2026-10-29T14:23:37.000000+00:00", None),
        ("2026-10-29T15:23:37+01:00", Some("2026-11-01T08:00:00Z")),
        ("2026-10-29T14:23:37.5+00:00", None),
    ];
    for (i, (created, updated)) in forms.iter().enumerate() {
        let id = 10 + i;
        let updated = updated.map_or(String::new(), |u| format!("updated: '{u}'\n"));
        let tags: String = (0..70).map(|k| format!("- tag{k}\n")).collect();
        let body = if i == 0 { long.trim_end() } else { "short" };
        let text =
            format!("---\nid: {id}\ncreated: '{created}'\n{updated}agent: reviewer\ntags:\n{tags}---\n\n{body}\n");
        t.mem_file(&format!("{id:03}-t.md"), &text);
        set_mtime(&t.memories().join(format!("{id:03}-t.md")), old());
    }
    for run in ["first", "warm"] {
        if run == "first" {
            std::fs::remove_dir_all(t.root().join(".co-cli/cache")).unwrap();
        }
        for (i, (created, updated)) in forms.iter().enumerate() {
            let id = 10 + i as u64;
            let m = t.show(id);
            assert_eq!(m["created"], *created, "{run} run, memory {id}: {m}");
            assert_eq!(m["updated"].as_str(), *updated, "{run} run, memory {id}");
            assert_eq!(m["tags"].as_array().unwrap().len(), 70, "{run} run, memory {id}");
            assert_eq!(m["tags"][69], "tag69");
            let body = if i == 0 { long.trim_end() } else { "short" };
            assert_eq!(m["content"], body, "{run} run, memory {id}");
        }
    }
    cache_file(&t);
    let first = results(&t);
    std::fs::remove_dir_all(t.root().join(".co-cli/cache")).unwrap();
    assert_eq!(results(&t), first, "without the cache");
    let listed = t.kb(&["--json", "list"]).ok().json();
    let created: Vec<&str> = listed["memories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["id"].as_u64().is_some_and(|id| id >= 10))
        .map(|m| m["created"].as_str().unwrap())
        .collect();
    let mut expected: Vec<&str> = forms.iter().map(|(c, _)| *c).collect();
    expected.sort_unstable();
    let mut got = created.clone();
    got.sort_unstable();
    assert_eq!(got, expected, "{listed}");
}
