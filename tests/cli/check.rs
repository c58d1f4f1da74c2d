//! `kb check` and frontmatter validation, as co-cli's validator has it: each problem names its file
//! and line, the exit status is 1 when there is any, and the JSON shape.

use crate::common::*;
use serde_json::json;

const CREATED: &str = "created: '2026-11-01T10:00:00+00:00'\n";

fn check_json(t: &TestEnv) -> (i32, serde_json::Value) {
    let run = t.kb(&["--json", "check"]);
    (run.code, run.json())
}

/// Returns the problems `kb check --json` reports for one file, as (line, message).
fn problems_for(t: &TestEnv, path: &std::path::Path) -> Vec<(Option<u64>, String)> {
    let (_, v) = check_json(t);
    v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["path"] == path.display().to_string())
        .map(|p| (p["line"].as_u64(), p["message"].as_str().unwrap().to_string()))
        .collect()
}

/// Writes a memory with this frontmatter and asserts `kb check` reports it with `needle`
/// (and `line` when given), exits 1, and that the other memory still loads.
fn assert_invalid_memory(yaml: &str, needle: &str, line: Option<u64>) {
    let t = TestEnv::pinned();
    t.memory(1, "a valid neighbour", &days_ago(1.0), &[]);
    let p = t.mem_file("009-bad.md", &format!("---\n{yaml}---\n\nbody\n"));
    let run = t.kb(&["check"]);
    assert_eq!(run.code, 1, "{yaml}: {run:?}");
    assert!(run.stdout.contains("009-bad.md"), "{run:?}");
    let found = problems_for(&t, &p);
    assert_eq!(found.len(), 1, "{yaml}: {found:?}");
    assert!(found[0].1.contains(needle), "{yaml}: expected {needle:?} in {found:?}");
    if line.is_some() {
        assert_eq!(found[0].0, line, "{yaml}: {found:?}");
    }
    assert_eq!(t.ids(), [1]);
}

fn assert_valid_memory(yaml: &str) -> TestEnv {
    let t = TestEnv::pinned();
    t.mem_file("009-ok.md", &format!("---\n{yaml}---\n\nbody\n"));
    let run = t.kb(&["check"]);
    assert_eq!(run.code, 0, "{yaml}: {run:?}");
    assert_eq!(t.ids(), [9]);
    t
}

#[test]
fn unquoted_timestamps_read_back_as_written_and_leading_blank_lines_are_dropped() {
    let t = TestEnv::pinned();
    t.mem_file(
        "001-x.md",
        "---\nid: 1\ncreated: 2026-02-09T14:30:00Z\nupdated: 2026-02-09T14:30:00Z\n---\n\n# Body content\nSome text here.",
    );
    let m = t.show(1);
    assert_eq!(m["updated"], "2026-02-09T14:30:00Z");
    assert_eq!(m["created"], "2026-02-09T14:30:00Z");
    assert_eq!(m["content"], "# Body content\nSome text here.");
    t.write(".co-cli/knowledge/context.md", "---\nversion: 1\nupdated: 2026-02-09T14:30:00Z\n---\n\n# Body content\n");
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn a_memory_without_frontmatter_is_reported_on_line_one() {
    let t = TestEnv::pinned();
    let p = t.mem_file("001-x.md", "Just a note.\n");
    let found = problems_for(&t, &p);
    assert_eq!(found.len(), 1);
    assert!(found[0].1.contains("frontmatter"), "{found:?}");
    assert_eq!(found[0].0, Some(1));
}

#[test]
fn malformed_yaml_is_reported_with_its_line() {
    let t = TestEnv::pinned();
    let p =
        t.mem_file("001-x.md", "---\nid: 1\ncreated: '2026-11-01T10:00:00+00:00'\ntags: [unclosed list\n---\n\nbody\n");
    let found = problems_for(&t, &p);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.contains("YAML"), "{found:?}");
    let line = found[0].0.expect("a line for a YAML error");
    assert!((4..=5).contains(&line), "line {line}: {found:?}");
}

#[test]
fn an_empty_frontmatter_is_reported_as_missing_the_id() {
    let t = TestEnv::pinned();
    let p = t.mem_file("001-x.md", "---\n---\n\nBody text.\n");
    let found = problems_for(&t, &p);
    assert_eq!(found.len(), 1);
    assert!(found[0].1.contains("id"), "{found:?}");
}

#[test]
fn the_body_is_what_follows_the_frontmatter() {
    let t = TestEnv::pinned();
    t.mem_file("001-x.md", &format!("---\nid: 1\n{CREATED}---\n\nBody content here.\n"));
    assert_eq!(t.show(1)["content"], "Body content here.");
}

fn context_problems(frontmatter: &str) -> Vec<(Option<u64>, String)> {
    let t = TestEnv::pinned();
    let p = t.write(".co-cli/knowledge/context.md", &format!("---\n{frontmatter}---\n\n# Context\n"));
    let (code, _) = check_json(&t);
    let found = problems_for(&t, &p);
    assert_eq!(code == 0, found.is_empty());
    found
}

#[test]
fn a_context_with_version_and_updated_is_valid() {
    assert!(context_problems("version: 1\nupdated: '2026-02-09T14:30:00+00:00'\n").is_empty());
}

#[test]
fn a_context_without_version_is_reported() {
    let found = context_problems("updated: '2026-02-09T14:30:00+00:00'\n");
    assert!(found.len() == 1 && found[0].1.contains("missing required field: version"), "{found:?}");
}

#[test]
fn a_context_version_given_as_a_string_is_reported_on_its_line() {
    let found = context_problems("version: \"1\"\nupdated: '2026-02-09T14:30:00+00:00'\n");
    assert!(found.len() == 1 && found[0].1.contains("must be an integer"), "{found:?}");
    assert_eq!(found[0].0, Some(2));
}

#[test]
fn a_context_without_updated_is_reported() {
    let found = context_problems("version: 1\n");
    assert!(found.len() == 1 && found[0].1.contains("missing required field: updated"), "{found:?}");
}

#[test]
fn a_context_updated_that_is_not_a_timestamp_is_reported_on_its_line() {
    let found = context_problems("version: 1\nupdated: not-a-timestamp\n");
    assert!(found.len() == 1 && found[0].1.contains("ISO"), "{found:?}");
    assert_eq!(found[0].0, Some(3));
}

#[test]
fn global_context_is_checked_too() {
    let t = TestEnv::pinned();
    let global = t.home().join(".config/co-cli/knowledge/context.md");
    std::fs::create_dir_all(global.parent().unwrap()).unwrap();
    std::fs::write(&global, "---\nversion: one\nupdated: '2026-02-09T14:30:00+00:00'\n---\n\nglobal\n").unwrap();
    let found = problems_for(&t, &global);
    assert!(found.len() == 1 && found[0].1.contains("integer"), "{found:?}");
}

#[test]
fn a_memory_with_tags_and_source_is_valid() {
    assert_valid_memory(&format!("id: 9\n{CREATED}tags: [python, style]\nsource: user-told\n"));
}

#[test]
fn a_memory_with_only_id_and_created_is_valid() {
    assert_valid_memory(&format!("id: 9\n{CREATED}"));
}

#[test]
fn a_memory_without_an_id_is_reported() {
    assert_invalid_memory(CREATED, "missing required field: id", None);
}

#[test]
fn a_memory_id_given_as_a_string_is_reported_on_its_line() {
    assert_invalid_memory(&format!("{CREATED}id: \"1\"\n"), "must be an integer", Some(3));
}

#[test]
fn a_memory_without_created_is_reported() {
    assert_invalid_memory("id: 9\n", "missing required field: created", None);
}

#[test]
fn memory_tags_that_are_not_a_list_are_reported_on_their_line() {
    assert_invalid_memory(&format!("id: 9\n{CREATED}tags: not-a-list\n"), "must be a list", Some(4));
}

#[test]
fn memory_tags_holding_a_number_are_reported_on_their_line() {
    assert_invalid_memory(&format!("id: 9\n{CREATED}tags: [valid, 123]\n"), "only strings", Some(4));
}

#[test]
fn a_memory_source_that_is_a_number_is_reported_on_its_line() {
    assert_invalid_memory(&format!("id: 9\n{CREATED}source: 123\n"), "must be a string", Some(4));
}

#[test]
fn other_field_rules() {
    assert_invalid_memory(&format!("id: 9\n{CREATED}auto_category: 5\n"), "auto_category", Some(4));
    assert_invalid_memory(&format!("id: 9\n{CREATED}consolidation_reason: [a]\n"), "consolidation_reason", Some(4));
    assert_invalid_memory(&format!("id: 9\n{CREATED}updated: null\n"), "updated", Some(4));
    assert_invalid_memory(&format!("id: 9\n{CREATED}updated: soon\n"), "updated", Some(4));
    assert_invalid_memory(&format!("id: 9\n{CREATED}decay_protected: 'yes'\n"), "decay_protected", Some(4));
    assert_invalid_memory(&format!("id: 9\n{CREATED}decay_protected: 1\n"), "decay_protected", Some(4));
    assert_invalid_memory("id: 9\ncreated: 20261101\n", "created", Some(3));
    assert_invalid_memory("id: 9\ncreated: [2026]\n", "created", Some(3));
    assert_invalid_memory(&format!("id: 1.5\n{CREATED}"), "integer", Some(2));
    assert_invalid_memory(&format!("id: 99999999999999999999999\n{CREATED}"), "integer", Some(2));
    assert_invalid_memory(&format!("id: 9\n{CREATED}tags: [[nested]]\n"), "only strings", Some(4));
    assert_invalid_memory(&format!("id: 9\n{CREATED}tags: [null]\n"), "only strings", Some(4));
}

#[test]
fn null_optional_fields_and_unknown_keys_are_valid() {
    assert_valid_memory(&format!(
        "id: 9\n{CREATED}source: null\nauto_category: null\nconsolidation_reason: null\nextra: {{a: [1, 2]}}\n"
    ));
}

#[test]
fn id_zero_is_valid() {
    let t = TestEnv::pinned();
    t.mem_file("000-x.md", &format!("---\nid: 0\n{CREATED}---\n\nzero\n"));
    assert_eq!(t.kb(&["check"]).code, 0);
    assert_eq!(t.ids(), [0]);
    assert_eq!(t.kb(&["--json", "save", "next one"]).ok().json()["memory_id"], 1);
}

#[test]
fn timestamps_in_every_offset_form_are_valid() {
    for created in [
        "2026-11-01T10:00:00+00:00",
        "2026-11-01T10:00:00Z",
        "2026-11-01T10:00:00.123456+00:00",
        "2026-11-01T10:00:00.5-08:00",
    ] {
        assert_valid_memory(&format!("id: 9\ncreated: '{created}'\n"));
    }
    // co-cli's validator wants the upper-case T (its regex), so a space makes the file invalid
    // (see hostile::validation_is_as_strict_as_co_cli).
}

#[test]
fn check_json_shape_and_counts() {
    let t = TestEnv::pinned();
    t.memory(1, "valid", &days_ago(1.0), &[]);
    let bad = t.mem_file("002-bad.md", &format!("---\nid: 2\n{CREATED}tags: oops\n---\n\nbody\n"));
    t.write(".co-cli/knowledge/context.md", "---\nversion: 1\nupdated: '2026-11-01T10:00:00+00:00'\n---\n\nctx\n");
    let (code, v) = check_json(&t);
    assert_eq!(code, 1);
    assert_eq!(v["files"], 3, "{v}");
    assert_eq!(v["problems"].as_array().unwrap().len(), 1);
    let p = &v["problems"][0];
    assert_eq!(p["path"], bad.display().to_string());
    assert_eq!(p["line"], 4);
    assert!(p["message"].as_str().unwrap().contains("must be a list"));
}

#[test]
fn check_human_output() {
    let t = TestEnv::pinned();
    t.memory(1, "valid", &days_ago(1.0), &[]);
    let run = t.kb(&["check"]).ok();
    assert!(run.stdout.contains("no problems"), "{run:?}");
    t.mem_file("002-bad.md", &format!("---\nid: 2\n{CREATED}tags: oops\n---\n\nbody\n"));
    let run = t.kb(&["check"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains(".co-cli/knowledge/memories/002-bad.md:4: "), "{run:?}");
}

#[test]
fn check_with_nothing_to_check() {
    let t = TestEnv::pinned();
    let (code, v) = check_json(&t);
    assert_eq!(code, 0);
    assert_eq!(v["problems"], json!([]));
    assert!(!t.root().join(".co-cli").exists());
}

#[test]
fn check_reports_duplicate_ids_in_both_files() {
    let t = TestEnv::pinned();
    let a = t.mem_file("003-a.md", &format!("---\nid: 3\n{CREATED}---\n\nfirst\n"));
    let b = t.mem_file("three.md", &format!("---\nid: 3\n{CREATED}---\n\nsecond\n"));
    let (code, _) = check_json(&t);
    assert_eq!(code, 1);
    let pa = problems_for(&t, &a);
    let pb = problems_for(&t, &b);
    assert!(pa.len() == 1 && pa[0].1.contains("three.md") && pa[0].1.contains('3'), "{pa:?}");
    assert!(pb.len() == 1 && pb[0].1.contains("003-a.md"), "{pb:?}");
}

#[test]
fn check_reports_invalid_settings_and_still_checks_memories() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "3");
    t.mem_file("002-bad.md", "---\nid: 2\n---\n\nbody\n");
    let (code, v) = check_json(&t);
    assert_eq!(code, 1);
    let messages: Vec<String> =
        v["problems"].as_array().unwrap().iter().map(|p| p["message"].as_str().unwrap().to_string()).collect();
    assert!(messages.iter().any(|m| m.contains("CO_CLI_MEMORY_MAX_COUNT")), "{messages:?}");
    assert!(messages.iter().any(|m| m.contains("created")), "{messages:?}");
}

#[test]
fn check_reports_a_bad_settings_file_with_its_path() {
    let t = TestEnv::pinned();
    let s = t.write(".co-cli/settings.json", "{\n  \"memory_decay_strategy\": \"shred\"\n}\n");
    let found = problems_for(&t, &s);
    assert!(found.len() == 1 && found[0].1.contains("memory_decay_strategy"), "{found:?}");
    let s = t.write(".co-cli/settings.json", "{\n  \"memory_max_count\": 10,\n}\n");
    let found = problems_for(&t, &s);
    assert!(found.len() == 1 && found[0].0 == Some(3), "{found:?}");
}

#[test]
fn check_reports_compile_targets_kb_would_refuse() {
    let t = TestEnv::pinned();
    t.write(".co-cli/settings.json", r#"{"context_targets": ["AGENTS.md", "../outside.md"]}"#);
    let run = t.kb(&["--json", "check"]);
    assert_eq!(run.code, 1, "{run:?}");
    let v = run.json();
    let problems = v["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{v}");
    assert!(problems[0]["path"].as_str().unwrap().ends_with(".co-cli/settings.json"), "{v}");
    assert!(problems[0]["message"].as_str().unwrap().contains("outside.md"), "{v}");
}
