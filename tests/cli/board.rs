//! The context board (SPEC §12.2): one file per branch, the CLI commands, capacity, counts, the
//! rendering in `kb context --board`.

use crate::common::TestEnv;

fn env() -> TestEnv {
    let t = TestEnv::new();
    std::fs::create_dir_all(t.root().join(".co-cli")).unwrap();
    std::fs::write(t.root().join(".git/HEAD"), "ref: refs/heads/feature/board\n").unwrap();
    t
}

fn board_file(t: &TestEnv, branch: &str) -> std::path::PathBuf {
    t.root().join(".co-cli/state/board").join(format!("{}.json", branch.replace('/', "%2F")))
}

fn items(t: &TestEnv, branch: &str) -> Vec<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(board_file(t, branch)).unwrap()).unwrap()
}

#[test]
fn add_get_list_remove_on_the_current_branch() {
    let t = env();
    let r =
        t.kb(&["--json", "board", "add", "build-recipe", "--description", "How CI builds", "cargo nextest run"]).ok();
    assert_eq!(r.json()["action"], "added");
    let stored = items(&t, "feature/board");
    assert_eq!(stored.len(), 1);
    let item = &stored[0];
    assert_eq!((item["src"].as_str(), item["name"].as_str()), (Some("user"), Some("build-recipe")));
    assert_eq!((item["read_count"].as_u64(), item["count"].as_u64()), (Some(0), Some(0)));
    assert!(item["created"].is_string() && item["updated"].is_string());
    let list = t.kb(&["--json", "board"]).ok().json();
    assert_eq!(list["branch"], "feature/board");
    assert_eq!(list["items"][0]["description"], "How CI builds");
    assert!(list["items"][0].get("content").is_none(), "the list shows metadata only");
    assert_eq!(t.kb(&["board", "get", "build-recipe"]).ok().stdout, "cargo nextest run\n");
    assert_eq!(items(&t, "feature/board")[0]["read_count"], 1);
    // Overwrite keeps one item.
    let r = t.kb(&["--json", "board", "add", "build-recipe", "--description", "How CI builds it", "make ci"]).ok();
    assert_eq!(r.json()["action"], "updated");
    assert_eq!(items(&t, "feature/board").len(), 1);
    // Another branch has its own board.
    t.kb(&["board", "--branch", "main", "add", "other", "--description", "d", "c"]).ok();
    assert_eq!(items(&t, "main").len(), 1);
    assert_eq!(items(&t, "feature/board").len(), 1);
    t.kb(&["board", "remove", "build-recipe"]).ok();
    assert!(items(&t, "feature/board").is_empty());
    t.kb(&["board", "get", "build-recipe"]).err();
    assert_eq!(std::fs::read_to_string(t.root().join(".co-cli/state/.gitignore")).unwrap(), "*\n");
}

#[test]
fn branch_falls_back_to_detached_and_default() {
    let t = env();
    std::fs::write(t.root().join(".git/HEAD"), "4b825dc642cb6eb9a060e54bf8d69288fbee4904\n").unwrap();
    t.kb(&["board", "add", "a", "--description", "d", "c"]).ok();
    assert!(board_file(&t, "detached").exists());
    std::fs::remove_dir_all(t.root().join(".git")).unwrap();
    t.kb(&["board", "add", "b", "--description", "d", "c"]).ok();
    assert!(board_file(&t, "default").exists());
}

#[test]
fn bad_items_are_refused() {
    let t = env();
    t.kb(&["board", "add", "Not_Kebab", "--description", "d", "c"]).err();
    t.kb(&["board", "add", &"a".repeat(65), "--description", "d", "c"]).err();
    t.kb(&["board", "add", "a", "--description", "two\nlines", "c"]).err();
    t.kb(&["board", "add", "a", "--description", &"d".repeat(201), "c"]).err();
    let r = t.kb(&["board", "add", "a", "--description", "d", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"]).err();
    assert!(r.stderr.contains("github"), "{}", r.stderr);
    assert!(!board_file(&t, "feature/board").exists());
    t.kb(&["board", "add", "a", "--description", "d", "--redact", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"])
        .ok();
    assert!(items(&t, "feature/board")[0]["content"].as_str().unwrap().contains("[REDACTED:"));
}

#[test]
fn capacity_is_25_with_a_warning_from_23() {
    let t = env();
    for i in 0..22 {
        let r = t.kb(&["board", "add", &format!("item-{i}"), "--description", "d", "c"]).ok();
        assert!(!r.stderr.contains("prune"), "{}", r.stderr);
    }
    let r = t.kb(&["board", "add", "item-22", "--description", "d", "c"]).ok();
    assert!(r.stderr.contains("prune it to 18 or fewer"), "{}", r.stderr);
    t.kb(&["board", "add", "item-23", "--description", "d", "c"]).ok();
    t.kb(&["board", "add", "item-24", "--description", "d", "c"]).ok();
    let r = t.kb(&["board", "add", "item-25", "--description", "d", "c"]).err();
    assert!(r.stderr.contains("prune first"), "{}", r.stderr);
    // Overwriting an item of a full board is fine.
    t.kb(&["board", "add", "item-3", "--description", "d2", "c2"]).ok();
    assert_eq!(items(&t, "feature/board").len(), 25);
}

#[test]
fn concurrent_adds_lose_nothing_and_never_exceed_25() {
    let t = env();
    for i in 0..20 {
        t.kb(&["board", "add", &format!("base-{i}"), "--description", "d", "c"]).ok();
    }
    let children: Vec<_> = (0..8)
        .map(|i| {
            let mut cmd = t.command(&["board", "add", &format!("new-{i}"), "--description", "d", "c"]);
            cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
            cmd.spawn().unwrap()
        })
        .collect();
    let ok = children.into_iter().map(|mut c| c.wait().unwrap().success()).filter(|s| *s).count();
    let stored = items(&t, "feature/board");
    assert_eq!(ok, 5, "five fit, three are refused");
    assert_eq!(stored.len(), 25);
}

#[test]
fn a_session_start_counts_a_view_and_context_renders_the_board() {
    let t = env();
    t.kb(&["board", "add", "api-notes", "--description", "Where the | routes live", "src/api"]).ok();
    t.kb(&["session", "start", "Work"]).ok();
    assert_eq!(items(&t, "feature/board")[0]["count"], 1);
    let out = t.kb(&["context", "--board"]).ok().stdout;
    assert!(
        out.ends_with(
            "<dynamic_context_board>\n| src | name | description | read_count | count |\n| --- | --- | --- | --- | --- |\n\
             | user | api-notes | Where the \\| routes live | 0 | 1 |\n\n\
             To read an item's full content, call the context_board tool with command \"get\" and the item's src and name.\n\
             </dynamic_context_board>\n"
        ),
        "{out}"
    );
    assert!(!t.kb(&["context"]).ok().stdout.contains("dynamic_context_board"));
}

#[test]
fn a_corrupt_board_is_reported_read_as_empty_and_kept_aside_by_a_write() {
    let t = env();
    let file = board_file(&t, "feature/board");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "[{\"src\":\"user\",\"na").unwrap();
    let r = t.kb(&["board"]).ok();
    assert!(r.stderr.contains("not a board"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "[{\"src\":\"user\",\"na", "a read rewrites nothing");
    let r = t.kb(&["board", "add", "a", "--description", "d", "c"]).ok();
    assert!(r.stderr.contains("kept as"), "{}", r.stderr);
    assert_eq!(items(&t, "feature/board").len(), 1);
    let kept = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(".corrupt-"))
        .count();
    assert_eq!(kept, 1);
}
