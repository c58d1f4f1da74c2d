//! `kb mcp`: driven through rmcp's own client over a child process (both protocol eras), and
//! with raw JSON-RPC lines for what a well-behaved client never sends.
//!
//! Parity with the CLI is checked by running the same operation both ways in two identical
//! repositories and comparing the CLI's stdout (or its `error:` message) with the tool's text,
//! and `--json` with the structured content, once each root is replaced by `<root>`.

#[cfg(feature = "mcp")]
mod with_mcp {
    use crate::common::{NOW, Run, TestEnv, days_ago};
    use rmcp::model::{
        CallToolRequestParams, CallToolResult, ProtocolVersion, ReadResourceRequestParams, ResourceContents,
    };
    use rmcp::service::RunningService;
    use rmcp::transport::TokioChildProcess;
    use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
    use serde_json::{Value, json};
    use std::process::Stdio;
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

    type Client = RunningService<RoleClient, ()>;

    /// How long any one exchange may take before the test fails instead of hanging.
    const TIMEOUT: Duration = Duration::from_secs(30);

    fn env() -> TestEnv {
        TestEnv::new().env("KB_NOW", NOW)
    }

    /// Starts `kb mcp` in `env` and connects rmcp's client to it.
    async fn connect(env: &TestEnv, lifecycle: ClientLifecycleMode) -> Client {
        let cmd = tokio::process::Command::from(env.command(&["mcp"]));
        let (transport, _) = TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn().expect("spawn kb mcp");
        tokio::time::timeout(TIMEOUT, ().serve_with_lifecycle(transport, lifecycle))
            .await
            .expect("connect timed out")
            .expect("connect")
    }

    fn legacy() -> ClientLifecycleMode {
        ClientLifecycleMode::Initialize
    }

    fn stateless() -> ClientLifecycleMode {
        ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
    }

    /// Waits until a change made outside the server (by hand, or by another kb process) is
    /// visible to the next request: the debounce (200 ms) and a margin (docs/mcp.md).
    async fn settle() {
        tokio::time::sleep(Duration::from_millis(400)).await;
    }

    /// Calls a tool; a JSON-RPC error fails the test (tool failures are results).
    async fn call(client: &Client, tool: &'static str, args: Value) -> CallToolResult {
        let Value::Object(args) = args else { panic!("arguments must be an object") };
        let params = CallToolRequestParams::new(tool).with_arguments(args);
        tokio::time::timeout(TIMEOUT, client.call_tool(params))
            .await
            .expect("tools/call timed out")
            .unwrap_or_else(|e| panic!("{tool}: protocol error {e}"))
    }

    /// Returns a result's single text block.
    fn text(result: &CallToolResult) -> &str {
        assert_eq!(result.content.len(), 1, "one text block expected: {result:?}");
        &result.content[0].as_text().expect("a text block").text
    }

    fn is_error(result: &CallToolResult) -> bool {
        result.is_error == Some(true)
    }

    /// Returns a successful result's text and structured content.
    fn ok(result: CallToolResult) -> (String, Value) {
        assert!(!is_error(&result), "tool failed: {}", text(&result));
        (text(&result).to_string(), result.structured_content.clone().expect("structured content"))
    }

    /// Returns a failed result's message.
    fn failed(result: CallToolResult) -> String {
        assert!(is_error(&result), "expected a tool error: {result:?}");
        text(&result).to_string()
    }

    /// Replaces `root` by `<root>` everywhere in `s`.
    fn norm(s: &str, env: &TestEnv) -> String {
        s.replace(&env.root().display().to_string(), "<root>")
    }

    fn norm_json(v: &Value, env: &TestEnv) -> Value {
        serde_json::from_str(&norm(&v.to_string(), env)).unwrap()
    }

    /// The CLI's answer to one command: run plainly and with `--json`, each with its repository.
    type CliRuns<'a> = ((Run, &'a TestEnv), (Run, &'a TestEnv));

    /// Runs a command that writes nothing, plainly and with `--json`, in `env`.
    fn cli<'a>(env: &'a TestEnv, args: &[&str]) -> CliRuns<'a> {
        let json: Vec<&str> = std::iter::once("--json").chain(args.iter().copied()).collect();
        ((env.kb(args), env), (env.kb(&json), env))
    }

    /// Runs a command that writes, plainly in `text_env` and with `--json` in `json_env`: two
    /// repositories in the same state as the server's.
    fn cli_write<'a>(text_env: &'a TestEnv, json_env: &'a TestEnv, args: &[&str]) -> CliRuns<'a> {
        let json: Vec<&str> = std::iter::once("--json").chain(args.iter().copied()).collect();
        ((text_env.kb(args), text_env), (json_env.kb(&json), json_env))
    }

    /// Asserts that a tool result says what the CLI said: the same text (stdout) and JSON, or
    /// for a failure the message the CLI prints after `error:`. Roots are compared as `<root>`.
    fn assert_parity(result: CallToolResult, env: &TestEnv, cli: CliRuns<'_>) {
        let ((cli, cli_env), (cli_json, json_env)) = cli;
        if cli.code == 0 {
            assert_eq!(cli_json.code, 0, "{cli_json:?}");
            let (text, json) = ok(result);
            assert_eq!(norm(&format!("{text}\n"), env), norm(&cli.stdout, cli_env), "text differs from the CLI");
            assert_eq!(norm_json(&json, env), norm_json(&cli_json.json(), json_env), "JSON differs from the CLI");
        } else {
            let message = failed(result);
            assert_eq!(cli.code, 1, "{cli:?}");
            assert_eq!(cli_json.code, 1, "{cli_json:?}");
            assert_eq!(norm(&format!("error: {message}\n"), env), norm(&cli.stderr, cli_env), "message differs");
        }
    }

    /// Returns a `get_memory` result without what the check at use adds (`verified` and `problems`
    /// in the JSON, the `Verified` block of the text), to compare with `kb show`, which has no
    /// check; the check itself is tested in `audit.rs`.
    fn unverified(mut result: CallToolResult) -> CallToolResult {
        if is_error(&result) {
            return result;
        }
        if let Some(Value::Object(map)) = result.structured_content.as_mut() {
            assert!(map.remove("verified").is_some() && map.remove("problems").is_some(), "{map:?}");
        }
        let text = text(&result).to_string();
        let (kept, _) = text.split_once("\n\nVerified (paths and commands):").expect("a Verified block");
        result.content = vec![rmcp::model::ContentBlock::text(kept.to_string())];
        result
    }

    /// Asserts that a `list_memories` result, given whole, is what `kb list ARGS` says: the same
    /// text, and the same JSON but for `total` (here equal to `count`) and each item's `content`.
    fn assert_list_parity(result: CallToolResult, env: &TestEnv, args: &[&str]) {
        let (text, mut json) = ok(result);
        let list: Vec<&str> = std::iter::once("list").chain(args.iter().copied()).collect();
        let ((cli, _), (cli_json, _)) = cli(env, &list);
        assert_eq!(format!("{text}\n"), cli.ok().stdout, "text differs from the CLI");
        assert_eq!(json["total"], json["count"], "{json}");
        let map = json.as_object_mut().unwrap();
        map.remove("total");
        for item in map["memories"].as_array_mut().unwrap() {
            assert!(item.as_object_mut().unwrap().remove("content").is_some_and(|c| c.is_string()), "{item}");
        }
        assert_eq!(json, cli_json.ok().json(), "JSON differs from the CLI");
    }

    /// Writes the global and the project context files.
    fn write_contexts(env: &TestEnv) {
        let global = env.home().join(".config/co-cli/knowledge/context.md");
        std::fs::create_dir_all(global.parent().unwrap()).unwrap();
        std::fs::write(&global, "---\nversion: 1\nupdated: 2026-11-01T00:00:00Z\n---\n\nAlways answer in English.\n")
            .unwrap();
        env.write(
            ".co-cli/knowledge/context.md",
            "---\nversion: 1\nupdated: 2026-11-01T00:00:00Z\n---\n\n# kb\n\nRust 2024; run `.ci/run` before pushing. Ünïcode ✓\n",
        );
    }

    /// Asserts `schema` keeps to the plain subset every client reads (Gemini's function calling
    /// included): one `type` string, no `format`, no `$schema`, nothing nested that breaks it.
    fn plain_schema(at: &str, schema: &Value) {
        match schema {
            Value::Object(map) => {
                for (key, value) in map {
                    assert!(!matches!(key.as_str(), "format" | "$schema" | "oneOf" | "anyOf" | "allOf"), "{at}: {key}");
                    match (key.as_str(), value) {
                        ("type", value) => assert!(value.is_string(), "{at}: a type list {value}"),
                        ("enum", Value::Array(values)) => assert!(values.iter().all(Value::is_string), "{at}: {value}"),
                        ("default", value) => assert!(!value.is_null(), "{at}: default null"),
                        // `properties` maps field names (`type` is one) to schemas.
                        ("properties", Value::Object(fields)) => {
                            fields.iter().for_each(|(name, field)| plain_schema(&format!("{at}.{name}"), field))
                        }
                        (_, value) => plain_schema(&format!("{at}.{key}"), value),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| plain_schema(at, v)),
            _ => {}
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn tools_are_listed_with_guidance_and_documented_schemas() {
        let env = env();
        let client = connect(&env, legacy()).await;
        let info = client.peer_info().expect("server info");
        assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("kb"));
        assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
        assert!(info.capabilities.tools.is_some() && info.capabilities.resources.is_some());

        let mut tools = client.list_all_tools().await.unwrap();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        for tool in &tools {
            let schema = Value::Object((*tool.input_schema).clone());
            plain_schema(&tool.name, &schema);
        }
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "audit",
                "context_board",
                "forget_memory",
                "get_context",
                "get_memory",
                "list_memories",
                "propose_decision",
                "recall_memory",
                "save_memory",
                "store_memory",
                "update_memory",
                "update_session",
                "vote_memory"
            ]
        );
        let required = |name: &str| -> Vec<String> {
            let tool = tools.iter().find(|t| t.name == name).unwrap();
            let mut r: Vec<String> = tool
                .input_schema
                .get("required")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
                .unwrap_or_default();
            r.sort();
            r
        };
        assert_eq!(required("save_memory"), ["content"]);
        assert_eq!(required("recall_memory"), ["query"]);
        assert_eq!(required("list_memories"), Vec::<String>::new());
        assert_eq!(required("get_context"), Vec::<String>::new());
        assert_eq!(required("forget_memory"), ["id"]);
        assert_eq!(required("update_memory"), ["content", "id"]);
        assert_eq!(required("get_memory"), ["id"]);
        assert_eq!(required("store_memory"), ["fact", "reason", "subject"]);
        assert_eq!(required("propose_decision"), ["text", "type"]);
        assert_eq!(required("update_session"), ["summary"]);
        assert_eq!(required("vote_memory"), ["direction", "reason"]);
        assert_eq!(required("context_board"), ["command"]);
        assert_eq!(required("audit"), Vec::<String>::new());
        let enum_of = |tool: &str, field: &str| -> Value {
            let tool = tools.iter().find(|t| t.name == tool).unwrap();
            tool.input_schema["properties"][field]["enum"].clone()
        };
        assert_eq!(enum_of("propose_decision", "type"), json!(["architectural", "scope", "process", "technical"]));
        assert_eq!(enum_of("vote_memory", "direction"), json!(["up", "down"]));
        assert_eq!(enum_of("context_board", "command"), json!(["get_board", "get", "add", "prune"]));
        // Agents cannot pass --redact: no description or instruction may tell them to.
        let instructions = info.instructions.clone().unwrap_or_default();
        assert!(!instructions.contains("--redact"), "{instructions}");
        for tool in &tools {
            let description = tool.description.as_deref().unwrap_or("");
            assert!(
                !description.contains("--redact") && !description.contains("refused"),
                "{}: {description}",
                tool.name
            );
            let annotations = tool.annotations.as_ref().expect("annotations");
            assert_eq!(annotations.open_world_hint, Some(false), "{}", tool.name);
            let destructive = matches!(
                tool.name.as_ref(),
                "save_memory" | "store_memory" | "forget_memory" | "update_memory" | "update_session" | "context_board"
            );
            if annotations.read_only_hint == Some(false) {
                assert_eq!(annotations.destructive_hint, Some(destructive), "{}: destructiveHint", tool.name);
            }
        }
        for tool in &tools {
            let description = tool.description.as_deref().unwrap_or("");
            assert!(description.len() > 150, "{}: description too thin to act on: {description}", tool.name);
            let props = tool.input_schema.get("properties").and_then(Value::as_object).expect("properties");
            for (field, schema) in props {
                let doc = schema.get("description").and_then(Value::as_str).unwrap_or("");
                assert!(doc.len() > 20, "{}.{field} is undocumented", tool.name);
                assert!(!schema.to_string().contains("$ref"), "{}.{field}: inline schemas only", tool.name);
                plain_schema(&format!("{}.{field}", tool.name), schema);
            }
            let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
            let expect = matches!(
                tool.name.as_ref(),
                "recall_memory" | "list_memories" | "get_context" | "get_memory" | "audit"
            );
            assert_eq!(read_only, Some(expect), "{}: readOnlyHint", tool.name);
        }
        // The save guidance covers when to save and when not.
        let save = tools.iter().find(|t| t.name == "save_memory").unwrap().description.clone().unwrap();
        for signal in ["preference", "correction", "decision", "context", "pattern", "I prefer", "Actually"] {
            assert!(save.contains(signal), "save_memory description lacks {signal:?}");
        }
        for not in ["questions", "speculation", "current task", "obvious from reading the code", "secrets"] {
            assert!(save.contains(not), "save_memory description lacks the negative guidance {not:?}");
        }
        let recall = tools.iter().find(|t| t.name == "recall_memory").unwrap().description.clone().unwrap();
        assert!(recall.contains("without being asked"));
        // save_memory and store_memory say when to use which.
        let description = |name: &str| tools.iter().find(|t| t.name == name).unwrap().description.clone().unwrap();
        assert!(description("save_memory").contains("file:line citations, use store_memory instead"));
        assert!(description("store_memory").contains("rather than save_memory when the fact is about the code"));
        // The board is per branch, and says so.
        assert!(description("context_board").contains("one board per branch"));
        // Every tool takes only the arguments it names.
        for tool in &tools {
            assert_eq!(tool.input_schema.get("additionalProperties"), Some(&json!(false)), "{}", tool.name);
        }
        client.cancel().await.unwrap();
    }

    /// The instructions sent at initialize tell an agent where to start (get_context with its
    /// files) and which tool is for what; the context resource's description names what it holds.
    #[tokio::test(flavor = "current_thread")]
    async fn instructions_start_with_get_context_and_the_resource_names_its_layers() {
        let env = env();
        let client = connect(&env, legacy()).await;
        let instructions = client.peer_info().and_then(|i| i.instructions.clone()).expect("instructions");
        let start = "At the start of a task, call get_context with the files you are about to work on (for)";
        assert!(instructions.contains(start), "{instructions}");
        let first_tool = ["recall_memory", "get_memory", "save_memory", "store_memory", "propose_decision"]
            .iter()
            .filter_map(|t| instructions.find(t))
            .min();
        assert!(instructions.find("get_context") < first_tool, "get_context comes first: {instructions}");
        for (tool, use_for) in [
            ("recall_memory", "to look up specifics"),
            ("get_memory", "to read one memory, record or decision in full"),
            ("save_memory", "keeps a durable fact about the repository"),
            ("store_memory", "instead when the fact is about the code and you can cite where it holds (file:line"),
            ("propose_decision", "proposes a boundary the whole team should follow"),
            ("context_board", "keeps short notes for the agents working on the same git branch"),
        ] {
            assert!(instructions.contains(&format!("{tool} {use_for}")), "{tool}: {instructions}");
        }
        let resources = client.list_all_resources().await.unwrap();
        let description = resources[0].description.clone().expect("a description");
        for layer in [
            "decisions",
            "context files",
            "Copilot records",
            "scoped instructions",
            "Core Context",
            "Hot Memories",
            "Learnings",
            "session",
        ] {
            assert!(description.contains(layer), "{layer}: {description}");
        }
        assert!(!description.contains("context files + Copilot records"), "{description}");
        client.cancel().await.unwrap();
    }

    /// The whole memory lifecycle through the 2025-11-25 handshake, checked against the files
    /// and against the CLI.
    #[tokio::test(flavor = "current_thread")]
    async fn save_recall_list_forget_match_the_cli_and_the_files() {
        let env = env();
        // The CLI twin writes as the agent does (`created_by: agent:rmcp`, rmcp's client name).
        let agent = || self::env().env("KB_AUTHOR", "agent:rmcp");
        let (twin, twin_json) = (agent(), agent());
        let client = connect(&env, legacy()).await;

        // save: a new memory.
        let args = json!({"content": "User prefers pytest over unittest", "tags": ["preference", "python"]});
        let result = call(&client, "save_memory", args).await;
        let (text, json) = ok(result.clone());
        let save = ["save", "User prefers pytest over unittest", "-t", "preference", "--tags", "python"];
        assert_parity(result, &env, cli_write(&twin, &twin_json, &save));
        assert_eq!((json["action"].as_str(), json["memory_id"].as_u64()), (Some("saved"), Some(1)));
        assert!(text.starts_with("✓ Saved memory 1: 001-user-prefers-pytest-over-unittest.md\nLocation: /"), "{text}");
        let file = env.memories().join("001-user-prefers-pytest-over-unittest.md");
        assert_eq!(json["path"], file.display().to_string());
        let written = env.read(&file);
        assert_eq!(written, twin.read(&twin.memories().join("001-user-prefers-pytest-over-unittest.md")));
        assert!(written.contains("auto_category: preference\n") && written.contains("- python\n"), "{written}");
        assert!(written.contains("created_by: agent:rmcp\n"), "the client's name is the author: {written}");
        assert!(written.ends_with("\n\nUser prefers pytest over unittest\n"), "{written}");

        // save: a near-duplicate consolidates into memory 1 and unions the tags.
        let args = json!({"content": "user prefers pytest over unittest!", "tags": "testing"});
        let result = call(&client, "save_memory", args).await;
        let (text, json) = ok(result.clone());
        let save = ["save", "user prefers pytest over unittest!", "-t", "testing"];
        assert_parity(result, &env, cli_write(&twin, &twin_json, &save));
        assert_eq!((json["action"].as_str(), json["memory_id"].as_u64()), (Some("consolidated"), Some(1)));
        assert!(text.starts_with("✓ Updated memory 1 (consolidated duplicate)\nLocation: "), "{text}");
        let written = env.read(&file);
        assert!(
            written.contains("- testing\n") && written.contains("updated: '2026-11-22T12:00:00+00:00'"),
            "{written}"
        );
        assert_eq!(env.memory_files().len(), 1);

        // Another memory, and a hand-written one, for recall and list.
        ok(call(
            &client,
            "save_memory",
            json!({"content": "We decided to release from main only", "tags": ["decision"]}),
        )
        .await);
        env.memory(7, "Pytest fixtures live in conftest.py", &days_ago(3.0), &["pattern", "python"]);
        settle().await;

        // recall and list: the CLI's text and JSON, byte for byte.
        for (query, n) in [("PYTEST", 5), ("pytest", 1), ("nothing like this", 5), ("how do we ship", 5)] {
            let result = call(&client, "recall_memory", json!({"query": query, "max_results": n})).await;
            assert_parity(result, &env, cli(&env, &["recall", query, "-n", &n.to_string(), "--verify"]));
        }
        let result = call(&client, "recall_memory", json!({"query": "python"})).await;
        assert_eq!(ok(result).1["count"], 2, "max_results defaults to 5");
        let result = call(&client, "list_memories", json!({})).await;
        assert_list_parity(result, &env, &[]);

        // forget: by id, integer or string; the file goes; a second time is a tool error.
        let (text, json) = ok(call(&client, "forget_memory", json!({"id": 1})).await);
        assert_eq!(text, "✓ Deleted memory 1: 001-user-prefers-pytest-over-unittest.md");
        assert_eq!(json, json!({"deleted": 1, "path": file.display().to_string(), "store": "md"}));
        assert!(!file.exists());
        let result = call(&client, "forget_memory", json!({"id": "1"})).await;
        assert_parity(result, &env, cli(&env, &["forget", "1"]));
        let result = call(&client, "forget_memory", json!({"id": "seven"})).await;
        assert_parity(result, &env, cli(&env, &["forget", "seven"]));
        // A person's memory is not an agent's to delete: the answer names who wrote it and the command.
        let message = failed(call(&client, "forget_memory", json!({"id": "7"})).await);
        assert!(message.contains("memory 7 was written by a person") && message.contains("`kb forget 7`"), "{message}");
        env.kb(&["forget", "7"]).ok();
        settle().await;
        let result = call(&client, "list_memories", json!({})).await;
        assert_list_parity(result, &env, &[]);
        assert_eq!(env.memory_files(), ["002-we-decided-to-release-from-main-only.md"]);

        // store_memory: a Copilot record, as `kb save --store copilot` stores it.
        let fact = "Integration tests pin the clock with KB_NOW";
        let args = json!({"subject": "testing", "fact": fact, "citations": ["tests/cli/common.rs:1", "src/time.rs:2"], "reason": "Tests must not depend on the date"});
        let result = call(&client, "store_memory", args).await;
        let (text, json) = ok(result.clone());
        let save = [
            "save",
            "--store",
            "copilot",
            "--subject",
            "testing",
            "--citation",
            "tests/cli/common.rs:1",
            "--citation",
            "src/time.rs:2",
            "--reason",
            "Tests must not depend on the date",
            fact,
        ];
        assert_parity(result, &env, cli_write(&twin, &twin_json, &save));
        let id = json["memory_id"].as_str().expect("a record id").to_string();
        assert!(
            id.starts_with("mem-") && text.starts_with(&format!("✓ Saved Copilot memory {id}\nLocation: ")),
            "{text}"
        );
        let jsonl = env.root().join(".github/copilot-memories.jsonl");
        let record: Value = serde_json::from_str(env.read(&jsonl).trim_end()).unwrap();
        assert_eq!(
            (record["id"].as_str(), record["subject"].as_str(), record["fact"].as_str()),
            (Some(id.as_str()), Some("testing"), Some(fact))
        );
        assert_eq!(record["citations"], json!(["tests/cli/common.rs:1", "src/time.rs:2"]));
        // A near-identical fact in the same subject merges, citations given as one string.
        let args = json!({"subject": "Testing", "fact": format!("{fact}."), "citations": "docs/testing.md:3", "reason": "Tests must not depend on the date"});
        let result = call(&client, "store_memory", args).await;
        let save = [
            "save",
            "--store",
            "copilot",
            "--subject",
            "Testing",
            "--citation",
            "docs/testing.md:3",
            "--reason",
            "Tests must not depend on the date",
            &format!("{fact}."),
        ];
        assert_parity(result, &env, cli_write(&twin, &twin_json, &save));
        assert_eq!(env.read(&jsonl).lines().count(), 1);

        // recall and list cover both stores, as the CLI does.
        for query in ["test", "KB_NOW", "release"] {
            let result = call(&client, "recall_memory", json!({"query": query})).await;
            assert_parity(result, &env, cli(&env, &["recall", query, "--verify"]));
        }
        let result = call(&client, "list_memories", json!({})).await;
        assert_list_parity(result, &env, &[]);

        // forget_memory takes a record's id too.
        let result = call(&client, "forget_memory", json!({"id": id})).await;
        assert_parity(result, &env, cli_write(&twin, &twin_json, &["forget", &id]));
        assert_eq!(env.read(&jsonl), "");
        let result = call(&client, "forget_memory", json!({"id": id})).await;
        assert_parity(result, &env, cli(&env, &["forget", &id]));
        client.cancel().await.unwrap();
    }

    /// Failures are tool errors with the CLI's message; the server answers the next call.
    #[tokio::test(flavor = "current_thread")]
    async fn failures_are_tool_errors_with_the_cli_message() {
        let env = env();
        let client = connect(&env, legacy()).await;
        for (args, cli_args) in [
            (json!({"content": "   "}), vec!["save", "   "]),
            (json!({"content": "x", "tags": ["ok", " "]}), vec!["save", "x", "-t", "ok", "-t", " "]),
        ] {
            let result = call(&client, "save_memory", args).await;
            let (twin, twin_json) = (self::env(), self::env());
            assert_parity(result, &env, cli_write(&twin, &twin_json, &cli_args));
        }
        assert!(env.memory_files().is_empty());

        // Settings are read per call: a bad value is a tool error naming the file, then fixed.
        let settings = env.write(".co-cli/settings.json", "{\"memory_max_count\": 3}");
        settle().await;
        let message = failed(call(&client, "list_memories", json!({})).await);
        assert!(message.contains("settings.json") && message.contains("memory_max_count"), "{message}");
        std::fs::write(&settings, "{\"memory_max_count\": 12}").unwrap();
        settle().await;
        let (_, json) = ok(call(&client, "list_memories", json!({})).await);
        assert_eq!(json["limit"], 12);

        // Arguments that do not fit the schema: a tool error, and the server carries on.
        let message = failed(call(&client, "save_memory", json!({"tags": ["x"]})).await);
        assert_eq!(message, "content is required: a string");
        let message = failed(call(&client, "recall_memory", json!({"query": "x", "max_results": -1})).await);
        assert_eq!(message, "max_results must be a whole number from 1 to 100, not -1");
        let message = failed(call(&client, "forget_memory", json!({"id": [1]})).await);
        assert_eq!(message, "id must be a memory's number (e.g. 7) or a record's id (e.g. \"mem-1a2b3c4d\"), not [1]");

        // store_memory refuses what `kb save --store copilot` refuses, with the same message.
        for (args, cli_args) in [
            (
                json!({"subject": " ", "fact": "A fact", "citations": ["a.rs:1"], "reason": "r"}),
                vec!["save", "--store", "copilot", "--subject", " ", "--citation", "a.rs:1", "--reason", "r", "A fact"],
            ),
            (
                json!({"subject": "s", "fact": "  ", "citations": ["a.rs:1"], "reason": "r"}),
                vec!["save", "--store", "copilot", "--subject", "s", "--citation", "a.rs:1", "--reason", "r", "  "],
            ),
        ] {
            let result = call(&client, "store_memory", args).await;
            let (twin, twin_json) = (self::env(), self::env());
            assert_parity(result, &env, cli_write(&twin, &twin_json, &cli_args));
        }
        let message = failed(call(&client, "store_memory", json!({"subject": "s", "fact": "f"})).await);
        assert_eq!(message, "reason is required: a string");

        // Still alive.
        ok(call(&client, "list_memories", json!({})).await);
        client.cancel().await.unwrap();
    }

    /// A repository renamed while the server runs: a write is refused, never recreating the old
    /// path outside any repository.
    #[tokio::test(flavor = "current_thread")]
    async fn a_write_after_the_repository_was_renamed_is_refused() {
        let env = env();
        let client = connect(&env, legacy()).await;
        ok(call(&client, "save_memory", json!({"content": "Deploys go out on Tuesdays"})).await);
        let moved = env.base.join("moved");
        std::fs::rename(env.root(), &moved).unwrap();
        let message = failed(call(&client, "save_memory", json!({"content": "Releases are tagged vX.Y.Z"})).await);
        assert!(message.contains("was renamed, moved or deleted while kb mcp ran"), "{message}");
        assert!(!env.root().exists(), "the old path is not created again");
        let files = std::fs::read_dir(moved.join(".co-cli/knowledge/memories")).unwrap().count();
        assert_eq!(files, 1, "nothing written in the moved repository either");
        client.cancel().await.unwrap();
    }

    /// `update_memory` changes what an agent wrote, with secrets redacted; a person's memory is
    /// refused, naming who wrote it and what the person runs.
    #[tokio::test(flavor = "current_thread")]
    async fn update_memory_changes_only_what_an_agent_wrote() {
        let env = env();
        let person = env.memory(1, "The api service listens on port 8080", &days_ago(1.0), &[]);
        let before = env.read(&person);
        let client = connect(&env, legacy()).await;
        ok(call(&client, "save_memory", json!({"content": "Deploys go out on Tuesdays"})).await);
        let (text, json) =
            ok(call(&client, "update_memory", json!({"id": 2, "content": "Deploys go out on Thursdays"})).await);
        assert_eq!((json["id"].as_u64(), json["updated"].as_bool()), (Some(2), Some(true)), "{text}");
        assert!(text.starts_with("✓ Updated memory 2"), "{text}");
        let written = env.read(&env.memories().join(&env.memory_files()[1]));
        assert!(
            written.ends_with("\n\nDeploys go out on Thursdays\n") && written.contains("created_by: agent:rmcp"),
            "{written}"
        );
        let pat = format!("ghp_{}", "abcdefghijklmnopqrstuvwxyz0123456789");
        let (_, json) = ok(call(&client, "update_memory", json!({"id": "2", "content": format!("token {pat}")})).await);
        assert_eq!(json["redacted"], json!(["github-pat"]));
        assert!(!env.read(&env.memories().join(&env.memory_files()[1])).contains(&pat));
        let message = failed(call(&client, "update_memory", json!({"id": 1, "content": "port 9090"})).await);
        assert!(message.contains("memory 1 was written by a person") && message.contains("kb update 1"), "{message}");
        assert_eq!(env.read(&person), before, "the person's memory is untouched");
        let message = failed(call(&client, "update_memory", json!({"id": 1})).await);
        assert_eq!(message, "content is required: a string");
        client.cancel().await.unwrap();
    }

    /// Issue 28: an agent's save restating a person's memory outside the dedup window (older than
    /// its days, or of another type) is reported as the near miss it is, never silently stored
    /// twice; the same words are already stored.
    #[tokio::test(flavor = "current_thread")]
    async fn an_agents_save_restating_an_old_persons_memory_is_a_near_miss() {
        let env = env();
        env.memory(1, "The api service listens on port 8080", &days_ago(30.0), &[]);
        let client = connect(&env, legacy()).await;
        let (text, json) = ok(call(
            &client,
            "save_memory",
            json!({"content": "The api service listens on port 8080 now", "type": "pattern"}),
        )
        .await);
        assert_eq!(json["action"], "saved", "{text}");
        assert_eq!(
            (json["similar_to"]["id"].as_u64(), json["similar_to"]["why"].as_str()),
            (Some(1), Some("written by a person")),
            "{json}"
        );
        assert!(text.contains("Similar: memory 1"), "{text}");
        let (text, json) =
            ok(call(&client, "save_memory", json!({"content": "the api service  listens on port 8080"})).await);
        assert_eq!((json["action"].as_str(), json["memory_id"].as_u64()), (Some("exists"), Some(1)), "{text}");
        client.cancel().await.unwrap();
    }

    /// Over MCP a save never rewrites what a person wrote: a similar memory or record without an
    /// agent's `created_by` stays as it is, the text is saved beside it, and the result tells the
    /// agent how to drop the old one (`forget_memory`, never a kb command).
    #[tokio::test(flavor = "current_thread")]
    async fn an_agents_save_never_rewrites_what_a_person_wrote() {
        let env = env();
        let person = env.memory(1, "The api service listens on port 8080", &days_ago(1.0), &[]);
        let before = env.read(&person);
        let record = "{\"id\":\"mem-1\",\"subject\":\"build\",\"fact\":\"Run make before pushing\",\"citations\":[],\"reason\":\"r\"}\n";
        env.write(".github/copilot-memories.jsonl", record);
        let client = connect(&env, legacy()).await;

        let (text, json) =
            ok(call(&client, "save_memory", json!({"content": "The api service now listens on port 8080"})).await);
        assert_eq!((json["action"].as_str(), json["memory_id"].as_u64()), (Some("saved"), Some(2)), "{text}");
        assert_eq!(json["similar_to"]["id"], 1);
        assert_eq!(json["similar_to"]["why"], "written by a person");
        assert!(text.contains("call forget_memory(1)") && !text.contains("kb forget"), "{text}");
        assert_eq!(env.read(&person), before, "the person's memory is untouched");
        // The same words: already stored, nothing written.
        let (text, json) =
            ok(call(&client, "save_memory", json!({"content": "the api service listens on port 8080"})).await);
        assert_eq!((json["action"].as_str(), json["memory_id"].as_u64()), (Some("exists"), Some(1)), "{text}");
        assert!(text.contains("already stored as memory 1"), "{text}");
        // What the agent saved is its own: the next restatement consolidates into memory 2.
        let written = env.read(&env.memories().join(&env.memory_files()[1]));
        assert!(written.contains("created_by: agent:rmcp\n"), "{written}");
        let (_, json) =
            ok(call(&client, "save_memory", json!({"content": "The api service now listens on port 8080."})).await);
        assert_eq!((json["action"].as_str(), json["memory_id"].as_u64()), (Some("consolidated"), Some(2)));
        assert_eq!(env.memory_files().len(), 2);
        let rewritten = env.read(&env.memories().join(&env.memory_files()[1]));
        assert!(rewritten.contains("updated_by: agent:rmcp\n"), "{rewritten}");

        // The same for a Copilot record.
        // Copilot's agents send a category: it is stored.
        let args =
            json!({"subject": "build", "fact": "Run make before pushing!", "reason": "seen", "category": "general"});
        let (text, json) = ok(call(&client, "store_memory", args).await);
        assert_eq!(json["action"], "saved", "{text}");
        assert_eq!(
            (json["similar_to"]["id"].as_str(), json["similar_to"]["why"].as_str()),
            (Some("mem-1"), Some("written by a person"))
        );
        assert!(text.contains("call forget_memory(\"mem-1\")"), "{text}");
        let lines = env.read(&env.root().join(".github/copilot-memories.jsonl"));
        assert!(lines.starts_with(record), "{lines}");
        assert!(lines.lines().nth(1).unwrap().contains("\"created_by\":\"agent:rmcp\""), "{lines}");
        assert!(lines.lines().nth(1).unwrap().contains("\"category\":\"general\""), "{lines}");
        let args = json!({"subject": "build", "fact": "run make  before pushing", "reason": "seen"});
        let (_, json) = ok(call(&client, "store_memory", args).await);
        assert_eq!((json["action"].as_str(), json["memory_id"].as_str()), (Some("exists"), Some("mem-1")));
        client.cancel().await.unwrap();
    }

    /// A `store_memory` merge replaces a record's fact through the undo journal: `kb undo` puts
    /// the file back byte for byte.
    #[tokio::test(flavor = "current_thread")]
    async fn a_store_memory_merge_is_undone_byte_for_byte() {
        let env = env();
        let line = "{\"id\":\"mem-1\",\"subject\":\"build\",\"fact\":\"Run make before pushing\",\"citations\":[],\"reason\":\"r\",\"created_by\":\"agent:copilot\"}\r\n{\"broken\n";
        env.write(".github/copilot-memories.jsonl", line);
        let before = std::fs::read(env.root().join(".github/copilot-memories.jsonl")).unwrap();
        let client = connect(&env, legacy()).await;
        let args = json!({"subject": "build", "fact": "Run make before pushing!", "reason": "seen again"});
        let (text, json) = ok(call(&client, "store_memory", args).await);
        assert_eq!(json["action"], "consolidated", "{text}");
        client.cancel().await.unwrap();
        let run = env.kb(&["undo"]).ok();
        assert!(run.stdout.starts_with("✓ Undid save: consolidated into Copilot memory mem-1"), "{run:?}");
        assert_eq!(std::fs::read(env.root().join(".github/copilot-memories.jsonl")).unwrap(), before);
    }

    /// Decay runs through the same store code: the CLI and the tool report the same outcome.
    #[tokio::test(flavor = "current_thread")]
    async fn save_decays_like_the_cli() {
        let seed = |env: &TestEnv| {
            for i in 1..=10u64 {
                env.memory(
                    i,
                    &format!("Distinct fact number {i} about topic {}", "abcdefghij".repeat(i as usize)),
                    &days_ago(30.0 - i as f64),
                    &[],
                );
            }
        };
        let env = env().env("CO_CLI_MEMORY_MAX_COUNT", "10").env("CO_CLI_MEMORY_DECAY_STRATEGY", "cut");
        let twin = TestEnv::new()
            .env("KB_NOW", NOW)
            .env("CO_CLI_MEMORY_MAX_COUNT", "10")
            .env("CO_CLI_MEMORY_DECAY_STRATEGY", "cut");
        seed(&env);
        seed(&twin);
        let client = connect(&env, legacy()).await;
        let result = call(&client, "save_memory", json!({"content": "A brand new memory"})).await;
        let cli = twin.kb(&["save", "A brand new memory"]);
        let (text, json) = ok(result);
        assert_eq!(norm(&format!("{text}\n"), &env), norm(&cli.stdout, &twin));
        assert_eq!((json["decayed"].as_u64(), json["decay_strategy"].as_str()), (Some(2), Some("cut")));
        assert_eq!(env.memory_files(), twin.memory_files());
        client.cancel().await.unwrap();
    }

    /// Calls sent together are served one at a time, in order, through the store's lock: no
    /// id is used twice and no save is lost.
    #[tokio::test(flavor = "current_thread")]
    async fn concurrent_calls_lose_nothing() {
        // Threshold 100: only identical texts would merge, so every save creates a memory.
        let env = env().env("CO_CLI_MEMORY_DEDUP_THRESHOLD", "100");
        let client = connect(&env, legacy()).await;
        let mut calls = tokio::task::JoinSet::new();
        for i in 1..=20 {
            let peer = client.peer().clone();
            calls.spawn(async move {
                let Value::Object(args) = json!({"content": format!("Fact number {i}")}) else { unreachable!() };
                peer.call_tool(CallToolRequestParams::new("save_memory").with_arguments(args)).await
            });
        }
        let mut ids = Vec::new();
        while let Some(done) = tokio::time::timeout(TIMEOUT, calls.join_next()).await.expect("calls timed out") {
            let (_, json) = ok(done.unwrap().expect("tools/call"));
            ids.push(json["memory_id"].as_u64().unwrap());
        }
        ids.sort_unstable();
        assert_eq!(ids, (1..=20).collect::<Vec<u64>>());
        assert_eq!(env.memory_files().len(), 20);
        client.cancel().await.unwrap();
    }

    /// The context resource, through the stateless 2026-07-28 era (`server/discover`).
    #[tokio::test(flavor = "current_thread")]
    async fn stateless_client_reads_the_context_and_uses_the_tools() {
        let env = env();
        let client = connect(&env, stateless()).await;
        assert_eq!(client.peer_info().expect("server info").protocol_version, ProtocolVersion::V_2026_07_28);

        // No context files: the resource is there, and empty.
        let resources = client.list_all_resources().await.unwrap();
        assert_eq!(resources.len(), 1);
        assert_eq!((resources[0].uri.as_str(), resources[0].size), ("kb://context", Some(0)));

        write_contexts(&env);
        settle().await;
        let resources = client.list_all_resources().await.unwrap();
        assert_eq!(resources[0].mime_type.as_deref(), Some("text/markdown"));
        let read = client.read_resource(ReadResourceRequestParams::new("kb://context")).await.unwrap();
        let [ResourceContents::TextResourceContents { uri, mime_type, text, .. }] = read.contents.as_slice() else {
            panic!("one text content expected: {read:?}");
        };
        assert_eq!((uri.as_str(), mime_type.as_deref()), ("kb://context", Some("text/markdown")));
        assert_eq!(
            text,
            "## Internal Knowledge\n\n### Global Context\n\nAlways answer in English.\n\n### Project Context\n\n# kb\n\nRust 2024; run `.ci/run` before pushing. Ünïcode ✓"
        );
        assert_eq!(resources[0].size, Some(text.len() as u64), "size is in UTF-8 bytes");
        assert_eq!(format!("{text}\n"), env.kb(&["context"]).ok().stdout, "the resource is `kb context`");

        // Copilot records join the block as `### Repository Memories`; the size follows. (The
        // cited file exists: a record citing a missing one is stale and left out.)
        env.write(".ci/run", "#!/bin/sh\ncargo test\n");
        let args = json!({"subject": "build", "fact": "Run .ci/run before pushing", "citations": [".ci/run:1"], "reason": "CI runs it"});
        ok(call(&client, "store_memory", args).await);
        let read = client.read_resource(ReadResourceRequestParams::new("kb://context")).await.unwrap();
        let [ResourceContents::TextResourceContents { text, .. }] = read.contents.as_slice() else {
            panic!("{read:?}")
        };
        assert!(text.ends_with("\n\n### Repository Memories\n\nbuild: Run .ci/run before pushing"), "{text}");
        assert_eq!(format!("{text}\n"), env.kb(&["context"]).ok().stdout);
        let resources = client.list_all_resources().await.unwrap();
        assert_eq!(resources[0].size, Some(text.len() as u64));
        let err = client.read_resource(ReadResourceRequestParams::new("kb://other")).await.unwrap_err();
        assert!(err.to_string().contains("kb://other"), "{err}");

        let (_, json) =
            ok(call(&client, "save_memory", json!({"content": "We always squash-merge", "tags": ["pattern", "git"]}))
                .await);
        assert_eq!(json["action"], "saved");
        let (text, _) = ok(call(&client, "recall_memory", json!({"query": "squash"})).await);
        assert!(text.starts_with("Found 1 memory matching 'squash':"), "{text}");
        assert_eq!(env.memory_files(), ["001-we-always-squash-merge.md"]);
        client.cancel().await.unwrap();
    }

    /// A fake GitHub token the secret filter's `github-pat` rule matches.
    fn github_pat() -> String {
        format!("ghp_{}", "A1b2C3d4E5f6".repeat(3))
    }

    /// Returns `json` without its `"redacted"` key: the writing tools add it over MCP where the
    /// CLI's JSON has none (decisions, sessions, votes).
    fn without_redacted(json: &Value) -> Value {
        let mut json = json.clone();
        json.as_object_mut().expect("a JSON object").remove("redacted");
        json
    }

    /// Asserts that a write's result is the CLI's text and JSON, the `"redacted":[]` the tool
    /// adds aside.
    fn assert_write_parity(result: CallToolResult, env: &TestEnv, cli: CliRuns<'_>) {
        let ((cli, cli_env), (cli_json, json_env)) = cli;
        let (text, json) = ok(result);
        assert_eq!(json["redacted"], json!([]), "{json}");
        assert_eq!(norm(&format!("{text}\n"), env), norm(&cli.ok().stdout, cli_env), "text differs from the CLI");
        let cli_json = cli_json.ok().json();
        assert_eq!(norm_json(&without_redacted(&json), env), norm_json(&cli_json, json_env), "JSON differs");
    }

    /// get_context answers what `kb --json context` answers, for an agent and its files, and
    /// with a budget; an accepted decision comes in, a proposed one does not.
    #[tokio::test(flavor = "current_thread")]
    async fn get_context_is_kb_context_for_an_agent() {
        let env = env();
        env.write(
            ".co-cli/knowledge/context.md",
            "---\nversion: 1\nupdated: 2026-01-01T00:00:00+00:00\n---\n\nProject facts.\n",
        );
        env.write(".github/instructions/api.instructions.md", "---\napplyTo: 'src/api/**'\n---\n\nValidate bodies.\n");
        env.kb(&["save", "Reviews need a test per public function", "--type", "core_context", "--agent", "reviewer"])
            .ok();
        env.kb(&["decision", "add", "Only the api crate talks HTTP", "--type", "scope"]).ok();
        let client = connect(&env, legacy()).await;
        call(&client, "propose_decision", json!({"text": "Use Kafka for events", "type": "architectural"})).await;
        let args = json!({"agent": "reviewer", "for": ["src/api/routes.rs"]});
        let (text, json) = ok(call(&client, "get_context", args).await);
        let cli = env.kb(&["--json", "context", "--agent", "reviewer", "--for", "src/api/routes.rs"]).ok().json();
        assert_eq!(json, cli);
        assert_eq!(Some(text.as_str()), cli["text"].as_str());
        assert!(text.contains("- Only the api crate talks HTTP") && !text.contains("Kafka"), "{text}");
        assert!(text.contains("### api.instructions.md") && text.contains("- Reviews need a test"), "{text}");
        let (text, _) = ok(call(&client, "get_context", json!({"decisions_only": true})).await);
        assert!(text.starts_with("## Boundaries and Decisions") && !text.contains("Project facts"), "{text}");
        let (_, json) = ok(call(&client, "get_context", json!({"max_tokens": 100})).await);
        assert!(json["tokens"].as_u64().unwrap() <= 100 && json["max_tokens"] == 100, "{json}");
        let message = failed(call(&client, "get_context", json!({"max_tokens": 5})).await);
        assert_eq!(message, "max_tokens must be a whole number from 100 to 4294967295, not 5");
        let message = failed(call(&client, "get_context", json!({"agent": "a/b"})).await);
        assert!(message.contains("agent name"), "{message}");
        let message = failed(call(&client, "get_context", json!({"for": ["../x.rs"]})).await);
        assert!(message.contains("outside the root"), "{message}");
        client.cancel().await.unwrap();
    }

    /// A stale memory never reaches get_context: the running server checks the paths of what it
    /// would include at every call, so a rename of a cited file is seen though no knowledge file
    /// changed; the warning is in the result.
    #[tokio::test(flavor = "current_thread")]
    async fn get_context_leaves_out_a_memory_whose_cited_file_was_renamed() {
        let env = env();
        env.write("src/old.rs", "a\nb\nc\n");
        env.kb(&["save", "The parser entry point is `src/old.rs:3` (STALEMEM)", "--type", "core_context"]).ok();
        env.kb(&["save", "Deploys go out on Fridays (GOODMEM)", "--type", "core_context"]).ok();
        let client = connect(&env, legacy()).await;
        let (text, _) = ok(call(&client, "get_context", json!({})).await);
        assert!(text.contains("STALEMEM") && text.contains("GOODMEM"), "{text}");
        std::fs::rename(env.root().join("src/old.rs"), env.root().join("src/new.rs")).unwrap();
        let (text, json) = ok(call(&client, "get_context", json!({})).await);
        assert!(!text.contains("STALEMEM") && text.contains("GOODMEM"), "{text}");
        let warned = json["warnings"].as_array().unwrap().iter().filter_map(Value::as_str).any(|w| {
            w.contains("stale: memory 1 left out of the context block") && w.contains("`src/old.rs` does not exist")
        });
        assert!(warned, "{json}");
        assert_eq!(json, env.kb(&["--json", "context"]).ok().json(), "as kb context has it");
        std::fs::rename(env.root().join("src/new.rs"), env.root().join("src/old.rs")).unwrap();
        let (text, _) = ok(call(&client, "get_context", json!({})).await);
        assert!(text.contains("STALEMEM"), "{text}");
        client.cancel().await.unwrap();
    }

    /// propose_decision writes a proposed decision (never an active one) that `kb decision list`
    /// shows and `kb context` leaves out until a person accepts it; a near-duplicate of an open
    /// decision adds nothing and names it, as `kb decision add` does.
    #[tokio::test(flavor = "current_thread")]
    async fn propose_decision_writes_a_proposal_for_a_person_to_accept() {
        let env = env();
        let client = connect(&env, legacy()).await;
        let text = "We use PostgreSQL for every service; no MySQL";
        let (reply, json) = ok(call(&client, "propose_decision", json!({"text": text, "type": "architectural"})).await);
        let file = env.root().join(".co-cli/knowledge/decisions/001-we-use-postgresql-for-every-service-no-mysql.md");
        assert_eq!(
            json,
            json!({"action": "proposed", "decision_id": 1, "path": file.display().to_string(), "similarity": null,
                   "redacted": []})
        );
        assert_eq!(
            reply,
            "✓ Proposed decision 1: 001-we-use-postgresql-for-every-service-no-mysql.md\n\
             It applies only once a person accepts it with `kb decision accept 1` (or turns it down with \
             `kb decision reject 1`); until then it stays out of the compiled context."
        );
        let written = env.read(&file);
        assert!(written.contains("\nstatus: proposed\n") && written.contains("\ntype: architectural\n"), "{written}");
        assert!(written.ends_with(&format!("\n\n{text}\n")), "{written}");

        // `kb decision list` shows it as proposed; `kb context` does not compile it.
        let listed = env.kb(&["--json", "decision", "list"]).ok().json();
        assert_eq!((listed["count"].as_u64(), listed["decisions"][0]["status"].as_str()), (Some(1), Some("proposed")));
        let listed = env.kb(&["decision", "list"]).ok().stdout;
        assert!(listed.contains("[architectural] proposed : We use PostgreSQL"), "{listed}");
        let context = env.kb(&["context"]).ok().stdout;
        assert!(!context.contains("Boundaries and Decisions") && !context.contains("PostgreSQL"), "{context}");

        // A near-duplicate, of any type: nothing added, the match named, as `kb decision add` says it.
        let dup = "We use PostgreSQL for every service, no MySQL";
        let result = call(&client, "propose_decision", json!({"text": dup, "type": "technical"})).await;
        let (reply, json) = ok(result.clone());
        assert_eq!((json["action"].as_str(), json["decision_id"].as_u64()), (Some("exists"), Some(1)), "{json}");
        assert!(json["similarity"].as_f64().unwrap() >= 85.0, "{json}");
        assert!(reply.starts_with("Decision 1 already says this (similarity "), "{reply}");
        let cli = ["decision", "add", dup, "--type", "technical"];
        assert_write_parity(result, &env, cli_write(&env, &env, &cli));
        assert_eq!(std::fs::read_dir(file.parent().unwrap()).unwrap().count(), 1);

        // A person accepts it; a new proposal after that is proposed again, with the next id.
        env.kb(&["decision", "accept", "1"]).ok();
        settle().await;
        let (_, json) =
            ok(call(&client, "propose_decision", json!({"text": "Releases ship from main only", "type": "process"}))
                .await);
        assert_eq!((json["action"].as_str(), json["decision_id"].as_u64()), (Some("proposed"), Some(2)));
        let shown = env.kb(&["--json", "decision", "show", "2"]).ok().json();
        assert_eq!(shown["status"], "proposed");

        // Bad input: tool errors, the CLI's message where the CLI has one.
        let message = failed(call(&client, "propose_decision", json!({"text": "   ", "type": "scope"})).await);
        let cli = env.kb(&["decision", "add", "   ", "--type", "scope"]).err();
        assert_eq!(format!("error: {message}\n"), cli.stderr);
        let message = failed(call(&client, "propose_decision", json!({"text": "x", "type": "strategic"})).await);
        assert_eq!(message, "type must be architectural, scope, process or technical, not \"strategic\"");
        let message = failed(call(&client, "propose_decision", json!({"text": "x"})).await);
        assert_eq!(message, "type is required: architectural, scope, process or technical");
        client.cancel().await.unwrap();
    }

    /// update_session replaces or appends to the open session's summary, as `kb session update
    /// [--append]` does; with no session open it says a person starts one.
    #[tokio::test(flavor = "current_thread")]
    async fn update_session_replaces_or_appends_and_needs_an_open_session() {
        let env = env();
        let (twin, twin_json) = (self::env(), self::env());
        let client = connect(&env, legacy()).await;
        let message = failed(call(&client, "update_session", json!({"summary": "Parser rewritten"})).await);
        assert_eq!(
            message,
            "no open session: sessions are started by a person, with `kb session start FOCUS`; ask the user to start \
             one if the work needs a running summary"
        );
        assert!(!env.root().join(".co-cli/knowledge/session.md").exists());

        for e in [&env, &twin, &twin_json] {
            e.kb(&["session", "start", "Fix the parser"]).ok();
        }
        let result = call(&client, "update_session", json!({"summary": "Parser rewritten", "append": null})).await;
        assert_write_parity(result, &env, cli_write(&twin, &twin_json, &["session", "update", "Parser rewritten"]));
        let result = call(&client, "update_session", json!({"summary": "Tests pass", "append": true})).await;
        let cli = ["session", "update", "Tests pass", "--append"];
        assert_write_parity(result, &env, cli_write(&twin, &twin_json, &cli));
        let shown = env.kb(&["--json", "session", "show"]).ok().json();
        assert_eq!(shown["summary"], "Parser rewritten\n\nTests pass");
        let (reply, json) =
            ok(call(&client, "update_session", json!({"summary": "Starting over", "append": false})).await);
        assert!(reply.starts_with("✓ Updated the summary of session: Fix the parser\n"), "{reply}");
        assert_eq!(json["summary"], "Starting over");
        assert!(env.read(&env.root().join(".co-cli/knowledge/session.md")).ends_with("\n\nStarting over\n"));

        let message = failed(call(&client, "update_session", json!({"summary": " \n "})).await);
        assert_eq!(format!("error: {message}\n"), env.kb(&["session", "update", " \n "]).err().stderr);
        env.kb(&["session", "end"]).ok();
        settle().await;
        let message = failed(call(&client, "update_session", json!({"summary": "x", "append": true})).await);
        assert!(message.starts_with("no open session: sessions are started by a person"), "{message}");
        client.cancel().await.unwrap();
    }

    /// vote_memory counts a vote on a record named by its id (as `kb vote`) or by its exact fact
    /// (as Copilot's tool); a fact that names no record, or several, is a clear error.
    #[tokio::test(flavor = "current_thread")]
    async fn vote_memory_by_id_or_exact_fact() {
        let env = env();
        let (twin, twin_json) = (self::env(), self::env());
        let client = connect(&env, legacy()).await;
        let fact = "Snapshot tests live next to the module as *_snap.rs";
        let store =
            ["--json", "save", "--store", "copilot", "--subject", "testing", "--reason", "Keeps diffs local", fact];
        let ids: Vec<Value> = [&env, &twin, &twin_json].map(|e| e.kb(&store).ok().json()["memory_id"].clone()).into();
        assert!(ids[0] == ids[1] && ids[1] == ids[2], "{ids:?}");
        let id = ids[0].as_str().unwrap().to_string();

        // By id: the CLI's text and JSON.
        let result = call(&client, "vote_memory", json!({"id": id, "direction": "up", "reason": "Still true"})).await;
        assert_write_parity(result, &env, cli_write(&twin, &twin_json, &["vote", &id, "up", "--reason", "Still true"]));
        // By exact fact, in Copilot's spelling of the direction.
        let args = json!({"fact": fact, "direction": "downvote", "reason": "Moved to tests/snapshots/"});
        let result = call(&client, "vote_memory", args).await;
        let vote = ["vote", &id, "down", "--reason", "Moved to tests/snapshots/"];
        assert_write_parity(result, &env, cli_write(&twin, &twin_json, &vote));
        let record: Value =
            serde_json::from_str(env.read(&env.root().join(".github/copilot-memories.jsonl")).trim_end()).unwrap();
        assert_eq!(record["votes"], json!({"up": 1, "down": 1}));
        assert_eq!(record["last_vote"]["reason"], "Moved to tests/snapshots/");

        // A fact matches exactly or not at all; two records with the fact are ambiguous.
        for wrong in ["snapshot tests live next to the module as *_snap.rs", "Snapshot tests live next to the module"] {
            let args = json!({"fact": wrong, "direction": "up", "reason": "r"});
            let message = failed(call(&client, "vote_memory", args).await);
            assert_eq!(
                message,
                format!(
                    "no Copilot record has the fact \"{wrong}\": the fact must match a record's fact exactly; give the \
                     record's id instead"
                )
            );
        }
        let other =
            env.kb(&["--json", "save", "--store", "copilot", "--subject", "layout", "--reason", "r", fact]).ok().json()
                ["memory_id"]
                .as_str()
                .unwrap()
                .to_string();
        let message =
            failed(call(&client, "vote_memory", json!({"fact": fact, "direction": "up", "reason": "r"})).await);
        assert_eq!(
            message,
            format!("2 Copilot records have the fact \"{fact}\" ({id}, {other}): give the id of the one you mean")
        );
        // The id still works; no id and no fact, both, an unknown id, a memory's id, a bad direction.
        let (_, json) = ok(call(&client, "vote_memory", json!({"id": other, "direction": "up", "reason": "r"})).await);
        assert_eq!(json["votes"], json!({"up": 1, "down": 0}));
        let message = failed(call(&client, "vote_memory", json!({"direction": "up", "reason": "r"})).await);
        assert!(message.starts_with("name the record to vote on"), "{message}");
        let args = json!({"id": id, "fact": fact, "direction": "up", "reason": "r"});
        assert!(failed(call(&client, "vote_memory", args).await).contains("not both"));
        let result =
            call(&client, "vote_memory", json!({"id": "mem-00000000", "direction": "up", "reason": "r"})).await;
        assert_parity(result, &env, cli(&env, &["vote", "mem-00000000", "up", "--reason", "r"]));
        let message =
            failed(call(&client, "vote_memory", json!({"id": id, "direction": "sideways", "reason": "r"})).await);
        assert_eq!(message, "direction must be up or down, not \"sideways\"");
        client.cancel().await.unwrap();
    }

    /// context_board works as Copilot CLI's context board tool, whose design kb follows (the test's
    /// name calls that design "the seed"): get_board lists metadata, get takes src and name and
    /// counts the read, add writes an agent item, prune deletes agent items only; the first board
    /// request of a process counts one more view of every item.
    #[tokio::test(flavor = "current_thread")]
    async fn an_agents_board_add_from_23_items_on_says_to_prune() {
        let env = env();
        std::fs::write(env.root().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        for i in 0..22 {
            env.kb(&["board", "add", &format!("item-{i}"), "--description", "d", "c"]).ok();
        }
        let client = connect(&env, legacy()).await;
        let args = json!({"command": "add", "name": "one-more", "description": "d", "context": "c"});
        let (text, json) = ok(call(&client, "context_board", args).await);
        assert!(text.contains("Warning: the board holds 23 of 25 items: prune it to 18 or fewer"), "{text}");
        assert_eq!(json["warning"], "the board holds 23 of 25 items: prune it to 18 or fewer");
        client.cancel().await.unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn context_board_follows_the_seed() {
        let env = env();
        std::fs::write(env.root().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        env.kb(&["board", "add", "release-checklist", "--description", "Steps to release", "1. bump"]).ok();
        let client = connect(&env, legacy()).await;
        let (text, json) = ok(call(&client, "context_board", json!({"command": "get_board"})).await);
        assert!(
            text.starts_with("Context board of branch main (1/25 items):\n<dynamic_context_board>\n")
                && text.contains("| user | release-checklist | Steps to release | 0 | 1 |"),
            "{text}"
        );
        assert_eq!(json["count"], 1);
        let (text, _) =
            ok(call(&client, "context_board", json!({"command": "get", "src": "user", "name": "release-checklist"}))
                .await);
        assert_eq!(text, "1. bump");
        let args =
            json!({"command": "add", "name": "build-recipe", "description": "How CI builds", "context": "make ci"});
        let (_, json) = ok(call(&client, "context_board", args).await);
        assert_eq!((json["action"].as_str(), json["src"].as_str()), (Some("added"), Some("agent")));
        let message =
            failed(call(&client, "context_board", json!({"command": "prune", "name": "release-checklist"})).await);
        assert!(message.contains("written by a person"), "{message}");
        ok(call(&client, "context_board", json!({"command": "prune", "name": "build-recipe"})).await);
        let (_, json) = ok(call(&client, "context_board", json!({"command": "get_board"})).await);
        assert_eq!(json["items"][0]["read_count"], 1);
        assert_eq!(json["items"][0]["count"], 1, "one view per process");
        let message = failed(call(&client, "context_board", json!({"command": "add", "name": "x"})).await);
        assert_eq!(message, "description is required for command add");
        let message = failed(call(&client, "context_board", json!({})).await);
        assert_eq!(message, "command is required: get_board, get, add or prune");
        let message = failed(call(&client, "context_board", json!({"command": "get", "name": "x", "src": "me"})).await);
        assert_eq!(message, "src must be agent or user, not \"me\"");
        client.cancel().await.unwrap();
    }

    /// get_memory answers what `kb show ID` answers, for a memory (its id a number or a string)
    /// and a record, and is an access as `kb show` is; `decision:N` answers what `kb decision show
    /// N` answers, and is no access. Failures carry the CLI's message.
    #[tokio::test(flavor = "current_thread")]
    async fn get_memory_reads_a_memory_a_record_or_a_decision_in_full() {
        let env = env();
        let long = format!("{}and more", "The release checklist lives in docs/release.md, ".repeat(3));
        let content = format!("{long}\nStep one: bump the version.");
        env.memory(4, &content, &days_ago(1.0), &["pattern", "release"]);
        env.write(
            ".github/copilot-memories.jsonl",
            "{\"id\":\"mem-1\",\"subject\":\"ci\",\"fact\":\"nextest runs every test\",\"citations\":[\".config/nextest.toml:1\"],\"reason\":\"r\"}\n",
        );
        env.kb(&["decision", "add", "Only the api crate talks HTTP", "--type", "scope"]).ok();
        let client = connect(&env, legacy()).await;

        let (text, json) = ok(unverified(call(&client, "get_memory", json!({"id": 4})).await));
        assert!(text.ends_with(&format!("\n\n{content}")), "the whole content: {text}");
        assert_eq!(json["content"], content.as_str());
        assert_eq!(access_lines(&env), [json!({"id": 4, "store": "md", "at": NOW})], "an access, as kb show is");
        for (id, cli_id) in [(json!(4), "4"), (json!(" 4 "), "4"), (json!("mem-1"), "mem-1")] {
            let result = unverified(call(&client, "get_memory", json!({"id": id})).await);
            assert_parity(result, &env, cli(&env, &["show", cli_id]));
        }
        let accesses = access_lines(&env).len();
        let result = unverified(call(&client, "get_memory", json!({"id": "decision:1"})).await);
        assert_parity(result, &env, cli(&env, &["decision", "show", "1"]));
        let (text, json) = ok(unverified(call(&client, "get_memory", json!({"id": "decision:1"})).await));
        assert!(text.starts_with("Decision 1 (") && text.ends_with("\n\nOnly the api crate talks HTTP"), "{text}");
        assert_eq!((json["status"].as_str(), json["type"].as_str()), (Some("active"), Some("scope")), "{json}");
        assert_eq!(access_lines(&env).len(), accesses, "a decision is not an access");

        // Not found, as the CLI says it; a bad id is named.
        for (id, cli_args) in [
            (json!(9), vec!["show", "9"]),
            (json!("mem-nope"), vec!["show", "mem-nope"]),
            (json!("decision:9"), vec!["decision", "show", "9"]),
        ] {
            let result = call(&client, "get_memory", json!({"id": id})).await;
            assert_parity(result, &env, cli(&env, &cli_args));
        }
        let message = failed(call(&client, "get_memory", json!({"id": 1.5})).await);
        assert_eq!(
            message,
            "id must be a memory's number (e.g. 7), a record's id (e.g. \"mem-1a2b3c4d\") or \"decision:N\", not 1.5"
        );
        let message = failed(call(&client, "get_memory", json!({})).await);
        assert!(message.starts_with("id is required: a memory's number"), "{message}");
        client.cancel().await.unwrap();
    }

    /// list_memories filters by store, type and agent as `kb list` does, gives at most `limit`
    /// items (default 50; a number or a string) and always the total, and never cuts a line.
    #[tokio::test(flavor = "current_thread")]
    async fn list_memories_filters_limits_and_gives_whole_lines() {
        let env = env();
        let long = format!("Release steps: {}done", "bump the version, tag it, push the tag, ".repeat(3));
        env.memory(1, &format!("{long}\nThen announce it."), &days_ago(3.0), &["pattern"]);
        env.memory(3, "Deploys go through staging", &days_ago(1.0), &["context"]);
        env.kb(&["save", "Reviewers check the changelog", "--type", "core_context", "--agent", "reviewer"]).ok();
        env.write(
            ".github/copilot-memories.jsonl",
            "{\"id\":\"mem-1\",\"subject\":\"ci\",\"fact\":\"nextest runs every test\"}\n\
             {\"id\":\"mem-2\",\"subject\":\"build\",\"fact\":\"make ci builds everything\"}\n",
        );
        let client = connect(&env, legacy()).await;

        // Everything, lines whole: kb list cuts the long one, list_memories does not.
        let (text, json) = ok(call(&client, "list_memories", json!({})).await);
        assert_eq!((json["count"].as_u64(), json["total"].as_u64()), (Some(5), Some(5)));
        assert!(text.contains(&format!("[pattern] : {long}\n")), "{text}");
        assert!(!text.contains("...") && !text.contains("Showing"), "{text}");
        assert!(env.kb(&["list"]).ok().stdout.contains("..."), "kb list cuts it");
        assert_eq!(json["memories"][0]["summary"], long.as_str());
        assert_eq!(json["memories"][0]["content"], format!("{long}\nThen announce it."));
        assert_eq!(json["memories"][3]["content"], "nextest runs every test", "a record's content is its fact");

        // A limit, as a number or a string: the memories first, the total given, the rest named.
        let (text, json) = ok(call(&client, "list_memories", json!({"limit": 2})).await);
        assert_eq!((json["count"].as_u64(), json["total"].as_u64()), (Some(2), Some(5)));
        assert_eq!(json["counts"], json!({"md": 2, "copilot": 0}));
        let ids: Vec<&Value> = json["memories"].as_array().unwrap().iter().map(|m| &m["id"]).collect();
        assert_eq!(ids, [&json!(1), &json!(3)]);
        assert!(text.starts_with("Total memories: 3/200\n\n**001** "), "{text}");
        assert!(text.contains("\n\nCopilot memories: 2\n"), "{text}");
        assert!(
            text.ends_with("\n\nShowing 2 of 5 (limit 2): a higher limit shows more, recall_memory searches them all."),
            "{text}"
        );
        let (text, json) = ok(call(&client, "list_memories", json!({"limit": "4"})).await);
        assert_eq!(json["counts"], json!({"md": 3, "copilot": 1}));
        assert!(text.contains("**mem-1** [ci] : nextest runs every test") && !text.contains("mem-2"), "{text}");

        // The filters are kb list's.
        let result = call(&client, "list_memories", json!({"store": "copilot"})).await;
        assert_list_parity(result, &env, &["--store", "copilot"]);
        let (_, json) = ok(call(&client, "list_memories", json!({"store": ["md"], "limit": null})).await);
        assert_eq!((json["count"].as_u64(), json["total"].as_u64()), (Some(3), Some(3)));
        assert_eq!(json["counts"], json!({"md": 3, "copilot": 0}));
        let result = call(&client, "list_memories", json!({"type": "core_context"})).await;
        assert_list_parity(result, &env, &["--type", "core_context"]);
        let result = call(&client, "list_memories", json!({"agent": "reviewer", "store": "md"})).await;
        assert_list_parity(result, &env, &["--agent", "reviewer"]);

        // Bad arguments are named; a misspelled limit is not ignored.
        for (args, want) in [
            (
                json!({"type": "pattern", "store": "copilot"}),
                "type and agent filter the markdown memories, and Copilot records have neither: leave out store, \
                 or give store md",
            ),
            (json!({"limit": 0}), "limit must be a whole number from 1 to 1000, not 0"),
            (
                json!({"limt": 2}),
                "list_memories has no argument \"limt\"; its arguments are store, type, agent and limit",
            ),
            (json!({"type": "lesson"}), "unknown type 'lesson': expected core_context, learning, pattern or update"),
            (json!({"agent": "a/b"}), "invalid agent name 'a/b': an agent name cannot contain '/' or '\\'"),
        ] {
            assert_eq!(failed(call(&client, "list_memories", args.clone()).await), want, "{args}");
        }
        client.cancel().await.unwrap();
    }

    /// recall_memory narrows to a store as `kb recall --store` does (one store, or a list), and
    /// takes max_results as a number or a string.
    #[tokio::test(flavor = "current_thread")]
    async fn recall_memory_narrows_to_a_store_and_takes_numbers_as_strings() {
        let env = env();
        env.memory(1, "Use nextest in CI", &days_ago(2.0), &[]);
        env.memory(2, "Nextest profiles live in .config/nextest.toml", &days_ago(1.0), &[]);
        env.write(
            ".github/copilot-memories.jsonl",
            "{\"id\":\"mem-1\",\"subject\":\"ci\",\"fact\":\"nextest runs every test\"}\n",
        );
        env.write(
            ".co-cli/knowledge/decisions/001-ci.md",
            "---\ncreated: '2026-11-01T10:00:00+00:00'\nid: 1\nstatus: active\ntags: []\ntype: process\n---\n\nCI runs nextest, never cargo test.\n",
        );
        let client = connect(&env, legacy()).await;
        // Ranked as the CLI ranks, decisions included.
        let (_, json) =
            ok(call(&client, "recall_memory", json!({"query": "what runs in CI", "store": "decision"})).await);
        assert_eq!(
            (json["results"][0]["store"].as_str(), json["results"][0]["id"].as_u64()),
            (Some("decision"), Some(1))
        );
        assert!(json["results"][0]["score"].as_f64().unwrap() > 0.0);
        for (args, cli_args) in [
            (json!({"query": "nextest", "store": "decision"}), vec!["recall", "nextest", "--store", "decision"]),
            // The top two: below them a record and a decision tie, and heat (which each recall
            // adds to the record it shows) would order them differently in the two runs.
            (json!({"query": "nextest", "max_results": 2}), vec!["recall", "nextest", "-n", "2"]),
            (json!({"query": "nextest", "store": "copilot"}), vec!["recall", "nextest", "--store", "copilot"]),
            (
                json!({"query": "nextest", "store": "md", "max_results": "1"}),
                vec!["recall", "nextest", "--store", "md", "-n", "1"],
            ),
            (
                json!({"query": "nextest", "store": ["md", "copilot"]}),
                vec!["recall", "nextest", "--store", "md", "--store", "copilot"],
            ),
            (json!({"query": "nextest", "store": null, "max_results": 2.0}), vec!["recall", "nextest", "-n", "2"]),
        ] {
            let result = call(&client, "recall_memory", args).await;
            let cli_args: Vec<&str> = cli_args.into_iter().chain(["--verify"]).collect();
            assert_parity(result, &env, cli(&env, &cli_args));
        }
        let message = failed(call(&client, "recall_memory", json!({"query": "nextest", "store": "decisions!"})).await);
        assert_eq!(
            message,
            "store must be md, copilot, decision, session, shared or a shared source's name, or a list of them, not \"decisions!\""
        );
        let message = failed(call(&client, "recall_memory", json!({"query": "nextest", "store": "org"})).await);
        assert_eq!(message, "store org: no shared source has that name (the shared sources: none)");
        let message = failed(call(&client, "recall_memory", json!({"query": "nextest", "max_results": 101})).await);
        assert_eq!(message, "max_results must be a whole number from 1 to 100, not 101");
        client.cancel().await.unwrap();
    }

    /// Every argument error is a tool error in a plain sentence that names the argument and what
    /// it allows, never serde's wording; a number given as a string is accepted wherever a number
    /// is, and an argument a tool does not take is named, never ignored.
    #[tokio::test(flavor = "current_thread")]
    async fn argument_errors_are_plain_sentences_and_numbers_may_be_strings() {
        let env = env();
        let client = connect(&env, legacy()).await;
        for (tool, args, want) in [
            (
                "recall_memory",
                json!({"query": "q", "max_results": "3x"}),
                "max_results must be a whole number from 1 to 100, not \"3x\"",
            ),
            ("recall_memory", json!({"query": 3}), "query must be a string, not 3"),
            ("recall_memory", json!({"max_results": 3}), "query is required: a string"),
            (
                "recall_memory",
                json!({"query": "q", "limit": 3}),
                "recall_memory has no argument \"limit\"; its arguments are query, max_results and store",
            ),
            ("list_memories", json!({"limit": 1001}), "limit must be a whole number from 1 to 1000, not 1001"),
            (
                "get_context",
                json!({"max_tokens": "lots"}),
                "max_tokens must be a whole number from 100 to 4294967295, not \"lots\"",
            ),
            ("get_context", json!({"decisions_only": "yes"}), "decisions_only must be true or false, not \"yes\""),
            (
                "get_context",
                json!({"for": [1, 2]}),
                "for must be a list of strings or one comma-separated string, not [1,2]",
            ),
            (
                "save_memory",
                json!({"content": "c", "tags": 5}),
                "tags must be a list of strings or one comma-separated string, not 5",
            ),
            ("save_memory", json!({"content": "c", "importance": 3}), "importance must be a string, not 3"),
            (
                "store_memory",
                json!({"subject": "s", "fact": "f", "reason": "r", "categroy": "general"}),
                "store_memory has no argument \"categroy\"; its arguments are subject, fact, citations, reason and category",
            ),
            (
                "vote_memory",
                json!({"id": "mem-1", "direction": "wish", "reason": "r"}),
                "direction must be up or down, not \"wish\"",
            ),
            ("update_session", json!({"summary": "s", "append": 1}), "append must be true or false, not 1"),
            ("propose_decision", json!({"text": ["a"], "type": "scope"}), "text must be a string, not [\"a\"]"),
            ("context_board", json!({"command": "list"}), "command must be get_board, get, add or prune, not \"list\""),
            (
                "forget_memory",
                json!({"id": true}),
                "id must be a memory's number (e.g. 7) or a record's id (e.g. \"mem-1a2b3c4d\"), not true",
            ),
        ] {
            let message = failed(call(&client, tool, args.clone()).await);
            assert_eq!(message, want, "{tool} {args}");
            for serde in
                ["invalid type", "expected", "unknown variant", "missing field", "unknown field", "`", "deserialize"]
            {
                assert!(!message.contains(serde), "{tool}: {message}");
            }
        }
        // Numbers as strings.
        let (_, json) = ok(call(&client, "get_context", json!({"max_tokens": "150"})).await);
        assert_eq!(json["max_tokens"], 150);
        ok(call(&client, "save_memory", json!({"content": "We always rebase"})).await);
        let (_, json) = ok(call(&client, "recall_memory", json!({"query": "rebase", "max_results": "3"})).await);
        assert_eq!(json["count"], 1);
        let (_, json) = ok(call(&client, "list_memories", json!({"limit": "1"})).await);
        assert_eq!(json["count"], 1);
        let (_, json) = ok(call(&client, "get_memory", json!({"id": "1"})).await);
        assert_eq!(json["id"], 1);
        client.cancel().await.unwrap();
    }

    /// vote_memory on a markdown memory says votes are for Copilot records and how to correct a
    /// memory over MCP, not which command to run (an agent cannot run one); the CLI keeps its own.
    #[tokio::test(flavor = "current_thread")]
    async fn vote_memory_on_a_markdown_memory_points_to_the_tools() {
        let env = env();
        env.memory(3, "A markdown memory", &days_ago(1.0), &[]);
        let client = connect(&env, legacy()).await;
        for id in [json!(3), json!("3")] {
            let message =
                failed(call(&client, "vote_memory", json!({"id": id, "direction": "down", "reason": "r"})).await);
            assert_eq!(
                message,
                "memory 3 is a markdown memory: votes apply to Copilot records only (ids such as mem-1a2b3c4d). To \
                 correct a markdown memory, save the right fact with save_memory and delete the wrong one with \
                 forget_memory"
            );
            assert!(!message.contains("kb ") && !message.contains('`'), "{message}");
        }
        client.cancel().await.unwrap();
        let cli = env.kb(&["vote", "3", "down", "--reason", "r"]).err();
        assert_eq!(
            cli.stderr,
            "error: memory 3 is a markdown memory; votes apply to Copilot records (see `kb list --store copilot`)\n"
        );
    }

    /// context_board `get` needs src only when an agent item and a user item share the name (then
    /// the error lists both); the results name the branch, whose board it is.
    #[tokio::test(flavor = "current_thread")]
    async fn context_board_get_needs_src_only_for_a_shared_name_and_results_name_the_branch() {
        let env = env();
        std::fs::write(env.root().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        env.kb(&["board", "add", "release-checklist", "--description", "Steps to release", "1. bump"]).ok();
        let client = connect(&env, legacy()).await;
        let get = |src: Option<&str>| json!({"command": "get", "name": "release-checklist", "src": src});

        let (text, json) = ok(call(&client, "context_board", get(None)).await);
        assert_eq!(
            (text.as_str(), json["src"].as_str(), json["branch"].as_str()),
            ("1. bump", Some("user"), Some("main"))
        );
        let args =
            json!({"command": "add", "name": "release-checklist", "description": "My steps", "context": "2. tag"});
        let (text, json) = ok(call(&client, "context_board", args).await);
        assert_eq!(text, "✓ Added agent item release-checklist (2/25 items) on branch main");
        assert_eq!((json["action"].as_str(), json["branch"].as_str()), (Some("added"), Some("main")));
        let message = failed(call(&client, "context_board", get(None)).await);
        assert_eq!(
            message,
            "2 board items on branch main are named release-checklist: give src user or src agent to say which"
        );
        let (text, _) = ok(call(&client, "context_board", get(Some("agent"))).await);
        assert_eq!(text, "2. tag");
        let message = failed(call(&client, "context_board", json!({"command": "get", "name": "nope"})).await);
        assert_eq!(message, "board item nope not found on branch main");
        let (text, json) =
            ok(call(&client, "context_board", json!({"command": "prune", "name": "release-checklist"})).await);
        assert_eq!(text, "✓ Removed agent item release-checklist on branch main");
        assert_eq!((json["src"].as_str(), json["branch"].as_str()), (Some("agent"), Some("main")));
        let (text, _) = ok(call(&client, "context_board", get(None)).await);
        assert_eq!(text, "1. bump");

        // Another branch, another board.
        std::fs::write(env.root().join(".git/HEAD"), "ref: refs/heads/feature\n").unwrap();
        let (text, json) = ok(call(&client, "context_board", json!({"command": "get_board"})).await);
        assert_eq!(
            (text.as_str(), json["branch"].as_str()),
            ("The context board of branch feature is empty.", Some("feature"))
        );
        let message = failed(call(&client, "context_board", get(None)).await);
        assert_eq!(message, "board item release-checklist not found on branch feature");
        client.cancel().await.unwrap();
    }

    /// Over MCP a secret is redacted, never refused (an agent cannot pass --redact): each writing
    /// tool stores `[REDACTED:<rule>]`, and its result names the rule in the text and the JSON.
    #[tokio::test(flavor = "current_thread")]
    async fn secrets_are_stored_redacted_and_the_result_names_the_rule() {
        let env = env();
        let (twin, twin_json) = (self::env(), self::env());
        let client = connect(&env, legacy()).await;
        let token = github_pat();
        let note = "Secret redacted (rule github-pat): kb keeps [REDACTED:github-pat] in place of the secret, never the \
                    secret itself.";
        let mut texts: Vec<String> = Vec::new();

        // save_memory: what `kb save --redact` stores and says, plus the note.
        let content = format!("The deploy token is {token}");
        let (reply, json) = ok(call(&client, "save_memory", json!({"content": content, "tags": ["context"]})).await);
        let ((cli, _), (cli_json, _)) = cli_write(&twin, &twin_json, &["save", "--redact", &content, "-t", "context"]);
        assert_eq!(norm(&reply, &env), format!("{}\n{note}", norm(cli.ok().stdout.trim_end(), &twin)));
        assert_eq!(norm_json(&json, &env), norm_json(&cli_json.ok().json(), &twin_json));
        assert_eq!(json["redacted"], json!(["github-pat"]));
        let file = env.read(std::path::Path::new(json["path"].as_str().unwrap()));
        assert!(file.contains("The deploy token is [REDACTED:github-pat]") && !file.contains(&token), "{file}");
        texts.push(reply);

        // store_memory: every field.
        let args = json!({"subject": "deploy", "fact": content, "citations": ["ci.yml:3"], "reason": format!("it is {token}")});
        let (reply, json) = ok(call(&client, "store_memory", args).await);
        assert_eq!(json["redacted"], json!(["github-pat"]));
        assert!(reply.ends_with(note), "{reply}");
        let record_id = json["memory_id"].clone();
        let jsonl = env.read(&env.root().join(".github/copilot-memories.jsonl"));
        assert!(jsonl.contains("[REDACTED:github-pat]") && !jsonl.contains(&token), "{jsonl}");
        texts.push(reply);

        // propose_decision.
        let args = json!({"text": format!("Deploys authenticate with {token}"), "type": "process"});
        let (reply, json) = ok(call(&client, "propose_decision", args).await);
        assert_eq!((json["action"].as_str(), &json["redacted"]), (Some("proposed"), &json!(["github-pat"])));
        assert!(reply.ends_with(note), "{reply}");
        let decision = env.read(std::path::Path::new(json["path"].as_str().unwrap()));
        assert!(decision.contains("Deploys authenticate with [REDACTED:github-pat]") && !decision.contains(&token));
        texts.push(reply);

        // update_session.
        env.kb(&["session", "start", "Rotate credentials"]).ok();
        settle().await;
        let (reply, json) = ok(call(&client, "update_session", json!({"summary": format!("Old token {token}")})).await);
        assert_eq!(
            (json["summary"].as_str(), &json["redacted"]),
            (Some("Old token [REDACTED:github-pat]"), &json!(["github-pat"]))
        );
        assert!(reply.ends_with(note), "{reply}");
        let session = env.read(&env.root().join(".co-cli/knowledge/session.md"));
        assert!(session.contains("Old token [REDACTED:github-pat]") && !session.contains(&token), "{session}");
        texts.push(reply);

        // vote_memory: the reason.
        let args = json!({"id": record_id, "direction": "down", "reason": format!("leaks {token}")});
        let (reply, json) = ok(call(&client, "vote_memory", args).await);
        assert_eq!(json["redacted"], json!(["github-pat"]));
        assert!(reply.ends_with(note), "{reply}");
        texts.push(reply);
        let jsonl = env.read(&env.root().join(".github/copilot-memories.jsonl"));
        assert!(jsonl.contains(r#""reason":"leaks [REDACTED:github-pat]""#), "{jsonl}");
        assert!(!jsonl.contains(&token), "{jsonl}");

        // No result, error or description tells the agent to use --redact.
        texts
            .push(failed(call(&client, "vote_memory", json!({"fact": token, "direction": "up", "reason": "r"})).await));
        for tool in client.list_all_tools().await.unwrap() {
            texts.push(tool.description.unwrap_or_default().to_string());
        }
        for text in &texts {
            assert!(!text.contains("--redact"), "{text}");
            assert!(!text.contains(&token), "the secret is never echoed back: {text}");
        }
        client.cancel().await.unwrap();
    }

    /// A raw stdio session: JSON-RPC lines in, JSON-RPC lines out.
    struct Raw {
        child: tokio::process::Child,
        stdin: tokio::process::ChildStdin,
        stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    }

    impl Raw {
        fn start(env: &TestEnv) -> Raw {
            let mut cmd = tokio::process::Command::from(env.command(&["mcp"]));
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
            let mut child = cmd.spawn().expect("spawn kb mcp");
            let stdin = child.stdin.take().unwrap();
            let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
            Raw { child, stdin, stdout }
        }

        async fn send_bytes(&mut self, bytes: &[u8]) {
            self.stdin.write_all(bytes).await.unwrap();
            self.stdin.write_all(b"\n").await.unwrap();
            self.stdin.flush().await.unwrap();
        }

        async fn send(&mut self, message: Value) {
            self.send_bytes(message.to_string().as_bytes()).await;
        }

        /// Returns the next message; every stdout line must be one JSON-RPC 2.0 message.
        async fn recv(&mut self) -> Value {
            let line = tokio::time::timeout(TIMEOUT, self.stdout.next_line())
                .await
                .expect("no answer in time")
                .unwrap()
                .expect("stdout closed");
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
            message
        }

        /// Sends a request and returns its response.
        async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
            self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
            let response = self.recv().await;
            assert_eq!(response["id"], id, "responses come in order here: {response}");
            response
        }

        /// Closes stdin and returns the exit code, the rest of stdout and all of stderr.
        async fn finish(mut self) -> (Option<i32>, String, String) {
            drop(self.stdin);
            let status = tokio::time::timeout(TIMEOUT, self.child.wait()).await.expect("kb mcp did not exit").unwrap();
            let mut rest = String::new();
            while let Ok(Some(line)) = self.stdout.next_line().await {
                rest.push_str(&line);
                rest.push('\n');
            }
            let mut stderr = String::new();
            self.child.stderr.take().unwrap().read_to_string(&mut stderr).await.unwrap();
            // The line saying the server is warm (tests/cli/mcp_warm.rs checks it) is not a problem.
            let stderr: String = stderr.split_inclusive('\n').filter(|l| !l.starts_with("kb mcp: warm in ")).collect();
            (status.code(), rest, stderr)
        }
    }

    fn meta() -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        })
    }

    /// Garbage on stdin never ends the session, and stdout carries only protocol messages even
    /// when a memory file is skipped (the warning goes to stderr).
    #[tokio::test(flavor = "current_thread")]
    async fn raw_malformed_input_and_missing_arguments_keep_the_server_alive() {
        let env = env();
        env.memory(1, "A valid memory", &days_ago(1.0), &[]);
        env.write(".co-cli/knowledge/memories/002-broken.md", "---\nid: [unclosed\n---\nbody\n");
        let mut raw = Raw::start(&env);
        let init = raw
            .request(1, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}))
            .await;
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
        assert_eq!(init["result"]["serverInfo"]["name"], "kb");
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;

        // Not JSON, not UTF-8: a JSON-RPC parse error each (id null); an empty line: ignored.
        raw.send_bytes(b"{this is not json").await;
        raw.send_bytes(b"\xff\xfe\x00garbage").await;
        raw.send_bytes(b"").await;
        for _ in 0..2 {
            let error = raw.recv().await;
            assert_eq!((error["error"]["code"].as_i64(), error["id"].is_null()), (Some(-32700), true), "{error}");
        }
        // JSON that is no JSON-RPC message: an Invalid Request error.
        raw.send(json!({"hello": "world"})).await;
        let error = raw.recv().await;
        assert_eq!(error["error"]["code"], -32600, "{error}");

        // A missing argument: a tool error, not a crash.
        let response = raw.request(2, "tools/call", json!({"name": "save_memory", "arguments": {}})).await;
        assert_eq!(response["result"]["isError"], true, "{response}");
        assert_eq!(response["result"]["content"][0]["text"], "content is required: a string", "{response}");
        // No arguments at all, and an unknown tool.
        let response = raw.request(3, "tools/call", json!({"name": "recall_memory"})).await;
        assert_eq!(response["result"]["isError"], true, "{response}");
        assert_eq!(response["result"]["content"][0]["text"], "query is required: a string", "{response}");
        let response = raw.request(4, "tools/call", json!({"name": "no_such_tool", "arguments": {}})).await;
        assert!(response["error"]["code"].is_i64(), "{response}");

        // Still serving; the invalid file is skipped and reported on stderr only.
        let response = raw.request(5, "tools/call", json!({"name": "list_memories", "arguments": {}})).await;
        assert_eq!(response["result"]["structuredContent"]["count"], 1, "{response}");
        let (code, rest, stderr) = raw.finish().await;
        assert_eq!(code, Some(0), "{stderr}");
        assert_eq!(rest, "", "nothing after the last response");
        assert!(stderr.contains("warning: skipped .co-cli/knowledge/memories/002-broken.md"), "{stderr}");
        assert_eq!(stderr.matches("002-broken.md").count(), 1, "one warning per call: {stderr}");
    }

    /// The 2026-07-28 era at the wire level: `server/discover`, then self-contained requests.
    #[tokio::test(flavor = "current_thread")]
    async fn raw_discover_and_stateless_requests() {
        let env = env();
        write_contexts(&env);
        let mut raw = Raw::start(&env);
        let discover = raw.request(1, "server/discover", json!({"_meta": meta()})).await;
        let result = &discover["result"];
        assert_eq!(result["resultType"], "complete", "{discover}");
        let versions: Vec<&str> =
            result["supportedVersions"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert!(versions.contains(&"2026-07-28") && versions.contains(&"2025-11-25"), "{versions:?}");
        assert!(result["capabilities"]["tools"].is_object() && result["capabilities"]["resources"].is_object());
        assert!(result["instructions"].as_str().unwrap().contains("recall_memory"));
        assert!(discover.to_string().contains("\"name\":\"kb\""), "serverInfo: {discover}");

        let args = json!({"content": "Actually, the staging host is staging-2", "tags": ["correction", "infra"]});
        let response =
            raw.request(2, "tools/call", json!({"_meta": meta(), "name": "save_memory", "arguments": args})).await;
        assert_eq!(response["result"]["resultType"], "complete", "{response}");
        assert_eq!(response["result"]["structuredContent"]["action"], "saved");
        let response = raw.request(3, "resources/list", json!({"_meta": meta()})).await;
        assert_eq!(response["result"]["resources"][0]["uri"], "kb://context", "{response}");
        assert!(response["result"]["ttlMs"].is_u64(), "list results carry cache hints: {response}");
        let size = response["result"]["resources"][0]["size"].as_u64().unwrap();
        let response = raw.request(4, "resources/read", json!({"_meta": meta(), "uri": "kb://context"})).await;
        let text = response["result"]["contents"][0]["text"].as_str().unwrap();
        assert_eq!(text.len() as u64, size);
        assert!(text.starts_with("## Internal Knowledge\n\n### Global Context\n"), "{text}");
        // A stateless request without its _meta is refused, and the server carries on.
        let response = raw.request(5, "tools/call", json!({"name": "list_memories", "arguments": {}})).await;
        assert_eq!(response["error"]["code"], -32602, "{response}");
        let response =
            raw.request(6, "tools/call", json!({"_meta": meta(), "name": "list_memories", "arguments": {}})).await;
        assert_eq!(response["result"]["structuredContent"]["count"], 1, "{response}");
        let (code, rest, _) = raw.finish().await;
        assert_eq!((code, rest.as_str()), (Some(0), ""));
    }

    /// A client that goes away at once: a clean exit, nothing on stdout.
    #[tokio::test(flavor = "current_thread")]
    async fn closed_stdin_ends_the_server_cleanly() {
        let env = env();
        let raw = Raw::start(&env);
        let (code, rest, stderr) = raw.finish().await;
        assert_eq!((code, rest.as_str(), stderr.as_str()), (Some(0), "", ""));
    }

    /// The longest request line `kb mcp` reads, newline excluded (docs/mcp.md, "Limits").
    const MAX_LINE: usize = 4 << 20;

    /// Returns a `list_memories` call of exactly `len` bytes, padded with spaces inside.
    fn request_line(id: u64, len: usize) -> Vec<u8> {
        let head = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"list_memories","arguments":{{}}}}"#
        );
        let mut line = head.into_bytes();
        line.resize(len - 1, b' ');
        line.push(b'}');
        line
    }

    /// Returns the peak resident memory of a process, from /proc (Linux), in bytes.
    fn peak_memory(pid: u32) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().strip_suffix("kB")?;
        Some(kb.trim().parse::<u64>().ok()? * 1024)
    }

    /// A client that sends and never reads: the server stops reading once 64 answers wait, so its
    /// memory stays bounded (it grew to 1.26 GB), and it answers everything once read again.
    #[tokio::test(flavor = "current_thread")]
    async fn raw_a_client_that_never_reads_cannot_grow_the_server() {
        let env = env();
        let mut raw = Raw::start(&env);
        let init = raw
            .request(1, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}))
            .await;
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        let pid = raw.child.id().unwrap();
        // tools/list answers ~20 KB each; send for two seconds without reading a byte.
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#;
        let mut sent = 0u64;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while tokio::time::Instant::now() < deadline {
            let write = async {
                raw.stdin.write_all(line).await.unwrap();
                raw.stdin.write_all(b"\n").await.unwrap();
            };
            if tokio::time::timeout(Duration::from_millis(200), write).await.is_err() {
                break; // The server stopped reading: what a bounded queue does.
            }
            sent += 1;
        }
        let peak = peak_memory(pid).unwrap_or(0);
        assert!(peak < 150 << 20, "peak {} MB after {sent} unread requests", peak >> 20);
        assert!(sent < 200_000, "the server kept reading: {sent} requests taken while nothing was read");
        // Reading again: every answer comes, in order, each a JSON-RPC message.
        for _ in 0..3 {
            assert_eq!(raw.recv().await["id"], 7);
        }
    }

    /// A request line over the limit is refused with a JSON-RPC error naming its id, without
    /// being held in memory, and the server answers the next request; a line of exactly the
    /// limit is served.
    #[tokio::test(flavor = "current_thread")]
    async fn raw_an_oversized_line_is_refused_and_the_server_carries_on() {
        let env = env();
        let mut raw = Raw::start(&env);
        let init = raw
            .request(1, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}))
            .await;
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;

        // Exactly the limit: served.
        raw.send_bytes(&request_line(2, MAX_LINE)).await;
        let response = raw.recv().await;
        assert_eq!((response["id"].as_u64(), response["result"]["isError"].as_bool()), (Some(2), Some(false)));

        // One byte over, then 64 MiB: refused, each with its id, and nothing else.
        for (id, len) in [(3, MAX_LINE + 1), (4, 64 << 20)] {
            raw.send_bytes(&request_line(id, len)).await;
            let error = raw.recv().await;
            assert_eq!(error["id"], id, "{error}");
            assert_eq!(error["error"]["code"], -32600, "{error}");
            let message = error["error"]["message"].as_str().unwrap();
            assert!(
                message.starts_with(&format!("Request too large: a line of {len} bytes, over the limit of {MAX_LINE}")),
                "{message}"
            );
            assert_eq!(error["error"]["data"], json!({"size": len, "limit": MAX_LINE}), "{error}");
        }
        // No id to be found in the line's start: the error's id is null.
        let mut line = vec![b' '; MAX_LINE];
        line.extend_from_slice(br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#);
        raw.send_bytes(&line).await;
        let error = raw.recv().await;
        assert_eq!((error["id"].is_null(), error["error"]["code"].as_i64()), (true, Some(-32600)), "{error}");

        // Still serving.
        let response = raw.request(6, "ping", json!({})).await;
        assert!(response["result"].is_object(), "{response}");
        let response = raw.request(7, "tools/call", json!({"name": "list_memories", "arguments": {}})).await;
        assert_eq!(response["result"]["structuredContent"]["count"], 0, "{response}");
        // The 64 MiB line never sat in memory: the peak stays far below it.
        if let Some(peak) = peak_memory(raw.child.id().unwrap()) {
            assert!(peak < 48 << 20, "peak resident memory {} MiB", peak >> 20);
        }

        // An oversized last line without its newline: refused too, then a clean exit.
        raw.stdin.write_all(&request_line(8, MAX_LINE + 10)).await.unwrap();
        let (code, rest, stderr) = raw.finish().await;
        assert_eq!((code, stderr.as_str()), (Some(0), ""));
        let error: Value = serde_json::from_str(&rest).unwrap();
        assert_eq!((error["id"].as_u64(), error["error"]["code"].as_i64()), (Some(8), Some(-32600)), "{error}");
    }

    /// What `kb mcp` says on stderr when a person starts it on a terminal.
    const HINT: &str = "kb mcp speaks MCP on stdin/stdout; register it with your agent";

    /// On a terminal (a pseudo-terminal from util-linux `script`), `kb mcp` says once what it
    /// is for and how to register it, then serves as usual. On a pipe it says nothing (the
    /// other tests check stderr is empty).
    #[tokio::test(flavor = "current_thread")]
    async fn on_a_terminal_a_hint_then_the_server_serves() {
        if std::process::Command::new("script").arg("--version").output().is_err() {
            eprintln!("skipped: util-linux `script` is not installed");
            return;
        }
        let env = env();
        let kb = env.command(&["mcp"]);
        let mut cmd = tokio::process::Command::new("script");
        let exe = env!("CARGO_BIN_EXE_kb").replace('\'', r"'\''");
        cmd.args(["-qec", &format!("'{exe}' mcp"), "/dev/null"])
            .env_clear()
            .current_dir(kb.get_current_dir().unwrap())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in kb.get_envs() {
            if let Some(v) = v {
                cmd.env(k, v);
            }
        }
        let mut child = cmd.spawn().expect("spawn script");
        let mut stdin = child.stdin.take().unwrap();
        let mut terminal = BufReader::new(child.stdout.take().unwrap()).lines();
        // The hint comes first, before any input.
        let first = tokio::time::timeout(TIMEOUT, terminal.next_line()).await.expect("no hint in time").unwrap();
        let first = first.expect("the terminal closed");
        assert!(first.starts_with(HINT), "{first:?}");
        assert!(first.contains("claude mcp add kb -- kb mcp") && first.contains("docs/mcp.md"), "{first:?}");
        // Then a request on the terminal is answered, and end of input (Ctrl-D) ends it.
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}});
        stdin.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        drop(stdin);
        let mut rest = String::new();
        while let Some(line) = tokio::time::timeout(TIMEOUT, terminal.next_line()).await.expect("kb mcp hangs").unwrap()
        {
            rest.push_str(&line);
            rest.push('\n');
        }
        let status = tokio::time::timeout(TIMEOUT, child.wait()).await.expect("kb mcp did not exit").unwrap();
        assert!(status.success(), "{status:?}: {rest}");
        assert!(rest.contains(r#"{"jsonrpc":"2.0","id":1,"result":{"#), "{rest}");
        assert!(!rest.contains(HINT), "the hint comes once: {rest}");
    }

    /// Returns the access log's lines, parsed.
    fn access_lines(env: &TestEnv) -> Vec<Value> {
        std::fs::read_to_string(env.root().join(".co-cli/state/access.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// recall_memory is an access per result, as `kb recall` is; list_memories and get_context are
    /// not.
    #[tokio::test(flavor = "current_thread")]
    async fn recall_memory_results_are_accesses_and_list_and_context_are_not() {
        let env = env();
        env.memory(1, "Use nextest in CI", &days_ago(2.0), &[]);
        env.memory(2, "Nextest profiles live in .config/nextest.toml", &days_ago(1.0), &[]);
        env.memory(3, "Deploys go through staging", &days_ago(1.0), &[]);
        env.write(
            ".github/copilot-memories.jsonl",
            "{\"id\":\"mem-1\",\"subject\":\"ci\",\"fact\":\"nextest runs every test\"}\n",
        );
        let client = connect(&env, legacy()).await;
        ok(call(&client, "list_memories", json!({})).await);
        ok(call(&client, "get_context", json!({})).await);
        assert_eq!(access_lines(&env), Vec::<Value>::new());
        let (_, json) = ok(call(&client, "recall_memory", json!({"query": "nextest"})).await);
        assert_eq!(json["count"], 3);
        // The uses: the first result and those scoring at least 80 % of it, as `kb recall` counts.
        let results = json["results"].as_array().unwrap();
        let best = results[0]["score"].as_f64().unwrap();
        let used: Vec<Value> = results
            .iter()
            .filter(|r| r["score"].as_f64().unwrap() >= 0.8 * best)
            .map(|r| json!({"id": r["id"], "store": r["store"], "at": NOW}))
            .collect();
        assert!(!used.is_empty() && used.len() < 3, "{json}");
        assert_eq!(access_lines(&env), used);
        ok(call(&client, "recall_memory", json!({"query": "nextest", "max_results": 1})).await);
        assert_eq!(access_lines(&env).len(), used.len() + 1, "the one result returned");
        client.cancel().await.unwrap();
        let heat = env.kb(&["--json", "heat", "--all"]).ok().json();
        let total = heat["memories"].as_array().unwrap().iter().map(|r| r["heat"].as_u64().unwrap()).sum::<u64>();
        assert_eq!(total, used.len() as u64 + 1);
    }

    /// forget_memory and a consolidating save_memory are journaled like the CLI's, so a person can
    /// `kb undo` what an agent did.
    #[tokio::test(flavor = "current_thread")]
    async fn an_agents_forget_and_consolidating_save_are_undone() {
        use crate::undo::{assert_same_files, files};
        let env = env();
        // An agent wrote memory 1, so an agent's save may consolidate into it.
        let first = format!(
            "---\ncreated: '{}'\ncreated_by: agent:claude-code\nid: 1\nsource: user-told\ntags: []\n---\n\n\
             The api service listens on port 8080\n",
            days_ago(1.0)
        );
        env.write(".co-cli/knowledge/memories/001-the-api-service.md", &first);
        // An agent wrote memory 2 too, so an agent may forget it.
        let second = format!(
            "---\ncreated: '{}'\ncreated_by: agent:claude-code\nid: 2\nsource: user-told\ntags: []\n---\n\n\
             Deploys go out on Tuesdays\n",
            days_ago(1.0)
        );
        env.write(".co-cli/knowledge/memories/002-deploys-go-out.md", &second);
        let before = files(&env);
        let client = connect(&env, legacy()).await;
        let (_, json) =
            ok(call(&client, "save_memory", json!({"content": "The api service now listens on port 8080"})).await);
        assert_eq!(json["action"], "consolidated");
        assert_eq!(json["replaced"], "The api service listens on port 8080");
        ok(call(&client, "forget_memory", json!({"id": 2})).await);
        client.cancel().await.unwrap();
        let list = env.kb(&["--json", "undo", "--list"]).ok().json();
        let ops: Vec<&str> = list["entries"].as_array().unwrap().iter().map(|e| e["op"].as_str().unwrap()).collect();
        assert_eq!(ops, ["forget", "save"]);
        env.kb(&["undo"]).ok();
        env.kb(&["undo"]).ok();
        assert_same_files(&before, &files(&env));
    }

    /// Each `kb mcp` process counts one view of every item at its first board request; `add`
    /// overwrites the agent's own item of that name.
    #[tokio::test(flavor = "current_thread")]
    async fn each_process_counts_one_view_and_add_overwrites_the_agents_item() {
        let env = env();
        std::fs::write(env.root().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        env.kb(&["board", "add", "release-checklist", "--description", "Steps to release", "1. bump"]).ok();
        for views in 1..=2 {
            let client = connect(&env, legacy()).await;
            for _ in 0..2 {
                let (_, json) = ok(call(&client, "context_board", json!({"command": "get_board"})).await);
                assert_eq!(json["items"][0]["count"], views, "process {views}");
            }
            client.cancel().await.unwrap();
        }
        let client = connect(&env, legacy()).await;
        let add = |context: &str| json!({"command": "add", "name": "build-recipe", "description": "How CI builds", "context": context});
        let (_, json) = ok(call(&client, "context_board", add("make ci")).await);
        assert_eq!(json["action"], "added");
        let (_, json) = ok(call(&client, "context_board", add("cargo nextest run")).await);
        assert_eq!((json["action"].as_str(), json["src"].as_str()), (Some("updated"), Some("agent")));
        let (text, _) =
            ok(call(&client, "context_board", json!({"command": "get", "src": "agent", "name": "build-recipe"})).await);
        assert_eq!(text, "cargo nextest run");
        let (_, json) = ok(call(&client, "context_board", json!({"command": "get_board"})).await);
        assert_eq!(json["count"], 2);
        client.cancel().await.unwrap();
    }

    /// `audit(ids)` answers what `kb audit ID...` answers; `recall_memory` and `get_memory` carry
    /// each item's verdict at use (`verified`, `problems`) and a `Verified` block in the text, as
    /// `kb recall --verify` does; what an agent saves is listed by `kb list --by agent:` and shown
    /// with its author.
    #[tokio::test(flavor = "current_thread")]
    async fn audit_tool_and_verified_results() {
        let env = env();
        env.write("src/lib.rs", "pub fn real_fn() {}\n");
        env.write("Makefile", "build:\n\tcargo build\n");
        env.memory(1, "The library is `src/lib.rs`, built by `make build`", &days_ago(1.0), &["lib"]);
        env.memory(2, "The library moved to `src/gone.rs` and calls `missing_fn`", &days_ago(1.0), &["lib"]);
        env.kb(&["decision", "add", "Only `make deploy` ships", "--type", "process"]).ok();
        let client = connect(&env, legacy()).await;

        for (ids, cli_args) in [
            (json!([]), vec!["audit"]),
            (json!([1, "2"]), vec!["audit", "1", "2"]),
            (json!(["decision:1"]), vec!["audit", "decision:1"]),
            (json!([9]), vec!["audit", "9"]),
        ] {
            let result = call(&client, "audit", json!({"ids": ids})).await;
            if cli_args.len() == 2 && cli_args[1] == "9" {
                assert_parity(result, &env, cli(&env, &cli_args));
                continue;
            }
            // Stale items: the CLI exits 1 with its report on stdout; the tool answers the report.
            let (text, json) = ok(result);
            let run = env.kb(&cli_args);
            assert_eq!((run.code, format!("{text}\n")), (1, run.stdout.clone()), "{run:?}");
            let mut json_args = vec!["--json"];
            json_args.extend(&cli_args);
            assert_eq!(json, env.kb(&json_args).json());
        }
        let (_, json) = ok(call(&client, "audit", json!({})).await);
        assert_eq!(json["counts"], json!({"ok": 1, "stale": 2, "unverified": 0, "conflicts": 0}), "{json}");
        let message = failed(call(&client, "audit", json!({"ids": [1.5]})).await);
        assert!(message.starts_with("ids must be a list of ids"), "{message}");

        // recall_memory: as kb recall --verify; symbols are left to the audit.
        let result = call(&client, "recall_memory", json!({"query": "library"})).await;
        assert_parity(result, &env, cli(&env, &["recall", "library", "--verify"]));
        let (text, json) = ok(call(&client, "recall_memory", json!({"query": "library"})).await);
        let verdict =
            |id: u64| json["results"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap()["verified"].clone();
        assert_eq!((verdict(1), verdict(2)), (json!("ok"), json!("stale")));
        assert!(text.contains("\nVerified: stale; `src/gone.rs` does not exist"), "{text}");
        // get_memory: the same for one memory or decision.
        let (text, json) = ok(call(&client, "get_memory", json!({"id": 2})).await);
        assert_eq!(json["verified"], "stale");
        assert_eq!(json["problems"][0]["kind"], "path");
        assert!(
            text.ends_with("Verified (paths and commands):\n  Memory 2: stale; `src/gone.rs` does not exist"),
            "{text}"
        );
        let (_, json) = ok(call(&client, "get_memory", json!({"id": "decision:1"})).await);
        assert_eq!(json["verified"], "stale", "{json}");
        assert_eq!(json["problems"][0]["message"], "`make deploy`: the Makefile has no target `deploy`");

        // Provenance: what the agent saves carries its name, shown by list, recall and show.
        ok(call(&client, "save_memory", json!({"content": "Releases are tagged from main"})).await);
        let listed = env.kb(&["--json", "list", "--by", "agent:"]).ok().json();
        let ids: Vec<&Value> = listed["memories"].as_array().unwrap().iter().map(|m| &m["id"]).collect();
        assert_eq!(ids, [&json!(3)]);
        assert_eq!(listed["memories"][0]["created_by"], "agent:rmcp");
        let (text, json) = ok(call(&client, "get_memory", json!({"id": 3})).await);
        assert_eq!((json["created_by"].as_str(), json["updated_by"].as_str()), (Some("agent:rmcp"), None));
        assert!(text.contains("\nCreated by: agent:rmcp\n"), "{text}");
        client.cancel().await.unwrap();
    }
}

#[cfg(not(feature = "mcp"))]
#[test]
fn mcp_says_it_was_built_without_the_feature() {
    let env = crate::common::TestEnv::new();
    let run = env.kb(&["mcp"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("built without MCP support"), "{run:?}");
    assert_eq!(run.stdout, "");
}
