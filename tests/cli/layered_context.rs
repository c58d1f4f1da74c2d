//! The layered compiled block (docs/behaviour.md): layers in order, per agent and per file, the
//! token budget, and per-agent compile targets.

use crate::common::{TestEnv, assert_same_tree, copy_tree};

const DECISIONS: &str = ".co-cli/knowledge/decisions";

/// Writes a memory with the `type`, `importance` and `agent` keys by hand.
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
    t.kb(&["--json", "context", "--agent", "reviewer", "--for", "src/api/x.rs", "--max-tokens", "100"]).ok();
    t.kb(&["context", "--decisions-only"]).ok();
    t.kb(&["instructions", "--for", "a"]).ok();
    t.kb(&["decision", "list", "--all"]).ok();
    t.kb(&["session", "show"]).ok();
    // Only the derived cache (not in the snapshot) may change: no byte, inode or mtime elsewhere.
    assert_same_tree(&before, &t.snapshot());
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

/// Boundaries and Decisions: only active `architectural` and `scope` decisions, oldest first by
/// `created` (parsed, so offsets count), then by id; a body's further lines are indented two
/// spaces. `--decisions-only` prints nothing when no decision qualifies, even when others exist.
#[test]
fn decisions_are_active_architectural_or_scope_oldest_first_then_by_id() {
    let t = TestEnv::new();
    decision(&t, 7, "2026-02-01T00:00:00+00:00", "scope", "active", "Seven, same time as three");
    decision(&t, 3, "2026-02-01T00:00:00+00:00", "architectural", "active", "Three\nsecond line\n\nthird para");
    decision(&t, 9, "2026-02-01T02:00:00+03:00", "scope", "active", "Nine, earliest by its offset");
    for (id, kind, status) in [
        (10, "technical", "active"),
        (11, "process", "active"),
        (12, "architectural", "proposed"),
        (13, "scope", "archived"),
        (14, "architectural", "rejected"),
    ] {
        decision(&t, id, "2026-01-01T00:00:00+00:00", kind, status, &format!("Never shown {id}"));
    }
    t.write(
        &format!("{DECISIONS}/015-d.md"),
        "---\ncreated: '2026-01-01T00:00:00+00:00'\nid: 15\nstatus: superseded\nsuperseded_by: 3\ntags: []\ntype: scope\n---\n\nNever shown 15\n",
    );
    let out = t.kb(&["context"]).ok().stdout;
    assert_eq!(
        out,
        "## Boundaries and Decisions\n\nThese decisions take precedence over all other context.\n\n\
         - Nine, earliest by its offset\n- Three\n  second line\n\n  third para\n- Seven, same time as three\n"
    );
    assert_eq!(t.kb(&["context", "--decisions-only"]).ok().stdout, out);

    let none = TestEnv::new();
    decision(&none, 1, "2026-01-01T00:00:00+00:00", "technical", "active", "Use nextest");
    decision(&none, 2, "2026-01-01T00:00:00+00:00", "architectural", "proposed", "Use Kafka");
    none.write(".co-cli/knowledge/context.md", "---\nversion: 1\nupdated: 2026-01-01T00:00:00+00:00\n---\n\nx\n");
    assert_eq!(none.kb(&["context", "--decisions-only"]).ok().stdout, "");
    let j = none.kb(&["--json", "context", "--decisions-only"]).ok().json();
    assert!(j["text"].is_null(), "{j}");
    assert_eq!(j["layers"][0]["items"], 0);
    assert!(!none.kb(&["context"]).ok().stdout.contains("Boundaries"));
}

/// Counts `o200k_base` tokens with tiktoken-rs, independently of kb's own counter.
fn tiktoken(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len()
}

/// A repository whose every item carries a unique word, listed in the order a budget removes them:
/// the board (the lowest priority, the last section), the session summary, the session (focus);
/// learnings oldest first; hot memories coldest first; Repository Memories lowest vote score then
/// oldest; scoped instructions last first; core context newest first; then the Project and the
/// Global Context, cut section-aware (last paragraph first).
fn removal_fixture() -> (TestEnv, Vec<&'static str>) {
    let t = TestEnv::new();
    crate::context::write_global(
        &t,
        &crate::context::context_file(
            "Globone paragraph about the team and its habits.\n\nGlobtwo paragraph about the editors we use.",
        ),
    );
    t.write(
        ".co-cli/knowledge/context.md",
        &crate::context::context_file(
            "Projone paragraph describing the service layout.\n\n## Later\n\nProjtwo paragraph describing the release train.",
        ),
    );
    decision(&t, 1, "2026-02-01T00:00:00+00:00", "architectural", "active", "Decisionword says: use Postgres");
    for (id, day, word) in [(1, 1, "Coreold"), (2, 2, "Coremid"), (3, 3, "Corenew")] {
        let body = format!("{word} core context memory about the deployment pipeline");
        mem(&t, id, &format!("2026-01-0{day}T00:00:00+00:00"), "type: core_context\n", &[], &body);
    }
    for (id, day, word) in [(4, 4, "Learnold"), (5, 5, "Learnmid"), (6, 6, "Learnnew")] {
        let body = format!("{word} high importance learning about flaky tests");
        mem(&t, id, &format!("2026-01-0{day}T00:00:00+00:00"), "importance: high\n", &[], &body);
    }
    // Hot memories: heat is the number of accesses (`kb show`) in the window.
    for (id, shows, word) in [(7, 3, "Hotthree"), (8, 5, "Hotfive"), (9, 4, "Hotfour")] {
        mem(&t, id, "2026-01-07T00:00:00+00:00", "", &[], &format!("{word} memory that people look up often"));
        for _ in 0..shows {
            t.kb(&["show", &id.to_string()]).ok();
        }
    }
    // File order is not removal order: the score first, then the age.
    t.write(
        ".github/copilot-memories.jsonl",
        concat!(
            "{\"id\":\"r1\",\"subject\":\"up\",\"fact\":\"Recordup fact with two up votes\",\"created\":\"2026-01-01T00:00:00+00:00\",\"votes\":{\"up\":2,\"down\":0}}\n",
            "{\"id\":\"r2\",\"subject\":\"new\",\"fact\":\"Recordnew fact without votes\",\"created\":\"2026-01-03T00:00:00+00:00\"}\n",
            "{\"id\":\"r3\",\"subject\":\"old\",\"fact\":\"Recordold fact without votes\",\"created\":\"2026-01-02T00:00:00+00:00\"}\n",
        ),
    );
    for (name, word) in [("a", "Instra"), ("b", "Instrb"), ("c", "Instrc")] {
        t.write(
            &format!(".github/instructions/{name}.instructions.md"),
            &format!("---\napplyTo: '**'\n---\n\n{word} instruction body for every file.\n"),
        );
    }
    t.kb(&["session", "start", "Sessionfocus on the parser"]).ok();
    t.kb(&["session", "update", "Sessionsummary: the lexer is done"]).ok();
    t.kb(&["board", "add", "build-recipe", "--description", "Boardword: how CI builds", "cargo nextest run"]).ok();
    let order = vec![
        "Boardword",
        "Sessionsummary",
        "Sessionfocus",
        "Learnold",
        "Learnmid",
        "Learnnew",
        "Hotthree",
        "Hotfour",
        "Hotfive",
        "Recordold",
        "Recordnew",
        "Recordup",
        "Instrc",
        "Instrb",
        "Instra",
        "Corenew",
        "Coremid",
        "Coreold",
        "Projtwo",
        "Projone",
        "Globtwo",
        "Globone",
    ];
    (t, order)
}

/// Asserts that what `text` lacks of `order` is a prefix of it, and returns its length.
fn removed_prefix(text: &str, order: &[&str], what: &str) -> usize {
    let gone: Vec<bool> = order.iter().map(|w| !text.contains(w)).collect();
    let n = gone.iter().take_while(|&&g| g).count();
    assert!(
        gone[n..].iter().all(|&g| !g),
        "{what}: removed out of order: {:?}\n{text}",
        order.iter().zip(&gone).filter(|(_, g)| **g).map(|(w, _)| *w).collect::<Vec<_>>()
    );
    n
}

/// Budget by budget: whole items go in the documented order; the block (marker line included) fits
/// the budget, counted as tiktoken counts the final text; the marker line says how many items and
/// tokens went, by layer, and agrees with the JSON layers; an emptied section leaves no header;
/// decisions stay; the 80 % warning comes when it should.
#[test]
fn a_budget_removes_items_in_the_spec_order_budget_by_budget() {
    let (t, order) = removal_fixture();
    let full = t.kb(&["--json", "context", "--board"]).ok().json();
    let full_text = full["text"].as_str().unwrap().to_string();
    assert_eq!(removed_prefix(&full_text, &order, "no budget"), 0);
    let full_tokens = full["tokens"].as_u64().unwrap() as usize;
    assert_eq!(full_tokens, tiktoken(&full_text), "the count is tiktoken's");
    let full_items: Vec<u64> =
        full["layers"].as_array().unwrap().iter().map(|l| l["items"].as_u64().unwrap()).collect();
    let marker = regex::Regex::new(
        r"^<!-- kb: left out (\d+) items \((\d+) tokens\) to fit the (\d+)-token budget(?:: (.+))? -->$",
    )
    .unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let mut short = Vec::new();
    for budget in (100..=full_tokens + 1).rev() {
        let b = budget.to_string();
        let run = t.kb(&["--json", "context", "--board", "--max-tokens", &b]).ok();
        let j = run.json();
        let text = j["text"].as_str().unwrap();
        let tokens = j["tokens"].as_u64().unwrap() as usize;
        assert_eq!(tokens, tiktoken(text), "{budget}: tokens of the final text, marker included");
        assert!(tokens <= budget, "{budget}: {tokens} tokens\n{text}\n{}", run.stderr);
        assert_eq!(j["max_tokens"].as_u64(), Some(budget as u64));
        assert!(text.contains("- Decisionword says: use Postgres"), "{budget}: decisions are never removed");
        let n = removed_prefix(text, &order, &b);
        seen.insert(n);
        let layers = j["layers"].as_array().unwrap();
        let dropped_items: u64 = layers.iter().map(|l| l["dropped_items"].as_u64().unwrap()).sum();
        let dropped_tokens: u64 = layers.iter().map(|l| l["dropped_tokens"].as_u64().unwrap()).sum();
        for (l, all) in layers.iter().zip(&full_items) {
            let (items, dropped) = (l["items"].as_u64().unwrap(), l["dropped_items"].as_u64().unwrap());
            assert!(items + dropped == *all || (dropped == 0 && items == *all), "{budget}: {l}");
        }
        let last = text.lines().last().unwrap();
        assert_eq!(j["truncated"], serde_json::json!(budget < full_tokens), "{budget}");
        if budget >= full_tokens {
            assert_eq!(text, full_text, "{budget}: nothing to leave out");
            assert!(!last.starts_with("<!--"), "{budget}");
        } else {
            let caps = marker.captures(last).unwrap_or_else(|| panic!("{budget}: no marker line: {last:?}"));
            assert_eq!(caps[1].parse::<u64>().unwrap(), dropped_items, "{budget}: {last}");
            assert_eq!(caps[2].parse::<u64>().unwrap(), dropped_tokens, "{budget}: {last}");
            assert_eq!(&caps[3], b.as_str());
            // By layer, in priority order: `name N (T tokens)`, or `name cut (T tokens)` for a
            // context file kept in part; when the decisions and that line do not fit, the line
            // says less (`name N`, then the totals alone) rather than break the budget.
            let (full, counts): (Vec<String>, Vec<String>) = layers
                .iter()
                .filter(|l| l["dropped_items"].as_u64().unwrap() > 0 || l["dropped_tokens"].as_u64().unwrap() > 0)
                .map(|l| {
                    let (name, d, t) = (l["name"].as_str().unwrap(), &l["dropped_items"], &l["dropped_tokens"]);
                    let what = if d == 0 { "cut".to_string() } else { d.to_string() };
                    (format!("{name} {what} ({t} tokens)"), format!("{name} {what}"))
                })
                .unzip();
            match caps.get(4).map(|m| m.as_str()) {
                Some(list) if list == full.join(", ") => {}
                Some(list) => {
                    assert_eq!(list, counts.join(", "), "{budget}");
                    short.push(budget);
                }
                None => short.push(budget),
            }
        }
        // An emptied section leaves no header behind.
        let words = |from: &str, to: &str| -> Vec<&str> {
            let (a, b) = (order.iter().position(|w| *w == from).unwrap(), order.iter().position(|w| *w == to).unwrap());
            order[a..=b].to_vec()
        };
        let memory: Vec<&str> = words("Learnold", "Hotfive").into_iter().chain(words("Corenew", "Coreold")).collect();
        for (header, words) in [
            ("<dynamic_context_board>", words("Boardword", "Boardword")),
            ("## Current Session", words("Sessionsummary", "Sessionfocus")),
            ("### Learnings", words("Learnold", "Learnnew")),
            ("### Hot Memories", words("Hotthree", "Hotfive")),
            ("### Repository Memories", words("Recordold", "Recordup")),
            ("## Scoped Instructions", words("Instrc", "Instra")),
            ("### Core Context", words("Corenew", "Coreold")),
            ("## Memory", memory),
        ] {
            let any = words.iter().any(|w| text.contains(w));
            assert_eq!(text.contains(header), any, "{budget}: {header}\n{text}");
        }
        // The 80 % warning.
        let warned =
            run.stderr.contains(&format!("context uses {}% of its {budget}-token budget", tokens * 100 / budget));
        assert_eq!(warned, tokens * 5 >= budget * 4, "{budget}: {tokens} tokens: {}", run.stderr);
    }
    // Every item went at some budget, one at a time or a few together.
    assert!(seen.contains(&0) && seen.iter().max() >= Some(&19), "{seen:?}");
    // The shorter lines come only at the smallest budgets, where the full one cannot fit.
    assert!(short.iter().all(|&b| b < 130), "{short:?}");
}

/// With no budget, the byte limits apply to the whole block, and truncation removes items in the
/// budget's order: the session (summary first), learnings oldest first, Repository Memories lowest
/// score then oldest, instructions last first, core context newest first; the context files and the
/// decisions stay whole when that is enough.
#[test]
fn without_a_budget_the_byte_limit_removes_items_in_the_same_order() {
    let t = TestEnv::new();
    let filler = |word: &str, n: usize| format!("{word} {}", "and the build runs on every push ".repeat(n));
    crate::context::write_global(&t, &crate::context::context_file(&filler("Globword", 5)));
    t.write(".co-cli/knowledge/context.md", &crate::context::context_file(&filler("Projword", 8)));
    decision(&t, 1, "2026-02-01T00:00:00+00:00", "scope", "active", "Decisionword: only the api crate talks HTTP");
    let mut order: Vec<String> = vec!["Sessionsummary".into(), "Sessionfocus".into()];
    for i in 1..=5u64 {
        let word = format!("Learn{i:02}x");
        mem(&t, 100 + i, &format!("2026-01-{i:02}T00:00:00+00:00"), "importance: high\n", &[], &filler(&word, 15));
        order.push(word);
    }
    t.write(
        ".github/copilot-memories.jsonl",
        &[("up", 2, "01"), ("new", 0, "03"), ("old", 0, "02")]
            .iter()
            .map(|(w, up, day)| {
                format!(
                    "{{\"subject\":\"s\",\"fact\":\"{}\",\"created\":\"2026-01-{day}T00:00:00+00:00\",\"votes\":{{\"up\":{up},\"down\":0}}}}\n",
                    filler(&format!("Record{w}"), 8)
                )
            })
            .collect::<String>(),
    );
    order.extend(["Recordold", "Recordnew", "Recordup"].map(String::from));
    for name in ["a", "b", "c"] {
        t.write(
            &format!(".github/instructions/{name}.instructions.md"),
            &format!("---\napplyTo: '**'\n---\n\n{}\n", filler(&format!("Instr{name}x"), 30)),
        );
    }
    order.extend(["Instrcx", "Instrbx", "Instrax"].map(String::from));
    let mut core = Vec::new();
    for i in 1..=40u64 {
        let word = format!("Core{i:02}x");
        mem(&t, i, &format!("2025-12-01T00:{i:02}:00+00:00"), "type: core_context\n", &[], &filler(&word, 15));
        core.push(word);
    }
    order.extend(core.into_iter().rev());
    t.kb(&["session", "start", "Sessionfocus on the parser"]).ok();
    t.kb(&["session", "update", &filler("Sessionsummary", 40)]).ok();

    let run = t.kb(&["--json", "context"]).ok();
    let j = run.json();
    let text = j["text"].as_str().unwrap();
    assert!(j["max_tokens"].is_null() && j["truncated"] == true, "{j}");
    assert!(text.len() <= 20_480 && j["bytes"] == text.len(), "{}", text.len());
    let words: Vec<&str> = order.iter().map(String::as_str).collect();
    let n = removed_prefix(text, &words, "byte limit");
    assert!(n > 13, "core context went too: {n} items removed");
    assert!(n < words.len(), "some core context stays");
    let whole = |s: String| text.contains(s.trim_end());
    assert!(whole(filler("Globword", 5)) && whole(filler("Projword", 8)), "files stay whole");
    assert!(text.contains("- Decisionword: only the api crate talks HTTP"));
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("[truncated by kb: ") && last.contains("-byte limit ("), "{last}");
    for title in ["Current Session", "Learnings", "Repository Memories", "Scoped Instructions", "Core Context"] {
        assert!(last.contains(&format!("{title}: ")), "{title} not in {last}");
    }
    assert!(run.stderr.contains("exceeds hard limit 20480 bytes"), "{}", run.stderr);
    let layers = j["layers"].as_array().unwrap();
    let core_layer = layers.iter().find(|l| l["name"] == "core_context").unwrap();
    assert_eq!(core_layer["dropped_items"].as_u64().unwrap() as usize, n - 13);
    assert_eq!(core_layer["items"].as_u64().unwrap() as usize, 40 - (n - 13));
}

/// Decisions alone over the budget are all kept, and the warning says by how many tokens the block
/// exceeds it (exit 0); everything else is left out and the marker says so.
#[test]
fn decisions_over_the_budget_warn_by_how_many_tokens() {
    let t = layered();
    for i in 10..=50 {
        decision(&t, i, "2026-03-01T00:00:00+00:00", "scope", "active", &format!("Decision {i} says a long thing"));
    }
    let run = t.kb(&["--json", "context", "--max-tokens", "100"]).ok();
    let j = run.json();
    let text = j["text"].as_str().unwrap();
    let tokens = j["tokens"].as_u64().unwrap();
    assert!(tokens > 100, "{tokens}");
    assert_eq!(tokens as usize, tiktoken(text));
    assert_eq!(j["layers"][0]["items"], 43, "every active architectural or scope decision stays");
    assert_eq!(j["layers"][0]["dropped_items"], 0);
    let want = format!("the block is {tokens} tokens, {} over its 100-token budget", tokens - 100);
    assert!(run.stderr.contains(&want), "{want:?} not in {}", run.stderr);
    assert!(!run.stderr.contains("context uses"), "{}", run.stderr);
    for gone in ["## Internal Knowledge", "## Scoped Instructions", "## Memory", "## Current Session"] {
        assert!(!text.contains(gone), "{gone}");
    }
    assert!(text.lines().last().unwrap().starts_with("<!-- kb: left out "), "{text}");
}

/// The token count is on the final text, `--wrap` included, with or without a budget.
#[test]
fn tokens_are_counted_on_the_final_text_wrap_included() {
    let t = layered();
    let plain = t.kb(&["--json", "context"]).ok().json();
    let wrapped = t.kb(&["--json", "context", "--wrap"]).ok().json();
    let text = wrapped["text"].as_str().unwrap();
    assert!(text.starts_with("<system-reminder>\n") && text.ends_with("\n</system-reminder>"), "{text}");
    assert_eq!(wrapped["tokens"].as_u64().unwrap() as usize, tiktoken(text));
    assert!(wrapped["tokens"].as_u64() > plain["tokens"].as_u64());
    let budget = (plain["tokens"].as_u64().unwrap() - 5).to_string();
    let fitted = t.kb(&["--json", "context", "--wrap", "--max-tokens", &budget]).ok().json();
    let text = fitted["text"].as_str().unwrap();
    assert!(text.ends_with(" -->\n</system-reminder>"), "the marker is the last line inside the wrapper: {text}");
    assert_eq!(fitted["tokens"].as_u64().unwrap() as usize, tiktoken(text));
    assert!(fitted["tokens"].as_u64().unwrap() <= budget.parse().unwrap());
}

/// `--max-tokens` wins over `context_max_tokens`; the setting is an integer ≥ 100 or null (none),
/// from a settings file or `KB_CONTEXT_MAX_TOKENS` (which wins over the files); a bad value is an
/// error naming where it came from, and a `kb check` problem.
#[test]
fn the_budget_comes_from_the_flag_then_the_setting() {
    let t = layered();
    let unlimited = t.kb(&["--json", "context"]).ok().json()["tokens"].as_u64().unwrap();
    t.kb(&["config", "set", "context_max_tokens", "100"]).ok();
    let j = t.kb(&["--json", "context", "--max-tokens", "5000"]).ok().json();
    assert_eq!((j["max_tokens"].as_u64(), j["tokens"].as_u64()), (Some(5000), Some(unlimited)), "the flag wins");
    let j = t.kb(&["--json", "context"]).ok().json();
    assert_eq!(j["max_tokens"], 100);
    let j: serde_json::Value =
        serde_json::from_str(&kb_env(&t, &["--json", "context"], "KB_CONTEXT_MAX_TOKENS", "3000")).unwrap();
    assert_eq!(j["max_tokens"], 3000, "the environment wins over the files");
    let j: serde_json::Value =
        serde_json::from_str(&kb_env(&t, &["--json", "context"], "KB_CONTEXT_MAX_TOKENS", "")).unwrap();
    assert_eq!(j["max_tokens"], 100, "an empty variable is ignored");
    t.kb(&["config", "set", "context_max_tokens", "null"]).ok();
    let j = t.kb(&["--json", "context"]).ok().json();
    assert!(j["max_tokens"].is_null() && j["tokens"] == unlimited, "null: no budget");
    assert!(t.kb(&["--json", "config"]).ok().json()["context_max_tokens"]["value"].is_null());

    for bad in ["0", "99", "\"lots\"", "4294967296", "1.5", "true", "[]"] {
        t.write(".co-cli/settings.json", &format!("{{\"context_max_tokens\": {bad}}}"));
        let before = t.snapshot();
        let run = t.kb(&["context"]).err();
        assert!(
            run.stderr.contains("settings.json") && run.stderr.contains("context_max_tokens"),
            "{bad}: {}",
            run.stderr
        );
        assert!(run.stderr.contains("an integer from 100 to 4294967295, or null"), "{bad}: {}", run.stderr);
        let check = t.kb(&["--json", "check"]);
        assert_eq!(check.code, 1, "{bad}: {check:?}");
        assert!(check.stdout.contains("context_max_tokens"), "{bad}: {check:?}");
        assert_same_tree(&before, &t.snapshot());
        let run = t.kb(&["config", "set", "context_max_tokens", bad]).err();
        assert!(run.stderr.contains("context_max_tokens"), "{bad}: {run:?}");
    }
    std::fs::remove_file(t.root().join(".co-cli/settings.json")).unwrap();
    for bad in ["0", "-1", "4294967296", "lots"] {
        let mut cmd = t.command(&["context"]);
        cmd.env("KB_CONTEXT_MAX_TOKENS", bad);
        let run = crate::common::run_command(cmd, None).err();
        assert!(run.stderr.contains(&format!("KB_CONTEXT_MAX_TOKENS='{bad}'")), "{bad}: {}", run.stderr);
    }
}

/// `learnings_limit` is an integer 0–100 (`KB_LEARNINGS_LIMIT`); a bad value names its origin.
#[test]
fn learnings_limit_is_validated() {
    let t = layered();
    t.kb(&["config", "set", "learnings_limit", "100"]).ok();
    t.kb(&["config", "set", "learnings_limit", "0"]).ok();
    assert!(!t.kb(&["context"]).ok().stdout.contains("### Learnings"));
    for bad in ["101", "-1", "lots", "2.5"] {
        let run = t.kb(&["config", "set", "learnings_limit", "--", bad]).err();
        assert!(run.stderr.contains("an integer from 0 to 100"), "{bad}: {run:?}");
        let mut cmd = t.command(&["context"]);
        cmd.env("KB_LEARNINGS_LIMIT", bad);
        // The environment wins over the file that holds 0.
        let run = crate::common::run_command(cmd, None).err();
        assert!(run.stderr.contains("KB_LEARNINGS_LIMIT"), "{bad}: {}", run.stderr);
    }
}

/// Bad input: two open sessions after a merge leave `session.md` with conflict markers; `kb
/// context` leaves the session out with a warning naming the file, the other layers still load, and
/// nothing is rewritten.
#[test]
fn a_conflicted_session_is_left_out_with_a_warning() {
    let t = layered();
    t.write(
        ".co-cli/knowledge/session.md",
        "<<<<<<< HEAD\n---\nfocus: mine\nstarted: '2026-11-22T12:00:00+00:00'\n---\n\nmy summary\n=======\n---\nfocus: theirs\nstarted: '2026-11-22T11:00:00+00:00'\n---\n\ntheir summary\n>>>>>>> origin/main\n",
    );
    let before = t.snapshot();
    let run = t.kb(&["--json", "context", "--agent", "reviewer"]).ok();
    let j = run.json();
    let text = j["text"].as_str().unwrap();
    assert!(!text.contains("## Current Session") && !text.contains("summary"), "{text}");
    assert!(text.contains("- Use Postgres") && text.contains("- Reviewer core fact"), "{text}");
    assert!(
        run.stderr.contains(".co-cli/knowledge/session.md:1:") && run.stderr.contains("conflict markers"),
        "{}",
        run.stderr
    );
    let warnings = j["warnings"].to_string();
    assert!(warnings.contains("session.md") && warnings.contains("conflict markers"), "{warnings}");
    // A target leaves the open session out (§8: it is one person's), so its conflict is no
    // reason to fail.
    t.kb(&["compile"]).ok();
    // One that asks for it is written without the session, and compile exits 1 so CI notices.
    t.write(
        ".co-cli/settings.json",
        r#"{"context_targets": [{"path": ".co-cli/knowledge/compiled.md", "session": true}]}"#,
    );
    t.kb(&["compile"]).err();
    let compiled = std::fs::read_to_string(t.root().join(".co-cli/knowledge/compiled.md")).unwrap();
    assert!(compiled.contains("- Use Postgres") && !compiled.contains("Focus:"));
    let after = t.snapshot();
    assert_eq!(before[".co-cli/knowledge/session.md"], after[".co-cli/knowledge/session.md"], "never rewritten");
}

/// kb never edits instruction files: no read, compile or check rewrites one, good or bad.
#[test]
fn instruction_files_are_never_edited() {
    let t = layered();
    t.write(".github/instructions/bad.instructions.md", "---\napplyTo: 'src/['\n---\n\nNever applied.\n");
    t.write(".github/instructions/list.instructions.md", "---\napplyTo:\n- '**'\n---\n\nA list.\n");
    let snap = |t: &TestEnv| -> Vec<(String, crate::common::Entry)> {
        t.snapshot().into_iter().filter(|(k, _)| k.starts_with(".github/instructions")).collect()
    };
    let before = snap(&t);
    t.kb(&["instructions", "--for", "src/api/x.rs"]).ok();
    t.kb(&["context", "--for", "src/api/x.rs"]).ok();
    t.kb(&["compile"]).ok();
    t.kb(&["watch", "--once"]).ok();
    assert_eq!(t.kb(&["check"]).code, 1);
    t.kb(&["save", "A new memory after the instructions"]).ok();
    assert_eq!(before, snap(&t));
}

/// An object target's `max_tokens` fits that target's block (marker line included); `hot` and
/// `board` are booleans (`hot` defaults to false: a committed file leaves Hot Memories out); each
/// target gets its own block from one `kb compile`.
#[test]
fn target_options_max_tokens_hot_and_board() {
    let t = layered();
    for id in 20..30 {
        let body = format!("Reviewer fact {id}: check the changelog, the migration notes and the test plan");
        mem(&t, id, &format!("2026-02-{id:02}T00:00:00+00:00"), "agent: reviewer\ntype: core_context\n", &[], &body);
    }
    let full = t.kb(&["--json", "context", "--agent", "reviewer"]).ok().json()["tokens"].as_u64().unwrap();
    let budget = full - 20;
    let targets = format!(
        r#"[{{"path": "SMALL.md", "agent": "reviewer", "max_tokens": {budget}}}, {{"path": "HOT.md", "hot": true, "board": false}}, {{"path": "PLAIN.md", "hot": false}}]"#
    );
    t.kb(&["config", "set", "context_targets", &targets]).ok();
    let shown = t.kb(&["--json", "config"]).ok().json()["context_targets"]["value"].clone();
    assert_eq!(
        shown,
        serde_json::json!([{"path": "SMALL.md", "agent": "reviewer", "max_tokens": budget}, {"path": "HOT.md", "hot": true}, "PLAIN.md"])
    );
    let j = t.kb(&["--json", "compile"]).ok().json();
    assert_eq!(j["targets"].as_array().unwrap().len(), 3, "{j}");
    let small = std::fs::read_to_string(t.root().join("SMALL.md")).unwrap();
    // The block, without the line that says kb wrote the file.
    let block = small.split_once('\n').unwrap().1.trim_end_matches('\n');
    assert!(tiktoken(block) <= budget as usize, "{} > {budget}", tiktoken(block));
    let last = block.lines().last().unwrap();
    assert!(last.starts_with("<!-- kb: left out ") && last.contains(&format!("the {budget}-token budget")), "{last}");
    assert!(small.contains("- Reviewer core fact"));
    let plain = std::fs::read_to_string(t.root().join("PLAIN.md")).unwrap();
    assert!(!plain.contains("Reviewer core fact") && !plain.contains("<!-- kb: left out"), "{plain}");
    assert_eq!(std::fs::read_to_string(t.root().join("HOT.md")).unwrap(), plain, "no heat recorded: the same block");
    for bad in [
        r#"[{"path": "X.md", "hot": "yes"}]"#,
        r#"[{"path": "X.md", "board": 1}]"#,
        r#"[{"path": "X.md", "decisions_only": null}]"#,
        r#"[{"path": "X.md", "max_tokens": 4294967296}]"#,
        r#"[{"path": "X.md", "max_tokens": "many"}]"#,
        r#"[{"path": "X.md", "for": "src/a.rs", "agent": 7}]"#,
        r#"[{"agent": "reviewer"}]"#,
    ] {
        let run = t.kb(&["config", "set", "context_targets", bad]).err();
        assert!(run.stderr.contains("context_targets") && run.stderr.contains("entry 1"), "{bad}: {run:?}");
    }
}

/// The Memory section and who sees what: Core Context oldest first (created, then id), Learnings
/// the newest visible high-importance learnings and patterns; both only the agent's own, the shared
/// and the `cross-team` ones; a memory's further lines indented two spaces.
#[test]
fn memory_items_are_visible_ordered_and_indented() {
    let t = TestEnv::new();
    let at = "2026-01-05T00:00:00+00:00";
    mem(&t, 9, at, "type: core_context\n", &[], "Core nine, same time as four");
    mem(&t, 4, at, "type: core_context\n", &[], "Core four\nsecond line\n\nnew paragraph");
    mem(&t, 2, "2026-01-06T00:00:00+00:00", "agent: coder\ntype: core_context\n", &[], "Coder core");
    mem(&t, 3, "2026-01-01T00:00:00+00:00", "agent: reviewer\ntype: core_context\n", &[], "Reviewer core, oldest");
    mem(&t, 10, "2026-01-10T00:00:00+00:00", "agent: coder\nimportance: high\n", &[], "Coder learning");
    mem(
        &t,
        11,
        "2026-01-11T00:00:00+00:00",
        "agent: coder\nimportance: high\ntype: pattern\n",
        &["cross-team"],
        "Coder cross-team pattern",
    );
    mem(
        &t,
        12,
        "2026-01-12T00:00:00+00:00",
        "agent: reviewer\nimportance: high\n",
        &[],
        "Reviewer learning\nwith a second line",
    );
    mem(&t, 13, "2026-01-09T00:00:00+00:00", "importance: high\n", &[], "Shared learning");
    mem(&t, 14, "2026-01-13T00:00:00+00:00", "importance: low\n", &[], "Low learning, never shown");
    mem(&t, 15, "2026-01-14T00:00:00+00:00", "importance: high\ntype: update\n", &[], "High update, never shown");
    let reviewer = t.kb(&["context", "--agent", "reviewer"]).ok().stdout;
    assert_eq!(
        reviewer,
        "## Memory\n\n### Core Context\n\n- Reviewer core, oldest\n- Core four\n  second line\n\n  new paragraph\n\
         - Core nine, same time as four\n\n\
         ### Learnings\n\n- Reviewer learning\n  with a second line\n- Coder cross-team pattern\n- Shared learning\n"
    );
    let nobody = t.kb(&["context"]).ok().stdout;
    assert_eq!(
        nobody,
        "## Memory\n\n### Core Context\n\n- Core four\n  second line\n\n  new paragraph\n- Core nine, same time as four\n\n\
         ### Learnings\n\n- Coder cross-team pattern\n- Shared learning\n"
    );
    let coder = t.kb(&["context", "--agent", "coder"]).ok().stdout;
    assert!(coder.contains("- Coder core\n") && coder.contains("- Coder learning\n") && !coder.contains("Reviewer"));
}

/// Scoped Instructions: `### <file name>` and the body of each applying instruction, in path order
/// (a nested file sorts by its whole path; its header is the file name alone).
#[test]
fn scoped_instructions_come_in_path_order_under_their_file_names() {
    let t = TestEnv::new();
    t.write(".github/instructions/zeta/a.instructions.md", "---\napplyTo: 'src/**'\n---\n\nNested A.\n");
    t.write(
        ".github/instructions/b.instructions.md",
        "---\napplyTo: '**/*.rs'\ndescription: B\n---\n\nTop B.\n\nSecond para.\n",
    );
    t.write(".github/instructions/c.instructions.md", "---\napplyTo: 'docs/*.md'\n---\n\nNot for Rust.\n");
    let out = t.kb(&["context", "--for", "src/lib.rs"]).ok().stdout;
    assert_eq!(
        out,
        "## Scoped Instructions\n\n### b.instructions.md\n\nTop B.\n\nSecond para.\n\n### a.instructions.md\n\nNested A.\n"
    );
    let j = t.kb(&["--json", "context", "--for", "src/lib.rs"]).ok().json();
    assert_eq!(j["layers"][4]["name"], "instructions");
    assert_eq!(j["layers"][4]["items"], 2);
    assert_eq!(t.kb(&["context"]).ok().stdout, "", "without --for only always-on instructions apply");
}

/// A memory appears once, in the first of Core Context, Hot Memories and Learnings it qualifies for
/// (so with `--no-hot` a hot learning shows under Learnings); a hot core-context memory stays under
/// Core Context.
#[test]
fn a_memory_appears_once_core_then_hot_then_learnings() {
    let t = TestEnv::new();
    mem(&t, 1, "2026-01-01T00:00:00+00:00", "type: core_context\n", &[], "Core and hot");
    mem(&t, 2, "2026-01-02T00:00:00+00:00", "importance: high\n", &[], "Learning and hot");
    mem(&t, 3, "2026-01-03T00:00:00+00:00", "importance: high\n", &[], "Learning only");
    for id in ["1", "2"] {
        for _ in 0..3 {
            t.kb(&["show", id]).ok();
        }
    }
    let out = t.kb(&["context"]).ok().stdout;
    assert_eq!(
        out,
        "## Memory\n\n### Core Context\n\n- Core and hot\n\n### Hot Memories\n\n- Learning and hot\n\n\
         ### Learnings\n\n- Learning only\n"
    );
    let no_hot = t.kb(&["context", "--no-hot"]).ok().stdout;
    assert_eq!(
        no_hot,
        "## Memory\n\n### Core Context\n\n- Core and hot\n\n### Learnings\n\n- Learning only\n- Learning and hot\n"
    );
    let j = t.kb(&["--json", "context"]).ok().json();
    let items: Vec<u64> = j["layers"].as_array().unwrap().iter().map(|l| l["items"].as_u64().unwrap()).collect();
    assert_eq!(items, [0, 0, 0, 0, 0, 1, 1, 1, 0, 0]);
}

#[test]
fn the_readme_example_shows_every_layer_of_the_example_repository() {
    // The README's first command: `kb --root example-knowledge context --agent reviewer --for
    // src/api/routes.rs`, on a copy (the source tree is never written).
    let t = TestEnv::new();
    copy_tree(&std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("example-knowledge"), &t.root());
    assert!(t.kb(&["check"]).ok().stdout.contains("no problems"));
    let out = t.kb(&["context", "--agent", "reviewer", "--for", "src/api/routes.rs"]).ok().stdout;
    let headings: Vec<&str> = out.lines().filter(|l| l.starts_with("## ") || l.starts_with("### ")).collect();
    for want in [
        "## Boundaries and Decisions",
        "## Internal Knowledge",
        "### Project Context",
        "### Repository Memories",
        "## Scoped Instructions",
        "### api.instructions.md",
        "## Memory",
        "### Core Context",
        "### Learnings",
        "## Current Session",
    ] {
        assert!(headings.contains(&want), "no {want} in {headings:?}\n{out}");
    }
    // Only the instructions that apply to that file.
    assert!(!out.contains("### tests.instructions.md"), "{out}");
    // The per-agent target of its settings compiles the same layers.
    t.kb(&["compile"]).ok();
    let review = t.read(&t.root().join("REVIEW.md"));
    assert!(review.contains("### api.instructions.md") && review.contains("### Core Context"), "{review}");
}

#[test]
fn compile_reads_the_memories_once_for_every_target() {
    // Three targets with three different blocks: the repository is read once, not per target.
    let t = layered().env("KB_DEBUG_STATS", "1");
    t.write(
        ".co-cli/settings.json",
        r#"{"context_targets": ["AGENTS.md", {"path": "R.md", "agent": "reviewer", "hot": true}, {"path": "C.md", "agent": "coder", "for": ["src/api/x.rs"]}]}"#,
    );
    let run = t.kb(&["compile"]).ok();
    assert_eq!(run.stderr.matches("kb-stats:").count(), 1, "{run:?}");
    for file in ["AGENTS.md", "R.md", "C.md"] {
        assert!(t.root().join(file).is_file(), "{file}");
    }
}

#[test]
fn a_second_compile_of_the_example_repository_changes_nothing() {
    // Regression: kb knew its standalone file by `## Internal Knowledge` at its top, but blocks
    // start with the decisions now, so the second compile took REVIEW.md and workers.md for a
    // person's files and appended a second block to each.
    let t = TestEnv::new();
    copy_tree(&std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("example-knowledge"), &t.root());
    t.kb(&["compile"]).ok();
    let files = ["AGENTS.md", "REVIEW.md", ".co-cli/knowledge/workers.md"];
    let first: Vec<String> = files.iter().map(|f| t.read(&t.root().join(f))).collect();
    let again = t.kb(&["--json", "compile"]).ok().json();
    let statuses: Vec<&str> =
        again["targets"].as_array().unwrap().iter().map(|x| x["status"].as_str().unwrap()).collect();
    // The three targets, and CLAUDE.md for the agent claude the example names.
    assert_eq!(statuses, ["unchanged"; 4]);
    let generated: Vec<&str> =
        again["generated"].as_array().unwrap().iter().map(|x| x["status"].as_str().unwrap()).collect();
    assert!(!generated.is_empty() && generated.iter().all(|s| *s == "unchanged"), "{generated:?}");
    t.kb(&["compile", "--check"]).ok();
    for (f, before) in files.iter().zip(&first) {
        let after = t.read(&t.root().join(f));
        assert_eq!(&after, before, "{f} changed on the second compile");
        assert_eq!(after.matches("## Boundaries and Decisions").count(), 1, "{f}:\n{after}");
        assert!(!after.contains("kb:context:begin") || *f == "AGENTS.md", "{f}:\n{after}");
    }
    // A standalone target says it is kb's, so it is overwritten whole, not appended to.
    assert!(first[1].starts_with("<!-- kb: generated "), "{}", first[1]);
}
