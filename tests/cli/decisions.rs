//! `kb decision` (docs/behaviour.md): the file format, the id sequence, dedup, supersede, the
//! status changes, tolerant reads and `kb check`.

use crate::common::{TestEnv, assert_same_tree, python, python_ready};
use std::path::PathBuf;

const DIR: &str = ".co-cli/knowledge/decisions";

fn dir(t: &TestEnv) -> PathBuf {
    t.root().join(DIR)
}

fn files(t: &TestEnv) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(dir(t)) {
        Ok(rd) => rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

fn read(t: &TestEnv, name: &str) -> String {
    std::fs::read_to_string(dir(t).join(name)).unwrap()
}

/// Writes a decision file by hand.
#[allow(clippy::too_many_arguments)] // one argument per frontmatter key reads best in the tests
fn decision(t: &TestEnv, name: &str, id: u64, created: &str, kind: &str, status: &str, extra: &str, body: &str) {
    let text = format!(
        "---\ncreated: '{created}'\nid: {id}\nstatus: {status}\ntags: []\ntype: {kind}\n{extra}---\n\n{body}\n"
    );
    t.write(&format!("{DIR}/{name}"), &text);
}

fn add(t: &TestEnv, text: &str, kind: &str) -> serde_json::Value {
    t.kb(&["--json", "decision", "add", text, "--type", kind]).ok().json()
}

fn list_ids(t: &TestEnv, args: &[&str]) -> Vec<u64> {
    let mut all = vec!["--json", "decision", "list"];
    all.extend_from_slice(args);
    let json = t.kb(&all).ok().json();
    let ids: Vec<u64> = json["decisions"].as_array().unwrap().iter().map(|d| d["id"].as_u64().unwrap()).collect();
    assert_eq!(json["count"].as_u64().unwrap() as usize, ids.len());
    ids
}

#[test]
fn add_writes_the_file_format_and_reports_it() {
    let t = TestEnv::pinned();
    let run = t
        .kb(&["decision", "add", "Use PostgreSQL for all services", "--type", "architectural", "-t", "db", "-t", "yes"])
        .ok();
    assert_eq!(run.stdout, "✓ Added decision 1: 001-use-postgresql-for-all-services.md\n");
    assert_eq!(files(&t), ["001-use-postgresql-for-all-services.md"]);
    assert_eq!(
        read(&t, "001-use-postgresql-for-all-services.md"),
        "---\ncreated: '2026-11-22T12:00:00+00:00'\nid: 1\nstatus: active\ntags:\n- db\n- 'yes'\ntype: architectural\n---\n\nUse PostgreSQL for all services\n"
    );
    let json = add(&t, "Release from main only\n\nHotfixes too.", "process");
    assert_eq!(json["action"], "added");
    assert_eq!(json["decision_id"], 2);
    assert!(json["similarity"].is_null());
    assert!(json.get("superseded").is_none());
    let path = dir(&t).join("002-release-from-main-only-hotfixes-too.md");
    assert_eq!(json["path"], path.display().to_string());
    assert_eq!(json.as_object().unwrap().len(), 4, "{json}");
    assert!(read(&t, "002-release-from-main-only-hotfixes-too.md").contains("tags: []\ntype: process\n"));
}

#[test]
fn ids_are_their_own_sequence_max_plus_one() {
    let t = TestEnv::pinned();
    t.kb(&["save", "a memory with id one"]).ok();
    t.kb(&["save", "another memory, id two"]).ok();
    assert_eq!(add(&t, "First decision", "scope")["decision_id"], 1);
    decision(&t, "007-hand.md", 7, "2026-01-01T00:00:00+00:00", "scope", "archived", "", "Hand written");
    assert_eq!(add(&t, "Next decision after seven", "scope")["decision_id"], 8);
    assert!(files(&t).contains(&"008-next-decision-after-seven.md".to_string()));
}

#[test]
fn text_from_stdin_and_required_type() {
    let t = TestEnv::pinned();
    let run = t.kb_stdin(&["--json", "decision", "add", "-", "--type", "technical"], Some("Use nextest\nin CI\n")).ok();
    assert_eq!(run.json()["decision_id"], 1);
    assert!(read(&t, "001-use-nextest-in-ci.md").ends_with("---\n\nUse nextest\nin CI\n"));
    t.kb(&["decision", "add", "No type given"]).usage();
    t.kb(&["decision", "add", "Bad type", "--type", "cultural"]).usage();
    t.kb(&["decision", "add", "   ", "--type", "scope"]).err();
    assert_eq!(files(&t).len(), 1);
}

#[test]
fn near_duplicate_of_an_open_decision_is_not_added() {
    let t = TestEnv::pinned();
    decision(&t, "001-old.md", 1, "2020-01-01T00:00:00+00:00", "scope", "active", "", "We ship weekly on Tuesdays");
    decision(
        &t,
        "002-p.md",
        2,
        "2020-01-02T00:00:00+00:00",
        "scope",
        "proposed",
        "",
        "Every service logs JSON to stdout",
    );
    decision(
        &t,
        "003-a.md",
        3,
        "2020-01-03T00:00:00+00:00",
        "scope",
        "archived",
        "",
        "Feature flags live in LaunchDarkly",
    );
    let before = t.snapshot();
    // Any age: a six-year-old active decision still counts.
    let run = t.kb(&["--json", "decision", "add", "we ship weekly on tuesdays", "--type", "process"]).ok();
    let json = run.json();
    assert_eq!((json["action"].as_str(), json["decision_id"].as_u64()), (Some("exists"), Some(1)));
    assert_eq!(json["similarity"].as_f64(), Some(100.0));
    assert_eq!(json["path"], dir(&t).join("001-old.md").display().to_string());
    let json = add(&t, "Every service logs JSON to stdout.", "technical");
    assert_eq!((json["action"].as_str(), json["decision_id"].as_u64()), (Some("exists"), Some(2)));
    let text = t.kb(&["decision", "add", "We ship weekly on Tuesday", "--type", "process"]).ok().stdout;
    assert!(text.starts_with("Decision 1 already says this (similarity"), "{text}");
    assert_same_tree(&before, &t.snapshot());
    // An archived decision does not block the same text.
    let json = add(&t, "Feature flags live in LaunchDarkly", "technical");
    assert_eq!((json["action"].as_str(), json["decision_id"].as_u64()), (Some("added"), Some(4)));
    // The threshold is memory_dedup_threshold.
    let strict = TestEnv::pinned().env("CO_CLI_MEMORY_DEDUP_THRESHOLD", "100");
    add(&strict, "We ship weekly on Tuesdays", "process");
    assert_eq!(add(&strict, "We ship weekly on Tuesday", "process")["action"], "added");
}

#[test]
fn secrets_are_refused_or_redacted() {
    let t = TestEnv::pinned();
    let secret = "Deploy with token ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let run = t.kb(&["decision", "add", secret, "--type", "process"]).err();
    assert!(run.stderr.contains("secret"), "{run:?}");
    t.kb(&["decision", "add", "Tagged", "--type", "process", "-t", "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]).err();
    assert!(files(&t).is_empty());
    let run = t.kb(&["--json", "decision", "add", secret, "--type", "process", "--redact"]).ok();
    assert!(run.stderr.contains("redacted"), "{run:?}");
    let name = &files(&t)[0];
    let text = read(&t, name);
    assert!(text.contains("[REDACTED:") && !text.contains("ghp_aaaa"), "{text}");
    add(&t, "Use PostgreSQL", "architectural");
    t.kb(&["decision", "supersede", "2", secret]).err();
    assert_eq!(files(&t).len(), 2);
}

#[test]
fn list_defaults_to_open_decisions_oldest_first() {
    let t = TestEnv::pinned();
    decision(&t, "001-b.md", 1, "2026-03-01T00:00:00+00:00", "scope", "active", "", "Second oldest");
    decision(&t, "002-a.md", 2, "2026-01-01T00:00:00+00:00", "process", "proposed", "", "Oldest");
    decision(&t, "003-c.md", 3, "2026-03-01T00:00:00+00:00", "scope", "archived", "", "Archived one");
    decision(&t, "004-d.md", 4, "2026-02-01T00:00:00+00:00", "technical", "rejected", "", "Rejected one");
    decision(&t, "005-e.md", 5, "2026-03-01T00:00:00+02:00", "scope", "active", "", "Earlier by offset");
    decision(&t, "006-f.md", 6, "2026-04-01T00:00:00+00:00", "scope", "superseded", "superseded_by: 1\n", "Old");
    assert_eq!(list_ids(&t, &[]), [2, 5, 1]);
    assert_eq!(list_ids(&t, &["--all"]), [2, 4, 5, 1, 3, 6]);
    assert_eq!(list_ids(&t, &["--type", "scope"]), [5, 1]);
    assert_eq!(list_ids(&t, &["--all", "--type", "technical"]), [4]);
    let json = t.kb(&["--json", "decision", "list"]).ok().json();
    let first = &json["decisions"][0];
    let mut keys: Vec<&str> = first.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "content",
            "created",
            "created_by",
            "id",
            "path",
            "status",
            "superseded_by",
            "tags",
            "title",
            "type",
            "updated",
            "updated_by"
        ]
    );
    assert!(first["created_by"].is_null() && first["updated_by"].is_null(), "{first}");
    assert_eq!((first["type"].as_str(), first["status"].as_str()), (Some("process"), Some("proposed")));
    let text = t.kb(&["decision", "list", "--all"]).ok().stdout;
    assert!(text.starts_with("**002** (2026-01-01) [process] proposed : Oldest\n"), "{text}");
    assert!(text.contains("**006** (2026-04-01) [scope] superseded → 1 : Old\n"), "{text}");
    let empty = TestEnv::pinned();
    assert_eq!(empty.kb(&["--json", "decision", "list"]).ok().json(), serde_json::json!({"count": 0, "decisions": []}));
    assert!(empty.kb(&["decision", "list"]).ok().stdout.starts_with("No active or proposed decisions in "));
}

#[test]
fn show_one_decision() {
    let t = TestEnv::pinned();
    add(&t, "Use PostgreSQL\n\nBecause of JSONB.", "architectural");
    let json = t.kb(&["--json", "decision", "show", "1"]).ok().json();
    assert_eq!(json["title"], "Use PostgreSQL");
    assert_eq!(json["content"], "Use PostgreSQL\n\nBecause of JSONB.");
    assert_eq!(json["created"], "2026-11-22T12:00:00+00:00");
    assert!(json["updated"].is_null() && json["superseded_by"].is_null());
    assert_eq!(json["tags"], serde_json::json!([]));
    let text = t.kb(&["decision", "show", "001"]).ok().stdout;
    assert!(
        text.starts_with("Decision 1 (.co-cli/knowledge/decisions/001-use-postgresql-because-of-jsonb.md)\n"),
        "{text}"
    );
    assert!(text.contains("Type: architectural\nStatus: active\n") && text.ends_with("Because of JSONB.\n"), "{text}");
    assert!(t.kb(&["decision", "show", "9"]).err().stderr.contains("decision 9 not found"));
    t.kb(&["decision", "show", "x"]).err();
}

#[test]
fn supersede_replaces_an_active_decision() {
    let t = TestEnv::pinned();
    // A hand-written file with a comment and an unknown key: both survive the rewrite.
    let old = "---\n# owner: platform team\ncreated: '2026-01-01T00:00:00+00:00'\nid: 1\nreviewers:\n- ana\nstatus: active\ntags:\n- db\ntype: architectural\n---\n\nUse PostgreSQL 15\n";
    t.write(&format!("{DIR}/001-use-postgresql-15.md"), old);
    let json = t.kb(&["--json", "decision", "supersede", "1", "Use PostgreSQL 17"]).ok().json();
    assert_eq!(json["action"], "superseded");
    assert_eq!((json["decision_id"].as_u64(), json["superseded"].as_u64()), (Some(2), Some(1)));
    assert!(json["similarity"].is_null());
    assert_eq!(json["path"], dir(&t).join("002-use-postgresql-17.md").display().to_string());
    assert_eq!(
        read(&t, "001-use-postgresql-15.md"),
        "---\n# owner: platform team\ncreated: '2026-01-01T00:00:00+00:00'\nid: 1\nreviewers:\n- ana\nstatus: superseded\nsuperseded_by: 2\ntags:\n- db\ntype: architectural\nupdated: '2026-11-22T12:00:00+00:00'\n---\n\nUse PostgreSQL 15\n"
    );
    // The type (and tags) default to the old one's.
    let new = t.kb(&["--json", "decision", "show", "2"]).ok().json();
    assert_eq!((new["type"].as_str(), new["status"].as_str()), (Some("architectural"), Some("active")));
    assert_eq!(new["tags"], serde_json::json!(["db"]));
    // --type overrides it; stdin works; the text output names both.
    let run = t.kb_stdin(&["decision", "supersede", "2", "-", "--type", "technical"], Some("Use PostgreSQL 18\n")).ok();
    assert_eq!(
        run.stdout,
        "✓ Added decision 3: 003-use-postgresql-18.md\n✓ Decision 2 superseded by decision 3\n\
         A technical decision is kept for the record; not compiled into agents' context: context_decision_types is \
         architectural, scope.\n"
    );
    assert_eq!(t.kb(&["--json", "decision", "show", "3"]).ok().json()["type"], "technical");
    // Only an active decision can be superseded.
    let before = t.snapshot();
    let run = t.kb(&["decision", "supersede", "1", "Use MySQL"]).err();
    assert!(run.stderr.contains("decision 1 is superseded"), "{run:?}");
    t.kb(&["decision", "supersede", "99", "Use MySQL"]).err();
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn accept_reject_archive_move_the_status() {
    let t = TestEnv::pinned();
    for (i, name) in ["001-a.md", "002-b.md", "003-c.md"].iter().enumerate() {
        decision(&t, name, i as u64 + 1, "2026-01-01T00:00:00+00:00", "scope", "proposed", "", &format!("Body {name}"));
    }
    let json = t.kb(&["--json", "decision", "accept", "1"]).ok().json();
    assert_eq!(
        json,
        serde_json::json!({"action": "accepted", "decision_id": 1, "path": dir(&t).join("001-a.md").display().to_string(), "similarity": null})
    );
    assert!(
        read(&t, "001-a.md").contains("status: active\ntags: []\ntype: scope\nupdated: '2026-11-22T12:00:00+00:00'\n")
    );
    assert_eq!(t.kb(&["decision", "reject", "2"]).ok().stdout, "✓ Rejected decision 2: 002-b.md\n");
    assert!(read(&t, "002-b.md").contains("status: rejected\n") && read(&t, "002-b.md").contains("updated: "));
    assert_eq!(t.kb(&["--json", "decision", "archive", "1"]).ok().json()["action"], "archived");
    assert!(read(&t, "001-a.md").contains("status: archived\n"));
    assert_eq!(t.kb(&["--json", "decision", "archive", "3"]).ok().json()["action"], "archived");
    // Wrong status: exit 1 naming it, nothing written.
    let before = t.snapshot();
    assert!(t.kb(&["decision", "accept", "1"]).err().stderr.contains("decision 1 is archived"));
    assert!(t.kb(&["decision", "reject", "2"]).err().stderr.contains("decision 2 is rejected"));
    assert!(t.kb(&["decision", "archive", "2"]).err().stderr.contains("decision 2 is rejected"));
    t.kb(&["decision", "accept", "42"]).err();
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn malformed_files_are_skipped_with_a_warning_and_never_rewritten() {
    let t = TestEnv::pinned();
    decision(&t, "001-good.md", 1, "2026-01-01T00:00:00+00:00", "scope", "active", "", "Good one");
    t.write(&format!("{DIR}/002-yaml.md"), "---\nid: 2\ncreated: {{bad\n---\nx\n");
    decision(&t, "003-type.md", 3, "2026-01-01T00:00:00+00:00", "cultural", "active", "", "Bad type");
    decision(&t, "004-status.md", 4, "2026-01-01T00:00:00+00:00", "scope", "done", "", "Bad status");
    t.write(
        &format!("{DIR}/005-missing.md"),
        "---\ncreated: '2026-01-01T00:00:00+00:00'\nid: 5\ntype: scope\n---\nNo status\n",
    );
    t.write(&format!("{DIR}/notes.txt"), "not a decision");
    let before = t.snapshot();
    let run = t.kb(&["--json", "decision", "list", "--all"]).ok();
    assert_eq!(run.json()["count"], 1);
    for (name, line) in [("002-yaml.md", 3), ("003-type.md", 6), ("004-status.md", 4), ("005-missing.md", 1)] {
        assert!(run.stderr.contains(&format!("warning: skipped {DIR}/{name}:{line}: ")), "{name}: {}", run.stderr);
    }
    assert!(run.stderr.contains("unknown type 'cultural'") && run.stderr.contains("unknown status 'done'"));
    assert!(run.stderr.contains("missing required field: status"));
    t.kb(&["decision", "show", "1"]).ok();
    t.kb(&["decision", "show", "3"]).err();
    assert_same_tree(&before, &t.snapshot());
    // A write goes on, never touches the bad files, and never reuses an id they hold.
    assert_eq!(add(&t, "A new one", "scope")["decision_id"], 6);
    for name in ["002-yaml.md", "003-type.md", "004-status.md", "005-missing.md"] {
        assert_eq!(before[&format!("{DIR}/{name}")], t.snapshot()[&format!("{DIR}/{name}")], "{name}");
    }
}

#[test]
fn check_reports_decision_problems() {
    let t = TestEnv::pinned();
    decision(&t, "001-a.md", 1, "2026-01-01T00:00:00+00:00", "scope", "active", "", "Fine");
    t.kb(&["check"]).ok();
    decision(&t, "002-t.md", 2, "2026-01-01T00:00:00+00:00", "cultural", "active", "", "Bad type");
    decision(&t, "003-s.md", 3, "2026-01-01T00:00:00+00:00", "scope", "finished", "", "Bad status");
    decision(&t, "004-n.md", 4, "2026-01-01T00:00:00+00:00", "scope", "superseded", "", "No successor");
    decision(&t, "005-w.md", 5, "2026-01-01T00:00:00+00:00", "scope", "superseded", "superseded_by: 77\n", "Nowhere");
    decision(&t, "006-o.md", 6, "2026-01-01T00:00:00+00:00", "scope", "superseded", "superseded_by: 1\n", "Fine too");
    decision(&t, "001-dup.md", 1, "2026-01-01T00:00:00+00:00", "scope", "active", "", "Same id");
    let run = t.kb(&["--json", "check"]);
    assert_eq!(run.code, 1, "{run:?}");
    let problems = run.json()["problems"].as_array().unwrap().clone();
    let of = |name: &str| -> Vec<String> {
        problems
            .iter()
            .filter(|p| p["path"].as_str().unwrap().ends_with(name))
            .map(|p| p["message"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(of("002-t.md")[0].contains("unknown type 'cultural'"));
    assert!(of("003-s.md")[0].contains("unknown status 'finished'"));
    assert!(of("004-n.md")[0].contains("without superseded_by"));
    assert!(of("005-w.md")[0].contains("superseded_by 77: no decision has that id"));
    assert!(of("006-o.md").is_empty());
    assert!(of("001-a.md")[0].contains("duplicate decision id 1: also used by 001-dup.md"));
    assert!(of("001-dup.md")[0].contains("duplicate decision id 1"));
    assert_eq!(problems.len(), 6, "{problems:?}");
    // A duplicate id is refused by show and the status changes.
    assert!(t.kb(&["decision", "show", "1"]).err().stderr.contains("used by 2 files"));
}

#[test]
fn writes_need_a_repository_and_reads_do_not_write() {
    let t = TestEnv::pinned();
    let before = t.snapshot();
    t.kb(&["decision", "list"]).ok();
    t.kb(&["decision", "list", "--all"]).ok();
    t.kb(&["decision", "show", "1"]).err();
    assert_same_tree(&before, &t.snapshot());
    for c in ["add", "list", "show", "supersede", "archive", "accept", "reject"] {
        let out = t.kb(&["decision", c, "--help"]).ok().stdout;
        assert!(out.contains("Examples:\n  kb decision "), "{c}: {out}");
    }
    assert!(t.kb(&["decision", "--help"]).ok().stdout.contains("Examples:\n  kb decision "));
}

#[test]
fn written_files_load_in_pyyaml() {
    if !python_ready() {
        return;
    }
    let t = TestEnv::pinned();
    t.kb(&[
        "decision",
        "add",
        "Use 'yes' and no: on everything # really",
        "--type",
        "scope",
        "-t",
        "on",
        "-t",
        "1_000",
        "-t",
        "2026-01-01",
    ])
    .ok();
    t.kb(&["decision", "supersede", "1", "Use null instead"]).ok();
    let script = r#"
import sys, yaml, json, glob
out = []
for p in sorted(glob.glob(sys.stdin.read().strip() + "/*.md")):
    text = open(p).read()
    fm = yaml.safe_load(text.split("---\n")[1])
    out.append({k: str(v) if k in ("created", "updated") else v for k, v in fm.items()})
print(json.dumps(out))
"#;
    let got: serde_json::Value = serde_json::from_str(&python(script, &dir(&t).display().to_string())).unwrap();
    assert_eq!(
        got,
        serde_json::json!([
            {"created": "2026-11-22T12:00:00+00:00", "id": 1, "status": "superseded", "superseded_by": 2,
             "tags": ["on", "1_000", "2026-01-01"], "type": "scope", "updated": "2026-11-22T12:00:00+00:00"},
            {"created": "2026-11-22T12:00:00+00:00", "id": 2, "status": "active",
             "tags": ["on", "1_000", "2026-01-01"], "type": "scope"}
        ])
    );
}

/// Only an active decision can be superseded (else exit 1), whatever the other status; the JSON of
/// supersede, reject and archive is exactly the documented shape, and accept, reject and archive
/// each set `updated`.
#[test]
fn supersede_needs_an_active_decision_and_the_json_shapes_are_exact() {
    let t = TestEnv::pinned();
    decision(&t, "001-p.md", 1, "2026-01-01T00:00:00+00:00", "scope", "proposed", "", "Proposed one");
    decision(&t, "002-a.md", 2, "2026-01-01T00:00:00+00:00", "scope", "archived", "", "Archived one");
    decision(&t, "003-r.md", 3, "2026-01-01T00:00:00+00:00", "scope", "rejected", "", "Rejected one");
    decision(&t, "004-s.md", 4, "2026-01-01T00:00:00+00:00", "scope", "superseded", "superseded_by: 5\n", "Old");
    decision(&t, "005-t.md", 5, "2026-01-01T00:00:00+00:00", "technical", "active", "", "Active one");
    let before = t.snapshot();
    for (id, status) in [("1", "proposed"), ("2", "archived"), ("3", "rejected"), ("4", "superseded")] {
        let run = t.kb(&["decision", "supersede", id, "A brand new decision text"]).err();
        let want = format!("decision {id} is {status}: only an active decision can be superseded");
        assert!(run.stderr.contains(&want), "{run:?}");
        t.kb(&["--json", "decision", "supersede", id, "A brand new decision text"]).err();
    }
    assert_same_tree(&before, &t.snapshot());

    let json = t.kb(&["--json", "decision", "supersede", "5", "Another active one"]).ok().json();
    assert_eq!(
        json,
        serde_json::json!({"action": "superseded", "decision_id": 6, "superseded": 5, "similarity": null,
            "path": dir(&t).join("006-another-active-one.md").display().to_string()})
    );
    // The type defaults to the old one's.
    assert!(read(&t, "006-another-active-one.md").contains("\ntype: technical\n"));
    let json = t.kb(&["--json", "decision", "reject", "1"]).ok().json();
    assert_eq!(
        json,
        serde_json::json!({"action": "rejected", "decision_id": 1, "similarity": null,
            "path": dir(&t).join("001-p.md").display().to_string()})
    );
    let json = t.kb(&["--json", "decision", "archive", "6"]).ok().json();
    assert_eq!(
        json,
        serde_json::json!({"action": "archived", "decision_id": 6, "similarity": null,
            "path": dir(&t).join("006-another-active-one.md").display().to_string()})
    );
    // `updated` is set by each status change (the clock is pinned).
    for id in [1, 6] {
        assert_eq!(t.kb(&["--json", "decision", "show", &id.to_string()]).ok().json()["updated"], crate::common::NOW);
    }
    // A superseded, rejected or archived decision cannot be archived again.
    for id in ["1", "2", "4", "6"] {
        let run = t.kb(&["decision", "archive", id]).err();
        assert!(run.stderr.contains("only a proposed or active decision can be archived"), "{run:?}");
    }
    // Accepting or rejecting needs a proposed decision.
    for id in ["2", "3", "5"] {
        assert!(t.kb(&["decision", "accept", id]).err().stderr.contains(&format!("decision {id} is ")));
        assert!(t.kb(&["decision", "reject", id]).err().stderr.contains(&format!("decision {id} is ")));
    }
}

/// A proposed decision is never compiled until a person accepts it; once accepted it is.
#[test]
fn a_proposed_decision_is_compiled_only_once_accepted() {
    let t = TestEnv::pinned();
    decision(&t, "001-p.md", 1, "2026-01-01T00:00:00+00:00", "architectural", "proposed", "", "Use Kafka for events");
    let before = t.snapshot();
    assert_eq!(t.kb(&["context"]).ok().stdout, "");
    assert!(t.kb(&["--json", "context", "--decisions-only"]).ok().json()["text"].is_null());
    assert_same_tree(&before, &t.snapshot());
    t.kb(&["decision", "accept", "1"]).ok();
    let out = t.kb(&["context", "--decisions-only"]).ok().stdout;
    assert_eq!(
        out,
        "## Boundaries and Decisions\n\nThese decisions take precedence over all other context.\n\n- Use Kafka for events\n"
    );
}

#[test]
fn context_decision_types_chooses_what_is_compiled_and_add_says_when_a_type_is_not() {
    let t = TestEnv::new();
    std::fs::create_dir_all(t.root().join(".co-cli")).unwrap();
    // The default compiles architectural and scope decisions; adding another type says so.
    let r = t.kb(&["decision", "add", "Releases are cut on Tuesdays", "--type", "process"]).ok();
    assert!(
        r.stdout.contains(
            "kept for the record; not compiled into agents' context: context_decision_types is architectural, scope"
        ),
        "{}",
        r.stdout
    );
    let r = t.kb(&["decision", "add", "Use PostgreSQL for every service", "--type", "architectural"]).ok();
    assert!(!r.stdout.contains("not compiled"), "{}", r.stdout);
    // The JSON shape is fixed (docs/formats.md): no extra key.
    let j = add(&t, "Pin the toolchain in rust-toolchain.toml", "technical");
    assert!(j.get("not_compiled").is_none() && j["action"] == "added", "{j}");
    let ctx = t.kb(&["context"]).ok().stdout;
    assert!(ctx.contains("PostgreSQL") && !ctx.contains("Tuesdays"), "{ctx}");
    // The setting, from the environment (a JSON list or comma-separated) or a settings file.
    let mut cmd = t.command(&["context"]);
    cmd.env("KB_CONTEXT_DECISION_TYPES", "process, architectural");
    let ctx = crate::common::run_command(cmd, None).ok().stdout;
    assert!(ctx.contains("PostgreSQL") && ctx.contains("Tuesdays") && !ctx.contains("toolchain"), "{ctx}");
    let mut cmd = t.command(&["--json", "config"]);
    cmd.env("KB_CONTEXT_DECISION_TYPES", "[\"technical\"]");
    let cfg = crate::common::run_command(cmd, None).ok().stdout;
    assert!(cfg.contains("context_decision_types") && cfg.contains("technical"), "{cfg}");
    let mut cmd = t.command(&["context"]);
    cmd.env("KB_CONTEXT_DECISION_TYPES", "process,bogus");
    let bad = crate::common::run_command(cmd, None);
    assert_ne!(bad.code, 0, "{}", bad.stderr);
    assert!(bad.stderr.contains("KB_CONTEXT_DECISION_TYPES"), "{}", bad.stderr);
    t.kb(&["config", "set", "context_decision_types", "[\"scope\",\"process\"]"]).ok();
    let ctx = t.kb(&["context"]).ok().stdout;
    assert!(!ctx.contains("PostgreSQL") && ctx.contains("Tuesdays"), "{ctx}");
    let r = t.kb(&["decision", "supersede", "2", "Use PostgreSQL 17 for every service"]).ok();
    assert!(r.stdout.contains("context_decision_types is scope, process"), "{}", r.stdout);
}
