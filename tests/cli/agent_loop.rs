//! kb in the agent's loop, end to end: hooks installed, a scripted session fed as each agent
//! sends it (its payloads, a golden transcript), the digest, the inbox, undo, the next start.

use crate::common::{TestEnv, days_ago};
use serde_json::{Value, json};
use std::path::PathBuf;

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts").join(name)
}

fn hook(env: &TestEnv, verb: &str, agent: &str, payload: &Value) -> String {
    let run = env.kb_stdin(&["hook", verb, "--agent", agent], Some(&payload.to_string()));
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
}

/// Runs one session of `agent` (session `id`, transcript `file`) through its hooks and the digest;
/// returns the digest's JSON.
fn session(env: &TestEnv, agent: &str, id: &str, file: &str, id_key: &str, path_key: &str) -> Value {
    let root = env.root().display().to_string();
    hook(env, "session-start", agent, &json!({id_key: id, "cwd": root, "source": "startup"}));
    hook(env, "pre-compact", agent, &json!({id_key: id, "cwd": root, path_key: golden(file), "trigger": "auto"}));
    hook(env, "session-end", agent, &json!({id_key: id, "cwd": root, path_key: golden(file), "reason": "other"}));
    env.kb(&["--json", "inbox", "digest"]).ok().json()
}

#[test]
fn a_claude_code_session_ends_in_a_checkpoint_the_open_session_and_proposals() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    env.kb(&["hooks", "install", "claude"]).ok();
    assert!(env.read(&env.root().join(".claude/settings.json")).contains("kb hook session-start --agent claude"));
    env.kb(&["session", "start", "Orders endpoint"]).ok();
    let digest = session(&env, "claude", "11112222-aaaa", "claude.jsonl", "session_id", "transcript_path");
    let s = &digest["sessions"][0];
    assert_eq!(s["agent"], "claude");
    let checkpoint = PathBuf::from(s["checkpoint"].as_str().unwrap());
    let text = env.read(&checkpoint);
    assert!(text.contains("user_turns: 3") && text.contains("## Commands"), "{text}");
    assert!(!text.contains("ghp_") || text.contains("[REDACTED"), "secrets are redacted: {text}");
    let proposals = s["proposals"].as_array().unwrap().len();
    assert!(proposals >= 2, "{digest}");
    let summary = env.kb(&["--json", "session", "show"]).ok().json();
    assert!(summary["summary"].as_str().unwrap().contains("Claude session 11112222"), "{summary}");
    // Digesting again changes nothing.
    let again = env.kb(&["--json", "inbox", "digest"]).ok().json();
    assert_eq!(again["sessions"], json!([]));
    let log = env.kb(&["--json", "session", "log"]).ok().json();
    assert_eq!(log["sessions"][0]["session_id"], "11112222-aaaa");
    // Nothing in the store until a person accepts.
    let before = env.kb(&["--json", "list"]).ok().json()["memories"].as_array().map_or(0, Vec::len);
    assert_eq!(before, 0);
    let start = hook(&env, "session-start", "claude", &json!({"session_id": "next"}));
    assert!(start.contains(&format!("{proposals} proposed memories wait for review: kb inbox")), "{start}");
    env.kb(&["inbox", "accept", "--all"]).ok();
    let listed = env.kb(&["--json", "list"]).ok().json();
    assert!(!listed["memories"].as_array().unwrap().is_empty(), "{listed}");
    // The next start announces nothing pending; undo takes the accept back.
    let start = hook(&env, "session-start", "claude", &json!({"session_id": "after"}));
    assert!(!start.contains("wait for review"), "{start}");
    env.kb(&["undo"]).ok();
    assert!(env.kb(&["--json", "inbox"]).ok().json()["proposals"].as_array().unwrap().len() == proposals);
}

#[test]
fn the_prompt_hook_returns_the_accepted_memory_for_a_question_and_nothing_for_small_talk() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    env.memory(1, "We use cargo nextest, not cargo test: run cargo nextest run --workspace", &days_ago(1.0), &[]);
    let asked = hook(
        &env,
        "prompt",
        "claude",
        &json!({"session_id": "q", "prompt": "which command runs the test suite with nextest?"}),
    );
    assert!(asked.contains("[memory 1]"), "{asked}");
    assert_eq!(hook(&env, "prompt", "claude", &json!({"session_id": "q", "prompt": "thanks!"})), "");
}

#[test]
fn codex_and_copilot_sessions_are_digested_the_same_way() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    let codex = session(&env, "codex", "019a2d7a-41c4", "codex.jsonl", "session_id", "transcript_path");
    assert_eq!(codex["sessions"][0]["agent"], "codex");
    assert!(!codex["sessions"][0]["proposals"].as_array().unwrap().is_empty(), "{codex}");
    let copilot = session(&env, "copilot", "b7e3c9a1-5d2f", "copilot-events.jsonl", "sessionId", "transcriptPath");
    assert_eq!(copilot["sessions"][0]["agent"], "copilot");
    // The same sentences in both sessions: the inbox holds each once.
    let inbox = env.kb(&["--json", "inbox"]).ok().json();
    let texts: Vec<&str> =
        inbox["proposals"].as_array().unwrap().iter().map(|p| p["content"].as_str().unwrap()).collect();
    let mut unique = texts.clone();
    unique.dedup();
    assert_eq!(texts.len(), unique.len(), "{texts:?}");
}

#[test]
fn a_missing_or_hostile_transcript_still_leaves_a_checkpoint() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    for (id, path) in [("m", "/nonexistent/t.jsonl"), ("z", "/dev/zero")] {
        hook(&env, "session-end", "claude", &json!({"session_id": id, "transcript_path": path}));
    }
    let digest = env.kb(&["--json", "inbox", "digest"]).ok().json();
    assert_eq!(digest["sessions"].as_array().unwrap().len(), 2, "{digest}");
    assert!(digest["sessions"].as_array().unwrap().iter().all(|s| s["proposals"] == json!([])));
    let log = std::fs::read_to_string(env.root().join(".co-cli/state/hooks.log")).unwrap();
    assert!(log.contains("not read"), "{log}");
}

#[test]
fn a_summarizer_that_fails_or_floods_changes_nothing_and_its_bad_lines_are_counted() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    let root = env.root().display().to_string();
    let end = |id: &str| {
        hook(
            &env,
            "session-end",
            "claude",
            &json!({"session_id": id, "cwd": root, "transcript_path": golden("claude.jsonl")}),
        )
    };
    end("a");
    let run = env
        .kb(&[
            "--json",
            "inbox",
            "digest",
            "--summarizer",
            "echo 'memory: The orders API pages with a cursor'; echo nonsense",
        ])
        .ok();
    let s = &run.json()["sessions"][0];
    assert_eq!(s["skipped"]["bad_summarizer_lines"], 1, "{s}");
    end("b");
    let run = env.kb(&["--json", "inbox", "digest", "--summarizer", "exit 1"]).ok();
    assert!(run.stderr.contains("summarizer"), "{run:?}");
    end("c");
    let run =
        env.env("KB_SUMMARIZER_TIMEOUT_MS", "300").kb(&["--json", "inbox", "digest", "--summarizer", "sleep 30"]).ok();
    assert!(run.stderr.contains("summarizer"), "{run:?}");
}
