//! `kb shared`: sources added and removed in the project's settings, copies cloned and fetched
//! with real git from a bare repository made here (a `file://` URL, no network), the refused
//! transports, the age warnings, the background sync of `kb hook session-start`, and proposals
//! committed on a branch of the copy.

use crate::common::TestEnv;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

/// Runs git in `dir` as a test person, with no system or global config; panics on failure.
fn git(t: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Org Admin", "-c", "user.email=admin@example.com", "-c", "init.defaultBranch=main"])
        .args(["-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(dir)
        .env("HOME", t.home())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?} in {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A protected memory file's text, created a day before the pinned clock.
fn memory_text(id: u64, text: &str) -> String {
    let created = crate::common::days_ago(1.0);
    format!("---\ncreated: '{created}'\ndecay_protected: true\nid: {id}\nsource: user-told\ntags: []\n---\n\n{text}\n")
}

/// The org's knowledge: a bare repository `org.git` beside the project, seeded from a working
/// clone `org-work` (kept, to push from) with one memory and a context file. Returns the bare
/// repository's `file://` URL and the working clone.
fn org(t: &TestEnv) -> (String, PathBuf) {
    let work = t.base.join("org-work");
    std::fs::create_dir_all(work.join(".co-cli/knowledge/memories")).unwrap();
    git(t, &work, &["init", "--quiet"]);
    std::fs::write(
        work.join(".co-cli/knowledge/memories/001-org.md"),
        memory_text(1, "Every service logs JSON to stdout"),
    )
    .unwrap();
    std::fs::write(
        work.join(".co-cli/knowledge/context.md"),
        "---\nversion: 1\nupdated: '2026-11-01T10:00:00+00:00'\n---\n\nThe org ships weekly.\n",
    )
    .unwrap();
    git(t, &work, &["add", "-A"]);
    git(t, &work, &["commit", "--quiet", "-m", "seed"]);
    let bare = t.base.join("org.git");
    git(t, &t.base, &["clone", "--quiet", "--bare", "org-work", "org.git"]);
    let url = format!("file://{}", bare.display());
    git(t, &work, &["remote", "add", "origin", &url]);
    (url, work)
}

/// [`org`] added as the shared source `org` and synced: the working clone and the local copy.
fn synced_org(t: &TestEnv) -> (PathBuf, PathBuf) {
    let (url, work) = org(t);
    t.kb(&["shared", "add", "org", &url]).ok();
    t.kb(&["shared", "sync"]).ok();
    (work, copy_of(t, "org"))
}

/// A test environment whose caches (the shared copies) live in its own folder, for a person
/// whose git identity is in their global git config.
fn env() -> TestEnv {
    let t = no_identity();
    std::fs::create_dir_all(t.home()).unwrap();
    std::fs::write(t.home().join(".gitconfig"), "[user]\n\tname = Dev\n\temail = dev@example.com\n").unwrap();
    t
}

/// [`env`] for a person who never told git who they are.
fn no_identity() -> TestEnv {
    let t = TestEnv::pinned().env("GIT_CONFIG_NOSYSTEM", "1");
    let cache = t.base.join("cache");
    t.env("XDG_CACHE_HOME", cache.to_str().unwrap())
}

/// The local copy of source `name`, from `kb shared --json`.
fn copy_of(t: &TestEnv, name: &str) -> PathBuf {
    let list = t.kb(&["--json", "shared"]).ok().json();
    let s = list["sources"].as_array().unwrap().iter().find(|s| s["name"] == name).expect("listed").clone();
    PathBuf::from(s["path"].as_str().unwrap())
}

#[test]
fn add_and_sync_clone_into_the_cache_and_a_later_sync_brings_a_push() {
    let t = env();
    let (url, work) = org(&t);
    let added = t.kb(&["shared", "add", "org", &url]).ok();
    assert!(
        added.stdout.contains("Added shared source org") && added.stdout.contains("kb shared sync org"),
        "{added:?}"
    );
    let settings = t.read(&t.root().join(".co-cli/settings.json"));
    assert!(settings.contains("\"shared\"") && settings.contains(&url), "{settings}");

    let synced = t.kb(&["--json", "shared", "sync"]).ok().json();
    assert_eq!(synced["sources"][0]["action"], "cloned", "{synced}");
    let copy = copy_of(&t, "org");
    assert!(copy.starts_with(t.base.join("cache/kb/shared")), "{}", copy.display());
    assert!(copy.file_name().unwrap().to_str().unwrap().starts_with("org-"));
    assert!(copy.join(".co-cli/knowledge/memories/001-org.md").is_file());
    assert!(copy.join(".git/kb-synced").is_file(), "the stamp is written");
    let first = git(&t, &work, &["rev-parse", "HEAD"]);
    let list = t.kb(&["--json", "shared"]).ok().json();
    let s = &list["sources"][0];
    assert_eq!(s["commit"], first.as_str());
    assert_eq!(s["counts"]["memories"], 1);
    assert_eq!(
        (s["in_place"].as_bool(), s["present"].as_bool(), s["stale"].as_bool()),
        (Some(false), Some(true), Some(false))
    );
    let text = t.kb(&["shared"]).ok().stdout;
    assert!(text.contains(&format!("commit {}", &first[..12])) && text.contains("1 memory"), "{text}");

    // Another person pushes a memory; the next sync moves the copy to it.
    std::fs::write(work.join(".co-cli/knowledge/memories/002-org.md"), memory_text(2, "Deploys need two approvals"))
        .unwrap();
    git(&t, &work, &["add", "-A"]);
    git(&t, &work, &["commit", "--quiet", "-m", "second"]);
    git(&t, &work, &["push", "--quiet", "origin", "main"]);
    let second = git(&t, &work, &["rev-parse", "HEAD"]);
    let synced = t.kb(&["--json", "shared", "sync", "org"]).ok().json();
    assert_eq!(synced["sources"][0]["action"], "fetched", "{synced}");
    assert_eq!(synced["sources"][0]["from"], first.as_str());
    assert_eq!(synced["sources"][0]["commit"], second.as_str());
    assert!(copy.join(".co-cli/knowledge/memories/002-org.md").is_file());
    let again = t.kb(&["--json", "shared", "sync"]).ok().json();
    assert_eq!(again["sources"][0]["action"], "unchanged");
}

#[test]
fn a_failed_sync_warns_keeps_the_old_copy_and_the_others_still_sync() {
    let t = env();
    let (_, copy) = synced_org(&t);
    let commit = git(&t, &copy, &["rev-parse", "HEAD"]);
    // The remote goes away, and a second source never existed.
    std::fs::rename(t.base.join("org.git"), t.base.join("moved.git")).unwrap();
    let missing = format!("file://{}", t.base.join("nowhere.git").display());
    t.kb(&["shared", "add", "gone", &missing]).ok();
    // A third source, a plain path, is used in place.
    std::fs::create_dir_all(t.base.join("team/.co-cli/knowledge/memories")).unwrap();
    t.kb(&["shared", "add", "team", "../team"]).ok();
    let run = t.kb(&["--json", "shared", "sync"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("warning: shared source org did not sync") && run.stderr.contains("the old copy stays"),
        "{run:?}"
    );
    assert!(run.stderr.contains("shared source gone did not sync"), "{run:?}");
    let json = run.json();
    let actions: Vec<&str> =
        json["sources"].as_array().unwrap().iter().map(|s| s["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["failed", "failed", "in_place"], "{json}");
    assert_eq!(git(&t, &copy, &["rev-parse", "HEAD"]), commit, "the old copy is kept as it was");
    assert!(copy.join(".co-cli/knowledge/memories/001-org.md").is_file());
    let text = t.kb(&["shared", "sync", "team"]).ok().stdout;
    assert!(text.contains("team: used in place"), "{text}");
    assert!(t.kb(&["shared"]).ok().stdout.contains("in place"));
}

#[test]
fn a_transport_kb_refuses_never_reaches_git() {
    let t = env();
    let marker = t.base.join("pwned");
    let ext = format!("ext::sh -c touch% {}", marker.display());
    let run = t.kb(&["shared", "add", "org", &ext]).err();
    assert!(run.stderr.contains("transport kb does not allow"), "{run:?}");
    assert!(!t.root().join(".co-cli/settings.json").exists(), "nothing written");
    // Written by hand, it is refused when the settings load, before any git runs.
    t.write(
        ".co-cli/settings.json",
        &format!("{{\"shared\": [{{\"name\": \"org\", \"url\": {}}}]}}", serde_json::json!(ext)),
    );
    let run = t.kb(&["shared", "sync"]).err();
    assert!(run.stderr.contains("transport kb does not allow"), "{run:?}");
    for url in ["fd::3", "http://example.com/k.git", "-uhack"] {
        t.kb(&["shared", "add", "x", "--", url]).err();
    }
    assert!(!marker.exists(), "git never ran the ext command");
}

#[test]
fn names_are_checked_a_taken_one_is_refused_and_remove_keeps_the_copy() {
    let t = env();
    let (url, _) = org(&t);
    t.kb(&["shared", "add", "org", &url, "--ref", "main"]).ok();
    let run = t.kb(&["shared", "add", "org", "../elsewhere"]).err();
    assert!(run.stderr.contains("the name \"org\" is taken"), "{run:?}");
    assert!(t.kb(&["shared", "add", "md", "../x"]).err().stderr.contains("store word"));
    assert!(t.kb(&["shared", "add", "Org", "../x"]).err().stderr.contains("a-z, 0-9"));
    assert!(t.kb(&["shared", "add", "x", "../x", "--ref", "a..b"]).err().stderr.contains("not a branch or tag"));
    let synced = t.kb(&["--json", "shared", "sync"]).ok().json();
    assert_eq!(synced["sources"][0]["action"], "cloned");
    let copy = copy_of(&t, "org");
    let removed = t.kb(&["shared", "remove", "org"]).ok();
    assert!(
        removed.stdout.contains("Removed shared source org") && removed.stdout.contains("local copy stays"),
        "{removed:?}"
    );
    assert!(copy.is_dir(), "the copy stays");
    assert!(!t.read(&t.root().join(".co-cli/settings.json")).contains("shared"));
    assert!(t.kb(&["shared", "remove", "org"]).err().stderr.contains("no shared source named \"org\""));
    assert!(t.kb(&["shared"]).ok().stdout.contains("No shared sources"));
}

#[test]
fn an_old_or_missing_copy_is_one_warning_per_read_command() {
    let t = env();
    let (url, _) = org(&t);
    t.kb(&["shared", "add", "org", &url]).ok();
    let run = t.kb(&["list"]).ok();
    assert_eq!(run.stderr.matches("shared source org has no local copy: kb shared sync org").count(), 1, "{run:?}");
    t.kb(&["shared", "sync"]).ok();
    assert!(!t.kb(&["list"]).ok().stderr.contains("shared source"), "a fresh copy gives no warning");
    let stamp = copy_of(&t, "org").join(".git/kb-synced");
    let old = SystemTime::now() - Duration::from_secs(3 * 86_400 + 60);
    std::fs::File::options().write(true).open(&stamp).unwrap().set_modified(old).unwrap();
    for args in [&["list"][..], &["recall", "logs"], &["context"], &["check"], &["agents"]] {
        let run = t.kb(args);
        assert_eq!(
            run.stderr.matches("shared source org is 3 days old: kb shared sync").count(),
            1,
            "{args:?}: {run:?}"
        );
    }
    assert!(!t.kb(&["config"]).stderr.contains("days old"), "a command that reads no knowledge does not warn");
    assert!(t.kb(&["--json", "shared"]).ok().json()["sources"][0]["stale"].as_bool().unwrap());
    // A larger TTL makes it fresh again.
    let t = t.env("KB_SHARED_TTL_HOURS", "100");
    assert!(!t.kb(&["list"]).ok().stderr.contains("days old"));
}

#[test]
fn session_start_syncs_a_missing_copy_in_the_background() {
    let t = env();
    let (url, _) = org(&t);
    t.kb(&["shared", "add", "org", &url]).ok();
    let copy = copy_of(&t, "org");
    assert!(!copy.exists());
    let payload = format!("{{\"session_id\":\"s1\",\"cwd\":{}}}", serde_json::json!(t.root()));
    let run = t.kb_stdin(&["hook", "session-start", "--agent", "claude"], Some(&payload));
    assert_eq!(run.code, 0, "{run:?}");
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while !copy.join(".git/kb-synced").is_file() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(copy.join(".co-cli/knowledge/memories/001-org.md").is_file(), "the detached sync cloned the copy");
}

#[test]
fn propose_commits_on_a_branch_of_the_copy_and_the_copy_goes_back_to_the_synced_commit() {
    let t = env();
    let (_, copy) = synced_org(&t);
    let synced = git(&t, &copy, &["rev-parse", "HEAD"]);
    t.kb(&["save", "Release notes go in CHANGELOG.md under Unreleased"]).ok();
    let run = t.kb(&["--json", "shared", "propose", "1", "org"]).ok();
    let json = run.json();
    assert_eq!(json["action"], "proposed", "{json}");
    let branch = json["branch"].as_str().unwrap().to_string();
    assert!(branch.starts_with("kb/propose-1-release-notes-go-in-changelog"), "{branch}");
    assert_eq!(json["push"], format!("git -C {} push origin {branch}", copy.display()));
    assert_eq!(json["saved_as"], 2, "saved through the org's own save, after its memory 1");
    assert_eq!(json["store"], "md");
    // The copy reads the synced commit again; the branch holds the proposal.
    assert_eq!(git(&t, &copy, &["rev-parse", "HEAD"]), synced);
    assert_eq!(git(&t, &copy, &["status", "--porcelain"]), "");
    assert_eq!(std::fs::read_dir(copy.join(".co-cli/knowledge/memories")).unwrap().count(), 1);
    let on_branch = git(&t, &copy, &["show", "--name-only", "--format=%an <%ae>%n%s%n%b", &branch]);
    assert!(on_branch.contains("dev@example.com"), "the person's identity: {on_branch}");
    assert!(on_branch.contains("Propose memory 1 from repo"), "{on_branch}");
    assert!(on_branch.contains(".co-cli/knowledge/memories/002-release-notes"), "{on_branch}");
    assert_eq!(git(&t, &copy, &["rev-parse", &format!("{branch}~1")]), synced);
    let text = t.kb(&["shared", "propose", "1", "org"]);
    assert!(text.stderr.contains("already exists"), "{text:?}");
    assert_eq!(text.code, 1, "the branch exists already: {text:?}");
    assert_eq!(git(&t, &copy, &["rev-parse", "HEAD"]), synced, "a failed proposal leaves the copy as it was");

    // What the org already says is not proposed again (its dedup holds).
    t.kb(&["save", "Every service logs JSON to stdout"]).ok();
    let json = t.kb(&["--json", "shared", "propose", "2", "org"]).ok().json();
    assert_eq!(json["action"], "exists", "{json}");
    assert_eq!(json["saved_as"], 1);
    assert!(json["branch"].is_null());
    assert!(git(&t, &copy, &["branch", "--list", "kb/propose-2-*"]).is_empty(), "no branch is left behind");
    assert!(t.kb(&["shared", "propose", "9", "org"]).err().stderr.contains("memory 9 not found"));
    assert!(t.kb(&["shared", "propose", "1", "nope"]).err().stderr.contains("no shared source named"));
}

#[test]
fn a_git_that_hangs_is_stopped_at_the_time_limit() {
    // A git daemon that accepts the connection and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let t = env().env("KB_SHARED_TIMEOUT_MS", "700");
    t.kb(&["shared", "add", "slow", &format!("git://127.0.0.1:{port}/org.git")]).ok();
    let started = std::time::Instant::now();
    let run = t.kb(&["shared", "sync"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(started.elapsed() < Duration::from_secs(20), "stopped at the limit: {:?}", started.elapsed());
    assert!(run.stderr.contains("shared source slow did not sync: git took longer than"), "{run:?}");
    assert!(run.stderr.contains("there is no local copy"), "{run:?}");
}

#[test]
fn a_record_is_proposed_to_a_plain_path_source_on_a_branch_of_that_repository() {
    let t = env();
    let (_, work) = org(&t);
    t.kb(&["shared", "add", "team", "../org-work"]).ok();
    let saved = t
        .kb(&[
            "--json",
            "save",
            "--store",
            "copilot",
            "--subject",
            "build",
            "--citation",
            "Makefile:14",
            "--reason",
            "CI uses it",
            "Run make test before a push",
        ])
        .ok()
        .json();
    let id = saved["memory_id"].as_str().unwrap().to_string();
    let before = git(&t, &work, &["rev-parse", "HEAD"]);
    let json = t.kb(&["--json", "shared", "propose", &id, "team"]).ok().json();
    assert_eq!(json["action"], "proposed", "{json}");
    let branch = json["branch"].as_str().unwrap();
    assert!(branch.starts_with(&format!("kb/propose-{id}-run-make-test")), "{branch}");
    assert_eq!(git(&t, &work, &["symbolic-ref", "--short", "HEAD"]), "main", "back on the branch it was on");
    assert_eq!(git(&t, &work, &["rev-parse", "HEAD"]), before);
    assert_eq!(git(&t, &work, &["status", "--porcelain"]), "");
    let file = git(&t, &work, &["show", &format!("{branch}:.github/copilot-memories.jsonl")]);
    assert!(file.contains("Run make test before a push") && file.contains("Makefile:14"), "{file}");
    // A dirty checkout is refused, and nothing moves.
    std::fs::write(work.join("notes.txt"), "wip").unwrap();
    let run = t.kb(&["shared", "propose", &id, "team"]).err();
    assert!(run.stderr.contains("uncommitted changes"), "{run:?}");
    assert_eq!(git(&t, &work, &["symbolic-ref", "--short", "HEAD"]), "main");
}

#[test]
fn the_read_commands_start_no_git_process() {
    let t = env();
    synced_org(&t);
    t.kb(&["save", "The API listens on port 8080"]).ok();
    // A `git` first on PATH that only leaves a mark.
    let bin = t.base.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = t.base.join("git-ran");
    let script = bin.join("git");
    std::fs::write(&script, format!("#!/bin/sh\necho \"$@\" >> '{}'\nexit 1\n", marker.display())).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let t = t.env("PATH", &path);
    for args in [
        &["list"][..],
        &["recall", "port"],
        &["show", "1"],
        &["context"],
        &["compile"],
        &["check"],
        &["agents"],
        &["shared"],
    ] {
        let run = t.kb(args);
        assert!(run.code == 0 || args[0] == "check", "{args:?}: {run:?}");
    }
    assert!(!marker.exists(), "a read command ran git: {}", std::fs::read_to_string(&marker).unwrap_or_default());
    // The fake git does run for sync (so the test would see a read command that ran it).
    assert_eq!(t.kb(&["shared", "sync"]).code, 1);
    assert!(marker.exists());
}

#[test]
fn a_copy_whose_git_folder_is_broken_is_not_synced_and_git_never_acts_on_a_repository_above_it() {
    let t = env();
    let (url, _) = org(&t);
    // The cache folder sits inside a repository of the person's, with work not committed.
    let outer = t.base.join("cache");
    std::fs::create_dir_all(&outer).unwrap();
    git(&t, &outer, &["init", "--quiet"]);
    std::fs::write(outer.join("notes.txt"), "mine").unwrap();
    git(&t, &outer, &["add", "notes.txt"]);
    git(&t, &outer, &["commit", "--quiet", "-m", "mine"]);
    std::fs::write(outer.join("notes.txt"), "mine, not committed").unwrap();
    let outer_head = git(&t, &outer, &["rev-parse", "HEAD"]);
    t.kb(&["shared", "add", "org", &url]).ok();
    t.kb(&["shared", "sync"]).ok();
    let copy = copy_of(&t, "org");
    assert!(copy.starts_with(&outer), "{}", copy.display());
    std::fs::write(copy.join(".git/HEAD"), "garbage\n").unwrap();

    let run = t.kb(&["--json", "shared", "sync"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("is not a git repository") && run.stderr.contains("the old copy stays"), "{run:?}");
    assert_eq!(run.json()["sources"][0]["action"], "failed");
    t.kb(&["save", "Release notes go in CHANGELOG.md"]).ok();
    let run = t.kb(&["shared", "propose", "1", "org"]).err();
    assert!(run.stderr.contains("is not a git repository"), "{run:?}");
    // The repository above is as it was: its work is there, no branch, no fetch, no commit.
    assert_eq!(std::fs::read_to_string(outer.join("notes.txt")).unwrap(), "mine, not committed");
    assert_eq!(git(&t, &outer, &["rev-parse", "HEAD"]), outer_head);
    assert_eq!(git(&t, &outer, &["branch", "--list"]), "* main");
    assert!(!outer.join(".git/FETCH_HEAD").exists(), "nothing was fetched into it");
    assert!(copy.join(".co-cli/knowledge/memories/001-org.md").is_file(), "the copy's files stay");
    // A copy whose .git is gone, or is a file leading into the repository above, is not kb's to
    // delete or fetch into.
    std::fs::remove_dir_all(copy.join(".git")).unwrap();
    std::fs::write(copy.join("mine.txt"), "a note of mine").unwrap();
    let run = t.kb(&["shared", "sync"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("exists and is not a git repository: move it away"), "{run:?}");
    assert_eq!(std::fs::read_to_string(copy.join("mine.txt")).unwrap(), "a note of mine");
    std::fs::write(copy.join(".git"), format!("gitdir: {}\n", outer.join(".git").display())).unwrap();
    let run = t.kb(&["shared", "sync"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("its .git is not a folder"), "{run:?}");
    assert_eq!(git(&t, &outer, &["rev-parse", "HEAD"]), outer_head);
    assert_eq!(std::fs::read_to_string(outer.join("notes.txt")).unwrap(), "mine, not committed");
    // An empty folder in its place is only a missing copy.
    std::fs::remove_dir_all(&copy).unwrap();
    std::fs::create_dir_all(&copy).unwrap();
    t.kb(&["shared", "sync"]).ok();
    assert!(copy.join(".co-cli/knowledge/memories/001-org.md").is_file());
}

#[test]
fn a_failed_sync_says_what_git_said_not_its_advice() {
    let t = env();
    let missing = format!("file://{}", t.base.join("nowhere.git").display());
    t.kb(&["shared", "add", "gone", &missing]).ok();
    let run = t.kb(&["--json", "shared", "sync"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("does not appear to be a git repository"), "{run:?}");
    assert!(!run.stderr.contains("Please make sure"), "{run:?}");
    let error = run.json()["sources"][0]["error"].as_str().unwrap().to_string();
    assert!(error.contains("nowhere.git") && !error.contains('\n'), "{error}");
}

#[test]
fn the_list_counts_what_kb_reads_and_a_fifo_or_a_symlink_out_of_the_source_is_not_read() {
    let t = env();
    let team = t.base.join("team");
    std::fs::create_dir_all(team.join(".co-cli/knowledge/memories")).unwrap();
    std::fs::write(team.join(".co-cli/knowledge/memories/001-a.md"), memory_text(1, "Builds run on Linux")).unwrap();
    std::fs::write(team.join(".co-cli/knowledge/memories/002-bad.md"), "---\nid: [\n---\nbroken\n").unwrap();
    std::fs::write(t.base.join("secret.md"), memory_text(3, "A file outside the source")).unwrap();
    std::os::unix::fs::symlink(t.base.join("secret.md"), team.join(".co-cli/knowledge/memories/003-link.md")).unwrap();
    std::fs::create_dir_all(team.join(".github")).unwrap();
    let fifo = team.join(".github/copilot-memories.jsonl");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    t.kb(&["shared", "add", "team", "../team"]).ok();

    let run = crate::common::kb_within(&t, &["--json", "shared"], Duration::from_secs(10));
    assert_eq!(run.code, 0, "{run:?}");
    let counts = run.json()["sources"][0]["counts"].clone();
    assert_eq!(counts["memories"], 1, "{counts}");
    assert_eq!(counts["records"], 0, "{counts}");
    assert_eq!(counts["problems"], 3, "the bad file, the symlink and the FIFO: {counts}");
    let text = crate::common::kb_within(&t, &["shared"], Duration::from_secs(10)).stdout;
    assert!(text.contains("1 memory, 0 records") && text.contains("3 files or lines kb cannot read there"), "{text}");
}

#[test]
fn a_proposal_says_what_the_sources_save_did_with_it() {
    let t = env();
    synced_org(&t);
    // Near the org's protected memory 1, but not the same words.
    t.kb(&["save", "--no-dedup", "Every service logs JSON to stdout."]).ok();
    let json = t.kb(&["--json", "shared", "propose", "1", "org"]).ok().json();
    assert_eq!((json["action"].as_str(), json["saved"].as_str()), (Some("proposed"), Some("saved")), "{json}");
    assert_eq!(json["similar_to"]["id"], 1, "{json}");
    assert_eq!(json["similar_to"]["why"], "protected", "{json}");
    t.kb(&["save", "--no-dedup", "Every service logs JSON to stdout!"]).ok();
    let text = t.kb(&["shared", "propose", "2", "org"]).ok().stdout;
    assert!(text.contains("Similar: org's memory 1 looks similar") && text.contains("protected there"), "{text}");
}

#[test]
fn a_proposal_consolidated_into_a_memory_of_the_source_says_what_it_rewrites() {
    let t = env();
    let (_, work) = org(&t);
    let org_memory = "The deploy window is Tuesday mornings from 9 to 11 UTC";
    let restated = "The deploy window is Tuesday mornings, from 9 to 11 UTC.";
    let created = crate::common::days_ago(1.0);
    let plain = format!("---\ncreated: '{created}'\nid: 2\nsource: detected\ntags: []\n---\n\n{org_memory}\n");
    std::fs::write(work.join(".co-cli/knowledge/memories/002-deploy.md"), plain).unwrap();
    git(&t, &work, &["add", "-A"]);
    git(&t, &work, &["commit", "--quiet", "-m", "deploys"]);
    t.kb(&["shared", "add", "team", "../org-work"]).ok();
    t.kb(&["save", restated]).ok();
    let json = t.kb(&["--json", "shared", "propose", "1", "team"]).ok().json();
    assert_eq!((json["action"].as_str(), json["saved"].as_str()), (Some("proposed"), Some("consolidated")), "{json}");
    assert_eq!(json["saved_as"], 2);
    assert_eq!(json["replaced"], org_memory, "{json}");
    let branch = json["branch"].as_str().unwrap();
    let file = git(&t, &work, &["show", &format!("{branch}:.co-cli/knowledge/memories/002-deploy.md")]);
    assert!(file.contains(restated), "{file}");
    let kept = std::fs::read_to_string(work.join(".co-cli/knowledge/memories/002-deploy.md")).unwrap();
    assert!(!kept.contains(restated), "the checkout is back where it was: {kept}");
    git(&t, &work, &["branch", "-D", branch]);
    t.kb(&["save", "--no-dedup", restated]).ok();
    let text = t.kb(&["shared", "propose", "2", "team"]).ok().stdout;
    assert!(
        text.contains("consolidated into its memory 2") && text.contains(&format!("which said: {org_memory}")),
        "{text}"
    );
    // The very words the source holds (which its save consolidates into, touching only the
    // dates) are nothing to propose: no branch, the checkout as it was.
    for branch in git(&t, &work, &["branch", "--list", "kb/*"]).lines() {
        git(&t, &work, &["branch", "-D", branch.trim()]);
    }
    t.kb(&["save", "--no-dedup", org_memory]).ok();
    let json = t.kb(&["--json", "shared", "propose", "3", "team"]).ok().json();
    assert_eq!((json["action"].as_str(), json["saved"].as_str()), (Some("exists"), Some("exists")), "{json}");
    assert!(git(&t, &work, &["branch", "--list", "kb/*"]).is_empty(), "no branch is left");
    assert_eq!(git(&t, &work, &["status", "--porcelain"]), "");
}

#[test]
fn a_proposal_without_a_git_identity_is_refused_before_anything_is_made() {
    let t = no_identity();
    let (_, copy) = synced_org(&t);
    t.kb(&["save", "Release notes go in CHANGELOG.md"]).ok();
    let run = t.kb(&["--json", "shared", "propose", "1", "org"]).err();
    assert!(run.stderr.contains("git has no identity to commit with"), "{run:?}");
    assert!(run.stderr.contains("git config --global user.email"), "{run:?}");
    assert!(git(&t, &copy, &["branch", "--list", "kb/*"]).is_empty(), "no branch was made");
    assert_eq!(git(&t, &copy, &["status", "--porcelain"]), "");
    // git's own variables are an identity, as for git commit.
    let t = t.env("GIT_AUTHOR_NAME", "Dev").env("GIT_AUTHOR_EMAIL", "dev@example.com");
    let t = t.env("GIT_COMMITTER_NAME", "Dev").env("GIT_COMMITTER_EMAIL", "dev@example.com");
    let json = t.kb(&["--json", "shared", "propose", "1", "org"]).ok().json();
    let branch = json["branch"].as_str().unwrap();
    assert_eq!(git(&t, &copy, &["log", "-1", "--format=%an <%ae>", branch]), "Dev <dev@example.com>");
    let file = git(
        &t,
        &copy,
        &["show", &format!("{branch}:.co-cli/knowledge/memories/002-release-notes-go-in-changelog-md.md")],
    );
    assert!(file.contains("created_by: dev@example.com"), "the proposal is the person's: {file}");
}

#[test]
fn ids_of_sources_that_are_not_there_and_shared_items_to_propose_are_named_in_the_error() {
    let t = env();
    let (url, _) = org(&t);
    t.kb(&["shared", "add", "org", &url]).ok();
    let run = t.kb(&["--json", "show", "org:1"]).err();
    assert!(run.stderr.contains("shared source org has no local copy: kb shared sync org"), "{run:?}");
    assert_eq!(run.json()["error"]["kind"], "not_found");
    t.kb(&["shared", "sync"]).ok();
    let run = t.kb(&["--json", "show", "org:99"]).err();
    assert!(run.stderr.contains("memory org:99 not found"), "{run:?}");
    assert_eq!(run.json()["error"]["kind"], "not_found");
    let run = t.kb(&["show", "nosuch:1"]).err();
    assert!(run.stderr.contains("no shared source named \"nosuch\" (the sources are org)"), "{run:?}");
    let run = t.kb(&["shared", "propose", "org:1", "org"]).err();
    assert!(run.stderr.contains("org:1 is an item of the shared source org"), "{run:?}");
}

#[test]
fn a_settings_file_kb_will_not_take_is_an_invalid_error() {
    let t = env();
    t.write(".co-cli/settings.json", "{\"shared\": [{\"name\": \"ALL CAPS\", \"url\": \"../x\"}]}");
    let run = t.kb(&["--json", "shared"]).err();
    assert_eq!(run.json()["error"]["kind"], "invalid", "{run:?}");
}

#[test]
fn a_plain_path_source_whose_folder_is_gone_says_so_and_no_sync_is_offered() {
    let t = env();
    let gone = t.base.join("gone");
    t.kb(&["shared", "add", "gone", gone.to_str().unwrap()]).ok();
    let list = t.kb(&["shared"]).ok().stdout;
    assert!(list.contains("missing: the folder does not exist") && !list.contains("kb shared sync"), "{list}");
    let run = t.kb(&["--json", "shared", "sync", "gone"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("which is not a folder"), "{run:?}");
    assert_eq!(run.json()["sources"][0]["action"], "failed");
    let run = t.kb(&["list"]).ok();
    assert!(
        run.stderr.contains("shared source gone is read in place from") && run.stderr.contains("fix its url"),
        "{run:?}"
    );
    let run = t.kb(&["show", "gone:1"]).err();
    assert!(run.stderr.contains("which is not a folder") && !run.stderr.contains("kb shared sync"), "{run:?}");
}
