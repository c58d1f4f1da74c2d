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
    let run = t.kb(&["save", "The api service now listens on port 8080"]).ok();
    assert!(run.stdout.contains("Replaced: The api service listens on port 8080"), "{run:?}");
    assert!(t.read(&first).contains("now listens"));
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
    t.kb(&["save", "The api service now listens on port 8080"]).ok();
    // Edited by hand after the consolidation.
    let first = t.file_of(1);
    let edited = t.read(&first).replace("8080", "9090");
    std::fs::write(&first, &edited).unwrap();
    let before = t.snapshot();
    let run = t.kb(&["undo"]).err();
    assert!(run.stderr.contains("001-the-api-service-listens-on-port-8080.md changed since"), "{run:?}");
    assert!(run.stderr.contains("nothing restored"), "{run:?}");
    assert_same_tree(&before, &t.snapshot());
    assert_eq!(entries(&t).len(), 2, "the entry stays");
    // Put back as the operation left it, the undo goes through.
    std::fs::write(&first, edited.replace("9090", "8080")).unwrap();
    t.kb(&["undo"]).ok();
    assert!(t.read(&first).contains("\nThe api service listens on port 8080\n"));
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

/// Runs `args`, checks it made one journal entry whose `kb undo` brings every file back byte for
/// byte, and returns the undo's text.
fn undone_byte_for_byte(t: &TestEnv, args: &[&str]) -> String {
    let before = files(t);
    let count = entries(t).len();
    t.kb(args).ok();
    assert_ne!(files(t), before, "{args:?} changed nothing");
    assert_eq!(entries(t).len(), count + 1, "{args:?} is an entry");
    let run = t.kb(&["undo"]).ok();
    assert_same_files(&before, &files(t));
    assert_eq!(entries(t).len(), count, "the entry is gone once undone");
    run.stdout
}

#[test]
fn export_is_undone() {
    let t = TestEnv::pinned();
    t.memory(1, "Run make before pushing", &days_ago(3.0), &["build"]);
    t.memory(2, "Deploys go out on Tuesdays", &days_ago(2.0), &["deploy"]);
    // Into a file that has a record already, and into none.
    let out = undone_byte_for_byte(&t, &["export", "--to", "copilot"]);
    assert!(out.starts_with("✓ Undid export: exported memories to Copilot memories"), "{out}");
    t.write(".github/copilot-memories.jsonl", &record("mem-1", "Run make before pushing to main"));
    undone_byte_for_byte(&t, &["export", "--to", "copilot"]);
}

#[test]
fn promote_is_undone() {
    let t = TestEnv::pinned();
    t.memory(1, "Run the linter before pushing workflow changes", &days_ago(3.0), &["ci"]);
    let out = undone_byte_for_byte(&t, &["promote", "1", "--apply-to", "ci/**", "--name", "ci"]);
    assert!(out.starts_with("✓ Undid promote: promoted memory 1 (applyTo ci/**)"), "{out}");
    assert!(!t.root().join(".github/instructions/ci.instructions.md").exists());
    assert!(!t.read(&t.file_of(1)).contains("promoted_to"));
}

#[test]
fn check_fix_is_undone() {
    let t = TestEnv::pinned();
    // A merge left two memories with id 2 and a record line twice.
    t.memory(1, "The base memory", &days_ago(5.0), &[]);
    t.memory(2, "Zebra crossings are the older memory", &days_ago(4.0), &[]);
    t.memory(2, "Apples are the newer memory", &days_ago(3.0), &[]);
    t.write(".github/copilot-memories.jsonl", &(record("mem-1", "Run make").repeat(2) + &record("mem-2", "Run tests")));
    let out = undone_byte_for_byte(&t, &["check", "--fix"]);
    assert!(out.starts_with("✓ Undid check --fix: repaired what a merge left"), "{out}");
    // The duplicates are back for `kb check` to report; once repaired, nothing to repair is no entry.
    let run = t.kb(&["check"]);
    assert!(run.code == 1 && run.stdout.contains("duplicate id 2"), "{run:?}");
    t.kb(&["check", "--fix"]).ok();
    assert_eq!(entries(&t).len(), 1);
    t.kb(&["check", "--fix"]).ok();
    assert_eq!(entries(&t).len(), 1);
}

#[test]
fn decision_accept_reject_archive_are_undone() {
    let t = TestEnv::pinned();
    for (id, name) in [(1, "001-a.md"), (2, "002-b.md")] {
        t.write(
            &format!(".co-cli/knowledge/decisions/{name}"),
            &format!("---\ncreated: '2026-01-01T00:00:00+00:00'\nid: {id}\nstatus: proposed\ntags: []\ntype: scope\n---\n\nBody {id}\n"),
        );
    }
    let out = undone_byte_for_byte(&t, &["decision", "accept", "1"]);
    assert!(out.starts_with("✓ Undid decision accept: accepted decision 1"), "{out}");
    let out = undone_byte_for_byte(&t, &["decision", "reject", "2"]);
    assert!(out.starts_with("✓ Undid decision reject: rejected decision 2"), "{out}");
    t.kb(&["decision", "accept", "1"]).ok();
    let out = undone_byte_for_byte(&t, &["decision", "archive", "1"]);
    assert!(out.starts_with("✓ Undid decision archive: archived decision 1"), "{out}");
    assert_eq!(t.kb(&["--json", "decision", "show", "1"]).ok().json()["status"], "active");
}

#[test]
fn session_end_is_undone() {
    let t = TestEnv::pinned();
    t.kb(&["session", "start", "Wire the undo journal"]).ok();
    t.kb(&["session", "update", "Half done"]).ok();
    let session = t.root().join(".co-cli/knowledge/session.md");
    let open = t.read(&session);
    let out = undone_byte_for_byte(&t, &["session", "end", "--summary", "All done"]);
    assert!(out.starts_with("✓ Undid session end: ended session: Wire the undo journal"), "{out}");
    assert_eq!(t.read(&session), open);
    let ended: Vec<_> = std::fs::read_dir(t.root().join(".co-cli/knowledge/sessions"))
        .map(|rd| rd.filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().ends_with(".md")).collect())
        .unwrap_or_default();
    assert!(ended.is_empty(), "the ended file goes: {ended:?}");
}

#[test]
fn drop_discards_the_last_entry_without_restoring() {
    let t = TestEnv::pinned();
    let run = t.kb(&["undo", "--drop"]).err();
    assert!(run.stderr.contains("nothing to undo"), "{run:?}");
    t.kb(&["--json", "undo", "--drop"]).err();
    t.memory(1, "First", &days_ago(1.0), &[]);
    t.memory(2, "Second", &days_ago(1.0), &[]);
    t.kb(&["forget", "1"]).ok();
    t.kb(&["forget", "2"]).ok();
    let before = t.snapshot();
    let run = t.kb(&["undo", "--drop"]).ok();
    assert_eq!(
        run.stdout,
        "✓ Dropped journal entry 2: forget: forgot memory 2 (2026-11-22 12:00:00)\nNothing restored: its files stay as they are.\n"
    );
    let mut after = t.snapshot();
    after.retain(|p, _| !p.starts_with(".co-cli/state/journal"));
    let mut want = before.clone();
    want.retain(|p, _| !p.starts_with(".co-cli/state/journal"));
    assert_same_tree(&want, &after);
    assert_eq!(entries(&t), ["000001.jsonl"]);
    // The undo now undoes the entry before.
    t.kb(&["undo"]).ok();
    assert_eq!(t.ids(), [1]);
    // JSON names the dropped entry; a damaged entry can be dropped too.
    t.kb(&["forget", "1"]).ok();
    let entry = t.root().join(".co-cli/state/journal/000001.jsonl");
    let text = t.read(&entry).replacen("\"path\":\".co-cli", "\"path\":\"../../outside", 1);
    std::fs::write(&entry, text).unwrap();
    let run = t.kb(&["undo"]).err();
    assert!(run.stderr.contains("kb undo --drop"), "{run:?}");
    let v = t.kb(&["--json", "undo", "--drop"]).ok().json();
    let d = &v["dropped"];
    assert_eq!(
        (d["id"].as_u64(), d["op"].as_str(), d["what"].as_str()),
        (Some(1), Some("forget"), Some("forgot memory 1"))
    );
    assert_eq!(d["at"], "2026-11-22T12:00:00+00:00");
    assert!(d["path"].as_str().unwrap().ends_with(".co-cli/state/journal/000001.jsonl"));
    assert!(entries(&t).is_empty());
    assert!(t.ids().is_empty(), "nothing restored");
    t.kb(&["undo", "--drop"]).err();
    t.kb(&["undo", "--drop", "--list"]).usage();
}

#[test]
fn undoing_a_consolidating_save_says_the_saved_text_goes() {
    let t = TestEnv::pinned();
    t.kb(&["save", "The api service listens on port 8080"]).ok();
    t.kb(&["save", "The api service now listens on port 8080"]).ok();
    let run = t.kb(&["undo"]).ok();
    assert!(
        run.stdout.ends_with(
            "The text you saved is no longer stored: The api service now listens on port 8080; save it again with --no-dedup to keep both.\n"
        ),
        "{run:?}"
    );
    // JSON carries it in the entry.
    t.kb(&["save", "The api service now listens on port 8080"]).ok();
    let list = t.kb(&["--json", "undo", "--list"]).ok().json();
    assert_eq!(list["entries"][0]["saved"], "The api service now listens on port 8080");
    let v = t.kb(&["--json", "undo"]).ok().json();
    assert_eq!(v["undone"]["saved"], "The api service now listens on port 8080");
    // A Copilot record's consolidation too.
    let save = ["save", "--store", "copilot", "--subject", "build", "--reason", "seen"];
    t.kb(&[&save[..], &["Run make before pushing"]].concat()).ok();
    t.kb(&[&save[..], &["Run make before pushing!"]].concat()).ok();
    let run = t.kb(&["undo"]).ok();
    assert!(
        run.stdout.contains("The text you saved is no longer stored: Run make before pushing!; save it again with --no-dedup to keep both.\n"),
        "{run:?}"
    );
    // Other entries say nothing of the kind.
    t.memory(7, "Seven", &days_ago(1.0), &[]);
    t.kb(&["forget", "7"]).ok();
    let run = t.kb(&["undo"]).ok();
    assert!(!run.stdout.contains("no longer stored"), "{run:?}");
    assert!(t.kb(&["--json", "undo", "--list"]).ok().json()["entries"].as_array().unwrap().is_empty());
}

/// A board item as the board stores it.
fn board_item(src: &str, name: &str, read_count: u64, count: u64) -> serde_json::Value {
    serde_json::json!({"src": src, "name": name, "description": "d", "content": format!("content of {name}"),
        "read_count": read_count, "count": count, "created": "2026-11-01T00:00:00+00:00",
        "updated": "2026-11-01T00:00:00+00:00"})
}

#[test]
fn a_consolidate_is_undone_after_a_board_counter_bump() {
    let t = TestEnv::pinned();
    std::fs::write(t.root().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    // 22 items: 4 user, 18 agent; the four least read agent items are pruned.
    let mut items: Vec<serde_json::Value> = (0..4).map(|i| board_item("user", &format!("user-{i}"), 1, 3)).collect();
    items.extend((0..18).map(|i| board_item("agent", &format!("agent-{i}"), 5 + i, 2)));
    for (k, i) in [5usize, 9, 14, 20].iter().enumerate() {
        items[*i]["read_count"] = serde_json::json!(k);
    }
    let board = t.write(".co-cli/state/board/main.json", &(serde_json::to_string_pretty(&items).unwrap() + "\n"));
    t.memory(1, "alpha beta gamma delta", &days_ago(5.0), &[]);
    t.memory(2, "alpha beta gamma delta!", &days_ago(4.0), &[]);
    let memories = files(&t);
    let v = t.kb(&["--json", "consolidate"]).ok().json();
    let pruned: Vec<&str> = v["board_pruned"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert_eq!(pruned, ["agent-1", "agent-5", "agent-10", "agent-16"]);
    // Since then: an item read, a session started (every count + 1), a user item added.
    t.kb(&["board", "get", "agent-0"]).ok();
    t.kb(&["session", "start", "After the consolidate"]).ok();
    t.kb(&["board", "add", "fresh", "--description", "Added since", "new"]).ok();
    let now: Vec<serde_json::Value> = serde_json::from_str(&t.read(&board)).unwrap();
    let run = t.kb(&["undo"]).ok();
    assert!(run.stdout.contains("Put back 4 board items: "), "{run:?}");
    let back: Vec<serde_json::Value> = serde_json::from_str(&t.read(&board)).unwrap();
    // The pruned items at their old places with their counters as they were; every other item as
    // it is now.
    let mut want = now.clone();
    for i in [5usize, 9, 14, 20] {
        want.insert(i, items[i].clone());
    }
    assert_eq!(back, want);
    // The rest of the run is undone byte for byte.
    let mut f = files(&t);
    f.retain(|p, _| p.starts_with(".co-cli/knowledge/memories"));
    let mut m = memories.clone();
    m.retain(|p, _| p.starts_with(".co-cli/knowledge/memories"));
    assert_same_files(&m, &f);
    assert!(entries(&t).is_empty());
}

#[test]
fn a_consolidate_undo_refuses_a_pruned_item_written_again_since() {
    let t = TestEnv::pinned();
    std::fs::write(t.root().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let items: Vec<serde_json::Value> = (0..20).map(|i| board_item("agent", &format!("agent-{i}"), i, 0)).collect();
    let board = t.write(".co-cli/state/board/main.json", &(serde_json::to_string_pretty(&items).unwrap() + "\n"));
    let v = t.kb(&["--json", "consolidate"]).ok().json();
    assert_eq!(v["board_pruned"], serde_json::json!(["agent-0", "agent-1"]));
    // An agent wrote agent-0 again, with other content.
    let mut now: Vec<serde_json::Value> = serde_json::from_str(&t.read(&board)).unwrap();
    now.push(serde_json::json!({"src": "agent", "name": "agent-0", "description": "d", "content": "new",
        "read_count": 0, "count": 0, "created": "2026-11-22T00:00:00+00:00", "updated": "2026-11-22T00:00:00+00:00"}));
    std::fs::write(&board, serde_json::to_string_pretty(&now).unwrap()).unwrap();
    let before = t.snapshot();
    let run = t.kb(&["undo"]).err();
    assert!(run.stderr.contains("agent-0") && run.stderr.contains("nothing restored"), "{run:?}");
    assert_same_tree(&before, &t.snapshot());
    // Without it, the undo puts both back; an item already back as it was is left alone.
    now.pop();
    now.insert(0, items[0].clone());
    std::fs::write(&board, serde_json::to_string_pretty(&now).unwrap()).unwrap();
    let run = t.kb(&["undo"]).ok();
    assert!(run.stdout.contains("Put back 1 board item: agent-1"), "{run:?}");
    let back: Vec<serde_json::Value> = serde_json::from_str(&t.read(&board)).unwrap();
    assert_eq!(back, items);
}
