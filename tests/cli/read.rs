//! `kb recall --exact`, `kb list`, `kb show`, as co-cli reads and shows memories: matching,
//! ordering, limits, co-cli's display strings and the JSON shapes (ranked recall: `recall.rs`).

use crate::common::*;
use serde_json::json;

fn recall_json(t: &TestEnv, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json", "recall", "--exact"];
    all.extend_from_slice(args);
    t.kb(&all).ok().json()
}

fn result_ids(v: &serde_json::Value) -> Vec<u64> {
    v["results"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect()
}

#[test]
fn list_shows_the_count_out_of_the_maximum() {
    let t = TestEnv::pinned();
    t.memory(1, "First memory", &days_ago(2.0), &[]);
    t.memory(2, "Second memory about walnuts", &days_ago(1.0), &[]);
    let run = t.kb(&["list"]).ok();
    assert!(run.stdout.starts_with("Total memories: 2/200\n\n"), "{run:?}");
    let v = t.list_json();
    assert_eq!((v["count"].as_u64(), v["limit"].as_u64()), (Some(2), Some(200)));
}

#[test]
fn list_shows_a_consolidated_memory_with_an_arrow_to_its_update() {
    let t = TestEnv::pinned();
    t.memory(1, "I prefer TypeScript", &days_ago(5.0), &[]);
    t.kb(&["save", "I prefer typescript"]).ok();
    let run = t.kb(&["list"]).ok();
    assert!(
        run.stdout.contains(&format!("**001** ({} → 2026-11-22) : I prefer typescript", &days_ago(5.0)[..10])),
        "{run:?}"
    );
    assert_eq!(t.list_json()["memories"][0]["updated"], "2026-11-22T12:00:00+00:00");
}

#[test]
fn list_shows_a_protected_memory_with_a_lock() {
    let t = TestEnv::pinned();
    t.protected_memory(1, "Never forget this", &days_ago(3.0));
    let run = t.kb(&["list"]).ok();
    assert!(run.stdout.contains(&format!("**001** ({}) 🔒 : Never forget this", &days_ago(3.0)[..10])), "{run:?}");
    assert_eq!(t.list_json()["memories"][0]["decay_protected"], true);
}

#[test]
fn list_of_an_empty_memories_folder_says_no_memories_found() {
    let t = TestEnv::pinned();
    std::fs::create_dir_all(t.memories()).unwrap();
    assert_eq!(t.kb(&["list"]).ok().stdout.trim_end(), format!("No memories found in {}.", t.root().display()));
    let v = t.list_json();
    assert_eq!((v["count"].as_u64(), v["memories"].clone()), (Some(0), json!([])));
}

#[test]
fn a_file_with_every_field_is_listed_and_shown() {
    let t = TestEnv::pinned();
    t.mem_file(
        "001-every-field.md",
        "---\nauto_category: context\nconsolidation_reason: merged by hand\ncreated: '2026-11-01T10:00:00+00:00'\n\
         decay_protected: true\nid: 1\nsource: auto_decay\ntags:\n- context\n- extra\nupdated: '2026-11-02T10:00:00+00:00'\n\
         ---\n\nEvery field is here\n",
    );
    let run = t.kb(&["list"]).ok();
    assert!(run.stdout.contains("**001** (2026-11-01 → 2026-11-02) [context] 🔒 : Every field is here"), "{run:?}");
    assert_eq!(t.list_json()["count"], 1);
    let m = t.show(1);
    assert_eq!(m["source"], "auto_decay");
    assert_eq!(m["category"], "context");
}

#[test]
fn a_file_without_an_id_is_skipped_with_a_warning() {
    let t = TestEnv::pinned();
    t.memory(1, "valid one", &days_ago(1.0), &[]);
    t.mem_file("002-no-id.md", "---\ncreated: '2026-11-01T10:00:00+00:00'\ntags: []\n---\n\nno id here\n");
    let run = t.kb(&["--json", "list"]).ok();
    assert_eq!(run.json()["count"], 1);
    assert!(run.stderr.contains("002-no-id.md") && run.stderr.contains("id"), "{run:?}");
}

#[test]
fn two_hundred_memories_all_load() {
    let t = TestEnv::pinned();
    let mut rng = Rng::new(28);
    for id in 1..=200 {
        t.memory(id, &sentence(&mut rng, 6), &days_ago(id as f64), &[]);
    }
    let v = t.list_json();
    assert_eq!(v["count"], 200);
    assert_eq!(t.ids(), (1..=200).collect::<Vec<_>>());
}

#[test]
fn a_file_with_malformed_yaml_is_skipped_with_a_warning() {
    let t = TestEnv::pinned();
    t.memory(1, "valid one", &days_ago(1.0), &[]);
    t.mem_file("002-bad.md", "---\nid: 2\ncreated: {{invalid\n---\n\nbroken\n");
    let run = t.kb(&["--json", "list"]).ok();
    assert_eq!(run.json()["count"], 1);
    assert!(run.stderr.contains("002-bad.md"), "{run:?}");
}

#[test]
fn a_file_without_frontmatter_is_skipped_with_a_warning() {
    let t = TestEnv::pinned();
    t.memory(1, "valid one", &days_ago(1.0), &[]);
    t.mem_file("notes.md", "Just some notes, no frontmatter.\n");
    let run = t.kb(&["--json", "list"]).ok();
    assert_eq!(run.json()["count"], 1);
    assert!(run.stderr.contains("notes.md"), "{run:?}");
}

#[test]
fn list_without_a_memories_folder_says_none_saved_yet_and_creates_nothing() {
    let t = TestEnv::pinned();
    let before = t.snapshot();
    assert_eq!(t.kb(&["list"]).ok().stdout.trim_end(), format!("No memories saved yet in {}.", t.root().display()));
    let v = t.list_json();
    assert_eq!((v["count"].as_u64(), v["memories"].clone()), (Some(0), json!([])));
    assert_same_tree(&before, &t.snapshot());
    assert!(!t.root().join(".co-cli").exists(), "a read command created .co-cli/");
}

#[test]
fn recall_without_a_memories_folder_finds_nothing_and_creates_nothing() {
    let t = TestEnv::pinned();
    assert_eq!(
        t.kb(&["recall", "--exact", "nonexistent"]).ok().stdout.trim_end(),
        format!("No memories found matching 'nonexistent' in {}", t.root().display())
    );
    let v = recall_json(&t, &["nonexistent"]);
    assert_eq!(
        (v["count"].as_u64(), v["results"].clone(), v["query"].as_str()),
        (Some(0), json!([]), Some("nonexistent"))
    );
    assert!(!t.root().join(".co-cli").exists());
}

#[test]
fn exact_recall_finds_every_memory_holding_the_word_newest_first() {
    let t = TestEnv::pinned();
    t.kb(&["save", "User prefers async/await", "-t", "python"]).ok();
    t.kb(&["save", "Uses SQLAlchemy ORM", "-t", "database"]).ok();
    t.kb(&["save", "Async database connections", "-t", "python", "-t", "database"]).ok();
    let run = t.kb(&["recall", "--exact", "async"]).ok();
    // Same creation instant: the higher id is the newer.
    assert_eq!(
        run.stdout.trim_end(),
        "Found 2 memories matching 'async':\n\n\
         **Memory 3** (created 2026-11-22)\nTags: python, database\nAsync database connections\n\n\
         **Memory 1** (created 2026-11-22)\nTags: python\nUser prefers async/await"
    );
    let v = recall_json(&t, &["async"]);
    assert_eq!(v["count"], 2);
    assert_eq!(result_ids(&v), [3, 1]);
}

#[test]
fn exact_recall_leaves_out_a_memory_without_the_word() {
    let t = TestEnv::pinned();
    t.kb(&["save", "Python memory", "-t", "python"]).ok();
    t.kb(&["save", "JavaScript memory", "-t", "javascript"]).ok();
    let run = t.kb(&["recall", "--exact", "python"]).ok();
    assert!(run.stdout.starts_with("Found 1 memory matching 'python':\n"), "{run:?}");
    assert!(run.stdout.contains("Python memory"));
    assert_eq!(recall_json(&t, &["python"])["count"], 1);
}

#[test]
fn recall_returns_at_most_max_results_and_five_by_default() {
    let t = TestEnv::pinned();
    let texts = [
        "Test the parser with empty input",
        "Test coverage must stay above ninety percent",
        "Test fixtures live under tests/fixtures",
        "Test names follow the scenario numbers",
        "Test runs use a pinned clock",
        "Test databases are created per worker",
        "Test snapshots are reviewed with insta",
        "Test helpers belong in common.rs",
        "Test timeouts default to sixty seconds",
        "Test flakes get an issue and a quarantine tag",
    ];
    for text in texts {
        t.kb(&["save", text, "-t", "test"]).ok();
    }
    assert_eq!(t.memory_files().len(), 10, "some of the texts were deduplicated");
    assert_eq!(recall_json(&t, &["test", "-n", "3"])["count"], 3);
    assert_eq!(recall_json(&t, &["test", "--max-results", "3"])["count"], 3);
    assert_eq!(recall_json(&t, &["test"])["count"], 5, "the default is 5");
    // co-cli returns nothing for 0; kb wants N ≥ 1, so 0 is a usage error.
    t.kb(&["recall", "--exact", "test", "-n", "0"]).usage();
    assert_eq!(recall_json(&t, &["test", "-n", "100"])["count"], 10);
}

#[test]
fn list_summaries_are_the_first_line_of_each_memory() {
    let t = TestEnv::pinned();
    t.kb(&["save", "First memory"]).ok();
    t.kb_stdin(&["save", "-"], Some("Second memory\nWith multiple lines")).ok();
    let run = t.kb(&["list"]).ok();
    assert_eq!(
        run.stdout.trim_end(),
        "Total memories: 2/200\n\n**001** (2026-11-22) : First memory\n**002** (2026-11-22) : Second memory"
    );
    assert!(!run.stdout.contains("With multiple lines"));
    let v = t.list_json();
    assert_eq!(v["memories"][1]["summary"], "Second memory");
}

#[test]
fn exact_recall_is_case_insensitive_beyond_ascii_too() {
    let t = TestEnv::pinned();
    t.memory(1, "ASYNC/AWAIT pattern everywhere", &days_ago(1.0), &[]);
    assert_eq!(recall_json(&t, &["async"])["count"], 1);
    assert_eq!(recall_json(&t, &["AsYnC/aWaIt"])["count"], 1);
    t.memory(2, "Über alles", &days_ago(1.0), &[]);
    assert_eq!(result_ids(&recall_json(&t, &["ÜBER"])), [2]);
}

#[test]
fn exact_recall_lists_the_newest_memory_first() {
    let t = TestEnv::pinned();
    t.mem_file("001-a.md", "---\ncreated: '2026-01-01T10:00:00Z'\nid: 1\ntags: []\n---\n\nmorning note\n");
    t.mem_file("002-b.md", "---\ncreated: '2026-01-01T20:00:00Z'\nid: 2\ntags: []\n---\n\nevening note\n");
    assert_eq!(result_ids(&recall_json(&t, &["note"])), [2, 1]);
}

#[test]
fn recall_orders_by_instant_not_by_string() {
    let t = TestEnv::pinned();
    t.mem_file("001-a.md", "---\ncreated: '2026-01-01T10:00:00Z'\nid: 1\ntags: []\n---\n\nnote a\n");
    t.mem_file("002-b.md", "---\ncreated: '2026-01-01T10:00:00.500000+00:00'\nid: 2\ntags: []\n---\n\nnote b\n");
    t.mem_file("003-c.md", "---\ncreated: '2026-01-01T05:00:00-08:00'\nid: 3\ntags: []\n---\n\nnote c\n");
    assert_eq!(result_ids(&recall_json(&t, &["note"])), [3, 2, 1]);
}

#[test]
fn recall_ties_go_to_the_higher_id() {
    let t = TestEnv::pinned();
    let at = days_ago(1.0);
    for id in [3, 1, 4, 2] {
        t.memory(id, &format!("same time note {id}"), &at, &[]);
    }
    assert_eq!(result_ids(&recall_json(&t, &["note"])), [4, 3, 2, 1]);
}

#[test]
fn recall_query_words_each_match_and_match_tags() {
    let t = TestEnv::pinned();
    t.memory(1, "testing python code", &days_ago(1.0), &["preference"]);
    // Every word must match, in any order.
    assert_eq!(recall_json(&t, &["python testing"])["count"], 1);
    assert_eq!(recall_json(&t, &["python java"])["count"], 0);
    assert_eq!(recall_json(&t, &["python pref"])["count"], 1, "a word may match a tag");
    assert_eq!(recall_json(&t, &["python code"])["count"], 1);
    assert_eq!(recall_json(&t, &["PREF"])["count"], 1);
    t.memory(2, "other", &days_ago(2.0), &[]);
    assert_eq!(recall_json(&t, &[""])["count"], 2, "an empty query matches everything");
}

#[test]
fn recall_json_shape() {
    let t = TestEnv::pinned();
    let path = t.mem_file(
        "007-x.md",
        "---\nauto_category: decision\ncreated: '2026-11-20T10:00:00+00:00'\ndecay_protected: true\nid: 7\n\
         source: detected\ntags:\n- decision\n- infra\nupdated: '2026-11-21T10:00:00+00:00'\n---\n\nWe deploy on Mondays\n",
    );
    let v = recall_json(&t, &["deploy"]);
    assert_eq!(v["query"], "deploy");
    assert_eq!(v["count"], 1);
    assert_eq!(
        v["results"][0],
        json!({
            "store": "md",
            "id": 7,
            "path": path.display().to_string(),
            "content": "We deploy on Mondays",
            "tags": ["decision", "infra"],
            "created": "2026-11-20T10:00:00+00:00",
            "updated": "2026-11-21T10:00:00+00:00",
            "source": "detected",
            "category": "decision",
            "decay_protected": true,
            "type": "learning",
            "importance": "medium",
            "agent": null,
            "created_by": null,
            "updated_by": null,
        })
    );
    assert_eq!(t.show(7), v["results"][0]);
}

#[test]
fn list_json_shape_and_order() {
    let t = TestEnv::pinned();
    t.memory(10, "ten", &days_ago(1.0), &["pattern"]);
    t.memory(2, "two\nsecond line", &days_ago(5.0), &[]);
    let v = t.list_json();
    assert_eq!(v["count"], 2);
    assert_eq!(v["limit"], 200);
    assert_eq!(
        v["memories"][0],
        json!({
            "store": "md",
            "id": 2,
            "created": days_ago(5.0),
            "updated": null,
            "tags": [],
            "category": null,
            "summary": "two",
            "decay_protected": false,
            "path": t.file_of(2).display().to_string(),
            "type": "learning",
            "importance": "medium",
            "agent": null,
            "created_by": null,
            "updated_by": null,
        })
    );
    assert_eq!(v["memories"][1]["id"], 10);
    assert_eq!(v["memories"][1]["category"], "pattern");
}

#[test]
fn list_summary_is_cut_at_eighty_characters() {
    let t = TestEnv::pinned();
    let exactly_80 = "a".repeat(80);
    let long = format!("{}XYZ", "b".repeat(80));
    t.memory(1, &exactly_80, &days_ago(1.0), &[]);
    t.memory(2, &long, &days_ago(1.0), &[]);
    t.memory(3, &"é".repeat(81), &days_ago(1.0), &[]);
    let v = t.list_json();
    assert_eq!(v["memories"][0]["summary"], exactly_80);
    assert_eq!(v["memories"][1]["summary"], format!("{}...", "b".repeat(77)));
    assert_eq!(v["memories"][2]["summary"], format!("{}...", "é".repeat(77)));
}

#[test]
fn list_category_is_recomputed_from_tags() {
    let t = TestEnv::pinned();
    t.mem_file(
        "001-x.md",
        "---\nauto_category: decision\ncreated: '2026-11-20T10:00:00+00:00'\nid: 1\ntags:\n- preference\n---\n\nx\n",
    );
    assert_eq!(t.list_json()["memories"][0]["category"], "preference");
    assert!(t.kb(&["list"]).ok().stdout.contains("**001** (2026-11-20) [preference] : x"));
}

#[test]
fn list_human_line_with_everything() {
    let t = TestEnv::pinned();
    t.mem_file(
        "005-x.md",
        "---\ncreated: '2026-11-20T10:00:00+00:00'\ndecay_protected: true\nid: 5\ntags:\n- decision\n\
         updated: '2026-11-21T09:00:00+00:00'\n---\n\nWe chose Postgres\n",
    );
    assert_eq!(
        t.kb(&["list"]).ok().stdout.trim_end(),
        "Total memories: 1/200\n\n**005** (2026-11-20 → 2026-11-21) [decision] 🔒 : We chose Postgres"
    );
}

#[test]
fn show_human_and_not_found() {
    let t = TestEnv::pinned();
    t.memory(3, "Shown in full\nwith two lines", &days_ago(1.0), &["preference"]);
    let run = t.kb(&["show", "3"]).ok();
    assert!(run.stdout.contains("Shown in full\nwith two lines"), "{run:?}");
    assert!(run.stdout.contains("preference"), "{run:?}");
    let run = t.kb(&["show", "999"]).err();
    assert!(run.stderr.contains("error: memory 999 not found"), "{run:?}");
    assert!(run.stdout.is_empty());
    let run = t.kb(&["--json", "show", "999"]).err();
    assert_eq!(run.json()["error"]["message"], "memory 999 not found", "{run:?}");
}

#[test]
fn ids_are_accepted_the_way_people_type_them() {
    let t = TestEnv::pinned();
    t.memory(7, "seven", &days_ago(1.0), &[]);
    for raw in ["7", "007", " 7 ", "+7"] {
        assert_eq!(t.kb(&["--json", "show", raw]).ok().json()["id"], 7, "{raw:?}");
    }
    for raw in ["abc", "1.5", "", "7x", "99999999999999999999999"] {
        let run = t.kb(&["show", raw]);
        assert_eq!(run.code, 1, "{raw:?}: {run:?}");
        assert!(run.stderr.contains("error:"), "{run:?}");
    }
}

#[test]
fn read_commands_modify_nothing() {
    let t = TestEnv::pinned();
    t.memory(1, "valid one", &days_ago(1.0), &["python"]);
    t.protected_memory(2, "protected one", &days_ago(2.0));
    t.mem_file("003-bad.md", "---\nid: 3\ncreated: {{invalid\n---\n\nbroken\n");
    t.write(".co-cli/knowledge/context.md", "---\nversion: 1\nupdated: '2026-11-01T00:00:00+00:00'\n---\n\nctx\n");
    let before = t.snapshot();
    for args in [
        &["list"][..],
        &["--json", "list"],
        &["recall", "--exact", "one"],
        &["--json", "recall", "--exact", "one"],
        &["show", "1"],
        &["--json", "show", "2"],
        &["show", "3"],
        &["check"],
        &["--json", "check"],
        &["config"],
        &["--json", "config"],
        &["save", "--dry-run", "valid one"],
        &["save", "--dry-run", "something else"],
    ] {
        t.kb(args);
        assert_same_tree(&before, &t.snapshot());
    }
}

#[test]
fn json_goes_to_stdout_and_warnings_to_stderr() {
    let t = TestEnv::pinned();
    t.memory(1, "valid one", &days_ago(1.0), &[]);
    t.mem_file("002-bad.md", "---\nid: [\n---\n\nbroken\n");
    for args in [&["--json", "list"][..], &["--json", "recall", "--exact", "one"], &["--json", "show", "2"]] {
        let run = t.kb(args);
        if args[1] == "show" {
            // Not found, because its file is invalid: the error and the warning name it.
            assert_eq!(run.code, 1, "{run:?}");
            assert_eq!(run.json()["error"]["kind"], "not_found", "{run:?}");
        } else {
            assert_eq!(run.code, 0, "{run:?}");
            run.json();
        }
        assert!(run.stderr.contains("warning") && run.stderr.contains("002-bad.md"), "{args:?}: {run:?}");
    }
}

#[test]
fn global_flags_work_after_the_command() {
    let t = TestEnv::pinned();
    t.memory(1, "valid one", &days_ago(1.0), &[]);
    assert_eq!(t.kb(&["list", "--json"]).ok().json()["count"], 1);
}

#[test]
fn show_names_skipped_files_even_when_it_finds_the_memory() {
    let t = TestEnv::pinned();
    t.memory(1, "a good memory", &days_ago(1.0), &[]);
    t.mem_file("002-bad.md", "---\nid: 2\ncreated: nope\n---\n\nbad\n");
    let run = t.kb(&["show", "1"]).ok();
    assert!(run.stdout.contains("a good memory"), "{run:?}");
    assert!(run.stderr.contains("002-bad.md"), "{run:?}");
}

#[test]
fn recall_takes_several_words_and_says_how_many_matched_in_all() {
    let t = TestEnv::pinned();
    for i in 1..=7u64 {
        let text =
            if i == 7 { "Use cargo build for release".to_string() } else { format!("Run nextest on CI, step {i}") };
        t.memory(i, &text, &days_ago(10.0 - i as f64), &[]);
    }
    // Several words are one query: every word must match.
    let run = t.kb(&["recall", "--exact", "nextest", "CI"]).ok();
    assert!(run.stdout.starts_with("Found 6 memories matching 'nextest CI' (showing 5):"), "{run:?}");
    assert_eq!(t.kb(&["recall", "--exact", "nextest CI"]).ok().stdout, run.stdout);
    let json = t.kb(&["--json", "recall", "--exact", "nextest", "CI"]).ok().json();
    assert_eq!((json["count"].as_u64(), json["total"].as_u64()), (Some(5), Some(6)));
    assert_eq!(json["query"], "nextest CI");
    // All shown: no "(showing N)".
    let run = t.kb(&["recall", "--exact", "-n", "10", "nextest"]).ok();
    assert!(run.stdout.starts_with("Found 6 memories matching 'nextest':"), "{run:?}");
    let run = t.kb(&["recall", "--exact", "release"]).ok();
    assert!(run.stdout.starts_with("Found 1 memory matching 'release':"), "{run:?}");
    assert_eq!(t.kb(&["recall"]).code, 2, "a query is required");
}

#[test]
fn show_of_a_memory_whose_yaml_is_broken_names_the_file_and_the_line() {
    let t = TestEnv::pinned();
    let bad = t.write(
        ".co-cli/knowledge/memories/005-broken.md",
        "---\ntags: [bash\ncreated: '2026-11-01T10:00:00+00:00'\nid: 5\n---\n\nbody\n",
    );
    let run = t.kb(&["show", "5"]).err();
    let error = run.stderr.lines().find(|l| l.starts_with("error:")).unwrap_or_default().to_string();
    assert!(error.contains(&format!("{}:2:", bad.display())), "the tags line: {run:?}");
    assert!(error.contains("unclosed bracket '['") && !error.contains("not found"), "{run:?}");
    // A memory id no file names is still not found.
    assert!(t.kb(&["show", "6"]).err().stderr.contains("memory 6 not found"));
}

#[test]
fn list_orders_the_memories_of_one_id_by_file_name() {
    let t = TestEnv::pinned();
    let created = "created: '2026-11-01T10:00:00+00:00'\n";
    for (name, id) in
        [("009-c.md", 9), ("002-z.md", 2), ("010-a.md", 10), ("002-b.md", 2), ("002-m.md", 2), ("001-y.md", 1)]
    {
        t.mem_file(name, &format!("---\nid: {id}\n{created}---\n\n{name}\n"));
    }
    let text = t.kb(&["list"]).ok().stdout;
    let names: Vec<&str> = text.lines().filter_map(|l| l.split(" : ").nth(1)).collect();
    assert_eq!(names, ["001-y.md", "002-b.md", "002-m.md", "002-z.md", "009-c.md", "010-a.md"], "{text}");
    let v = t.list_json();
    let paths: Vec<&str> = v["memories"].as_array().unwrap().iter().map(|m| m["path"].as_str().unwrap()).collect();
    assert_eq!(paths.iter().map(|p| p.rsplit('/').next().unwrap()).collect::<Vec<_>>(), names);
    assert_eq!(paths[0], t.root().join(".co-cli/knowledge/memories/001-y.md").display().to_string());
}
