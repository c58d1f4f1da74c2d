//! Latency of a long-running `kb mcp` as an agent sees it: request to response through rmcp's own
//! client (the client the integration tests use), per tool, with a hand edit between calls.
//!
//! For each N it generates the benchmarks' repository (`common/generate.rs`: N memories of
//! co-cli's shape, the two `context.md` files, 24 Copilot records), runs `kb init`, starts
//! `kb mcp` and connects. The first call of each tool is the cold server's (it may scan); the
//! bench then waits for the server's "warm" line on stderr. Each round then, for each tool:
//!
//! 1. edits one memory file by hand (a new text holding a word no other memory has), as an
//!    editor does: the whole file rewritten in place;
//! 2. waits 300 ms: kb's debounce (200 ms) and a margin, the time a person takes anyway;
//! 3. times one call: `recall_memory` (a question in plain words that also names the new word),
//!    `get_memory` (the edited memory), `list_memories` (the first page) or `get_context` (the
//!    whole block, no arguments).
//!
//! Every answer is checked against the edit (exit status 1 otherwise): the recall must rank the
//! edited memory, `get_memory` must show its new text. A stale answer fails the bench; a fast
//! stale answer is not a result.
//!
//! It prints, per N and tool, the cold first call, then the median, 90th percentile and
//! largest of the warm calls, and the server's memory (Linux): resident once warm and at the end
//! (`VmRSS`), and its peak (`VmHWM`, which includes the cold start: the generated repository is a
//! fresh clone, without caches).
//!
//! Run: `cargo build --release --examples --bin kb && target/release/examples/mcp_bench [N...]`
//! (default N: 200 10000 100000). Environment: `KB`, the binary (default `target/release/kb`);
//! `RUNS`, calls per tool (default 15); `TOOLS`, the tools to time (comma-separated, default
//! all); `WARM_WAIT_S`, how long to wait for the warm line (default 120); `KEEP=1` keeps the
//! generated repositories.

#[path = "common/generate.rs"]
mod generate;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

type Client = RunningService<RoleClient, ()>;

/// The tools timed, in the order of each round.
const TOOLS: [&str; 4] = ["recall_memory", "get_memory", "list_memories", "get_context"];

/// kb's default debounce and a margin.
const SETTLE: Duration = Duration::from_millis(300);

/// How long the cold server may take to say it is warm (`WARM_WAIT_S` to change: an older kb
/// never says it).
fn warm_timeout() -> Duration {
    Duration::from_secs(std::env::var("WARM_WAIT_S").ok().and_then(|s| s.parse().ok()).unwrap_or(120))
}

/// Decay is kept out of the way, as in the other benchmarks.
const MAX_COUNT: (&str, &str) = ("CO_CLI_MEMORY_MAX_COUNT", "1000000000");

fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("N")).collect();
    let sizes = if sizes.is_empty() { vec![200, 10_000, 100_000] } else { sizes };
    let runs: usize = std::env::var("RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(15);
    let kb = PathBuf::from(std::env::var("KB").unwrap_or_else(|_| "target/release/kb".into()));
    assert!(kb.exists(), "{} is missing: cargo build --release --bin kb", kb.display());
    // Run from the repository's folder: the path must not depend on the working directory.
    let kb = std::fs::canonicalize(&kb).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut table = vec![
        "| memories | tool | cold first call | warm median | warm p90 | warm max |".to_string(),
        "| ---: | --- | ---: | ---: | ---: | ---: |".to_string(),
    ];
    let mut notes = Vec::new();
    let mut all_fresh = true;
    for n in sizes {
        let tmp = tempfile::tempdir().unwrap();
        // `KEEP=1` keeps each generated repository (its path is printed) to look at afterwards.
        let tmp_path = if std::env::var_os("KEEP").is_some() { tmp.keep() } else { tmp.path().to_path_buf() };
        let (root, config) = (tmp_path.join("repo"), tmp_path.join("config"));
        eprintln!("N = {n}: generating in {}", tmp_path.display());
        generate::generate(&root, &config, n);
        let status = std::process::Command::new(&kb)
            .args(["init"])
            .current_dir(&root)
            .env("XDG_CONFIG_HOME", &config)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "kb init failed");
        let stderr_log = tmp_path.join("mcp.stderr");
        let mut cmd = tokio::process::Command::new(&kb);
        cmd.args(["mcp", "--root"])
            .arg(&root)
            .current_dir(&root)
            .env(MAX_COUNT.0, MAX_COUNT.1)
            .env("XDG_CONFIG_HOME", &config);
        let result = runtime.block_on(measure(cmd, &root, n, runs, &stderr_log));
        for (tool, cold, warm) in &result.rows {
            table.push(format!(
                "| {n} | `{tool}` | {} | {} | {} | {} |",
                ms(*cold),
                ms(percentile(warm, 50)),
                ms(percentile(warm, 90)),
                ms(percentile(warm, 100))
            ));
        }
        let mb = |k: Option<u64>| k.map_or("unknown".into(), |k| format!("{:.1} MB", k as f64 / 1024.0));
        notes.push(format!(
            "N = {n}: warm after {} (stderr: {:?}); server resident {} once warm, {} at the end, peak {}",
            ms(result.warm_after),
            result.warm_line,
            mb(result.warm_rss_kib),
            mb(result.end_rss_kib),
            mb(result.peak_rss_kib)
        ));
        for stale in &result.stale {
            eprintln!("STALE: N = {n}: {stale}");
            all_fresh = false;
        }
    }
    println!("{}", table.join("\n"));
    println!();
    for n in notes {
        println!("{n}");
    }
    if !all_fresh {
        eprintln!("error: some answers did not reflect the edit made before them");
        std::process::exit(1);
    }
}

struct Measured {
    /// Per tool: the cold first call and the warm calls.
    rows: Vec<(&'static str, Duration, Vec<Duration>)>,
    warm_after: Duration,
    warm_line: String,
    warm_rss_kib: Option<u64>,
    end_rss_kib: Option<u64>,
    peak_rss_kib: Option<u64>,
    stale: Vec<String>,
}

async fn measure(cmd: tokio::process::Command, root: &Path, n: usize, runs: usize, log: &Path) -> Measured {
    let started = Instant::now();
    let stderr = std::fs::File::create(log).unwrap();
    let (transport, _) = TokioChildProcess::builder(cmd).stderr(Stdio::from(stderr)).spawn().expect("spawn kb mcp");
    let pid = transport.id();
    let client: Client = ().serve(transport).await.expect("connect");
    let mut rows: Vec<(&'static str, Duration, Vec<Duration>)> = Vec::new();
    for tool in tools() {
        let (took, _) = call(&client, tool, args(tool, 1, "ordinary")).await;
        rows.push((tool, took, Vec::with_capacity(runs)));
    }
    let warm_line = wait_for_warm(log).await;
    let warm_after = started.elapsed();
    let warm_rss_kib = pid.and_then(|p| memory_kib(p, "VmRSS:"));
    let dir = root.join(".co-cli/knowledge/memories");
    let mut stale = Vec::new();
    for round in 0..runs {
        for (t, tool) in tools().into_iter().enumerate() {
            // A different memory each time, spread over the whole store.
            let id = 1 + (round * TOOLS.len() + t) * 7919 % n;
            // Letters only (a word with digits is split into its parts, which other items share),
            // ending in a consonant pair no English suffix rule strips (`zebras` stems to `zebra`).
            let word = format!("zebra{}zq", letters(round * TOOLS.len() + t));
            edit_by_hand(&dir, id, &word);
            tokio::time::sleep(SETTLE).await;
            let (took, result) = call(&client, tool, args(tool, id, &word)).await;
            rows[t].2.push(took);
            if let Some(problem) = check(tool, id, &word, &result) {
                stale.push(problem);
            }
        }
    }
    let end_rss_kib = pid.and_then(|p| memory_kib(p, "VmRSS:"));
    let peak_rss_kib = pid.and_then(|p| memory_kib(p, "VmHWM:"));
    for line in std::fs::read_to_string(log).unwrap_or_default().lines().filter(|l| !l.contains("warm in")) {
        eprintln!("N = {n}: the server said: {line}");
    }
    client.cancel().await.ok();
    Measured { rows, warm_after, warm_line, warm_rss_kib, end_rss_kib, peak_rss_kib, stale }
}

/// The tools to time: `TOOLS` (comma-separated) or all four.
fn tools() -> Vec<&'static str> {
    let only = std::env::var("TOOLS").unwrap_or_default();
    TOOLS.into_iter().filter(|t| only.is_empty() || only.split(',').any(|o| o.trim() == *t)).collect()
}

/// Each tool's arguments for a round that edited memory `id` to hold `word`.
fn args(tool: &str, id: usize, word: &str) -> Value {
    match tool {
        "recall_memory" => json!({"query": format!("how do we retry the {word} worker"), "max_results": 5}),
        "get_memory" => json!({"id": id.to_string()}),
        "list_memories" => json!({}),
        _ => json!({}),
    }
}

/// Returns what is wrong with an answer given after memory `id` was edited to hold `word`.
fn check(tool: &str, id: usize, word: &str, result: &CallToolResult) -> Option<String> {
    if result.is_error == Some(true) {
        return Some(format!("{tool} failed: {:?}", result.content));
    }
    let json = result.structured_content.clone().unwrap_or(Value::Null);
    match tool {
        "recall_memory" => {
            let first = &json["results"][0];
            (first["id"] != json!(id))
                .then(|| format!("recall ranked {} first, not the edited memory {id}", first["id"]))
        }
        "get_memory" => (!json.to_string().contains(word)).then(|| format!("get_memory {id} does not show {word}")),
        _ => None,
    }
}

/// Rewrites memory `id`'s file in place with a new text holding `word`, keeping its frontmatter.
fn edit_by_hand(dir: &Path, id: usize, word: &str) {
    let prefix = format!("{id:03}-");
    let path = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix)))
        .unwrap_or_else(|| panic!("no memory file {prefix}*"));
    let text = std::fs::read_to_string(&path).unwrap();
    let end = text[3..].find("\n---\n").map(|i| i + 3 + 5).expect("frontmatter");
    let body = format!("Retry the {word} worker twice before paging anyone (edited by hand).\n");
    std::fs::write(&path, format!("{}\n{body}", &text[..end])).unwrap();
}

/// `n` written in the letters a to z (0 is `a`, 26 is `ba`).
fn letters(mut n: usize) -> String {
    let mut out = Vec::new();
    loop {
        out.push(b'a' + (n % 26) as u8);
        n /= 26;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap()
}

/// Times one call.
async fn call(client: &Client, tool: &'static str, args: Value) -> (Duration, CallToolResult) {
    let Value::Object(args) = args else { unreachable!() };
    let t0 = Instant::now();
    let result = client.call_tool(CallToolRequestParams::new(tool).with_arguments(args)).await.expect(tool);
    (t0.elapsed(), result)
}

/// Waits for the server's stderr line saying it is warm, and returns it.
async fn wait_for_warm(log: &Path) -> String {
    let deadline = Instant::now() + warm_timeout();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains("warm")) {
            return line.to_string();
        }
        if Instant::now() >= deadline {
            return "(the server never said it was warm)".into();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One of the process's memory figures (`VmRSS:` resident, `VmHWM:` peak), in KiB.
fn memory_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The `p`-th percentile (nearest rank) of `v`.
fn percentile(v: &[Duration], p: usize) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    let rank = (p * v.len()).div_ceil(100).clamp(1, v.len().max(1));
    v.get(rank - 1).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}
