//! Bad memory files, one test each (docs/formats.md, docs/safety.md): the other memories still
//! load, read commands exit 0 and name the skipped file on stderr, nothing is modified, `kb check`
//! names the file (and line when known) and exits 1, a save still works around it, and kb never
//! panics.

use crate::common::*;
use std::path::{Path, PathBuf};

const CREATED: &str = "created: '2026-11-01T10:00:00+00:00'\n";

/// A repository with two valid memories (ids 1 and 2) and whatever bad entry `make` adds.
fn env_with(make: impl FnOnce(&TestEnv) -> PathBuf) -> (TestEnv, PathBuf) {
    let t = TestEnv::pinned();
    t.memory(1, "first valid memory about lanterns", &days_ago(2.0), &["python"]);
    t.memory(2, "second valid memory about kettles", &days_ago(1.0), &[]);
    let bad = make(&t);
    (t, bad)
}

/// Asserts every rule for a bad entry: `line` is the line `kb check` must report (None: any).
fn assert_skipped(t: &TestEnv, bad: &Path, line: Option<u64>, needle: &str) {
    let name = bad.file_name().unwrap().to_string_lossy().into_owned();
    let before = t.snapshot();
    for args in [&["list"][..], &["--json", "list"], &["recall", "valid"], &["--json", "recall", "memory"]] {
        let run = t.kb(args).ok();
        assert!(run.stderr.contains(&name), "{args:?} did not name {name} on stderr: {run:?}");
        if args[0] == "--json" {
            run.json();
        }
    }
    assert_eq!(t.ids(), [1, 2]);
    t.kb(&["show", "1"]).ok();
    assert_same_tree(&before, &t.snapshot());

    let run = t.kb(&["check"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains(&name), "{run:?}");
    let v = t.kb(&["--json", "check"]).json();
    let problems: Vec<&serde_json::Value> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["path"].as_str().unwrap().ends_with(&format!("/{name}")))
        .collect();
    assert_eq!(problems.len(), 1, "{v}");
    assert!(problems[0]["message"].as_str().unwrap().contains(needle), "expected {needle:?}: {v}");
    if line.is_some() {
        assert_eq!(problems[0]["line"].as_u64(), line, "{v}");
    }
    assert_same_tree(&before, &t.snapshot());

    // Writes work around it and leave it alone, and never reuse an id it names (a merge can leave
    // such a file, and its id is still taken).
    let out = t.kb(&["--json", "save", "a third memory about walnuts"]).ok().json();
    assert_eq!(out["memory_id"], written_id(bad).max(2) + 1);
    t.kb(&["protect", "1"]).ok();
    t.kb(&["forget", "2"]).ok();
    let after = t.snapshot();
    let rel = bad.strip_prefix(t.root()).unwrap().to_string_lossy().into_owned();
    assert_eq!(before.get(&rel), after.get(&rel), "the bad entry {rel} was modified");
}

/// Returns the highest id an `id: N` line (the number maybe quoted) of the regular file at
/// `path` names, 0 for none: kb's new ids stay above it even when the file does not parse.
fn written_id(path: &Path) -> u64 {
    let readable = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() <= 1024 * 1024);
    let text =
        if readable { String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned() } else { String::new() };
    text.lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .filter_map(|v| v.trim().trim_matches(|c| c == '\'' || c == '"').parse::<u64>().ok())
        .max()
        .unwrap_or(0)
}

#[test]
fn malformed_yaml() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", "---\nid: 3\ncreated: {{invalid\n---\n\nbody\n"));
    assert_skipped(&t, &bad, Some(3), "YAML");
}

#[test]
fn yaml_with_a_tab_indent() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", &format!("---\nid: 3\n{CREATED}tags:\n\t- a\n---\n\nbody\n")));
    assert_skipped(&t, &bad, None, "");
}

#[test]
fn duplicate_keys() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", &format!("---\nid: 3\n{CREATED}id: 4\n---\n\nbody\n")));
    assert_skipped(&t, &bad, Some(4), "duplicate");
}

#[test]
fn frontmatter_that_is_not_a_mapping() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", "---\n- a\n- b\n---\n\nbody\n"));
    assert_skipped(&t, &bad, None, "mapping");
}

#[test]
fn unclosed_frontmatter() {
    let (t, bad) =
        env_with(|t| t.mem_file("003-bad.md", &format!("---\nid: 3\n{CREATED}\nbody without a closing line\n")));
    assert_skipped(&t, &bad, Some(1), "closed");
}

#[test]
fn empty_frontmatter() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", "---\n---\n\nBody text.\n"));
    assert_skipped(&t, &bad, None, "id");
}

#[test]
fn comment_only_frontmatter() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", "---\n# nothing here\n---\n\nBody text.\n"));
    assert_skipped(&t, &bad, None, "id");
}

#[test]
fn leading_blank_line_before_the_fence() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", &format!("\n---\nid: 3\n{CREATED}---\n\nbody\n")));
    assert_skipped(&t, &bad, Some(1), "frontmatter");
}

#[test]
fn nul_bytes() {
    let (t, bad) = env_with(|t| {
        t.write_bytes(
            ".co-cli/knowledge/memories/003-bad.md",
            b"---\nid: 3\ncreated: '2026-11-01T10:00:00+00:00'\n---\n\nbo\0dy\n",
        )
    });
    assert_skipped(&t, &bad, Some(6), "NUL");
}

#[test]
fn invalid_utf8() {
    let (t, bad) = env_with(|t| {
        t.write_bytes(
            ".co-cli/knowledge/memories/003-bad.md",
            b"---\nid: 3\ncreated: '2026-11-01T10:00:00+00:00'\n---\n\n\xff\xfe body\n",
        )
    });
    assert_skipped(&t, &bad, Some(6), "UTF-8");
}

#[test]
fn latin1_file() {
    let (t, bad) = env_with(|t| {
        t.write_bytes(
            ".co-cli/knowledge/memories/003-bad.md",
            b"---\nid: 3\ncreated: '2026-11-01T10:00:00+00:00'\n---\n\ncaf\xe9\n",
        )
    });
    assert_skipped(&t, &bad, Some(6), "UTF-8");
}

#[test]
fn empty_file() {
    let (t, bad) = env_with(|t| t.mem_file("003-empty.md", ""));
    assert_skipped(&t, &bad, None, "frontmatter");
}

#[test]
fn a_folder_named_like_a_memory() {
    let (t, bad) = env_with(|t| {
        let p = t.memories().join("x.md");
        std::fs::create_dir_all(p.join("inner")).unwrap();
        std::fs::write(p.join("inner/003-y.md"), format!("---\nid: 3\n{CREATED}---\n\nnested\n")).unwrap();
        p
    });
    assert_skipped(&t, &bad, None, "directory");
}

#[test]
fn a_symlink_loop() {
    let (t, bad) = env_with(|t| {
        let a = t.memories().join("loop-a.md");
        std::os::unix::fs::symlink(t.memories().join("loop-b.md"), &a).unwrap();
        std::os::unix::fs::symlink(&a, t.memories().join("loop-b.md")).unwrap();
        a
    });
    // Both links are reported; assert_skipped checks loop-a, here loop-b.
    let v = t.kb(&["--json", "check"]).json();
    assert!(
        v["problems"].as_array().unwrap().iter().any(|p| p["path"].as_str().unwrap().ends_with("loop-b.md")),
        "{v}"
    );
    assert_skipped(&t, &bad, None, "symlink");
}

#[test]
fn a_dangling_symlink() {
    let (t, bad) = env_with(|t| {
        let a = t.memories().join("003-gone.md");
        std::os::unix::fs::symlink(t.memories().join("nowhere.txt"), &a).unwrap();
        a
    });
    assert_skipped(&t, &bad, None, "symlink");
}

#[test]
fn a_symlink_to_a_file_outside_the_root() {
    let (t, bad) = env_with(|t| {
        let outside = t.dir.path().join("outside.md");
        std::fs::write(&outside, format!("---\nid: 3\n{CREATED}---\n\nsecret outside text\n")).unwrap();
        let link = t.memories().join("003-outside.md");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        link
    });
    let run = t.kb(&["recall", "secret outside"]).ok();
    assert!(!run.stdout.contains("secret outside text"), "{run:?}");
    // A save of the same text must not consolidate into (write through) the link.
    let outside = t.dir.path().join("outside.md");
    let before = std::fs::read(&outside).unwrap();
    t.kb(&["save", "secret outside text"]).ok();
    assert_eq!(std::fs::read(&outside).unwrap(), before);
    t.kb(&["forget", "3"]).ok();
    assert_skipped(&t, &bad, None, "outside");
}

#[test]
fn a_symlink_inside_the_root_is_followed() {
    let t = TestEnv::pinned();
    let target = t.write("docs/note.md", &format!("---\nid: 5\n{CREATED}---\n\nlinked note\n"));
    std::fs::create_dir_all(t.memories()).unwrap();
    std::os::unix::fs::symlink(&target, t.memories().join("005-note.md")).unwrap();
    assert_eq!(t.show(5)["content"], "linked note");
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn a_file_name_that_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let (t, bad) = env_with(|t| {
        let p = t.memories().join(std::ffi::OsStr::from_bytes(b"003-caf\xe9.md"));
        std::fs::write(&p, format!("---\nid: 3\n{CREATED}---\n\nlatin-1 name\n")).unwrap();
        p
    });
    let run = t.kb(&["--json", "list"]).ok();
    assert!(run.json()["count"].as_u64().unwrap() >= 2);
    let check = t.kb(&["check"]);
    assert!(check.code == 0 || check.code == 1, "{check:?}");
    assert!(bad.exists());
}

#[test]
fn a_five_megabyte_memory() {
    let t = TestEnv::pinned();
    t.memory(1, "first valid memory about lanterns", &days_ago(2.0), &[]);
    let big = format!("---\nid: 3\n{CREATED}---\n\n{}\n", "lorem ipsum dolor sit amet ".repeat(200_000));
    let bad = t.mem_file("003-big.md", &big);
    let run = t.kb(&["--json", "list"]).ok();
    let ids: Vec<u64> = run.json()["memories"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect();
    assert!(ids.contains(&1), "{ids:?}");
    if !ids.contains(&3) {
        // Refused as too large: then it must be reported, by name, and by `kb check`.
        assert!(run.stderr.contains("003-big.md"), "{run:?}");
        assert_eq!(t.kb(&["check"]).code, 1);
    }
    t.kb(&["save", "another small memory"]).ok();
    assert_eq!(std::fs::read(&bad).unwrap().len(), big.len());
}

#[test]
fn duplicate_ids() {
    let t = TestEnv::pinned();
    t.memory(1, "first valid memory about lanterns", &days_ago(2.0), &[]);
    let a = t.mem_file("002-a.md", &format!("---\nid: 2\n{CREATED}---\n\nversion a\n"));
    let b = t.mem_file("002-b.md", &format!("---\nid: 2\n{CREATED}---\n\nversion b\n"));
    let before = t.snapshot();
    // Both are valid memories: list shows both.
    assert_eq!(t.ids(), [1, 2, 2]);
    for cmd in ["show", "forget", "protect", "unprotect"] {
        let run = t.kb(&[cmd, "2"]).err();
        assert!(run.stderr.contains("002-a.md") && run.stderr.contains("002-b.md"), "{cmd}: {run:?}");
    }
    assert_same_tree(&before, &t.snapshot());
    let v = t.kb(&["--json", "check"]).json();
    let paths: Vec<&str> = v["problems"].as_array().unwrap().iter().map(|p| p["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&a.to_str().unwrap()) && paths.contains(&b.to_str().unwrap()), "{v}");
    // The next id is still above both.
    assert_eq!(t.kb(&["--json", "save", "unrelated walnut text"]).ok().json()["memory_id"], 3);
}

#[test]
fn id_true_is_invalid() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", &format!("---\nid: true\n{CREATED}---\n\nbody\n")));
    assert_skipped(&t, &bad, Some(2), "id");
}

#[test]
fn id_quoted_string_is_invalid() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", &format!("---\nid: '57'\n{CREATED}---\n\nbody\n")));
    assert_skipped(&t, &bad, Some(2), "integer");
    assert!(!t.ids().contains(&57));
}

#[test]
fn negative_id_is_invalid() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", &format!("---\nid: -3\n{CREATED}---\n\nbody\n")));
    assert_skipped(&t, &bad, Some(2), "non-negative");
}

#[test]
fn tags_not_a_list() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", &format!("---\nid: 3\n{CREATED}tags: python\n---\n\nbody\n")));
    assert_skipped(&t, &bad, Some(4), "list");
}

#[test]
fn naive_created() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", "---\nid: 3\ncreated: 2026-01-01T00:00:00\n---\n\nbody\n"));
    assert_skipped(&t, &bad, Some(3), "offset");
}

#[test]
fn garbage_after_created() {
    let (t, bad) =
        env_with(|t| t.mem_file("003-bad.md", "---\nid: 3\ncreated: '2026-01-01T00:00:00garbage'\n---\n\nbody\n"));
    assert_skipped(&t, &bad, Some(3), "created");
}

#[test]
fn garbage_created() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", "---\nid: 3\ncreated: last tuesday\n---\n\nbody\n"));
    assert_skipped(&t, &bad, Some(3), "created");
}

#[test]
fn date_only_created() {
    let (t, bad) = env_with(|t| t.mem_file("003-bad.md", "---\nid: 3\ncreated: 2026-01-01\n---\n\nbody\n"));
    assert_skipped(&t, &bad, Some(3), "date");
}

#[test]
fn impossible_date_created() {
    let (t, bad) =
        env_with(|t| t.mem_file("003-bad.md", "---\nid: 3\ncreated: '2026-02-30T10:00:00+00:00'\n---\n\nbody\n"));
    assert_skipped(&t, &bad, Some(3), "created");
}

#[test]
fn naive_updated() {
    let (t, bad) = env_with(|t| {
        t.mem_file("003-bad.md", &format!("---\nid: 3\n{CREATED}updated: 2026-01-02T00:00:00\n---\n\nbody\n"))
    });
    assert_skipped(&t, &bad, Some(4), "offset");
}

#[test]
fn deeply_nested_yaml() {
    let (t, bad) = env_with(|t| {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        t.mem_file("003-bad.md", &format!("---\nid: 3\n{CREATED}custom: {deep}\n---\n\nbody\n"))
    });
    assert_skipped(&t, &bad, None, "");
}

#[test]
fn crlf_and_bom_files_are_valid() {
    let t = TestEnv::pinned();
    let text = format!("---\nid: 1\n{CREATED}tags:\n- a\n---\n\nCRLF body\nsecond line\n").replace('\n', "\r\n");
    t.mem_file("001-crlf.md", &text);
    t.mem_file("002-bom.md", &format!("\u{feff}---\nid: 2\n{CREATED}---\n\nBOM body\n"));
    t.write_bytes(
        ".co-cli/knowledge/memories/003-both.md",
        format!("\u{feff}---\r\nid: 3\r\n{}---\r\n\r\nboth\r\n", CREATED.replace('\n', "\r\n")).as_bytes(),
    );
    t.mem_file("004-dots.md", &format!("---\nid: 4\n{CREATED}...\n\ndots closing line\n"));
    let run = t.kb(&["check"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(t.ids(), [1, 2, 3, 4]);
    let m = t.show(1);
    assert_eq!((m["content"].as_str(), m["tags"].clone()), (Some("CRLF body\nsecond line"), serde_json::json!(["a"])));
    assert_eq!(t.show(2)["content"], "BOM body");
    assert_eq!(t.show(3)["content"], "both");
    assert_eq!(t.show(4)["content"], "dots closing line");
    let run = t.kb(&["list"]).ok();
    assert!(run.stderr.is_empty(), "{run:?}");
    assert!(!run.stdout.contains('\r'), "{run:?}");
    assert_eq!(t.kb(&["--json", "recall", "body"]).ok().json()["count"], 2);
}

#[test]
fn a_crlf_memory_can_be_consolidated() {
    let t = TestEnv::pinned();
    t.mem_file(
        "001-crlf.md",
        &format!("---\nid: 1\ncreated: '{}'\ntags:\n- a\n---\n\nI prefer TypeScript\n", days_ago(1.0))
            .replace('\n', "\r\n"),
    );
    let out = t.kb(&["--json", "save", "I prefer typescript", "-t", "b"]).ok().json();
    assert_eq!(out["action"], "consolidated");
    let m = t.show(1);
    assert_eq!(
        (m["content"].as_str(), m["tags"].clone()),
        (Some("I prefer typescript"), serde_json::json!(["a", "b"]))
    );
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn non_md_and_hidden_files_are_ignored() {
    let t = TestEnv::pinned();
    t.memory(1, "valid", &days_ago(1.0), &[]);
    t.mem_file("README.txt", "not a memory");
    t.mem_file("002-x.md.bak", "---\nid: 2\n---\n");
    t.mem_file(".003-hidden.md", "garbage");
    t.mem_file("sub/004-nested.md", &format!("---\nid: 4\n{CREATED}---\n\nnested\n"));
    let run = t.kb(&["--json", "list"]).ok();
    assert_eq!(run.json()["count"], 1);
    assert!(run.stderr.is_empty(), "{run:?}");
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn save_is_not_disturbed_by_files_that_crash_co_cli() {
    // In co-cli a naive `created` or trailing garbage passes validation, then makes its save raise.
    let t = TestEnv::pinned();
    t.mem_file("001-naive.md", "---\nid: 1\ncreated: 2026-11-21T00:00:00\n---\n\nI prefer TypeScript\n");
    t.mem_file("002-garbage.md", "---\nid: 2\ncreated: '2026-11-21T00:00:00garbage'\n---\n\nI prefer TypeScript\n");
    let out = t.kb(&["--json", "save", "I prefer TypeScript"]).ok().json();
    assert_eq!(out["action"], "saved");
    // Ids 1 and 2 are written in files kb cannot read: they are not reused (as after a merge).
    assert_eq!(out["memory_id"], 3);
    // The new file gets a name that does not collide with the invalid one.
    assert_eq!(t.memory_files().len(), 3);
}

#[test]
fn bidi_and_control_characters_in_memories_do_not_break_output() {
    let t = TestEnv::pinned();
    t.mem_file(
        "001-x.md",
        &format!("---\nid: 1\n{CREATED}tags:\n- \"\\e[31mred\"\n---\n\nbell \u{7} esc \u{1b}[2J rtl \u{202e}abc\n"),
    );
    let v = t.show(1);
    assert_eq!(v["content"], "bell \u{7} esc \u{1b}[2J rtl \u{202e}abc");
    t.kb(&["list"]).ok();
    t.kb(&["recall", "bell"]).ok();
}

/// kb never follows a symlink out of the root when writing (docs/safety.md).
#[test]
fn a_memories_folder_linked_outside_the_root_is_never_written() {
    let t = TestEnv::pinned();
    let outside = t.dir.path().join("outside-memories");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(t.root().join(".co-cli/knowledge")).unwrap();
    std::os::unix::fs::symlink(&outside, t.memories()).unwrap();
    let run = t.kb(&["save", "where does this go"]);
    assert!(run.code == 0 || run.code == 1, "{run:?}");
    let written: Vec<_> = std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(written.is_empty(), "kb wrote outside the root through a symlink: {written:?}");
}

#[test]
fn a_cache_folder_linked_outside_the_root_is_never_written() {
    let t = TestEnv::pinned();
    t.memory(1, "a memory", &days_ago(1.0), &[]);
    let outside = t.dir.path().join("outside-cache");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, t.root().join(".co-cli/cache")).unwrap();
    t.kb(&["list"]).ok();
    let run = t.kb(&["save", "another memory"]);
    assert!(run.code == 0 || run.code == 1, "{run:?}");
    let written: Vec<_> = std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(written.is_empty(), "kb wrote outside the root through a symlink: {written:?}");
}

#[test]
fn init_never_writes_through_a_co_cli_link_outside_the_root() {
    let t = TestEnv::pinned();
    let outside = t.dir.path().join("outside-co-cli");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, t.root().join(".co-cli")).unwrap();
    let run = t.kb(&["init"]);
    assert!(run.code == 0 || run.code == 1, "{run:?}");
    let written: Vec<_> = std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(written.is_empty(), "kb wrote outside the root through a symlink: {written:?}");
}

#[test]
fn a_memories_path_that_is_a_file_is_an_error_not_a_panic() {
    let t = TestEnv::pinned();
    t.write(".co-cli/knowledge/memories", "not a folder");
    for args in [&["list"][..], &["recall", "x"], &["save", "x"], &["check"], &["forget", "1"], &["show", "1"]] {
        let run = t.kb(args);
        assert!(run.code == 0 || run.code == 1, "{args:?}: {run:?}");
    }
    assert_eq!(t.read(&t.root().join(".co-cli/knowledge/memories")), "not a folder");
}

#[test]
fn a_fifo_named_like_a_memory_is_skipped_without_blocking() {
    let (t, bad) = env_with(|t| {
        let p = t.memories().join("003-fifo.md");
        let ok = std::process::Command::new("mkfifo").arg(&p).status().map(|s| s.success()).unwrap_or(false);
        assert!(ok, "mkfifo is needed for this test");
        p
    });
    assert_skipped(&t, &bad, None, "regular file");
}
