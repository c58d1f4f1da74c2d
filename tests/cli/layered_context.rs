//! The compiled block of SPEC §11.5–§11.7: layers in order, per agent and per file, the token
//! budget, and per-agent compile targets.

use crate::common::TestEnv;

const DECISIONS: &str = ".co-cli/knowledge/decisions";

/// Writes a memory with the §11.2 keys by hand.
fn mem(t: &TestEnv, id: u64, created: &str, keys: &str, tags: &[&str], body: &str) {
    let tags = if tags.is_empty() {
        "tags: []\n".to_string()
    } else {
        format!("tags:\n{}", tags.iter().map(|t| format!("- {t}\n")).collect::<String>())
    };
    t.mem_file(
        &format!("{id:03}-m.md"),
        &format!("---\ncreated: '{created}'\nid: {id}\n{keys}source: user-told\n{tags}---\n\n{body}\n"),
    );
}

fn decision(t: &TestEnv, id: u64, created: &str, kind: &str, status: &str, body: &str) {
    t.write(
        &format!("{DECISIONS}/{id:03}-d.md"),
        &format!("---\ncreated: '{created}'\nid: {id}\nstatus: {status}\ntags: []\ntype: {kind}\n---\n\n{body}\n"),
    );
}

/// A repository with every layer.
fn layered() -> TestEnv {
    let t = TestEnv::new();
    t.write(
        ".co-cli/knowledge/context.md",
        "---\nversion: 1\nupdated: 2026-01-01T00:00:00+00:00\n---\n\nProject facts.\n",
    );
    decision(&t, 2, "2026-03-01T00:00:00+00:00", "scope", "active", "Only the api crate talks HTTP");
    decision(&t, 1, "2026-02-01T00:00:00+00:00", "architectural", "active", "Use Postgres\nfor every service");
    decision(&t, 3, "2026-02-15T00:00:00+00:00", "process", "active", "Squash merges only");
    decision(&t, 4, "2026-02-16T00:00:00+00:00", "architectural", "proposed", "Use Kafka");
    decision(&t, 5, "2026-01-16T00:00:00+00:00", "architectural", "superseded", "Use MySQL");
    mem(&t, 1, "2026-01-01T00:00:00+00:00", "type: core_context\n", &[], "Shared core fact");
    mem(&t, 2, "2026-01-02T00:00:00+00:00", "agent: reviewer\ntype: core_context\n", &[], "Reviewer core fact");
    mem(&t, 3, "2026-01-03T00:00:00+00:00", "agent: coder\ntype: core_context\n", &[], "Coder core fact");
    mem(
        &t,
        4,
        "2026-01-04T00:00:00+00:00",
        "agent: coder\ntype: core_context\n",
        &["cross-team"],
        "Coder cross-team fact",
    );
    mem(&t, 5, "2026-01-05T00:00:00+00:00", "importance: high\n", &[], "Older learning");
    mem(&t, 6, "2026-01-06T00:00:00+00:00", "importance: high\ntype: pattern\n", &[], "Newer pattern");
    mem(&t, 7, "2026-01-07T00:00:00+00:00", "importance: high\ntype: update\n", &[], "An update, never a learning");
    mem(&t, 8, "2026-01-08T00:00:00+00:00", "", &[], "A medium learning");
    t.write(
        ".github/instructions/api.instructions.md",
        "---\napplyTo: 'src/api/**/*.rs'\n---\n\nValidate every request body.\n",
    );
    t.write(".github/instructions/all.instructions.md", "---\napplyTo: '**'\n---\n\nWrite tests first.\n");
    t.write(".github/instructions/web.instructions.md", "---\napplyTo: 'web/*.ts'\n---\n\nNo any.\n");
    t.kb(&["session", "start", "Fix the flaky tests"]).ok();
    t.kb(&["session", "update", "The race is in the lexer."]).ok();
    t
}

#[test]
fn sections_come_in_order_with_exact_headers() {
    let t = layered();
    let out = t.kb(&["context", "--agent", "reviewer", "--for", "src/api/routes.rs"]).ok().stdout;
    let expected = "## Boundaries and Decisions\n\n\
        These decisions take precedence over all other context.\n\n\
        - Use Postgres\n  for every service\n\
        - Only the api crate talks HTTP\n\n\
        ## Internal Knowledge\n\n### Project Context\n\nProject facts.\n\n\
        ## Scoped Instructions\n\n### all.instructions.md\n\nWrite tests first.\n\n\
        ### api.instructions.md\n\nValidate every request body.\n\n\
        ## Memory\n\n### Core Context\n\n- Shared core fact\n- Reviewer core fact\n- Coder cross-team fact\n\n\
        ### Learnings\n\n- Newer pattern\n- Older learning\n\n\
        ## Current Session\n\nFocus: Fix the flaky tests\n\nThe race is in the lexer.\n";
    assert_eq!(out, expected);
}

#[test]
fn agents_see_their_own_and_shared_memories() {
    let t = layered();
    let coder = t.kb(&["context", "--agent", "coder"]).ok().stdout;
    assert!(coder.contains("- Coder core fact") && !coder.contains("Reviewer core fact"));
    let nobody = t.kb(&["context"]).ok().stdout;
    assert!(nobody.contains("- Shared core fact\n- Coder cross-team fact\n\n"), "{nobody}");
    assert!(!nobody.contains("Reviewer core fact") && !nobody.contains("Coder core fact\n"));
    // Without --for only always-on instructions apply.
    assert!(nobody.contains("### all.instructions.md") && !nobody.contains("api.instructions.md"));
}

/// Runs kb with one more environment variable; asserts success and returns stdout.
fn kb_env(t: &TestEnv, args: &[&str], key: &str, value: &str) -> String {
    let mut cmd = t.command(args);
    cmd.env(key, value);
    let out = crate::common::run_command(cmd, None);
    assert_eq!(out.code, 0, "{out:?}");
    out.stdout
}

#[test]
fn learnings_respect_the_limit_and_appear_once() {
    let t = layered();
    let out = kb_env(&t, &["context"], "KB_LEARNINGS_LIMIT", "1");
    assert!(out.contains("### Learnings\n\n- Newer pattern\n\n## Current Session"), "{out}");
    let none = kb_env(&t, &["context"], "KB_LEARNINGS_LIMIT", "0");
    assert!(!none.contains("### Learnings"));
    // A high-importance core_context memory shows once, under Core Context.
    mem(&t, 9, "2026-01-09T00:00:00+00:00", "importance: high\ntype: core_context\n", &[], "Core and high");
    let out = t.kb(&["context"]).ok().stdout;
    assert_eq!(out.matches("Core and high").count(), 1);
    assert!(
        out.contains("### Core Context\n\n- Shared core fact\n- Coder cross-team fact\n- Core and high\n"),
        "{out}"
    );
}

#[test]
fn decisions_only_prints_section_one_or_nothing() {
    let t = layered();
    let out = t.kb(&["context", "--decisions-only"]).ok().stdout;
    assert!(out.starts_with("## Boundaries and Decisions\n\n") && !out.contains("## Internal Knowledge"), "{out}");
    let empty = TestEnv::new();
    empty.write(".co-cli/knowledge/context.md", "---\nversion: 1\nupdated: 2026-01-01T00:00:00+00:00\n---\n\nx\n");
    let r = empty.kb(&["context", "--decisions-only"]).ok();
    assert_eq!(r.stdout, "");
    let j = empty.kb(&["--json", "context", "--decisions-only"]).ok().json();
    assert!(j["text"].is_null());
}

#[test]
fn an_empty_layer_leaves_no_header() {
    let t = TestEnv::new();
    t.write(".co-cli/knowledge/context.md", "---\nversion: 1\nupdated: 2026-01-01T00:00:00+00:00\n---\n\nOnly this.\n");
    let out = t.kb(&["context"]).ok().stdout;
    assert_eq!(out, "## Internal Knowledge\n\n### Project Context\n\nOnly this.\n");
}

#[test]
fn json_reports_tokens_and_layers() {
    let t = layered();
    let j = t.kb(&["--json", "context", "--agent", "reviewer"]).ok().json();
    let names: Vec<&str> = j["layers"].as_array().unwrap().iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "decisions",
            "global",
            "project",
            "repository_memories",
            "instructions",
            "core_context",
            "hot",
            "learnings",
            "session",
            "board"
        ]
    );
    assert!(j["tokens"].as_u64().unwrap() > 50);
    assert!(j["max_tokens"].is_null());
    let decisions = &j["layers"][0];
    assert_eq!(decisions["items"], 2);
    assert!(decisions["tokens"].as_u64().unwrap() > 0);
    assert_eq!(j["layers"][5]["items"], 3, "three core-context memories for the reviewer");
}

#[test]
fn a_budget_removes_lowest_priority_first_and_reports_it() {
    let t = layered();
    let full = t.kb(&["--json", "context", "--agent", "reviewer"]).ok().json();
    let tokens = full["tokens"].as_u64().unwrap();
    let budget = (tokens - 15).max(100).to_string();
    let r = t.kb(&["--json", "context", "--agent", "reviewer", "--max-tokens", &budget]).ok();
    let j = r.json();
    let text = j["text"].as_str().unwrap();
    assert!(j["tokens"].as_u64().unwrap() <= budget.parse::<u64>().unwrap());
    assert_eq!(j["max_tokens"].as_u64().unwrap().to_string(), budget);
    assert!(j["truncated"].as_bool().unwrap());
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("<!-- kb: left out ") && last.contains(&format!("to fit the {budget}-token budget")));
    assert!(!text.contains("The race is in the lexer."), "the session summary goes first");
    assert!(text.contains("- Use Postgres"));
    let session = j["layers"].as_array().unwrap().iter().find(|l| l["name"] == "session").unwrap();
    assert!(session["dropped_items"].as_u64().unwrap() >= 1);
    assert!(r.stderr.contains("% of its ") && r.stderr.contains("-token budget"), "{}", r.stderr);
}

#[test]
fn a_tiny_budget_keeps_every_decision_and_warns() {
    let t = layered();
    let r = t.kb(&["context", "--max-tokens", "100"]).ok();
    assert!(r.stdout.contains("- Use Postgres") && r.stdout.contains("- Only the api crate talks HTTP"));
    let big = TestEnv::new();
    for i in 1..=40 {
        decision(
            &big,
            i,
            &format!("2026-02-{:02}T00:00:00+00:00", (i % 28) + 1),
            "scope",
            "active",
            &format!("Decision {i} says a long thing about the services"),
        );
    }
    let r = big.kb(&["context", "--max-tokens", "100"]).ok();
    assert!(r.stdout.contains("Decision 40 says"));
    assert!(r.stderr.contains("over its 100-token budget"), "{}", r.stderr);
}

#[test]
fn bad_budgets_are_usage_errors_and_the_setting_is_validated() {
    let t = layered();
    for bad in ["0", "99", "many", "4294967296", "-5"] {
        t.kb(&["context", "--max-tokens", bad]).usage();
    }
    let j = t.kb(&["--json", "context"]).ok().json();
    let unlimited = j["tokens"].as_u64().unwrap();
    let j: serde_json::Value =
        serde_json::from_str(&kb_env(&t, &["--json", "context"], "KB_CONTEXT_MAX_TOKENS", "100")).unwrap();
    assert_eq!(j["max_tokens"], 100);
    assert!(j["tokens"].as_u64().unwrap() < unlimited);
    for bad in ["99", "lots"] {
        let mut cmd = t.command(&["context"]);
        cmd.env("KB_CONTEXT_MAX_TOKENS", bad);
        let r = crate::common::run_command(cmd, None);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stderr.contains("KB_CONTEXT_MAX_TOKENS"), "{}", r.stderr);
    }
    t.kb(&["config", "set", "context_max_tokens", "50"]).err();
    t.kb(&["config", "set", "context_max_tokens", "8000"]).ok();
    assert_eq!(t.kb(&["--json", "context"]).ok().json()["max_tokens"], 8000);
}

#[test]
fn for_outside_the_root_and_bad_agent_names_are_usage_errors() {
    let t = layered();
    t.kb(&["context", "--for", "../elsewhere/x.rs"]).usage();
    t.kb(&["context", "--for", "/etc/passwd"]).usage();
    t.kb(&["context", "--agent", "a/b"]).usage();
    t.kb(&["context", "--agent", "a\nb"]).usage();
    let abs = t.root().join("src/api/routes.rs");
    let out = t.kb(&["context", "--for", abs.to_str().unwrap()]).ok().stdout;
    assert!(out.contains("### api.instructions.md"));
}

#[test]
fn reading_rewrites_nothing_and_bad_files_are_reported() {
    let t = layered();
    t.write(&format!("{DECISIONS}/009-bad.md"), "---\nid: 9\ntype: [unclosed\n---\n\nBad\n");
    decision(&t, 10, "2026-02-01T00:00:00+00:00", "mystery", "active", "Unknown type");
    t.write(".github/instructions/bad.instructions.md", "---\napplyTo: '{a,b'\n---\n\nNever applied.\n");
    let before = t.snapshot();
    let r = t.kb(&["context", "--for", "a"]).ok();
    assert!(
        r.stderr.contains("009-bad.md") && r.stderr.contains("010-d.md") && r.stderr.contains("bad.instructions.md"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("Unknown type") && !r.stdout.contains("Never applied"));
    assert!(r.stdout.contains("- Use Postgres"), "the other files still load");
    let after = t.snapshot();
    // Only the derived cache may change.
    let strip = |m: std::collections::BTreeMap<String, crate::common::Entry>| -> Vec<String> {
        m.into_keys().filter(|k| !k.contains(".co-cli/cache")).collect()
    };
    assert_eq!(strip(before), strip(after));
}

#[test]
fn targets_get_their_own_block() {
    let t = layered();
    t.write("AGENTS.md", "# Agents\n\nHand-written.\n");
    t.kb(&[
        "config",
        "set",
        "context_targets",
        r#"["AGENTS.md", {"path": "REVIEW.md", "agent": "reviewer", "for": ["src/api/x.rs"]}, {"path": "WORKERS.md", "decisions_only": true}]"#,
    ])
    .ok();
    t.kb(&["compile"]).ok();
    let agents = std::fs::read_to_string(t.root().join("AGENTS.md")).unwrap();
    let review = std::fs::read_to_string(t.root().join("REVIEW.md")).unwrap();
    let workers = std::fs::read_to_string(t.root().join("WORKERS.md")).unwrap();
    assert!(agents.starts_with("# Agents\n\nHand-written.\n") && agents.contains("<!-- kb:context:begin -->"));
    assert!(!agents.contains("Reviewer core fact") && review.contains("Reviewer core fact"));
    assert!(review.contains("### api.instructions.md") && !agents.contains("### api.instructions.md"));
    assert!(workers.contains("## Boundaries and Decisions") && !workers.contains("## Internal Knowledge"));
    // Bad target entries are settings errors naming the entry.
    let r = t.kb(&["config", "set", "context_targets", r#"[{"path": "X.md", "agnet": "a"}]"#]).err();
    assert!(r.stderr.contains("agnet"), "{}", r.stderr);
    t.kb(&["config", "set", "context_targets", r#"[{"path": "X.md", "agent": "a/b"}]"#]).err();
    t.kb(&["config", "set", "context_targets", r#"[{"path": "X.md", "max_tokens": 50}]"#]).err();
}

#[test]
fn check_reports_a_target_for_path_outside_the_root() {
    let t = layered();
    t.write(".co-cli/settings.json", r#"{"context_targets": [{"path": "R.md", "for": ["../outside.rs"]}]}"#);
    let r = t.kb(&["check"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("settings.json") && r.stdout.contains("\"for\""), "{}", r.stdout);
    // The compile still writes the target, without instructions from that path.
    t.kb(&["compile"]).ok();
    assert!(std::fs::read_to_string(t.root().join("R.md")).unwrap().contains("## Boundaries and Decisions"));
}
