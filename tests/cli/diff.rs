//! `kb diff` (docs/diff.md) over real git repositories made in each test: commits, a branch
//! merge, a conflicted working tree, a revision that does not exist.

use crate::common::{TestEnv, assert_same_tree};
use crate::git_native::{commit, git, git_ok, have_git};
use serde_json::Value;

/// A git repository on `main` after `kb init`, with `agents` set and three memories, committed;
/// `None` (the test skips) without git.
fn repo(agents: &str) -> Option<TestEnv> {
    if !have_git() {
        return None;
    }
    let t = TestEnv::pinned();
    git_ok(&t, &["init", "-q", "-b", "main"]);
    t.kb(&["init"]).ok();
    if !agents.is_empty() {
        t.kb(&["config", "set", "agents", agents]).ok();
    }
    for text in ["Use nextest for the tests", "The api service listens on port 8080", "Release from main only"] {
        t.kb(&["save", text]).ok();
    }
    commit(&t, "base");
    Some(t)
}

fn diff_json(t: &TestEnv, args: &[&str]) -> Value {
    let mut all = vec!["--json", "diff"];
    all.extend_from_slice(args);
    t.kb(&all).ok().json()
}

/// The ids of a store's `added`/`removed` items.
fn ids(d: &Value, store: &str, what: &str) -> Vec<Value> {
    d["stores"][store][what].as_array().unwrap().iter().map(|i| i["id"].clone()).collect()
}

/// The changed entry of `id` in `store`.
fn changed<'a>(d: &'a Value, store: &str, id: &Value) -> &'a Value {
    d["stores"][store]["changed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| &c["id"] == id)
        .unwrap_or_else(|| panic!("{id} not changed in {store}: {d:#}"))
}

fn changes(c: &Value) -> Vec<&str> {
    c["changes"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect()
}

fn agent<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["agents"].as_array().unwrap().iter().find(|a| a["name"] == name).unwrap_or_else(|| panic!("no {name}: {d:#}"))
}

#[test]
fn the_working_tree_against_head_shows_a_text_change_an_addition_and_a_removal() {
    let Some(t) = repo("") else { return };
    t.kb(&["update", "1", "Use cargo nextest for all the tests"]).ok();
    t.kb(&["save", "Run clippy before every push"]).ok();
    t.kb(&["forget", "3"]).ok();
    let d = diff_json(&t, &[]);
    assert_eq!(d["base"], "HEAD");
    assert_eq!(d["head"], Value::Null, "the working tree");
    assert_eq!(ids(&d, "md", "added"), vec![serde_json::json!(4)]);
    assert_eq!(ids(&d, "md", "removed"), vec![serde_json::json!(3)]);
    let c = changed(&d, "md", &serde_json::json!(1));
    assert!(changes(c).contains(&"content"), "{c:#}");
    assert_eq!(c["before"]["content"], "Use nextest for the tests");
    assert_eq!(c["after"]["content"], "Use cargo nextest for all the tests");
    assert_eq!(d["stores"]["md"]["changed"].as_array().unwrap().len(), 1, "memory 2 did not change");
    assert_eq!(d["differs"], true);
    let text = t.kb(&["diff"]).ok().stdout;
    assert!(text.contains("+ 4  Run clippy before every push"), "{text}");
    assert!(text.contains("- 3  Release from main only"), "{text}");
    assert!(text.contains("before: Use nextest for the tests"), "{text}");
}

#[test]
fn exit_code_says_whether_anything_differs() {
    let Some(t) = repo("") else { return };
    let same = t.kb(&["diff", "--exit-code"]).ok();
    assert!(same.stdout.contains("No knowledge changes"), "{same:?}");
    t.kb(&["protect", "2"]).ok();
    let r = t.kb(&["diff", "--exit-code"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(!r.stderr.contains("error:"), "a difference is not an error: {r:?}");
    t.kb(&["diff"]).ok();
    commit(&t, "protect");
    t.kb(&["diff", "--exit-code"]).ok();
    // Two revisions, no working tree: the protection is the one change between them.
    let r = t.kb(&["diff", "--exit-code", "main~1", "main"]);
    assert_eq!(r.code, 1, "{r:?}");
}

#[test]
fn a_protection_and_a_type_change_are_named_and_change_what_agents_load() {
    let Some(t) = repo(r#"["claude","codex","windsurf"]"#) else { return };
    t.kb(&["compile"]).ok();
    commit(&t, "compiled");
    t.kb(&["protect", "2"]).ok();
    // A type change by hand: memory 1 becomes core context, which every agent loads.
    let file = t.file_of(1);
    let text = t.read(&file).replacen("id: 1\n", "id: 1\ntype: core_context\n", 1);
    std::fs::write(&file, text).unwrap();
    let d = diff_json(&t, &[]);
    assert_eq!(changes(changed(&d, "md", &serde_json::json!(2))), vec!["protected"]);
    let c = changed(&d, "md", &serde_json::json!(1));
    assert_eq!(changes(c), vec!["type"], "{c:#}");
    assert_eq!(c["before"]["type"], "learning");
    assert_eq!(c["after"]["type"], "core_context");
    for name in ["claude", "codex", "windsurf"] {
        let a = agent(&d, name);
        assert!(a["tokens_after"].as_u64() > a["tokens_before"].as_u64(), "{a:#}");
        assert!(a["added_lines"].as_u64().unwrap() >= 1, "{a:#}");
    }
    let codex = agent(&d, "codex");
    assert_eq!((codex["limit"].as_u64(), codex["limit_unit"].as_str()), (Some(32768), Some("bytes")));
    assert_eq!(codex["file"], "AGENTS.md");
    let windsurf = agent(&d, "windsurf");
    assert_eq!((windsurf["limit"].as_u64(), windsurf["limit_unit"].as_str()), (Some(12000), Some("chars")));
    assert_eq!(agent(&d, "claude")["limit"], Value::Null);
    // Every line the block adds: the Core Context heading and the memory.
    let claude_md = t.kb(&["diff"]).ok().stdout;
    assert!(claude_md.contains("claude (CLAUDE.md)"), "{claude_md}");
}

#[test]
fn a_decision_superseded_between_two_commits_is_a_status_change() {
    let Some(t) = repo(r#"["claude"]"#) else { return };
    t.kb(&["decision", "add", "We store everything in Postgres", "--type", "architectural"]).ok();
    commit(&t, "decision");
    t.kb(&["decision", "supersede", "1", "We store everything in SQLite"]).ok();
    commit(&t, "superseded");
    let d = diff_json(&t, &["main~1", "main"]);
    assert_eq!(d["head"], "main");
    assert!(d["head_commit"].as_str().is_some_and(|c| c.len() == 40), "{d:#}");
    let c = changed(&d, "decision", &serde_json::json!(1));
    assert!(changes(c).contains(&"status") && changes(c).contains(&"superseded_by"), "{c:#}");
    assert_eq!((c["before"]["status"].as_str(), c["after"]["status"].as_str()), (Some("active"), Some("superseded")));
    assert_eq!(ids(&d, "decision", "added"), vec![serde_json::json!(2)]);
    let claude = agent(&d, "claude");
    assert_eq!((claude["added_lines"].as_u64(), claude["removed_lines"].as_u64()), (Some(1), Some(1)), "{claude:#}");
    let md = t.kb(&["diff", "--markdown", "main~1", "main"]).ok().stdout;
    assert!(md.contains("status: active → superseded"), "{md}");
}

#[test]
fn memories_merged_into_one_are_a_consolidation() {
    let Some(t) = repo("") else { return };
    t.kb(&["save", "The api service uses TLS certificates from vault"]).ok();
    commit(&t, "four");
    t.kb(&["save", "--no-dedup", "The api service listens on port 8080 and uses TLS certificates from vault"]).ok();
    t.kb(&["forget", "2"]).ok();
    t.kb(&["forget", "4"]).ok();
    let d = diff_json(&t, &[]);
    let cons = d["stores"]["md"]["consolidated"].as_array().unwrap();
    assert_eq!(cons.len(), 1, "{d:#}");
    assert_eq!(cons[0]["into"], 5);
    assert_eq!(cons[0]["removed"], serde_json::json!([2, 4]));
    // A removal whose words went nowhere is not one.
    t.kb(&["forget", "3"]).ok();
    let d = diff_json(&t, &[]);
    assert_eq!(d["stores"]["md"]["consolidated"][0]["removed"], serde_json::json!([2, 4]), "{d:#}");
    let text = t.kb(&["diff"]).ok().stdout;
    assert!(text.contains("consolidated: 2, 4 → 5"), "{text}");
}

#[test]
fn the_json_items_are_those_kb_show_gives() {
    let Some(t) = repo("") else { return };
    t.kb(&["save", "--store", "copilot", "--subject", "build", "--reason", "CI", "Run make test"]).ok();
    t.write(".github/instructions/api.instructions.md", "---\napplyTo: \"src/api/**\"\n---\nKeep handlers small.\n");
    t.write(
        ".co-cli/knowledge/context.md",
        "---\nversion: 1\nupdated: '2026-11-20T10:00:00+00:00'\n---\n\n# Project\n\nA web service.\n",
    );
    t.kb(&["save", "Deploys go through the staging cluster first"]).ok();
    let d = diff_json(&t, &[]);
    for key in ["base", "head", "base_commit", "head_commit", "stores", "agents", "problems", "differs"] {
        assert!(d.get(key).is_some(), "{key} missing: {d:#}");
    }
    let stores: Vec<&String> = d["stores"].as_object().unwrap().keys().collect();
    assert_eq!(stores.len(), 5);
    for s in ["md", "copilot", "decision", "instructions", "context"] {
        for part in ["added", "removed", "changed", "consolidated"] {
            assert!(d["stores"][s][part].is_array(), "{s}.{part}: {d:#}");
        }
    }
    let added = &d["stores"]["md"]["added"][0];
    assert_eq!(added, &t.show(4), "a memory as kb show --json gives it");
    let record = &d["stores"]["copilot"]["added"][0];
    let id = record["id"].as_str().unwrap();
    let shown = t.kb(&["--json", "show", id]).ok().json();
    assert_eq!(record, &shown, "a record as kb show --json gives it");
    assert_eq!(d["stores"]["instructions"]["added"][0]["id"], ".github/instructions/api.instructions.md");
    assert_eq!(d["stores"]["instructions"]["added"][0]["apply_to"], serde_json::json!(["src/api/**"]));
    // The template `kb init` committed is filled in: a change, from no text.
    let context = &d["stores"]["context"]["changed"][0];
    assert!(context["after"]["content"].as_str().unwrap().contains("A web service."), "{d:#}");
    assert_eq!(context["before"]["content"], "", "{d:#}");
    assert!(d["stores"]["context"]["added"].as_array().unwrap().is_empty(), "{d:#}");
    let plain = &d["agents"][0];
    assert_eq!(plain["name"], ".co-cli/knowledge/compiled.md", "the default target: {d:#}");
    for key in ["tokens_before", "tokens_after", "limit", "limit_unit", "added_lines", "removed_lines"] {
        assert!(plain.get(key).is_some(), "{key}: {plain:#}");
    }
}

#[test]
fn markdown_is_a_pull_request_comment_that_item_text_cannot_break() {
    let Some(t) = repo(r#"["codex"]"#) else { return };
    t.kb(&["save", "--type", "core_context", "Never write <!-- comments --> or | pipes into a table"]).ok();
    let md = t.kb(&["diff", "--markdown"]).ok().stdout;
    assert!(md.starts_with("### Knowledge changes: `HEAD`"), "{md}");
    assert!(md.contains("| agent | file | tokens | lines | size (limit) |"), "{md}");
    assert!(md.contains("| codex | AGENTS.md |"), "{md}");
    assert!(md.contains("of 32,768 bytes"), "{md}");
    assert!(md.contains("**Memories**: 1 added"), "{md}");
    assert!(md.contains("&lt;!-- comments --&gt; or \\| pipes"), "{md}");
    assert!(!md.contains("<!--"), "no HTML comment from an item reaches the comment: {md}");
}

#[test]
fn a_revision_that_does_not_exist_is_a_clear_error_and_nothing_is_written() {
    let Some(t) = repo("") else { return };
    let before = t.snapshot();
    let r = t.kb(&["diff", "no-such-branch"]).err();
    assert!(r.stderr.contains("no-such-branch"), "{r:?}");
    assert!(r.stdout.is_empty(), "{r:?}");
    let r = t.kb(&["--json", "diff", "HEAD", "no-such-tag"]).err();
    assert!(r.stderr.contains("no-such-tag"), "{r:?}");
    assert_eq!(r.json()["error"]["kind"], "not_found", "{r:?}");
    t.kb(&["diff", "--output=/tmp/x"]).usage();
    let j = t.kb(&["--json", "diff", "--", "--output=/tmp/x"]).err();
    assert!(j.json()["error"]["message"].as_str().unwrap().contains("--output=/tmp/x"), "{j:?}");
    assert_same_tree(&before, &t.snapshot());
    // Outside git: an error that says kb diff compares git revisions.
    let plain = TestEnv::pinned();
    plain.kb(&["init"]).ok();
    let r = plain.kb(&["diff"]).err();
    assert!(r.stderr.contains("git"), "{r:?}");
    assert_eq!(plain.kb(&["--json", "diff"]).err().json()["error"]["kind"], "invalid");
}

#[test]
fn bad_settings_in_the_working_tree_are_a_problem_of_the_head_side_and_never_stop_two_revisions() {
    let Some(t) = repo("") else { return };
    t.kb(&["save", "Tags are signed"]).ok();
    commit(&t, "second");
    t.write(".co-cli/settings.json", "{\"agents\": [\"claude\",}\n");
    let d = diff_json(&t, &["HEAD~1", "HEAD"]);
    assert_eq!(ids(&d, "md", "added"), vec![serde_json::json!(4)], "{d:#}");
    assert!(d["problems"].as_array().unwrap().is_empty(), "the working tree is not read: {d:#}");
    let r = t.kb(&["--json", "diff", "HEAD", "no-such-tag"]).err();
    assert_eq!(r.json()["error"]["kind"], "not_found", "the revision is the error: {r:?}");
    let d = diff_json(&t, &[]);
    let problems = d["problems"].as_array().unwrap();
    let p = problems.iter().find(|p| p["side"] == "head" && p["path"] == ".co-cli/settings.json");
    assert!(p.is_some(), "{d:#}");
    assert!(p.unwrap()["message"].as_str().unwrap().contains("read without it"), "{d:#}");
}

#[test]
fn a_conflicted_memory_in_the_working_tree_is_a_problem_of_the_head_side() {
    let Some(t) = repo("") else { return };
    git_ok(&t, &["checkout", "-q", "-b", "feature"]);
    t.kb(&["update", "2", "The api service listens on port 9090"]).ok();
    commit(&t, "feature");
    git_ok(&t, &["checkout", "-q", "main"]);
    t.kb(&["update", "2", "The api service listens on port 7070"]).ok();
    commit(&t, "main");
    let merge = git(&t, &["merge", "-q", "feature"]);
    assert!(!merge.status.success(), "the merge conflicts");
    assert!(t.read(&t.file_of(2)).contains("<<<<<<<"));
    let d = diff_json(&t, &[]);
    let problems = d["problems"].as_array().unwrap();
    let p = problems
        .iter()
        .find(|p| p["side"] == "head" && p["path"].as_str().unwrap().starts_with(".co-cli/knowledge/memories/002-"))
        .unwrap_or_else(|| panic!("the conflicted file is a problem: {d:#}"));
    assert!(!p["message"].as_str().unwrap().is_empty());
    assert!(problems.iter().all(|p| p["side"] == "head"), "the base parses: {d:#}");
    // With the clock pinned both sides wrote the same frontmatter: the markers are in the body,
    // which parses; the memory is changed, and left out of every block (the problem says so).
    let removed = ids(&d, "md", "removed");
    let changed_ids: Vec<Value> =
        d["stores"]["md"]["changed"].as_array().unwrap().iter().map(|c| c["id"].clone()).collect();
    assert!(removed.contains(&serde_json::json!(2)) || changed_ids.contains(&serde_json::json!(2)), "{d:#}");
    let text = t.kb(&["diff"]).ok().stdout;
    assert!(text.contains("Problems:") && text.contains("head: .co-cli/knowledge/memories/002-"), "{text}");
}

#[test]
fn a_merge_commit_against_its_first_parent_shows_what_the_branch_brought() {
    let Some(t) = repo(r#"["claude"]"#) else { return };
    git_ok(&t, &["checkout", "-q", "-b", "feature"]);
    t.kb(&["save", "--type", "core_context", "The feature flag service lives in flags/"]).ok();
    t.kb(&["decision", "add", "Feature flags default to off", "--type", "scope"]).ok();
    commit(&t, "feature");
    git_ok(&t, &["checkout", "-q", "main"]);
    t.kb(&["update", "1", "Use cargo nextest for the tests"]).ok();
    commit(&t, "main");
    git_ok(&t, &["merge", "-q", "--no-edit", "feature"]);
    let d = diff_json(&t, &["main^1", "main"]);
    assert_eq!(ids(&d, "md", "added"), vec![serde_json::json!(4)], "{d:#}");
    assert_eq!(ids(&d, "decision", "added"), vec![serde_json::json!(1)]);
    assert!(d["stores"]["md"]["changed"].as_array().unwrap().is_empty(), "main's own change is in both");
    let claude = agent(&d, "claude");
    assert!(claude["added_lines"].as_u64().unwrap() >= 4, "decisions and core context: {claude:#}");
    assert_eq!(claude["removed_lines"], 0);
    assert!(t.kb(&["diff", "main^2", "main"]).ok().stdout.contains("~ 1"), "against the branch: main's change");
}

#[test]
fn a_committed_file_that_does_not_parse_is_a_problem_of_its_side() {
    let Some(t) = repo("") else { return };
    t.mem_file("009-broken.md", "---\nid: [unclosed\n---\n\nbroken\n");
    t.write(".co-cli/settings.json", "{\"agents\": [\"claude\",}\n");
    commit(&t, "broken");
    std::fs::remove_file(t.memories().join("009-broken.md")).unwrap();
    t.write(".co-cli/settings.json", "{}\n");
    let d = diff_json(&t, &[]);
    let problems = d["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p["side"] == "base" && p["path"] == ".co-cli/knowledge/memories/009-broken.md"),
        "{d:#}"
    );
    let settings = problems.iter().find(|p| p["side"] == "base" && p["path"] == ".co-cli/settings.json");
    let message = settings.unwrap_or_else(|| panic!("{d:#}"))["message"].as_str().unwrap();
    assert!(
        !message.contains("kb-diff-") && !message.contains(".co-cli/settings.json"),
        "said once, in path: {message}"
    );
    assert_eq!(settings.unwrap()["line"], 1);
    assert!(problems.iter().all(|p| p["side"] == "base"), "{d:#}");
}

#[test]
fn this_clones_heat_is_not_a_difference() {
    let Some(t) = repo("") else { return };
    t.kb(&["config", "set", "context_targets", r#"[{"path": ".co-cli/knowledge/compiled.md", "hot": true}]"#]).ok();
    commit(&t, "a hot target");
    for _ in 0..3 {
        t.kb(&["show", "1"]).ok();
        t.kb(&["recall", "nextest"]).ok();
    }
    assert!(t.kb(&["context"]).ok().stdout.contains("Hot Memories"), "memory 1 is hot here");
    let r = t.kb(&["diff", "--exit-code"]);
    assert_eq!(r.code, 0, "heat is local, not a change: {r:?}");
}

#[test]
fn a_memory_file_renamed_or_copied_with_the_same_bytes_is_still_a_change() {
    let Some(t) = repo("") else { return };
    let (first, second) = (t.file_of(1), t.file_of(2));
    std::fs::rename(&second, second.with_file_name("002-renamed.md")).unwrap();
    // The same bytes under a second name: the same blob at two paths of one tree.
    std::fs::copy(&first, t.memories().join("009-copy.md")).unwrap();
    let check = |d: &Value| {
        let c = changed(d, "md", &serde_json::json!(2));
        assert_eq!(changes(c), vec!["file"], "{c:#}");
        assert!(c["after"]["path"].as_str().unwrap().ends_with("002-renamed.md"), "{c:#}");
        let added = &d["stores"]["md"]["added"];
        assert_eq!(added.as_array().unwrap().len(), 1, "{d:#}");
        assert_eq!(
            (added[0]["id"].as_u64(), added[0]["content"].as_str()),
            (Some(1), Some("Use nextest for the tests"))
        );
        assert!(added[0]["path"].as_str().unwrap().ends_with("009-copy.md"), "{d:#}");
        assert!(ids(d, "md", "removed").is_empty(), "{d:#}");
        assert_eq!(d["stores"]["md"]["changed"].as_array().unwrap().len(), 1, "memories 1 and 3 are the same: {d:#}");
    };
    check(&diff_json(&t, &[]));
    commit(&t, "renamed and copied");
    check(&diff_json(&t, &["main~1", "main"]));
    // Back again: the copy removed, the file renamed back, each side's bytes its own.
    let d = diff_json(&t, &["main", "main~1"]);
    assert_eq!(changes(changed(&d, "md", &serde_json::json!(2))), vec!["file"], "{d:#}");
    assert_eq!(ids(&d, "md", "removed"), vec![serde_json::json!(1)], "{d:#}");
}

#[test]
fn the_memories_the_same_on_both_sides_are_still_in_every_block() {
    let Some(t) = repo(r#"["claude","codex"]"#) else { return };
    t.kb(&["save", "--type", "core_context", "The service is written in Rust"]).ok();
    commit(&t, "core context");
    t.kb(&["decision", "add", "Errors name the file and the line", "--type", "architectural"]).ok();
    let check = |d: &Value| {
        for part in ["added", "removed", "changed"] {
            assert!(d["stores"]["md"][part].as_array().unwrap().is_empty(), "no memory changed: {d:#}");
        }
        assert_eq!(ids(d, "decision", "added"), vec![serde_json::json!(1)], "{d:#}");
        for name in ["claude", "codex"] {
            let a = agent(d, name);
            assert_eq!(a["removed_lines"], 0, "the unchanged core context is in both blocks: {a:#}");
            assert!(a["added_lines"].as_u64().unwrap() >= 1, "{a:#}");
            assert!(a["tokens_after"].as_u64() > a["tokens_before"].as_u64(), "{a:#}");
        }
    };
    check(&diff_json(&t, &[]));
    commit(&t, "decision");
    check(&diff_json(&t, &["main~1", "main"]));
    // The core context memory is in the blocks of both sides: against a commit without it, the
    // blocks lose it.
    let d = diff_json(&t, &["main", "main~2"]);
    assert_eq!(ids(&d, "md", "removed"), vec![serde_json::json!(4)], "{d:#}");
    assert!(agent(&d, "claude")["removed_lines"].as_u64().unwrap() >= 2, "{d:#}");
}

#[test]
fn codexs_size_is_all_of_agents_md_as_kb_agents_counts_it() {
    let Some(t) = repo(r#"["codex"]"#) else { return };
    t.kb(&["compile"]).ok();
    let agents_md = t.root().join("AGENTS.md");
    let human = format!("# Working here\n\n{}\n", "Run the linters before a push. ".repeat(700));
    let compiled = t.read(&agents_md);
    std::fs::write(&agents_md, format!("{human}\n{compiled}")).unwrap();
    commit(&t, "a long AGENTS.md");
    t.kb(&["save", "--type", "core_context", "The api lives in services/api"]).ok();
    let d = diff_json(&t, &[]);
    let codex = agent(&d, "codex");
    let whole = t.read(&agents_md).len() as u64;
    assert!(codex["size_before"].as_u64().unwrap() >= whole, "all of AGENTS.md: {codex:#}");
    assert!(codex["size_after"].as_u64().unwrap() > codex["size_before"].as_u64().unwrap(), "{codex:#}");
    assert_eq!(codex["limit"], 32768);
    let listed = t.kb(&["--json", "agents"]).ok().json();
    let file = &listed["agents"][0]["files"][0];
    assert_eq!(file["bytes"].as_u64(), codex["size_before"].as_u64(), "as kb agents counts it: {listed:#}");
}

#[test]
fn duplicate_ids_a_merge_leaves_are_problems_of_that_side_as_kb_check_reports_them() {
    let Some(t) = repo("") else { return };
    git_ok(&t, &["checkout", "-q", "-b", "feature"]);
    t.kb(&["save", "The feature flag service lives in flags/"]).ok();
    commit(&t, "feature");
    git_ok(&t, &["checkout", "-q", "main"]);
    t.kb(&["save", "Releases are tagged vMAJOR.MINOR.PATCH"]).ok();
    commit(&t, "main");
    git_ok(&t, &["merge", "-q", "--no-edit", "feature"]);
    let check = t.kb(&["--json", "check"]).json();
    let checked: Vec<&Value> = check["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["message"].as_str().unwrap().contains("duplicate id 4"))
        .collect();
    assert_eq!(checked.len(), 2, "{check:#}");
    let d = diff_json(&t, &["main^1", "main"]);
    let dups: Vec<&Value> = d["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["side"] == "head" && p["message"].as_str().unwrap().contains("duplicate id 4"))
        .collect();
    assert_eq!(dups.len(), 2, "each file that claims id 4: {d:#}");
    assert!(dups.iter().all(|p| p["path"].as_str().unwrap().starts_with(".co-cli/knowledge/memories/004-")), "{d:#}");
    assert!(d["problems"].as_array().unwrap().iter().all(|p| p["side"] == "head"), "the base has none: {d:#}");
}

#[test]
fn a_kb_root_in_a_subfolder_of_the_repository_is_diffed_from_its_own_files() {
    if !have_git() {
        return;
    }
    let t = TestEnv::pinned();
    git_ok(&t, &["init", "-q", "-b", "main"]);
    let run = t.kb(&["--json", "diff"]).err();
    assert!(run.stderr.contains("no commit yet"), "{run:?}");
    // The kb root is `svc/` of the repository; the top holds kb files of its own, not read.
    let svc = t.root().join("svc");
    let svc_root = svc.to_str().unwrap();
    std::fs::create_dir_all(&svc).unwrap();
    t.kb(&["--root", svc_root, "init"]).ok();
    t.kb(&["--root", svc_root, "save", "The svc service listens on port 8080"]).ok();
    t.kb(&["init"]).ok();
    t.kb(&["save", "A memory of the top folder"]).ok();
    commit(&t, "base");
    t.kb(&["--root", svc_root, "save", "The svc service is deployed by Argo"]).ok();
    let d = t.kb(&["--root", svc_root, "--json", "diff"]).ok().json();
    assert_eq!(ids(&d, "md", "added"), vec![serde_json::json!(2)], "{d:#}");
    assert!(d["stores"]["md"]["removed"].as_array().unwrap().is_empty(), "{d:#}");
    assert!(d["stores"]["md"]["changed"].as_array().unwrap().is_empty(), "{d:#}");
    assert!(d["problems"].as_array().unwrap().is_empty(), "{d:#}");
    commit(&t, "second");
    let d = t.kb(&["--root", svc_root, "--json", "diff", "HEAD~1", "HEAD"]).ok().json();
    assert_eq!(ids(&d, "md", "added"), vec![serde_json::json!(2)], "{d:#}");
}

#[test]
fn a_bad_line_of_the_records_file_is_one_problem() {
    let Some(t) = repo("") else { return };
    t.kb(&["save", "--store", "copilot", "--subject", "build", "--reason", "CI", "Run make test"]).ok();
    let file = t.root().join(".github/copilot-memories.jsonl");
    let text = t.read(&file);
    std::fs::write(&file, format!("{text}{{not json\n")).unwrap();
    let d = diff_json(&t, &[]);
    let problems: Vec<&Value> =
        d["problems"].as_array().unwrap().iter().filter(|p| p["path"] == ".github/copilot-memories.jsonl").collect();
    assert_eq!(problems.len(), 1, "{d:#}");
    assert_eq!(problems[0]["line"], 2, "{d:#}");
}

#[test]
fn an_agents_file_kb_cannot_read_is_a_problem_of_its_side() {
    let Some(t) = repo(r#"["codex"]"#) else { return };
    let agents_md = t.root().join("AGENTS.md");
    let _ = std::fs::remove_file(&agents_md);
    let made = std::process::Command::new("mkfifo").arg(&agents_md).status().map(|s| s.success()).unwrap_or(false);
    assert!(made, "mkfifo is needed for this test");
    let run = crate::common::kb_within(&t, &["--json", "diff"], std::time::Duration::from_secs(10));
    assert_eq!(run.code, 0, "{run:?}");
    let d = run.json();
    let p = d["problems"].as_array().unwrap().iter().find(|p| p["path"] == "AGENTS.md" && p["side"] == "head").cloned();
    assert!(p.is_some(), "{d:#}");
}
