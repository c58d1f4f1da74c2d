//! Dedup on write and consolidation, as co-cli does them (docs/behaviour.md): the window, the
//! 10-candidate cap, the threshold, ties, and what a consolidation keeps and changes.

use crate::common::*;
use serde_json::json;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn save_json(t: &TestEnv, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json", "save"];
    all.extend_from_slice(args);
    t.kb(&all).ok().json()
}

#[test]
fn a_near_duplicate_scoring_88_57_consolidates_into_the_existing_memory() {
    let t = TestEnv::pinned();
    t.memory(1, "I prefer TypeScript for web development", &days_ago(1.0), &["preference"]);
    let out = save_json(&t, &["I prefer typescript for web dev"]);
    assert_eq!(out["action"], "consolidated");
    assert_eq!(out["memory_id"], 1);
    let score = out["similarity"].as_f64().unwrap();
    assert!(score >= 85.0 && close(score, 88.571_428_571_428_57), "{score}");
    assert_eq!(t.memory_files().len(), 1);
}

#[test]
fn an_unrelated_text_is_saved_as_a_new_memory_with_no_score() {
    let t = TestEnv::pinned();
    t.memory(1, "I prefer TypeScript", &days_ago(1.0), &[]);
    let dry = save_json(&t, &["--dry-run", "I use PostgreSQL database"]);
    assert_eq!(dry["action"], "would_save");
    assert_eq!(dry["similarity"], serde_json::Value::Null);
    let out = save_json(&t, &["I use PostgreSQL database"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("saved"), Some(2)));
    assert!(close(
        kb::similarity::similarity("I use PostgreSQL database", "I prefer TypeScript"),
        31.818_181_818_181_824
    ));
}

#[test]
fn the_threshold_decides_the_duplicate_and_the_score_does_not_depend_on_it() {
    let existing = "User prefers Python for data science projects";
    let new = "User prefers Python for data science work";
    for (threshold, dup) in [("85", false), ("95", false), ("83.7", true), ("83.8", false)] {
        let t = TestEnv::pinned().env("CO_CLI_MEMORY_DEDUP_THRESHOLD", threshold);
        t.memory(1, existing, &days_ago(1.0), &[]);
        let out = save_json(&t, &["--dry-run", new]);
        assert_eq!(out["action"] == "would_consolidate", dup, "threshold {threshold}: {out}");
        if dup {
            assert!(close(out["similarity"].as_f64().unwrap(), 83.720_930_232_558_13), "{out}");
        }
    }
}

#[test]
fn threshold_is_inclusive() {
    // The threshold set to exactly the pair's score (JSON prints a float so that it reads back
    // the same) still consolidates.
    let (old, new) = ("I prefer TypeScript for web work", "I prefer TypeScript for web work!");
    let probe = TestEnv::pinned();
    probe.memory(1, old, &days_ago(1.0), &[]);
    // The score as kb printed it (serde_json's default parser may be one ulp off).
    let printed = probe.kb(&["--json", "save", "--dry-run", new]).ok().stdout;
    let score = printed.split("\"similarity\": ").nth(1).unwrap().split([',', '\n']).next().unwrap().to_string();
    assert!(score.starts_with("98.46"), "{printed}");
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_DEDUP_THRESHOLD", &score);
    t.memory(1, old, &days_ago(1.0), &[]);
    let out = save_json(&t, &[new]);
    assert_eq!(out["action"], "consolidated", "{out}");
}

#[test]
fn a_consolidation_rewrites_the_existing_file_under_its_own_name() {
    let t = TestEnv::pinned();
    let original = t.memory(1, "I prefer TypeScript", &days_ago(1.0), &["preference"]);
    let out = save_json(&t, &["I prefer typescript!", "-t", "preference"]);
    assert_eq!(out["memory_id"], 1);
    assert_eq!(std::path::Path::new(out["path"].as_str().unwrap()), original);
    assert!(original.exists());
    assert_eq!(t.memory_files().len(), 1);
    assert_eq!(t.show(1)["content"], "I prefer typescript!");
}

#[test]
fn a_consolidation_keeps_the_memorys_id() {
    let t = TestEnv::pinned();
    t.memory(42, "I prefer TypeScript", &days_ago(1.0), &[]);
    let out = save_json(&t, &["I prefer typescript"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("consolidated"), Some(42)));
    assert_eq!(t.ids(), [42]);
}

#[test]
fn a_consolidation_sets_updated_to_now_and_keeps_created() {
    let t = TestEnv::pinned();
    let path = t.memory(1, "I prefer TypeScript", &days_ago(1.0), &[]);
    save_json(&t, &["I prefer typescript"]);
    let text = t.read(&path);
    assert!(text.contains("\nupdated: '2026-11-22T12:00:00+00:00'\n"), "{text}");
    let m = t.show(1);
    assert_eq!(m["updated"], "2026-11-22T12:00:00+00:00");
    assert_eq!(m["created"], days_ago(1.0));
}

#[test]
fn a_consolidation_drops_consolidation_reason() {
    let t = TestEnv::pinned();
    let path = t.mem_file(
        "001-i-prefer-typescript.md",
        &format!(
            "---\nconsolidation_reason: old_reason\ncreated: '{}'\nid: 1\nsource: user-told\ntags: []\n---\n\nI prefer TypeScript\n",
            days_ago(1.0)
        ),
    );
    save_json(&t, &["I prefer typescript"]);
    let text = t.read(&path);
    assert!(!text.contains("consolidation_reason"), "{text}");
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn a_consolidation_unions_the_tags_existing_ones_first() {
    let t = TestEnv::pinned();
    t.memory(1, "I prefer TypeScript", &days_ago(1.0), &["preference", "typescript"]);
    save_json(&t, &["I prefer typescript", "-t", "preference", "-t", "javascript", "-t", "webdev"]);
    assert_eq!(t.show(1)["tags"], json!(["preference", "typescript", "javascript", "webdev"]));
}

#[test]
fn only_memories_inside_the_dedup_window_are_candidates() {
    let t = TestEnv::pinned();
    t.memory(1, "I prefer TypeScript for web development", &days_ago(8.0), &[]);
    t.memory(2, "User prefers pytest over unittest", &days_ago(5.0), &[]);
    let out = save_json(&t, &["I prefer typescript for web dev"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("saved"), Some(3)));
    let out = save_json(&t, &["user prefers pytest over unittest!"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("consolidated"), Some(2)));
}

#[test]
fn an_identical_memory_ten_days_old_is_outside_the_window() {
    let t = TestEnv::pinned();
    t.memory(1, "I prefer TypeScript for web development", &days_ago(10.0), &[]);
    let out = save_json(&t, &["I prefer TypeScript for web development"]);
    assert_eq!(out["action"], "saved");
    assert_eq!(t.memory_files().len(), 2);
}

#[test]
fn window_setting_widens_the_candidates() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_DEDUP_WINDOW_DAYS", "30");
    t.memory(1, "I prefer TypeScript for web development", &days_ago(10.0), &[]);
    assert_eq!(save_json(&t, &["I prefer TypeScript for web development"])["action"], "consolidated");
}

#[test]
fn window_edge_is_inclusive_and_future_memories_pass() {
    let t = TestEnv::pinned();
    t.memory(1, "exactly seven days old walnut", &days_ago(7.0), &[]);
    t.memory(2, "created in the future by a skewed clock", &days_ago(-3.0), &[]);
    assert_eq!(save_json(&t, &["--dry-run", "exactly seven days old walnut"])["memory_id"], 1);
    assert_eq!(save_json(&t, &["--dry-run", "exactly seven days old walnut"])["action"], "would_consolidate");
    let out = save_json(&t, &["created in the future by a skewed clock"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("consolidated"), Some(2)));
}

#[test]
fn the_eleventh_most_recent_memory_is_not_compared() {
    let t = TestEnv::pinned();
    let mut rng = Rng::new(19);
    // The target is the 11th most recent: it is not compared, so the save creates a memory.
    t.memory(1, "the oldest target sentence about lanterns", &days_ago(6.0), &[]);
    for id in 2..=100 {
        t.memory(id, &format!("{} {id}", sentence(&mut rng, 6)), &days_ago(5.0 - id as f64 * 0.01), &[]);
    }
    let out = save_json(&t, &["the oldest target sentence about lanterns"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("saved"), Some(101)));
}

#[test]
fn the_tenth_most_recent_memory_is_still_compared() {
    let t = TestEnv::pinned();
    let mut rng = Rng::new(20);
    t.memory(1, "the target sentence about lanterns", &days_ago(6.0), &[]);
    for id in 2..=10 {
        t.memory(id, &format!("{} {id}", sentence(&mut rng, 6)), &days_ago(5.0 - id as f64 * 0.01), &[]);
    }
    let out = save_json(&t, &["the target sentence about lanterns"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("consolidated"), Some(1)));
}

#[test]
fn recent_candidates_are_chosen_by_instant_not_by_string() {
    let t = TestEnv::pinned();
    let mut rng = Rng::new(21);
    // 11:00Z written with a -12:00 offset: the newest memory, although its string sorts lowest.
    t.mem_file(
        "001-target.md",
        "---\ncreated: '2026-11-21T23:00:00-12:00'\nid: 1\ntags: []\n---\n\nthe target sentence about lanterns\n",
    );
    for id in 2..=11 {
        t.memory(id, &format!("{} {id}", sentence(&mut rng, 6)), &days_ago(id as f64 / 24.0), &[]);
    }
    let out = save_json(&t, &["the target sentence about lanterns"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("consolidated"), Some(1)), "{out}");
}

#[test]
fn ties_go_to_the_most_recent_memory() {
    let t = TestEnv::pinned();
    t.memory(1, "identical text about kettles", &days_ago(3.0), &[]);
    t.memory(2, "identical text about kettles", &days_ago(2.0), &[]);
    t.memory(3, "identical text about kettles", &days_ago(4.0), &[]);
    assert_eq!(save_json(&t, &["identical text about kettles"])["memory_id"], 2);
}

#[test]
fn equal_timestamps_tie_break_on_the_higher_id() {
    let t = TestEnv::pinned();
    let at = days_ago(2.0);
    t.memory(5, "identical text about kettles", &at, &[]);
    t.memory(9, "identical text about kettles", &at, &[]);
    t.memory(7, "identical text about kettles", &at, &[]);
    assert_eq!(save_json(&t, &["identical text about kettles"])["memory_id"], 9);
}

#[test]
fn best_score_wins_over_recency() {
    let t = TestEnv::pinned();
    t.memory(1, "I prefer TypeScript for web development", &days_ago(3.0), &[]);
    t.memory(2, "I prefer TypeScript for web dev work", &days_ago(1.0), &[]);
    let out = save_json(&t, &["I prefer TypeScript for web development"]);
    assert_eq!(out["memory_id"], 1);
    assert!(close(out["similarity"].as_f64().unwrap(), 100.0));
}

#[test]
fn a_save_then_a_near_duplicate_leaves_one_memory_with_the_tags_of_both() {
    let t = TestEnv::pinned();
    let out = save_json(&t, &["I prefer TypeScript for web development", "-t", "preference"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("saved"), Some(1)));
    let out = save_json(&t, &["I prefer typescript for web dev", "-t", "preference", "-t", "javascript"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("consolidated"), Some(1)));
    assert_eq!(t.memory_files().len(), 1);
    assert_eq!(t.show(1)["tags"], json!(["preference", "javascript"]));
}

#[test]
fn old_memories_are_outside_the_window_and_the_oldest_two_decay_first() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_DEDUP_WINDOW_DAYS", "10").env("CO_CLI_MEMORY_MAX_COUNT", "10");
    let texts = ["apple bridge cobalt delta", "ember falcon granite harbor", "indigo jasper kettle", "lantern meadow"];
    for (i, (text, age)) in texts.iter().zip([30.0, 20.0, 5.0, 0.0]).enumerate() {
        t.memory(i as u64 + 1, text, &days_ago(age), &[]);
    }
    // Window: 1 and 2 are too old to be duplicates, 3 and 4 are candidates.
    assert_eq!(save_json(&t, &["--dry-run", texts[0]])["action"], "would_save");
    assert_eq!(save_json(&t, &["--dry-run", texts[1]])["action"], "would_save");
    assert_eq!(save_json(&t, &["--dry-run", texts[2]])["memory_id"], 3);
    assert_eq!(save_json(&t, &["--dry-run", texts[3]])["memory_id"], 4);
    // Decay: fill up to the maximum with younger memories; the two oldest go.
    let mut rng = Rng::new(34);
    for id in 5..=10 {
        t.memory(id, &sentence(&mut rng, 7), &days_ago(1.0 + id as f64 / 10.0), &[]);
    }
    let out = save_json(&t, &["the new memory that triggers decay 11"]);
    assert_eq!(out["decayed"], 2);
    let ids = t.ids();
    assert!(!ids.contains(&1) && !ids.contains(&2) && ids.contains(&3), "{ids:?}");
}

#[test]
fn consolidation_of_mixed_case_text_and_list_display() {
    let t = TestEnv::pinned();
    t.memory(1, "User prefers pytest over unittest", &days_ago(0.5), &["testing", "preference", "python"]);
    let out = save_json(&t, &["user PREFERS pytest over UNITTEST!", "-t", "preference"]);
    assert!(close(out["similarity"].as_f64().unwrap(), 98.507_462_686_567_17), "{out}");
    assert_eq!(t.show(1)["content"], "user PREFERS pytest over UNITTEST!");
    let list = t.kb(&["list"]).ok();
    assert!(
        list.stdout.contains(&format!(
            "**001** ({} → 2026-11-22) [preference] : user PREFERS pytest over UNITTEST!",
            &days_ago(0.5)[..10]
        )),
        "{list:?}"
    );
}

#[test]
fn consolidation_human_output() {
    let t = TestEnv::pinned();
    let path = t.memory(1, "I prefer TypeScript", &days_ago(1.0), &[]);
    let run = t.kb(&["save", "I prefer typescript"]).ok();
    // co-cli's two lines, then the score and what was replaced.
    assert_eq!(
        run.stdout.trim_end(),
        format!(
            "✓ Updated memory 1 (consolidated duplicate)\nLocation: {}\nSimilarity: 100.0\nReplaced: I prefer TypeScript",
            path.display()
        )
    );
}

#[test]
fn consolidation_replaces_body_and_keeps_unknown_keys_byte_for_byte() {
    let t = TestEnv::pinned();
    let path = t.mem_file(
        "001-i-prefer-typescript.md",
        "---\n\
         auto_category: null\n\
         created: 2026-11-20T10:00:00Z\n\
         custom: {a: 1}\n\
         id: 1\n\
         list:\n\
         \x20 - one\n\
         \x20 - two # trailing comment\n\
         note: \"yes\"\n\
         source: user-told\n\
         tags:\n\
         - typescript\n\
         zz_last: 'kept'\n\
         ---\n\
         \n\
         I prefer TypeScript!\n",
    );
    let out = save_json(&t, &["I prefer typescript", "-t", "decision"]);
    assert_eq!(out["action"], "consolidated");
    assert_eq!(
        t.read(&path),
        "---\n\
         auto_category: decision\n\
         created: 2026-11-20T10:00:00Z\n\
         custom: {a: 1}\n\
         id: 1\n\
         list:\n\
         \x20 - one\n\
         \x20 - two # trailing comment\n\
         note: \"yes\"\n\
         source: detected\n\
         tags:\n\
         - typescript\n\
         - decision\n\
         updated: '2026-11-22T12:00:00+00:00'\n\
         zz_last: 'kept'\n\
         ---\n\
         \n\
         I prefer typescript\n"
    );
    assert_eq!(t.show(1)["category"], "decision");
}

#[test]
fn consolidation_keeps_a_leading_comment_in_the_frontmatter() {
    let t = TestEnv::pinned();
    let path = t.mem_file(
        "001-x.md",
        &format!(
            "---\n# written by hand, keep me\ncreated: '{}'\nid: 1\nsource: user-told\ntags: []\n---\n\nI prefer TypeScript\n",
            days_ago(1.0)
        ),
    );
    save_json(&t, &["I prefer typescript"]);
    let text = t.read(&path);
    assert!(text.contains("# written by hand, keep me\n"), "the comment was dropped:\n{text}");
}

#[test]
fn consolidation_does_not_duplicate_tags_already_present() {
    let t = TestEnv::pinned();
    t.memory(1, "I prefer TypeScript", &days_ago(1.0), &["b", "a"]);
    save_json(&t, &["I prefer typescript", "-t", "a", "-t", "c", "-t", "b"]);
    assert_eq!(t.show(1)["tags"], json!(["b", "a", "c"]));
}

#[test]
fn consolidation_does_not_decay_or_move_the_memory_in_time() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10");
    let mut rng = Rng::new(5);
    for id in 1..=9 {
        t.memory(id, &sentence(&mut rng, 8), &days_ago(40.0 - id as f64), &[]);
    }
    t.memory(10, "I prefer TypeScript", &days_ago(1.0), &[]);
    let out = save_json(&t, &["I prefer typescript"]);
    assert_eq!((out["action"].as_str(), out["decayed"].as_u64()), (Some("consolidated"), Some(0)));
    assert_eq!(t.memory_files().len(), 10);
    assert_eq!(t.show(10)["created"], days_ago(1.0));
}

#[test]
fn a_protected_memory_is_never_rewritten_by_a_save() {
    let t = TestEnv::pinned();
    let path = t.protected_memory(1, "I prefer TypeScript", &days_ago(1.0));
    let before = t.read(&path);
    // The same words: nothing is written, and the save says where the fact already is.
    let run = t.kb(&["save", "i  prefer\ntypescript"]).ok();
    assert!(run.stdout.contains("already stored as memory 1"), "{}", run.stdout);
    let out = save_json(&t, &["I prefer TypeScript"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("exists"), Some(1)), "{out}");
    assert_eq!(out["path"].as_str(), Some(path.to_str().unwrap()));
    assert_eq!(t.memory_files().len(), 1);
    // Other words: a new memory beside it, and the near miss says why.
    let out = save_json(&t, &["I prefer TypeScript!"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("saved"), Some(2)), "{out}");
    assert_eq!(out["similar_to"]["id"], 1);
    assert_eq!(out["similar_to"]["why"], "protected");
    assert_eq!(t.read(&path), before, "the protected memory is untouched");
}

#[test]
fn a_core_context_memory_is_never_rewritten_by_a_save() {
    let t = TestEnv::pinned();
    t.kb(&["save", "--type", "core_context", "Reviewers check the changelog line"]).ok();
    let path = t.memories().join(&t.memory_files()[0]);
    let before = t.read(&path);
    // A core_context memory is protected too; the near miss names the stronger reason.
    t.kb(&["unprotect", "1"]).ok();
    let unprotected = t.read(&path);
    let out = save_json(&t, &["--type", "core_context", "Reviewers check the changelog line first"]);
    assert_eq!(out["action"], "saved", "{out}");
    assert_eq!(out["similar_to"]["why"], "core context");
    assert_eq!(t.read(&path), unprotected);
    assert_ne!(before, unprotected);
}

#[test]
fn numbered_template_texts_are_different_facts() {
    // co-cli merges "Memory 10" into "Memory 11" (88.89); kb keeps both and reports the near miss.
    let t = TestEnv::pinned();
    save_json(&t, &["Memory 10"]);
    let out = save_json(&t, &["Memory 11"]);
    assert_eq!(out["action"], "saved");
    assert_eq!(out["similarity"], serde_json::Value::Null);
    let near = &out["similar_to"];
    assert!(close(near["similarity"].as_f64().unwrap(), 88.888_888_888_888_89), "{out}");
    assert_eq!(
        (near["id"].clone(), near["only_in_existing"].clone(), near["only_in_new"].clone(), near["why"].clone()),
        (json!(1), json!(["10"]), json!(["11"]), json!("different facts"))
    );
}

#[test]
fn a_different_fact_is_never_merged_into_a_protected_memory() {
    // The first-hour surprise: port 8081 must not overwrite the protected port 8080 memory.
    let t = TestEnv::pinned();
    t.kb(&["save", "The api service listens on port 8080"]).ok();
    t.kb(&["protect", "1"]).ok();
    let first = t.memories().join(&t.memory_files()[0]);
    let before = t.read(&first);
    let run = t.kb(&["save", "The web service listens on port 8081"]).ok();
    assert!(run.stdout.starts_with("✓ Saved memory 2: 002-the-web-service-listens-on-port-8081.md"), "{}", run.stdout);
    let near = run.stdout.lines().find(|l| l.starts_with("Similar: ")).expect("the near miss is reported");
    assert!(near.contains("memory 1") && near.contains("8080") && near.contains("8081"), "{near}");
    assert!(near.contains("kb forget 1"), "{near}");
    assert_eq!(t.read(&first), before);
    // Unprotected, the ports still keep it apart.
    t.kb(&["unprotect", "1"]).ok();
    let out = save_json(&t, &["The api service listens on port 8081"]);
    assert_eq!(out["action"], "saved", "{out}");
    assert_eq!(out["similar_to"]["why"], "different facts");
    assert_eq!(t.show(1)["content"], "The api service listens on port 8080");
    // The dry run says the same without writing.
    let out = save_json(&t, &["--dry-run", "The api service listens on port 8082"]);
    assert_eq!(out["action"], "would_save", "{out}");
    assert_eq!(out["similar_to"]["only_in_new"], json!(["8082"]));
}

#[test]
fn a_different_path_is_a_different_fact() {
    let t = TestEnv::pinned();
    t.kb(&["save", "Run ./build.sh before every commit"]).ok();
    let out = save_json(&t, &["Run ./deploy.sh before every commit"]);
    assert_eq!(out["action"], "saved", "{out}");
    assert_eq!(out["similar_to"]["only_in_existing"], json!(["./build.sh"]));
    assert_eq!(t.show(1)["content"], "Run ./build.sh before every commit");
}

#[test]
fn a_restatement_keeping_every_salient_token_consolidates() {
    let t = TestEnv::pinned();
    t.kb(&["save", "The database moves with ZOXIDE_DATA_DIR"]).ok();
    let out = save_json(&t, &["the database moves with zoxide_data_dir."]);
    assert_eq!(out["action"], "consolidated", "{out}");
    assert!(out.get("similar_to").is_none());
    // A word holding the token does not count: 18080 is not 8080.
    let t = TestEnv::pinned();
    t.kb(&["save", "The proxy listens on port 8080 on every host"]).ok();
    let out = save_json(&t, &["The proxy listens on port 18080 on every host"]);
    assert_eq!(out["action"], "saved", "{out}");
    assert_eq!(out["similar_to"]["only_in_existing"], json!(["8080"]));
}

#[test]
fn tags_are_not_compared() {
    let t = TestEnv::pinned();
    t.memory(1, "Completely different words here", &days_ago(1.0), &["shared", "tags"]);
    assert_eq!(save_json(&t, &["unrelated zephyr quill", "-t", "shared", "-t", "tags"])["action"], "saved");
}

#[test]
fn an_invalid_memory_is_never_a_consolidation_target() {
    let t = TestEnv::pinned();
    // Same text, but the frontmatter is invalid (tags is not a list): skipped, never rewritten.
    let bad = t.mem_file(
        "001-bad.md",
        &format!("---\ncreated: '{}'\nid: 1\ntags: oops\n---\n\nI prefer TypeScript\n", days_ago(1.0)),
    );
    let before = std::fs::read(&bad).unwrap();
    let out = save_json(&t, &["I prefer TypeScript"]);
    assert_eq!(out["action"], "saved");
    assert_eq!(std::fs::read(&bad).unwrap(), before);
}

#[test]
fn a_match_kb_cannot_edit_exactly_is_left_alone_and_the_text_saved_new() {
    let t = TestEnv::pinned();
    let flow = format!(
        "---\n{{id: 1, created: '{}', tags: [x]}}\n---\n\nI prefer TypeScript for web development\n",
        days_ago(1.0)
    );
    let path = t.mem_file("001-flow.md", &flow);
    let run = t.kb(&["--json", "save", "I prefer typescript for web dev"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json()["action"], "saved");
    assert_eq!(run.json()["memory_id"], 2);
    assert!(run.stderr.contains("memory 1") && run.stderr.contains("saved as a new memory"), "{run:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), flow, "the match is left as it was");
    assert_eq!(t.ids(), [1, 2]);
}

#[test]
fn no_dedup_never_consolidates_a_copilot_record() {
    // --no-dedup always creates a new memory; a different fact must never vanish unseen. Refusing
    // the combination would do too; replacing the fact does not.
    let t = TestEnv::pinned();
    let record = |extra: &[&str], fact: &str| {
        let mut args = vec!["--json", "save", "--store", "copilot", "--subject", "ports", "--reason", "r"];
        args.extend_from_slice(extra);
        args.push(fact);
        t.kb(&args)
    };
    record(&[], "The api service listens on port 8080").ok();
    let path = t.root().join(".github/copilot-memories.jsonl");
    let before = t.read(&path);
    let run = record(&["--no-dedup"], "The api service listens on port 8081");
    if run.code == 0 {
        assert_eq!(run.json()["action"], "saved", "{run:?}");
        assert!(t.read(&path).starts_with(&before), "the first record is kept as it was");
        assert_eq!(t.read(&path).lines().count(), 2);
    } else {
        assert_eq!(t.read(&path), before, "{run:?}");
    }
}
