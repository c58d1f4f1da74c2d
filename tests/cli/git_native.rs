//! Git-native repositories (docs/safety.md, git merges), with real `git`: two branches save, then
//! merge. `kb check` reports conflict markers (each marker line once) and duplicate ids with path
//! and line; `kb check --fix` makes its three repairs and changes nothing else; `kb init` writes
//! the `merge=union` attribute and the `.co-cli/state/` ignore line once; a merge never makes a
//! save reuse an id, even one only written in a file with conflict markers.
//!
//! Each test skips, with a note, when `git` is not installed.

use crate::common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The clock of the branch whose saves are older.
const EARLY: &str = "2026-11-20T09:00:00+00:00";
/// The clock of the branch whose saves are newer.
const LATE: &str = "2026-11-21T09:00:00+00:00";

const JSONL: &str = ".github/copilot-memories.jsonl";

/// Returns whether `git` runs here; skips the test visibly (fails it on CI) when it does not.
pub(crate) fn have_git() -> bool {
    let ok = Command::new("git").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        crate::common::skip("git is not installed (these tests merge real branches)");
    }
    ok
}

/// Runs git in the test repository with a config of its own (no system or user settings).
pub(crate) fn git(t: &TestEnv, args: &[&str]) -> Output {
    Command::new("git")
        .args(args)
        .current_dir(t.root())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", t.home())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "kb test")
        .env("GIT_AUTHOR_EMAIL", "kb@example.com")
        .env("GIT_COMMITTER_NAME", "kb test")
        .env("GIT_COMMITTER_EMAIL", "kb@example.com")
        .env("LC_ALL", "C")
        .output()
        .expect("run git")
}

/// Runs git and asserts it succeeded; returns its stdout.
pub(crate) fn git_ok(t: &TestEnv, args: &[&str]) -> String {
    let out = git(t, args);
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Commits everything on the current branch.
pub(crate) fn commit(t: &TestEnv, message: &str) {
    git_ok(t, &["add", "-A"]);
    git_ok(t, &["commit", "-q", "--allow-empty", "-m", message]);
}

/// A git repository on `main` after `kb init`, committed; `None` (the test skips) without git.
fn repo() -> Option<TestEnv> {
    if !have_git() {
        return None;
    }
    let t = TestEnv::pinned();
    git_ok(&t, &["init", "-q", "-b", "main"]);
    t.kb(&["init"]).ok();
    Some(t)
}

/// Runs kb at the clock `now`.
fn kb_at(t: &TestEnv, now: &str, args: &[&str]) -> Run {
    let mut cmd = t.command(args);
    cmd.env("KB_NOW", now);
    run_command(cmd, None)
}

/// Runs `work` on a new branch `feature` (committed), then `other` on `main` (committed), then
/// merges `feature` into `main`. Returns whether the merge was clean.
fn two_branches(t: &TestEnv, work: impl FnOnce(&TestEnv), other: impl FnOnce(&TestEnv)) -> bool {
    commit(t, "base");
    git_ok(t, &["checkout", "-q", "-b", "feature"]);
    work(t);
    commit(t, "feature");
    git_ok(t, &["checkout", "-q", "main"]);
    other(t);
    commit(t, "main");
    git(t, &["merge", "-q", "--no-edit", "feature"]).status.success()
}

/// Returns `kb --json check` (with `extra` arguments) and its problems as (path, line, message).
fn check(t: &TestEnv, extra: &[&str]) -> (Run, Vec<(String, Option<u64>, String)>) {
    let mut args = vec!["--json", "check"];
    args.extend(extra);
    let run = t.kb(&args);
    let problems = listed(&run.json()["problems"]);
    (run, problems)
}

/// Returns a JSON list of `{"path","line","message"}` as tuples.
fn listed(v: &Value) -> Vec<(String, Option<u64>, String)> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|p| {
            (p["path"].as_str().unwrap().to_string(), p["line"].as_u64(), p["message"].as_str().unwrap().to_string())
        })
        .collect()
}

/// Returns the absolute path of `rel` under the root, as kb's JSON shows it.
fn abs(t: &TestEnv, rel: &str) -> String {
    t.root().join(rel).display().to_string()
}

/// Returns the 1-based lines of `text` that are git conflict markers, found independently of kb.
fn marker_lines(text: &str) -> BTreeSet<u64> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("<<<<<<< ") || *l == "=======" || l.starts_with(">>>>>>> "))
        .map(|(i, _)| i as u64 + 1)
        .collect()
}

/// Returns the files git left unmerged, relative to the root.
fn unmerged(t: &TestEnv) -> Vec<String> {
    git_ok(t, &["diff", "--name-only", "--diff-filter=U"]).lines().map(String::from).collect()
}

/// Returns the memory files' names and the decision files' names.
fn names_in(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    out.retain(|n| n.ends_with(".md"));
    out.sort();
    out
}

/// The first 50 characters of a text both branches save, so both files get one name.
const SHARED_START: &str = "Deploys go through the staging cluster first, always";

#[test]
fn conflict_markers_in_every_kind_of_file_are_reported_once_per_line() {
    let Some(t) = repo() else { return };
    // Without the union attribute the JSONL file conflicts too.
    std::fs::remove_file(t.root().join(".gitattributes")).unwrap();
    t.kb(&["save", "A memory whose body both branches edit"]).ok();
    let side = |t: &TestEnv, name: &str, now: &str| {
        kb_at(t, now, &["save", &format!("{SHARED_START}, said {name}")]).ok();
        kb_at(t, now, &["decision", "add", &format!("{SHARED_START} ({name})"), "--type", "process"]).ok();
        kb_at(t, now, &["session", "start", &format!("the {name} focus")]).ok();
        kb_at(t, now, &["config", "set", "memory_max_count", if name == "main" { "60" } else { "50" }]).ok();
        kb_at(t, now, &["save", "--store", "copilot", "--subject", name, "--citation", "a.rs", "--reason", "r", name])
            .ok();
        let first = t.memories().join(&names_in(&t.memories())[0]);
        let text = t.read(&first).replace("both branches edit", &format!("the {name} branch edits"));
        std::fs::write(&first, text).unwrap();
        let context = t.root().join(".co-cli/knowledge/context.md");
        std::fs::write(&context, format!("{}\nThe {name} line.\n", t.read(&context))).unwrap();
        t.write(".github/instructions/api.instructions.md", &format!("---\napplyTo: '**'\n---\n{name} rule\n"));
    };
    let clean = two_branches(&t, |t| side(t, "feature", EARLY), |t| side(t, "main", LATE));
    assert!(!clean, "the merge must conflict");
    let conflicted = unmerged(&t);
    let kinds = [
        ".co-cli/settings.json",
        ".co-cli/knowledge/context.md",
        ".co-cli/knowledge/session.md",
        JSONL,
        ".github/instructions/api.instructions.md",
    ];
    for kind in kinds {
        assert!(conflicted.iter().any(|c| c == kind), "{kind} should conflict: {conflicted:?}");
    }
    // Two memories (one with markers only in its body, one in its frontmatter) and a decision.
    assert_eq!(conflicted.iter().filter(|c| c.contains("/memories/")).count(), 2, "{conflicted:?}");
    assert_eq!(conflicted.iter().filter(|c| c.contains("/decisions/")).count(), 1, "{conflicted:?}");

    let (run, problems) = check(&t, &[]);
    assert_eq!(run.code, 1, "{run:?}");
    let text_run = t.kb(&["check"]);
    let mut total = 0;
    for rel in &conflicted {
        let want = marker_lines(&t.read(&t.root().join(rel)));
        assert!(want.len() >= 3, "{rel}: {want:?}");
        let got: Vec<&(String, Option<u64>, String)> = problems.iter().filter(|p| p.0 == abs(&t, rel)).collect();
        let lines: Vec<u64> = got.iter().map(|p| p.1.unwrap_or_else(|| panic!("{rel}: no line: {got:?}"))).collect();
        // Each marker line once, and nothing else of a file that is one conflict.
        assert_eq!(lines.iter().copied().collect::<BTreeSet<u64>>(), want, "{rel}: {got:#?}");
        assert_eq!(lines.len(), want.len(), "{rel}: a line reported twice: {got:#?}");
        for p in &got {
            assert!(p.2.contains("conflict marker"), "{rel}: {p:?}");
            assert!(text_run.stdout.contains(&format!("{rel}:{}: ", p.1.unwrap())), "{rel}: {text_run:?}");
        }
        total += want.len();
    }
    assert_eq!(problems.len(), total, "only the markers: {problems:#?}");
    // --fix has nothing it may repair here: not a byte changes.
    let before = t.snapshot();
    let (run, _) = check(&t, &["--fix"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["fixed"], serde_json::json!([]));
    assert_same_tree(&before, &t.snapshot());
    // With the settings resolved, a read skips the memory whose frontmatter conflicts and keeps
    // the one whose markers are in its body (its text shows the conflict).
    git_ok(&t, &["checkout", "--theirs", "--", ".co-cli/settings.json"]);
    let listed = t.kb(&["--json", "list", "--store", "md"]).ok();
    assert_eq!(listed.json()["count"], 1, "{listed:?}");
    assert!(listed.stderr.contains("warning"), "{listed:?}");
}

#[test]
fn duplicate_ids_in_every_store_are_reported_with_path_and_line() {
    let Some(t) = repo() else { return };
    t.kb(&[
        "save",
        "--store",
        "copilot",
        "--subject",
        "build",
        "--citation",
        "Makefile:1",
        "--reason",
        "r",
        "Run make",
    ])
    .ok();
    let id =
        t.kb(&["--json", "list", "--store", "copilot"]).ok().json()["memories"][0]["id"].as_str().unwrap().to_string();
    let side = |t: &TestEnv, name: &str| {
        t.kb(&["save", &format!("The {name} branch memory")]).ok();
        t.kb(&["decision", "add", &format!("The {name} branch decision"), "--type", "scope"]).ok();
        t.kb(&["vote", &id, if name == "main" { "up" } else { "down" }, "--reason", name]).ok();
    };
    assert!(two_branches(&t, |t| side(t, "feature"), |t| side(t, "main")), "a clean merge");
    let (run, problems) = check(&t, &[]);
    assert_eq!(run.code, 1);
    let of = |rel: &str| -> Vec<(Option<u64>, String)> {
        problems.iter().filter(|p| p.0 == abs(&t, rel)).map(|p| (p.1, p.2.clone())).collect()
    };
    for (dir, message) in [("memories", "duplicate id 1: also used by"), ("decisions", "duplicate decision id 1")] {
        let names = names_in(&t.root().join(".co-cli/knowledge").join(dir));
        assert_eq!(names.len(), 2, "{names:?}");
        for name in &names {
            let rel = format!(".co-cli/knowledge/{dir}/{name}");
            let found = of(&rel);
            assert_eq!(found.len(), 1, "{rel}: {problems:#?}");
            // The line of the `id:` entry.
            let id_line = t.read(&t.root().join(&rel)).lines().position(|l| l.starts_with("id:")).unwrap() as u64 + 1;
            assert_eq!(found[0].0, Some(id_line), "{rel}");
            assert!(found[0].1.starts_with(message), "{rel}: {found:?}");
        }
    }
    // The vote on each branch changed the record's line: the union merge keeps both lines.
    let records = of(JSONL);
    assert_eq!(records.len(), 2, "{problems:#?}");
    assert_eq!(records[0].0, Some(1));
    assert!(records[0].1.starts_with(&format!("duplicate id {id}: also on line 2")), "{records:?}");
    assert_eq!(records[1].0, Some(2));
    assert_eq!(problems.len(), 6, "{problems:#?}");
}

/// Returns every file under the root but `.git/`, the cache and the local state, with its bytes.
fn files(t: &TestEnv) -> BTreeMap<String, Vec<u8>> {
    t.snapshot()
        .into_iter()
        .filter(|(k, _)| !k.starts_with(".git/") && k != ".git")
        // The undo journal is local state: a repair's entry is not a change to the repository.
        .filter(|(k, _)| !k.starts_with(".co-cli/state/"))
        .filter_map(|(k, e)| if let Entry::File { bytes, .. } = e { Some((k, bytes)) } else { None })
        .collect()
}

#[test]
fn fix_gives_the_newer_memory_the_next_free_id_and_renames_it() {
    let Some(t) = repo() else { return };
    t.kb(&["save", "The base memory"]).ok();
    // The newer memory's name sorts first: age, not name, decides.
    let clean = two_branches(
        &t,
        |t| {
            kb_at(t, EARLY, &["save", "Zebra crossings are the older memory"]).ok();
            kb_at(t, EARLY, &["save", "Yet another older memory of the feature branch"]).ok();
        },
        |t| {
            kb_at(t, LATE, &["save", "Apples are the newer memory"]).ok();
        },
    );
    assert!(clean);
    let dir = ".co-cli/knowledge/memories";
    assert_eq!(
        names_in(&t.memories()),
        [
            "001-the-base-memory.md",
            "002-apples-are-the-newer-memory.md",
            "002-zebra-crossings-are-the-older-memory.md",
            "003-yet-another-older-memory-of-the-feature-branch.md"
        ]
    );
    let before = files(&t);
    let snapshot = t.snapshot();
    let (run, problems) = check(&t, &["--fix"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(problems.is_empty(), "{problems:#?}");
    let fixed = listed(&run.json()["fixed"]);
    let new_rel = format!("{dir}/004-apples-are-the-newer-memory.md");
    assert_eq!(fixed.len(), 1, "{fixed:#?}");
    assert_eq!((fixed[0].0.as_str(), fixed[0].1), (abs(&t, &new_rel).as_str(), Some(4)));
    assert!(fixed[0].2.contains("id 4") && fixed[0].2.contains("002-apples-are-the-newer-memory.md"), "{fixed:?}");
    // Byte for byte: the one file renamed, its `id` line changed, nothing else anywhere.
    let after = files(&t);
    let mut want = before.clone();
    let old = want.remove(&format!("{dir}/002-apples-are-the-newer-memory.md")).unwrap();
    let old = String::from_utf8(old).unwrap();
    assert_eq!(old.matches("\nid: 2\n").count(), 1);
    want.insert(new_rel.clone(), old.replacen("\nid: 2\n", "\nid: 4\n", 1).into_bytes());
    assert_eq!(after, want);
    let now = t.snapshot();
    for (path, entry) in &snapshot {
        if !path.contains("apples") {
            assert_eq!(now.get(path), Some(entry), "{path} changed");
        }
    }
    assert_eq!(t.show(4)["content"], "Apples are the newer memory");
    assert_eq!(t.show(2)["content"], "Zebra crossings are the older memory");
    // The text form names the repair; a second fix changes nothing.
    let snapshot = t.snapshot();
    let run = t.kb(&["check", "--fix"]).ok();
    assert!(run.stdout.contains("Nothing to repair."), "{run:?}");
    assert_same_tree(&snapshot, &t.snapshot());
    assert_eq!(t.kb(&["--json", "check", "--fix"]).ok().json()["fixed"], serde_json::json!([]));
    // A save after the fix takes the next id.
    assert_eq!(t.kb(&["--json", "save", "After the fix"]).ok().json()["memory_id"], 5);
}

#[test]
fn fix_text_output_names_each_repair() {
    let Some(t) = repo() else { return };
    assert!(two_branches(
        &t,
        |t| {
            kb_at(t, EARLY, &["save", "First branch memory"]).ok();
        },
        |t| {
            kb_at(t, LATE, &["save", "Second branch memory"]).ok();
        }
    ));
    let run = t.kb(&["check", "--fix"]).ok();
    let line = run.stdout.lines().find(|l| l.contains("Fixed")).unwrap_or_else(|| panic!("{run:?}"));
    assert!(line.contains(".co-cli/knowledge/memories/002-second-branch-memory.md:4: duplicate id 1"), "{line}");
    assert!(run.stdout.contains("no problems"), "{run:?}");
}

/// Saves a Copilot record at the pinned clock.
fn record(t: &TestEnv, subject: &str, citation: &str, fact: &str) {
    t.kb(&["save", "--store", "copilot", "--subject", subject, "--citation", citation, "--reason", "r", fact]).ok();
}

#[test]
fn fix_removes_a_line_a_union_merge_repeated_and_merges_records_that_share_an_id() {
    let Some(t) = repo() else { return };
    record(&t, "base", "c0.rs", "The base record about deploys");
    let id =
        t.kb(&["--json", "list", "--store", "copilot"]).ok().json()["memories"][0]["id"].as_str().unwrap().to_string();
    // Each branch adds the same record between records of its own (so the union merge keeps
    // both copies), consolidates the base record with a citation of its own, and votes on it.
    let side = |t: &TestEnv, mine: &str, last: &str, cite: &str, vote: &str, votes: usize| {
        record(t, mine, "a.rs", &format!("The {mine} fact"));
        record(t, "common", "x.rs", "The shared fact both branches add");
        record(t, last, "b.rs", &format!("The {last} fact"));
        record(t, "base", cite, "The base record about deploys");
        for _ in 0..votes {
            t.kb(&["vote", &id, vote, "--reason", mine]).ok();
        }
    };
    let clean = two_branches(
        &t,
        |t| side(t, "alpha", "gamma", "c1.rs", "up", 1),
        |t| side(t, "beta", "delta", "c2.rs", "down", 2),
    );
    assert!(clean, "the union merge needs no resolution");
    let merged = t.read(&t.root().join(JSONL));
    let lines: Vec<&str> = merged.lines().collect();
    assert_eq!(lines.len(), 8, "{merged}");
    let parse = |l: &str| serde_json::from_str::<Value>(l).unwrap();
    let copies: Vec<usize> = (0..8).filter(|&i| lines[i].contains("The shared fact")).collect();
    assert_eq!(copies.len(), 2);
    assert_eq!(lines[copies[0]], lines[copies[1]], "byte-identical copies");
    let of_id: Vec<usize> = (0..8).filter(|&i| parse(lines[i])["id"] == id.as_str()).collect();
    assert_eq!(of_id.len(), 2, "{merged}");
    let (first, later) = (of_id[0], of_id[1]);
    assert_eq!(parse(lines[first])["citations"], serde_json::json!(["c0.rs", "c2.rs"]));
    assert_eq!(parse(lines[later])["citations"], serde_json::json!(["c0.rs", "c1.rs"]));

    let before = files(&t);
    let (run, problems) = check(&t, &["--fix"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(problems.is_empty(), "{problems:#?}");
    let fixed = listed(&run.json()["fixed"]);
    assert_eq!(fixed.len(), 2, "{fixed:#?}");
    let jsonl = abs(&t, JSONL);
    assert_eq!((fixed[0].0.as_str(), fixed[0].1), (jsonl.as_str(), Some(first as u64 + 1)));
    assert!(fixed[0].2.starts_with("merged the records of id"), "{fixed:?}");
    assert_eq!((fixed[1].0.as_str(), fixed[1].1), (jsonl.as_str(), Some(copies[1] as u64 + 1)));
    assert!(fixed[1].2.starts_with(&format!("removed this line: a copy of line {}", copies[0] + 1)), "{fixed:?}");

    // The merged record: the later line's fields, citations united in order, the larger
    // counts, in the place of the first line; every other line keeps its bytes.
    let mut want_record = parse(lines[later]);
    want_record["citations"] = serde_json::json!(["c0.rs", "c2.rs", "c1.rs"]);
    want_record["votes"] = serde_json::json!({"up": 1, "down": 2});
    let after = t.read(&t.root().join(JSONL));
    let after_lines: Vec<&str> = after.lines().collect();
    let mut want_lines: Vec<&str> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if i != later && i != copies[1] {
            want_lines.push(l);
        }
    }
    assert_eq!(after_lines.len(), want_lines.len(), "{after}");
    for (i, (got, want)) in after_lines.iter().zip(&want_lines).enumerate() {
        if i == first {
            assert_eq!(parse(got), want_record, "{got}");
        } else {
            assert_eq!(got, want, "line {}", i + 1);
        }
    }
    assert!(after.ends_with('\n'));
    let mut others = files(&t);
    let mut was = before;
    others.remove(JSONL);
    was.remove(JSONL);
    assert_eq!(others, was, "only the JSONL file changed");
    // The record reads as one; a second fix changes nothing.
    assert_eq!(t.kb(&["--json", "show", &id]).ok().json()["votes"], serde_json::json!({"up": 1, "down": 2}));
    let snapshot = t.snapshot();
    assert_eq!(t.kb(&["--json", "check", "--fix"]).ok().json()["fixed"], serde_json::json!([]));
    assert_same_tree(&snapshot, &t.snapshot());
}

#[test]
fn ids_are_never_reused_after_a_merge_with_a_conflicted_file() {
    let Some(t) = repo() else { return };
    t.kb(&["save", "The base memory"]).ok();
    t.kb(&["decision", "add", "The base decision", "--type", "scope"]).ok();
    // Each branch saves memory 2 (its own name) and memory 3 (one name, different created
    // times: a conflict in the frontmatter), and decision 2 (one name: a conflict too).
    let side = |t: &TestEnv, name: &str, now: &str| {
        kb_at(t, now, &["save", &format!("The {name} memory two")]).ok();
        kb_at(t, now, &["save", &format!("{SHARED_START}, on {name}")]).ok();
        kb_at(t, now, &["decision", "add", &format!("{SHARED_START}: {name}"), "--type", "process"]).ok();
    };
    assert!(!two_branches(&t, |t| side(t, "feature", EARLY), |t| side(t, "main", LATE)));
    let conflicted = unmerged(&t);
    assert_eq!(conflicted.len(), 2, "{conflicted:?}");
    let memory = conflicted.iter().find(|c| c.contains("/memories/003-")).expect("memory 3 conflicts");
    let decision = conflicted.iter().find(|c| c.contains("/decisions/002-")).expect("decision 2 conflicts");
    for rel in [memory, decision] {
        let text = t.read(&t.root().join(rel));
        assert!(marker_lines(&text).len() >= 3, "{text}");
    }
    // Neither conflicted file is readable: the valid ones end at id 2 (memories) and 1
    // (decisions), but the conflicted files hold 3 and 2.
    assert_eq!(t.ids(), [1, 2, 2]);
    t.kb(&["list"]).ok();
    let saved = t.kb(&["--json", "save", "A memory saved after the merge"]).ok().json();
    assert_eq!(saved["memory_id"], 4, "{saved}");
    let added = t.kb(&["--json", "decision", "add", "A decision made after the merge", "--type", "scope"]).ok().json();
    assert_eq!(added["decision_id"], 3, "{added}");
    // --fix gives the newer memory 2 the next free id, 5, and leaves the conflicts alone.
    let (run, problems) = check(&t, &["--fix"]);
    assert_eq!(run.code, 1);
    let fixed = listed(&run.json()["fixed"]);
    assert_eq!(fixed.len(), 1, "{fixed:#?}");
    assert_eq!(fixed[0].0, abs(&t, ".co-cli/knowledge/memories/005-the-main-memory-two.md"));
    for (path, line, message) in &problems {
        assert!(path == &abs(&t, memory) || path == &abs(&t, decision), "{path}: {message}");
        assert!(message.contains("conflict marker"), "{path}:{line:?}: {message}");
    }
    assert_eq!(t.kb(&["--json", "save", "One more"]).ok().json()["memory_id"], 6);
}

#[test]
fn init_writes_the_union_attribute_and_the_state_ignore_line_once() {
    let Some(t) = repo() else { return };
    // A fresh init wrote both files; git reads them as kb means.
    assert_eq!(t.read(&t.root().join(".gitignore")), ".co-cli/cache/\n.co-cli/state/\n");
    assert_eq!(t.read(&t.root().join(".gitattributes")), ".github/copilot-memories.jsonl merge=union\n");
    let attr = git_ok(&t, &["check-attr", "merge", "--", JSONL]);
    assert_eq!(attr.trim(), format!("{JSONL}: merge: union"));
    std::fs::create_dir_all(t.root().join(".co-cli/state")).unwrap();
    std::fs::write(t.root().join(".co-cli/state/access.jsonl"), "").unwrap();
    git_ok(&t, &["check-ignore", "-q", ".co-cli/state/access.jsonl"]);

    // Existing files keep every byte; the missing lines are appended once.
    let u = TestEnv::pinned();
    u.write(".gitignore", "/target\n*.log");
    u.write(".gitattributes", "*.png binary\n");
    let run = u.kb(&["--json", "init"]).ok().json();
    let created: Vec<&str> = run["created"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(created.contains(&abs(&u, ".gitattributes").as_str()), "{run}");
    assert_eq!(u.read(&u.root().join(".gitignore")), "/target\n*.log\n.co-cli/cache/\n.co-cli/state/\n");
    assert_eq!(u.read(&u.root().join(".gitattributes")), "*.png binary\n.github/copilot-memories.jsonl merge=union\n");
    let before = u.snapshot();
    let run = u.kb(&["init"]).ok();
    assert!(run.stdout.contains("nothing to do"), "{run:?}");
    assert_same_tree(&before, &u.snapshot());

    // A line that already says it (or a merge setting of the user's own) is kept, not repeated.
    let v = TestEnv::pinned();
    v.write(".gitignore", "/.co-cli/\n");
    v.write(".gitattributes", "/.github/copilot-memories.jsonl -merge\n");
    let run = v.kb(&["init"]).ok();
    assert!(!run.stdout.contains(".gitignore") && !run.stdout.contains(".gitattributes"), "{run:?}");
    assert_eq!(v.read(&v.root().join(".gitignore")), "/.co-cli/\n");
    assert_eq!(v.read(&v.root().join(".gitattributes")), "/.github/copilot-memories.jsonl -merge\n");
    let w = TestEnv::pinned();
    w.write(".gitignore", ".co-cli/cache\n");
    w.kb(&["init"]).ok();
    assert_eq!(w.read(&w.root().join(".gitignore")), ".co-cli/cache\n.co-cli/state/\n");
}

#[test]
fn the_example_repository_has_the_attributes_init_writes() {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("example-knowledge/.gitattributes");
    let text = std::fs::read_to_string(&example).unwrap_or_else(|e| panic!("{}: {e}", example.display()));
    assert!(text.lines().any(|l| l == ".github/copilot-memories.jsonl merge=union"), "{text}");
}

#[test]
fn markers_are_found_in_every_knowledge_file_and_a_heading_underline_is_not_one() {
    // Files no merge of this repository wrote: an ended session, the global context and
    // settings, a diff3-style conflict (with the base's ||||||| section) in a memory's body.
    let t = TestEnv::pinned();
    let conflict = "<<<<<<< HEAD\nmine\n||||||| base\nold\n=======\ntheirs\n>>>>>>> other\n";
    let ended = t.write(
        ".co-cli/knowledge/sessions/20261101T000000Z-x.md",
        &format!(
            "---\nended: '2026-11-01T01:00:00+00:00'\nfocus: x\nstarted: '2026-11-01T00:00:00+00:00'\n---\n\n{conflict}"
        ),
    );
    let memory = t.mem_file(
        "001-m.md",
        &format!("---\ncreated: '2026-11-01T10:00:00+00:00'\nid: 1\ntags: []\n---\n\nbody\n{conflict}"),
    );
    let config = t.home().join(".config/co-cli");
    std::fs::create_dir_all(config.join("knowledge")).unwrap();
    let global_context = config.join("knowledge/context.md");
    std::fs::write(
        &global_context,
        format!("---\nversion: 1\nupdated: '2026-11-01T00:00:00+00:00'\n---\n\nTitle\n=======\n\n{conflict}"),
    )
    .unwrap();
    let global_settings = config.join("settings.json");
    std::fs::write(&global_settings, format!("{{\n{conflict}}}\n")).unwrap();
    let (run, problems) = check(&t, &[]);
    assert_eq!(run.code, 1);
    for (path, first) in [(&ended, 7), (&memory, 8), (&global_context, 9), (&global_settings, 2)] {
        let lines: Vec<u64> =
            problems.iter().filter(|p| p.0 == path.display().to_string()).map(|p| p.1.unwrap()).collect();
        assert_eq!(lines, [first, first + 2, first + 4, first + 6], "{}: {problems:#?}", path.display());
    }
    assert_eq!(problems.len(), 16, "{problems:#?}");
    // The memory whose body holds the conflict still loads (once the settings parse again).
    std::fs::remove_file(&global_settings).unwrap();
    assert_eq!(t.ids(), [1]);
}

#[test]
fn the_board_follows_the_branch_git_has_checked_out() {
    let Some(t) = repo() else { return };
    commit(&t, "base");
    let board = |t: &TestEnv| -> Value { t.kb(&["--json", "board"]).ok().json() };
    let names = |v: &Value| -> Vec<String> {
        v["items"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap().to_string()).collect()
    };
    let dir = t.root().join(".co-cli/state/board");
    t.kb(&["board", "add", "on-main", "--description", "d", "c"]).ok();
    assert!(dir.join("main.json").is_file());
    git_ok(&t, &["checkout", "-q", "-b", "feature/board"]);
    assert_eq!((board(&t)["branch"].as_str(), names(&board(&t)).len()), (Some("feature/board"), 0));
    t.kb(&["board", "add", "on-feature", "--description", "d", "c"]).ok();
    assert!(dir.join("feature%2Fboard.json").is_file());
    git_ok(&t, &["checkout", "-q", "main"]);
    assert_eq!(names(&board(&t)), ["on-main"]);
    git_ok(&t, &["checkout", "-q", "--detach"]);
    assert_eq!(board(&t)["branch"], "detached");
    // The board is local state: git sees none of it.
    assert_eq!(git_ok(&t, &["status", "--porcelain", "--ignored=no"]), "");
    // A worktree's `.git` is a file naming its git folder; its board is its branch's.
    let wt = t.base.join("wt");
    git_ok(&t, &["worktree", "add", "-q", "-b", "wt-branch", wt.to_str().unwrap(), "main"]);
    let root = wt.to_str().unwrap();
    let v = t.kb(&["--root", root, "--json", "board"]).ok().json();
    assert_eq!(v["branch"], "wt-branch");
    t.kb(&["--root", root, "board", "add", "in-worktree", "--description", "d", "c"]).ok();
    assert!(wt.join(".co-cli/state/board/wt-branch.json").is_file());
}

#[test]
fn concurrent_fixes_repair_a_duplicate_id_once() {
    // `kb check --fix` works under the lock: of eight at once, one repairs, the others find
    // nothing left to repair.
    let t = TestEnv::pinned();
    t.memory(1, "The base memory", &days_ago(5.0), &[]);
    t.memory(2, "Older memory of one branch", &days_ago(4.0), &[]);
    t.memory(2, "Newer memory of the other branch", &days_ago(3.0), &[]);
    t.memory(3, "A third memory", &days_ago(2.0), &[]);
    let children: Vec<_> = (0..8)
        .map(|_| {
            let mut cmd = t.command(&["--json", "check", "--fix"]);
            cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
            cmd.spawn().unwrap()
        })
        .collect();
    let mut repairs = 0;
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        repairs += v["fixed"].as_array().unwrap().len();
    }
    assert_eq!(repairs, 1);
    assert_eq!(
        names_in(&t.memories()),
        [
            "001-the-base-memory.md",
            "002-older-memory-of-one-branch.md",
            "003-a-third-memory.md",
            "004-newer-memory-of-the-other-bran.md"
        ]
    );
    assert_eq!(t.ids(), [1, 2, 3, 4]);
}

#[test]
fn save_never_reuses_the_id_of_an_invalid_file() {
    // Files a merge or a hand left invalid still hold their ids: a time that does not parse,
    // YAML that does not parse (the id line still reads), a decision of an unknown type.
    let t = TestEnv::pinned();
    t.memory(1, "A valid memory", &days_ago(2.0), &[]);
    t.mem_file("009-broken.md", "---\ncreated: 'not a time'\nid: 9\ntags: []\n---\n\nbroken\n");
    t.mem_file("012-bad.md", "---\ncreated: '2026-01-01T00:00:00+00:00'\nid: 12\ntags: [unclosed\n---\n\nbad\n");
    t.write(
        ".co-cli/knowledge/decisions/004-odd.md",
        "---\ncreated: '2026-11-01T10:00:00+00:00'\nid: 4\nstatus: active\ntags: []\ntype: whim\n---\n\nOdd\n",
    );
    assert_eq!(t.ids(), [1]);
    assert_eq!(t.kb(&["--json", "save", "A fresh memory"]).ok().json()["memory_id"], 13);
    let added = t.kb(&["--json", "decision", "add", "A fresh decision", "--type", "scope"]).ok().json();
    assert_eq!(added["decision_id"], 5);
}
