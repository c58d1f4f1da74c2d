//! Memory types, importance and agents (docs/behaviour.md): the keys `kb save` writes (only when
//! given), bad values in hand-written files, the defaults in JSON, `kb list` filters, dedup scoped
//! by type and agent, consolidation keeping the higher importance, `core_context` never decayed,
//! agent names refused, and MCP `save_memory` with the new fields.

use crate::common::*;
use serde_json::{Value, json};

const CREATED: &str = "created: '2026-11-20T10:00:00+00:00'\n";

fn save(t: &TestEnv, args: &[&str]) -> Value {
    let mut all = vec!["--json", "save"];
    all.extend_from_slice(args);
    t.kb(&all).ok().json()
}

/// Returns the ids `kb --json list ARGS` shows.
fn listed(t: &TestEnv, args: &[&str]) -> Vec<u64> {
    let mut all = vec!["--json", "list"];
    all.extend_from_slice(args);
    let out = t.kb(&all).ok().json();
    out["memories"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect()
}

/// Writes memory `id` with extra frontmatter lines (sorted in with the others by the caller).
fn layered(t: &TestEnv, id: u64, text: &str, created: &str, extra: &str) -> std::path::PathBuf {
    t.mem_file(
        &format!("{id:03}-m.md"),
        &format!("---\ncreated: '{created}'\n{extra}id: {id}\nsource: user-told\ntags: []\n---\n\n{text}\n"),
    )
}

#[test]
fn save_writes_each_key_only_when_given_sorted_and_quoted() {
    let t = TestEnv::pinned();
    save(&t, &["A plain fact about kettles"]);
    let plain = t.read(&t.file_of(1));
    for key in ["type:", "importance:", "agent:", "decay_protected:"] {
        assert!(!plain.contains(key), "{key} written without being given: {plain}");
    }
    save(
        &t,
        &["Reviewers check the changelog line", "--type", "pattern", "--importance", "high", "--agent", "reviewer"],
    );
    assert_eq!(
        t.read(&t.file_of(2)),
        "---\nagent: reviewer\nauto_category: null\ncreated: '2026-11-22T12:00:00+00:00'\nid: 2\nimportance: high\n\
         source: user-told\ntags: []\ntype: pattern\n---\n\nReviewers check the changelog line\n"
    );
    // Each key alone; an agent name YAML 1.1 would read as a boolean is quoted.
    save(&t, &["Only the importance is given here", "--importance", "low"]);
    assert_eq!(
        t.read(&t.file_of(3)),
        "---\nauto_category: null\ncreated: '2026-11-22T12:00:00+00:00'\nid: 3\nimportance: low\nsource: user-told\n\
         tags: []\n---\n\nOnly the importance is given here\n"
    );
    save(&t, &["Only the agent is given here", "--agent", "yes", "-t", "decision"]);
    assert_eq!(
        t.read(&t.file_of(4)),
        "---\nagent: 'yes'\nauto_category: decision\ncreated: '2026-11-22T12:00:00+00:00'\nid: 4\nsource: detected\n\
         tags:\n- decision\n---\n\nOnly the agent is given here\n"
    );
    assert_eq!(t.show(4)["agent"], "yes");
    save(&t, &["Only the type is given here", "--type", "update"]);
    assert!(t.read(&t.file_of(5)).contains("tags: []\ntype: update\n---"));
    // core_context is saved protected.
    save(&t, &["The service is called tidepool", "--type", "core_context"]);
    assert_eq!(
        t.read(&t.file_of(6)),
        "---\nauto_category: null\ncreated: '2026-11-22T12:00:00+00:00'\ndecay_protected: true\nid: 6\n\
         source: user-told\ntags: []\ntype: core_context\n---\n\nThe service is called tidepool\n"
    );
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn dry_run_writes_nothing_and_no_dedup_still_creates() {
    let t = TestEnv::pinned();
    save(&t, &["Reviewers check the changelog line", "--agent", "reviewer"]);
    let before = t.snapshot();
    let dry =
        save(&t, &["--dry-run", "reviewers check the changelog line!", "--agent", "reviewer", "--importance", "high"]);
    assert_eq!((dry["action"].as_str(), dry["memory_id"].as_u64()), (Some("would_consolidate"), Some(1)));
    let dry = save(&t, &["--dry-run", "reviewers check the changelog line!", "--agent", "writer"]);
    assert_eq!((dry["action"].as_str(), dry["memory_id"].as_u64()), (Some("would_save"), Some(2)));
    assert_same_tree(&before, &t.snapshot());
    let out = save(&t, &["--no-dedup", "Reviewers check the changelog line", "--agent", "reviewer"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("saved"), Some(2)));
    assert_eq!(t.show(2)["agent"], "reviewer");
}

#[test]
fn json_fills_in_the_defaults_and_human_show_names_the_others() {
    let t = TestEnv::pinned();
    save(&t, &["A plain fact about lanterns"]);
    save(&t, &["A layered fact about lanterns", "--type", "core_context", "--importance", "low", "--agent", "ops"]);
    let plain = json!({"type": "learning", "importance": "medium", "agent": null});
    let given = json!({"type": "core_context", "importance": "low", "agent": "ops"});
    let pick = |m: &Value| json!({"type": m["type"], "importance": m["importance"], "agent": m["agent"]});
    assert_eq!(pick(&t.show(1)), plain);
    assert_eq!(pick(&t.show(2)), given);
    let list = t.list_json();
    assert_eq!(pick(&list["memories"][0]), plain);
    assert_eq!(pick(&list["memories"][1]), given);
    let recall = t.kb(&["--json", "recall", "--exact", "lanterns"]).ok().json();
    assert_eq!(recall["results"].as_array().unwrap().iter().map(pick).collect::<Vec<_>>(), [given, plain]);

    let show = t.kb(&["show", "1"]).ok().stdout;
    for label in ["Type:", "Importance:", "Agent:"] {
        assert!(!show.contains(label), "a default is shown: {show}");
    }
    let show = t.kb(&["show", "2"]).ok().stdout;
    assert!(
        show.contains("Source: user-told\nType: core_context\nImportance: low\nAgent: ops\nProtected: 🔒 yes\n"),
        "{show}"
    );
    // Written defaults are not shown either.
    layered(&t, 3, "explicit defaults", "2026-11-20T10:00:00+00:00", "importance: medium\n");
    let show = t.kb(&["show", "3"]).ok().stdout;
    assert!(!show.contains("Importance:"), "{show}");
}

#[test]
fn bad_values_in_a_hand_written_file_are_reported_with_their_line_and_skipped() {
    let cases: &[(&str, &str)] = &[
        ("type: lesson\n", "unknown type 'lesson': expected core_context, learning, pattern or update"),
        ("type: Learning\n", "unknown type 'Learning'"),
        ("type: null\n", "'type' must be core_context, learning, pattern or update, got null"),
        ("type: [learning]\n", "'type' must be core_context, learning, pattern or update, got a list"),
        ("importance: urgent\n", "unknown importance 'urgent': expected high, medium or low"),
        ("importance: 3\n", "'importance' must be high, medium or low, got the number 3"),
        ("importance: yes\n", "'importance' must be high, medium or low, got the boolean true"),
        ("agent: ''\n", "invalid agent name '': an agent name cannot be empty or blank"),
        ("agent: '   '\n", "an agent name cannot be empty or blank"),
        ("agent: team/reviewer\n", "invalid agent name 'team/reviewer': an agent name cannot contain '/' or '\\'"),
        ("agent: 'team\\reviewer'\n", "cannot contain '/' or '\\'"),
        ("agent: \"line\\nbreak\"\n", "invalid agent name 'line\\nbreak': an agent name cannot contain a newline"),
        ("agent: \"tab\\there\"\n", "control character"),
        ("agent: ' padded'\n", "cannot start or end with whitespace"),
        ("agent: null\n", "'agent' must be an agent's name (a string), got null"),
        ("agent: 42\n", "'agent' must be an agent's name (a string), got the number 42"),
        ("agent: {name: x}\n", "got a mapping"),
    ];
    for (yaml, needle) in cases {
        let t = TestEnv::pinned();
        t.memory(1, "a valid neighbour", &days_ago(1.0), &[]);
        // The bad key is on line 3, after `---` and `created`.
        let bad = t.mem_file("002-bad.md", &format!("---\n{CREATED}{yaml}id: 2\ntags: []\n---\n\nthe bad one\n"));
        let bytes = std::fs::read(&bad).unwrap();
        let run = t.kb(&["--json", "check"]);
        assert_eq!(run.code, 1, "{yaml}: {run:?}");
        let problems = run.json()["problems"].clone();
        assert_eq!(problems.as_array().unwrap().len(), 1, "{yaml}: {problems}");
        assert_eq!(problems[0]["path"], bad.display().to_string());
        assert_eq!(problems[0]["line"], 3, "{yaml}: {problems}");
        let message = problems[0]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{yaml}: expected {needle:?} in {message:?}");
        let human = t.kb(&["check"]);
        assert!(human.stdout.contains("002-bad.md:3"), "{yaml}: {human:?}");
        // list skips it, with a warning naming it; a save of the same text never touches it.
        let list = t.kb(&["--json", "list"]).ok();
        assert_eq!(list.json()["count"], 1, "{yaml}");
        assert!(list.stderr.contains("002-bad.md:3"), "{yaml}: {list:?}");
        assert_eq!(save(&t, &["the bad one"])["action"], "saved", "{yaml}");
        assert_eq!(std::fs::read(&bad).unwrap(), bytes, "{yaml}: rewritten");
    }
}

#[test]
fn hand_written_values_that_are_valid() {
    let t = TestEnv::pinned();
    // YAML 1.1 reads 0o17 as a string (PyYAML), so it is a valid agent name; unicode is fine.
    layered(&t, 1, "one", "2026-11-20T10:00:00+00:00", "agent: 0o17\nimportance: high\ntype: core_context\n");
    layered(&t, 2, "two", "2026-11-20T10:00:00+00:00", "agent: 'Ünïcode agent'\ntype: 'pattern'\n");
    layered(&t, 3, "three", "2026-11-20T10:00:00+00:00", "importance: \"low\"\ntype: update\n");
    assert_eq!(t.kb(&["check"]).code, 0);
    let one = t.show(1);
    assert_eq!((one["agent"].as_str(), one["type"].as_str()), (Some("0o17"), Some("core_context")));
    assert_eq!(t.show(2)["agent"], "Ünïcode agent");
    assert_eq!(t.show(3)["importance"], "low");
    // kb protect keeps the keys exactly as written.
    t.kb(&["protect", "2"]).ok();
    let text = t.read(&t.file_of(2));
    assert!(text.contains("agent: 'Ünïcode agent'\n") && text.contains("type: 'pattern'\n"), "{text}");
}

#[test]
fn list_filters_by_equality_and_narrows_to_the_markdown_store() {
    let t = TestEnv::pinned();
    let at = "2026-11-20T10:00:00+00:00";
    layered(&t, 1, "plain", at, "");
    layered(&t, 2, "explicit learning", at, "type: learning\n");
    layered(&t, 3, "core for reviewer", at, "agent: reviewer\nimportance: high\ntype: core_context\n");
    layered(&t, 4, "shared core", at, "type: core_context\n");
    layered(&t, 5, "writer pattern", at, "agent: writer\nimportance: low\ntype: pattern\n");
    layered(&t, 6, "reviewer update", at, "agent: reviewer\ntype: update\n");
    layered(&t, 7, "a medium note of the writer", at, "agent: writer\nimportance: medium\n");
    t.kb(&["save", "--store", "copilot", "--subject", "build", "--reason", "CI", "Run make test"]).ok();

    assert_eq!(t.list_json()["counts"], json!({"md": 7, "copilot": 1}), "no filter: both stores");
    assert_eq!(listed(&t, &["--type", "learning"]), [1, 2, 7]);
    assert_eq!(listed(&t, &["--type", "core_context"]), [3, 4]);
    assert_eq!(listed(&t, &["--type", "update"]), [6]);
    assert_eq!(listed(&t, &["--importance", "medium"]), [1, 2, 4, 6, 7]);
    assert_eq!(listed(&t, &["--importance", "high"]), [3]);
    assert_eq!(listed(&t, &["--agent", "reviewer"]), [3, 6], "only the memories that name it");
    assert_eq!(listed(&t, &["--agent", "reviewer", "--type", "core_context", "--importance", "high"]), [3]);
    assert_eq!(listed(&t, &["--agent", "nobody"]), Vec::<u64>::new());
    assert_eq!(listed(&t, &["--store", "md", "--type", "pattern"]), [5]);
    let out = t.kb(&["--json", "list", "--agent", "writer"]).ok().json();
    assert_eq!((out["count"].as_u64(), out["counts"].clone()), (Some(2), json!({"md": 2, "copilot": 0})));

    let human = t.kb(&["list", "--type", "core_context"]).ok().stdout;
    assert!(human.starts_with("Total memories: 7/200 (2 with type core_context)\n\n**003** ("), "{human}");
    assert!(!human.contains("Copilot"), "{human}");
    let none = t.kb(&["list", "--agent", "nobody", "--importance", "low"]).ok().stdout;
    assert_eq!(none, format!("No memories with importance low, agent nobody in {}.\n", t.root().display()));

    // Records have no type: a filter with --store copilot is a usage error.
    let run = t.kb(&["list", "--store", "copilot", "--type", "learning"]).usage();
    assert!(run.stderr.contains("--type, --importance and --agent filter the markdown memories"), "{run:?}");
    t.kb(&["list", "--type", "lesson"]).usage();
    t.kb(&["list", "--importance", "High"]).usage();
}

#[test]
fn dedup_only_matches_the_same_type_and_agent() {
    let t = TestEnv::pinned();
    let text = "Every pull request needs a changelog line";
    assert_eq!(save(&t, &[text, "--agent", "reviewer"])["action"], "saved");
    // The same text for another agent, or for every agent, is another memory.
    assert_eq!(save(&t, &[text, "--agent", "writer"])["memory_id"], 2);
    assert_eq!(save(&t, &[text])["memory_id"], 3);
    // Agent names are compared exactly.
    assert_eq!(save(&t, &[text, "--agent", "Reviewer"])["memory_id"], 4);
    // The same agent consolidates into its own memory.
    let out = save(&t, &["every pull request needs a changelog line!", "--agent", "reviewer"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("consolidated"), Some(1)));
    // Types: an absent type is a learning; another type is another memory.
    let out = save(&t, &[text, "--type", "learning"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("consolidated"), Some(3)));
    assert!(!t.read(&t.file_of(3)).contains("type:"), "consolidation does not write the type");
    assert_eq!(save(&t, &[text, "--type", "pattern"])["memory_id"], 5);
    assert_eq!(save(&t, &[text, "--type", "pattern", "--agent", "reviewer"])["memory_id"], 6);
    assert_eq!(save(&t, &[text, "--type", "pattern"])["action"], "consolidated");
    assert_eq!(t.ids(), [1, 2, 3, 4, 5, 6]);
    // A hand-written `type: learning` is the same as none.
    let u = TestEnv::pinned();
    layered(&u, 1, text, &days_ago(1.0), "type: learning\n");
    assert_eq!(save(&u, &[text])["action"], "consolidated");
}

#[test]
fn the_ten_dedup_candidates_are_counted_within_the_scope() {
    let t = TestEnv::pinned();
    let text = "Deploys go through Argo CD from the staging branch";
    layered(&t, 1, text, &days_ago(2.0), "agent: ops\n");
    // Ten newer memories of other agents would push it out of a cap counted over all memories.
    let mut rng = Rng::new(7);
    for id in 2..=11 {
        layered(&t, id, &sentence(&mut rng, 8), &days_ago(1.0), "agent: someone\n");
    }
    let out = save(&t, &[text, "--agent", "ops"]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_u64()), (Some("consolidated"), Some(1)));
}

#[test]
fn consolidation_keeps_the_higher_importance() {
    let text = "The nightly backfill needs TIDEPOOL_BACKFILL_WINDOW";
    // (written in the file, given to save) -> the importance line after the consolidation.
    let cases: &[(&str, Option<&str>, Option<&str>)] = &[
        ("", Some("high"), Some("importance: high\n")),
        ("", Some("medium"), None),
        ("", Some("low"), None),
        ("", None, None),
        ("importance: low\n", Some("medium"), Some("importance: medium\n")),
        ("importance: low\n", None, Some("importance: low\n")),
        ("importance: high\n", Some("low"), Some("importance: high\n")),
        ("importance: medium\n", Some("medium"), Some("importance: medium\n")),
        ("importance: 'low'\n", Some("low"), Some("importance: 'low'\n")),
    ];
    for (written, given, after) in cases {
        let t = TestEnv::pinned();
        let path = layered(&t, 1, text, &days_ago(1.0), written);
        let mut args = vec![text];
        if let Some(g) = given {
            args.extend(["--importance", g]);
        }
        let out = save(&t, &args);
        assert_eq!(out["action"], "consolidated", "{written:?} {given:?}");
        let file = t.read(&path);
        let line = file.lines().find(|l| l.starts_with("importance:")).map(|l| format!("{l}\n"));
        assert_eq!(line.as_deref(), *after, "{written:?} {given:?}: {file}");
        let want = after.map_or("medium", |a| a.trim_start_matches("importance: ").trim().trim_matches('\''));
        assert_eq!(t.show(1)["importance"], want, "{written:?} {given:?}");
    }
}

#[test]
fn core_context_is_protected_and_never_decayed() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.5");
    // The two oldest: core_context memories without decay_protected (hand-written, or unprotected).
    layered(&t, 1, "The oldest core fact, not marked protected", &days_ago(90.0), "type: core_context\n");
    layered(&t, 2, "Another core fact, protected", &days_ago(85.0), "decay_protected: true\ntype: core_context\n");
    t.kb(&["unprotect", "2"]).ok();
    let mut rng = Rng::new(3);
    for id in 3..=10 {
        t.memory(id, &sentence(&mut rng, 8), &days_ago(80.0 - id as f64), &[]);
    }
    let out = save(&t, &["The brand new memory that triggers decay"]);
    assert_eq!(out["decayed"], 5);
    let ids = t.ids();
    assert!(ids.contains(&1) && ids.contains(&2), "a core_context memory decayed: {ids:?}");
    assert!(!ids.contains(&3) && !ids.contains(&7) && ids.contains(&8), "{ids:?}");
    let summary = t.show(12);
    assert!(!summary["content"].as_str().unwrap().contains("core fact"), "{summary}");
}

#[test]
fn decay_summarizes_each_agents_memories_apart() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_PERCENTAGE", "0.5");
    let agents = [Some("reviewer"), Some("writer"), Some("reviewer"), None, None, None, None, None, None, None];
    let mut rng = Rng::new(11);
    for (i, agent) in agents.iter().enumerate() {
        let id = i as u64 + 1;
        let extra = agent.map_or(String::new(), |a| format!("agent: {a}\n"));
        layered(&t, id, &format!("{} {id}", sentence(&mut rng, 8)), &days_ago(50.0 - id as f64), &extra);
    }
    let text = |id: u64| t.show(id)["content"].as_str().unwrap().to_string();
    let olds: Vec<String> = (1..=5).map(text).collect();
    let out = save(&t, &["The brand new memory that triggers decay"]);
    assert_eq!((out["decayed"].as_u64(), out["memory_id"].as_u64()), (Some(5), Some(11)));
    // One summary per agent, in the order the agents come up among the decayed, oldest first.
    assert_eq!(t.ids(), [6, 7, 8, 9, 10, 11, 12, 13, 14]);
    let (reviewer, writer, shared) = (t.show(12), t.show(13), t.show(14));
    assert_eq!((reviewer["agent"].as_str(), writer["agent"].as_str()), (Some("reviewer"), Some("writer")));
    assert_eq!(shared["agent"], Value::Null);
    let summary = |m: &Value| m["content"].as_str().unwrap().to_string();
    assert_eq!(summary(&reviewer), format!("Consolidated 2 old memories:\n\n- {}\n- {}", olds[0], olds[2]));
    assert_eq!(summary(&writer), format!("Consolidated 1 old memories:\n\n- {}", olds[1]));
    assert_eq!(summary(&shared), format!("Consolidated 2 old memories:\n\n- {}\n- {}", olds[3], olds[4]));
    assert!(t.read(&t.file_of(12)).starts_with("---\nagent: reviewer\nauto_category: null\n"));
}

#[test]
fn bad_agent_names_are_refused_and_nothing_is_written() {
    let t = TestEnv::pinned();
    let before = t.snapshot();
    for (name, shown) in [
        ("team/reviewer", "'team/reviewer'"),
        ("team\\reviewer", "'team\\\\reviewer'"),
        ("line\nbreak", "'line\\nbreak'"),
        ("bell\u{7}", "'bell\\u{7}'"),
        ("", "''"),
        ("   ", "'   '"),
    ] {
        // A usage error (exit 2), as for `kb context --agent`: clap checks the value.
        let run = t.kb(&["save", "A fact for a bad agent", "--agent", name]).usage();
        assert!(run.stderr.contains(&format!("invalid agent name {shown}")), "{name:?}: {run:?}");
        let run = t.kb(&["list", "--agent", name]).usage();
        assert!(run.stderr.contains(&format!("invalid agent name {shown}")), "{name:?}: {run:?}");
        t.kb(&["save", "--dry-run", "A fact for a bad agent", "--agent", name]).usage();
    }
    assert_same_tree(&before, &t.snapshot());
    // The layer flags belong to the markdown store.
    let run = t.kb(&["save", "--store", "copilot", "--subject", "s", "--reason", "r", "fact", "--agent", "x"]).usage();
    assert!(run.stderr.contains("--type, --importance and --agent apply to the markdown store"), "{run:?}");
    t.kb(&["save", "x", "--type", "core-context"]).usage();
    t.kb(&["save", "x", "--importance", "urgent"]).usage();
    // A secret in an agent name is refused like one in a tag.
    let run = t.kb(&["save", "A fact", "--agent", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"]).err();
    assert!(run.stderr.contains("the agent name matches the github-pat rule"), "{run:?}");
}

#[cfg(feature = "mcp")]
mod with_mcp {
    use crate::common::{NOW, TestEnv};
    use rmcp::model::{CallToolRequestParams, CallToolResult};
    use rmcp::transport::TokioChildProcess;
    use rmcp::{ClientLifecycleMode, ClientServiceExt};
    use serde_json::{Value, json};
    use std::process::Stdio;
    use std::time::Duration;

    const TIMEOUT: Duration = Duration::from_secs(30);

    fn text(result: &CallToolResult) -> String {
        result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn save_memory_takes_type_importance_and_agent() {
        let env = TestEnv::new().env("KB_NOW", NOW);
        let twin = TestEnv::new().env("KB_NOW", NOW).env("KB_AUTHOR", "agent:rmcp");
        let cmd = tokio::process::Command::from(env.command(&["mcp"]));
        let (transport, _) = TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn().expect("spawn kb mcp");
        let client = tokio::time::timeout(TIMEOUT, ().serve_with_lifecycle(transport, ClientLifecycleMode::Initialize))
            .await
            .expect("connect timed out")
            .expect("connect");
        let call = async |args: Value| -> CallToolResult {
            let Value::Object(args) = args else { panic!("arguments must be an object") };
            let params = CallToolRequestParams::new("save_memory").with_arguments(args);
            tokio::time::timeout(TIMEOUT, client.call_tool(params)).await.expect("timed out").expect("protocol error")
        };

        // The schema offers the values, documented.
        let tools = client.list_all_tools().await.unwrap();
        let save = tools.iter().find(|t| t.name == "save_memory").unwrap();
        let props = save.input_schema.get("properties").and_then(Value::as_object).unwrap();
        assert_eq!(props["type"]["enum"], json!(["core_context", "learning", "pattern", "update"]));
        assert_eq!(props["importance"]["enum"], json!(["high", "medium", "low"]));
        assert!(props["agent"]["description"].as_str().unwrap().contains("every agent shares"));
        let description = save.description.as_deref().unwrap();
        assert!(description.contains("core_context") && description.contains("importance high"), "{description}");

        let args = json!({"content": "Reviewers check the changelog line", "tags": ["pattern"], "type": "core_context",
            "importance": "high", "agent": "reviewer"});
        let result = call(args).await;
        assert_ne!(result.is_error, Some(true), "{}", text(&result));
        let json = result.structured_content.clone().unwrap();
        assert_eq!((json["action"].as_str(), json["memory_id"].as_u64()), (Some("saved"), Some(1)));
        twin.kb(&[
            "save",
            "Reviewers check the changelog line",
            "-t",
            "pattern",
            "--type",
            "core_context",
            "--importance",
            "high",
            "--agent",
            "reviewer",
        ])
        .ok();
        let name = "001-reviewers-check-the-changelog-line.md";
        let written = env.read(&env.memories().join(name));
        assert_eq!(written, twin.read(&twin.memories().join(name)), "the tool and the CLI write the same file");
        assert!(written.contains("agent: reviewer\n") && written.contains("decay_protected: true\n"), "{written}");
        assert!(written.contains("importance: high\n") && written.contains("type: core_context\n"), "{written}");

        // Null is what clients send for a left-out argument: nothing is written for it.
        let result =
            call(json!({"content": "A shared plain fact", "type": null, "importance": null, "agent": null})).await;
        assert_ne!(result.is_error, Some(true), "{}", text(&result));
        let plain = env.read(&env.memories().join("002-a-shared-plain-fact.md"));
        assert!(!plain.contains("type:") && !plain.contains("\nagent:") && !plain.contains("importance:"), "{plain}");

        // Same text, another agent: a new memory; the same agent: a core context memory is never
        // rewritten by a save, and the same words are already stored.
        let other =
            call(json!({"content": "Reviewers check the changelog line", "type": "core_context", "agent": "writer"}));
        assert_eq!(other.await.structured_content.unwrap()["memory_id"], 3);
        let same = call(
            json!({"content": "reviewers check  the changelog line", "type": "core_context", "agent": "reviewer"}),
        );
        let same = same.await;
        assert_eq!(same.structured_content.clone().unwrap()["action"], "exists");
        assert!(text(&same).contains("already stored as memory 1"), "{}", text(&same));

        // Bad values are tool errors naming them; nothing is written.
        for (args, message) in [
            (json!({"content": "x", "type": "lesson"}), "unknown type 'lesson'"),
            (json!({"content": "x", "importance": "urgent"}), "unknown importance 'urgent'"),
            (json!({"content": "x", "agent": "team/reviewer"}), "invalid agent name 'team/reviewer'"),
            (json!({"content": "x", "agent": "line\nbreak"}), "invalid agent name 'line\\nbreak'"),
            (json!({"content": "x", "agent": " "}), "invalid agent name ' '"),
        ] {
            let result = call(args.clone()).await;
            assert_eq!(result.is_error, Some(true), "{args}");
            assert!(text(&result).contains(message), "{args}: {}", text(&result));
        }
        assert_eq!(env.memory_files().len(), 3);
        client.cancel().await.unwrap();
    }
}
