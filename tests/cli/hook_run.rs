//! `kb hook VERB --agent AGENT`: what runs inside an agent's loop. Payloads as each agent sends
//! them (docs/hooks.md); every call exits 0, whatever it is fed.

use crate::common::{TestEnv, days_ago};
use serde_json::{Value, json};

fn env() -> TestEnv {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    env
}

fn hook(env: &TestEnv, verb: &str, agent: &str, payload: &Value) -> crate::common::Run {
    let run = env.kb_stdin(&["hook", verb, "--agent", agent], Some(&payload.to_string()));
    assert_eq!(run.code, 0, "a hook never fails its agent: {run:?}");
    run
}

fn log(env: &TestEnv) -> String {
    std::fs::read_to_string(env.root().join(".co-cli/state/hooks.log")).unwrap_or_default()
}

fn spool(env: &TestEnv) -> Vec<Value> {
    let text = std::fs::read_to_string(env.root().join(".co-cli/state/hooks/spool.jsonl")).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn recording_verbs_append_one_spool_line_and_print_nothing() {
    let env = env();
    let root = env.root().display().to_string();
    let p = json!({"session_id": "abc123", "transcript_path": "/tmp/t.jsonl", "cwd": root, "hook_event_name": "SessionEnd"});
    for verb in ["pre-compact", "session-end", "stop"] {
        let run = hook(&env, verb, "claude", &p);
        assert_eq!(run.stdout, "", "{verb}");
    }
    let lines = spool(&env);
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["event"], "session-end");
    assert_eq!(lines[1]["agent"], "claude");
    assert_eq!(lines[1]["session_id"], "abc123");
    assert_eq!(lines[1]["transcript_path"], "/tmp/t.jsonl");
    for key in ["cwd", "branch", "at"] {
        assert!(lines[1].get(key).is_some(), "{key} in {}", lines[1]);
    }
    // Copilot's camelCase payload.
    hook(&env, "session-end", "copilot", &json!({"sessionId": "cp-1", "cwd": root}));
    assert_eq!(spool(&env)[3]["session_id"], "cp-1");
}

#[test]
fn a_duplicate_call_within_ten_seconds_prints_nothing() {
    let env = env();
    env.memory(1, "CI runs cargo nextest run for the test suite", &days_ago(1.0), &[]);
    let p = json!({"session_id": "dup", "prompt": "how does CI run the test suite with nextest"});
    let first = hook(&env, "prompt", "claude", &p);
    assert!(first.stdout.contains("[memory 1]"), "{first:?}");
    // Copilot CLI also runs the `.claude/settings.json` block: the same call again.
    let second = hook(&env, "prompt", "copilot", &p);
    assert_eq!(second.stdout, "");
    let p = json!({"session_id": "dup", "cwd": env.root()});
    hook(&env, "session-end", "claude", &p);
    hook(&env, "session-end", "copilot", &p);
    assert_eq!(spool(&env).len(), 1);
}

#[test]
fn prompt_sends_a_relevant_memory_once_and_nothing_for_small_talk() {
    let env = env();
    env.memory(1, "The team prefers cargo nextest over cargo test: CI runs cargo nextest run", &days_ago(2.0), &[]);
    env.memory(2, "Deploys go out from the release branch on Tuesdays", &days_ago(2.0), &[]);
    let ask = json!({"session_id": "s1", "prompt": "How do we run the tests with cargo?"});
    let run = hook(&env, "prompt", "claude", &ask);
    assert!(run.stdout.starts_with("Relevant knowledge (kb):\n- [memory 1] "), "{run:?}");
    assert!(!run.stdout.contains("memory 2"), "{run:?}");
    assert!(run.stdout.chars().count() <= 1_500);
    // Sent once per session.
    let again = json!({"session_id": "s1", "prompt": "and how do we run the tests with cargo on CI?"});
    assert_eq!(hook(&env, "prompt", "claude", &again).stdout, "");
    let other = json!({"session_id": "s2", "prompt": "How do we run the tests with cargo?"});
    assert!(hook(&env, "prompt", "claude", &other).stdout.contains("[memory 1]"));
    for small_talk in ["thanks, that's great!", "ok", "hello there"] {
        let p = json!({"session_id": "s3", "prompt": small_talk});
        assert_eq!(hook(&env, "prompt", "claude", &p).stdout, "", "{small_talk}");
    }
    // Counted as a use for heat.
    let heat = std::fs::read_to_string(env.root().join(".co-cli/state/access.jsonl")).unwrap();
    assert!(heat.contains("\"1\"") || heat.contains(":1"), "{heat}");
}

#[test]
fn prompt_output_takes_each_agents_shape() {
    let env = env();
    env.memory(1, "Integration tests need the docker compose database running first", &days_ago(1.0), &[]);
    let p = |id: &str| json!({"session_id": id, "prompt": "how do I start the docker compose database for integration tests"});
    // No Hot Memories: once memory 1 is hot, the block each agent got at session start holds it.
    env.kb(&["config", "set", "hot_limit", "0"]).ok();
    let cline = json!({"taskId": "d", "userPromptSubmit": {"prompt": "how do I start the docker compose database for integration tests"}});
    let cline: Value = serde_json::from_str(&hook(&env, "prompt", "cline", &cline).stdout).unwrap();
    assert_eq!(cline["cancel"], false);
    assert!(cline["contextModification"].as_str().unwrap().contains("[memory 1]"));
    let codex: Value = serde_json::from_str(&hook(&env, "prompt", "codex", &p("a")).stdout).unwrap();
    assert_eq!(codex["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit");
    assert!(codex["hookSpecificOutput"]["additionalContext"].as_str().unwrap().contains("[memory 1]"));
    let gemini: Value = serde_json::from_str(&hook(&env, "prompt", "gemini", &p("b")).stdout).unwrap();
    assert_eq!(gemini["hookSpecificOutput"]["hookEventName"], "BeforeAgent");
    let copilot: Value = serde_json::from_str(&hook(&env, "prompt", "copilot", &p("c")).stdout).unwrap();
    assert!(copilot["additionalContext"].as_str().unwrap().contains("[memory 1]"));
    // Cline always answers one object, even with nothing to add.
    let quiet: Value =
        serde_json::from_str(&hook(&env, "session-end", "cline", &json!({"taskId": "d"})).stdout).unwrap();
    assert_eq!(quiet, json!({"cancel": false}));
}

#[test]
fn prompt_leaves_out_what_the_loaded_block_holds_and_warns_on_stale() {
    let env = env();
    env.write("src/present.rs", "fn main() {}\n");
    let core = "Every public handler in src/present.rs returns ApiError on failure";
    env.kb(&["save", core, "--type", "core_context"]).ok();
    env.kb(&["config", "set", "agents", "[\"claude\"]"]).ok();
    env.memory(9, "The sensor parser lives in src/gone/parser.rs and owns the ApiError mapping", &days_ago(1.0), &[]);
    let run = hook(
        &env,
        "prompt",
        "claude",
        &json!({"session_id": "s", "prompt": "where is the ApiError mapping of handlers"}),
    );
    assert!(!run.stdout.contains("src/present.rs"), "core context is already in CLAUDE.md: {run:?}");
    assert!(run.stdout.contains("[memory 9]") && run.stdout.contains("stale"), "{run:?}");
}

#[test]
fn prompt_leaves_out_what_session_start_gave_in_this_session_only() {
    let env = env();
    let first = "Every public handler returns ApiError on failure";
    env.kb(&["save", first, "--type", "core_context"]).ok();
    // No native file: session-start gives the whole block, core context included.
    let start = hook(&env, "session-start", "claude", &json!({"session_id": "s"}));
    assert!(start.stdout.contains(first), "{start:?}");
    // Saved after the session started: that session was not given it.
    let later = "Every ApiError handler logs the request id before returning";
    env.kb(&["save", later, "--type", "core_context"]).ok();
    let ask = |session: &str| {
        hook(
            &env,
            "prompt",
            "claude",
            &json!({"session_id": session, "prompt": "what does an ApiError handler return"}),
        )
    };
    let run = ask("s");
    assert!(!run.stdout.contains(first), "session-start gave it: {run:?}");
    assert!(run.stdout.contains(later), "the session has not seen it: {run:?}");
    // A session that never started through the hook: the whole block is taken as loaded.
    let run = ask("t");
    assert!(!run.stdout.contains(first) && !run.stdout.contains(later), "{run:?}");
}

#[test]
fn session_start_gives_the_session_the_board_and_pending_proposals() {
    let env = env();
    env.kb(&["session", "start", "Fix the flaky parser tests"]).ok();
    env.kb(&["session", "update", "--append", "The race is in the lexer"]).ok();
    env.write(
        ".co-cli/knowledge/inbox/P1-use-nextest.md",
        "---\nid: P1\ncreated: '2026-12-01T10:00:00+00:00'\nkind: memory\nproposed_by: agent:claude\ntags: []\n---\nUse cargo nextest\n",
    );
    env.kb(&["config", "set", "agents", "[\"claude\"]"]).ok();
    let run = hook(&env, "session-start", "claude", &json!({"session_id": "s", "source": "startup"}));
    assert!(
        run.stdout.contains("Fix the flaky parser tests") && run.stdout.contains("The race is in the lexer"),
        "{run:?}"
    );
    assert!(run.stdout.contains("1 proposed memory waits for review: kb inbox"), "{run:?}");
    assert!(!run.stdout.contains("Boundaries and Decisions"), "CLAUDE.md carries the block: {run:?}");
    // Codex, in its own output shape.
    let codex: Value =
        serde_json::from_str(&hook(&env, "session-start", "codex", &json!({"session_id": "x"})).stdout).unwrap();
    assert_eq!(codex["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(codex["hookSpecificOutput"]["additionalContext"].as_str().unwrap().contains("Fix the flaky parser tests"));
    // Nothing pending once the inbox is empty.
    env.kb(&["inbox", "reject", "--all"]).ok();
    let run = hook(&env, "session-start", "claude", &json!({"session_id": "t"}));
    assert!(!run.stdout.contains("wait"), "{run:?}");
}

#[test]
fn session_start_gives_the_whole_block_to_an_agent_that_reads_no_file_of_kbs() {
    let env = env();
    env.kb(&["decision", "add", "The public API stays under /v2", "--type", "architectural"]).ok();
    env.memory(1, "Run cargo nextest run before pushing", &days_ago(1.0), &[]);
    let run = hook(&env, "session-start", "claude", &json!({"session_id": "s"}));
    assert!(run.stdout.contains("The public API stays under /v2"), "{run:?}");
    assert!(run.stdout.contains("These decisions take precedence"), "{run:?}");
    assert!(run.stdout.chars().count() <= 10_000);
}

#[test]
fn session_start_warns_about_stale_items_of_the_last_audit() {
    let env = env();
    env.memory(12, "The old parser in src/old.rs handles CRLF", &days_ago(1.0), &[]);
    env.kb(&["audit"]);
    let run = hook(&env, "session-start", "claude", &json!({"session_id": "s"}));
    assert!(run.stdout.contains("memory 12") && run.stdout.contains("src/old.rs"), "{run:?}");
}

#[test]
fn bad_payloads_and_words_exit_0_with_a_line_in_the_log() {
    let env = env();
    let cases: Vec<(&[&str], Vec<u8>)> = vec![
        (&["hook", "session-end", "--agent", "claude"], b"".to_vec()),
        (&["hook", "session-end", "--agent", "claude"], b"not json".to_vec()),
        (&["hook", "prompt", "--agent", "claude"], b"[1,2]".to_vec()),
        (&["hook", "prompt", "--agent", "claude"], vec![0xff, 0x00, 0xfe]),
        (&["hook", "session-start", "--agent", "claude"], vec![b' '; 2 << 20]),
        (&["hook", "nope", "--agent", "claude"], b"{}".to_vec()),
        (&["hook", "prompt", "--agent", "windsurf"], b"{}".to_vec()),
        (&["hook", "prompt"], b"{}".to_vec()),
        (&["hook", "--what", "-x"], b"{}".to_vec()),
        (&["hook"], b"{}".to_vec()),
    ];
    for (args, stdin) in &cases {
        let run = crate::common::run_command(env.command(args), Some(stdin));
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        assert!(run.stderr.contains("kb hook: "), "{args:?}: {run:?}");
    }
    let log = log(&env);
    for expected in [
        "empty payload",
        "not JSON",
        "not an object",
        "larger than 1 MiB",
        "unknown hook verb",
        "unknown --agent \"windsurf\"",
        "no --agent",
    ] {
        assert!(log.contains(expected), "{expected} in {log}");
    }
    // A transcript path that is a FIFO or /dev/zero is only recorded, never read.
    let p = json!({"session_id": "f", "transcript_path": "/dev/zero"});
    let run = hook(&env, "session-end", "claude", &p);
    assert_eq!(run.stdout, "");
}

#[test]
fn without_a_root_a_hook_prints_nothing() {
    // A folder with no `.co-cli/` or `.git` anywhere above it, kb finding the root itself.
    let Some(env) = TestEnv::markerless() else { return };
    let nowhere = env.dir.path().join("plain");
    std::fs::create_dir_all(&nowhere).unwrap();
    let mut cmd = env.command(&["hook", "session-start", "--agent", "claude"]);
    cmd.current_dir(&nowhere);
    let p = json!({"session_id": "s", "cwd": nowhere}).to_string();
    let run = crate::common::run_command(cmd, Some(p.as_bytes()));
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    assert!(!nowhere.join(".co-cli").exists());
}

#[test]
fn prompt_sends_a_memory_worded_in_related_words() {
    let env = env();
    env.memory(1, "Releases are published only after the whole suite passes", &days_ago(2.0), &[]);
    env.memory(2, "Lunch is at noon on Fridays", &days_ago(2.0), &[]);
    // One word shared (`pass`); `deploy` ~ `release`, `publish` and `tests` ~ `suite` count half each.
    let p = json!({"session_id": "r1", "prompt": "how do we deploy once the tests pass?"});
    let run = hook(&env, "prompt", "claude", &p);
    assert!(run.stdout.contains("[memory 1]"), "{run:?}");
    assert!(!run.stdout.contains("memory 2"), "{run:?}");
    // One shared word and nothing related is not enough.
    let p = json!({"session_id": "r2", "prompt": "does lunch move?"});
    assert_eq!(hook(&env, "prompt", "claude", &p).stdout, "");
}
