//! Access heat (SPEC §12.1): the access log, heat over active days, Hot Memories, `kb heat`,
//! `kb promote`.

use crate::common::TestEnv;

const LOG: &str = ".co-cli/state/access.jsonl";

fn env() -> TestEnv {
    let t = TestEnv::new();
    std::fs::create_dir_all(t.root().join(".co-cli")).unwrap();
    t.memory(1, "Use nextest in CI", "2026-11-01T00:00:00+00:00", &["testing"]);
    t.memory(2, "The parser lives in src/parse.rs", "2026-11-02T00:00:00+00:00", &[]);
    t.memory(3, "Deploys go through staging", "2026-11-03T00:00:00+00:00", &[]);
    t
}

/// Runs kb with the clock pinned to `day` of November 2026.
fn on(t: &TestEnv, day: u32, args: &[&str]) -> crate::common::Run {
    let mut cmd = t.command(args);
    cmd.env("KB_NOW", format!("2026-11-{day:02}T10:00:00+00:00"));
    crate::common::run_command(cmd, None)
}

fn log_lines(t: &TestEnv) -> Vec<serde_json::Value> {
    std::fs::read_to_string(t.root().join(LOG))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn recall_and_show_are_accesses_list_and_context_are_not() {
    let t = env();
    t.write(
        ".github/copilot-memories.jsonl",
        "{\"id\":\"mem-1\",\"subject\":\"ci\",\"fact\":\"nextest runs in CI\"}\n",
    );
    assert_eq!(on(&t, 5, &["recall", "nextest"]).code, 0);
    let lines = log_lines(&t);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.contains(&serde_json::json!({"id": 1, "store": "md", "at": "2026-11-05T10:00:00+00:00"})));
    assert!(lines.contains(&serde_json::json!({"id": "mem-1", "store": "copilot", "at": "2026-11-05T10:00:00+00:00"})));
    on(&t, 5, &["show", "2"]);
    assert_eq!(log_lines(&t).len(), 3);
    t.kb(&["list"]).ok();
    t.kb(&["context"]).ok();
    t.kb(&["compile"]).ok();
    t.kb(&["recall", "no-such-word"]).ok();
    assert_eq!(log_lines(&t).len(), 3, "list, context, compile and an empty recall log nothing");
    let ignore = std::fs::read_to_string(t.root().join(".co-cli/state/.gitignore")).unwrap();
    assert_eq!(ignore, "*\n");
}

#[test]
fn no_co_cli_folder_means_no_log() {
    let t = TestEnv::new();
    t.write(".github/copilot-memories.jsonl", "{\"id\":\"mem-1\",\"subject\":\"ci\",\"fact\":\"nextest\"}\n");
    t.kb(&["recall", "nextest"]).ok();
    assert!(!t.root().join(".co-cli").exists());
}

#[test]
fn a_failure_to_log_is_a_warning() {
    let t = env();
    t.write(".co-cli/state", "not a folder");
    let r = t.kb(&["recall", "nextest"]).ok();
    assert!(r.stdout.contains("Use nextest in CI"));
    assert!(r.stderr.contains("access not logged"), "{}", r.stderr);
}

#[test]
fn hot_memories_rise_and_fall_away() {
    let t = env();
    t.kb(&["save", "Mark high", "--importance", "high", "--no-dedup"]).ok();
    for day in 1..=3 {
        on(&t, day, &["show", "1"]).ok();
    }
    on(&t, 3, &["show", "4"]).ok();
    let out = on(&t, 3, &["context"]).ok().stdout;
    assert!(
        out.contains("## Memory\n\n### Hot Memories\n\n- Use nextest in CI\n\n### Learnings\n\n- Mark high"),
        "{out}"
    );
    // --no-hot leaves the section out.
    assert!(!on(&t, 3, &["context", "--no-hot"]).ok().stdout.contains("Hot Memories"));
    // A committed target has no Hot Memories unless it asks.
    t.kb(&["config", "set", "context_targets", r#"["A.md", {"path": "B.md", "hot": true}]"#]).ok();
    t.kb(&["compile"]).ok();
    assert!(!std::fs::read_to_string(t.root().join("A.md")).unwrap().contains("Hot Memories"));
    assert!(std::fs::read_to_string(t.root().join("B.md")).unwrap().contains("### Hot Memories"));
    // Ten active days without it: memory 1 is cold again.
    for day in 4..=13 {
        on(&t, day, &["show", "2"]).ok();
    }
    let out = on(&t, 13, &["context"]).ok().stdout;
    assert!(out.contains("### Hot Memories\n\n- The parser lives in src/parse.rs\n"), "{out}");
    assert!(!out.contains("- Use nextest in CI"), "{out}");
}

#[test]
fn hot_memories_are_hottest_first_and_limited() {
    let t = env();
    for _ in 0..5 {
        on(&t, 1, &["show", "2"]).ok();
    }
    for _ in 0..4 {
        on(&t, 1, &["show", "3"]).ok();
    }
    for _ in 0..3 {
        on(&t, 1, &["show", "1"]).ok();
    }
    let out = on(&t, 1, &["context"]).ok().stdout;
    assert!(
        out.contains(
            "### Hot Memories\n\n- The parser lives in src/parse.rs\n- Deploys go through staging\n- Use nextest in CI"
        ),
        "{out}"
    );
    let mut cmd = t.command(&["context"]);
    cmd.env("KB_HOT_LIMIT", "1");
    let r = crate::common::run_command(cmd, None);
    assert!(r.stdout.ends_with("### Hot Memories\n\n- The parser lives in src/parse.rs\n"), "{}", r.stdout);
}

#[test]
fn kb_heat_reports_levels_and_promotion_candidates() {
    let t = env();
    for day in 1..=5 {
        on(&t, day, &["show", "1"]).ok();
        on(&t, day, &["show", "1"]).ok();
    }
    on(&t, 5, &["show", "2"]).ok();
    let j = on(&t, 5, &["--json", "heat"]).ok().json();
    assert_eq!(j["window_days"], 10);
    assert_eq!(
        j["active_days"],
        serde_json::json!(["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05"])
    );
    let rows = j["memories"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "memory 2 is cold: only with --all");
    assert_eq!(rows[0]["id"], 1);
    assert_eq!(rows[0]["store"], "md");
    assert_eq!(rows[0]["heat"], 10);
    assert_eq!(rows[0]["level"], "hot");
    assert_eq!(rows[0]["hot"], true);
    assert_eq!(rows[0]["promote_candidate"], true);
    assert_eq!(rows[0]["last_access"], "2026-11-05T10:00:00+00:00");
    let all = on(&t, 5, &["--json", "heat", "--all"]).ok().json();
    let ids: Vec<String> = all["memories"].as_array().unwrap().iter().map(|r| r["id"].to_string()).collect();
    assert_eq!(ids, ["1", "2", "3"]);
    assert_eq!(all["memories"][1]["level"], "cold");
    let text = on(&t, 5, &["heat"]).ok().stdout;
    assert!(text.contains("Use nextest in CI") && text.contains("promote candidate"), "{text}");
}

#[test]
fn a_torn_log_line_is_reported_and_skipped() {
    let t = env();
    on(&t, 1, &["show", "1"]).ok();
    let log = t.root().join(LOG);
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("{\"id\":1,\"store\":\"md\",\"at\":\"2026-1");
    std::fs::write(&log, &text).unwrap();
    let r = t.kb(&["--json", "heat", "--all"]).ok();
    assert_eq!(r.json()["memories"][0]["heat"], 1);
    assert!(r.stderr.contains("access.jsonl:2"), "{}", r.stderr);
    let c = t.kb(&["check"]);
    assert_eq!(c.code, 1);
    assert!(c.stdout.contains("access.jsonl"), "{}", c.stdout);
    // Reads never rewrite the log.
    assert_eq!(std::fs::read_to_string(&log).unwrap(), text);
}

#[test]
fn concurrent_appenders_lose_no_line() {
    let t = env();
    let spawn = || {
        let mut cmd = t.command(&["recall", "s"]);
        cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
        cmd.spawn().unwrap()
    };
    let mut children = Vec::new();
    for _ in 0..40 {
        children.push(spawn());
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    // Each recall of "s" returns memories 1, 2 and 3 (every text has an s).
    assert_eq!(log_lines(&t).len(), 120);
}

#[test]
fn promote_writes_an_instruction_file_vs_code_reads() {
    let t = env();
    let r = t.kb(&["--json", "promote", "1", "--apply-to", "ci/**,.github/workflows/*.yml"]).ok().json();
    let path = t.root().join(".github/instructions/use-nextest-in-ci.instructions.md");
    assert_eq!(r["path"], path.display().to_string());
    assert_eq!(r["promoted_to"], ".github/instructions/use-nextest-in-ci.instructions.md");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "---\napplyTo: ci/**,.github/workflows/*.yml\ndescription: Use nextest in CI\n---\n\nUse nextest in CI\n"
            .replace("applyTo: ci/**,.github/workflows/*.yml", "applyTo: 'ci/**,.github/workflows/*.yml'")
    );
    let memory = std::fs::read_to_string(t.file_of(1)).unwrap();
    assert!(memory.contains("promoted_to: '.github/instructions/use-nextest-in-ci.instructions.md'\n"), "{memory}");
    let listed = t.kb(&["--json", "instructions", "--for", "ci/run.sh"]).ok().json();
    assert_eq!(listed["instructions"][0]["applies"], true);
    // Never overwritten; a bad glob and an unknown memory are errors.
    t.kb(&["promote", "1", "--apply-to", "x/**"]).err();
    t.kb(&["promote", "2", "--apply-to", "src/{a,b"]).err();
    t.kb(&["promote", "9", "--apply-to", "src/**"]).err();
    t.kb(&["promote", "2", "--apply-to", "src/**", "--name", "../escape"]).err();
    t.kb(&["promote", "2", "--apply-to", "src/**", "--name", "parser"]).ok();
    assert!(t.root().join(".github/instructions/parser.instructions.md").exists());
}

#[test]
fn a_large_log_is_read_through_the_heat_cache_with_the_same_results() {
    // 3,000 lines (over the 64 KiB from which kb keeps a heat cache): memory 2 on 12 days,
    // memory 3 on the last 5, junk on one line.
    let t = env();
    let mut log = String::new();
    for i in 0..3000u32 {
        let (id, day) = if i % 3 == 0 { (3, 8 + i % 5) } else { (2, 1 + i % 12) };
        log.push_str(&format!("{{\"id\":{id},\"store\":\"md\",\"at\":\"2026-11-{day:02}T09:00:00.000001+00:00\"}}\n"));
        if i == 1500 {
            log.push_str("junk\n");
        }
    }
    let path = t.root().join(LOG);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &log).unwrap();
    let cache = t.root().join(".co-cli/cache/heat.idx");
    let heat = |t: &TestEnv| {
        let r = on(t, 13, &["--json", "heat", "--all"]).ok();
        (r.json(), r.stderr)
    };
    let first = heat(&t);
    assert!(cache.is_file(), "no heat cache after reading a large log");
    assert!(first.1.contains("access.jsonl:1502"), "{}", first.1);
    assert_eq!(first.0["memories"][0]["id"], 2);
    // New accesses are appended after the cached position; the cached read and a whole read agree.
    for _ in 0..4 {
        on(&t, 13, &["show", "1"]).ok();
    }
    let cached = heat(&t);
    std::fs::remove_file(&cache).unwrap();
    let whole = heat(&t);
    assert_eq!(cached, whole);
    let rows = whole.0["memories"].as_array().unwrap();
    let row = |id: u64| rows.iter().find(|r| r["id"] == id).unwrap();
    assert_eq!((row(1)["heat"].as_u64(), row(1)["last_access"].as_str()), (Some(4), Some("2026-11-13T10:00:00+00:00")));
    assert_eq!(whole.0["active_days"].as_array().unwrap().len(), 10);
    // And Hot Memories follow it: memory 2, the hottest, comes first.
    let out = on(&t, 13, &["context"]).ok().stdout;
    assert!(out.contains("### Hot Memories\n\n- The parser lives in src/parse.rs\n"), "{out}");
}
