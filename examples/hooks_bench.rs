//! Whole-process benchmark of the hook verbs and the digest (the targets and the results are in
//! docs/performance.md, The hooks check).
//!
//! Generates N memories (default 10,000) of co-cli's shape in a temporary repository (the same
//! generator as the main bench), lets the files age past kb's racy-mtime margin, warms kb's caches
//! with one `kb list` and one `kb recall`, then
//! times, as separate processes fed the payload on stdin, `RUNS` times each (default 21) after one
//! warm-up: `kb hook session-end`, `pre-compact` and `stop` (Claude Code's payload, each call a new
//! session, so no call is a duplicate), `prompt` (a question that recall answers; in a session
//! `session-start` began, untimed, and in one it did not) and `session-start`. Then it writes a
//! Claude Code transcript of about 20 MB (the golden transcript's turns repeated, with tool
//! results of 4 KiB), spools it, and times `kb inbox digest` on it, 5
//! times (the session spooled again before each run). It prints the median and the largest wall
//! time of each.
//!
//! `KEEP`: when set, the repository stays on disk (its path goes to stderr) for profiling.
//!
//! Run: `cargo build --release && cargo run --release --example hooks_bench -- target/release/kb [N] [RUNS]`

#[path = "common/generate.rs"]
mod generate;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(kb) = args.get(1).and_then(|a| std::fs::canonicalize(a).ok()) else {
        eprintln!("usage: hooks_bench KB_BINARY [N] [RUNS] (KB_BINARY must exist)");
        std::process::exit(2);
    };
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let runs: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(21);
    let mut dir = tempfile::tempdir().expect("tempdir");
    if std::env::var_os("KEEP").is_some() {
        // Left on disk for profiling by hand.
        dir.disable_cleanup(true);
        eprintln!("the repository stays in {}", dir.path().join("repo").display());
    }
    let root = dir.path().join("repo");
    let config = dir.path().join("home/.config/co-cli");
    std::fs::create_dir_all(config.join("knowledge")).unwrap();
    generate::generate(&root, &config, n);
    let home = dir.path().join("home");
    let kb_run = |args: &[&str], stdin: &[u8]| -> Duration {
        let start = Instant::now();
        let mut child = Command::new(&kb)
            .args(args)
            .env("KB_ROOT", &root)
            .env("HOME", &home)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("kb runs");
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        assert!(child.wait().unwrap().success());
        start.elapsed()
    };
    // Let the files age past kb's racy-mtime margin (2 s), as a clone's have by its first
    // command: "warm" is a cache that trusts them.
    std::thread::sleep(Duration::from_millis(2500));
    kb_run(&["list"], b"");
    kb_run(&["recall", "postgres"], b"");
    println!("N = {n} memories, {runs} runs each, whole process, warm\n");
    println!("| verb | median | max | target |");
    println!("| --- | --- | --- | --- |");
    let payload = |serial: usize, extra: &str| {
        format!(
            "{{\"session_id\":\"bench-{serial}\",\"cwd\":{:?},\"transcript_path\":\"/nonexistent\"{extra}}}",
            root.display()
        )
    };
    let question = ",\"prompt\":\"how do we configure the postgres connection pool for tests\"";
    let mut serial = 0;
    // `prompt` twice: in a session `session-start` began (what it gave is what the agent has
    // loaded), and in one it did not (the whole block is built to see what is loaded).
    for (label, verb, target, started) in [
        ("session-end", "session-end", 20, false),
        ("pre-compact", "pre-compact", 20, false),
        ("stop", "stop", 20, false),
        ("prompt (session started)", "prompt", 30, true),
        ("prompt (no session-start)", "prompt", 30, false),
        ("session-start", "session-start", 50, false),
    ] {
        let extra = if verb == "prompt" { question } else { "" };
        let mut times: Vec<Duration> = (0..=runs)
            .map(|_| {
                serial += 1;
                if started {
                    kb_run(&["hook", "session-start", "--agent", "claude"], payload(serial, "").as_bytes());
                }
                kb_run(&["hook", verb, "--agent", "claude"], payload(serial, extra).as_bytes())
            })
            .skip(1)
            .collect();
        row(label, &mut times, &format!("≤ {target} ms"));
    }
    // Empty the spool of the recording runs, then time the digest of one 20 MB transcript.
    let _ = std::fs::remove_file(root.join(".co-cli/state/hooks/spool.jsonl"));
    let transcript = dir.path().join("big.jsonl");
    write_transcript(&transcript, 20 << 20);
    let mut times = Vec::new();
    for i in 0..5 {
        let p = format!("{{\"session_id\":\"big-{i}\",\"transcript_path\":{:?}}}", transcript.display());
        kb_run(&["hook", "session-end", "--agent", "claude"], p.as_bytes());
        times.push(kb_run(&["inbox", "digest"], b""));
    }
    let mb = std::fs::metadata(&transcript).unwrap().len() as f64 / (1 << 20) as f64;
    row(&format!("inbox digest ({mb:.0} MiB transcript)"), &mut times, "≤ 1 s");
}

/// Prints one table row: the median and the largest time.
fn row(what: &str, times: &mut [Duration], target: &str) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("| {what} | {:.1} ms | {:.1} ms | {target} |", ms(times[times.len() / 2]), ms(times[times.len() - 1]));
}

/// Writes a Claude Code transcript of about `bytes`: the golden transcript's lines, then turns of
/// a user request, a Bash call and its 4 KiB result, repeated.
fn write_transcript(path: &Path, bytes: usize) {
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts/claude.jsonl");
    let mut out = std::fs::read_to_string(golden).unwrap();
    let filler = "x".repeat(4096);
    let mut i = 0;
    while out.len() < bytes {
        i += 1;
        out.push_str(&format!(
            "{{\"type\":\"user\",\"sessionId\":\"big\",\"timestamp\":\"2026-11-30T10:00:00Z\",\"message\":{{\"role\":\"user\",\"content\":\"Please check step {i} of the migration.\"}}}}\n"
        ));
        out.push_str(&format!(
            "{{\"type\":\"assistant\",\"sessionId\":\"big\",\"timestamp\":\"2026-11-30T10:00:01Z\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"tool_use\",\"id\":\"t{i}\",\"name\":\"Bash\",\"input\":{{\"command\":\"ls migrations/{i}\"}}}}]}}}}\n"
        ));
        out.push_str(&format!(
            "{{\"type\":\"user\",\"sessionId\":\"big\",\"timestamp\":\"2026-11-30T10:00:02Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"t{i}\",\"content\":\"{filler}\"}}]}}}}\n"
        ));
    }
    std::fs::write(path, out).unwrap();
}
