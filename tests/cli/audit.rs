//! `kb audit` and the check at use (docs/behaviour.md, Audit): every reference kind on real git
//! repositories made here (commits, a rename, a deletion, a Makefile, a justfile, a
//! package.json), each verdict, the rename hint, what must not be taken for a reference, a
//! folder without git, conflicts, `kb recall --verify`, and a repository whose git config names
//! programs (none is run). MCP `audit` and `verified` are in `mcp.rs`
//! (`with_mcp::audit_tool_and_verified_results`).

use crate::common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const JSONL: &str = ".github/copilot-memories.jsonl";

/// Runs git in the test's repository with a fixed identity; panics with its stderr on failure.
fn git(t: &TestEnv, args: &[&str]) -> String {
    git_in(t, &t.root(), args)
}

/// Runs git in `dir` as [`git`] does in the repository.
fn git_in(t: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.email=dev@example.com", "-c", "user.name=Dev", "-c", "commit.gpgsign=false"])
        .args(args)
        .env("HOME", t.home())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A test repository that is a real git repository (`None`, with a note, when git is missing).
fn git_repo() -> Option<TestEnv> {
    if Command::new("git").arg("--version").output().is_err() {
        skip("git is not installed");
        return None;
    }
    let t = TestEnv::pinned();
    std::fs::remove_dir_all(t.root().join(".git")).unwrap();
    git(&t, &["init", "-q"]);
    Some(t)
}

/// A repository with code, a Makefile, a justfile and a package.json; then
/// `src/api/handlers.rs` renamed to `src/api/routes.rs` and `docs/old.md` deleted, each in its own
/// commit. Returns the rename's short commit.
fn project(t: &TestEnv) -> String {
    t.write("src/api/handlers.rs", "pub struct ApiError;\n\npub fn fit_budget() {}\n");
    t.write("src/config.rs", "pub struct Layout;\n");
    t.write("docs/old.md", "# Old\n");
    t.write("docs/guide.md", "# Guide\n");
    t.write("Makefile", "CC := cc\nbuild: deps\n\tcargo build\n");
    t.write("justfile", "set shell := [\"bash\", \"-c\"]\ntest:\n    cargo test\n");
    t.write("package.json", "{\"scripts\": {\"lint\": \"eslint .\"}}\n");
    git(t, &["add", "-A"]);
    git(t, &["commit", "-qm", "start"]);
    git(t, &["mv", "src/api/handlers.rs", "src/api/routes.rs"]);
    git(t, &["commit", "-qm", "rename"]);
    let rename = git(t, &["rev-parse", "--short", "HEAD"]).trim().to_string();
    git(t, &["rm", "-q", "docs/old.md"]);
    git(t, &["commit", "-qm", "delete"]);
    rename
}

/// Returns the audited item of `store` and `id` from `kb --json audit`'s document.
fn item<'a>(v: &'a Value, store: &str, id: Value) -> &'a Value {
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["store"] == store && i["id"] == id)
        .unwrap_or_else(|| panic!("no {store} {id} in {v}"))
}

/// Returns an item's problems as (kind, reference, message).
fn problems(item: &Value) -> Vec<(String, String, String)> {
    item["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let s = |k: &str| p[k].as_str().unwrap_or_default().to_string();
            (s("kind"), s("reference"), s("message"))
        })
        .collect()
}

#[test]
fn every_reference_kind_is_checked_and_a_rename_is_named() {
    let Some(t) = git_repo() else { return };
    let rename = project(&t);
    let at = days_ago(1.0);
    t.memory(1, "Handlers live in `src/api/handlers.rs`", &at, &[]);
    t.memory(
        2,
        "Build with `make build`, test with `just test`, lint with `npm run lint`, `pnpm run lint`, `yarn run lint`, \
         `yarn lint` or `bun run lint`. Errors are `ApiError` from `src/api/routes.rs:1-3`, budgets in \
         `fit_budget()`, paths in `config::Layout`, docs in `docs/*.md` and src/api/routes.rs#L3.",
        &at,
        &[],
    );
    t.memory(3, "Deploy with `make deploy`, release with `just release`, test e2e with `npm run e2e`", &at, &[]);
    t.memory(4, "The error type is at `src/api/routes.rs:40`; the old helper was `MissingHelper`", &at, &[]);
    t.memory(5, "The design notes were in docs/old.md and `notes/*.txt`", &at, &[]);
    t.memory(6, "A plain fact with no reference at all", &at, &[]);
    t.write(
        JSONL,
        "{\"id\":\"mem-ok\",\"subject\":\"build\",\"fact\":\"the build is one rule\",\"citations\":[\"Makefile:2\"]}\n\
         {\"id\":\"mem-past\",\"subject\":\"test\",\"fact\":\"tests run in a recipe\",\"citations\":[\"justfile:9\"]}\n",
    );
    t.kb(&["decision", "add", "Routes live in `src/api/routes.rs`", "--type", "architectural"]).ok();
    let before = t.snapshot();

    let run = t.kb(&["--json", "audit"]);
    assert_eq!(run.code, 1, "stale items: exit 1: {run:?}");
    let v = run.json();
    let one = item(&v, "md", json!(1));
    assert_eq!(one["verdict"], "stale");
    assert_eq!(
        problems(one),
        [(
            "path".to_string(),
            "src/api/handlers.rs".to_string(),
            format!("`src/api/handlers.rs` no longer exists (renamed to `src/api/routes.rs` in {rename})")
        )]
    );
    assert_eq!(one["problems"][0]["hint"], "update the reference to `src/api/routes.rs`");
    assert_eq!(one["path"].as_str(), t.file_of(1).to_str());

    let two = item(&v, "md", json!(2));
    assert_eq!((two["verdict"].clone(), problems(two)), (json!("ok"), vec![]), "every reference holds: {two}");

    let three = item(&v, "md", json!(3));
    let kinds: Vec<(String, String)> = problems(three).into_iter().map(|(k, r, _)| (k, r)).collect();
    assert_eq!(
        kinds,
        [
            ("command".to_string(), "make deploy".to_string()),
            ("command".to_string(), "just release".to_string()),
            ("command".to_string(), "npm run e2e".to_string())
        ]
    );
    assert_eq!(three["problems"][0]["message"], "`make deploy`: the Makefile has no target `deploy`");
    assert_eq!(three["problems"][0]["hint"], "Makefile targets: build");
    assert_eq!(three["problems"][2]["hint"], "package.json scripts: lint");

    let four = item(&v, "md", json!(4));
    assert_eq!(
        problems(four),
        [
            (
                "line".to_string(),
                "src/api/routes.rs:40".to_string(),
                "`src/api/routes.rs:40` points past the end of `src/api/routes.rs`, which has 3 lines".to_string()
            ),
            (
                "symbol".to_string(),
                "MissingHelper".to_string(),
                "`MissingHelper` occurs in no tracked file".to_string()
            )
        ]
    );

    let five = item(&v, "md", json!(5));
    let messages: Vec<String> = problems(five).into_iter().map(|(_, _, m)| m).collect();
    assert_eq!(messages, ["`notes/*.txt` matches no file", "`docs/old.md` does not exist"]);

    assert_eq!(item(&v, "md", json!(6))["verdict"], "unverified", "no reference: never stale");
    assert_eq!(item(&v, "copilot", json!("mem-ok"))["verdict"], "ok");
    let past = item(&v, "copilot", json!("mem-past"));
    assert_eq!(problems(past)[0].2, "`justfile:9` points past the end of `justfile`, which has 3 lines");
    assert_eq!(item(&v, "decision", json!("decision:1"))["verdict"], "ok");
    // kb init was not run: no context file, no session; the counts add up.
    assert_eq!(v["counts"], json!({"ok": 3, "stale": 5, "unverified": 1, "conflicts": 0}));

    // The text: one block per stale item, then the counts.
    let text = t.kb(&["audit"]);
    assert_eq!(text.code, 1);
    assert!(
        text.stdout.starts_with(&format!(
            "Memory 1 (.co-cli/knowledge/memories/{}): stale\n  path: `src/api/handlers.rs` no longer exists",
            t.memory_files()[0]
        )),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("\n    hint: Makefile targets: build\n"), "{}", text.stdout);
    assert!(!text.stdout.contains("Memory 2 "), "ok items print no block: {}", text.stdout);
    assert!(text.stdout.ends_with("\n\n3 ok, 5 stale, 1 unverified, 0 conflicts\n"), "{}", text.stdout);
    // Nothing written but derived state.
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn what_is_not_a_reference_is_never_flagged() {
    let Some(t) = git_repo() else { return };
    project(&t);
    let at = days_ago(1.0);
    t.memory(
        1,
        "See `https://example.com/docs/a.html` and https://example.com/x/y.rs, pass `--release` or `-p`, edit \
         `~/.cargo/config.toml` or `../sibling/x.rs`, run `cargo` or `cargo nextest run`, need `v1.2` or `3.12.1`, \
         mail `dev@example.com`, push to `origin/main`, plain words like `nextest` and `Cargo`, and/or this.",
        &at,
        &[],
    );
    let v = t.kb(&["--json", "audit", "1"]).ok().json();
    assert_eq!(v["items"], json!([item(&v, "md", json!(1)).clone()]), "only the id asked for");
    let one = item(&v, "md", json!(1));
    assert_eq!((one["verdict"].clone(), one["problems"].clone()), (json!("unverified"), json!([])), "{one}");
    assert_eq!(t.kb(&["audit", "1"]).ok().stdout, "0 ok, 0 stale, 1 unverified, 0 conflicts\n");
}

#[test]
fn near_identical_items_that_differ_in_a_salient_token_conflict() {
    let t = TestEnv::pinned();
    let at = days_ago(1.0);
    t.memory(1, "The api service listens on port 8080", &at, &[]);
    t.memory(2, "The api service listens on port 8081", &at, &[]);
    // The same words, another agent: not compared.
    t.write(
        ".co-cli/knowledge/memories/003-agent.md",
        &format!("---\nagent: reviewer\ncreated: '{at}'\nid: 3\nsource: user-told\ntags: []\n---\n\nThe api service listens on port 8082\n"),
    );
    // A restatement is no conflict.
    t.memory(4, "Deploys go out on Tuesdays after the standup", &at, &[]);
    t.memory(5, "Deploys go out on Tuesdays after the standup meeting", &at, &[]);
    t.write(
        JSONL,
        "{\"id\":\"mem-a\",\"subject\":\"ports\",\"fact\":\"The web server uses port 3000\"}\n\
         {\"id\":\"mem-b\",\"subject\":\"ports\",\"fact\":\"The web server uses port 3001\"}\n\
         {\"id\":\"mem-c\",\"subject\":\"other\",\"fact\":\"The web server uses port 3002\"}\n",
    );
    let run = t.kb(&["--json", "audit"]);
    assert_eq!(run.code, 1, "a conflict: exit 1: {run:?}");
    let v = run.json();
    assert_eq!(v["counts"]["conflicts"], 2, "{v}");
    let one = item(&v, "md", json!(1));
    assert_eq!(one["verdict"], "unverified", "a conflict is not a verdict");
    let (kind, reference, message) = problems(one).remove(0);
    assert_eq!((kind.as_str(), reference.as_str()), ("conflict", "2"));
    assert!(
        message.starts_with("may contradict memory 2 (similarity ") && message.ends_with("`8080` here, `8081` there")
    );
    assert_eq!(one["problems"][0]["hint"], "if one is no longer true: kb forget 2");
    assert_eq!(problems(item(&v, "md", json!(2)))[0].1, "1");
    for quiet in [3, 4, 5] {
        assert_eq!(item(&v, "md", json!(quiet))["problems"], json!([]), "memory {quiet}");
    }
    let b = item(&v, "copilot", json!("mem-b"));
    assert!(problems(b)[0].2.starts_with("may contradict record mem-a"), "{b}");
    assert_eq!(item(&v, "copilot", json!("mem-c"))["problems"], json!([]));
    let text = t.kb(&["audit"]).stdout;
    assert!(
        text.starts_with("Memory 1 (.co-cli/knowledge/memories/001-")
            && text.contains(".md): possible conflict\n  conflict: may contradict memory 2"),
        "{text}"
    );
    assert!(text.ends_with("0 ok, 0 stale, 8 unverified, 2 conflicts\n"), "{text}");

    // Auditing one of them still finds its conflict, and only its own.
    let v = t.kb(&["--json", "audit", "2"]).json();
    assert_eq!(v["items"].as_array().unwrap().len(), 1);
    assert_eq!(v["counts"], json!({"ok": 0, "stale": 0, "unverified": 1, "conflicts": 1}));
}

#[test]
fn ids_and_stores_narrow_the_audit_and_an_unknown_id_is_an_error() {
    let t = TestEnv::pinned();
    t.kb(&["init"]).ok();
    let at = days_ago(1.0);
    t.write("README.md", "# x\n");
    t.memory(1, "See `README.md`", &at, &[]);
    t.memory(2, "The old changelog was `GONE.md`", &at, &[]);
    t.kb(&["decision", "add", "Keep `README.md` short", "--type", "process"]).ok();
    t.kb(&["session", "start", "Rework `src/nowhere.rs`"]).ok();
    t.write(
        ".github/instructions/rust.instructions.md",
        "---\napplyTo: '**/*.rs'\n---\n\nFormat with `rustfmt.toml`\n",
    );

    let v = t.kb(&["--json", "audit", "1", "decision:1"]).ok().json();
    let ids: Vec<&Value> = v["items"].as_array().unwrap().iter().map(|i| &i["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!("decision:1")]);

    let v = t.kb(&["--json", "audit", "--store", "session", "--store", "instructions"]).json();
    let stores: Vec<(&str, &str)> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["store"].as_str().unwrap(), i["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(stores, [("session", "stale"), ("instructions", "stale")]);
    assert_eq!(
        item(&v, "instructions", json!(".github/instructions/rust.instructions.md"))["problems"][0]["message"],
        "`rustfmt.toml` does not exist"
    );

    // The whole audit includes the context file kb init wrote (it names nothing: unverified).
    let v = t.kb(&["--json", "audit"]).json();
    assert_eq!(item(&v, "context", json!(".co-cli/knowledge/context.md"))["verdict"], "unverified");

    let run = t.kb(&["audit", "9"]).err();
    assert!(run.stderr.contains("error: memory 9 not found"), "{}", run.stderr);
    t.kb(&["audit", "decision:7"]).err();
    // A decision id that is no number is named as a decision's, not a memory's.
    let run = t.kb(&["audit", "decision:abc"]).err();
    assert!(run.stderr.contains("invalid decision id 'abc'"), "{}", run.stderr);
    t.kb(&["audit", "mem-nope"]).err();
    t.kb(&["audit", "--store", "bogus"]).usage();
}

#[test]
fn without_git_the_walk_honours_gitignore() {
    let t = TestEnv::pinned();
    std::fs::remove_dir_all(t.root().join(".git")).unwrap();
    t.write(".gitignore", "target/\n");
    t.write("src/lib.rs", "pub fn visible_fn() {}\n");
    t.write("target/gen.rs", "pub fn ignored_fn() {}\n");
    // kb's own knowledge is no evidence for a symbol.
    t.write(".co-cli/knowledge/context.md", "Only here: `context_only_fn`\n");
    let at = days_ago(1.0);
    t.memory(1, "Call `visible_fn` from `src/lib.rs:1`", &at, &[]);
    t.memory(2, "Call `ignored_fn`", &at, &[]);
    t.memory(3, "Call `context_only_fn`", &at, &[]);
    t.memory(4, "Moved to `src/gone.rs`", &at, &[]);
    let v = t.kb(&["--json", "audit", "--store", "md"]).json();
    assert_eq!(item(&v, "md", json!(1))["verdict"], "ok");
    assert_eq!(item(&v, "md", json!(2))["verdict"], "stale", "an ignored file is not tracked");
    assert_eq!(item(&v, "md", json!(3))["verdict"], "stale", "kb's own files are not evidence");
    // No git: no rename history, the plain message.
    assert_eq!(problems(item(&v, "md", json!(4)))[0].2, "`src/gone.rs` does not exist");

    // An empty `.git` folder (no repository git can read) is walked the same way.
    std::fs::create_dir_all(t.root().join(".git")).unwrap();
    let again = t.kb(&["--json", "audit", "--store", "md"]).json();
    assert_eq!(again["counts"], v["counts"]);

    // Where a symbol was found is cached (.co-cli/cache/symbols.json), never trusted blindly: the
    // symbol gone from that file, the file is read again and the others scanned.
    assert!(t.root().join(".co-cli/cache/symbols.json").is_file());
    t.write("src/lib.rs", "pub fn renamed_fn() {}\n");
    let v = t.kb(&["--json", "audit", "1"]).json();
    assert_eq!(problems(item(&v, "md", json!(1)))[0].2, "`visible_fn` occurs in no tracked file");
    t.write("src/other.rs", "pub fn visible_fn() {}\n");
    assert_eq!(t.kb(&["--json", "audit", "1"]).ok().json()["counts"]["ok"], 1);
}

#[test]
fn the_files_kb_compiles_for_agents_are_no_evidence_either() {
    let t = TestEnv::pinned();
    std::fs::remove_dir_all(t.root().join(".git")).unwrap();
    t.kb(&["config", "set", "agents", "cursor,claude"]).ok();
    // The block (in CLAUDE.md and .cursor/rules/kb-context.mdc) holds the project context, the
    // generated rule files the scoped instruction.
    t.write(".co-cli/knowledge/context.md", "Use `compiled_only_fn` always.\n");
    t.write(".github/instructions/api.instructions.md", "---\napplyTo: 'src/**'\n---\nUse `rule_only_fn`\n");
    t.memory(1, "Call `compiled_only_fn` first", &days_ago(1.0), &[]);
    t.memory(2, "Call `rule_only_fn` too", &days_ago(1.0), &[]);
    t.kb(&["compile"]).ok();
    for generated in ["CLAUDE.md", ".cursor/rules/kb-context.mdc"] {
        let text = std::fs::read_to_string(t.root().join(generated)).unwrap();
        assert!(text.contains("compiled_only_fn"), "{generated}: {text}");
    }
    assert!(std::fs::read_to_string(t.root().join(".cursor/rules/kb-api.mdc")).unwrap().contains("rule_only_fn"));
    let v = t.kb(&["--json", "audit", "--store", "md"]).json();
    assert_eq!(item(&v, "md", json!(1))["verdict"], "stale", "{v}");
    assert_eq!(item(&v, "md", json!(2))["verdict"], "stale", "{v}");
    // A file of the project's own that names the symbol is evidence.
    t.write("src/lib.rs", "pub fn compiled_only_fn() {}\n");
    let v = t.kb(&["--json", "audit", "--store", "md"]).json();
    assert_eq!(item(&v, "md", json!(1))["verdict"], "ok");
}

#[test]
fn an_audit_with_nothing_stale_exits_0_and_binary_or_huge_files_are_skipped() {
    let Some(t) = git_repo() else { return };
    t.write("src/main.rs", "fn main() { run_server(); }\n");
    t.write_bytes("assets/blob.bin", b"\x00\x01run_binary_only\x00");
    t.write("data/big.txt", &"huge_only ".repeat(1_000_000));
    git(&t, &["add", "-A"]);
    git(&t, &["commit", "-qm", "start"]);
    let at = days_ago(1.0);
    t.memory(1, "The entry point calls `run_server` in `src/main.rs`", &at, &[]);
    assert_eq!(t.kb(&["audit"]).ok().stdout, "1 ok, 0 stale, 0 unverified, 0 conflicts\n");
    t.memory(2, "`run_binary_only` and `huge_only` are defined", &at, &[]);
    let v = t.kb(&["--json", "audit", "2"]).json();
    let names: Vec<String> = problems(item(&v, "md", json!(2))).into_iter().map(|(_, r, _)| r).collect();
    assert_eq!(names, ["run_binary_only", "huge_only"]);
}

#[test]
fn recall_verify_checks_paths_and_commands_at_use() {
    let Some(t) = git_repo() else { return };
    let rename = project(&t);
    let at = days_ago(1.0);
    t.memory(1, "Handlers live in `src/api/handlers.rs`", &at, &["api"]);
    t.memory(2, "The api is built with `make build` and errors are `NoSuchSymbol`", &at, &["api"]);
    t.memory(3, "The api has no cited file", &at, &["api"]);
    let v = t.kb(&["--json", "recall", "api", "--verify"]).ok().json();
    let by_id = |id: u64| v["results"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(by_id(1)["verified"], "stale");
    assert_eq!(
        by_id(1)["problems"][0]["message"],
        format!("`src/api/handlers.rs` no longer exists (renamed to `src/api/routes.rs` in {rename})")
    );
    assert_eq!(by_id(2)["verified"], "ok", "symbols are left to kb audit: {}", by_id(2));
    assert_eq!((by_id(3)["verified"].clone(), by_id(3)["problems"].clone()), (json!("unverified"), json!([])));
    let text = t.kb(&["recall", "api", "--verify"]).ok().stdout;
    // Each verdict sits within its result's own lines, right after its text.
    assert!(
        text.contains("Handlers live in `src/api/handlers.rs`\nVerified: stale; `src/api/handlers.rs` no longer exists (renamed to"),
        "{text}"
    );
    assert!(text.contains("The api has no cited file\nVerified: unverified"), "{text}");
    assert!(!text.contains("Verified (paths and commands):"), "{text}");
    // Without --verify, nothing is checked.
    let plain = t.kb(&["--json", "recall", "api"]).ok().json();
    assert!(plain["results"][0].get("verified").is_none());
    // --exact too.
    let exact = t.kb(&["--json", "recall", "--exact", "handlers", "--verify"]).ok().json();
    assert_eq!(exact["results"][0]["verified"], "stale");
}

/// Returns the path of an executable script `<base>/traps/<name>` that, when anything runs it,
/// creates `<base>/ran-<name>`.
fn trap(t: &TestEnv, name: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let dir = t.base.join("traps");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join(name);
    std::fs::write(&script, format!("#!/bin/sh\ntouch '{}'\n", t.base.join(format!("ran-{name}")).display())).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script.display().to_string()
}

/// Returns the traps that ran since the last call (and forgets them).
fn sprung(t: &TestEnv) -> Vec<String> {
    let mut ran: Vec<String> = std::fs::read_dir(&t.base)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str()?.strip_prefix("ran-").map(str::to_string))
        .collect();
    ran.sort();
    for name in &ran {
        std::fs::remove_file(t.base.join(format!("ran-{name}"))).unwrap();
    }
    ran
}

#[test]
fn audit_runs_no_program_the_repository_config_names() {
    let Some(t) = git_repo() else { return };
    t.write("src/old.rs", "pub fn kept_symbol() {}\n");
    git(&t, &["add", "-A"]);
    git(&t, &["commit", "-qm", "start"]);
    git(&t, &["mv", "src/old.rs", "src/new.rs"]);
    git(&t, &["commit", "-qm", "rename"]);
    // The rename's commit carries a signature (never checked: git hands it to `gpg.program`).
    let commit = git(&t, &["cat-file", "commit", "HEAD"]);
    let (head, message) = commit.split_once("\n\n").unwrap();
    let signed =
        format!("{head}\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQ==\n -----END PGP SIGNATURE-----\n\n{message}");
    let file = t.base.join("signed-commit");
    std::fs::write(&file, signed).unwrap();
    let id = git(&t, &["hash-object", "-t", "commit", "-w", file.to_str().unwrap()]);
    git(&t, &["update-ref", "HEAD", id.trim()]);
    for (key, name) in [
        ("core.fsmonitor", "fsmonitor"),
        ("log.showSignature", ""),
        ("gpg.program", "gpg"),
        ("core.pager", "pager"),
        ("pager.log", "pager-log"),
        ("diff.external", "external-diff"),
    ] {
        let value = if name.is_empty() { "true".to_string() } else { trap(&t, name) };
        git(&t, &["config", key, &value]);
    }
    t.memory(1, "The helper `kept_symbol` is in `src/old.rs`", &days_ago(1.0), &[]);
    let audit = |t: &TestEnv| {
        let v = t.kb(&["--json", "audit"]).json();
        // git still ran: the rename is named, and the symbol found in a tracked file.
        let found = problems(item(&v, "md", json!(1)));
        assert_eq!(found.len(), 1, "{v}");
        assert!(found[0].2.contains("renamed to `src/new.rs`"), "{v}");
    };
    // The traps work: git itself springs them (ls-files the fsmonitor hook, log the gpg program).
    git(&t, &["ls-files"]);
    git(&t, &["log", "-1", "--format=%h"]);
    assert_eq!(sprung(&t), ["fsmonitor", "gpg"]);
    audit(&t);
    assert_eq!(sprung(&t), Vec::<String>::new(), "kb audit ran a program the repository's config names");
    let recall = t.kb(&["--json", "recall", "helper", "--verify"]).ok().json();
    assert_eq!(recall["results"][0]["verified"], "stale");
    assert_eq!(sprung(&t), Vec::<String>::new(), "kb recall --verify ran a program the repository's config names");

    // The same through a `.git` file naming the git folder (a worktree, a submodule).
    std::fs::rename(t.root().join(".git"), t.base.join("elsewhere.git")).unwrap();
    t.write(".git", "gitdir: ../elsewhere.git\n");
    git(&t, &["ls-files"]);
    assert_eq!(sprung(&t), ["fsmonitor"]);
    audit(&t);
    assert_eq!(sprung(&t), Vec::<String>::new(), "kb audit ran a program the config of a `gitdir:` folder names");
}

#[test]
fn a_partial_clone_fetches_nothing_from_a_remote_it_names() {
    let Some(t) = git_repo() else { return };
    // The origin, with a file renamed and changed (rename detection then needs the old blob).
    let origin = t.base.join("origin");
    git_in(&t, &t.base, &["init", "-q", "origin"]);
    std::fs::create_dir_all(origin.join("src")).unwrap();
    std::fs::write(origin.join("src/old.rs"), (1..40).map(|n| format!("const C{n}: u32 = {n};\n")).collect::<String>())
        .unwrap();
    git_in(&t, &origin, &["add", "-A"]);
    git_in(&t, &origin, &["commit", "-qm", "start"]);
    git_in(&t, &origin, &["mv", "src/old.rs", "src/new.rs"]);
    let mut text = std::fs::read_to_string(origin.join("src/new.rs")).unwrap();
    text.push_str("const MORE: u32 = 0;\n");
    std::fs::write(origin.join("src/new.rs"), text).unwrap();
    git_in(&t, &origin, &["commit", "-qam", "rename"]);
    git_in(&t, &origin, &["config", "uploadpack.allowFilter", "true"]);
    // The repository: a blobless clone of it, whose promisor remote runs a command.
    std::fs::remove_dir_all(t.root()).unwrap();
    let url = format!("file://{}", origin.display());
    git_in(&t, &t.base, &["clone", "-q", "--no-local", "--filter=blob:none", &url, "repo"]);
    git(&t, &["config", "remote.origin.url", &format!("ext::{} %S", trap(&t, "remote"))]);
    git(&t, &["config", "protocol.ext.allow", "always"]);
    // The trap works: git's own rename detection fetches the old blob through it.
    let out = Command::new("git")
        .current_dir(t.root())
        .args(["log", "--name-status", "-M", "--diff-filter=R", "--format=%h"])
        .env("HOME", t.home())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(sprung(&t), ["remote"]);
    t.memory(1, "The constants are in `src/old.rs`", &days_ago(1.0), &[]);
    let v = t.kb(&["--json", "audit"]).json();
    assert_eq!(sprung(&t), Vec::<String>::new(), "kb audit fetched through the repository's remote");
    // No history to read the rename from: the plain message.
    assert_eq!(problems(item(&v, "md", json!(1)))[0].2, "`src/old.rs` does not exist");
}

#[test]
fn a_symlink_out_of_the_root_is_neither_checked_nor_evidence() {
    use std::os::unix::fs::symlink;
    let Some(t) = git_repo() else { return };
    let outside = t.base.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let text = format!("pub struct OutsideOnlySymbol;\n{}", "// more\n".repeat(499));
    std::fs::write(outside.join("outside.rs"), text).unwrap();
    t.write("src/real.rs", "pub fn inside_fn() {}\n\n");
    // Committed symlinks: a file and a folder out of the root, a file inside it.
    symlink(outside.join("outside.rs"), t.root().join("src/link.rs")).unwrap();
    symlink(&outside, t.root().join("vendor")).unwrap();
    symlink("real.rs", t.root().join("src/inner.rs")).unwrap();
    git(&t, &["add", "-A"]);
    git(&t, &["commit", "-qm", "links"]);
    assert!(git(&t, &["ls-files"]).contains("src/link.rs"));
    let at = days_ago(1.0);
    t.memory(1, "The linkcheck setup is at `src/link.rs:400`", &at, &["linkcheck"]);
    t.memory(2, "Errors are `OutsideOnlySymbol`", &at, &[]);
    t.memory(3, "The linkcheck tail is at `src/link.rs:600`", &at, &["linkcheck"]);
    t.memory(4, "The vendored linkcheck code is at `vendor/outside.rs:400`", &at, &["linkcheck"]);
    t.memory(5, "The inner helper is at `src/inner.rs:3`", &at, &[]);
    t.memory(6, "The linked file is `src/link.rs`", &at, &[]);
    let v = t.kb(&["--json", "audit"]).json();
    for id in [1, 3, 4, 6] {
        let it = item(&v, "md", json!(id));
        // (The memories are alike, so they may conflict; that is not a verdict.)
        let found: Vec<_> = problems(it).into_iter().filter(|p| p.0 != "conflict").collect();
        assert_eq!((it["verdict"].clone(), found), (json!("unverified"), vec![]), "memory {id}: {v}");
    }
    assert_eq!(
        problems(item(&v, "md", json!(2))),
        [("symbol".into(), "OutsideOnlySymbol".into(), "`OutsideOnlySymbol` occurs in no tracked file".into())],
        "a file outside the root is no evidence: {v}"
    );
    // A symlink inside the root is followed.
    assert_eq!(
        problems(item(&v, "md", json!(5)))[0].2.as_str(),
        "`src/inner.rs:3` points past the end of `src/inner.rs`, which has 2 lines"
    );
    assert!(!v.to_string().contains("has 500 lines"), "the outside file's length is never shown: {v}");
    // The check at use, the same.
    let recall = t.kb(&["--json", "recall", "linkcheck", "--verify"]).ok().json();
    let results = recall["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{recall}");
    assert!(results.iter().all(|r| r["verified"] == "unverified"), "{recall}");
}

#[test]
fn citations_without_an_extension_and_folders_are_paths() {
    let t = TestEnv::pinned();
    t.write("src/lib.rs", "pub fn f() {}\n");
    t.write("LICENSE", "MIT\n");
    t.write(".ci/check", "#!/bin/sh\nmake lint\n");
    t.write(
        JSONL,
        "{\"id\":\"mem-gone\",\"subject\":\"build\",\"fact\":\"Run `cargo nextest run --workspace`\",\"citations\":[\"Makefile:14\",\".ci/run:3\"]}\n\
         {\"id\":\"mem-here\",\"subject\":\"ci\",\"fact\":\"CI lints\",\"citations\":[\".ci/check:2\",\"LICENSE\"]}\n",
    );
    let at = days_ago(1.0);
    t.memory(1, "Images are in `assets/`, sources in `src/`, `src/*/` and `src/lib.rs`", &at, &[]);
    t.write("src/api/mod.rs", "\n");
    t.memory(2, "The CI script is `.ci/run`, its lint step at `.ci/check:9`, the rules at `Makefile:3`", &at, &[]);
    let v = t.kb(&["--json", "audit"]).json();
    let gone = item(&v, "copilot", json!("mem-gone"));
    assert_eq!(gone["verdict"], "stale", "{gone}");
    assert_eq!(
        problems(gone),
        [
            ("path".to_string(), "Makefile:14".to_string(), "`Makefile` does not exist".to_string()),
            ("path".to_string(), ".ci/run:3".to_string(), "`.ci/run` does not exist".to_string()),
        ]
    );
    assert_eq!(item(&v, "copilot", json!("mem-here"))["verdict"], "ok");
    let one = item(&v, "md", json!(1));
    assert_eq!(
        problems(one),
        [("path".to_string(), "assets/".to_string(), "folder `assets/` does not exist".to_string())]
    );
    let two: Vec<String> = problems(item(&v, "md", json!(2))).into_iter().map(|(_, _, m)| m).collect();
    assert_eq!(
        two,
        [
            "`.ci/run` does not exist",
            "`.ci/check:9` points past the end of `.ci/check`, which has 2 lines",
            "`Makefile` does not exist",
        ]
    );
    // A file where a folder is named is no folder.
    t.write("assets", "not a folder\n");
    let v = t.kb(&["--json", "audit", "1"]).json();
    assert_eq!(item(&v, "md", json!(1))["verdict"], "stale");
    std::fs::remove_file(t.root().join("assets")).unwrap();
    std::fs::create_dir_all(t.root().join("assets")).unwrap();
    let v = t.kb(&["--json", "audit", "1"]).ok().json();
    assert_eq!(item(&v, "md", json!(1))["verdict"], "ok");
}

#[test]
fn line_zero_is_named_as_such() {
    let t = TestEnv::pinned();
    t.write("src/lib.rs", "pub fn f() {}\n");
    t.memory(1, "See `src/lib.rs:0` and `src/lib.rs:0-1`", &days_ago(1.0), &[]);
    let v = t.kb(&["--json", "audit"]).json();
    let messages: Vec<String> =
        problems(item(&v, "md", json!(1))).into_iter().map(|(k, _, m)| format!("{k}: {m}")).collect();
    assert_eq!(
        messages,
        [
            "line: `src/lib.rs:0` names line 0, which does not exist: lines count from 1",
            "line: `src/lib.rs:0-1` names line 0, which does not exist: lines count from 1",
        ]
    );
}

#[test]
fn a_path_in_a_submodule_that_is_not_checked_out_is_unverified() {
    let t = TestEnv::pinned();
    t.write(".gitmodules", "[submodule \"vendor/lib\"]\n\tpath = vendor/lib\n\turl = https://example.com/lib.git\n");
    std::fs::create_dir_all(t.root().join("vendor/lib")).unwrap();
    t.write("src/lib.rs", "pub fn f() {}\n");
    let at = days_ago(1.0);
    t.memory(1, "The parser is `vendor/lib/src/parse.rs:10`", &at, &[]);
    t.memory(2, "Fixtures are in `vendor/lib/tests/*.json`", &at, &[]);
    t.memory(3, "The missing one is `vendor/other/x.rs`", &at, &[]);
    let v = t.kb(&["--json", "audit"]).json();
    assert_eq!(item(&v, "md", json!(1))["verdict"], "unverified", "{v}");
    assert_eq!(item(&v, "md", json!(2))["verdict"], "unverified", "{v}");
    assert_eq!(item(&v, "md", json!(3))["verdict"], "stale", "outside the submodule: {v}");
    // Checked out, the submodule's files are checked as any.
    t.write("vendor/lib/src/parse.rs", "fn parse() {}\n");
    let v = t.kb(&["--json", "audit", "1"]).json();
    assert_eq!(
        problems(item(&v, "md", json!(1)))[0].2,
        "`vendor/lib/src/parse.rs:10` points past the end of `vendor/lib/src/parse.rs`, which has 1 line"
    );
}

#[test]
fn a_rename_hint_names_a_path_that_exists_and_an_uncommitted_rename_first() {
    let Some(t) = git_repo() else { return };
    // History: src/printer.rs went to src/bin/printer.rs and came back; now it moves again,
    // not yet committed.
    t.write("src/printer.rs", "pub fn print_all() {}\n// the printer\n");
    t.write("src/table.rs", "pub fn table_rows() {}\n");
    git(&t, &["add", "-A"]);
    git(&t, &["commit", "-qm", "start"]);
    std::fs::create_dir_all(t.root().join("src/bin")).unwrap();
    git(&t, &["mv", "src/printer.rs", "src/bin/printer.rs"]);
    git(&t, &["commit", "-qm", "to bin"]);
    git(&t, &["mv", "src/bin/printer.rs", "src/printer.rs"]);
    git(&t, &["commit", "-qm", "back"]);
    let at = days_ago(1.0);
    t.memory(1, "Printing is in `src/printer.rs`", &at, &[]);
    t.memory(2, "Tables are in `src/table.rs`", &at, &[]);
    t.memory(3, "The binary printer was `src/bin/printer.rs`", &at, &[]);
    git(&t, &["mv", "src/printer.rs", "src/output.rs"]);
    // Moved in the working tree only: found by its content.
    std::fs::rename(t.root().join("src/table.rs"), t.root().join("src/tables.rs")).unwrap();
    let v = t.kb(&["--json", "audit"]).json();
    let one = item(&v, "md", json!(1));
    assert_eq!(problems(one)[0].2, "`src/printer.rs` no longer exists (renamed to `src/output.rs`, not yet committed)");
    assert_eq!(one["problems"][0]["hint"], "update the reference to `src/output.rs`");
    let two = item(&v, "md", json!(2));
    assert_eq!(problems(two)[0].2, "`src/table.rs` no longer exists (renamed to `src/tables.rs`, not yet committed)");
    // History names src/printer.rs, which is gone too: no hint naming a path that does not exist.
    let three = item(&v, "md", json!(3));
    assert_eq!(
        problems(three)[0].2,
        "`src/bin/printer.rs` no longer exists (renamed to `src/output.rs`, not yet committed)"
    );
    // Committed, the hint names the commit; a file gone for good gets no hint.
    git(&t, &["add", "-A"]);
    git(&t, &["commit", "-qm", "output"]);
    let commit = git(&t, &["rev-parse", "--short", "HEAD"]).trim().to_string();
    git(&t, &["rm", "-q", "src/output.rs"]);
    git(&t, &["commit", "-qm", "gone"]);
    let v = t.kb(&["--json", "audit", "1", "2"]).json();
    assert_eq!(problems(item(&v, "md", json!(1)))[0].2, "`src/printer.rs` does not exist");
    assert_eq!(item(&v, "md", json!(1))["problems"][0]["hint"], Value::Null);
    assert_eq!(
        problems(item(&v, "md", json!(2)))[0].2,
        format!("`src/table.rs` no longer exists (renamed to `src/tables.rs` in {commit})")
    );
}

#[test]
fn cargo_targets_features_and_packages_are_checked() {
    let t = TestEnv::pinned();
    t.write("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n\n[workspace.dependencies]\nserde = \"1\"\n");
    t.write(
        "crates/app/Cargo.toml",
        "[package]\nname = \"app\"\n\n[[bin]]\nname = \"appctl\"\npath = \"src/ctl.rs\"\n\n[dependencies]\nserde.workspace = true\nrmcp = { version = \"3\", optional = true }\n\n[features]\ndefault = []\nfast = [] # quick\n",
    );
    t.write("crates/app/src/main.rs", "fn main() {}\n");
    t.write("crates/app/src/ctl.rs", "fn main() {}\n");
    t.write("crates/app/src/bin/tool.rs", "fn main() {}\n");
    t.write("crates/app/tests/smoke.rs", "#[test]\nfn t() {}\n");
    t.write("crates/app/examples/demo.rs", "fn main() {}\n");
    t.write("crates/core/Cargo.toml", "[package]\nname = \"core\"\n[features]\nsimd = []\n");
    let at = days_ago(1.0);
    t.memory(
        1,
        "Run `cargo run --bin tool`, `cargo run -p app --bin appctl`, `cargo test --test smoke`, \
         `cargo run --example demo`, `cargo build --features fast,rmcp` and `cargo test -p core --features core/simd`, \
         `cargo update -p serde`; `cargo install ripgrep --bin rg` is another crate's.",
        &at,
        &[],
    );
    t.memory(
        2,
        "Run `cargo run --bin gone`, `cargo test --test nope -- --test-threads 1`, `cargo build --features slow` \
         and `cargo test -p missing`",
        &at,
        &[],
    );
    t.memory(3, "Benchmark with `cargo bench --bench speed`", &at, &[]);
    let v = t.kb(&["--json", "audit"]).json();
    let one = item(&v, "md", json!(1));
    assert_eq!((one["verdict"].clone(), problems(one)), (json!("ok"), vec![]), "{one}");
    let two = item(&v, "md", json!(2));
    assert_eq!(two["verdict"], "stale");
    let messages: Vec<String> = problems(two).into_iter().map(|(k, _, m)| format!("{k}: {m}")).collect();
    assert_eq!(
        messages,
        [
            "command: `cargo run --bin gone`: the workspace has no binary `gone` (--bin)",
            "command: `cargo test --test nope -- --test-threads 1`: the workspace has no test target `nope` (--test)",
            "command: `cargo build --features slow`: the workspace has no feature `slow` (--features)",
            "command: `cargo test -p missing`: the workspace has no package `missing` (--package)",
        ]
    );
    assert_eq!(two["problems"][0]["hint"], "binaries: app, appctl, tool");
    let three = item(&v, "md", json!(3));
    assert_eq!(three["problems"][0]["hint"], "the workspace has no bench targets");

    // No Cargo.toml at the root: cargo may run in a folder below; nothing to check against.
    std::fs::remove_file(t.root().join("Cargo.toml")).unwrap();
    let v = t.kb(&["--json", "audit", "2"]).json();
    assert_eq!(item(&v, "md", json!(2))["verdict"], "unverified");
}

#[test]
fn complementary_facts_are_no_conflict() {
    let t = TestEnv::pinned();
    let at = days_ago(1.0);
    t.memory(1, "The project tests everything with `cargo test` before each release", &at, &[]);
    t.memory(2, "The project lints everything with `cargo clippy` before each release", &at, &[]);
    t.memory(3, "Config lives in `config/app.toml` for the api service", &at, &[]);
    t.memory(4, "Config lives in `config/api.yaml` for the api service", &at, &[]);
    let run = t.kb(&["--json", "audit", "--store", "md"]);
    let v = run.json();
    assert_eq!(item(&v, "md", json!(1))["problems"], json!([]), "{v}");
    assert_eq!(item(&v, "md", json!(2))["problems"], json!([]), "{v}");
    // A path on each side still is one.
    assert!(problems(item(&v, "md", json!(3))).iter().any(|(k, r, _)| k == "conflict" && r == "4"), "{v}");
    assert_eq!(v["counts"]["conflicts"], 1);
}

#[test]
fn a_forged_score_cache_never_makes_a_conflict() {
    let t = TestEnv::pinned();
    let at = days_ago(1.0);
    t.memory(1, "Port 8080 serves the public api behind the load balancer", &at, &[]);
    t.memory(2, "Node 20 builds the frontend bundle for release", &at, &[]);
    t.kb(&["audit"]).ok();
    let cache = t.root().join(".co-cli/cache/audit.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    // Both texts in one group, and a pair of them scored 99.
    let groups = v["groups"].as_object_mut().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    let group = groups.values_mut().next().unwrap();
    let texts = group["texts"].clone();
    group["pairs"] = json!([[texts[0], texts[1], 99.0]]);
    std::fs::write(&cache, serde_json::to_vec(&v).unwrap()).unwrap();
    let run = t.kb(&["--json", "audit"]);
    assert_eq!(run.json()["counts"]["conflicts"], 0, "{}", run.stdout);
    assert_eq!(run.code, 0);
}

#[test]
fn the_walk_without_git_opens_no_fifo_and_ignores_no_dot_ignore() {
    let t = TestEnv::pinned();
    std::fs::remove_dir_all(t.root().join(".git")).unwrap();
    t.write(".ignore", "src/\n");
    t.write("src/lib.rs", "pub fn walked_fn() {}\n");
    t.write("gen/.gitignore", "*.rs\n!keep.rs\n");
    t.write("gen/out.rs", "pub fn generated_fn() {}\n");
    t.write("gen/keep.rs", "pub fn kept_fn() {}\n");
    let at = days_ago(1.0);
    t.memory(1, "Call `walked_fn`", &at, &[]);
    t.memory(2, "Call `generated_fn`", &at, &[]);
    t.memory(3, "Call `kept_fn`", &at, &[]);
    let v = t.kb(&["--json", "audit", "--store", "md"]).json();
    assert_eq!(item(&v, "md", json!(1))["verdict"], "ok", "ripgrep's .ignore says nothing of git: {v}");
    assert_eq!(item(&v, "md", json!(2))["verdict"], "stale", "{v}");
    assert_eq!(item(&v, "md", json!(3))["verdict"], "ok", "{v}");
    // FIFOs named as ignore files (and one in place of a source file) block nothing.
    for fifo in [".gitignore", "src/.gitignore", "src/.ignore", "src/pipe.rs"] {
        let p = t.root().join(fifo);
        let status = Command::new("mkfifo").arg(&p).status().expect("mkfifo");
        assert!(status.success());
    }
    let run = kb_within(&t, &["--json", "audit", "--store", "md"], std::time::Duration::from_secs(20));
    assert_eq!(run.json()["counts"], v["counts"], "{run:?}");
}
