//! A running `kb mcp` answers from what it holds and stays fresh (docs/mcp.md, "A long-running
//! server answers from memory"): after a hand edit, another process's save, a `git checkout`, a
//! memories folder removed and created again, and lost file events, the next request after the
//! debounce answers as a fresh `kb --json` command does.

#[cfg(feature = "mcp")]
mod with_mcp {
    use crate::common::{NOW, TestEnv, days_ago};
    use crate::git_native::{commit, git_ok, have_git};
    use rmcp::model::{CallToolRequestParams, CallToolResult};
    use rmcp::service::RunningService;
    use rmcp::transport::TokioChildProcess;
    use rmcp::{RoleClient, ServiceExt};
    use serde_json::{Value, json};
    use std::process::Stdio;
    use std::time::Duration;

    type Client = RunningService<RoleClient, ()>;

    const TIMEOUT: Duration = Duration::from_secs(30);

    fn env() -> TestEnv {
        TestEnv::new().env("KB_NOW", NOW)
    }

    /// Starts `kb mcp` in `env`, its stderr in `<home>/mcp.stderr`, and connects rmcp's client.
    async fn connect(env: &TestEnv) -> Client {
        let log = std::fs::File::create(env.home().join("mcp.stderr")).unwrap();
        let cmd = tokio::process::Command::from(env.command(&["mcp"]));
        let (transport, _) = TokioChildProcess::builder(cmd).stderr(Stdio::from(log)).spawn().expect("spawn kb mcp");
        tokio::time::timeout(TIMEOUT, ().serve(transport)).await.expect("connect timed out").expect("connect")
    }

    /// The debounce (200 ms) and a margin: after it, a change is visible to the next request.
    async fn settle() {
        tokio::time::sleep(Duration::from_millis(400)).await;
    }

    async fn call(client: &Client, tool: &'static str, args: Value) -> CallToolResult {
        let Value::Object(args) = args else { panic!("arguments must be an object") };
        let params = CallToolRequestParams::new(tool).with_arguments(args);
        tokio::time::timeout(TIMEOUT, client.call_tool(params)).await.expect("timed out").expect("tools/call")
    }

    /// A result's JSON, or for a tool error `{"error": MESSAGE}`.
    fn answer(result: CallToolResult) -> Value {
        let text = result.content[0].as_text().expect("a text block").text.clone();
        match result.is_error {
            Some(true) => json!({ "error": text }),
            _ => result.structured_content.expect("structured content"),
        }
    }

    /// A command's JSON, or for a failure `{"error": MESSAGE}` (what it prints after `error: `).
    fn command(env: &TestEnv, args: &[&str]) -> Value {
        let mut argv = vec!["--json"];
        argv.extend_from_slice(args);
        let run = env.kb(&argv);
        match run.code {
            0 => run.json(),
            _ => json!({ "error": run.stderr.trim_end().strip_prefix("error: ").unwrap_or(&run.stderr) }),
        }
    }

    /// The (store, id) of each item a list names, in order.
    fn listed(list: &Value) -> Vec<(String, String)> {
        list["memories"]
            .as_array()
            .expect("memories")
            .iter()
            .map(|m| (m["store"].as_str().unwrap().to_string(), m["id"].to_string()))
            .collect()
    }

    /// Asserts that the server answers as fresh commands do: `list_memories` lists what
    /// `kb list` lists, `get_memory` shows what `kb show` shows for each of `ids`, and
    /// `recall_memory` finds what `kb recall` finds for each of `queries`.
    async fn assert_fresh(client: &Client, env: &TestEnv, ids: &[&str], queries: &[&str]) {
        let list = answer(call(client, "list_memories", json!({"limit": 1000})).await);
        assert_eq!(listed(&list), listed(&command(env, &["list"])), "list_memories: {list}");
        for id in ids {
            let mut shown = answer(call(client, "get_memory", json!({ "id": id })).await);
            // `kb show` does not check the memory's references; `get_memory` does.
            if let Some(shown) = shown.as_object_mut() {
                shown.remove("verified");
                shown.remove("problems");
            }
            assert_eq!(shown, command(env, &["show", id]), "get_memory {id}");
        }
        for query in queries {
            let found = answer(call(client, "recall_memory", json!({ "query": query })).await);
            assert_eq!(found, command(env, &["recall", "--verify", query]), "recall_memory {query}");
        }
    }

    /// A memory file written by hand (an editor's save): its frontmatter and a new body.
    fn rewrite_body(env: &TestEnv, id: u64, body: &str) {
        let path = env.file_of(id);
        let text = env.read(&path);
        let end = text[3..].find("\n---\n").expect("frontmatter") + 3 + 5;
        std::fs::write(&path, format!("{}\n{body}\n", &text[..end])).unwrap();
    }

    fn three_memories(env: &TestEnv) {
        env.memory(1, "The api service listens on port 8080", &days_ago(3.0), &["context"]);
        env.memory(2, "Run the integration tests with cargo nextest", &days_ago(2.0), &["pattern"]);
        env.memory(3, "Releases ship from the main branch only", &days_ago(1.0), &["decision"]);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn hand_edits_are_seen_by_the_next_request_after_the_debounce() {
        let env = env();
        three_memories(&env);
        env.write(".co-cli/knowledge/context.md", "---\nversion: 1\nupdated: 2026-11-01T00:00:00Z\n---\n\nOld rule.\n");
        let client = connect(&env).await;
        assert_fresh(&client, &env, &["1", "2", "3"], &["port", "tests", "how do we deploy"]).await;
        // The live corpus ranks as the command does: stop words aside, `deploy` finds `ship`.
        let found = answer(call(&client, "recall_memory", json!({"query": "how do we deploy"})).await);
        assert_eq!((found["total"].as_u64(), found["results"][0]["id"].as_u64()), (Some(1), Some(3)), "{found}");

        // Edit one memory, add one, delete one, and edit the context, by hand.
        rewrite_body(&env, 2, "Run the integration tests with cargo test --workspace");
        env.memory(4, "Fixtures live in tests/fixtures", &days_ago(0.5), &["pattern"]);
        std::fs::remove_file(env.file_of(3)).unwrap();
        env.write(".co-cli/knowledge/context.md", "---\nversion: 1\nupdated: 2026-11-02T00:00:00Z\n---\n\nNew rule.\n");
        env.write(
            ".github/copilot-memories.jsonl",
            "{\"id\":\"mem-1\",\"subject\":\"testing\",\"fact\":\"Snapshots live in tests/snapshots\",\"citations\":[],\"reason\":\"r\"}\n",
        );
        settle().await;
        assert_fresh(
            &client,
            &env,
            &["1", "2", "3", "4", "mem-1"],
            &["workspace", "fixtures", "releases", "snapshots"],
        )
        .await;
        let context = answer(call(&client, "get_context", json!({})).await);
        assert!(context["text"].as_str().unwrap().contains("New rule."), "{context}");
        assert_eq!(context["text"], command(&env, &["context"])["text"]);
        client.cancel().await.unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn another_processs_writes_are_seen() {
        let env = env();
        three_memories(&env);
        let client = connect(&env).await;
        assert_fresh(&client, &env, &["1"], &["port"]).await;
        env.kb(&["save", "Deploys need a green staging run", "-t", "pattern"]).ok();
        env.kb(&["forget", "1"]).ok();
        env.kb(&["decision", "add", "We use PostgreSQL, not MySQL", "--type", "architectural"]).ok();
        settle().await;
        assert_fresh(&client, &env, &["1", "4"], &["staging", "postgresql", "port"]).await;
        // And the server's own writes are seen at once by its next request.
        answer(call(&client, "save_memory", json!({"content": "Benchmarks run on two cores"})).await);
        answer(call(&client, "forget_memory", json!({"id": "2"})).await);
        assert_fresh(&client, &env, &["2", "5"], &["benchmarks", "nextest"]).await;
        client.cancel().await.unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_git_checkout_is_seen() {
        if !have_git() {
            return;
        }
        let env = env();
        git_ok(&env, &["init", "-q", "-b", "main"]);
        three_memories(&env);
        commit(&env, "three memories");
        git_ok(&env, &["checkout", "-q", "-b", "feature"]);
        rewrite_body(&env, 1, "The api service listens on port 9090");
        std::fs::remove_file(env.file_of(2)).unwrap();
        for id in 4..40 {
            env.memory(id, &format!("Feature note {id} about the parser"), &days_ago(0.5), &[]);
        }
        commit(&env, "feature memories");
        git_ok(&env, &["checkout", "-q", "main"]);
        let client = connect(&env).await;
        assert_fresh(&client, &env, &["1", "2", "4"], &["port", "parser"]).await;
        git_ok(&env, &["checkout", "-q", "feature"]);
        settle().await;
        assert_fresh(&client, &env, &["1", "2", "4", "39"], &["port", "parser", "nextest"]).await;
        git_ok(&env, &["checkout", "-q", "main"]);
        settle().await;
        assert_fresh(&client, &env, &["1", "2", "4"], &["port", "parser", "nextest"]).await;
        client.cancel().await.unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_memories_folder_removed_and_created_again_is_seen() {
        let env = env();
        three_memories(&env);
        let client = connect(&env).await;
        assert_fresh(&client, &env, &["1"], &["port"]).await;
        std::fs::remove_dir_all(env.memories()).unwrap();
        settle().await;
        assert_fresh(&client, &env, &["1"], &["port"]).await;
        // Created again with other files; the files inside a new folder are seen too.
        env.memory(7, "Caches live in .co-cli/cache", &days_ago(1.0), &[]);
        env.memory(8, "The port is configured in settings.toml", &days_ago(1.0), &[]);
        settle().await;
        assert_fresh(&client, &env, &["1", "7", "8"], &["port", "caches"]).await;
        client.cancel().await.unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn revalidation_catches_what_events_missed() {
        // Without file events (as after an event-queue overflow), the revalidation finds the
        // changes: here every 300 ms instead of every 30 s.
        let env = env().env("KB_MCP_WATCH", "off").env("KB_MCP_REVALIDATE_MS", "300");
        three_memories(&env);
        let client = connect(&env).await;
        assert_fresh(&client, &env, &["2"], &["tests"]).await;
        rewrite_body(&env, 2, "Run the integration tests with cargo test --workspace");
        env.memory(4, "Fixtures live in tests/fixtures", &days_ago(0.5), &["pattern"]);
        std::fs::remove_file(env.file_of(1)).unwrap();
        env.kb(&["decision", "add", "We use PostgreSQL, not MySQL", "--type", "architectural"]).ok();
        tokio::time::sleep(Duration::from_millis(900)).await;
        assert_fresh(&client, &env, &["1", "2", "4"], &["workspace", "fixtures", "port", "postgresql"]).await;
        client.cancel().await.unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_server_says_when_it_is_warm() {
        let env = env();
        three_memories(&env);
        let client = connect(&env).await;
        answer(call(&client, "list_memories", json!({})).await);
        client.cancel().await.unwrap();
        let log = env.read(&env.home().join("mcp.stderr"));
        let line = log.lines().find(|l| l.starts_with("kb mcp: warm in ")).unwrap_or_else(|| panic!("{log}"));
        assert!(
            line.contains(" ms: 3 memories, 0 records, 0 decisions; watching ")
                && line.ends_with(" folders, revalidating every 30 s"),
            "{line}"
        );
    }
}
