//! `kb consolidate` (docs/behaviour.md): near-duplicates merged into the oldest (the newest body,
//! tags united), type and agent kept apart, stale downvoted records removed, the board pruned, the
//! dry run, the summarizer (success, empty answer, failure, secret, a hang killed at the timeout),
//! one journal entry per run, and a SIGKILL at random moments that leaves old or new files and an
//! undo that works.

use crate::common::*;
use crate::undo::{assert_same_files, files};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Writes a memory file with extra frontmatter lines (`type: pattern\n`...), keys in order.
fn mem(t: &TestEnv, id: u64, text: &str, created: &str, extra: &str, tags: &[&str]) -> PathBuf {
    let tags = if tags.is_empty() {
        "tags: []\n".to_string()
    } else {
        format!("tags:\n{}", tags.iter().map(|t| format!("- {t}\n")).collect::<String>())
    };
    t.mem_file(
        &format!("{id:03}-m.md"),
        &format!("---\ncreated: '{created}'\n{extra}id: {id}\nsource: user-told\n{tags}---\n\n{text}\n"),
    )
}

fn consolidate(t: &TestEnv, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json", "consolidate"];
    all.extend_from_slice(args);
    t.kb(&all).ok().json()
}

fn journal_entries(t: &TestEnv) -> usize {
    std::fs::read_dir(t.root().join(".co-cli/state/journal"))
        .map(|rd| rd.filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl")).count())
        .unwrap_or(0)
}

/// A Copilot record line with votes (and a last vote when `last` is given), created `created`.
fn voted(id: &str, up: u64, down: u64, created: &str, last: Option<&str>) -> String {
    let last = last
        .map(|at| format!(",\"last_vote\":{{\"direction\":\"down\",\"reason\":\"stale\",\"at\":\"{at}\"}}"))
        .unwrap_or_default();
    format!(
        "{{\"id\":\"{id}\",\"subject\":\"s\",\"fact\":\"Fact {id}\",\"citations\":[],\"reason\":\"r\",\"created\":\"{created}\",\"votes\":{{\"up\":{up},\"down\":{down}}}{last}}}\n"
    )
}

#[test]
fn merges_into_the_oldest_with_the_newest_body_and_the_tags_united() {
    let t = TestEnv::pinned();
    let oldest = mem(&t, 1, "User prefers pytest over unittest", &days_ago(10.0), "", &["python"]);
    let m2 = mem(&t, 2, "User prefers pytest over unittest!", &days_ago(5.0), "", &["testing", "python"]);
    let m3 = mem(&t, 3, "user prefers pytest over unittest.", &days_ago(8.0), "importance: high\n", &["style"]);
    // Memory 3 changed last: its body wins.
    let m3_text = t.read(&m3).replace("id: 3\n", &format!("id: 3\nupdated: '{}'\n", days_ago(1.0)));
    std::fs::write(&m3, m3_text).unwrap();
    mem(&t, 4, "Deploys go out on Tuesdays only", &days_ago(9.0), "", &[]);
    let v = consolidate(&t, &[]);
    assert_eq!(v["merged"].as_array().unwrap().len(), 1, "{v}");
    let m = &v["merged"][0];
    assert_eq!((m["into"].as_u64(), m["removed"].clone()), (Some(1), serde_json::json!([3, 2])));
    assert!(m["similarity"].as_f64().unwrap() >= 85.0);
    assert_eq!(
        (v["records_removed"].clone(), v["board_pruned"].clone()),
        (serde_json::json!([]), serde_json::json!([]))
    );
    assert!(v["journal"].as_str().unwrap().ends_with(".co-cli/state/journal/000001.jsonl"));
    assert!(!m2.exists() && !m3.exists());
    // Keys in co-cli's order; `created` as written; the tags of 3 (older) before those of 2; the
    // importance of 3 kept; the body of 3, which changed last.
    assert_eq!(
        t.read(&oldest),
        "---\nauto_category: null\ncreated: '2026-11-12T12:00:00.000000+00:00'\nid: 1\nimportance: high\nsource: user-told\ntags:\n- python\n- style\n- testing\nupdated: '2026-11-22T12:00:00+00:00'\n---\n\nuser prefers pytest over unittest.\n"
    );
    assert_eq!(t.ids(), [1, 4]);
    // One entry for the run; undo brings every file back.
    assert_eq!(journal_entries(&t), 1);
}

#[test]
fn the_text_output_and_an_empty_run() {
    let t = TestEnv::pinned();
    let run = t.kb(&["consolidate"]).ok();
    assert_eq!(run.stdout, "Nothing to consolidate.\n");
    let v = consolidate(&t, &[]);
    assert_eq!(v["journal"], serde_json::Value::Null);
    assert_eq!(journal_entries(&t), 0, "a run that changes nothing is no entry");
    mem(&t, 1, "The api service listens on port 8080", &days_ago(3.0), "", &[]);
    mem(&t, 2, "The api service listens on port 8080.", &days_ago(2.0), "", &[]);
    t.write(".github/copilot-memories.jsonl", &voted("mem-old", 0, 2, "2026-09-01T00:00:00+00:00", None));
    let run = t.kb(&["consolidate", "--dry-run"]).ok();
    assert_eq!(
        run.stdout,
        "Would merge memory 2 into memory 1 (similarity 98.6)\nWould remove Copilot memory mem-old (0 up, 2 down, created 2026-09-01)\nDry run: nothing written.\n"
    );
    let run = t.kb(&["consolidate"]).ok();
    assert_eq!(
        run.stdout,
        "✓ Merged memory 2 into memory 1 (similarity 98.6)\n✓ Removed Copilot memory mem-old (0 up, 2 down, created 2026-09-01)\nUndo with `kb undo` (journal entry .co-cli/state/journal/000001.jsonl).\n"
    );
}

#[test]
fn type_and_agent_are_kept_apart() {
    let t = TestEnv::pinned();
    let text = "Every pull request needs a changelog line";
    mem(&t, 1, text, &days_ago(9.0), "", &[]);
    mem(&t, 2, &format!("{text}."), &days_ago(8.0), "type: learning\n", &[]);
    mem(&t, 3, text, &days_ago(7.0), "type: pattern\n", &[]);
    mem(&t, 4, &format!("{text}!"), &days_ago(6.0), "type: pattern\n", &[]);
    mem(&t, 5, text, &days_ago(5.0), "agent: reviewer\n", &[]);
    mem(&t, 6, &format!("{text} "), &days_ago(4.0), "agent: reviewer\n", &[]);
    mem(&t, 7, text, &days_ago(3.0), "agent: planner\n", &[]);
    mem(&t, 8, text, &days_ago(2.0), "agent: reviewer\ntype: pattern\n", &[]);
    let v = consolidate(&t, &[]);
    let merged: Vec<(u64, Vec<u64>)> = v["merged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["into"].as_u64().unwrap(),
                m["removed"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap()).collect(),
            )
        })
        .collect();
    // A missing type is a learning; each (type, agent) is its own scope.
    assert_eq!(merged, [(1, vec![2]), (3, vec![4]), (5, vec![6])]);
    assert_eq!(t.ids(), [1, 3, 5, 7, 8]);
}

#[test]
fn near_duplicates_at_any_age_but_not_chains() {
    let t = TestEnv::pinned();
    // Years apart: consolidation has no window.
    mem(&t, 1, "Use ruff for linting python code", &days_ago(900.0), "", &[]);
    mem(&t, 2, "Use ruff for linting python code!", &days_ago(1.0), "", &[]);
    // Not a near-duplicate of anything.
    mem(&t, 3, "The staging database is reset every night", &days_ago(5.0), "", &[]);
    let v = consolidate(&t, &["--dry-run"]);
    assert_eq!(v["merged"][0]["into"], 1);
    assert_eq!(v["merged"][0]["removed"], serde_json::json!([2]));
    assert_eq!(v["merged"].as_array().unwrap().len(), 1);
}

#[test]
fn stale_downvoted_records_are_removed_by_votes_and_age() {
    let t = TestEnv::pinned();
    let lines = [
        voted("old-down", 1, 3, "2026-10-01T00:00:00+00:00", None),
        voted("old-even", 2, 2, "2026-09-01T00:00:00+00:00", None),
        voted("old-up", 3, 1, "2026-09-01T00:00:00+00:00", None),
        voted("recent-vote", 0, 5, "2026-09-01T00:00:00+00:00", Some("2026-11-10T00:00:00+00:00")),
        voted("old-vote", 0, 1, "2026-11-20T00:00:00+00:00", Some("2026-10-20T00:00:00+00:00")),
        voted("day-27", 0, 1, "2026-10-26T00:00:00+00:00", None),
        voted("day-29", 0, 1, "2026-10-24T00:00:00+00:00", None),
        "{\"subject\":\"s\",\"fact\":\"no id, no votes\"}\n".to_string(),
        "not json at all\n".to_string(),
    ];
    let path = t.write(".github/copilot-memories.jsonl", &lines.concat());
    let v = consolidate(&t, &[]);
    assert_eq!(v["records_removed"], serde_json::json!(["old-down", "old-vote", "day-29"]));
    let kept = [&lines[1], &lines[2], &lines[3], &lines[5], &lines[7], &lines[8]];
    assert_eq!(t.read(&path), kept.iter().map(|s| s.as_str()).collect::<String>(), "every other line byte for byte");
    let before = lines.concat();
    t.kb(&["undo"]).ok();
    assert_eq!(t.read(&path), before);
}

#[test]
fn a_dry_run_writes_nothing() {
    let t = TestEnv::pinned();
    std::fs::create_dir_all(t.root().join(".co-cli/cache")).unwrap();
    mem(&t, 1, "The api service listens on port 8080", &days_ago(3.0), "", &[]);
    mem(&t, 2, "The api service listens on port 8080!", &days_ago(2.0), "", &[]);
    t.write(".github/copilot-memories.jsonl", &voted("mem-old", 0, 2, "2026-09-01T00:00:00+00:00", None));
    let before = t.snapshot();
    let v = consolidate(&t, &["--dry-run", "--summarizer", "touch ran; echo x"]);
    assert_eq!((v["dry_run"].as_bool(), v["journal"].is_null()), (Some(true), true));
    assert_eq!(v["merged"][0]["removed"], serde_json::json!([2]));
    assert_eq!(v["records_removed"], serde_json::json!(["mem-old"]));
    assert_same_tree(&before, &t.snapshot());
    assert!(!t.root().join("ran").exists(), "a dry run runs no summarizer");
}

#[test]
fn decisions_are_never_touched() {
    let t = TestEnv::pinned();
    let body = "---\ncreated: '2026-11-01T10:00:00+00:00'\nid: {id}\nstatus: active\ntags: []\ntype: process\n---\n\nRelease from main only\n";
    t.write(".co-cli/knowledge/decisions/001-a.md", &body.replace("{id}", "1"));
    t.write(".co-cli/knowledge/decisions/002-b.md", &body.replace("{id}", "2"));
    let before = t.snapshot();
    let v = consolidate(&t, &[]);
    assert_eq!(v["merged"], serde_json::json!([]));
    assert_same_tree(&before, &t.snapshot());
}

/// A board item as the board stores it.
fn item(src: &str, name: &str, read_count: u64, created: &str) -> serde_json::Value {
    serde_json::json!({"src": src, "name": name, "description": "d", "content": "c", "read_count": read_count,
        "count": 0, "created": created, "updated": created})
}

#[test]
fn the_board_is_pruned_of_agent_items_least_read_then_oldest() {
    let t = TestEnv::pinned();
    std::fs::write(t.root().join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
    let mut items = Vec::new();
    for i in 0..4 {
        items.push(item("user", &format!("user-{i}"), 0, "2026-11-01T00:00:00+00:00"));
    }
    for i in 0..18 {
        // Read counts 0, 0, 1, 1, 2, 2...; of equal reads the lower number is older.
        items.push(item("agent", &format!("agent-{i}"), i / 2, &format!("2026-11-{:02}T00:00:00+00:00", 20 - i % 2)));
    }
    let path = t.write(".co-cli/state/board/feature%2Fx.json", &serde_json::to_string_pretty(&items).unwrap());
    let before = t.read(&path);
    let v = consolidate(&t, &[]);
    // 22 items, down to 18: the four least read agent items, the older first among equals.
    assert_eq!(v["board_pruned"], serde_json::json!(["agent-0", "agent-1", "agent-2", "agent-3"]));
    let left: Vec<serde_json::Value> = serde_json::from_str(&t.read(&path)).unwrap();
    assert_eq!(left.len(), 18);
    assert!(left.iter().filter(|i| i["src"] == "user").count() == 4);
    let run = t.kb(&["undo"]).ok();
    assert!(run.stdout.contains("pruned 4 board items"), "{run:?}");
    assert_eq!(t.read(&path), before);
    // User items are never pruned, even when they alone exceed 18.
    let mut items: Vec<serde_json::Value> =
        (0..20).map(|i| item("user", &format!("u-{i}"), 0, "2026-11-01T00:00:00+00:00")).collect();
    items.push(item("agent", "a-0", 9, "2026-11-01T00:00:00+00:00"));
    items.push(item("agent", "a-1", 0, "2026-11-01T00:00:00+00:00"));
    std::fs::write(&path, serde_json::to_string_pretty(&items).unwrap()).unwrap();
    let v = consolidate(&t, &[]);
    assert_eq!(v["board_pruned"], serde_json::json!(["a-0", "a-1"]));
    assert_eq!(serde_json::from_str::<Vec<serde_json::Value>>(&t.read(&path)).unwrap().len(), 20);
    // A board within 18 is left alone, and a corrupt one is reported and never written.
    let v = consolidate(&t, &[]);
    assert_eq!(v["board_pruned"], serde_json::json!([]));
    std::fs::write(&path, "[{\"torn").unwrap();
    let run = t.kb(&["consolidate"]).ok();
    assert!(run.stderr.contains("not a board"), "{run:?}");
    assert_eq!(t.read(&path), "[{\"torn");
}

/// Writes two groups of near-duplicates (pytest: 1, 2; deploys: 3, 4) and a summarizer script.
fn two_groups(t: &TestEnv, script: &str) -> String {
    mem(t, 1, "User prefers pytest over unittest", &days_ago(4.0), "", &["python"]);
    mem(t, 2, "User prefers pytest over unittest!", &days_ago(3.0), "", &["testing"]);
    mem(t, 3, "Deploys go out on Tuesdays only", &days_ago(2.0), "", &[]);
    mem(t, 4, "Deploys go out on Tuesdays only.", &days_ago(1.0), "", &[]);
    t.write("summarize.sh", script);
    format!("sh {}", t.root().join("summarize.sh").display())
}

fn merged_into(v: &serde_json::Value) -> Vec<u64> {
    v["merged"].as_array().unwrap().iter().map(|m| m["into"].as_u64().unwrap()).collect()
}

#[test]
fn a_summarizer_writes_the_merged_body() {
    let t = TestEnv::pinned();
    let cmd = two_groups(&t, "cat > \"input-$$.json\"\nprintf '  Merged by the summarizer  \\n'\n");
    let v = consolidate(&t, &["--summarizer", &cmd]);
    assert_eq!(merged_into(&v), [1, 3]);
    assert_eq!(t.show(1)["content"], "Merged by the summarizer");
    assert_eq!(t.show(3)["content"], "Merged by the summarizer");
    assert_eq!(t.show(1)["tags"], serde_json::json!(["python", "testing"]));
    // The summarizer ran in the root, once per group, with the group on stdin, oldest first.
    let mut inputs: Vec<serde_json::Value> = std::fs::read_dir(t.root())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("input-"))
        .map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap())
        .collect();
    inputs.sort_by_key(|i| i["memories"][0]["id"].as_u64());
    assert_eq!(
        inputs[0],
        serde_json::json!({"memories": [
            {"id": 1, "content": "User prefers pytest over unittest", "tags": ["python"]},
            {"id": 2, "content": "User prefers pytest over unittest!", "tags": ["testing"]}
        ]})
    );
    assert_eq!(inputs.len(), 2);
}

#[test]
fn a_summarizer_that_fails_answers_nothing_or_a_secret_skips_its_group_only() {
    // The pytest group gets the bad answer, the deploys group a good one.
    let cases = [
        ("exit 3", "failed (exit status 3)"),
        ("printf '   \\n'", "gave an empty answer"),
        ("echo 'token ghp_abcdefghijklmnopqrstuvwxyz0123456789'", "matches the"),
    ];
    for (bad, warning) in cases {
        let t = TestEnv::pinned();
        let script =
            format!("input=$(cat)\ncase \"$input\" in *pytest*) {bad};; *) echo 'Deploys: Tuesdays only';; esac\n");
        let cmd = two_groups(&t, &script);
        let pytest = (t.file_of(1), t.file_of(2));
        let before = (t.read(&pytest.0), t.read(&pytest.1));
        let run = t.kb(&["--json", "consolidate", "--summarizer", &cmd]).ok();
        assert!(run.stderr.contains("warning: not merged: memories 2 into 1: the summarizer"), "{run:?}");
        assert!(run.stderr.contains(warning), "{warning}: {run:?}");
        let v = run.json();
        assert_eq!(merged_into(&v), [3], "{bad}");
        assert_eq!(v["skipped"][0]["into"], 1);
        assert_eq!((t.read(&pytest.0), t.read(&pytest.1)), before, "nothing is written for the skipped group");
        assert_eq!(t.show(3)["content"], "Deploys: Tuesdays only");
    }
}

#[test]
fn a_hanging_summarizer_is_killed_at_the_timeout_and_nothing_is_written_for_its_group() {
    let t = TestEnv::pinned().env("KB_SUMMARIZER_TIMEOUT_MS", "400");
    // It starts a child in its group, then hangs for the pytest group.
    let script = "input=$(cat)\ncase \"$input\" in *pytest*) sleep 30 & echo $! > sleeper.pid; wait;; *) echo 'Deploys: Tuesdays only';; esac\n";
    let cmd = two_groups(&t, script);
    let before = (t.read(&t.file_of(1)), t.read(&t.file_of(2)));
    let start = Instant::now();
    let run = t.kb(&["--json", "consolidate", "--summarizer", &cmd]).ok();
    assert!(start.elapsed() < Duration::from_secs(20), "took {:?}", start.elapsed());
    assert!(run.stderr.contains("took longer than 400 ms and was stopped"), "{run:?}");
    assert_eq!(merged_into(&run.json()), [3]);
    assert_eq!((t.read(&t.file_of(1)), t.read(&t.file_of(2))), before);
    // The whole process group went, the background sleep too.
    let pid = t.read(&t.root().join("sleeper.pid")).trim().to_string();
    let gone = (0..100).any(|_| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let alive = stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')) && !stat.is_empty();
        if alive {
            std::thread::sleep(Duration::from_millis(50));
        }
        !alive
    });
    assert!(gone, "the summarizer's child {pid} still runs");
}

#[test]
fn one_journal_entry_per_run_and_undo_takes_back_the_whole_run() {
    let t = TestEnv::pinned();
    for (id, text) in [(1, "alpha beta gamma delta"), (3, "one two three four five"), (5, "red green blue yellow")] {
        mem(&t, id, text, &days_ago(10.0 - id as f64), "", &[&format!("t{id}")]);
        mem(&t, id + 1, &format!("{text}!"), &days_ago(9.0 - id as f64), "", &[]);
    }
    t.write(
        ".github/copilot-memories.jsonl",
        &(voted("a", 0, 1, "2026-09-01T00:00:00+00:00", None) + &voted("b", 1, 0, "2026-09-01T00:00:00+00:00", None)),
    );
    let before = files(&t);
    let v = consolidate(&t, &[]);
    assert_eq!(merged_into(&v), [1, 3, 5]);
    assert_eq!(journal_entries(&t), 1);
    let list = t.kb(&["--json", "undo", "--list"]).ok().json();
    assert_eq!(list["entries"][0]["op"], "consolidate");
    assert_eq!(list["entries"][0]["what"], "merged 3 groups, removed 1 Copilot record");
    assert_eq!(list["entries"][0]["files"].as_array().unwrap().len(), 7);
    t.kb(&["undo"]).ok();
    assert_same_files(&before, &files(&t));
    assert_eq!(journal_entries(&t), 0);
}

/// Writes the store of the kill test: 30 groups of three near-duplicates, 10 single memories, and
/// 10 stale downvoted records among 20.
fn kill_store(t: &TestEnv) {
    let mut rng = Rng::new(11);
    let mut id = 1;
    for g in 0..30 {
        let text = format!("{} group {g}", sentence(&mut rng, 6));
        for (k, tail) in ["", ".", "!"].iter().enumerate() {
            mem(
                t,
                id,
                &format!("{text}{tail}"),
                &days_ago(100.0 - id as f64),
                "",
                &[&format!("g{g}"), &format!("k{k}")],
            );
            id += 1;
        }
    }
    for s in 0..10 {
        mem(t, id, &format!("{} single {s}", sentence(&mut rng, 9)), &days_ago(5.0), "", &[]);
        id += 1;
    }
    let jsonl: String = (0..20).map(|i| voted(&format!("r{i}"), i % 2, 1, "2026-09-01T00:00:00+00:00", None)).collect();
    t.write(".github/copilot-memories.jsonl", &jsonl);
}

/// Returns the files that matter: the store's files, without kb's leftover temporary files.
fn store_files(t: &TestEnv) -> BTreeMap<String, Vec<u8>> {
    let mut f = files(t);
    f.retain(|path, _| !path.rsplit('/').next().unwrap_or("").starts_with(".kb-tmp-"));
    f
}

#[test]
fn a_kill_during_consolidate_leaves_old_or_new_files_and_an_undo_that_works() {
    // The state after a full run, and how long one takes.
    let reference = TestEnv::pinned();
    kill_store(&reference);
    let old = store_files(&reference);
    let start = Instant::now();
    let v = consolidate(&reference, &[]);
    let full = start.elapsed();
    assert_eq!(v["merged"].as_array().unwrap().len(), 30);
    let new = store_files(&reference);
    let mut rng = Rng::new(5);
    let mut partial = 0;
    for round in 0..20 {
        let t = TestEnv::pinned();
        kill_store(&t);
        assert_same_files(&old, &store_files(&t));
        let mut child = t
            .command(&["consolidate"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let wait = full.mul_f64(rng.below(1000) as f64 / 1000.0);
        std::thread::sleep(wait);
        let _ = child.kill();
        let _ = child.wait();
        let now = store_files(&t);
        for path in old.keys().chain(new.keys()).chain(now.keys()) {
            let here = now.get(path);
            assert!(
                here == old.get(path) || here == new.get(path),
                "round {round} (killed after {wait:?}): {path} is neither its old nor its new state"
            );
        }
        if now != old && now != new {
            partial += 1;
        }
        // Undo brings the old state back, whatever the kill left.
        let run = t.kb(&["undo"]);
        match run.code {
            0 => {}
            _ => assert!(run.stderr.contains("nothing to undo"), "round {round}: {run:?}"),
        }
        assert_same_files(&old, &store_files(&t));
        // The store reads clean; a killed write may have left a temporary file, which kb reports
        // and sweeps later (docs/safety.md).
        let problems = t.kb(&["--json", "check"]).json()["problems"].as_array().unwrap().clone();
        assert!(
            problems.iter().all(|p| p["message"].as_str().unwrap_or("").contains("leftover temporary file")),
            "round {round}: {problems:?}"
        );
    }
    eprintln!("kill test: {partial} of 20 kills landed part way through the run");
}

#[test]
fn consolidate_needs_a_repository_but_a_dry_run_does_not() {
    let Some(t) = TestEnv::markerless() else { return };
    std::fs::remove_dir_all(t.root().join(".git")).unwrap();
    let run = t.kb(&["consolidate"]).err();
    assert!(run.stderr.contains("no repository"), "{run:?}");
    t.kb(&["consolidate", "--dry-run"]).ok();
    assert!(!t.root().join(".co-cli").exists());
}

#[test]
fn the_dedup_threshold_setting_decides_what_merges() {
    let t = TestEnv::pinned();
    mem(&t, 1, "The api service listens on port 8080", &days_ago(30.0), "", &[]);
    mem(&t, 2, "The api service listens on port 8080.", &days_ago(20.0), "", &[]);
    let run = |threshold: &str| {
        let mut cmd = t.command(&["--json", "consolidate"]);
        cmd.env("CO_CLI_MEMORY_DEDUP_THRESHOLD", threshold);
        run_command(cmd, None).ok().json()
    };
    // The pair scores 98.6: above 99 nothing merges, at 98 it does.
    assert_eq!(run("99")["merged"], serde_json::json!([]));
    assert_eq!(t.ids(), [1, 2]);
    let v = run("98");
    assert_eq!(v["merged"][0]["removed"], serde_json::json!([2]));
    assert!((v["merged"][0]["similarity"].as_f64().unwrap() - 98.6).abs() < 0.05, "{v}");
    assert_eq!(t.ids(), [1]);
}

#[test]
fn the_run_holds_the_lock_from_start_to_end() {
    // The summarizer of the one group waits for a file: while it waits, the lock is held. (A
    // command line of several shell commands: it runs with `sh -c`.)
    let t = TestEnv::pinned();
    mem(&t, 1, "The api service listens on port 8080", &days_ago(3.0), "", &[]);
    mem(&t, 2, "The api service listens on port 8080!", &days_ago(2.0), "", &[]);
    let cmd =
        "cat > /dev/null; touch started; while [ ! -e go ]; do sleep 0.02; done; echo 'Merged while locked: port 8080'";
    let mut child = t
        .command(&["consolidate", "--summarizer", cmd])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while !t.root().join("started").exists() {
        assert!(child.try_wait().unwrap().is_none(), "consolidate ended before its summarizer ran");
        std::thread::sleep(Duration::from_millis(10));
    }
    let lock_path = t.root().join(".co-cli/cache/lock");
    let lock = std::fs::OpenOptions::new().write(true).open(&lock_path).unwrap();
    assert!(
        matches!(lock.try_lock(), Err(std::fs::TryLockError::WouldBlock)),
        "the lock is free while consolidate runs"
    );
    std::fs::write(t.root().join("go"), "").unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(t.show(1)["content"], "Merged while locked: port 8080");
    lock.try_lock().expect("the lock is released at the end");
}

#[test]
fn only_the_current_branch_board_is_pruned_and_a_dry_run_plans_it() {
    let t = TestEnv::pinned();
    std::fs::write(t.root().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let agents: Vec<serde_json::Value> = (0..20)
        .map(|i| item("agent", &format!("agent-{i}"), 0, &format!("2026-11-{:02}T00:00:00+00:00", i + 1)))
        .collect();
    let text = serde_json::to_string_pretty(&agents).unwrap();
    let here = t.write(".co-cli/state/board/main.json", &text);
    let other = t.write(".co-cli/state/board/feature%2Fx.json", &text);
    let before = t.snapshot();
    let v = consolidate(&t, &["--dry-run"]);
    assert_eq!(v["board_pruned"], serde_json::json!(["agent-0", "agent-1"]));
    let run = t.kb(&["consolidate", "--dry-run"]).ok();
    assert!(run.stdout.contains("agent-0") && run.stdout.contains("agent-1"), "{run:?}");
    assert_same_tree(&before, &t.snapshot());
    let v = consolidate(&t, &[]);
    assert_eq!(v["board_pruned"], serde_json::json!(["agent-0", "agent-1"]));
    assert_eq!(serde_json::from_str::<Vec<serde_json::Value>>(&t.read(&here)).unwrap().len(), 18);
    assert_eq!(t.read(&other), text, "another branch's board is left alone");
}

// ---- issue 28: consolidation merges only what a save would consolidate ----

#[test]
fn a_different_fact_is_never_merged_and_the_plan_says_so() {
    let t = TestEnv::pinned();
    let p8080 = mem(&t, 1, "The api service listens on port 8080", &days_ago(3.0), "", &[]);
    let p8081 = mem(&t, 2, "The api service listens on port 8081", &days_ago(2.0), "", &[]);
    let before = (t.read(&p8080), t.read(&p8081));
    let run = t.kb(&["consolidate", "--dry-run"]).ok();
    assert_eq!(
        run.stdout,
        "Not merged: memory 1 says `8080` where memory 2 says `8081` (similarity 97.2), a possible conflict: \
         review with `kb audit 1 2`\nNothing consolidated: 1 possible conflict left as it is.\n"
    );
    let v = consolidate(&t, &[]);
    assert_eq!(v["merged"], serde_json::json!([]), "{v}");
    let c = &v["conflicts"][0];
    assert_eq!((c["memory"].as_u64(), c["other"].as_u64()), (Some(1), Some(2)), "{v}");
    assert_eq!(
        (c["only_in_memory"].clone(), c["only_in_other"].clone()),
        (serde_json::json!(["8080"]), serde_json::json!(["8081"]))
    );
    assert_eq!((t.read(&p8080), t.read(&p8081)), before, "both facts kept, unchanged");
    assert_eq!(journal_entries(&t), 0);
    // A restatement of 8080, the newest, merges with 8080 and never with 8081.
    mem(&t, 3, "The api service listens on port 8080.", &days_ago(1.0), "", &[]);
    let v = consolidate(&t, &[]);
    assert_eq!(v["merged"][0]["into"], 1, "{v}");
    assert_eq!(v["merged"][0]["removed"], serde_json::json!([3]));
    assert_eq!(t.ids(), [1, 2]);
    assert_eq!(t.show(1)["content"], "The api service listens on port 8080.");
    assert_eq!(t.show(2)["content"], "The api service listens on port 8081");
}

#[test]
fn a_refinement_is_merged_but_an_older_text_with_more_is_not_lost() {
    let t = TestEnv::pinned();
    // The newest says less than the oldest: merging would drop `nginx`.
    mem(&t, 1, "The api service listens on port 8080 behind `nginx`", &days_ago(3.0), "", &[]);
    mem(&t, 2, "The api service listens on port 8080 behind `nginx`.", &days_ago(2.0), "", &[]);
    mem(&t, 3, "The api service listens on port 8080 behind it", &days_ago(1.0), "", &[]);
    let v = consolidate(&t, &["--dry-run"]);
    let conflicts: Vec<(u64, u64)> = v["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["memory"].as_u64().unwrap(), c["other"].as_u64().unwrap()))
        .collect();
    assert_eq!(conflicts, [(1, 3), (2, 3)], "{v}");
    // Those two still merge with each other (the next round), `nginx` kept.
    assert_eq!(
        v["merged"],
        serde_json::json!([{"into": 1, "removed": [2], "similarity": v["merged"][0]["similarity"]}]),
        "{v}"
    );
    let run = t.kb(&["consolidate", "--dry-run"]).ok();
    assert!(run.stdout.contains("memory 1 says `nginx`, which memory 3 does not"), "{}", run.stdout);
}

#[test]
fn a_protected_or_core_context_memory_is_never_rewritten_or_removed() {
    let t = TestEnv::pinned();
    let protected = mem(&t, 1, "User prefers pytest over unittest", &days_ago(4.0), "decay_protected: true\n", &[]);
    let copy = mem(&t, 2, "User prefers pytest over unittest!", &days_ago(3.0), "", &["testing"]);
    let core = mem(&t, 3, "Deploys go out on Tuesdays only", &days_ago(2.0), "type: core_context\n", &[]);
    let core_copy = mem(&t, 4, "Deploys go out on Tuesdays only.", &days_ago(1.0), "type: core_context\n", &[]);
    let before: Vec<String> = [&protected, &copy, &core, &core_copy].iter().map(|p| t.read(p)).collect();
    let run = t.kb(&["consolidate"]).ok();
    assert_eq!(run.stdout, "Nothing to consolidate.\n");
    let after: Vec<String> = [&protected, &copy, &core, &core_copy].iter().map(|p| t.read(p)).collect();
    assert_eq!(after, before);
    // Two unprotected copies of the core-context one would merge; one kept copy does not.
    let v = consolidate(&t, &["--dry-run"]);
    assert_eq!(v["merged"], serde_json::json!([]), "{v}");
}

#[test]
fn a_persons_memory_survives_with_its_own_words_among_agents_restatements() {
    let t = TestEnv::pinned();
    // The agents' copies are older and newer than the person's memory.
    let agent_old = mem(
        &t,
        1,
        "User prefers pytest over unittest!!",
        &days_ago(5.0),
        "created_by: agent:claude\n",
        &["from-claude"],
    );
    let person =
        mem(&t, 2, "User prefers pytest over unittest", &days_ago(4.0), "created_by: alex@example.com\n", &["python"]);
    let agent_new = mem(
        &t,
        3,
        "user prefers pytest over unittest.",
        &days_ago(1.0),
        "created_by: agent:gemini\n",
        &["from-gemini"],
    );
    let v = consolidate(&t, &[]);
    assert_eq!(v["merged"][0]["into"], 2, "{v}");
    assert_eq!(v["merged"][0]["removed"], serde_json::json!([1, 3]));
    assert!(!agent_old.exists() && !agent_new.exists() && person.exists());
    let kept = t.show(2);
    assert_eq!(kept["content"], "User prefers pytest over unittest", "the person's own words");
    assert_eq!(kept["tags"], serde_json::json!(["python", "from-claude", "from-gemini"]));
    assert!(t.read(&person).contains("created_by: alex@example.com"));
}

#[test]
fn a_summarizer_answer_that_drops_a_fact_skips_its_group() {
    let t = TestEnv::pinned();
    mem(&t, 1, "The api service listens on port 8080", &days_ago(3.0), "", &[]);
    mem(&t, 2, "The api service listens on port 8080.", &days_ago(2.0), "", &[]);
    t.write("summarize.sh", "cat >/dev/null\necho 'The api service listens on port 8081'\n");
    let cmd = format!("sh {}", t.root().join("summarize.sh").display());
    let run = t.kb(&["consolidate", "--summarizer", &cmd]).ok();
    assert!(
        run.stderr.contains("not merged: memories 2 into 1: the summarizer answered text that leaves out `8080`"),
        "{run:?}"
    );
    assert_eq!(run.stdout, "Nothing consolidated: 1 group of near-duplicates left alone (see the warning).\n");
    assert_eq!(t.ids(), [1, 2]);
}

#[test]
fn a_skipped_group_is_not_nothing_to_consolidate() {
    let t = TestEnv::pinned();
    t.write(
        ".co-cli/knowledge/memories/001-flow.md",
        &format!("---\n{{created: '{}', id: 1, tags: []}}\n---\n\nDeploys go out on Tuesdays only\n", days_ago(3.0)),
    );
    mem(&t, 2, "Deploys go out on Tuesdays only.", &days_ago(2.0), "", &[]);
    let run = t.kb(&["consolidate"]).ok();
    assert!(run.stderr.contains("not merged: memories 2 into 1") && run.stderr.contains("cannot edit"), "{run:?}");
    assert_eq!(run.stdout, "Nothing consolidated: 1 group of near-duplicates left alone (see the warning).\n");
}
