//! `kb forget` (by frontmatter id, not by file name as co-cli does) and `kb protect` / `kb
//! unprotect` (only `decay_protected` changes; the body and every other byte stay).

use crate::common::*;
use serde_json::json;

const CO_CLI_FILE: &str = "---\nauto_category: preference\ncreated: '2026-11-22T14:27:04.330453+00:00'\nid: 1\nsource: detected\ntags:\n- preference\n- python\n---\n\nUser prefers pytest over unittest\n";

#[test]
fn forget_by_frontmatter_id_not_file_name() {
    let t = TestEnv::pinned();
    let weird = t.mem_file("weird.md", &format!("---\ncreated: '{}'\nid: 6\n---\n\nnamed oddly\n", days_ago(1.0)));
    let five = t.mem_file("005-five.md", &format!("---\ncreated: '{}'\nid: 5\n---\n\nfive\n", days_ago(1.0)));
    let other = t.mem_file("0005-other.md", &format!("---\ncreated: '{}'\nid: 50\n---\n\nfifty\n", days_ago(1.0)));
    let run = t.kb(&["forget", "5"]).ok();
    assert_eq!(run.stdout.trim_end(), "✓ Deleted memory 5: 005-five.md");
    assert!(!five.exists() && other.exists());
    let v = t.kb(&["--json", "forget", "6"]).ok().json();
    assert_eq!(v, json!({"deleted": 6, "path": weird.display().to_string(), "store": "md"}));
    assert!(!weird.exists());
    assert_eq!(t.ids(), [50]);
}

#[test]
fn forget_a_missing_id_changes_nothing() {
    let t = TestEnv::pinned();
    t.memory(1, "one", &days_ago(1.0), &[]);
    let before = t.snapshot();
    let run = t.kb(&["forget", "9"]).err();
    assert!(run.stderr.contains("memory 9 not found"), "{run:?}");
    t.kb(&["forget", "nine"]).err();
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn forget_never_deletes_an_invalid_file() {
    let t = TestEnv::pinned();
    let bad = t.mem_file("004-bad.md", "---\nid: 4\ncreated: not a date\n---\n\nbad\n");
    t.kb(&["forget", "4"]).err();
    assert!(bad.exists());
}

#[test]
fn forget_a_protected_memory() {
    let t = TestEnv::pinned();
    let p = t.protected_memory(2, "protected", &days_ago(1.0));
    t.kb(&["forget", "2"]).ok();
    assert!(!p.exists());
}

#[test]
fn forget_without_a_memories_folder() {
    let t = TestEnv::pinned();
    let run = t.kb(&["forget", "1"]).err();
    assert!(run.stderr.contains("not found"), "{run:?}");
}

#[test]
fn forget_a_symlinked_memory_removes_the_link_only() {
    let t = TestEnv::pinned();
    let target = t.write("notes/shared.md", &format!("---\ncreated: '{}'\nid: 8\n---\n\nshared note\n", days_ago(1.0)));
    std::fs::create_dir_all(t.memories()).unwrap();
    std::os::unix::fs::symlink(&target, t.memories().join("008-shared.md")).unwrap();
    assert_eq!(t.show(8)["content"], "shared note");
    t.kb(&["forget", "8"]).ok();
    assert!(target.exists());
    assert!(std::fs::symlink_metadata(t.memories().join("008-shared.md")).is_err());
}

#[test]
fn protect_adds_one_line_and_unprotect_restores_the_bytes() {
    let t = TestEnv::pinned();
    let p = t.mem_file("001-user-prefers-pytest-over-unittest.md", CO_CLI_FILE);
    let run = t.kb(&["protect", "1"]).ok();
    assert_eq!(run.stdout.trim_end(), "✓ Protected memory 1: 001-user-prefers-pytest-over-unittest.md");
    assert_eq!(t.read(&p), CO_CLI_FILE.replace("id: 1\n", "decay_protected: true\nid: 1\n"));
    assert_eq!(t.show(1)["decay_protected"], true);
    let run = t.kb(&["unprotect", "1"]).ok();
    assert_eq!(run.stdout.trim_end(), "✓ Unprotected memory 1: 001-user-prefers-pytest-over-unittest.md");
    assert_eq!(t.read(&p), CO_CLI_FILE);
}

#[test]
fn protect_json_shape() {
    let t = TestEnv::pinned();
    let p = t.mem_file("001-x.md", CO_CLI_FILE);
    let v = t.kb(&["--json", "protect", "1"]).ok().json();
    assert_eq!((v["id"].as_u64(), v["decay_protected"].as_bool()), (Some(1), Some(true)));
    assert_eq!(v["path"], p.display().to_string());
    let v = t.kb(&["--json", "unprotect", "1"]).ok().json();
    assert_eq!((v["id"].as_u64(), v["decay_protected"].as_bool()), (Some(1), Some(false)));
}

#[test]
fn protect_twice_and_unprotect_unprotected_write_nothing() {
    let t = TestEnv::pinned();
    t.mem_file("001-x.md", CO_CLI_FILE);
    t.kb(&["unprotect", "1"]).ok();
    t.kb(&["protect", "1"]).ok();
    let before = t.snapshot();
    t.kb(&["protect", "1"]).ok();
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn protect_keeps_the_body_bytes_and_unknown_keys() {
    let t = TestEnv::pinned();
    let yaml = "auto_category: null\ncreated: 2026-11-20T10:00:00Z\ncustom: {a: 1}\nid: 4\nlist:\n  - one\n  - two\nnote: \"yes\"\ntags: []\n";
    let body = "\n\n  indented first line  \n\ttab line\n\n\n";
    let p = t.mem_file("004-x.md", &format!("---\n{yaml}---{body}"));
    t.kb(&["protect", "4"]).ok();
    let text = t.read(&p);
    assert_eq!(text, format!("---\n{}---{body}", yaml.replace("id: 4\n", "decay_protected: true\nid: 4\n")));
    t.kb(&["unprotect", "4"]).ok();
    assert_eq!(t.read(&p), format!("---\n{yaml}---{body}"));
}

#[test]
fn protect_a_body_without_trailing_newline() {
    let t = TestEnv::pinned();
    let original = "---\ncreated: '2026-11-20T10:00:00+00:00'\nid: 4\n---\nno newline at the end";
    let p = t.mem_file("004-x.md", original);
    t.kb(&["protect", "4"]).ok();
    assert_eq!(
        t.read(&p),
        "---\ncreated: '2026-11-20T10:00:00+00:00'\ndecay_protected: true\nid: 4\n---\nno newline at the end"
    );
}

#[test]
fn protect_a_crlf_file_keeps_crlf() {
    let t = TestEnv::pinned();
    let original = CO_CLI_FILE.replace('\n', "\r\n");
    let p = t.mem_file("001-x.md", &original);
    t.kb(&["protect", "1"]).ok();
    assert_eq!(t.read(&p), original.replace("id: 1\r\n", "decay_protected: true\r\nid: 1\r\n"));
    assert_eq!(t.show(1)["decay_protected"], true);
}

#[test]
fn protect_a_bom_file_with_dots_closing_line() {
    let t = TestEnv::pinned();
    let original = "\u{feff}---\ncreated: '2026-11-20T10:00:00+00:00'\nid: 4\n...\n\nbody\n";
    let p = t.mem_file("004-x.md", original);
    t.kb(&["protect", "4"]).ok();
    assert_eq!(t.read(&p), original.replace("id: 4\n", "decay_protected: true\nid: 4\n"));
    assert_eq!(t.show(4)["decay_protected"], true);
}

#[test]
fn protect_changes_only_decay_protected_in_hand_ordered_frontmatter() {
    let t = TestEnv::pinned();
    let original = "---\nid: 4\ncreated: '2026-11-20T10:00:00+00:00'\ntags: [a, b]\n---\n\nhand written\n";
    let p = t.mem_file("004-x.md", original);
    t.kb(&["protect", "4"]).ok();
    let text = t.read(&p);
    let removed: Vec<&str> = original.lines().filter(|l| !text.lines().any(|m| m == *l)).collect();
    let added: Vec<&str> = text.lines().filter(|l| !original.lines().any(|m| m == *l)).collect();
    assert_eq!((removed, added), (vec![], vec!["decay_protected: true"]), "{text}");
    t.kb(&["unprotect", "4"]).ok();
    assert_eq!(t.read(&p), original, "unprotect did not restore the hand-written file");
}

#[test]
fn protect_keeps_a_leading_comment() {
    let t = TestEnv::pinned();
    let original = "---\n# keep this comment\ncreated: '2026-11-20T10:00:00+00:00'\nid: 4\n---\n\nbody\n";
    let p = t.mem_file("004-x.md", original);
    t.kb(&["protect", "4"]).ok();
    assert!(t.read(&p).contains("# keep this comment\n"), "{}", t.read(&p));
}

#[test]
fn protect_replaces_a_false_flag() {
    let t = TestEnv::pinned();
    let original = "---\ncreated: '2026-11-20T10:00:00+00:00'\ndecay_protected: false\nid: 4\n---\n\nbody\n";
    let p = t.mem_file("004-x.md", original);
    t.kb(&["protect", "4"]).ok();
    assert_eq!(t.read(&p), original.replace("decay_protected: false", "decay_protected: true"));
    assert_eq!(t.show(4)["decay_protected"], true);
}

#[test]
fn protect_keeps_the_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let t = TestEnv::pinned();
    let p = t.mem_file("001-x.md", CO_CLI_FILE);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    t.kb(&["protect", "1"]).ok();
    assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o640);
}

#[test]
fn protect_missing_or_invalid_or_duplicate() {
    let t = TestEnv::pinned();
    t.mem_file("004-bad.md", "---\nid: 4\ncreated: not a date\n---\n\nbad\n");
    t.mem_file("005-a.md", &format!("---\ncreated: '{}'\nid: 5\n---\n\na\n", days_ago(1.0)));
    t.mem_file("005-b.md", &format!("---\ncreated: '{}'\nid: 5\n---\n\nb\n", days_ago(1.0)));
    let before = t.snapshot();
    t.kb(&["protect", "9"]).err();
    t.kb(&["protect", "4"]).err();
    let run = t.kb(&["protect", "5"]).err();
    assert!(run.stderr.contains("005-a.md") && run.stderr.contains("005-b.md"), "{run:?}");
    t.kb(&["unprotect", "5"]).err();
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn protected_memory_survives_decay_after_protect_command() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10");
    let mut rng = Rng::new(99);
    for id in 1..=10 {
        t.memory(id, &sentence(&mut rng, 8), &days_ago(60.0 - id as f64), &[]);
    }
    t.kb(&["protect", "1"]).ok();
    assert_eq!(t.kb(&["--json", "save", "new text to trigger decay"]).ok().json()["decayed"], 2);
    let ids = t.ids();
    assert!(ids.contains(&1) && !ids.contains(&2) && !ids.contains(&3), "{ids:?}");
}

#[test]
fn protect_through_a_symlink_never_replaces_the_link() {
    let t = TestEnv::pinned();
    let target = t.write("notes/shared.md", CO_CLI_FILE);
    std::fs::create_dir_all(t.memories()).unwrap();
    let link = t.memories().join("001-shared.md");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let run = t.kb(&["protect", "1"]);
    assert!(run.code == 0 || run.code == 1, "{run:?}");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced by a file");
    let text = t.read(&target);
    assert!(text == CO_CLI_FILE || text.contains("decay_protected: true"), "{text}");
}

#[test]
fn protect_keeps_a_file_with_anchors_readable() {
    let t = TestEnv::pinned();
    t.mem_file(
        "001-a.md",
        "---\nid: 1\ncreated: '2026-11-20T00:00:00+00:00'\nzz_defaults: &d {lang: en}\naa_settings: *d\n---\n\nanchored\n",
    );
    assert_eq!(t.ids(), [1]);
    t.kb(&["protect", "1"]).ok();
    assert_eq!(t.ids(), [1], "protect made the memory unreadable: {:?}", t.kb(&["check"]));
}
