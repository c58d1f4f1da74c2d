//! `kb inbox`: proposals agents made, listed, shown, accepted through the normal save of their
//! store (with `created_by` the agent and `accepted_by` the person) or rejected, each in one undo
//! entry; and over MCP, the setting `agent_writes` (`propose` writes proposals, `deny` refuses).

use crate::common::{TestEnv, days_ago};
use crate::undo::{assert_same_files, files};
use serde_json::{Value, json};

fn env() -> TestEnv {
    TestEnv::pinned().env("KB_AUTHOR", "dev@example.com")
}

/// Writes a hand-written proposal file `name` with frontmatter `keys` (YAML lines) and `body`.
fn proposal(env: &TestEnv, name: &str, keys: &str, body: &str) -> std::path::PathBuf {
    env.write(&format!(".co-cli/knowledge/inbox/{name}"), &format!("---\n{keys}---\n\n{body}\n"))
}

const MEMORY: &str = "created: '2026-11-21T09:30:00+00:00'\nid: P1\nkind: memory\nproposed_by: agent:claude\n\
reason: the user said it twice\nsession: 1a2b3c\nsource: detected\ntags:\n- preference\n";
const RECORD: &str = "citations:\n- Makefile:14\ncreated: '2026-11-21T09:31:00+00:00'\nid: P2\nkind: record\n\
proposed_by: agent:claude\nreason: CI runs it\nsession: null\nsubject: build\ntags: []\n";
const DECISION: &str = "created: '2026-11-21T09:32:00+00:00'\ndecision_type: scope\nid: P3\nkind: decision\n\
proposed_by: agent:codex\nreason: null\nsession: null\ntags: []\n";

fn three(env: &TestEnv) {
    proposal(env, "P1-user-prefers-pytest.md", MEMORY, "User prefers pytest over unittest");
    proposal(env, "P2-run-make-test.md", RECORD, "Run `make test` before pushing");
    proposal(env, "P3-no-windows.md", DECISION, "The CLI does not support Windows");
}

fn inbox_files(env: &TestEnv) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(env.root().join(".co-cli/knowledge/inbox"))
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// Hand-written proposals are listed (id, kind, who, when, the text on one line) and shown in
/// full; the JSON has every key; a broken file is a diagnostic naming it, and a `kb check` problem.
#[test]
fn hand_written_proposals_are_listed_and_shown() {
    let env = env();
    let empty = env.kb(&["inbox"]).ok();
    assert_eq!(empty.stdout, "No proposals wait for review.\n");
    three(&env);
    let broken = proposal(&env, "P4-broken.md", "id: P4\nkind: thought\n", "x");
    let run = env.kb(&["inbox"]).ok();
    assert_eq!(
        run.stdout,
        "3 proposals wait for review:\n\n\
         P1  memory    agent:claude  2026-11-21 09:30  User prefers pytest over unittest\n\
         P2  record    agent:claude  2026-11-21 09:31  [build] Run `make test` before pushing\n\
         P3  decision  agent:codex   2026-11-21 09:32  (scope) The CLI does not support Windows\n\n\
         Accept with kb inbox accept P1 (or --all), reject with kb inbox reject P1; kb inbox show P1 shows one in full.\n"
    );
    assert!(
        run.stderr.contains(".co-cli/knowledge/inbox/P4-broken.md") && run.stderr.contains("invalid kind 'thought'"),
        "{run:?}"
    );
    let j = env.kb(&["--json", "inbox"]).ok().json();
    assert_eq!(j["proposals"].as_array().unwrap().len(), 3);
    let p1 = &j["proposals"][0];
    assert_eq!(
        *p1,
        json!({
            "id": "P1", "kind": "memory", "proposed_by": "agent:claude", "session": "1a2b3c",
            "created": "2026-11-21T09:30:00+00:00", "content": "User prefers pytest over unittest",
            "tags": ["preference"], "reason": "the user said it twice", "source": "detected", "subject": null,
            "citations": [], "decision_type": null,
            "path": env.root().join(".co-cli/knowledge/inbox/P1-user-prefers-pytest.md").display().to_string()
        })
    );
    assert_eq!(
        (j["proposals"][1]["subject"].as_str(), &j["proposals"][1]["citations"]),
        (Some("build"), &json!(["Makefile:14"]))
    );
    assert_eq!(j["proposals"][2]["decision_type"], "scope");

    let show = env.kb(&["inbox", "show", "p2"]).ok();
    assert!(show.stdout.starts_with("Proposal P2 (record), proposed by agent:claude at 2026-11-21T09:31:00+00:00\n"));
    assert!(show.stdout.contains("Subject: build\nCitations: Makefile:14\nReason: CI runs it\n"), "{}", show.stdout);
    assert!(show.stdout.contains("\n\nRun `make test` before pushing\n"), "{}", show.stdout);
    let j = env.kb(&["--json", "inbox", "show", "P3"]).ok().json();
    assert_eq!(j["proposals"][0]["content"], "The CLI does not support Windows");
    let run = env.kb(&["inbox", "show", "P4"]).err();
    assert!(run.stderr.contains("error: proposal P4 not found"), "{run:?}");

    let check = env.kb(&["check"]);
    assert_eq!(check.code, 1, "{check:?}");
    assert!(
        check.stdout.contains(".co-cli/knowledge/inbox/P4-broken.md") && check.stdout.contains("invalid kind"),
        "{check:?}"
    );
    assert!(broken.exists(), "kb never deletes a broken proposal");
}

/// `accept --all` saves each proposal through its store: a memory (dedup holds: one equal to a
/// stored memory ends `exists`, its proposal still removed), a Copilot record with its subject,
/// citations and reason, an active decision of its type; `created_by` is the agent,
/// `accepted_by` the person. `kb undo` takes it all back in one step.
#[test]
fn accept_saves_through_each_store_and_undo_takes_it_back() {
    let env = env();
    three(&env);
    let known = env.memory(1, "We deploy on Tuesdays", &days_ago(2.0), &[]);
    let known_before = env.read(&known);
    let p5 = "created: '2026-11-21T10:00:00+00:00'\nid: P5\nkind: memory\nproposed_by: agent:claude\ntags: []\n";
    proposal(&env, "P5-we-deploy.md", p5, "we deploy on  Tuesdays");
    let before = files(&env);

    let run = env.kb(&["--json", "inbox", "accept", "--all"]).ok();
    let j = run.json();
    let accepted = j["accepted"].as_array().unwrap();
    assert_eq!(j["rejected"], json!([]));
    let brief: Vec<(&str, &str, &str)> = accepted
        .iter()
        .map(|a| (a["id"].as_str().unwrap(), a["store"].as_str().unwrap(), a["action"].as_str().unwrap()))
        .collect();
    assert_eq!(
        brief,
        [("P1", "md", "saved"), ("P2", "copilot", "saved"), ("P3", "decision", "added"), ("P5", "md", "exists")]
    );
    assert_eq!((accepted[0]["memory_id"].as_u64(), accepted[3]["memory_id"].as_u64()), (Some(2), Some(1)));
    assert_eq!(accepted[2]["decision_id"], 1);
    assert!(accepted[1]["memory_id"].as_str().unwrap().starts_with("mem-"));
    assert_eq!(inbox_files(&env), Vec::<String>::new(), "every accepted proposal is removed, the known one too");
    assert_eq!(env.read(&known), known_before, "the memory that already said it is untouched");

    let memory = env.read(&env.file_of(2));
    assert!(
        memory.contains("created_by: agent:claude\n") && memory.contains("accepted_by: dev@example.com\n"),
        "{memory}"
    );
    assert!(
        memory.contains("source: detected\n") && memory.ends_with("\n\nUser prefers pytest over unittest\n"),
        "{memory}"
    );
    let show = env.show(2);
    assert_eq!(show["created_by"], "agent:claude");
    let line = env.read(&env.root().join(".github/copilot-memories.jsonl"));
    let record: Value = serde_json::from_str(line.trim_end()).unwrap();
    assert_eq!(
        (&record["subject"], &record["fact"], &record["citations"], &record["reason"]),
        (&json!("build"), &json!("Run `make test` before pushing"), &json!(["Makefile:14"]), &json!("CI runs it"))
    );
    assert_eq!((&record["created_by"], &record["accepted_by"]), (&json!("agent:claude"), &json!("dev@example.com")));
    let decisions = env.kb(&["--json", "decision", "list"]).ok().json();
    let d = &decisions["decisions"][0];
    assert_eq!((d["status"].as_str(), d["type"].as_str()), (Some("active"), Some("scope")));
    let file = env.read(std::path::Path::new(d["path"].as_str().unwrap()));
    assert!(file.contains("created_by: agent:codex\n") && file.contains("accepted_by: dev@example.com\n"), "{file}");
    // An accepted decision of a compiled type heads the block.
    assert!(env.kb(&["context"]).ok().stdout.contains("- The CLI does not support Windows"));

    let text_env = self::env();
    three(&text_env);
    let text = text_env.kb(&["inbox", "accept", "P3", "P1"]).ok().stdout;
    assert_eq!(
        text,
        "✓ Accepted P3 as decision 1: 001-the-cli-does-not-support-windows.md\n\
         ✓ Accepted P1 as memory 1: 001-user-prefers-pytest-over-unittest.md\nkb undo takes this back.\n"
    );

    let list = env.kb(&["undo", "--list"]).ok().stdout;
    assert!(list.contains("inbox accept: accepted proposals P1, P2, P3, P5"), "{list}");
    env.kb(&["undo"]).ok();
    assert_same_files(&before, &files(&env));
}

/// `reject` removes proposals in one undo entry; an unknown id is a not-found error naming it,
/// and nothing is accepted or rejected then.
#[test]
fn reject_removes_and_an_unknown_id_changes_nothing() {
    let env = env();
    three(&env);
    let before = env.snapshot();
    let before_files = files(&env);
    let run = env.kb(&["inbox", "accept", "P1", "P9"]).err();
    assert!(run.stderr.contains("error: proposal P9 not found"), "{run:?}");
    let run = env.kb(&["--json", "inbox", "reject", "P7", "P8", "P2"]).err();
    assert!(run.stderr.contains("error: proposals P7, P8 not found"), "{run:?}");
    let run = env.kb(&["inbox", "reject", "x1"]).err();
    assert!(run.stderr.contains("invalid proposal id"), "{run:?}");
    crate::common::assert_same_tree(&before, &env.snapshot());
    env.kb(&["inbox", "accept"]).usage();
    env.kb(&["inbox", "accept", "P1", "--all"]).usage();

    let j = env.kb(&["--json", "inbox", "reject", "P1", "P3"]).ok().json();
    assert_eq!(j["accepted"], json!([]));
    assert_eq!(
        j["rejected"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect::<Vec<_>>(),
        ["P1", "P3"]
    );
    assert_eq!(inbox_files(&env), ["P2-run-make-test.md"]);
    assert!(env.memory_files().is_empty() && !env.root().join(".co-cli/knowledge/decisions").exists());
    env.kb(&["undo"]).ok();
    assert_same_files(&before_files, &files(&env));
    let text = env.kb(&["inbox", "reject", "--all"]).ok().stdout;
    assert_eq!(
        text,
        "✓ Rejected P1 (memory)\n✓ Rejected P2 (record)\n✓ Rejected P3 (decision)\nkb undo takes this back.\n"
    );
    assert_eq!(env.kb(&["inbox", "accept", "--all"]).ok().stdout, "No proposals wait for review; nothing changed.\n");
}

/// A secret in a hand-written proposal is stored redacted when it is accepted, and said so.
#[test]
fn a_secret_in_a_proposal_is_redacted_when_accepted() {
    let env = env();
    let pat = format!("ghp_{}", "A1b2C3d4E5f6".repeat(3));
    let keys = "created: '2026-11-21T09:30:00+00:00'\nid: P1\nkind: memory\nproposed_by: agent:claude\ntags: []\n";
    proposal(&env, "P1-deploy.md", keys, &format!("Deploys use the token {pat}"));
    let run = env.kb(&["--json", "inbox", "accept", "P1"]).ok();
    assert_eq!(run.json()["accepted"][0]["redacted"], json!(["github-pat"]));
    assert!(run.stderr.contains("redacted secrets matching: github-pat"), "{run:?}");
    let memory = env.read(&env.file_of(1));
    assert!(memory.contains("Deploys use the token [REDACTED:github-pat]") && !memory.contains(&pat), "{memory}");
}

/// A proposal whose text differs from a stored memory in a salient token is saved beside it, and
/// the near miss is said.
#[test]
fn accepting_a_different_fact_is_a_near_miss() {
    let env = env();
    let keys = "created: '2026-11-21T09:30:00+00:00'\nid: P1\nkind: memory\nproposed_by: agent:claude\ntags: []\n";
    env.memory(1, "The api service listens on port 8080", &days_ago(1.0), &[]);
    proposal(&env, "P1-port.md", keys, "The api service listens on port 8081");
    let run = env.kb(&["--json", "inbox", "accept", "P1"]).ok();
    let a = &run.json()["accepted"][0];
    assert_eq!((a["action"].as_str(), a["memory_id"].as_u64()), (Some("saved"), Some(2)));
    assert_eq!(a["similar_to"]["id"], 1);
    assert_eq!(env.memory_files().len(), 2);
}

/// A hand-written proposal its store's save refuses (a blank tag) stays in the inbox, reported
/// `failed`, and the command exits 1; the others are accepted.
#[test]
fn a_proposal_the_store_refuses_stays_and_the_command_fails() {
    let env = env();
    let keys = "created: '2026-11-21T09:30:00+00:00'\nid: P1\nkind: memory\nproposed_by: agent:claude\ntags:\n- ' '\n";
    proposal(&env, "P1-deploys.md", keys, "Deploys go out on Tuesdays");
    proposal(&env, "P2-user-prefers-pytest.md", &MEMORY.replace("id: P1", "id: P2"), "User prefers pytest");
    let run = env.kb(&["--json", "inbox", "accept", "--all"]).err();
    assert!(run.stderr.contains("error: P1 not accepted: invalid tag ' '"), "{run:?}");
    let j = run.json();
    assert_eq!(
        (j["accepted"][0]["action"].as_str(), j["accepted"][1]["action"].as_str()),
        (Some("failed"), Some("saved"))
    );
    assert!(j["accepted"][0]["error"].as_str().unwrap().contains("a tag cannot be blank"), "{j}");
    assert_eq!(inbox_files(&env), ["P1-deploys.md"]);
    assert_eq!(env.memory_files(), ["001-user-prefers-pytest.md"]);
}

/// The settings of the inbox: `agent_writes` (allow, propose, deny) and `summarizer` (a shell
/// command or null), with their defaults, and errors naming where a bad value came from.
#[test]
fn agent_writes_and_summarizer_settings() {
    let env = env();
    let v = env.kb(&["--json", "config"]).ok().json();
    assert_eq!(v["agent_writes"], json!({"value": "allow", "source": "default"}));
    assert_eq!(v["summarizer"], json!({"value": null, "source": "default"}));
    env.kb(&["config", "set", "agent_writes", "propose"]).ok();
    env.kb(&["config", "set", "summarizer", "llm -s 'Digest this session'"]).ok();
    let v = env.kb(&["--json", "config"]).ok().json();
    let settings = env.root().join(".co-cli/settings.json").display().to_string();
    assert_eq!(v["agent_writes"], json!({"value": "propose", "source": settings}));
    assert_eq!(v["summarizer"]["value"], "llm -s 'Digest this session'");
    let run = env.kb(&["config", "set", "agent_writes", "ask"]).err();
    assert!(run.stderr.contains("invalid agent_writes 'ask'") && run.stderr.contains("\"deny\""), "{run:?}");
    let run = TestEnv::pinned().env("KB_AGENT_WRITES", "never").kb(&["config"]).err();
    assert!(run.stderr.contains("invalid KB_AGENT_WRITES='never'"), "{run:?}");
    let v = TestEnv::pinned().env("KB_SUMMARIZER", "cat").kb(&["--json", "config"]).ok().json();
    assert_eq!(v["summarizer"], json!({"value": "cat", "source": "env:KB_SUMMARIZER"}));
    assert!(env.kb(&["config"]).ok().stdout.contains("agent_writes             = \"propose\""));
}

#[cfg(feature = "mcp")]
mod over_mcp {
    use super::{env, inbox_files};
    use crate::common::{TestEnv, days_ago};
    use rmcp::model::{CallToolRequestParams, CallToolResult};
    use rmcp::service::RunningService;
    use rmcp::transport::TokioChildProcess;
    use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
    use serde_json::{Value, json};
    use std::process::Stdio;
    use std::time::Duration;

    type Client = RunningService<RoleClient, ()>;
    const TIMEOUT: Duration = Duration::from_secs(30);

    async fn connect(env: &TestEnv) -> Client {
        let cmd = tokio::process::Command::from(env.command(&["mcp"]));
        let (transport, _) = TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn().expect("spawn kb mcp");
        tokio::time::timeout(TIMEOUT, ().serve_with_lifecycle(transport, ClientLifecycleMode::Initialize))
            .await
            .expect("connect timed out")
            .expect("connect")
    }

    async fn call(client: &Client, tool: &'static str, args: Value) -> CallToolResult {
        let Value::Object(args) = args else { panic!("arguments must be an object") };
        let params = CallToolRequestParams::new(tool).with_arguments(args);
        tokio::time::timeout(TIMEOUT, client.call_tool(params)).await.expect("timed out").expect("protocol error")
    }

    fn text(r: &CallToolResult) -> String {
        r.content[0].as_text().expect("a text block").text.clone()
    }

    fn ok(r: CallToolResult) -> (String, Value) {
        assert_ne!(r.is_error, Some(true), "tool failed: {}", text(&r));
        (text(&r), r.structured_content.clone().expect("structured content"))
    }

    fn failed(r: CallToolResult) -> String {
        assert_eq!(r.is_error, Some(true), "expected a tool error: {r:?}");
        text(&r)
    }

    /// With `agent_writes: propose`, `save_memory`, `store_memory` and `propose_decision` write
    /// proposals (by `agent:<client>`, in no session) and say how a person accepts them; what the
    /// store or the inbox already holds is "already known"; a secret is redacted; a person's
    /// `kb inbox accept --all` then stores them as the agent's.
    #[tokio::test(flavor = "current_thread")]
    async fn propose_writes_proposals_a_person_accepts() {
        let env = env();
        env.write(".co-cli/settings.json", r#"{"agent_writes": "propose"}"#);
        env.memory(1, "We deploy on Tuesdays", &days_ago(1.0), &[]);
        let client = connect(&env).await;
        let (t, j) =
            ok(call(&client, "save_memory", json!({"content": "User prefers pytest", "tags": ["preference"]})).await);
        assert_eq!(t, "Proposed P1: a person accepts it with kb inbox accept P1");
        assert_eq!((j["action"].as_str(), j["proposal_id"].as_str()), (Some("proposed"), Some("P1")));
        assert!(env.memory_files().len() == 1, "nothing saved before a person accepts");
        let (t, j) = ok(call(&client, "save_memory", json!({"content": "user prefers  pytest"})).await);
        assert_eq!(t, "Already known: proposal P1 already says this and waits for a person; nothing proposed");
        assert_eq!(j["known"], json!({"store": "inbox", "id": "P1"}));
        let (t, _) = ok(call(&client, "save_memory", json!({"content": "we deploy on tuesdays"})).await);
        assert_eq!(t, "Already known: memory 1 already says this; nothing proposed");
        let (t, _) =
            ok(call(&client, "save_memory", json!({"content": "Reviews need two approvals", "type": "pattern"})).await);
        assert!(t.starts_with("Proposed P2: ") && t.contains("does not keep type"), "{t}");
        let args =
            json!({"subject": "build", "fact": "Run make test", "citations": ["Makefile:3"], "reason": "CI runs it"});
        let (t, _) = ok(call(&client, "store_memory", args).await);
        assert_eq!(t, "Proposed P3: a person accepts it with kb inbox accept P3");
        let (t, _) =
            ok(call(&client, "propose_decision", json!({"text": "The CLI does not support Windows", "type": "scope"}))
                .await);
        assert_eq!(t, "Proposed P4: a person accepts it with kb inbox accept P4");
        let pat = format!("ghp_{}", "A1b2C3d4E5f6".repeat(3));
        let (t, j) = ok(call(&client, "save_memory", json!({"content": format!("The deploy token is {pat}")})).await);
        assert!(t.starts_with("Proposed P5: ") && t.contains("Secret redacted (rule github-pat)"), "{t}");
        assert_eq!(j["redacted"], json!(["github-pat"]));
        client.cancel().await.unwrap();

        let listed = env.kb(&["--json", "inbox"]).ok().json();
        let ps = listed["proposals"].as_array().unwrap();
        assert_eq!(ps.len(), 5);
        assert!(ps.iter().all(|p| p["proposed_by"] == "agent:rmcp" && p["session"].is_null()), "{listed}");
        assert_eq!((ps[2]["kind"].as_str(), ps[2]["subject"].as_str()), (Some("record"), Some("build")));
        assert_eq!((ps[3]["kind"].as_str(), ps[3]["decision_type"].as_str()), (Some("decision"), Some("scope")));
        assert_eq!(ps[4]["content"], "The deploy token is [REDACTED:github-pat]");
        assert!(
            !inbox_files(&env)
                .iter()
                .any(|n| env.read(&env.root().join(".co-cli/knowledge/inbox").join(n)).contains(&pat))
        );

        env.kb(&["inbox", "accept", "--all"]).ok();
        assert!(inbox_files(&env).is_empty());
        let memory = env.read(&env.file_of(2));
        assert!(
            memory.contains("created_by: agent:rmcp\n") && memory.contains("accepted_by: dev@example.com\n"),
            "{memory}"
        );
        let decisions = env.kb(&["--json", "decision", "list"]).ok().json();
        assert_eq!(decisions["decisions"][0]["status"], "active");
    }

    /// With `agent_writes: deny`, every write is a tool error saying the setting denies it and how
    /// a person changes it; the board stays writable.
    #[tokio::test(flavor = "current_thread")]
    async fn deny_refuses_every_write_but_the_board() {
        let env = env().env("KB_AGENT_WRITES", "deny");
        let client = connect(&env).await;
        let calls = [
            ("save_memory", json!({"content": "User prefers pytest"})),
            ("store_memory", json!({"subject": "build", "fact": "Run make", "reason": "CI"})),
            ("propose_decision", json!({"text": "No Windows", "type": "scope"})),
            ("forget_memory", json!({"id": 1})),
            ("update_memory", json!({"id": 1, "content": "x"})),
            ("vote_memory", json!({"id": "mem-1", "direction": "up", "reason": "right"})),
        ];
        for (tool, args) in calls {
            let message = failed(call(&client, tool, args).await);
            assert!(
                message.contains("agent_writes is deny (set by the environment variable KB_AGENT_WRITES)")
                    && message.contains(&format!("so {tool} writes nothing"))
                    && message.contains("kb config set agent_writes propose"),
                "{tool}: {message}"
            );
        }
        assert!(env.memory_files().is_empty() && inbox_files(&env).is_empty());
        let args =
            json!({"command": "add", "name": "build-recipe", "description": "How to build", "context": "cargo build"});
        ok(call(&client, "context_board", args).await);
        client.cancel().await.unwrap();
    }

    /// `forget_memory` deletes only what an agent wrote: a person's memory or record is a tool
    /// error naming who wrote it and the command the person runs; an agent's goes.
    #[tokio::test(flavor = "current_thread")]
    async fn forget_memory_is_refused_for_what_a_person_wrote() {
        let env = env();
        let person = env.memory(1, "The api service listens on port 8080", &days_ago(1.0), &[]);
        let record = "{\"id\":\"mem-1\",\"subject\":\"build\",\"fact\":\"Run make\",\"citations\":[],\"reason\":\"r\",\"created_by\":\"dev@example.com\"}\n";
        env.write(".github/copilot-memories.jsonl", record);
        let client = connect(&env).await;
        let message = failed(call(&client, "forget_memory", json!({"id": 1})).await);
        assert_eq!(
            message,
            "memory 1 was written by a person (it has no created_by); an agent may change only what an agent wrote: a \
             person runs `kb forget 1`"
        );
        let message = failed(call(&client, "forget_memory", json!({"id": "mem-1"})).await);
        assert_eq!(
            message,
            "Copilot memory mem-1 was written by dev@example.com, a person; an agent may change only what an agent \
             wrote: a person runs `kb forget mem-1`"
        );
        assert!(person.exists());
        assert_eq!(env.read(&env.root().join(".github/copilot-memories.jsonl")), record);
        ok(call(&client, "save_memory", json!({"content": "Deploys go out on Tuesdays"})).await);
        ok(call(&client, "forget_memory", json!({"id": 2})).await);
        assert_eq!(env.memory_files().len(), 1);
        client.cancel().await.unwrap();
        env.kb(&["forget", "1"]).ok();
    }
}
