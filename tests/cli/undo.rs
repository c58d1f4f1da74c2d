//! The undo journal and `kb undo` (docs/safety.md): every journaling operation undone byte for
//! byte, two undos undo two entries, a file changed since is never touched, `--list`, the 50-entry
//! cap.

use crate::common::*;
use std::collections::BTreeMap;

/// Returns every file under the root but the cache and the local state (the journal itself),
/// with its bytes: what an undo must bring back exactly.
pub fn files(t: &TestEnv) -> BTreeMap<String, Vec<u8>> {
    t.snapshot()
        .into_iter()
        .filter(|(path, _)| !path.starts_with(".co-cli/state"))
        .filter_map(|(path, e)| match e {
            Entry::File { bytes, .. } => Some((path, bytes)),
            _ => None,
        })
        .collect()
}

/// Asserts the two file maps are equal, naming the paths that differ.
pub fn assert_same_files(before: &BTreeMap<String, Vec<u8>>, after: &BTreeMap<String, Vec<u8>>) {
    let differ: Vec<&String> = before.keys().chain(after.keys()).filter(|k| before.get(*k) != after.get(*k)).collect();
    assert!(differ.is_empty(), "these files differ: {differ:?}");
}

/// Returns the journal's entry files.
fn entries(t: &TestEnv) -> Vec<String> {
    let dir = t.root().join(".co-cli/state/journal");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.retain(|n| n.ends_with(".jsonl"));
    names.sort();
    names
}

fn record(id: &str, fact: &str) -> String {
    format!(
        "{{\"id\":\"{id}\",\"subject\":\"build\",\"fact\":\"{fact}\",\"citations\":[\"Makefile:1\"],\"reason\":\"r\",\"created\":\"2026-11-01T10:00:00+00:00\"}}\n"
    )
}

#[test]
fn a_consolidating_save_is_undone_byte_for_byte() {
    // A consolidation shows what it replaced, and `kb undo` brings it back.
    let t = TestEnv::pinned();
    t.kb(&["save", "The api service listens on port 8080"]).ok();
    let first = t.file_of(1);
    let before = std::fs::read(&first).unwrap();
    let run = t.kb(&["save", "The web service listens on port 8081"]).ok();
    assert!(run.stdout.contains("Replaced: The api service listens on port 8080"), "{run:?}");
    assert!(t.read(&first).contains("port 8081"));
    let run = t.kb(&["undo"]).ok();
    assert!(run.stdout.starts_with("✓ Undid save: consolidated into memory 1"), "{run:?}");
    assert_eq!(std::fs::read(&first).unwrap(), before);
    assert!(entries(&t).is_empty(), "the entry is gone once undone");
}

#[test]
fn a_consolidating_copilot_save_is_undone_byte_for_byte() {
    // The merge rewrites the record in a file of other lines too (one malformed, one with CRLF):
    // the undo brings every byte back, and undoes the merge rather than an older entry.
    let t = TestEnv::pinned();
    let jsonl = ".github/copilot-memories.jsonl";
    t.write(
        jsonl,
        &(record("mem-1", "Run make before pushing")
            + "{\"broken\n"
            + &record("mem-2", "Docs in docs/").replace('\n', "\r\n")),
    );
    t.memory(3, "Three", &days_ago(2.0), &["a"]);
    t.kb(&["forget", "3"]).ok();
    let before = files(&t);
    let run = t
        .kb(&["save", "--store", "copilot", "--subject", "build", "--reason", "seen", "Run make before pushing!"])
        .ok();
    assert!(run.stdout.contains("Updated Copilot memory mem-1 (consolidated duplicate)"), "{run:?}");
    assert_eq!(entries(&t).len(), 2, "the merge is an entry of its own");
    let run = t.kb(&["undo"]).ok();
    assert!(run.stdout.starts_with("✓ Undid save: consolidated into Copilot memory mem-1"), "{run:?}");
    assert_same_files(&before, &files(&t));
    assert!(t.memory_files().is_empty(), "the forget before it is still in place");
}

#[test]
fn an_appending_copilot_save_is_not_journaled() {
    let t = TestEnv::pinned();
    t.kb(&["save", "--store", "copilot", "--subject", "build", "--reason", "seen", "Run make"]).ok();
    assert!(entries(&t).is_empty());
}

#[test]
fn a_plain_save_is_not_journaled() {
    let t = TestEnv::pinned();
    t.kb(&["save", "One fact"]).ok();
    t.kb(&["save", "--no-dedup", "One fact"]).ok();
    assert!(entries(&t).is_empty());
    let run = t.kb(&["undo"]).err();
    assert!(run.stderr.contains("nothing to undo"), "{run:?}");
}

#[test]
fn forget_of_a_memory_and_of_a_record_is_undone() {
    let t = TestEnv::pinned();
    t.memory(3, "Three", &days_ago(2.0), &["a"]);
    t.write(
        ".github/copilot-memories.jsonl",
        &(record("mem-1", "Run make") + "{\"broken\n" + &record("mem-2", "Run tests")),
    );
    let before = files(&t);
    t.kb(&["forget", "3"]).ok();
    t.kb(&["forget", "mem-2"]).ok();
    assert_eq!(entries(&t).len(), 2);
    t.kb(&["undo"]).ok();
    assert!(t.read(&t.root().join(".github/copilot-memories.jsonl")).contains("mem-2"));
    assert!(t.memory_files().is_empty(), "the second undo has not run yet");
    t.kb(&["undo"]).ok();
    assert_same_files(&before, &files(&t));
}

#[test]
fn decay_is_undone_with_the_save_that_caused_it() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.5");
    let mut rng = Rng::new(3);
    for id in 1..=10 {
        t.memory(id, &format!("{} {id}", sentence(&mut rng, 8)), &days_ago(50.0 - id as f64), &["x"]);
    }
    let before = files(&t);
    let out = t.kb(&["--json", "save", "The brand new memory that triggers decay"]).ok().json();
    assert_eq!(out["decayed"], 5);
    let list = t.kb(&["--json", "undo", "--list"]).ok().json();
    let entry = &list["entries"][0];
    assert_eq!(entry["op"], "save");
    let actions: Vec<&str> = entry["files"].as_array().unwrap().iter().map(|f| f["action"].as_str().unwrap()).collect();
    assert_eq!(actions.iter().filter(|a| **a == "created").count(), 2, "the new memory and the summary: {actions:?}");
    assert_eq!(actions.iter().filter(|a| **a == "removed").count(), 5, "{actions:?}");
    let undone = t.kb(&["--json", "undo"]).ok().json();
    assert_eq!((undone["restored"].as_array().unwrap().len(), undone["removed"].as_array().unwrap().len()), (5, 2));
    assert_same_files(&before, &files(&t));
}

#[test]
fn decay_by_cut_is_undone() {
    let t = TestEnv::pinned()
        .env("CO_CLI_MEMORY_MAX_COUNT", "10")
        .env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.3")
        .env("CO_CLI_MEMORY_DECAY_STRATEGY", "cut");
    let mut rng = Rng::new(4);
    for id in 1..=10 {
        t.memory(id, &format!("{} {id}", sentence(&mut rng, 8)), &days_ago(50.0 - id as f64), &[]);
    }
    let before = files(&t);
    t.kb(&["save", "Another brand new memory"]).ok();
    assert_eq!(t.memory_files().len(), 8);
    t.kb(&["undo"]).ok();
    assert_same_files(&before, &files(&t));
}

#[test]
fn import_is_undone() {
    let t = TestEnv::pinned();
    t.memory(1, "Run make before pushing", &days_ago(3.0), &["build"]);
    t.write(
        ".github/copilot-memories.jsonl",
        &(record("mem-1", "Run make before pushing to main") + &record("mem-2", "Deploys go out on Tuesdays")),
    );
    let before = files(&t);
    let out = t.kb(&["--json", "import", "--from", "copilot"]).ok().json();
    assert!(out["added"].as_u64().unwrap() >= 1, "{out}");
    assert_ne!(files(&t), before);
    let run = t.kb(&["undo"]).ok();
    assert!(run.stdout.contains("Undid import"), "{run:?}");
    assert_same_files(&before, &files(&t));
}

#[test]
fn decision_supersede_is_undone() {
    let t = TestEnv::pinned();
    t.kb(&["decision", "add", "Use PostgreSQL for all services", "--type", "architectural"]).ok();
    let before = files(&t);
    t.kb(&["decision", "supersede", "1", "Use PostgreSQL 17 for every service we run"]).ok();
    assert_eq!(t.kb(&["--json", "decision", "list", "--all"]).ok().json()["count"], 2);
    t.kb(&["undo"]).ok();
    assert_same_files(&before, &files(&t));
    // Adding a decision is not an entry: nothing is left to undo.
    t.kb(&["undo"]).err();
}

#[test]
fn undo_twice_undoes_two_entries_newest_first() {
    let t = TestEnv::pinned();
    for id in 1..=3 {
        t.memory(
            id,
            &format!("Memory number {id} about {}", ["apples", "rivers", "engines"][id as usize - 1]),
            &days_ago(1.0),
            &[],
        );
    }
    let start = files(&t);
    t.kb(&["forget", "1"]).ok();
    let after_one = files(&t);
    t.kb(&["forget", "2"]).ok();
    t.kb(&["forget", "3"]).ok();
    t.kb(&["undo"]).ok();
    t.kb(&["undo"]).ok();
    assert_same_files(&after_one, &files(&t));
    assert_eq!(t.ids(), [2, 3]);
    t.kb(&["undo"]).ok();
    assert_same_files(&start, &files(&t));
    t.kb(&["undo"]).err();
}

#[test]
fn undo_refuses_when_a_file_changed_since_and_restores_nothing() {
    let t = TestEnv::pinned();
    t.kb(&["save", "The api service listens on port 8080"]).ok();
    t.memory(5, "Another memory to forget", &days_ago(1.0), &[]);
    t.kb(&["forget", "5"]).ok();
    t.kb(&["save", "The web service listens on port 8081"]).ok();
    // Edited by hand after the consolidation.
    let first = t.file_of(1);
    let edited = t.read(&first).replace("8081", "9090");
    std::fs::write(&first, &edited).unwrap();
    let before = t.snapshot();
    let run = t.kb(&["undo"]).err();
    assert!(run.stderr.contains("001-the-api-service-listens-on-port-8080.md changed since"), "{run:?}");
    assert!(run.stderr.contains("nothing restored"), "{run:?}");
    assert_same_tree(&before, &t.snapshot());
    assert_eq!(entries(&t).len(), 2, "the entry stays");
    // Put back as the operation left it, the undo goes through.
    std::fs::write(&first, edited.replace("9090", "8081")).unwrap();
    t.kb(&["undo"]).ok();
    assert!(t.read(&first).contains("port 8080"));
}

#[test]
fn undo_refuses_a_removed_file_that_came_back_different() {
    let t = TestEnv::pinned();
    let p = t.memory(4, "Four", &days_ago(1.0), &[]);
    t.kb(&["forget", "4"]).ok();
    std::fs::write(&p, "made again by hand\n").unwrap();
    let run = t.kb(&["undo"]).err();
    assert!(run.stderr.contains("004-four.md changed since"), "{run:?}");
    assert_eq!(t.read(&p), "made again by hand\n");
}

#[test]
fn undo_never_brings_back_an_id_saved_since() {
    let t = TestEnv::pinned();
    t.memory(1, "Alpha fact", &days_ago(2.0), &[]);
    t.memory(2, "Beta detail", &days_ago(1.0), &[]);
    t.kb(&["forget", "2"]).ok();
    // A plain save takes id 2 again: bringing the old 2 back would make a duplicate id.
    t.kb(&["save", "Gamma something new"]).ok();
    assert_eq!(t.ids(), [1, 2]);
    let before = t.snapshot();
    let run = t.kb(&["undo"]).err();
    assert!(run.stderr.contains("with id 2"), "{run:?}");
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn list_shows_entries_newest_first_in_text_and_json() {
    let t = TestEnv::pinned();
    let run = t.kb(&["undo", "--list"]).ok();
    assert_eq!(run.stdout, "Nothing to undo: the journal is empty.\n");
    assert_eq!(t.kb(&["--json", "undo", "--list"]).ok().json()["count"], 0);
    t.memory(1, "First", &days_ago(1.0), &[]);
    t.memory(2, "Second", &days_ago(1.0), &[]);
    t.kb(&["forget", "1"]).ok();
    let mut later = t.command(&["forget", "2"]);
    later.env("KB_NOW", "2026-11-23T08:30:00+00:00");
    run_command(later, None).ok();
    let run = t.kb(&["undo", "--list"]).ok();
    assert_eq!(
        run.stdout,
        "   2  2026-11-23 08:30:00  forget: forgot memory 2 (1 file)\n      removed  .co-cli/knowledge/memories/002-second.md\n   1  2026-11-22 12:00:00  forget: forgot memory 1 (1 file)\n      removed  .co-cli/knowledge/memories/001-first.md\n"
    );
    let v = t.kb(&["--json", "undo", "--list"]).ok().json();
    assert_eq!((v["count"].as_u64(), v["limit"].as_u64()), (Some(2), Some(50)));
    let e = &v["entries"][0];
    assert_eq!((e["id"].as_u64(), e["op"].as_str(), e["complete"].as_bool()), (Some(2), Some("forget"), Some(true)));
    assert_eq!(e["at"], "2026-11-23T08:30:00+00:00");
    assert_eq!(e["files"][0]["path"], t.memories().join("002-second.md").display().to_string());
    assert_eq!(e["files"][0]["action"], "removed");
    assert!(e["path"].as_str().unwrap().ends_with(".co-cli/state/journal/000002.jsonl"));
    // Listing writes nothing.
    let before = t.snapshot();
    t.kb(&["undo", "--list"]).ok();
    assert_same_tree(&before, &t.snapshot());
    // JSON of an undo.
    let v = t.kb(&["--json", "undo"]).ok().json();
    assert_eq!(v["undone"]["what"], "forgot memory 2");
    assert_eq!(v["restored"][0], t.memories().join("002-second.md").display().to_string());
}

#[test]
fn the_journal_keeps_the_last_fifty_entries() {
    let t = TestEnv::pinned();
    for id in 1..=53 {
        t.memory(id, &format!("Memory {id}"), &days_ago(1.0), &[]);
    }
    for id in 1..=53 {
        t.kb(&["forget", &id.to_string()]).ok();
    }
    assert_eq!(entries(&t).len(), 50);
    let v = t.kb(&["--json", "undo", "--list"]).ok().json();
    assert_eq!(v["count"], 50);
    assert_eq!(v["entries"][0]["what"], "forgot memory 53");
    assert_eq!(v["entries"][49]["what"], "forgot memory 4");
    for _ in 0..50 {
        t.kb(&["undo"]).ok();
    }
    assert_eq!(t.ids(), (4..=53).collect::<Vec<u64>>(), "the three oldest forgets are beyond undo");
    t.kb(&["undo"]).err();
}

#[test]
fn the_journal_is_local_state_ignored_by_git() {
    let t = TestEnv::pinned();
    t.memory(1, "One", &days_ago(1.0), &[]);
    t.kb(&["forget", "1"]).ok();
    assert_eq!(std::fs::read_to_string(t.root().join(".co-cli/state/journal/.gitignore")).unwrap(), "*\n");
}

#[test]
fn an_interrupted_entry_still_undoes_and_a_torn_line_is_ignored() {
    let t = TestEnv::pinned();
    t.memory(1, "One", &days_ago(1.0), &[]);
    t.memory(2, "Two", &days_ago(1.0), &[]);
    let before = files(&t);
    t.kb(&["forget", "1"]).ok();
    let entry = t.root().join(".co-cli/state/journal/000001.jsonl");
    let text = t.read(&entry);
    // As if killed before its end line, while recording a change it never made.
    let cut = text.lines().filter(|l| !l.starts_with("{\"end\"")).collect::<Vec<_>>().join("\n");
    std::fs::write(&entry, format!("{cut}\n{{\"path\":\".co-cli/knowledge/memories/002-two.md\",\"prior\":{{\"te"))
        .unwrap();
    let v = t.kb(&["--json", "undo", "--list"]).ok().json();
    assert_eq!(v["entries"][0]["complete"], false);
    assert!(t.kb(&["undo", "--list"]).ok().stdout.contains("[interrupted]"));
    t.kb(&["undo"]).ok();
    assert_same_files(&before, &files(&t));
}

#[test]
fn an_entry_cut_off_before_its_first_change_is_dropped() {
    let t = TestEnv::pinned();
    t.memory(1, "One", &days_ago(1.0), &[]);
    t.kb(&["forget", "1"]).ok();
    // A newer entry torn inside its first line: nothing was changed for it.
    t.write(".co-cli/state/journal/000002.jsonl", "{\"journal\":1,\"op\":\"forget\",\"wh");
    assert_eq!(t.kb(&["--json", "undo", "--list"]).ok().json()["count"], 1);
    t.kb(&["undo"]).ok();
    assert_eq!(t.ids(), [1]);
    assert!(entries(&t).is_empty());
}

#[test]
fn a_damaged_entry_is_refused_naming_it() {
    let t = TestEnv::pinned();
    t.memory(1, "One", &days_ago(1.0), &[]);
    t.kb(&["forget", "1"]).ok();
    let entry = t.root().join(".co-cli/state/journal/000001.jsonl");
    let text = t.read(&entry).replacen("\"path\":\".co-cli", "\"path\":\"../../outside", 1);
    std::fs::write(&entry, text).unwrap();
    let run = t.kb(&["undo"]).err();
    assert!(run.stderr.contains("000001.jsonl is damaged"), "{run:?}");
    assert!(!t.dir.path().join("outside").exists());
}

#[test]
fn undo_writes_need_a_repository() {
    let Some(t) = TestEnv::markerless() else { return };
    std::fs::remove_dir_all(t.root().join(".git")).unwrap();
    let run = t.kb(&["undo"]).err();
    assert!(run.stderr.contains("no repository"), "{run:?}");
    t.kb(&["undo", "--list"]).ok();
}

#[test]
fn an_entry_of_many_files_is_refused_whole_when_one_of_them_changed() {
    let t = TestEnv::pinned();
    for (id, text) in [(1, "alpha beta gamma delta"), (3, "one two three four five"), (5, "red green blue yellow")] {
        t.memory(id, text, &days_ago(10.0 - id as f64), &["x"]);
        t.memory(id + 1, &format!("{text}!"), &days_ago(9.0 - id as f64), &["y"]);
    }
    let before = files(&t);
    let v = t.kb(&["--json", "consolidate"]).ok().json();
    assert_eq!(v["merged"].as_array().unwrap().len(), 3);
    let list = t.kb(&["--json", "undo", "--list"]).ok().json();
    assert_eq!(list["entries"][0]["files"].as_array().unwrap().len(), 6);
    // The last group's merged memory is edited by hand; the five other files could go back.
    let edited = t.file_of(5);
    let text = t.read(&edited).replace("red green blue yellow!", "red green blue yellow, and purple");
    std::fs::write(&edited, &text).unwrap();
    let snapshot = t.snapshot();
    let run = t.kb(&["undo"]).err();
    let name = edited.file_name().unwrap().to_string_lossy().into_owned();
    assert!(run.stderr.contains(&format!("{name} changed since")), "{run:?}");
    assert!(run.stderr.contains("nothing restored"), "{run:?}");
    assert_same_tree(&snapshot, &t.snapshot());
    // Once the edit is taken back, the undo takes back the whole run.
    std::fs::write(&edited, text.replace("red green blue yellow, and purple", "red green blue yellow!")).unwrap();
    t.kb(&["undo"]).ok();
    assert_same_files(&before, &files(&t));
}

#[test]
fn a_second_undo_never_touches_a_file_changed_since_its_entry() {
    let t = TestEnv::pinned();
    t.memory(1, "Alpha fact", &days_ago(2.0), &[]);
    t.memory(2, "Beta detail", &days_ago(1.0), &[]);
    let one = t.file_of(1);
    t.kb(&["forget", "1"]).ok();
    t.kb(&["forget", "2"]).ok();
    t.kb(&["undo"]).ok();
    assert_eq!(t.ids(), [2]);
    // Memory 1's file is made again by hand before the second undo.
    std::fs::write(&one, "---\ncreated: '2026-11-20T00:00:00+00:00'\nid: 7\ntags: []\n---\n\nHand made\n").unwrap();
    let snapshot = t.snapshot();
    let run = t.kb(&["undo"]).err();
    assert!(run.stderr.contains("changed since"), "{run:?}");
    assert_same_tree(&snapshot, &t.snapshot());
    assert_eq!(t.kb(&["--json", "undo", "--list"]).ok().json()["count"], 1, "the entry stays");
}
