//! Access heat (docs/behaviour.md): the access log, heat over active days, Hot Memories, `kb heat`,
//! `kb promote`.

use crate::common::TestEnv;

const LOG: &str = ".co-cli/state/access.jsonl";

fn env() -> TestEnv {
    let t = TestEnv::new();
    std::fs::create_dir_all(t.root().join(".co-cli")).unwrap();
    t.memory(1, "Use nextest in CI", "2026-11-01T00:00:00+00:00", &["testing"]);
    t.memory(2, "The parser lives in src/parse.rs", "2026-11-02T00:00:00+00:00", &[]);
    // What memory 2 cites exists: a stale memory would be left out of the context.
    t.write("src/parse.rs", "pub fn parse() {}\n");
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
        let mut cmd = t.command(&["recall", "--exact", "s"]);
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

/// Writes the access log by hand: one line per `(id, day of November 2026, times)`, in the shape
/// kb writes, in the order given.
fn write_log(t: &TestEnv, accesses: &[(u64, u32, usize)]) {
    let mut log = String::new();
    for &(id, day, times) in accesses {
        for _ in 0..times {
            log.push_str(&format!("{{\"id\":{id},\"store\":\"md\",\"at\":\"2026-11-{day:02}T09:00:00+00:00\"}}\n"));
        }
    }
    t.write(LOG, &log);
}

/// Returns `kb --json heat --all` at `day`, with extra environment variables.
fn heat_all(t: &TestEnv, day: u32, envs: &[(&str, &str)]) -> serde_json::Value {
    let mut cmd = t.command(&["--json", "heat", "--all"]);
    cmd.env("KB_NOW", format!("2026-11-{day:02}T10:00:00+00:00"));
    for (k, v) in envs {
        cmd.env(k, v);
    }
    crate::common::run_command(cmd, None).ok().json()
}

/// Returns the row of markdown memory `id` in a `kb --json heat` answer.
fn row(j: &serde_json::Value, id: u64) -> serde_json::Value {
    j["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}: {j}"))
        .clone()
}

#[test]
fn each_result_is_one_line_appended_after_the_old_ones() {
    let t = env();
    t.write(
        ".github/copilot-memories.jsonl",
        "{\"id\":\"mem-1\",\"subject\":\"ci\",\"fact\":\"nextest runs in CI\"}\n",
    );
    // Every memory and the record contain an "s": four results, the first three are uses.
    on(&t, 5, &["recall", "--exact", "s"]).ok();
    assert_eq!(log_lines(&t).len(), 3);
    // Only the results returned are accesses, not every match.
    on(&t, 5, &["recall", "--exact", "s", "-n", "2"]).ok();
    assert_eq!(log_lines(&t).len(), 5);
    let before = std::fs::read_to_string(t.root().join(LOG)).unwrap();
    // `kb show` of a record: its string id, store copilot, appended after the old lines.
    on(&t, 6, &["show", "mem-1"]).ok();
    let after = std::fs::read_to_string(t.root().join(LOG)).unwrap();
    assert!(after.starts_with(&before), "the old lines are kept as they were");
    assert_eq!(
        &after[before.len()..],
        "{\"id\":\"mem-1\",\"store\":\"copilot\",\"at\":\"2026-11-06T10:00:00+00:00\"}\n",
        "one line per access, with a line break"
    );
}

#[test]
fn a_ranked_recall_uses_its_first_result_and_those_near_it_never_a_mere_word_match() {
    let t = env();
    t.memory(4, "Deploys to staging need the VPN", "2026-11-04T00:00:00+00:00", &[]);
    t.memory(5, "Staging deploys run the smoke tests", "2026-11-04T00:00:00+00:00", &[]);
    t.memory(6, "The staging database is reset nightly", "2026-11-04T00:00:00+00:00", &[]);
    // "deploys staging": 3, 4 and 5 hold both words; 6 holds one and scores far below.
    let v = on(&t, 5, &["--json", "recall", "deploys", "staging", "-n", "10"]).ok().json();
    let scores: Vec<(u64, f64)> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_u64().unwrap(), r["score"].as_f64().unwrap()))
        .collect();
    assert!(scores.iter().any(|&(id, _)| id == 6), "{scores:?}");
    let best = scores[0].1;
    let used: Vec<u64> = log_lines(&t).iter().map(|l| l["id"].as_u64().unwrap()).collect();
    let near: Vec<u64> = scores.iter().take(3).filter(|&&(_, s)| s >= 0.8 * best).map(|&(id, _)| id).collect();
    assert_eq!(used, near, "{scores:?}");
    assert!(!used.contains(&6) && used.len() <= 3, "{used:?}");
    // One match: one use; an item that matched a word of an unrelated question is not used.
    on(&t, 6, &["recall", "the", "parser"]).ok();
    let day6: Vec<u64> = log_lines(&t)
        .iter()
        .filter(|l| l["at"].as_str().unwrap().starts_with("2026-11-06"))
        .map(|l| l["id"].as_u64().unwrap())
        .collect();
    assert_eq!(day6, [2]);
}

#[test]
fn a_promoted_memory_is_no_promote_candidate() {
    let t = env();
    let accesses: Vec<(u64, u32, usize)> = (1..=5).map(|day| (1, day, 1)).collect();
    write_log(&t, &accesses);
    assert_eq!(row(&heat_all(&t, 5, &[]), 1)["promote_candidate"], true);
    on(&t, 5, &["promote", "1", "--apply-to", "**/*.rs"]).ok();
    assert_eq!(row(&heat_all(&t, 5, &[]), 1)["promote_candidate"], false, "promoted already");
}

#[test]
fn logging_needs_no_lock_so_a_held_lock_never_slows_a_read() {
    // A writer (here the test) holds the lock: a read still answers and logs at once, where a
    // read that waited would fail after the 30-second lock timeout.
    let t = env();
    let lock_path = t.root().join(".co-cli/cache/lock");
    std::fs::create_dir_all(lock_path.parent().unwrap()).unwrap();
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path).unwrap();
    lock.lock().unwrap();
    assert!(t.kb(&["recall", "nextest"]).ok().stdout.contains("Use nextest in CI"));
    assert!(t.kb(&["show", "2"]).ok().stdout.contains("src/parse.rs"));
    assert_eq!(t.kb(&["--json", "heat", "--all"]).ok().json()["memories"][0]["heat"], 1);
    assert_eq!(log_lines(&t).len(), 2);
    lock.unlock().unwrap();
}

#[test]
fn active_days_are_the_utc_dates_with_an_access_not_calendar_days() {
    let t = env();
    // 23:30 at UTC-5 is the next day in UTC.
    let mut cmd = t.command(&["show", "1"]);
    cmd.env("KB_NOW", "2026-11-05T23:30:00-05:00");
    crate::common::run_command(cmd, None).ok();
    assert_eq!(log_lines(&t)[0]["at"], "2026-11-06T04:30:00+00:00");
    assert_eq!(heat_all(&t, 7, &[])["active_days"], serde_json::json!(["2026-11-06"]));
    // Memory 1 on day 1, memory 2 on days 20, 25 and 30: weeks without any access do not count,
    // so nothing cools down over a holiday.
    write_log(&t, &[(1, 1, 5), (2, 20, 1), (2, 25, 1), (2, 30, 1)]);
    let j = heat_all(&t, 30, &[]);
    assert_eq!(j["active_days"], serde_json::json!(["2026-11-01", "2026-11-20", "2026-11-25", "2026-11-30"]));
    assert_eq!((row(&j, 1)["heat"].as_u64(), row(&j, 2)["heat"].as_u64()), (Some(5), Some(3)));
    // `heat_window_days` is the number of active days: with 3, day 1 falls out of the window,
    // and `active_days` are the window's dates, oldest first.
    let j = heat_all(&t, 30, &[("KB_HEAT_WINDOW_DAYS", "3")]);
    assert_eq!(j["window_days"], 3);
    assert_eq!(j["active_days"], serde_json::json!(["2026-11-20", "2026-11-25", "2026-11-30"]));
    assert_eq!((row(&j, 1)["heat"].as_u64(), row(&j, 2)["heat"].as_u64()), (Some(0), Some(3)));
    assert_eq!(row(&j, 1)["last_access"], "2026-11-01T09:00:00+00:00", "the last access of any time");
}

#[test]
fn levels_are_cold_to_2_warm_to_9_hot_from_10_and_hot_means_in_hot_memories() {
    let t = env();
    t.memory(4, "Releases are tagged from main", "2026-11-04T00:00:00+00:00", &[]);
    write_log(&t, &[(1, 1, 2), (2, 1, 3), (3, 1, 9), (4, 1, 10)]);
    let j = heat_all(&t, 1, &[]);
    let got: Vec<serde_json::Value> = [1, 2, 3, 4]
        .iter()
        .map(|&id| {
            let r = row(&j, id);
            serde_json::json!([r["heat"], r["level"], r["hot"]])
        })
        .collect();
    // A warm memory (heat 3) is in Hot Memories: `hot` is not level hot.
    assert_eq!(
        serde_json::Value::from(got),
        serde_json::json!([[2, "cold", false], [3, "warm", true], [9, "warm", true], [10, "hot", true]])
    );
    // Without --all, only heat 3 and more, hottest first.
    let warm: Vec<u64> = on(&t, 1, &["--json", "heat"]).ok().json()["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_u64().unwrap())
        .collect();
    assert_eq!(warm, [4, 3, 2]);
    let out = on(&t, 1, &["context"]).ok().stdout;
    assert!(
        out.contains(
            "### Hot Memories\n\n- Releases are tagged from main\n- Deploys go through staging\n- The parser lives in src/parse.rs\n"
        ),
        "{out}"
    );
    assert!(!out.contains("Use nextest in CI"), "heat 2 is not hot enough: {out}");
    // Beyond `hot_limit` a warm memory is not in Hot Memories, so not `hot`.
    let j = heat_all(&t, 1, &[("KB_HOT_LIMIT", "2")]);
    let hot: Vec<bool> = [4, 3, 2].iter().map(|&id| row(&j, id)["hot"].as_bool().unwrap()).collect();
    assert_eq!(hot, [true, true, false]);
    assert_eq!(row(&j, 2)["level"], "warm");
}

#[test]
fn hot_memories_of_equal_heat_come_latest_access_first() {
    let t = env();
    // Memory 1 on day 1, memory 3 on day 2, memory 2 on day 3: three accesses each.
    for (day, id) in [(1, "1"), (2, "3"), (3, "2")] {
        for _ in 0..3 {
            on(&t, day, &["show", id]).ok();
        }
    }
    let out = on(&t, 3, &["context"]).ok().stdout;
    assert!(
        out.contains(
            "### Hot Memories\n\n- The parser lives in src/parse.rs\n- Deploys go through staging\n- Use nextest in CI\n"
        ),
        "{out}"
    );
    let ids: Vec<u64> = on(&t, 3, &["--json", "heat"]).ok().json()["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [2, 3, 1]);
}

#[test]
fn a_promote_candidate_is_accessed_on_five_consecutive_active_days() {
    let t = env();
    // Active days 1, 2, 3, 4, 5, 6, 10, 20. Memory 1: four in a row. Memory 2: five days, but
    // not on day 3 (an active day: memory 1 was used). Memory 3: days 4, 5, 6, 10 and 20,
    // consecutive active days whatever the calendar says.
    write_log(
        &t,
        &[
            (1, 1, 1),
            (2, 1, 1),
            (1, 2, 1),
            (2, 2, 1),
            (1, 3, 1),
            (1, 4, 1),
            (2, 4, 1),
            (3, 4, 1),
            (2, 5, 1),
            (3, 5, 1),
            (2, 6, 1),
            (3, 6, 1),
            (3, 10, 1),
            (3, 20, 1),
        ],
    );
    let j = heat_all(&t, 20, &[]);
    let candidates: Vec<bool> =
        [1, 2, 3].iter().map(|&id| row(&j, id)["promote_candidate"].as_bool().unwrap()).collect();
    assert_eq!(candidates, [false, false, true]);
}

#[test]
fn the_text_shows_id_heat_level_last_access_and_the_summary_line() {
    let t = env();
    let long = "Run the whole test suite with cargo nextest before every push to the main branch, always";
    t.memory(4, &format!("{long}\nand a second line"), "2026-11-04T00:00:00+00:00", &[]);
    for day in 1..=5 {
        on(&t, day, &["show", "4"]).ok();
        on(&t, day, &["show", "4"]).ok();
    }
    let text = on(&t, 5, &["heat", "--all"]).ok().stdout;
    let line = |id: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("no line for {id}: {text}"))
            .to_string()
    };
    let summary = format!("{}...", &long[..77]);
    let hot = line("4");
    assert_eq!(hot.split_whitespace().take(4).collect::<Vec<_>>(), ["4", "10", "hot", "2026-11-05"], "{text}");
    assert!(hot.contains(&summary) && !hot.contains("second line"), "{hot}");
    assert!(hot.ends_with("[loaded, promote candidate]"), "{hot}");
    let cold = line("1");
    assert_eq!(cold.split_whitespace().take(4).collect::<Vec<_>>(), ["1", "0", "cold", "never"], "{text}");
    assert!(cold.ends_with("Use nextest in CI"), "{cold}");
    // Without --all the cold ones are left out.
    let warm = on(&t, 5, &["heat"]).ok().stdout;
    assert!(warm.contains(&summary) && !warm.contains("Use nextest in CI"), "{warm}");
}

#[test]
fn nothing_is_promoted_automatically() {
    let t = env();
    t.kb(&["config", "set", "context_targets", r#"[{"path": "AGENTS.md", "hot": true}]"#]).ok();
    for day in 1..=6 {
        for _ in 0..2 {
            on(&t, day, &["recall", "nextest"]).ok();
        }
    }
    let j = on(&t, 6, &["--json", "heat"]).ok().json();
    assert_eq!(
        (j["memories"][0]["id"].as_u64(), j["memories"][0]["promote_candidate"].as_bool()),
        (Some(1), Some(true))
    );
    on(&t, 6, &["context"]).ok();
    on(&t, 6, &["compile"]).ok();
    on(&t, 6, &["heat", "--all"]).ok();
    on(&t, 6, &["consolidate"]).ok();
    assert!(std::fs::read_to_string(t.root().join("AGENTS.md")).unwrap().contains("### Hot Memories"));
    assert!(!t.root().join(".github/instructions").exists(), "no instruction file is written without `kb promote`");
    assert!(!t.read(&t.file_of(1)).contains("promoted_to"));
}

#[test]
fn a_promoted_memory_is_an_instructions_file_that_vs_code_reads() {
    // VS Code and Copilot read `.github/instructions/*.instructions.md` whose YAML frontmatter
    // has `applyTo` (a glob string) and `description`: the file must load as YAML with those
    // two strings (`**/*.rs` unquoted would be a YAML alias, not a glob).
    if !crate::common::python_ready() {
        return;
    }
    let t = env();
    let first = "Run the whole test suite with cargo nextest before every push to the main branch, always";
    let content = format!("{first}\nThe CI profile lives in .config/nextest.toml.");
    t.memory(4, &content, "2026-11-04T00:00:00+00:00", &[]);
    let r = t.kb(&["--json", "promote", "4", "--apply-to", "**/*.rs"]).ok().json();
    let rel = r["promoted_to"].as_str().unwrap().to_string();
    // NAME defaults to the memory's slug: its first 50 characters, as a memory's file name.
    assert_eq!(rel, ".github/instructions/run-the-whole-test-suite-with-cargo-nextest-before.instructions.md");
    let text = t.read(&t.root().join(&rel));
    let script = "import sys, yaml, json\ntext = sys.stdin.read()\nassert text.startswith('---\\n'), text\nfront, body = text[4:].split('\\n---\\n', 1)\nprint(json.dumps({'front': yaml.safe_load(front), 'body': body}))";
    let parsed: serde_json::Value = serde_json::from_str(&crate::common::python(script, &text)).unwrap();
    assert_eq!(
        parsed["front"],
        serde_json::json!({"applyTo": "**/*.rs", "description": format!("{}...", &first[..77])})
    );
    assert_eq!(parsed["body"].as_str().unwrap().trim(), content);
    // kb reads it back as an instruction that applies to Rust files, and checks clean.
    let listed = t.kb(&["--json", "instructions", "--for", "src/deep/main.rs"]).ok().json();
    assert_eq!(listed["instructions"][0]["applies"], true);
    assert_eq!(listed["instructions"][0]["description"], format!("{}...", &first[..77]));
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn a_logged_time_with_an_offset_counts_on_its_utc_date() {
    // Active days are the distinct UTC dates in the log. 23:30 at UTC-5 on the 5th is the 6th in
    // UTC.
    let t = env();
    t.write(LOG, "{\"id\":1,\"store\":\"md\",\"at\":\"2026-11-05T23:30:00-05:00\"}\n");
    let j = heat_all(&t, 7, &[]);
    assert_eq!(j["active_days"], serde_json::json!(["2026-11-06"]));
}

#[test]
fn a_log_line_whose_time_does_not_parse_is_reported_and_skipped() {
    // Active days are dates; a line that is not an access is reported and skipped (as a torn line
    // is). Today "yesterday " becomes the latest active day and pushes a real day out of the
    // window.
    let t = env();
    write_log(&t, &[(1, 1, 3)]);
    let mut log = t.read(&t.root().join(LOG));
    log.push_str("{\"id\":2,\"store\":\"md\",\"at\":\"yesterday at noon\"}\n");
    t.write(LOG, &log);
    let r = on(&t, 2, &["--json", "heat", "--all"]).ok();
    assert!(r.stderr.contains("access.jsonl:4"), "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["active_days"], serde_json::json!(["2026-11-01"]));
    assert_eq!(row(&j, 2)["heat"], 0);
}

#[test]
fn kb_heat_marks_hot_what_kb_context_lists_under_hot_memories() {
    // A core-context memory is shown in its own layer, never under Hot Memories, so it does not
    // take a place of `hot_limit` in `kb heat` either.
    let t = env();
    t.mem_file(
        "004-core.md",
        "---\ncreated: '2026-11-04T00:00:00+00:00'\nid: 4\ntags: []\ntype: core_context\n---\n\nThe API lives under /v2/\n",
    );
    for _ in 0..5 {
        on(&t, 5, &["show", "4"]).ok();
    }
    for _ in 0..4 {
        on(&t, 5, &["show", "2"]).ok();
    }
    let with_limit = |args: &[&str]| {
        let mut cmd = t.command(args);
        cmd.env("KB_NOW", "2026-11-05T10:00:00+00:00").env("KB_HOT_LIMIT", "1");
        crate::common::run_command(cmd, None)
    };
    let out = with_limit(&["context"]).ok().stdout;
    assert!(out.contains("### Hot Memories\n\n- The parser lives in src/parse.rs\n"), "{out}");
    let rows = with_limit(&["--json", "heat"]).ok().json()["memories"].as_array().unwrap().clone();
    let hot: Vec<(u64, bool)> = rows.iter().map(|r| (r["id"].as_u64().unwrap(), r["hot"].as_bool().unwrap())).collect();
    assert_eq!(hot, [(4, false), (2, true)]);
}

#[test]
fn kb_heat_names_its_columns_and_says_loaded_not_hot_for_a_warm_memory() {
    // Regression: a warm memory was listed "[in Hot Memories]" next to its level "warm", under no
    // column headers.
    let t = env();
    for _ in 0..3 {
        on(&t, 5, &["show", "2"]).ok();
    }
    let text = on(&t, 5, &["heat"]).ok().stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[2].split_whitespace().collect::<Vec<_>>(), ["id", "heat", "level", "last", "access", "summary"]);
    let row = lines.iter().find(|l| l.contains("The parser lives")).unwrap();
    assert!(row.contains(" warm ") && row.ends_with("[loaded]"), "{text}");
    assert!(!text.contains("Hot Memories]"), "{text}");
    assert!(text.contains("loaded: in the Hot Memories of `kb context`"), "{text}");
}

#[test]
fn promote_screens_a_secret_as_every_write_does() {
    // A hand-written memory may hold a secret; the instruction file is committed.
    let t = env();
    let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    t.memory(4, &format!("Deploy with token {token} from CI"), "2026-11-04T00:00:00+00:00", &[]);
    let run = t.kb(&["promote", "4", "--apply-to", "deploy/**"]).err();
    assert!(run.stderr.contains("secret") && run.stderr.contains("github-pat"), "{run:?}");
    assert!(!t.root().join(".github/instructions").exists(), "nothing is written");
    t.kb(&["promote", "4", "--apply-to", "deploy/**", "--redact"]).ok();
    let dir = t.root().join(".github/instructions");
    let names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 1);
    assert!(!names[0].contains("ghp"), "the file name: {}", names[0]);
    let text = std::fs::read_to_string(dir.join(&names[0])).unwrap();
    assert!(!text.contains(token) && text.contains("[REDACTED:github-pat]"), "{text}");
}

#[test]
fn a_failed_promote_leaves_no_instruction_file_and_can_be_retried() {
    // kb cannot edit flow-style frontmatter exactly, and a promote records promoted_to there.
    let t = env();
    let path = t.write(
        ".co-cli/knowledge/memories/005-flow.md",
        "---\n{created: '2026-11-05T00:00:00+00:00', id: 5, tags: []}\n---\n\nRelease from main only\n",
    );
    let run = t.kb(&["promote", "5", "--apply-to", "release/**"]).err();
    assert!(run.stderr.contains("005-flow.md") && run.stderr.contains("cannot edit"), "{run:?}");
    assert!(!t.root().join(".github/instructions").exists(), "no instruction file is left behind");
    // Once the file is written as kb writes it, the promote goes through.
    std::fs::write(
        &path,
        "---\ncreated: '2026-11-05T00:00:00+00:00'\nid: 5\ntags: []\n---\n\nRelease from main only\n",
    )
    .unwrap();
    t.kb(&["promote", "5", "--apply-to", "release/**"]).ok();
}
