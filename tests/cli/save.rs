//! `kb save` creating memories: exact file bytes, file names and slugs, ids, input forms, dry runs,
//! and the display strings co-cli prints.

use crate::common::*;

/// The bytes co-cli writes for a sample memory, with the clock pinned to the same instant.
#[test]
fn exact_bytes_of_a_new_memory() {
    let t = TestEnv::new().env("KB_NOW", "2026-11-22T14:27:04.330453+00:00");
    t.kb(&["save", "User prefers pytest over unittest", "-t", "testing", "-t", "preference", "-t", "python"]).ok();
    let files = t.memory_files();
    assert_eq!(files, ["001-user-prefers-pytest-over-unittest.md"]);
    assert_eq!(
        t.read(&t.memories().join(&files[0])),
        "---\nauto_category: preference\ncreated: '2026-11-22T14:27:04.330453+00:00'\nid: 1\nsource: detected\ntags:\n- testing\n- preference\n- python\n---\n\nUser prefers pytest over unittest\n"
    );
}

#[test]
fn exact_bytes_without_tags_and_whole_seconds() {
    let t = TestEnv::pinned();
    t.kb(&["save", "  Uses SQLAlchemy for ORM \n\n"]).ok();
    assert_eq!(
        t.read(&t.file_of(1)),
        "---\nauto_category: null\ncreated: '2026-11-22T12:00:00+00:00'\nid: 1\nsource: user-told\ntags: []\n---\n\nUses SQLAlchemy for ORM\n"
    );
}

#[test]
fn new_memory_has_exactly_the_five_co_cli_keys() {
    let t = TestEnv::pinned();
    t.kb(&["save", "a fact about kettles", "-t", "decision"]).ok();
    let text = t.read(&t.file_of(1));
    let keys: Vec<&str> = text
        .lines()
        .skip(1)
        .take_while(|l| *l != "---")
        .filter(|l| !l.starts_with("- ") && !l.starts_with(' '))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(keys, ["auto_category", "created", "id", "source", "tags"]);
    assert!(text.contains("auto_category: decision\n") && text.contains("source: detected\n"), "{text}");
}

#[test]
fn category_follows_fixed_priority_not_tag_order() {
    let t = TestEnv::pinned();
    let out = t.kb(&["--json", "save", "pattern then preference", "-t", "pattern", "-t", "preference"]).ok().json();
    let text = t.read(std::path::Path::new(out["path"].as_str().unwrap()));
    assert!(text.contains("auto_category: preference\n"), "{text}");
    let show = t.show(1);
    assert_eq!(show["category"], "preference");
    assert_eq!(show["source"], "detected");
    // Matching is exact and case-sensitive.
    t.kb(&["save", "capitalised signal tag only", "-t", "Preference"]).ok();
    let show = t.show(2);
    assert_eq!(show["category"], serde_json::Value::Null);
    assert_eq!(show["source"], "user-told");
}

#[test]
fn file_names_slug_the_text_as_co_cli_does() {
    let t = TestEnv::pinned();
    for text in ["User prefers async/await", "Uses SQLAlchemy 2.0", "  Multiple   Spaces  ", &"a".repeat(100)] {
        t.kb(&["save", text]).ok();
    }
    let files = t.memory_files();
    assert_eq!(
        files,
        [
            "001-user-prefers-async-await.md".to_string(),
            "002-uses-sqlalchemy-2-0.md".to_string(),
            "003-multiple-spaces.md".to_string(),
            format!("004-{}.md", "a".repeat(50)),
        ]
    );
}

#[test]
fn slug_of_non_ascii_text_and_all_cjk_text() {
    let t = TestEnv::pinned();
    t.kb(&["save", "first kettle fact"]).ok();
    t.kb(&["save", "second lantern note"]).ok();
    t.kb(&["save", "Naïve café — 日本語 rocks!!! and some more text to pad it"]).ok();
    t.kb(&["save", "日本語だけのメモ"]).ok();
    let files = t.memory_files();
    assert!(files.contains(&"003-na-ve-caf-rocks-and-some-more-text-to-pa.md".to_string()), "{files:?}");
    assert!(files.contains(&"004-.md".to_string()), "{files:?}");
    assert_eq!(t.show(4)["content"], "日本語だけのメモ");
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn slug_cuts_words_at_fifty_characters() {
    let t = TestEnv::pinned();
    let text = "Memory one with unique words about kettles and lanterns everywhere";
    t.kb(&["save", text]).ok();
    let name = &t.memory_files()[0];
    let slug = name.strip_prefix("001-").unwrap().strip_suffix(".md").unwrap();
    assert_eq!(slug, "memory-one-with-unique-words-about-kettles-and-lan");
    assert_eq!(slug.len(), 50);
}

#[test]
fn a_first_save_writes_memory_one_and_says_where() {
    let t = TestEnv::pinned();
    let run = t.kb(&["save", "User prefers async/await over callbacks", "-t", "python", "-t", "style"]).ok();
    assert!(run.stdout.starts_with("✓ Saved memory 1: 001-user-prefers-async-await"), "{run:?}");
    let path = t.file_of(1);
    assert!(path.to_string_lossy().contains("001-user-prefers-async-await"));
    assert!(run.stdout.contains(&format!("Location: {}", path.display())), "{run:?}");
    let text = t.read(&path);
    for needle in ["id: 1", "tags:", "python", "User prefers async/await over callbacks"] {
        assert!(text.contains(needle), "{needle} missing in {text}");
    }
}

#[test]
fn save_json_reports_the_action_the_id_and_the_absolute_path() {
    let t = TestEnv::pinned();
    let out = t.kb(&["--json", "save", "User prefers async/await over callbacks", "-t", "python"]).ok().json();
    assert_eq!(out["action"], "saved");
    assert_eq!(out["memory_id"], 1);
    assert_eq!(out["similarity"], serde_json::Value::Null);
    assert_eq!(out["decayed"], 0);
    assert_eq!(out["decay_strategy"], serde_json::Value::Null);
    let path = std::path::PathBuf::from(out["path"].as_str().unwrap());
    assert!(path.is_absolute(), "{path:?}");
    assert_eq!(path, t.file_of(1));
}

#[test]
fn a_save_without_tags_writes_an_empty_list_and_no_category() {
    let t = TestEnv::pinned();
    t.kb(&["save", "Uses SQLAlchemy for ORM"]).ok();
    let text = t.read(&t.file_of(1));
    assert!(text.contains("tags: []\n"), "{text}");
    assert!(text.contains("auto_category: null\n") && text.contains("source: user-told\n"), "{text}");
}

#[test]
fn three_saves_get_ids_one_two_three() {
    let t = TestEnv::pinned();
    for text in ["Uses PostgreSQL for storage", "Prefers tabs over spaces", "Deploys with kubernetes on fridays"] {
        t.kb(&["save", text]).ok();
    }
    assert_eq!(t.ids(), [1, 2, 3]);
}

#[test]
fn the_next_id_is_the_highest_plus_one_and_gaps_are_kept() {
    let t = TestEnv::pinned();
    t.mem_file("001-first.md", "---\ncreated: 2026-01-01T00:00:00Z\nid: 1\ntags: []\n---\n\nFirst\n");
    t.mem_file("003-third.md", "---\ncreated: 2026-01-03T00:00:00Z\nid: 3\ntags: []\n---\n\nThird\n");
    assert_eq!(t.ids(), [1, 3]);
    let out = t.kb(&["--json", "save", "a new unrelated walnut fact"]).ok().json();
    assert_eq!(out["memory_id"], 4);
    assert!(t.memory_files().contains(&"004-a-new-unrelated-walnut-fact.md".to_string()));
}

#[test]
fn next_id_comes_from_frontmatter_not_file_names() {
    let t = TestEnv::pinned();
    t.mem_file("notes.md", &format!("---\ncreated: '{}'\nid: 41\n---\n\nA hand-made note\n", days_ago(30.0)));
    let out = t.kb(&["--json", "save", "quartz raven saffron"]).ok().json();
    assert_eq!(out["memory_id"], 42);
}

#[test]
fn ids_are_not_reused_while_a_higher_id_exists() {
    let t = TestEnv::pinned();
    for text in ["apple bridge cobalt", "delta ember falcon", "granite harbor indigo"] {
        t.kb(&["save", text]).ok();
    }
    t.kb(&["forget", "2"]).ok();
    let out = t.kb(&["--json", "save", "jasper kettle lantern"]).ok().json();
    assert_eq!(out["memory_id"], 4);
    assert_eq!(t.ids(), [1, 3, 4]);
}

#[test]
fn id_1000_grows_the_file_name() {
    let t = TestEnv::pinned();
    t.mem_file("999-x.md", &format!("---\ncreated: '{}'\nid: 999\n---\n\nold\n", days_ago(30.0)));
    t.kb(&["save", "x"]).ok();
    assert!(t.memory_files().contains(&"1000-x.md".to_string()), "{:?}", t.memory_files());
}

#[test]
fn a_hand_made_file_with_the_new_name_is_never_overwritten() {
    let t = TestEnv::pinned();
    t.memory(1, "meadow nebula orchid", &days_ago(30.0), &[]);
    // Not a valid memory (no id), but it has the name the next save would use.
    let bad = t.mem_file("002-hello.md", "---\ncreated: '2026-01-01T00:00:00+00:00'\n---\n\nhand-made\n");
    let before = std::fs::read(&bad).unwrap();
    let out = t.kb(&["--json", "save", "hello"]).ok().json();
    assert_eq!(out["memory_id"], 2);
    assert_ne!(std::path::Path::new(out["path"].as_str().unwrap()), bad);
    assert_eq!(std::fs::read(&bad).unwrap(), before, "the hand-made file was overwritten");
    assert_eq!(t.show(2)["content"], "hello");
}

#[test]
fn text_from_several_arguments_is_joined_with_spaces() {
    let t = TestEnv::pinned();
    t.kb(&["save", "uses", "tabs", "not", "spaces"]).ok();
    assert_eq!(t.show(1)["content"], "uses tabs not spaces");
}

#[test]
fn text_from_stdin_with_dash() {
    let t = TestEnv::pinned();
    t.kb_stdin(&["save", "-", "-t", "notes"], Some("  First line\nsecond line\n\n")).ok();
    let m = t.show(1);
    assert_eq!(m["content"], "First line\nsecond line");
    assert_eq!(m["tags"], serde_json::json!(["notes"]));
    assert!(t.memory_files()[0].starts_with("001-first-line-second-line"), "{:?}", t.memory_files());
}

#[test]
fn text_from_piped_stdin_without_argument() {
    let t = TestEnv::pinned();
    t.kb_stdin(&["save"], Some("piped walnut text")).ok();
    assert_eq!(t.show(1)["content"], "piped walnut text");
}

#[test]
fn tags_flag_takes_a_comma_separated_list() {
    let t = TestEnv::pinned();
    t.kb(&["save", "comma tags", "--tags", "alpha,beta"]).ok();
    assert_eq!(t.show(1)["tags"], serde_json::json!(["alpha", "beta"]));
    t.kb(&["save", "long flag tag", "--tag", "gamma"]).ok();
    assert_eq!(t.show(2)["tags"], serde_json::json!(["gamma"]));
}

#[test]
fn empty_text_is_refused_and_nothing_written() {
    let t = TestEnv::pinned();
    let before = t.snapshot();
    t.kb(&["save", ""]).err();
    t.kb(&["save", "  \n\t "]).err();
    t.kb_stdin(&["save", "-"], Some("")).err();
    t.kb(&["save"]).err();
    assert_same_tree(&before, &t.snapshot());
    assert!(t.memory_files().is_empty());
}

#[test]
fn empty_tag_is_refused() {
    let t = TestEnv::pinned();
    t.kb(&["save", "text", "-t", ""]).err();
    assert!(t.memory_files().is_empty());
}

#[test]
fn stdin_that_is_not_utf8_is_refused() {
    let t = TestEnv::pinned();
    let mut cmd = t.command(&["save", "-"]);
    cmd.current_dir(t.root());
    let run = run_command(cmd, Some(b"abc\xff\xfe"));
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("error:"), "{run:?}");
    assert!(t.memory_files().is_empty());
}

#[test]
fn dry_run_writes_nothing() {
    let t = TestEnv::pinned();
    let before = t.snapshot();
    let out = t.kb(&["--json", "save", "--dry-run", "User prefers pytest"]).ok().json();
    assert_eq!(out["action"], "would_save");
    assert_eq!(out["memory_id"], 1);
    assert_same_tree(&before, &t.snapshot());
    assert!(!t.root().join(".co-cli").exists(), "a dry run created .co-cli/");
}

#[test]
fn dry_run_reports_a_consolidation_with_its_score() {
    let t = TestEnv::pinned();
    t.memory(1, "I prefer TypeScript for web development", &days_ago(1.0), &["preference"]);
    let before = t.snapshot();
    let out = t.kb(&["--json", "save", "--dry-run", "I prefer typescript for web dev"]).ok().json();
    assert_eq!(out["action"], "would_consolidate");
    assert_eq!(out["memory_id"], 1);
    assert!((out["similarity"].as_f64().unwrap() - 88.571_428_571_428_57).abs() < 1e-9, "{out}");
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn dry_run_reports_a_decay_without_doing_it() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10");
    let mut rng = Rng::new(7);
    for i in 1..=10 {
        t.memory(i, &sentence(&mut rng, 8), &days_ago(50.0 - i as f64), &[]);
    }
    let before = t.snapshot();
    let out = t.kb(&["--json", "save", "--dry-run", "a brand new zephyr memory"]).ok().json();
    assert_eq!(out["action"], "would_save");
    assert_eq!(out["decayed"], 2);
    assert_eq!(out["decay_strategy"], "summarize");
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn save_creates_the_memories_folder_and_works_from_a_subfolder() {
    // Root discovery from a subfolder. Immune to a `.co-cli/` above the temporary folder: the
    // repository has its own (without the memories folder); the `.git` rule alone is tested by
    // init_config::nearest_git_when_there_is_no_co_cli_folder.
    let mut t = TestEnv::pinned().discovering_root();
    std::fs::create_dir_all(t.root().join(".co-cli")).unwrap();
    std::fs::create_dir_all(t.root().join("src/deep")).unwrap();
    t.cwd = Some("src/deep".into());
    t.kb(&["save", "saved from a subfolder"]).ok();
    assert_eq!(t.memory_files(), ["001-saved-from-a-subfolder.md"]);
    assert!(!t.root().join("src/deep/.co-cli").exists());
}

#[test]
fn saved_file_keeps_the_umask_default_mode() {
    use std::os::unix::fs::PermissionsExt;
    let t = TestEnv::pinned();
    t.kb(&["save", "mode check"]).ok();
    let mode = std::fs::metadata(t.file_of(1)).unwrap().permissions().mode() & 0o777;
    // Readable by the group and others like any file the user creates (not tempfile's 0600).
    assert_eq!(mode & 0o044, 0o044, "mode {mode:o}");
}

#[test]
fn no_temporary_files_are_left_behind() {
    let t = TestEnv::pinned();
    for text in ["apple one", "bridge two", "cobalt three"] {
        t.kb(&["save", text]).ok();
    }
    let all: Vec<String> = std::fs::read_dir(t.memories())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(all.len(), 3, "{all:?}");
}

#[test]
fn text_with_a_nul_byte_is_refused_or_stored_readably() {
    let t = TestEnv::pinned();
    let run = t.kb_stdin(&["save", "-"], Some("hello\0world"));
    assert!(run.code == 0 || run.code == 1, "{run:?}");
    if run.code == 0 {
        // Every file kb writes must be one kb (and co-cli) can read back.
        let check = t.kb(&["check"]);
        assert_eq!(check.code, 0, "kb wrote a memory it cannot read: {check:?}");
    } else {
        assert!(run.stderr.contains("the text contains a NUL byte: memories are text files"), "{run:?}");
        assert!(t.memory_files().is_empty());
    }
}

#[test]
fn text_over_the_file_size_limit_is_refused_or_stored_readably() {
    let t = TestEnv::pinned();
    let big = "lorem ipsum dolor sit amet ".repeat(60_000);
    let run = t.kb_stdin(&["save", "-"], Some(&big));
    assert!(run.code == 0 || run.code == 1, "{run:?}");
    if run.code == 0 {
        let check = t.kb(&["check"]);
        assert_eq!(check.code, 0, "kb wrote a memory it cannot read: {check:?}");
        assert_eq!(t.ids(), [1]);
    } else {
        assert!(t.memory_files().is_empty());
    }
}

#[test]
fn the_largest_id_is_an_error_not_a_panic() {
    let t = TestEnv::pinned();
    t.mem_file("max.md", &format!("---\ncreated: '{}'\nid: {}\n---\n\nthe last id\n", days_ago(30.0), u64::MAX));
    assert_eq!(t.ids(), [u64::MAX]);
    let before = t.snapshot();
    let run = t.kb(&["save", "one more"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("error:"), "{run:?}");
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn the_summary_id_after_the_largest_id_is_an_error_not_a_panic() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10");
    let mut rng = Rng::new(77);
    for i in 0..10u64 {
        let id = u64::MAX - 11 + i;
        t.mem_file(
            &format!("big-{i}.md"),
            &format!("---\ncreated: '{}'\nid: {id}\n---\n\n{}\n", days_ago(30.0 - i as f64), sentence(&mut rng, 8)),
        );
    }
    // The first save gets u64::MAX - 1 and its decay summary u64::MAX; the second has no id left.
    let run = t.kb(&["--json", "save", "this one fits"]);
    assert!(run.code == 0 || run.code == 1, "{run:?}");
    let run = t.kb(&["--json", "save", "this one does not fit"]);
    assert!(run.code == 0 || run.code == 1, "{run:?}");
    assert_eq!(t.kb(&["check"]).code, 0, "{:?}", t.kb(&["check"]));
}

#[test]
fn a_pinned_clock_with_an_offset_is_written_in_utc() {
    let t = TestEnv::new().env("KB_NOW", "2026-11-22T14:00:00.5+02:00");
    t.kb(&["save", "offset clock"]).ok();
    assert!(t.read(&t.file_of(1)).contains("created: '2026-11-22T12:00:00.500000+00:00'\n"));
}
