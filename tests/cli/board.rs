//! The context board (docs/behaviour.md): one file per branch, the CLI commands, capacity, counts,
//! the rendering in `kb context --board`.

use crate::common::{TestEnv, assert_same_tree};

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

/// A board item as the board file stores it.
fn stored(src: &str, name: &str, content: &str) -> serde_json::Value {
    serde_json::json!({"src": src, "name": name, "description": format!("the {src} {name}"), "content": content,
        "read_count": 0, "count": 0, "created": "2026-11-01T00:00:00+00:00", "updated": "2026-11-01T00:00:00+00:00"})
}

/// Writes a board file by hand.
fn write_board(t: &TestEnv, branch: &str, items: &[serde_json::Value]) -> std::path::PathBuf {
    let file = board_file(t, branch);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, serde_json::to_string_pretty(items).unwrap()).unwrap();
    file
}

#[test]
fn the_branch_flag_works_for_every_board_command() {
    let t = env();
    t.kb(&["board", "--branch", "release/1.0", "add", "notes", "--description", "d", "release notes"]).ok();
    assert_eq!(items(&t, "release/1.0").len(), 1);
    assert!(!board_file(&t, "feature/board").exists(), "the checked-out branch's board is not touched");
    let list = t.kb(&["--json", "board", "--branch", "release/1.0"]).ok().json();
    assert_eq!((list["branch"].as_str(), list["items"][0]["name"].as_str()), (Some("release/1.0"), Some("notes")));
    assert_eq!(t.kb(&["--json", "board"]).ok().json()["items"], serde_json::json!([]));
    assert_eq!(t.kb(&["board", "--branch", "release/1.0", "get", "notes"]).ok().stdout, "release notes\n");
    assert_eq!(items(&t, "release/1.0")[0]["read_count"], 1);
    t.kb(&["board", "get", "notes"]).err();
    t.kb(&["board", "remove", "notes"]).err();
    t.kb(&["board", "--branch", "release/1.0", "remove", "notes"]).ok();
    assert!(items(&t, "release/1.0").is_empty());
}

#[test]
fn src_tells_a_user_item_from_an_agent_item_of_the_same_name() {
    let t = env();
    write_board(&t, "feature/board", &[stored("agent", "notes", "the agent's text")]);
    // The CLI is a person: its add makes a user item and leaves the agent's alone.
    let r = t.kb(&["--json", "board", "add", "notes", "--description", "mine", "my text"]).ok().json();
    assert_eq!((r["action"].as_str(), r["src"].as_str()), (Some("added"), Some("user")));
    let now = items(&t, "feature/board");
    assert_eq!(now.len(), 2);
    assert_eq!(now[0], stored("agent", "notes", "the agent's text"));
    assert_eq!((now[1]["src"].as_str(), now[1]["content"].as_str()), (Some("user"), Some("my text")));
    // Two items of one name: --src chooses, and only that item's read is counted.
    let r = t.kb(&["board", "get", "notes"]).err();
    assert!(r.stderr.contains("--src"), "{r:?}");
    assert_eq!(t.kb(&["board", "get", "notes", "--src", "agent"]).ok().stdout, "the agent's text\n");
    assert_eq!(t.kb(&["board", "get", "notes", "--src", "user"]).ok().stdout, "my text\n");
    assert_eq!(t.kb(&["board", "get", "notes", "--src", "user"]).ok().stdout, "my text\n");
    let now = items(&t, "feature/board");
    assert_eq!((now[0]["read_count"].as_u64(), now[1]["read_count"].as_u64()), (Some(1), Some(2)));
    // A person removes any item, an agent's too.
    let r = t.kb(&["--json", "board", "remove", "notes", "--src", "agent"]).ok().json();
    assert_eq!(r, serde_json::json!({"removed": "notes", "src": "agent"}));
    let now = items(&t, "feature/board");
    assert_eq!((now.len(), now[0]["src"].as_str()), (1, Some("user")));
}

#[test]
fn add_takes_the_content_from_stdin_with_a_dash() {
    let t = env();
    t.kb_stdin(&["board", "add", "recipe", "--description", "d", "-"], Some("cargo build\ncargo nextest run\n")).ok();
    assert_eq!(t.kb(&["board", "get", "recipe"]).ok().stdout, "cargo build\ncargo nextest run\n");
}

#[test]
fn names_and_descriptions_at_their_limits_are_accepted() {
    let t = env();
    let name = format!("{}-{}", "a".repeat(40), "b".repeat(23));
    assert_eq!(name.len(), 64);
    t.kb(&["board", "add", &name, "--description", &"d".repeat(200), "c"]).ok();
    // Characters, not bytes.
    t.kb(&["board", "add", "accents", "--description", &"é".repeat(200), "c"]).ok();
    t.kb(&["board", "add", "more-accents", "--description", &"é".repeat(201), "c"]).err();
    t.kb(&["board", "add", "x", "--description", "d", "c"]).ok();
    for bad in ["a--b", "a-", "a_b", "a b", "Ab", "a/b", ""] {
        t.kb(&["board", "add", bad, "--description", "d", "c"]).err();
    }
    let names: Vec<String> =
        items(&t, "feature/board").iter().map(|i| i["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, [name.as_str(), "accents", "x"]);
}

#[test]
fn a_secret_in_the_description_is_refused_or_redacted() {
    let t = env();
    let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let r = t.kb(&["board", "add", "a", "--description", &format!("token {token}"), "c"]).err();
    assert!(r.stderr.contains("description") && r.stderr.contains("github"), "{r:?}");
    assert!(!board_file(&t, "feature/board").exists());
    let r = t.kb(&["--json", "board", "add", "a", "--description", &format!("token {token}"), "--redact", "c"]).ok();
    assert_eq!(r.json()["redacted"], serde_json::json!(["github-pat"]));
    let item = &items(&t, "feature/board")[0];
    assert_eq!(item["description"], "token [REDACTED:github-pat]");
}

#[test]
fn a_secret_in_the_name_is_refused() {
    // The secret filter applies to every field of a board item. A Slack bot token is kebab-case.
    let t = env();
    let token = "xoxb-123456789012-123456789012-abcdefghijklmnopqrstuvwx";
    // `kb save` refuses the same text.
    t.kb(&["save", token]).err();
    let r = t.kb(&["board", "add", token, "--description", "d", "c"]).err();
    assert!(r.stderr.contains("slack"), "{r:?}");
    assert!(!board_file(&t, "feature/board").exists());
    // A redacted name would no longer be a name: refused with --redact too, without advice to use it.
    let r = t.kb(&["board", "add", token, "--description", "d", "--redact", "c"]).err();
    assert!(r.stderr.contains("slack") && !r.stderr.contains("use --redact"), "{r:?}");
    assert!(!board_file(&t, "feature/board").exists());
}

#[test]
fn every_add_from_23_items_on_warns_and_the_26th_changes_nothing() {
    let t = env();
    let base: Vec<serde_json::Value> = (0..22).map(|i| stored("user", &format!("item-{i}"), "c")).collect();
    let file = write_board(&t, "feature/board", &base);
    for (i, n) in (22..25).zip(23..=25) {
        let r = t.kb(&["board", "add", &format!("item-{i}"), "--description", "d", "c"]).ok();
        assert!(r.stderr.contains(&format!("the board holds {n} of 25 items: prune it to 18 or fewer")), "{r:?}");
    }
    let full = std::fs::read(&file).unwrap();
    let r = t.kb(&["--json", "board", "add", "item-25", "--description", "d", "c"]).err();
    assert!(r.stderr.contains("prune first"), "{r:?}");
    assert_eq!(std::fs::read(&file).unwrap(), full);
}

#[test]
fn a_session_start_counts_a_view_of_every_item() {
    let t = env();
    write_board(
        &t,
        "feature/board",
        &[stored("user", "one", "c"), stored("agent", "two", "c"), stored("agent", "three", "c")],
    );
    t.kb(&["session", "start", "First"]).ok();
    let counts =
        |t: &TestEnv| -> Vec<u64> { items(t, "feature/board").iter().map(|i| i["count"].as_u64().unwrap()).collect() };
    assert_eq!(counts(&t), [1, 1, 1]);
    t.kb(&["session", "end"]).ok();
    assert_eq!(counts(&t), [1, 1, 1], "only a start counts");
    t.kb(&["session", "start", "Second"]).ok();
    assert_eq!(counts(&t), [2, 2, 2]);
    // Reading items counts reads, not views.
    t.kb(&["board", "get", "one"]).ok();
    assert_eq!(counts(&t), [2, 2, 2]);
}

#[test]
fn reads_never_write_a_board_file() {
    let t = env();
    write_board(&t, "feature/board", &[stored("user", "one", "c"), stored("agent", "two", "c")]);
    let before = t.snapshot();
    t.kb(&["board"]).ok();
    t.kb(&["--json", "board"]).ok();
    t.kb(&["board", "--branch", "elsewhere"]).ok();
    assert!(t.kb(&["context", "--board"]).ok().stdout.contains("| agent | two |"));
    t.kb(&["--json", "context", "--board"]).ok();
    t.kb(&["consolidate", "--dry-run"]).ok();
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn a_write_replaces_the_board_file_whole() {
    // Atomic (docs/safety.md): a new file renamed over the old one, never the old one edited in
    // place, and no temporary file left next to it.
    use std::os::unix::fs::MetadataExt;
    let t = env();
    let file = write_board(&t, "feature/board", &[stored("user", "one", "c")]);
    let ino = std::fs::metadata(&file).unwrap().ino();
    t.kb(&["board", "add", "two", "--description", "d", "c"]).ok();
    assert_ne!(std::fs::metadata(&file).unwrap().ino(), ino);
    let ino = std::fs::metadata(&file).unwrap().ino();
    t.kb(&["board", "get", "one"]).ok();
    assert_ne!(std::fs::metadata(&file).unwrap().ino(), ino);
    let names: Vec<String> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["feature%2Fboard.json"]);
}

#[test]
fn eight_concurrent_adds_to_an_empty_board_all_land() {
    let t = env();
    let children: Vec<_> = (0..8)
        .map(|i| {
            let mut cmd = t.command(&["board", "add", &format!("item-{i}"), "--description", "d", &format!("c{i}")]);
            cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
            cmd.spawn().unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let mut names: Vec<String> = items(&t, "feature/board")
        .iter()
        .map(|i| format!("{}={}", i["name"].as_str().unwrap(), i["content"].as_str().unwrap()))
        .collect();
    names.sort();
    assert_eq!(names, (0..8).map(|i| format!("item-{i}=c{i}")).collect::<Vec<_>>());
}

#[test]
fn the_list_shows_src_name_description_reads_and_views() {
    let t = env();
    let mut agent = stored("agent", "two", "secret-free content");
    agent["read_count"] = 4.into();
    agent["count"] = 2.into();
    write_board(&t, "feature/board", &[stored("user", "one", "c"), agent]);
    let text = t.kb(&["board"]).ok().stdout;
    assert_eq!(
        text,
        "Context board of branch feature/board (2/25 items):\n\nuser  one (read 0, seen 0): the user one\nagent two (read 4, seen 2): the agent two\n"
    );
    assert!(!text.contains("content"), "the list shows no content");
    let v = t.kb(&["--json", "board"]).ok().json();
    let mut keys: Vec<&String> = v["items"][1].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["count", "created", "description", "name", "read_count", "src", "updated"]);
    assert_eq!((v["items"][1]["read_count"].as_u64(), v["items"][1]["count"].as_u64()), (Some(4), Some(2)));
    assert_eq!(t.kb(&["board", "--branch", "empty"]).ok().stdout, "The context board of branch empty is empty.\n");
}

#[test]
fn a_long_branch_name_gets_a_bounded_board_file() {
    // git allows a branch name longer than a file name may be (255 bytes).
    let t = env();
    let long = format!("feature/{}", "very-long-branch-name-".repeat(14));
    assert!(long.len() > 300);
    std::fs::write(t.root().join(".git/HEAD"), format!("ref: refs/heads/{long}\n")).unwrap();
    t.kb(&["board", "add", "a", "--description", "d", "c"]).ok();
    let list = t.kb(&["--json", "board"]).ok().json();
    assert_eq!((list["branch"].as_str(), list["items"].as_array().map(Vec::len)), (Some(long.as_str()), Some(1)));
    assert_eq!(t.kb(&["board", "get", "a"]).ok().stdout, "c\n");
    let names: Vec<String> = std::fs::read_dir(t.root().join(".co-cli/state/board"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1);
    assert!(names[0].len() <= 200, "{}", names[0]);
    // Another long name with the same beginning has a board of its own.
    let twin = format!("{long}-2");
    t.kb(&["board", "--branch", &twin, "add", "b", "--description", "d", "c"]).ok();
    assert_eq!(std::fs::read_dir(t.root().join(".co-cli/state/board")).unwrap().count(), 2);
}

#[test]
fn add_without_a_description_takes_the_contents_first_line() {
    let t = env();
    t.kb(&["board", "add", "build-recipe", "cargo nextest run --workspace\nthen cargo clippy"]).ok();
    let item = &items(&t, "feature/board")[0];
    assert_eq!(item["description"], "cargo nextest run --workspace");
    let long = "x".repeat(300);
    t.kb(&["board", "add", "long", &format!("\n  {long}\n")]).ok();
    let description = items(&t, "feature/board")[1]["description"].as_str().unwrap().to_string();
    assert!(description.ends_with("...") && description.chars().count() == 200, "{description}");
    // Blank content still has no description to take: refused as before.
    t.kb(&["board", "add", "blank", " "]).err();
}
