//! Decay on save, as co-cli decays (docs/behaviour.md): when it fires, how many go, which ones, the
//! summary memory, protection, and the settings that drive it.

use crate::common::*;
use serde_json::json;

/// Writes `n` memories with ids `1..=n`, the lower ids older (`first_age` days down by one a day),
/// with random texts that never dedup with each other or with [`NEW`].
fn fill(t: &TestEnv, n: u64, first_age: f64) {
    let mut rng = Rng::new(n);
    for id in 1..=n {
        t.memory(id, &format!("{} {id}", sentence(&mut rng, 8)), &days_ago(first_age - (id - 1) as f64), &[]);
    }
}

/// A text unlike any [`fill`] writes.
const NEW: &str = "The brand new memory that triggers decay";

fn save(t: &TestEnv, text: &str) -> serde_json::Value {
    t.kb(&["--json", "save", text]).ok().json()
}

fn summary_files(t: &TestEnv) -> Vec<String> {
    t.memory_files().into_iter().filter(|n| t.read(&t.memories().join(n)).contains("_auto_decay")).collect()
}

#[test]
fn reaching_the_maximum_exactly_does_not_decay() {
    let t = TestEnv::pinned();
    fill(&t, 199, 300.0);
    let out = save(&t, NEW);
    assert_eq!((out["decayed"].as_u64(), out["decay_strategy"].is_null()), (Some(0), true));
    assert_eq!(t.memory_files().len(), 200);
}

#[test]
fn a_save_past_two_hundred_decays_the_forty_oldest_into_a_summary() {
    let t = TestEnv::pinned();
    fill(&t, 200, 199.0);
    let out = save(&t, NEW);
    assert_eq!(out["action"], "saved");
    assert_eq!(out["memory_id"], 201);
    assert_eq!((out["decayed"].as_u64(), out["decay_strategy"].as_str()), (Some(40), Some("summarize")));
    // 200 - 40 + the new one + the summary.
    assert_eq!(t.memory_files().len(), 162);
    let ids = t.ids();
    assert!((1..=40).all(|i| !ids.contains(&i)) && ids.contains(&41) && ids.contains(&202), "{ids:?}");
}

#[test]
fn the_number_decayed_is_the_floor_of_count_times_percentage() {
    let t = TestEnv::pinned();
    fill(&t, 204, 204.0);
    let out = save(&t, NEW);
    assert_eq!(out["decayed"], 41);
    let ids = t.ids();
    assert!((1..=41).all(|i| !ids.contains(&i)) && ids.contains(&42), "{ids:?}");
}

#[test]
fn summarize_replaces_the_decayed_memories_with_one_tagged_summary() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.5");
    fill(&t, 10, 99.0);
    let out = save(&t, NEW);
    assert_eq!((out["decayed"].as_u64(), out["decay_strategy"].as_str()), (Some(5), Some("summarize")));
    assert_eq!(out["memory_id"], 11);
    // 10 - 5 + the new one + the summary.
    assert_eq!(t.ids(), [6, 7, 8, 9, 10, 11, 12]);
    let summary = t.show(12);
    assert_eq!(summary["tags"], json!(["_consolidated", "_auto_decay"]));
    assert_eq!(summary["source"], "auto_decay");
    assert_eq!(summary["category"], serde_json::Value::Null);
}

#[test]
fn cut_deletes_the_decayed_memories_without_a_summary() {
    let t = TestEnv::pinned()
        .env("CO_CLI_MEMORY_MAX_COUNT", "10")
        .env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.5")
        .env("CO_CLI_MEMORY_DECAY_STRATEGY", "cut");
    fill(&t, 10, 99.0);
    let out = save(&t, NEW);
    assert_eq!((out["decayed"].as_u64(), out["decay_strategy"].as_str()), (Some(5), Some("cut")));
    assert_eq!(t.ids(), [6, 7, 8, 9, 10, 11]);
    assert!(summary_files(&t).is_empty());
    for name in t.memory_files() {
        assert!(!t.read(&t.memories().join(&name)).contains("_consolidated"), "{name}");
    }
}

#[test]
fn cut_with_max_ten_removes_ids_one_and_two() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_STRATEGY", "cut");
    fill(&t, 10, 20.0);
    assert_eq!(save(&t, NEW)["decayed"], 2);
    assert_eq!(t.ids(), [3, 4, 5, 6, 7, 8, 9, 10, 11]);
}

#[test]
fn the_oldest_memories_are_the_ones_decayed() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10");
    let mut rng = Rng::new(14);
    let ages =
        [(1, 100.0), (2, 50.0), (3, 10.0), (4, 0.0), (5, 1.0), (6, 2.0), (7, 3.0), (8, 4.0), (9, 5.0), (10, 6.0)];
    for (id, age) in ages {
        t.memory(id, &sentence(&mut rng, 8), &days_ago(age), &[]);
    }
    assert_eq!(save(&t, NEW)["decayed"], 2);
    let ids = t.ids();
    assert!(!ids.contains(&1) && !ids.contains(&2) && ids.contains(&3), "{ids:?}");
}

#[test]
fn decay_order_is_by_creation_time_even_when_ids_disagree() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10");
    let mut rng = Rng::new(15);
    for id in 1..=10 {
        // id 10 is the oldest, id 1 the youngest.
        t.memory(id, &sentence(&mut rng, 8), &days_ago(10.0 + id as f64), &[]);
    }
    save(&t, NEW);
    let ids = t.ids();
    assert!(!ids.contains(&10) && !ids.contains(&9) && ids.contains(&1), "{ids:?}");
}

#[test]
fn decay_order_uses_instants_not_strings() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.1");
    // 05:00-08:00 is 13:00Z: newer than 10:00Z although its string sorts first.
    t.mem_file(
        "001-a.md",
        "---\ncreated: '2026-01-01T05:00:00-08:00'\nid: 1\ntags: []\n---\n\nwritten in california\n",
    );
    t.mem_file("002-b.md", "---\ncreated: '2026-01-01T10:00:00Z'\nid: 2\ntags: []\n---\n\nwritten in london\n");
    let mut rng = Rng::new(16);
    for id in 3..=10 {
        t.memory(id, &sentence(&mut rng, 8), &days_ago(id as f64), &[]);
    }
    assert_eq!(save(&t, NEW)["decayed"], 1);
    let ids = t.ids();
    assert!(ids.contains(&1) && !ids.contains(&2), "{ids:?}");
}

#[test]
fn equal_timestamps_decay_the_lower_id_first() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.1");
    let mut rng = Rng::new(17);
    let same = days_ago(30.0);
    for id in [4, 2, 9, 7, 1, 3, 5, 6, 8, 10] {
        t.memory(id, &sentence(&mut rng, 8), &same, &[]);
    }
    save(&t, NEW);
    assert_eq!(t.ids(), [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
}

#[test]
fn protected_memories_are_never_decay_candidates() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10");
    t.protected_memory(1, "a protected thing", &days_ago(100.0));
    let mut rng = Rng::new(15);
    for id in 2..=10 {
        t.memory(id, &sentence(&mut rng, 8), &days_ago(100.0 - id as f64 * 10.0), &[]);
    }
    assert_eq!(save(&t, NEW)["decayed"], 2);
    let ids = t.ids();
    assert!(ids.contains(&1) && !ids.contains(&2) && !ids.contains(&3) && ids.contains(&4), "{ids:?}");
}

#[test]
fn a_protected_memory_survives_a_summarize_of_five() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.5");
    let protected = t.protected_memory(1, "a protected thing", &days_ago(200.0));
    let mut rng = Rng::new(16);
    for id in 2..=10 {
        t.memory(id, &sentence(&mut rng, 8), &days_ago(100.0 - id as f64), &[]);
    }
    assert_eq!(save(&t, NEW)["decayed"], 5);
    assert!(protected.exists());
    assert_eq!(t.ids(), [1, 7, 8, 9, 10, 11, 12]);
}

#[test]
fn all_others_protected_means_nothing_is_decayed() {
    // co-cli decays the memory just saved here; kb never does (docs/co-cli-differences.md).
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10");
    for id in 1..=10 {
        t.protected_memory(id, &format!("protected number {id} {}", "x".repeat(id as usize)), &days_ago(50.0));
    }
    let out = save(&t, "Eleventh with all protected");
    assert_eq!(out["memory_id"], 11);
    assert_eq!((out["decayed"].as_u64(), out["decay_strategy"].is_null()), (Some(0), true), "{out}");
    assert_eq!(t.ids(), (1..=11).collect::<Vec<_>>());
    assert_eq!(t.show(11)["content"], "Eleventh with all protected");
}

#[test]
fn the_new_memory_is_never_decayed_even_when_it_is_the_oldest() {
    // A pinned clock in the past makes the new memory older than every other one.
    let t = TestEnv::new().env("KB_NOW", "2020-01-01T00:00:00+00:00").env("CO_CLI_MEMORY_MAX_COUNT", "10");
    fill(&t, 10, 5.0);
    let out = save(&t, NEW);
    assert_eq!(out["decayed"], 2);
    let ids = t.ids();
    assert!(ids.contains(&11) && !ids.contains(&1) && !ids.contains(&2), "{ids:?}");
    assert_eq!(t.show(11)["content"], NEW);
}

#[test]
fn the_first_save_into_an_empty_folder_decays_nothing() {
    let t = TestEnv::pinned();
    std::fs::create_dir_all(t.memories()).unwrap();
    let out = save(&t, NEW);
    assert_eq!((out["memory_id"].as_u64(), out["decayed"].as_u64()), (Some(1), Some(0)));
}

#[test]
fn fewer_candidates_than_the_number_to_decay_decays_every_candidate() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10");
    for id in 1..=9 {
        t.protected_memory(id, &format!("protected {id} {}", "y".repeat(id as usize)), &days_ago(90.0));
    }
    t.memory(10, "the single unprotected memory", &days_ago(1.0), &[]);
    let out = save(&t, NEW);
    assert_eq!(out["decayed"], 1);
    let ids = t.ids();
    assert!(!ids.contains(&10) && ids.contains(&11) && ids.contains(&12), "{ids:?}");
}

#[test]
fn a_summarize_of_three_removes_the_three_oldest_and_adds_one_summary() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.3");
    fill(&t, 10, 60.0);
    assert_eq!(save(&t, NEW)["decayed"], 3);
    assert_eq!(t.ids(), [4, 5, 6, 7, 8, 9, 10, 11, 12]);
}

#[test]
fn a_save_that_triggers_decay_says_so_and_leaves_the_maximum() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.2");
    fill(&t, 10, 10.0);
    let run = t.kb(&["save", "Memory 11 triggers decay"]).ok();
    assert!(run.stdout.starts_with("✓ Saved memory 11: 011-memory-11-triggers-decay.md\n"), "{run:?}");
    assert!(run.stdout.trim_end().ends_with("\n♻️ Decayed 2 old memories (summarize)"), "{run:?}");
    assert_eq!(t.memory_files().len(), 10);
}

#[test]
fn summary_file_exact_bytes() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.3");
    t.memory(1, "Oldest memory with tags", &days_ago(90.0), &["alpha", "beta"]);
    t.memory(2, "Second oldest\nwith a second line", &days_ago(80.0), &[]);
    t.memory(3, "Third: `code` and 'quotes'", &days_ago(70.0), &["gamma"]);
    let mut rng = Rng::new(3);
    for id in 4..=10 {
        t.memory(id, &sentence(&mut rng, 8), &days_ago(10.0 - id as f64 / 2.0), &[]);
    }
    let out = save(&t, NEW);
    assert_eq!(out["decayed"], 3);
    let summaries = summary_files(&t);
    assert_eq!(summaries, ["012-consolidated-3-old-memories-oldest-memory-with.md"]);
    assert_eq!(
        t.read(&t.memories().join(&summaries[0])),
        "---\nauto_category: null\ncreated: '2026-11-22T12:00:00+00:00'\nid: 12\nsource: auto_decay\ntags:\n- _consolidated\n- _auto_decay\n---\n\n\
         Consolidated 3 old memories:\n\n\
         - Oldest memory with tags [tags: alpha, beta]\n\
         - Second oldest\nwith a second line\n\
         - Third: `code` and 'quotes' [tags: gamma]\n"
    );
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn a_summary_can_itself_decay_later() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.1");
    t.mem_file(
        "001-consolidated-1-old-memories.md",
        &format!(
            "---\nauto_category: null\ncreated: '{}'\nid: 1\nsource: auto_decay\ntags:\n- _consolidated\n- _auto_decay\n---\n\nConsolidated 1 old memories:\n\n- ancient\n",
            days_ago(400.0)
        ),
    );
    let mut rng = Rng::new(4);
    for id in 2..=10 {
        t.memory(id, &sentence(&mut rng, 8), &days_ago(30.0 - id as f64), &[]);
    }
    assert_eq!(save(&t, NEW)["decayed"], 1);
    let summary = t.show(12);
    assert_eq!(
        summary["content"],
        "Consolidated 1 old memories:\n\n- Consolidated 1 old memories:\n\n- ancient [tags: _consolidated, _auto_decay]"
    );
}

#[test]
fn invalid_files_are_neither_counted_nor_decayed() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10");
    fill(&t, 9, 50.0);
    let bad = t.mem_file("000-bad.md", "---\nid: 0\ncreated: yesterday\n---\n\nvery old but invalid\n");
    let before = std::fs::read(&bad).unwrap();
    // 9 valid + 1 new = 10: no decay, whatever the invalid file.
    assert_eq!(save(&t, NEW)["decayed"], 0);
    assert_eq!(std::fs::read(&bad).unwrap(), before);
    assert_eq!(save(&t, "another unrelated kettle story")["decayed"], 2);
    assert_eq!(std::fs::read(&bad).unwrap(), before);
}

#[test]
fn percentage_zero_still_decays_one_and_one_decays_all_unprotected() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0");
    fill(&t, 10, 50.0);
    assert_eq!(save(&t, NEW)["decayed"], 1);

    let t = TestEnv::pinned()
        .env("CO_CLI_MEMORY_MAX_COUNT", "10")
        .env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "1.0")
        .env("CO_CLI_MEMORY_DECAY_STRATEGY", "cut");
    fill(&t, 10, 50.0);
    assert_eq!(save(&t, NEW)["decayed"], 10);
    assert_eq!(t.ids(), [11]);
}

#[test]
fn settings_from_the_project_settings_file() {
    let t = TestEnv::pinned();
    t.write(
        ".co-cli/settings.json",
        r#"{"memory_max_count": 10, "memory_decay_strategy": "cut", "memory_decay_percentage": 0.3, "llm_model": "x"}"#,
    );
    fill(&t, 10, 50.0);
    let out = save(&t, NEW);
    assert_eq!((out["decayed"].as_u64(), out["decay_strategy"].as_str()), (Some(3), Some("cut")));
}

#[test]
fn settings_from_the_global_file_and_env_overrides() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_DECAY_STRATEGY", "summarize");
    let global = t.home().join(".config/co-cli/settings.json");
    std::fs::create_dir_all(global.parent().unwrap()).unwrap();
    std::fs::write(&global, r#"{"memory_max_count": 10, "memory_decay_strategy": "cut"}"#).unwrap();
    fill(&t, 10, 50.0);
    let out = save(&t, NEW);
    assert_eq!((out["decayed"].as_u64(), out["decay_strategy"].as_str()), (Some(2), Some("summarize")));
}

#[test]
fn project_settings_override_global_and_xdg_replaces_home() {
    let t = TestEnv::pinned();
    let xdg = t.dir.path().join("xdg");
    let t = t.env("XDG_CONFIG_HOME", xdg.to_str().unwrap());
    std::fs::create_dir_all(xdg.join("co-cli")).unwrap();
    std::fs::write(xdg.join("co-cli/settings.json"), r#"{"memory_max_count": 10, "memory_decay_percentage": 0.5}"#)
        .unwrap();
    // Ignored: XDG_CONFIG_HOME is set.
    let home_cfg = t.home().join(".config/co-cli/settings.json");
    std::fs::create_dir_all(home_cfg.parent().unwrap()).unwrap();
    std::fs::write(&home_cfg, r#"{"memory_decay_strategy": "cut"}"#).unwrap();
    t.write(".co-cli/settings.json", r#"{"memory_decay_percentage": 0.3}"#);
    fill(&t, 10, 50.0);
    let out = save(&t, NEW);
    assert_eq!((out["decayed"].as_u64(), out["decay_strategy"].as_str()), (Some(3), Some("summarize")));
}

#[test]
fn empty_env_values_are_ignored() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "").env("CO_CLI_MEMORY_DECAY_STRATEGY", "");
    t.write(".co-cli/settings.json", r#"{"memory_max_count": 10}"#);
    fill(&t, 10, 50.0);
    let out = save(&t, NEW);
    assert_eq!((out["decayed"].as_u64(), out["decay_strategy"].as_str()), (Some(2), Some("summarize")));
}

#[test]
fn invalid_env_settings_are_errors_naming_the_variable_and_write_nothing() {
    for (var, value) in [
        ("CO_CLI_MEMORY_MAX_COUNT", "5"),
        ("CO_CLI_MEMORY_MAX_COUNT", "ten"),
        ("CO_CLI_MEMORY_MAX_COUNT", "10.5"),
        ("CO_CLI_MEMORY_DEDUP_WINDOW_DAYS", "0"),
        ("CO_CLI_MEMORY_DEDUP_THRESHOLD", "101"),
        ("CO_CLI_MEMORY_DEDUP_THRESHOLD", "-1"),
        ("CO_CLI_MEMORY_DEDUP_THRESHOLD", "NaN"),
        ("CO_CLI_MEMORY_DECAY_STRATEGY", "delete"),
        ("CO_CLI_MEMORY_DECAY_PERCENTAGE", "1.5"),
        ("CO_CLI_MEMORY_DECAY_PERCENTAGE", "-0.1"),
    ] {
        let t = TestEnv::pinned().env(var, value);
        t.memory(1, "an existing memory", &days_ago(1.0), &[]);
        let before = t.snapshot();
        let run = t.kb(&["save", NEW]).err();
        assert!(run.stderr.contains(var), "{var}={value}: {run:?}");
        assert_same_tree(&before, &t.snapshot());
    }
}

#[test]
fn invalid_file_settings_are_errors_naming_the_file_and_key() {
    for (json, key) in [
        (r#"{"memory_max_count": 9}"#, "memory_max_count"),
        (r#"{"memory_max_count": true}"#, "memory_max_count"),
        (r#"{"memory_dedup_window_days": 0}"#, "memory_dedup_window_days"),
        (r#"{"memory_dedup_threshold": "high"}"#, "memory_dedup_threshold"),
        (r#"{"memory_decay_strategy": "Summarize"}"#, "memory_decay_strategy"),
        (r#"{"memory_decay_percentage": 2}"#, "memory_decay_percentage"),
    ] {
        let t = TestEnv::pinned();
        t.memory(1, "an existing memory", &days_ago(1.0), &[]);
        t.write(".co-cli/settings.json", json);
        let before = t.snapshot();
        let run = t.kb(&["save", NEW]).err();
        assert!(run.stderr.contains(".co-cli/settings.json") && run.stderr.contains(key), "{json}: {run:?}");
        assert_same_tree(&before, &t.snapshot());
    }
}

#[test]
fn malformed_settings_json_is_an_error_naming_the_file() {
    let t = TestEnv::pinned();
    let global = t.home().join(".config/co-cli/settings.json");
    std::fs::create_dir_all(global.parent().unwrap()).unwrap();
    std::fs::write(&global, "{ \"memory_max_count\": 10,").unwrap();
    let before = t.snapshot();
    let run = t.kb(&["save", NEW]).err();
    assert!(run.stderr.contains(&global.display().to_string()), "{run:?}");
    assert_same_tree(&before, &t.snapshot());
    std::fs::write(&global, "[1, 2]").unwrap();
    let run = t.kb(&["save", NEW]).err();
    assert!(run.stderr.contains("settings.json"), "{run:?}");
}

#[test]
fn numeric_strings_in_settings_files_are_accepted_like_pydantic() {
    let t = TestEnv::pinned();
    t.write(".co-cli/settings.json", r#"{"memory_max_count": "10", "memory_decay_percentage": "0.3"}"#);
    fill(&t, 10, 50.0);
    assert_eq!(save(&t, NEW)["decayed"], 3);
}

#[test]
fn list_limit_shows_the_configured_maximum() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "25");
    t.memory(1, "one", &days_ago(1.0), &[]);
    assert_eq!(t.list_json()["limit"], 25);
    assert!(t.kb(&["list"]).ok().stdout.starts_with("Total memories: 1/25\n"));
}

#[test]
fn a_crlf_memory_decays_into_a_summary_without_carriage_returns() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.1");
    t.mem_file(
        "001-crlf.md",
        "---\r\nid: 1\r\ncreated: '2026-01-01T10:00:00+00:00'\r\n---\r\n\r\nline one\r\nline two\r\n",
    );
    let mut rng = Rng::new(12);
    for id in 2..=10 {
        t.memory(id, &sentence(&mut rng, 8), &days_ago(20.0 - id as f64), &[]);
    }
    assert_eq!(save(&t, NEW)["decayed"], 1);
    let summary = t.read(&t.memories().join(&summary_files(&t)[0]));
    assert!(summary.ends_with("\n- line one\nline two\n"), "{summary:?}");
}
